"""Record the rotary embeddings of real libraries for the configs in tests/data/configs (not needed to run the tests).

Run where torch, transformers, torchtune and rotary-embedding-torch are installed:
    python tests/data/record_reference.py
or, to record only some configs (stems of tests/data/configs/*.json) and keep the other recorded cases
(transformers alone is then enough):
    python tests/data/record_reference.py v5-granite v5-olmo2 ...
It writes rope_outputs.npz (float32 arrays) and rope_outputs.json (metadata).  For every config
and every offset in OFFSETS it records, from transformers' own classes (the family's config class,
its <Family>RotaryEmbedding module and its apply function, as the family's attention calls them):

* ``out``: the rotated query, shape (4, head_dim), for a fixed seeded input ``q`` (1 head,
  4 rows) at positions offset .. offset+3, computed in float32;
* ``cos``/``sin``: the module's float32 cos and sin for 64 rows at positions offset .. offset+63,
  one column per rotated pair (shape (64, rotary_dim/2); the module repeats each column twice,
  which the script checks), as the apply function uses them.

Plus torchtune's Llama3ScaledRoPE (Llama 3.1 settings) and lucidrains' RotaryEmbedding (Phi-2's
rotated part), whose pairing is interleaved.  The tests replay cos/sin as a black-box kernel
(y = x*cos + rotate_half(x)*sin) and check that the replay reproduces ``out``.
"""

import importlib
import importlib.util
import inspect
import json
from pathlib import Path

import numpy as np
import torch
import transformers

HERE = Path(__file__).parent
LAYER_TYPES = {"v5-gemma3-text": ("full_attention", "sliding_attention"),    # configs with one RoPE per layer type
               "v5-modernbert": ("full_attention", "sliding_attention"),
               "v5-gemma4-text": ("full_attention", "sliding_attention"),
               "v5-ergo": ("sliding_attention",)}     # ergo's full-attention layers have no RoPE
#: M-RoPE configs: recorded at (temporal, height, width) ids mrope_positions(offset, rows), not at one id per row.
MROPE = {"v5-qwen3-5-text", "v5-qwen2-vl", "v5-qwen3-vl-text", "v5-glm4v-text", "v5-hy-v4-vl-text"}


def mrope_positions(offset, rows):
    """(3, rows) ids that differ by axis: t = offset + r, h = offset + 2r + 1, w = offset + 3r + 2."""
    r = np.arange(rows)
    return np.stack([offset + r, offset + 2 * r + 1, offset + 3 * r + 2])
#: Model types transformers has no classes for, recorded with the classes their published checkpoints run
#: (Kimi-K2's config.json names DeepseekV3ForCausalLM): the config's values, that family's module and apply.
RECORD_AS = {"kimi_k2": "deepseek_v3"}
OFFSETS = (0, 7, 5000)
ROWS, TABLE_ROWS = 4, 64
PARTIAL_IN_ATTENTION = {"phi", "stablelm", "persimmon", "gpt_neox_japanese"}   # the attention splits q
REPEAT_INTERLEAVE = {"cohere", "cohere2", "ergo"}   # modules whose cos/sin repeat each column twice in place
COMPLEX = {"llama4_text", "deepseek_v2"}                        # complex freqs_cis and apply_rotary_emb


def query(head_dim):
    """The fixed input: 1 head, 4 rows, float32, seeded."""
    return np.random.default_rng(1234).standard_normal((ROWS, head_dim)).astype(np.float32)


