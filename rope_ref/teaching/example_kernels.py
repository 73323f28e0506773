"""RoPE kernels written the way outside code writes them (not rope_ref's implementation): the subjects of notebook 07,
each taking ``x`` ``(seq, d)`` at its own positions 0..seq-1.  At the end, a replay of transformers' Llama rotary
module (its recorded cos/sin and ``inv_freq``) for notebook 07's wrapper and notebook 06's bfloat16 cast."""

import json
from importlib import resources

import numpy as np

from .._validate import check_choice


def config(name: str) -> dict:
    """A model config.json shipped in rope_ref/teaching/data, as a dict: ``config("qwen2.5-7b-instruct-yarn")``."""
    data = resources.files(__package__) / "data"
    name = check_choice(name, "name", sorted(f.name[:-5] for f in data.iterdir() if f.name.endswith(".json")))
    return json.loads((data / f"{name}.json").read_text(encoding="utf-8"))


def neox_style_rope(x, base=10000.0):
    """GPT-NeoX / HF transformers: pairs (i, i + d/2), x*cos + rotate_half(x)*sin."""
    seq, d = x.shape
    inv_freq = 1.0 / base ** (np.arange(0, d, 2) / d)
    emb = np.concatenate([np.outer(np.arange(seq), inv_freq)] * 2, axis=-1)
    rotate_half = np.concatenate([-x[:, d // 2:], x[:, :d // 2]], axis=-1)
    return x * np.cos(emb) + rotate_half * np.sin(emb)


def llama_style_rope(x, base=10000.0):
    """Meta Llama: pairs (2i, 2i+1) as complex numbers times e^{i m theta_i}."""
    seq, d = x.shape
    freqs = 1.0 / base ** (np.arange(0, d, 2) / d)
    cis = np.exp(1j * np.outer(np.arange(seq), freqs))
    z = (x[:, 0::2] + 1j * x[:, 1::2]) * cis
    return np.stack([z.real, z.imag], axis=-1).reshape(seq, d)


def mystery_rope(x, base=10000.0):
    """Meant to be Llama's (interleaved pairs, base 10^4, row r at position r), but one thing is wrong: find it."""
    return llama_style_rope(np.concatenate([x[:1], x]), base)[1:]        # a row prepended, then dropped


def float16_angle_rope(x, base=10000.0):
    """NeoX-style, but positions and frequencies multiplied in float16 (a mixed-precision slip)."""
    seq, d = x.shape
    inv_freq = (1.0 / base ** (np.arange(0, d, 2) / d)).astype(np.float16)
    angles = (np.arange(seq).astype(np.float16)[:, None] * inv_freq).astype(np.float64)
    emb = np.concatenate([angles, angles], axis=-1)
    rotate_half = np.concatenate([-x[:, d // 2:], x[:, :d // 2]], axis=-1)
    return x * np.cos(emb) + rotate_half * np.sin(emb)


def hf_style_rope(x, inv_freq, attention_factor=1.0):
    """transformers' pattern: angles in float32, cat(freqs, freqs), x*cos + rotate_half(x)*sin; cos and sin times
    ``attention_factor``, as transformers' rotary modules do."""
    seq, d = x.shape
    freqs = np.outer(np.arange(seq, dtype=np.float32), np.asarray(inv_freq, dtype=np.float32))
    emb = np.concatenate([freqs, freqs], axis=-1)
    cos, sin = np.cos(emb) * attention_factor, np.sin(emb) * attention_factor
    rotate_half = np.concatenate([-x[:, d // 2:], x[:, :d // 2]], axis=-1)
    return (x * cos + rotate_half * sin).astype(np.float32)


def llama_style_rope_backward(x, g, base=10000.0):
    """The backward of ``llama_style_rope``: g rotated by minus the angles, S R_m S = R_(-m) with S = diag(1, -1, ...)
    flipping the sign of every odd feature."""
    flip = np.tile([1.0, -1.0], g.shape[-1] // 2)
    return llama_style_rope(g * flip, base) * flip


def fused_backward(x, g, base=10000.0):
    """A fused kernel's backward as it is sometimes first written: it reuses the forward's code path."""
    return llama_style_rope(g, base)


def replayed_llama_rotary(cast=None):
    """transformers 5.24.0's ``LlamaRotaryEmbedding`` for Llama 3 8B, replayed from its recording (ids 0..255):
    ``rotary(x, position_ids) -> (cos, sin)``, each ``(batch, seq, 128)`` in ``x``'s dtype.  ``cast="bfloat16"``: the
    module after ``.to(torch.bfloat16)``, its bfloat16 ``inv_freq`` times the positions in float32, then cos and sin."""
    if cast not in (None, "bfloat16"):
        raise ValueError(f"cast must be None or 'bfloat16' (the cast recorded), got {cast!r}")
    recorded = _recording()
    if cast is None:
        halves = recorded["cos_half"], recorded["sin_half"]
    else:
        angles = np.outer(np.arange(len(recorded["cos_half"]), dtype=np.float32), recorded["inv_freq_bf16"])
        halves = np.cos(angles), np.sin(angles)
    cos, sin = (np.concatenate([half] * 2, axis=-1) for half in halves)

    def rotary(x, position_ids):
        return cos[position_ids].astype(x.dtype), sin[position_ids].astype(x.dtype)
    return rotary


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    """transformers' ``apply_rotary_pos_emb`` (modeling_llama) in NumPy: cos and sin ``(batch, seq, d)`` broadcast
    over the heads of q and k ``(batch, heads, seq, d)``; returns ``(q_embed, k_embed)``."""
    cos, sin = np.expand_dims(cos, unsqueeze_dim), np.expand_dims(sin, unsqueeze_dim)
    half = q.shape[-1] // 2
    return tuple(x * cos + np.concatenate([-x[..., half:], x[..., :half]], axis=-1) * sin for x in (q, k))


def recorded_inv_freq():
    """The recorded ``inv_freq`` of that module, float32 ``(64,)``, as built and after ``.to(torch.bfloat16)``."""
    recorded = _recording()
    return recorded["inv_freq"], recorded["inv_freq_bf16"]


def _recording() -> dict:
    with (resources.files(__package__) / "data" / "llama3_rotary.npz").open("rb") as file, np.load(file) as recorded:
        return dict(recorded)
