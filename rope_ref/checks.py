"""The identities ``python -m rope_ref`` verifies on a default case (d=128, positions 0..4095, float64): each
row holds the largest absolute error of one identity, the paper's equation and a tolerance."""

from collections import namedtuple
from fractions import Fraction

import numpy as np

from ._validate import check_d, check_positive_int, check_scalar, check_seed
from .rope_attention import attention, linear_attention, linear_attention_dense
from .forms import (decay_bound, frequencies, rotate, rotate_complex, rotate_dense, rotate_elementwise,
                   rotation_matrix, sinusoidal, sinusoidal_shift_matrix, to_half, to_interleaved)
from .multiaxis import axial_frequencies, grid_positions, mrope_frequencies


class Check(namedtuple("Check", "name equation error tol")):      # a row: an identity's largest absolute error
    @property
    def ok(self) -> bool:
        return bool(np.isfinite(self.error) and self.error <= self.tol)


def run_checks(d: int = 128, seq: int = 4096, seed: int = 0) -> list[Check]:
    """Run every identity on random float64 vectors at positions 0..seq-1."""
    d, seq = check_d(d), check_positive_int(seq, "seq")
    rng = np.random.default_rng(check_seed(seed))
    x = rng.standard_normal((seq, d))
    pos = np.arange(seq, dtype=np.float64)
    # Four independent code paths for the same rotation; the plain eq-34 form is the reference.
    plain = rotate_elementwise(x)
    fast = rotate(x)
    dense = np.concatenate([rotate_dense(x[i:i + 256], pos[i:i + 256]) for i in range(0, seq, 256)])
    half = to_interleaved(rotate(to_half(x), pairing="half"))
    half_plain = to_interleaved(rotate_elementwise(to_half(x), pairing="half"))
    # Relative position: q_m . k_n equals q . R_{n-m} k for every (m, n) on a sample grid.
    q, k = rng.standard_normal(d), rng.standard_normal(d)
    m, n = (rng.choice(seq, min(64, seq), replace=False) for _ in range(2))
    scores = rotate(np.tile(q, (len(m), 1)), m) @ rotate(np.tile(k, (len(m), 1)), n).T
    rel = rotate(np.broadcast_to(k, (len(m), len(m), d)), n[None, :] - m[:, None]) @ q
    Rs = rotation_matrix(m.astype(float), d)
    RmT_Rn = np.swapaxes(Rs[:8], -1, -2)[:, None] @ rotation_matrix(n[:8].astype(float), d)[None]
    diff = rotation_matrix((n[:8][None, :] - m[:8][:, None]).astype(float), d)
    t = rng.uniform(0, seq, 32)
    q3, k3, v3 = (rng.standard_normal((4, 64, d)) for _ in range(3))
    full = attention(q3, k3, v3, causal=True)
    shifted = attention(q3, k3, v3, q_positions=np.arange(64) + 1000, k_positions=np.arange(64) + 1000, causal=True)
    inc = attention(q3[:, 48:], k3, v3, q_positions=np.arange(48, 64), causal=True)
    # Any F (dense and signed, as RoPE-Mixed learns it): fast path at p_m, p_n against eq 14's at p_n - p_m alone.
    n = d // 2
    F = rng.standard_normal((n, 3)) * frequencies(d)[:, None]
    pm, pn = rng.uniform(0, seq, (3, 16)), rng.uniform(0, seq, (3, 16))
    f_scores = rotate(np.tile(q, (16, 1)), pm, inv_freq=F) @ rotate(np.tile(k, (16, 1)), pn, inv_freq=F).T
    f_rel = rotate_dense(np.broadcast_to(k, (16, 16, d)), pn[:, None, :] - pm[:, :, None], inv_freq=F) @ q
    # M-RoPE on text (p_t = p_h = p_w = m), Qwen2-VL's blocks and Qwen3-VL's interleaving, against 1-D eq 34.
    s_hw, s_i = 3 * n // 8, 5 * n // 16                   # [16, 24, 24] and [24, 20, 20] for d = 128
    text_err = max(_err(rotate(x, np.stack([pos, pos, pos]), pairing=pairing,
                               inv_freq=mrope_frequencies(d, sections, interleaved=inter)),
                        rotate_elementwise(x, pos, pairing=pairing))
                   for sections, inter in (([n - 2 * s_hw, s_hw, s_hw], False), ([n - 2 * s_i, s_i, s_i], True))
                   for pairing in ("interleaved", "half"))
    out = [Check(name, equation, _err(a, b), tol) for name, equation, a, b, tol in [
        ("dense R@x == plain elementwise", "14 vs 34", dense, plain, 1e-12),
        ("complex e^{im theta} == plain elementwise", "12 vs 34", rotate_complex(x), plain, 1e-12),
        ("fast rotate == plain elementwise", "34", fast, plain, 1e-12),
        ("half pairing == interleaved via permutation", "34", half_plain, plain, 1e-12),
        ("fast half pairing == plain half pairing", "34", half, half_plain, 1e-12),
        ("q_m.k_n depends only on n-m", "11, 16", scores, rel, 1e-9),
        ("R orthogonal: R^T R = I", "15", np.swapaxes(Rs, -1, -2) @ Rs, np.eye(d), 1e-12),
        ("R_m^T R_n = R_{n-m}", "16", RmT_Rn, diff, 1e-9),
        ("norms preserved", "15", np.linalg.norm(fast, axis=-1), np.linalg.norm(x, axis=-1), 1e-10),
        ("decay bound at 0 = (d/2+1)/2", "37", decay_bound(0.0, d), (d / 2 + 1) / 2, 1e-12),
        ("sinusoidal E(t+k) = B_k E(t)", "Vaswani 3.5", sinusoidal(t + 37.5, d),
         sinusoidal(t, d) @ sinusoidal_shift_matrix(37.5, d).T, 1e-9),
        ("softmax attention invariant to a position shift", "16/17", full, shifted, 1e-9),
        ("incremental decoding == full recomputation", "16/17", inc, full[:, 48:], 1e-12),
        ("linear attention == dense O(N^2) eq 19", "19", linear_attention(q3, k3, v3, causal=True),
         linear_attention_dense(q3, k3, v3, causal=True), 1e-9),
        ("any F: q_m.k_n depends only on F(p_n-p_m)", "16, any F", f_scores, f_rel, 1e-9),
        ("M-RoPE on text (t=h=w) == 1-D RoPE", "34, M-RoPE", text_err, 0.0, 1e-12)]]
    if d % 4 == 0:
        # A 2-D grid (axial layout): the score of two patches against two 1-D RoPEs of d/2, by dx and dy.
        P = grid_positions(16, 16, indexing="xy")[:, rng.choice(256, 32, replace=False)]   # (x, y) of 32 patches
        Fa = axial_frequencies(d, base=100.0)
        s2d = rotate(np.tile(q, (32, 1)), P, inv_freq=Fa) @ rotate(np.tile(k, (32, 1)), P, inv_freq=Fa).T
        offsets = P[:, None, :] - P[:, :, None]                                 # (dx, dy) of every pair of patches
        by_axis = sum(rotate_elementwise(np.broadcast_to(k_half, (32, 32, d // 2)), offset, base=100.0) @ q_half
                      for k_half, q_half, offset in zip(np.split(k, 2), np.split(q, 2), offsets))
        out.append(Check("2-D grid: score depends on (dx, dy) only", "16, 2-D", _err(s2d, by_axis), 1e-9))
    return out


def _err(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64))))


