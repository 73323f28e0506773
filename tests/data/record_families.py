"""Record the rotary modules of the families issue 30 names (not needed to run the tests).

Run where torch, transformers and diffusers are installed:
    python tests/data/record_families.py
No downloads: every module is built from a small config (transformers) or a tiny instance of the diffusers class
(one layer, one head, the class's default attention_head_dim and RoPE settings).  Writes ``families.npz``
(float32 unless said; keys ``<case>/<name>``) and ``families.json`` (versions; per case the config dict that
``rope_ref.from_hf_config`` is given, its ``layer_type``, what was recorded and how):

* ``pos`` ``(A, seq)``: the position ids (float64);
* ``q`` ``(seq, width)`` (seeded) and ``out``: q rotated by the family's own apply function, the way its attention
  calls it (transformers' ``apply_rotary_pos_emb`` of the family; diffusers' ``apply_rotary_emb``);
* ``cos``, ``sin``: the module's tables, one row per position (Wan: its buffers' rows as its forward expands
  them; Qwen-Image: ``pos_freqs``, index p on every axis, one column per pair).

Cases: DeepSeek-V4 (``main`` and ``compress``; a 512-wide head whose trailing 64 features rotate), the DSA
indexer of DeepSeek-V3.2 and GLM-5 (``glm_moe_dsa``), ERNIE-4.5-VL's text module, Gemma 3n (both layer types),
NanoChat, HunYuan-VL's XD-RoPE (tables only: rope_ref refuses it), and the diffusers transformers Flux, Flux.2,
HunyuanVideo, Wan, Qwen-Image and CogVideoX (their defaults, and Flux, HunyuanVideo, Wan with other settings).
``families.json`` also keeps each diffusers class's ``__init__`` defaults of the RoPE keys.
"""

import importlib
import inspect
import json
from pathlib import Path

import diffusers
import numpy as np
import torch
import transformers
from diffusers.models.embeddings import apply_rotary_emb, get_3d_rotary_pos_embed

HERE = Path(__file__).parent
POSITIONS = np.array(                                          # as record_mrope_families.py's POSITIONS
    [[0, 1, 2, 2, 2, 2, 2, 2, 5, 6, 7, 7, 7, 7, 57, 57, 57, 57, 107, 108, 4000, 70000],
     [0, 1, 2, 2, 2, 3, 3, 3, 5, 6, 7, 7, 8, 8, 7, 7, 8, 8, 108, 109, 4001, 70000],
     [0, 1, 2, 3, 4, 2, 3, 4, 5, 6, 7, 8, 7, 8, 7, 8, 7, 8, 109, 110, 3000, 70000]])
LINE = np.arange(64)[None]                                     # 1-D positions (row = position)
YARN = {"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings": 4096, "beta_fast": 32.0,
        "beta_slow": 1.0}
DSA = dict(hidden_size=256, num_attention_heads=4, qk_nope_head_dim=128, qk_rope_head_dim=64, v_head_dim=128,
           rope_parameters={"rope_theta": 10000.0, "mscale": 1.0, "mscale_all_dim": 1.0, **YARN})
TRANSFORMERS_CASES = {   # case: (model_type, config kwargs, layer_type, how the attention applies it)
    "deepseek_v4[main]": ("deepseek_v4", dict(hidden_size=256, num_attention_heads=4, rope_parameters=YARN),
                          "main", "v4"),
    "deepseek_v4[compress]": ("deepseek_v4", dict(hidden_size=256, num_attention_heads=4, rope_parameters=YARN),
                              "compress", "v4"),
    "deepseek_v32[indexer]": ("deepseek_v32", DSA, "indexer", "indexer"),
    "glm_moe_dsa[indexer]": ("glm_moe_dsa", DSA, "indexer", "indexer_interleave"),   # its indexer's own call
    "ernie4_5_vl_moe_text": ("ernie4_5_vl_moe_text", dict(hidden_size=512, num_attention_heads=4, head_dim=128),
                             None, "qk"),
    "gemma3n_text[full_attention]": ("gemma3n_text", dict(hidden_size=256, num_attention_heads=4, head_dim=64),
                                     "full_attention", "x"),
    "gemma3n_text[sliding_attention]": ("gemma3n_text", dict(hidden_size=256, num_attention_heads=4, head_dim=64),
                                        "sliding_attention", "x"),
    "nanochat": ("nanochat", dict(hidden_size=256, num_attention_heads=4), None, "qk"),
    "hunyuan_vl_text": ("hunyuan_vl_text", dict(hidden_size=256, num_attention_heads=4, rope_parameters={
        "rope_type": "default", "rope_theta": 10000.0, "mrope_section": [8, 8, 8, 8]}), None, "tables"),
}


