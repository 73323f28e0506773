"""Reference RoPE kernels written from published code (float32 where torch computes in float32), and the checker's
catalogue planted in the oracle's model (:func:`planted`).  Expected values come from their parameters."""

import math
from types import SimpleNamespace

import numpy as np

from rope_ref.kernel_check import DEFECTS, expected_model

F32 = np.float32


def freqs64(d, base=10000.0, start=0):
    """theta_i = base^(-2i/d) in float64 (start=2: indexed from 1, a planted bug)."""
    return 1.0 / base ** (np.arange(start, d + start, 2) / d)


def rotate_half(x):
    """transformers' rotate_half: (-x2, x1) for the halves x1, x2 of the last axis."""
    d = x.shape[-1]
    return np.concatenate([-x[..., d // 2:], x[..., :d // 2]], axis=-1)


def rotate_every_two(x):
    """GPT-J's, GLM's rotate_half_llm, timm's rot: (x0, x1, x2, x3) -> (-x1, x0, -x3, x2)."""
    return np.stack([-x[..., 1::2], x[..., 0::2]], axis=-1).reshape(x.shape)


def neox(x, offset=0, *, base=10000.0, sign=1.0, angle_dtype=np.float64):
    """GPT-NeoX / HF on (..., seq, d), row r at offset + r (offset: a number or one per row): x*cos + sign *
    rotate_half(x)*sin, angles in angle_dtype."""
    seq, d = x.shape[-2:]
    ang = (np.arange(seq) + offset).astype(angle_dtype)[:, None] * freqs64(d, base).astype(angle_dtype)
    emb = np.concatenate([ang, ang], axis=-1).astype(np.float64)
    return x * np.cos(emb) + sign * rotate_half(x) * np.sin(emb)


def llama(x, offset=0, *, base=10000.0):
    """Meta Llama style on (..., seq, d): interleaved pairs as complex numbers times e^{i (offset + r) theta}."""
    seq, d = x.shape[-2:]
    z = (x[..., 0::2] + 1j * x[..., 1::2]) * np.exp(1j * np.outer(np.arange(seq) + offset, freqs64(d, base)))
    return np.stack([z.real, z.imag], axis=-1).reshape(x.shape)


def hf_inv_freq(dim, base=10000.0):
    """HF: 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim)), in float32."""
    return (F32(1.0) / (F32(base) ** (np.arange(0, dim, 2, dtype=np.int64).astype(F32) / F32(dim)))).astype(F32)


def hf_cos_sin(seq, offset, inv, dtype=F32):
    """HF rotary module: float32 freqs, emb = cat(freqs, freqs), float32 cos/sin, then `.to(dtype=x.dtype)`."""
    freqs = (np.arange(seq) + offset).astype(F32)[:, None] * inv[None, :]
    emb = np.concatenate([freqs, freqs], axis=-1)
    return np.cos(emb).astype(dtype), np.sin(emb).astype(dtype)


def hf_rope(x, offset=0, inv_freq=None, base=10000.0, rotary_dim=None, attention_scaling=1.0):
    """HF Llama / GPT-NeoX (rotary_pct): freqs = inv_freq[None, :, None] @ position_ids[:, None, :].float(),
    emb = cat(freqs, freqs), cos/sin (times attention_scaling) in float32, q*cos + rotate_half(q)*sin."""
    seq, d = x.shape
    r = rotary_dim or d
    inv = hf_inv_freq(r, base) if inv_freq is None else np.asarray(inv_freq, F32)
    position_ids = (np.arange(seq, dtype=np.int64) + offset).astype(F32)
    freqs = (inv[:, None] @ position_ids[None, :]).T
    emb = np.concatenate([freqs, freqs], axis=-1)
    cos, sin = np.cos(emb) * F32(attention_scaling), np.sin(emb) * F32(attention_scaling)
    q = x.astype(F32)
    q_rot, q_pass = q[:, :r], q[:, r:]
    return np.concatenate([q_rot * cos + rotate_half(q_rot) * sin, q_pass], axis=-1)


def gptj_rope(x, offset=0, base=10000.0):
    """GPT-J: sinusoids in float32, repeat_interleave, rotate_every_two (interleaved pairs)."""
    seq, d = x.shape
    sinusoid = (np.arange(seq) + offset).astype(F32)[:, None] * hf_inv_freq(d, base)[None, :]
    sin, cos = np.repeat(np.sin(sinusoid), 2, axis=-1), np.repeat(np.cos(sinusoid), 2, axis=-1)
    q = x.astype(F32)
    return q * cos + rotate_every_two(q) * sin


def meta_rope(x, offset=0, base=10000.0):
    """Meta Llama: freqs_cis = torch.polar(ones, outer(t, freqs)) in complex64, x viewed as complex."""
    seq, d = x.shape
    freqs = (F32(1.0) / (F32(base) ** (np.arange(0, d, 2)[: d // 2].astype(F32) / F32(d)))).astype(F32)
    angles = np.outer((np.arange(seq) + offset).astype(F32), freqs)
    freqs_cis = (np.cos(angles) + 1j * np.sin(angles)).astype(np.complex64)
    q = x.astype(F32)
    z = (q[:, 0::2] + 1j * q[:, 1::2]).astype(np.complex64) * freqs_cis
    return np.stack([z.real, z.imag], axis=-1).reshape(seq, d)


def pairwise_reference(x, positions, base=10000.0, pairing="interleaved", rotary_dim=None, inv_freq=None):
    """RoPE in float64, pair by pair (eq 13): (a, b) -> (a cos - b sin, a sin + b cos), pair i being features
    (2i, 2i+1) (interleaved) or (i, i + r/2) (half); features from rotary_dim on pass through."""
    x = np.array(x, dtype=np.float64)
    pos = np.broadcast_to(np.asarray(positions, dtype=np.float64), x.shape[:-1])
    out = x.copy()
    r = x.shape[-1] if rotary_dim is None else rotary_dim
    for idx in np.ndindex(x.shape[:-1]):
        for i in range(r // 2):
            theta = base ** (-2 * i / r) if inv_freq is None else float(inv_freq[i])
            angle = float(pos[idx]) * theta
            ia, ib = (2 * i, 2 * i + 1) if pairing == "interleaved" else (i, i + r // 2)
            a, b = x[idx + (ia,)], x[idx + (ib,)]
            out[idx + (ia,)] = a * math.cos(angle) - b * math.sin(angle)
            out[idx + (ib,)] = a * math.sin(angle) + b * math.cos(angle)
    return out


#: The catalogue planted: defect name -> (the expectation beyond EXPECTED, what the planted kernel does, as identify
#: would measure it).  planted(name) applies the entry to the oracle's model of the expectation.
EXPECTED = dict(pairing="half", rotary_dim=32, base=10000.0, offset=0)
MEASURED = dict(pairing="half", rotary_dim=32, rotary_start=0, output_pairing=None, offset=0.0, base=None,
                rope_type=None, rope_params={}, table_end=None, rows=4096, inv_freq=None, norm_scale=1.0)
YARN = dict(rope_type="yarn", factor=4.0, original_max_position_embeddings=1024)
PLANTS = {
    "pairing swapped": ({}, dict(pairing="interleaved")),
    "different rotary_dim": ({}, dict(rotary_dim=16)),
    "different rotary_start": ({}, dict(rotary_start=32)),
    "output layout": (dict(pairing="interleaved"), dict(output_pairing="half")),
    "position offset": ({}, dict(offset=7.0)),
    "table clamped": ({}, dict(table_end=(300, "clamped"))),
    "table repeated": ({}, dict(table_end=(300, "repeated"))),
    "another base": ({}, dict(base=500000.0)),
    "scaling missing": (dict(rope_type="linear", factor=4.0), {}),
    "another scaling method": (dict(rope_type="linear", factor=4.0),
                               dict(rope_type="linear", rope_params=dict(base=10000.0, factor=2.0))),
    "attention factor missing": (YARN, {}),
}


def planted(name):
    """(expectation, the oracle's Model of it with defect ``name`` of the catalogue applied)."""
    extra, does = PLANTS.get(name, ({}, {}))
    expected = {**EXPECTED, **extra}
    measured = SimpleNamespace(**{**MEASURED, **does})
    defect = next(d for d in DEFECTS if d.name == name)
    return expected, defect.apply(expected_model(expected, measured), measured)[0]