def hf_rotary(name, cfg_dict, layer_type=None):
    """(out per offset, cos/sin per offset) from transformers' own module and apply function."""
    cfg_dict = dict(cfg_dict, model_type=RECORD_AS.get(cfg_dict["model_type"], cfg_dict["model_type"]))
    config = transformers.AutoConfig.for_model(**cfg_dict)
    if getattr(config, "text_config", None) is not None:        # a multimodal wrapper: its language model
        config = config.text_config
    model_type = config.model_type
    modeling = importlib.import_module(type(config).__module__.replace(".configuration_", ".modeling_"))
    if model_type in ("gptj", "codegen"):
        return gptj_rotary(config, modeling)
    rotary_cls = next(getattr(modeling, n) for n in dir(modeling) if n.endswith("RotaryEmbedding")
                      and not n.startswith(("Dynamic", "Linear")) and "Vision" not in n)
    module = rotary_cls(config=config)
    if hasattr(config, "allow_global_per_layer_attribute_access"):    # Gemma 4: head_dim is the sliding layers'
        config.allow_global_per_layer_attribute_access = True
    mla = getattr(config, "qk_rope_head_dim", None) is not None   # MLA: the module covers the rotated part
    interleave = getattr(modeling, "apply_rotary_pos_emb_interleave", None)
    # MLA attention calls the interleave form unless rope_interleave is False (or the family has none)
    use_interleave = interleave is not None and mla and getattr(config, "rope_interleave", None) is not False
    if mla:
        head_dim = config.qk_rope_head_dim
    else:
        head_dim = config.head_dim if getattr(config, "head_dim", None) else config.hidden_size // config.num_attention_heads
    if model_type in COMPLEX:
        return complex_rotary(modeling, module, head_dim, model_type)
    q = torch.from_numpy(query(head_dim))[None, None]          # (batch 1, heads 1, 4, head_dim)
    kw = {} if layer_type is None else {"layer_type": layer_type}
    apply = getattr(modeling, "apply_rotary_pos_emb", interleave)      # HY-V4: the interleave form only
    one_tensor = list(inspect.signature(apply).parameters)[:3] == ["x", "cos", "sin"]
    if one_tensor and layer_type is not None:   # Gemma 4: a layer type's heads are as wide as its cos/sin
        head_dim = module(q, torch.arange(1)[None], **kw)[0].shape[-1]      # (global_head_dim on full layers)
        q = torch.from_numpy(query(head_dim))[None, None]
    records = {}
    for offset in OFFSETS:
        if name in MROPE:                        # (3, batch 1, rows): the module's M-RoPE position ids
            pos, tpos = (torch.from_numpy(mrope_positions(offset, n))[:, None] for n in (ROWS, TABLE_ROWS))
        else:
            pos, tpos = (torch.arange(offset, offset + n)[None] for n in (ROWS, TABLE_ROWS))
        cos, sin = module(q, pos, **kw)
        if one_tensor:                           # Gemma 4: apply_rotary_pos_emb(x, cos, sin)
            out = modeling.apply_rotary_pos_emb(q, cos, sin)
        elif model_type in PARTIAL_IN_ATTENTION:
            r = cos.shape[-1]
            rot, _ = modeling.apply_rotary_pos_emb(q[..., :r], q[..., :r], cos, sin)
            out = torch.cat([rot, q[..., r:]], dim=-1)
        elif use_interleave:
            out, _ = interleave(q, q, cos, sin)
        else:
            out, _ = modeling.apply_rotary_pos_emb(q, q, cos, sin)
        tcos, tsin = module(q, tpos, **kw)
        records[offset] = (out[0, 0].numpy(), *(pair_columns(t[0].numpy(), model_type) for t in (tcos, tsin)))
    return records


def complex_rotary(modeling, module, head_dim, model_type):
    """llama4 and deepseek_v2: the module returns complex freqs_cis; apply_rotary_emb multiplies the
    pairs (x_2i, x_2i+1) read as complex numbers.  cos/sin are its real and imaginary parts."""
    heads_second = model_type == "deepseek_v2"                 # q (b, h, s, d); llama4: (b, s, h, d)
    q = torch.from_numpy(query(head_dim))
    q = q[None, None] if heads_second else q[None, :, None]
    records = {}
    for offset in OFFSETS:
        out, _ = modeling.apply_rotary_emb(q, q, module(q, torch.arange(offset, offset + ROWS)[None]))
        out = out[0, 0] if heads_second else out[0, :, 0]
        table = module(q, torch.arange(offset, offset + TABLE_ROWS)[None])[0]
        records[offset] = (out.numpy(), table.real.numpy(), table.imag.numpy())
    return records


