"""Record the torch references of four kernel test suites on samples of their grids (and transformers' DeepSeek-V3
MLA, which writes its pairs half-split), for tests/test_kernel_suites.py.

Run where torch (and, for Liger's references, transformers) is installed (not needed to run the tests):
    python tests/data/record_kernel_suites.py
It writes ``tests/data/kernel_suites.npz`` (per case ``<name>/x``, ``<name>/out`` and the case's own inputs) and
``tests/data/kernel_suites.json`` (versions; per case the suite, the call's keywords, the precision model).

What each suite's test compares its kernel with (the arithmetic below is written here from their documented
behaviour, not copied; Liger's references are transformers' own functions, called as they are):
* flash-attention ``tests/test_rotary.py``: ``apply_rotary_emb_torch`` on x ``(batch, seq, heads, d)`` upcast to
  float32, with a cos/sin table of random angles stored in x's dtype, rows shifted by ``seqlen_offsets`` (an int or
  one per batch entry), rotary_fraction 1 or 0.5, interleaved or not, and the packed ``cu_seqlens`` form;
  output cast back to x's dtype.
* vLLM ``tests/kernels/core/test_pos_encoding.py``: ``RotaryEmbedding.forward_native``: a float32 cos/sin cache for
  positions 0..8191 (base 10000), cast with the module to the test's dtype, gathered by random positions
  ``(batch, seq)``, and applied in that dtype to query ``(batch, seq, heads * head_size)``, neox or GPT-J style.
* Liger ``test/transformers/test_rope.py``, ``test_qwen2vl_mrope.py``, ``test_llama4_rope.py``: transformers'
  ``LlamaRotaryEmbedding`` + ``apply_rotary_pos_emb`` on ``(batch, heads, seq, d)``; Qwen2-VL's
  ``apply_multimodal_rotary_pos_emb`` with ``mrope_section``; Llama 4's complex ``apply_rotary_emb``.
* FlashInfer ``tests/attention/test_rope.py``: Meta's complex form (``precompute_freqs_cis`` in float32, the
  product in float32, cast back) on ragged batches ``(nnz, heads, d)`` split by ``indptr`` with per-request
  ``offsets``, partial rotary, interleaved.
"""

import json
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).parent
CASES, ARRAYS = {}, {}


def keep(name, suite, x, out, call, precision, **arrays):
    """One case: x and the reference's output (float32 copies, exact for every 16-bit type), the call's keywords
    and the precision model, plus any arrays the call needs."""
    CASES[name] = {"suite": suite, "dtype": str(x.dtype).replace("torch.", ""), "call": call, "precision": precision}
    ARRAYS[f"{name}/x"] = x.detach().float().numpy()
    ARRAYS[f"{name}/out"] = out.detach().float().numpy()
    for key, value in arrays.items():
        ARRAYS[f"{name}/{key}"] = value.detach().float().numpy() if torch.is_tensor(value) else np.asarray(value)