def format_table(checks: list[Check]) -> str:
    """The identity table of :func:`run_checks`' result, as text."""
    return _text_table([("identity", "paper eq", "max abs error", "tolerance", "result")] + [
        (c.name, c.equation, f"{c.error:.3e}", f"{c.tol:.0e}", "pass" if c.ok else "FAIL") for c in checks])


def _text_table(rows: list) -> str:
    """Rows of cells (the first the header) as left-aligned text columns, the header underlined."""
    widths = [max(map(len, column)) for column in zip(*rows)]
    rows = rows[:1] + [["-" * w for w in widths]] + rows[1:]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)) for row in rows)


# ---- precision of float64 at large positions (docs/precision.md) ------------------------------------

#: precision_at's errors: of the angles in rad, of R_m^T R_n - R_{n-m}, of q_m.k_n - q.R_{n-m}k (alone, / |q| |k|)
Precision = namedtuple("Precision", "position angle_error matrix_error score_error relative_score_error")


def precision_at(position: float, d: int = 128, base: float = 10000.0, n: int = 32, seed: int = 0) -> Precision:
    """Float64 errors at positions ``position + 0..n-1``: the angle error exactly (fl(m * theta_i) against the
    rational product), the identities at large m, n against one rotation by the small exact distance n - m."""
    d, n, seed = check_d(d), check_positive_int(n, "n"), check_seed(seed)
    m = check_scalar(position, "position") + np.arange(n, dtype=np.float64)
    angle_error = max(abs(float(Fraction(a * t) - Fraction(a) * Fraction(t))) for a in m for t in frequencies(d, base))
    Rm = rotation_matrix(m, d, base)
    dist = m[None, :] - m[:, None]                                     # exact small integers
    RmT_Rn = np.swapaxes(Rm[:4], -1, -2)[:, None] @ Rm[None]          # 4 values of m against every n
    matrix_error = _err(RmT_Rn, rotation_matrix(dist[:4], d, base))
    q, k = np.random.default_rng(seed).standard_normal((2, d))
    scores = rotate(np.tile(q, (n, 1)), m, base=base) @ rotate(np.tile(k, (n, 1)), m, base=base).T
    rel = rotate(np.broadcast_to(k, dist.shape + (d,)), dist, base=base) @ q
    score_error = _err(scores, rel)
    return Precision(float(position), angle_error, matrix_error, score_error,
                     score_error / float(np.linalg.norm(q) * np.linalg.norm(k)))


def precision_table(positions=(0, 1e3, 1e6, 1e9), d: int = 128, base: float = 10000.0) -> str:
    """The table docs/precision.md shows (``print(rope_ref.checks.precision_table())``)."""
    header = ("position", "angle error (rad)", "R_m^T R_n - R_{n-m}", "q_m.k_n - q.R_{n-m}k", "relative to |q||k|")
    return _text_table([header] + [(f"{p:.0e}", *(f"{error:.1e}" for error in precision_at(p, d, base)[1:]))
                                   for p in np.ravel(positions)])
