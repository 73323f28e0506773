"""Record the rotary embeddings of real libraries for the configs in tests/data/configs (not needed to run the tests).

Run where torch, transformers, torchtune and rotary-embedding-torch are installed:
    python tests/data/record_reference.py
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
import json
from pathlib import Path

import numpy as np
import torch
import transformers

HERE = Path(__file__).parent
OFFSETS = (0, 7, 5000)
ROWS, TABLE_ROWS = 4, 64
PARTIAL_IN_ATTENTION = {"phi", "stablelm", "persimmon"}   # the attention splits q; apply_rotary_pos_emb rotates all


def query(head_dim):
    """The fixed input: 1 head, 4 rows, float32, seeded."""
    return np.random.default_rng(1234).standard_normal((ROWS, head_dim)).astype(np.float32)


def hf_rotary(name, cfg_dict):
    """(out per offset, cos/sin per offset) from transformers' own module and apply function."""
    model_type = cfg_dict["model_type"]
    modeling = importlib.import_module(f"transformers.models.{model_type}.modeling_{model_type}")
    config = transformers.AutoConfig.for_model(**cfg_dict)
    if model_type == "gptj":
        return gptj_rotary(config, modeling)
    rotary_cls = next(getattr(modeling, n) for n in dir(modeling) if n.endswith("RotaryEmbedding")
                      and not n.startswith(("Dynamic", "Linear")))
    module = rotary_cls(config=config)
    head_dim = config.head_dim if getattr(config, "head_dim", None) else config.hidden_size // config.num_attention_heads
    q = torch.from_numpy(query(head_dim))[None, None]          # (batch 1, heads 1, 4, head_dim)
    records = {}
    for offset in OFFSETS:
        pos = torch.arange(offset, offset + ROWS)[None]
        cos, sin = module(q, pos)
        if model_type in PARTIAL_IN_ATTENTION:
            r = cos.shape[-1]
            rot, _ = modeling.apply_rotary_pos_emb(q[..., :r], q[..., :r], cos, sin)
            out = torch.cat([rot, q[..., r:]], dim=-1)
        elif model_type == "deepseek_v3" and config.rope_interleave:
            out, _ = modeling.apply_rotary_pos_emb_interleave(q, q, cos, sin)
        else:
            out, _ = modeling.apply_rotary_pos_emb(q, q, cos, sin)
        tpos = torch.arange(offset, offset + TABLE_ROWS)[None]
        tcos, tsin = module(q, tpos)
        records[offset] = (out[0, 0].numpy(), *(pair_columns(t[0].numpy(), model_type) for t in (tcos, tsin)))
    return records


def pair_columns(table, model_type):
    """One column per pair from the module's (rows, rotary_dim) table, checking the repeat."""
    r = table.shape[-1]
    if model_type in ("cohere",):                     # repeat_interleave: columns 2i and 2i+1
        cols, twin = table[:, 0::2], table[:, 1::2]
    else:                                             # cat(freqs, freqs): columns i and i + r/2
        cols, twin = table[:, : r // 2], table[:, r // 2:]
    if model_type != "glm":                           # GLM's apply uses the first half only
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


def family_defaults():
    """What each family's v5 config class makes of a config that gives only hidden_size 4096 and 64 heads."""
    out = {}
    for model_type in ("llama", "mistral", "mixtral", "qwen2", "qwen3", "gemma", "gemma2", "gpt_neox", "phi", "phi3",
                       "stablelm", "olmo", "persimmon", "starcoder2", "cohere", "glm"):
        config = transformers.AutoConfig.for_model(model_type, hidden_size=4096, num_attention_heads=64)
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
        rope = config.rope_parameters
        out[model_type] = {"head_dim": head_dim, "rotary_dim": int(head_dim * rope.get("partial_rotary_factor", 1.0)),
                           "base": float(rope["rope_theta"])}
    return out


def main():
    arrays, meta = {}, {"transformers": transformers.__version__, "torch": torch.__version__,
                        "offsets": list(OFFSETS), "rows": ROWS, "table_rows": TABLE_ROWS, "seed": 1234,
                        "cases": [], "family_defaults": family_defaults()}
    configs = sorted((HERE / "configs").glob("*.json"))
    cases = [(p.stem, "transformers", p.name, None, lambda d=json.loads(p.read_text()), n=p.stem: hf_rotary(n, d))
             for p in configs]
    cases += [("torchtune-llama3.1", "torchtune Llama3ScaledRoPE", "llama-3.1-8b.json", "interleaved", torchtune_llama31),
              ("lucidrains-phi-2", "rotary-embedding-torch RotaryEmbedding", "phi-2.json", "interleaved", lucidrains_phi2)]
    for name, library, config, pairing, record in cases:
        for offset, (out, cos, sin) in record().items():
            for key, arr in (("out", out), ("cos", cos), ("sin", sin)):
                arrays[f"{name}/{offset}/{key}"] = np.ascontiguousarray(arr, dtype=np.float32)
        meta["cases"].append({"name": name, "library": library, "config": config, "pairing": pairing})
        print(f"recorded {name} ({library})")
    np.savez_compressed(HERE / "rope_outputs.npz", **arrays)
    (HERE / "rope_outputs.json").write_text(json.dumps(meta, indent=1) + "\n")
    size = (HERE / "rope_outputs.npz").stat().st_size
    print(f"wrote rope_outputs.npz ({size / 1e6:.2f} MB, {len(arrays)} arrays) and rope_outputs.json")


if __name__ == "__main__":
    main()