def turn(x, cos, sin, interleaved):
    """x * cos + rotate_half(x) * sin over the first 2 * cos.shape[-1] features; cos/sin broadcast per pair."""
    r = 2 * cos.shape[-1]
    xr, rest = x[..., :r], x[..., r:]
    if interleaved:
        c, s = cos.repeat_interleave(2, -1), sin.repeat_interleave(2, -1)
        half = torch.stack([-xr[..., 1::2], xr[..., 0::2]], -1).flatten(-2)
    else:
        c, s = torch.cat([cos, cos], -1), torch.cat([sin, sin], -1)
        half = torch.cat([-xr[..., r // 2:], xr[..., :r // 2]], -1)
    return torch.cat([xr * c + half * s, rest], -1)


def flash_attention():
    for dtype in (torch.bfloat16, torch.float16, torch.float32):
        for fraction in (1.0, 0.5):
            for interleaved in (False, True):
                for offsets in ("0", "int", "tensor"):
                    torch.manual_seed(0)
                    b, s, h, d = 2, 33, 1, 64
                    r = int(fraction * d)
                    x = torch.randn(b, s, h, d, dtype=dtype)
                    angle = torch.rand(2 * s, r // 2) * 2 * torch.pi
                    cos, sin = torch.cos(angle).to(dtype), torch.sin(angle).to(dtype)
                    off = {"0": torch.zeros(b, dtype=torch.long), "int": torch.full((b,), 7),
                           "tensor": torch.randint(0, s, (b,))}[offsets]
                    rows = off[:, None] + torch.arange(s)                                  # (b, s)
                    out = turn(x.float(), cos.float()[rows][:, :, None], sin.float()[rows][:, :, None], interleaved)
                    name = f"flash/{str(dtype)[6:]}/r{r}/{'gptj' if interleaved else 'neox'}/{offsets}"
                    keep(name, "flash-attention", x, out.to(dtype), {"pairing": "interleaved" if interleaved else
                         "half", "layout": "bshd"}, {"table": str(dtype)[6:], "compute": "float32",
                         "output": str(dtype)[6:]}, cos=cos, sin=sin, seqlen_offsets=off)
    # the varlen form: sequences packed along t, cu_seqlens, per-sequence offsets
    torch.manual_seed(1)
    lengths = torch.tensor([5, 30, 1, 17])
    cu = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)])
    x = torch.randn(int(cu[-1]), 3, 64, dtype=torch.bfloat16)
    angle = torch.rand(80, 32) * 2 * torch.pi
    cos, sin = torch.cos(angle).to(torch.bfloat16), torch.sin(angle).to(torch.bfloat16)
    off = torch.tensor([0, 3, 40, 9])
    seq_of = torch.repeat_interleave(torch.arange(4), lengths)
    rows = torch.arange(len(x)) - cu[seq_of] + off[seq_of]
    out = turn(x.float(), cos.float()[rows][:, None], sin.float()[rows][:, None], False).to(torch.bfloat16)
    keep("flash/varlen", "flash-attention", x, out, {"pairing": "half", "layout": "thd"},
         {"table": "bfloat16", "compute": "float32", "output": "bfloat16"}, cos=cos, sin=sin, seqlen_offsets=off,
         cu_seqlens=cu)


def vllm():
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        for neox in (True, False):
            for head_size, rotary_dim in ((64, 64), (80, 32), (128, 128)):
                torch.manual_seed(0)
                inv = 1.0 / (10000 ** (torch.arange(0, rotary_dim, 2, dtype=torch.float) / rotary_dim))
                t = torch.arange(8192, dtype=torch.float)
                freqs = torch.einsum("i,j->ij", t, inv)
                cache = torch.cat([freqs.cos(), freqs.sin()], -1).to(dtype)          # the module cast to dtype
                positions = torch.randint(0, 8192, (2, 11))
                query = torch.randn(2, 11, 3 * head_size, dtype=dtype)
                cos, sin = cache[positions].chunk(2, -1)
                q = query.view(2, 11, 3, head_size)
                out = turn(q, cos[:, :, None], sin[:, :, None], not neox).reshape(query.shape)
                name = f"vllm/{str(dtype)[6:]}/{'neox' if neox else 'gptj'}/{head_size}-{rotary_dim}"
                p = str(dtype)[6:]
                keep(name, "vllm", query, out, {"pairing": "half" if neox else "interleaved", "head_dim": head_size,
                     "rotary_dim": rotary_dim}, {"angles": "float32", "table": p, "compute": p, "output": p},
                     positions=positions)


def liger():
    from transformers import LlamaConfig
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb
    from transformers.models.qwen2_vl.configuration_qwen2_vl import Qwen2VLTextConfig
    from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLRotaryEmbedding
    for dtype in (torch.bfloat16, torch.float32):
        for bsz, seq, heads, hd in ((1, 64, 2, 64), (2, 96, 1, 128)):
            torch.manual_seed(0)
            config = LlamaConfig(hidden_size=heads * hd, num_attention_heads=heads, max_position_embeddings=131072)
            rope = LlamaRotaryEmbedding(config)
            q = torch.randn(bsz, heads, seq, hd, dtype=dtype)
            off = torch.tensor([0, 100000])[:bsz]
            cos, sin = rope(q, torch.arange(seq)[None] + off[:, None])
            out, _ = apply_rotary_pos_emb(q, q, cos, sin)
            p = str(dtype)[6:]
            keep(f"liger/llama/{p}/{bsz}x{seq}", "liger", q, out, {"pairing": "half", "layout": "bhsd"},
                 {"angles": "float32", "table": p, "compute": p, "output": p}, seqlen_offsets=off)
        torch.manual_seed(1)
        section, hd, seq = [16, 24, 24], 128, 64
        config = {"model_type": "qwen2_vl", "hidden_size": 2 * hd, "num_attention_heads": 2, "rope_theta": 1e6,
                  "rope_scaling": {"type": "mrope", "mrope_section": section}}
        rope = Qwen2VLRotaryEmbedding(Qwen2VLTextConfig(**config))
        pos3 = torch.stack([torch.arange(seq), torch.arange(seq) // 8, torch.arange(seq) % 8])[:, None]  # (3, 1, s)
        q = torch.randn(1, 2, seq, hd, dtype=dtype)
        cos, sin = rope(q, pos3)
        out, _ = apply_rotary_pos_emb(q, q, cos, sin)
        p = str(dtype)[6:]
        keep(f"liger/qwen2vl/{p}", "liger", q, out, {"config": config},
             {"angles": "float32", "table": p, "compute": p, "output": p}, positions=pos3)
    from transformers.models.llama4.modeling_llama4 import apply_rotary_emb as llama4_apply
    for dtype in (torch.bfloat16, torch.float32):
        torch.manual_seed(2)
        hd, seq = 128, 48
        inv = 1.0 / (5e5 ** (torch.arange(0, hd, 2, dtype=torch.float) / hd))
        freqs_cis = torch.polar(torch.ones(seq, hd // 2), torch.outer(torch.arange(seq).float(), inv))
        q = torch.randn(1, seq, 1, hd, dtype=dtype)
        out, _ = llama4_apply(q, q, freqs_cis[None])
        keep(f"liger/llama4/{str(dtype)[6:]}", "liger", q, out, {"pairing": "interleaved", "base": 5e5,
             "layout": "bshd"}, {"angles": "float32", "table": "float32", "compute": "float32",
             "output": str(dtype)[6:]})


def deepseek():
    """transformers' DeepSeek-V3 (MLA): interleaved pairs in, written half-split (its config's output_pairing)."""
    from transformers import DeepseekV3Config
    from transformers.models.deepseek_v3.modeling_deepseek_v3 import (DeepseekV3RotaryEmbedding,
                                                                       apply_rotary_pos_emb_interleave)
    for dtype in (torch.bfloat16, torch.float32):
        torch.manual_seed(3)
        config = {"model_type": "deepseek_v3", "hidden_size": 256, "num_attention_heads": 2, "qk_rope_head_dim": 64,
                  "qk_nope_head_dim": 128, "v_head_dim": 128, "rope_theta": 1e4}
        rope = DeepseekV3RotaryEmbedding(DeepseekV3Config(**config))
        q = torch.randn(1, 2, 64, 64, dtype=dtype)
        positions = torch.arange(64)[None] + 300
        cos, sin = rope(q, positions)
        out, _ = apply_rotary_pos_emb_interleave(q, q, cos, sin)
        p = str(dtype)[6:]
        keep(f"transformers/deepseek_v3/{p}", "transformers", q, out, {"config": config},
             {"angles": "float32", "table": p, "compute": p, "output": p}, positions=positions)


def flashinfer():
    for interleave in (True, False):
        for rotary_dim in (64, 32):
            torch.manual_seed(0)
            lengths, offsets = torch.tensor([3, 60, 15]), torch.tensor([0, 100, 7])
            indptr = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)])
            q = torch.randn(int(indptr[-1]), 2, 64, dtype=torch.float16)
            inv = 1.0 / (1e4 ** (torch.arange(0, rotary_dim, 2)[: rotary_dim // 2].float() / rotary_dim))
            seq_of = torch.repeat_interleave(torch.arange(3), lengths)
            pos = (torch.arange(len(q)) - indptr[seq_of] + offsets[seq_of]).float()
            cis = torch.polar(torch.ones(len(q), rotary_dim // 2), torch.outer(pos, inv))[:, None]
            if interleave:
                z = torch.view_as_complex(q[..., :rotary_dim].float().reshape(len(q), 2, -1, 2))
                rot = torch.view_as_real(z * cis).flatten(-2)
            else:
                rot = turn(q[..., :rotary_dim].float(), cis.real, cis.imag, False)
            out = torch.cat([rot, q[..., rotary_dim:].float()], -1).to(torch.float16)
            keep(f"flashinfer/{'gptj' if interleave else 'neox'}/r{rotary_dim}", "flashinfer", q, out,
                 {"pairing": "interleaved" if interleave else "half", "layout": "thd", "rotary_dim": rotary_dim},
                 {"angles": "float32", "table": "float32", "compute": "float32", "output": "float16"},
                 cu_seqlens=indptr, seqlen_offsets=offsets)


def main():
    flash_attention()
    vllm()
    liger()
    deepseek()
    flashinfer()
    import transformers
    meta = {"torch": torch.__version__, "transformers": transformers.__version__, "cases": CASES}
    (HERE / "kernel_suites.json").write_text(json.dumps(meta, indent=1) + "\n")
    np.savez_compressed(HERE / "kernel_suites.npz", **ARRAYS)
    print(f"{len(CASES)} cases")


if __name__ == "__main__":
    main()