def pair_columns(table, model_type):
    """One column per pair from the module's (rows, rotary_dim) table, checking the repeat."""
    r = table.shape[-1]
    if model_type == "gpt_oss":                       # one column per pair already (its apply chunks x in two)
        return table.astype(np.float32)
    if model_type in REPEAT_INTERLEAVE or model_type.startswith(("blt_", "cohere2_moe", "glm4v")):   # repeat_interleave
        cols, twin = table[:, 0::2], table[:, 1::2]
    else:                                             # cat(freqs, freqs): columns i and i + r/2
        cols, twin = table[:, : r // 2], table[:, r // 2:]
    if model_type not in ("glm", "glm4"):             # GLM's apply uses the first half only
        assert np.array_equal(cols, twin), model_type
    return cols.astype(np.float32)


def gptj_rotary(config, modeling):
    """GPT-J has no module: create_sinusoidal_positions + apply_rotary_pos_emb, as GPTJAttention."""
    head_dim, r = config.n_embd // config.n_head, config.rotary_dim
    table = modeling.create_sinusoidal_positions(max(OFFSETS) + TABLE_ROWS, r)   # (pos, r): sin | cos
    q = torch.from_numpy(query(head_dim))[None, :, None]                         # (1, 4, 1 head, head_dim)
    records = {}
    for offset in OFFSETS:
        sincos = table[offset:offset + ROWS][None]
        sin, cos = torch.split(sincos, r // 2, dim=-1)
        rot = modeling.apply_rotary_pos_emb(q[..., :r], sin, cos)
        out = torch.cat([rot, q[..., r:]], dim=-1)[0, :, 0]
        rows = table[offset:offset + TABLE_ROWS]
        records[offset] = (out.numpy(), rows[:, r // 2:].numpy(), rows[:, : r // 2].numpy())
    return records


def load_file(module_name, relpath, package):
    """Import one file of a package without importing the package (torchtune's __init__ needs torchao)."""
    root = Path(importlib.util.find_spec(package).submodule_search_locations[0])
    spec = importlib.util.spec_from_file_location(module_name, root / relpath)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def torchtune_llama31():
    """torchtune's Llama3ScaledRoPE with Llama 3.1's settings (interleaved pairs, Meta's layout)."""
    mod = load_file("tt_llama31_pe", "models/llama3_1/_position_embeddings.py", "torchtune")
    rope = mod.Llama3ScaledRoPE(dim=128, max_seq_len=max(OFFSETS) + TABLE_ROWS, base=500000.0, scale_factor=8,
                                low_freq_factor=1, high_freq_factor=4, old_context_len=8192)
    q = torch.from_numpy(query(128))[None, :, None]                 # [b, s, n_h, h_d]
    records = {}
    for offset in OFFSETS:
        out = rope(q, input_pos=torch.arange(offset, offset + ROWS)[None])[0, :, 0]
        cache = rope.cache[offset:offset + TABLE_ROWS]              # (rows, d/2, 2): cos, sin
        records[offset] = (out.numpy(), cache[..., 0].numpy(), cache[..., 1].numpy())
    return records


def lucidrains_phi2():
    """lucidrains' RotaryEmbedding on Phi-2's rotated part (32 of 80 features, interleaved pairs)."""
    from rotary_embedding_torch import RotaryEmbedding
    rope = RotaryEmbedding(dim=32, theta=10000)
    q = torch.from_numpy(query(80))
    records = {}
    for offset in OFFSETS:
        out = rope.rotate_queries_or_keys(q[None], offset=offset)[0]
        seq = torch.arange(offset, offset + TABLE_ROWS, dtype=torch.float32)
        angles = rope.forward(seq, seq_len=TABLE_ROWS, offset=offset)[:, 0::2]   # repeated per pair
        records[offset] = (out.numpy(), angles.cos().numpy(), angles.sin().numpy())
    return records


#: The families added after the transformers 5.24.0 audit whose text config class takes hidden_size and heads
#: (not moonshine_streaming: its default partial_rotary_factor 0.8 gives 51 rotated features at head_dim 64).
NEW_FAMILIES = (
    "aria_text", "bamba", "blt_global_transformer", "blt_local_decoder", "blt_local_encoder", "blt_patcher",
    "chameleon", "cohere2_moe", "csm", "csm_depth_decoder_model", "deepseek_ocr2_text", "dia_decoder", "dia_encoder",
    "emu3_text_model", "ernie4_5_vl_moe_text", "esm", "esmc", "eurobert", "evolla", "flint", "glm_ocr_text",
    "glmasr_encoder", "granite4_vision_text", "granite_docling_text", "granite_swa", "granitemoe_swa", "gte",
    "higgs_audio_v2", "hrm_text", "hy_v3", "idefics", "jina_embeddings_v3", "kolibri1", "kyutai_speech_to_text",
    "lara_mini", "apertus1p5_text", "lasr_encoder", "mimi", "mimi_decoder", "mimi_encoder", "minimax",
    "minimax_m3_vl_text", "mllama_text_model", "molmo2_text", "moshi", "muse_glimmer_assistant",
    "muse_glimmer_text", "muse_spark_text", "nemotron3_5_transcribe_asr_audio", "nemotron3_5_transcribe_word_timestamp",
    "nemotron3_diarization_audio", "neucodec", "nomic_bert", "olmo_hybrid", "openai_privacy_filter",
    "paddleocr_vl_text", "pe_audio_encoder", "pe_audio_video_encoder", "pe_video_encoder", "phi4_multimodal",
    "pocket_tts_audio_tokenizer", "pocket_tts_audio_tokenizer_decoder", "pocket_tts_audio_tokenizer_encoder",
    "qwen2_5_omni_talker", "qwen2_5_omni_text", "qwen2_5_vl_text", "qwen2_vl_text", "qwen3_5_moe_text", "qwen3_5_text",
    "qwen3_omni_moe_talker_code_predictor", "qwen3_omni_moe_talker_text", "qwen3_vl_moe_text", "qwen3_vl_text",
    "qwen4_exp_text", "recurrent_gemma", "t5_gemma_module", "timesfm2_5", "unlimited_ocr_text",
    "voxtral_realtime_encoder", "voxtral_realtime_text", "xcodec2", "deepseek_ocr2_encoder", "ministral3",
    "kolibri1_1", "minicpm5_moe",      # added with the transformers 5.25.0 audit
)


def family_defaults():
    """What each family's v5 config class makes of a config that gives only hidden_size 4096 and 64 heads."""
    out = {}
    for model_type in ("llama", "mistral", "mixtral", "qwen2", "qwen3", "gemma", "gemma2", "gpt_neox", "phi", "phi3",
                       "stablelm", "olmo", "persimmon", "starcoder2", "cohere", "glm",
                       # added with tests/data/audit_families.py
                       "ministral", "qwen2_moe", "qwen3_moe", "qwen3_next", "vaultgemma", "gpt_neox_japanese",
                       "olmo2", "olmoe", "flex_olmo", "granite", "granitemoe", "granitemoeshared", "nemotron",
                       "exaone4", "smollm3", "gpt_oss", "apertus", "arcee", "bitnet", "dots1", "seed_oss",
                       "solar_open", "hunyuan_v1_dense", "hunyuan_v1_moe", "phimoe", "cohere2", "helium", "ernie4_5",
                       "ernie4_5_moe", "glm4", "glm4_moe", "llama4_text", "minimax_m2", "lfm2", "lfm2_moe",
                       "falcon_h1", "cwm", "jais2", "hyperclovax", "diffllama", "doge", "exaone_moe", "afmoe",
                       # added with the transformers 5.24.0 audit (rope_ref/hf_families.py)
                       *NEW_FAMILIES):
        try:
            config = transformers.AutoConfig.for_model(model_type, hidden_size=4096, num_attention_heads=64,
                                                       **({"position_embedding_type": "rotary"} if model_type == "esm" else {}))
        except Exception:          # a config class that refuses these sizes (validators): not recorded
            continue
        if getattr(config, "qk_rope_head_dim", None) is not None or getattr(config, "rope_parameters", None) is None or \
                any(isinstance(v, dict) for v in (config.rope_parameters or {}).values()):
            continue               # MLA and per-layer-type RoPE: read by the recorded configs instead
        if "mrope_section" in Path(importlib.import_module(type(config).__module__.replace(
                ".configuration_", ".modeling_")).__file__).read_text():
            continue               # M-RoPE: its default sections do not fit these sizes (recorded configs instead)
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        rope = config.rope_parameters
        out[model_type] = {"head_dim": head_dim, "rotary_dim": int(head_dim * rope.get("partial_rotary_factor", 1.0)),
                           "base": float(rope["rope_theta"]), "rope_type": rope["rope_type"]}
    return out


def main(only=None):
    """Record every case; with ``only`` (config stems), record those and keep the other recorded cases."""
    arrays, meta = {}, {"transformers": transformers.__version__, "torch": torch.__version__,
                        "offsets": list(OFFSETS), "rows": ROWS, "table_rows": TABLE_ROWS, "seed": 1234,
                        "cases": [], "family_defaults": family_defaults()}
    configs = sorted((HERE / "configs").glob("*.json")) + sorted((HERE / "configs").glob("families/*.json"))
    cases = []
    for p in configs:
        rel, d = str(p.relative_to(HERE / "configs")), json.loads(p.read_text())
        for lt in LAYER_TYPES.get(p.stem, (None,)):   # one case per layer type, read with layer_type=
            name = p.stem if lt is None else f"{p.stem}[{lt}]"
            cases.append((name, "transformers", rel, None, lambda d=d, n=name, lt=lt: hf_rotary(n, d, lt)))
    cases += [("torchtune-llama3.1", "torchtune Llama3ScaledRoPE", "llama-3.1-8b.json", "interleaved", torchtune_llama31),
              ("lucidrains-phi-2", "rotary-embedding-torch RotaryEmbedding", "phi-2.json", "interleaved", lucidrains_phi2)]
    if only:
        old = json.loads((HERE / "rope_outputs.json").read_text())
        kept = {c["name"]: c for c in old["cases"] if Path(c["config"]).stem not in only}
        with np.load(HERE / "rope_outputs.npz") as f:
            arrays = {k: f[k] for k in f.files if k.split("/")[0] in kept}
        cases = [c for c in cases if Path(c[2]).stem in only]
        meta["cases"] = list(kept.values())
    for name, library, config, pairing, record in cases:
        for offset, (out, cos, sin) in record().items():
            for key, arr in (("out", out), ("cos", cos), ("sin", sin)):
                arrays[f"{name}/{offset}/{key}"] = np.ascontiguousarray(arr, dtype=np.float32)
        case = {"name": name, "library": library, "config": config, "pairing": pairing}
        if Path(config).stem in MROPE:
            case["positions"] = "mrope"          # recorded at mrope_positions(offset, rows)
        if name.endswith("]"):
            case["layer_type"] = name[name.index("[") + 1:-1]
        meta["cases"].append(case)
        print(f"recorded {name} ({library})")
    np.savez_compressed(HERE / "rope_outputs.npz", **arrays)
    (HERE / "rope_outputs.json").write_text(json.dumps(meta, indent=1) + "\n")
    size = (HERE / "rope_outputs.npz").stat().st_size
    print(f"wrote rope_outputs.npz ({size / 1e6:.2f} MB, {len(arrays)} arrays) and rope_outputs.json")


if __name__ == "__main__":
    import sys
    main(set(sys.argv[1:]) or None)