def record_transformers(model_type, kwargs, layer_type, how):
    config = transformers.AutoConfig.for_model(model_type, **kwargs)
    modeling = importlib.import_module(type(config).__module__.replace(".configuration_", ".modeling_"))
    rotary_cls = next(getattr(modeling, n) for n in dir(modeling) if n.endswith("RotaryEmbedding")
                      and "Vision" not in n and "Audio" not in n)
    module = rotary_cls(config=config)
    head = config.index_head_dim if how.startswith("indexer") else (getattr(config, "head_dim", None)
                                                                    or config.hidden_size // config.num_attention_heads)
    axes = len(kwargs.get("rope_parameters", {}).get("mrope_section", [])) or (3 if "ernie" in model_type else 1)
    pos = LINE if axes == 1 else np.concatenate([POSITIONS, POSITIONS[:axes - 3]])
    q = np.random.default_rng(2468).standard_normal((1, 1, pos.shape[1], head)).astype(np.float32)
    x = torch.from_numpy(q)
    ids = torch.from_numpy(pos[0][None] if axes == 1 else pos[:, None])
    cos, sin = module(x, ids, layer_type) if layer_type and layer_type != "indexer" else module(x, ids)
    if how == "v4":
        out = modeling.apply_rotary_pos_emb(x, cos, sin)
    elif how == "x":
        out = modeling.apply_rotary_pos_emb(x, cos, sin, unsqueeze_dim=1)
    elif how.startswith("indexer"):   # the indexer: (batch, seq, heads, index_head_dim), first qk_rope_head_dim rotate
        q_rot, q_pass = torch.split(x.transpose(1, 2), [config.qk_rope_head_dim, head - config.qk_rope_head_dim], -1)
        apply = getattr(modeling, "apply_rotary_pos_emb_interleave" if how.endswith("interleave") else
                        "apply_rotary_pos_emb")
        q_rot, _ = apply(q_rot, q_rot, cos, sin, unsqueeze_dim=2)
        out = torch.cat([q_rot, q_pass], dim=-1).transpose(1, 2)
    elif how == "qk":
        out, _ = modeling.apply_rotary_pos_emb(x, x, cos, sin)
    arrays = {"pos": pos, "cos": cos[0].numpy(), "sin": sin[0].numpy()}
    if how != "tables":
        arrays.update(q=q[0, 0], out=out[0, 0].numpy())
    meta = {"config": config.to_dict(), "layer_type": layer_type, "module": rotary_cls.__name__, "apply": how}
    return arrays, meta


TINY = dict(num_layers=1, num_attention_heads=1, in_channels=4)
DIFFUSERS_CASES = {   # case: (class, tiny kwargs, how its positions are made)
    "FluxTransformer2DModel": ("FluxTransformer2DModel", dict(num_single_layers=1, joint_attention_dim=8,
                                                              pooled_projection_dim=8), "ids"),
    "FluxTransformer2DModel[64]": ("FluxTransformer2DModel", dict(num_single_layers=1, joint_attention_dim=8,
                                   pooled_projection_dim=8, attention_head_dim=64, axes_dims_rope=(8, 28, 28)), "ids"),
    "Flux2Transformer2DModel": ("Flux2Transformer2DModel", dict(num_single_layers=1, joint_attention_dim=8,
                                                                timestep_guidance_channels=8), "ids"),
    "HunyuanVideoTransformer3DModel": ("HunyuanVideoTransformer3DModel", dict(
        num_single_layers=1, num_refiner_layers=1, text_embed_dim=8, pooled_projection_dim=8, out_channels=4), "grid"),
    "HunyuanVideoTransformer3DModel[theta]": ("HunyuanVideoTransformer3DModel", dict(
        num_single_layers=1, num_refiner_layers=1, text_embed_dim=8, pooled_projection_dim=8, out_channels=4,
        rope_theta=10000.0, attention_head_dim=64, rope_axes_dim=(16, 24, 24)), "grid"),
    "WanTransformer3DModel": ("WanTransformer3DModel", dict(text_dim=8, freq_dim=8, ffn_dim=8, out_channels=4), "grid"),
    "WanTransformer3DModel[96]": ("WanTransformer3DModel", dict(text_dim=8, freq_dim=8, ffn_dim=8, out_channels=4,
                                                                attention_head_dim=96), "grid"),
    "QwenImageTransformer2DModel": ("QwenImageTransformer2DModel", dict(joint_attention_dim=8, out_channels=4),
                                    "index"),
    "CogVideoXTransformer3DModel": ("CogVideoXTransformer3DModel", dict(
        text_embed_dim=8, time_embed_dim=8, out_channels=4, use_rotary_positional_embeddings=True), "grid"),
}
GRID = (3, 4, 4)                      # (frames, height, width) tokens after patching


def record_diffusers(class_name, kwargs, how):
    cls = getattr(diffusers, class_name)
    model = cls(**TINY, **kwargs)
    config = json.loads(model.to_json_string())
    head = config["attention_head_dim"]
    grid = np.stack(np.meshgrid(*(np.arange(n) for n in GRID), indexing="ij")).reshape(3, -1)
    if how == "ids":                   # Flux's txt_ids / img_ids: (seq, axes), any values
        axes = len(config["axes_dims_rope"])
        pos = np.concatenate([POSITIONS, POSITIONS[:axes - 3] * 3 + 1])
        cos, sin = model.pos_embed(torch.from_numpy(pos.T.astype(np.float32)))
    elif how == "index":               # Qwen-Image's table: row p is index p on every axis
        table = model.pos_embed.pos_freqs[:40]
        pos, cos, sin = np.broadcast_to(np.arange(40), (3, 40)), table.real, table.imag
    elif class_name.startswith("CogVideoX"):   # the pipeline's call (CogVideoX 1.5: grid_type "slice")
        pos = grid
        cos, sin = get_3d_rotary_pos_embed(embed_dim=head, crops_coords=None, grid_size=GRID[1:],
                                           temporal_size=GRID[0], grid_type="slice", max_size=GRID[1:])
    else:                              # HunyuanVideo, Wan: from the latent's shape, patch sizes 1 x 2 x 2
        pos = grid
        latent = torch.zeros(1, 4, GRID[0], 2 * GRID[1], 2 * GRID[2])
        cos, sin = (t.reshape(pos.shape[1], head) for t in model.rope(latent))
    arrays = {"pos": pos, "cos": cos.numpy(), "sin": sin.numpy()}
    if how != "index" and not class_name.startswith("Wan"):   # Wan's attention applies its own inner function
        q = np.random.default_rng(2468).standard_normal((1, pos.shape[1], 1, head)).astype(np.float32)
        out = apply_rotary_emb(torch.from_numpy(q), (cos, sin), sequence_dim=1)
        arrays.update(q=q[0, :, 0], out=out[0, :, 0].numpy())
    defaults = {k: list(p.default) if isinstance(p.default, tuple) else p.default
                for k, p in inspect.signature(cls.__init__).parameters.items()
                if k in ("attention_head_dim", "axes_dims_rope", "rope_axes_dim", "rope_theta",
                         "use_rotary_positional_embeddings")}
    return arrays, {"config": config, "layer_type": None, "module": how, "init_defaults": defaults}


def main():
    arrays, meta = {}, {}
    for case, (model_type, kwargs, layer_type, how) in TRANSFORMERS_CASES.items():
        a, meta[case] = record_transformers(model_type, kwargs, layer_type, how)
        arrays.update({f"{case}/{k}": np.asarray(v, dtype=np.float64 if k == "pos" else np.float32)
                       for k, v in a.items()})
    for case, (class_name, kwargs, how) in DIFFUSERS_CASES.items():
        a, meta[case] = record_diffusers(class_name, kwargs, how)
        arrays.update({f"{case}/{k}": np.asarray(v, dtype=np.float64 if k == "pos" else np.float32)
                       for k, v in a.items()})
    np.savez_compressed(HERE / "families.npz", **arrays)
    (HERE / "families.json").write_text(json.dumps(
        {"transformers": transformers.__version__, "diffusers": diffusers.__version__, "torch": torch.__version__,
         "cases": meta}, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()
