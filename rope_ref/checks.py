"""The identities ``python -m rope_ref`` verifies on a default case (d=128, positions 0..4095, float64).

Each check returns the maximum absolute error of one identity; the table
pairs it with the paper's equation and a tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .attention import attention, linear_attention, linear_attention_dense
from .core import (decay_bound, rotate, rotate_complex, rotate_dense, rotate_elementwise,
                   rotation_matrix, sinusoidal, sinusoidal_shift_matrix, to_half, to_interleaved)


@dataclass
class Check:
    name: str
    equation: str
    error: float
    tol: float

    @property
    def ok(self) -> bool:
        return bool(np.isfinite(self.error) and self.error <= self.tol)


def run_checks(d: int = 128, seq: int = 4096, seed: int = 0) -> list[Check]:
    """Run every identity on random float64 vectors at positions 0..seq-1."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((seq, d))
    pos = np.arange(seq, dtype=np.float64)
    # Four independent code paths for the same rotation; the plain eq-34 form is the reference.
    plain = rotate_elementwise(x)
    fast = rotate(x)
    dense = np.concatenate([rotate_dense(x[i:i + 256], pos[i:i + 256]) for i in range(0, seq, 256)])
    half = to_interleaved(rotate(to_half(x), pairing="half"))
    half_plain = to_interleaved(rotate_elementwise(to_half(x), pairing="half"))
    out = [
        Check("dense R@x == plain elementwise", "14 vs 34", _err(dense, plain), 1e-12),
        Check("complex e^{im theta} == plain elementwise", "12 vs 34", _err(rotate_complex(x), plain), 1e-12),
        Check("fast rotate == plain elementwise", "34", _err(fast, plain), 1e-12),
        Check("half pairing == interleaved via permutation", "34", _err(half_plain, plain), 1e-12),
        Check("fast half pairing == plain half pairing", "34", _err(half, half_plain), 1e-12),
    ]
    # Relative position: q_m . k_n equals q . R_{n-m} k for every (m, n) on a sample grid.
    q, k = rng.standard_normal(d), rng.standard_normal(d)
    n_sample = min(64, seq)
    m = rng.choice(seq, n_sample, replace=False)
    n = rng.choice(seq, n_sample, replace=False)
    scores = rotate(np.tile(q, (n_sample, 1)), m) @ rotate(np.tile(k, (n_sample, 1)), n).T
    rel = np.array([[q @ rotate(k, nj - mi) for nj in n] for mi in m])
    out.append(Check("q_m.k_n depends only on n-m", "11, 16", _err(scores, rel), 1e-9))
    Rs = rotation_matrix(m.astype(float), d)
    eye = np.eye(d)
    out.append(Check("R orthogonal: R^T R = I", "15", _err(np.swapaxes(Rs, -1, -2) @ Rs, eye), 1e-12))
    RmT_Rn = np.swapaxes(Rs[:8], -1, -2)[:, None] @ rotation_matrix(n[:8].astype(float), d)[None]
    diff = rotation_matrix((n[:8][None, :] - m[:8][:, None]).astype(float), d)
    out.append(Check("R_m^T R_n = R_{n-m}", "16", _err(RmT_Rn, diff), 1e-9))
    out.append(Check("norms preserved", "15", _err(np.linalg.norm(fast, axis=-1), np.linalg.norm(x, axis=-1)), 1e-10))
    out.append(Check("decay bound at 0 = (d/2+1)/2", "37", _err(decay_bound(0.0, d), (d / 2 + 1) / 2), 1e-12))
    t = rng.uniform(0, seq, 32)
    shift = 37.5
    E_shift = sinusoidal(t + shift, d)
    out.append(Check("sinusoidal E(t+k) = B_k E(t)", "Vaswani 3.5",
                     _err(E_shift, sinusoidal(t, d) @ sinusoidal_shift_matrix(shift, d).T), 1e-9))
    out += _attention_checks(rng, d)
    return out


def _attention_checks(rng, d: int) -> list[Check]:
    q, k, v = (rng.standard_normal((4, 64, d)) for _ in range(3))
    base_out = attention(q, k, v, causal=True)
    shifted = attention(q, k, v, q_positions=np.arange(64) + 1000, k_positions=np.arange(64) + 1000, causal=True)
    inc = attention(q[:, 48:], k, v, q_positions=np.arange(48, 64), causal=True)
    lin = linear_attention(q, k, v, causal=True)
    return [
        Check("softmax attention invariant to a position shift", "16/17", _err(base_out, shifted), 1e-9),
        Check("incremental decoding == full recomputation", "16/17", _err(inc, base_out[:, 48:]), 1e-12),
        Check("linear attention == dense O(N^2) eq 19", "19", _err(lin, linear_attention_dense(q, k, v, causal=True)), 1e-9),
    ]


def _err(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64))))


def format_table(checks: list[Check]) -> str:
    rows = [("identity", "paper eq", "max abs error", "tolerance", "result")]
    rows += [(c.name, c.equation, f"{c.error:.3e}", f"{c.tol:.0e}", "pass" if c.ok else "FAIL") for c in checks]
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
