"""Calling the kernel and reading its structure: which features pair up, where the pairs are written, and each row's
2x2 blocks [[cos, -sin], [sin, cos]] (eq 34), from the matrices fn applies to the rows (d + 5 calls)."""

from __future__ import annotations

import numpy as np

from .._validate import check_d, check_finite, check_nonnegative_int, check_positive_int, check_real_array
from ..forms import _pairs

RTOL = 2e-2                 # linearity and pair blocks, relative: loose enough for bfloat16 kernels
#: Unit roundoff of the float types a kernel may compute in, finest first.
PRECISIONS = (("float64", 2.0**-53), ("float32", 2.0**-24), ("float16", 2.0**-11), ("bfloat16", 2.0**-8))


class KernelRaised(RuntimeError):
    """The function under test raised: reported as "fn raised ...", never as a RoPE mismatch."""


class Caller:
    """fn(x), or fn(x, positions) ``(axes, seq)``, as float64 of x's shape; keeps the coarsest float type fn returned
    (``precision``, its unit roundoff ``unit``).  ``raising``: fn's errors as KernelRaised."""

    def __init__(self, fn, positions=None, raising=False):
        self.fn, self.positions, self.raising = fn, positions, raising
        self.unit, self.precision = 2.0**-24, "float32"

    def __call__(self, x, what):
        args = (x.copy(),) if self.positions is None else (x.copy(), self.positions.copy())
        try:
            out = self.fn(*args)
        except Exception as err:
            err.add_note(f"(raised by fn when rope_ref's checker called it with {what}, x of shape {x.shape})")
            if self.raising:
                raise KernelRaised(f"fn raised {type(err).__name__}: {err}") from err
            raise
        kind = next((k for k in ("bfloat16", "float16") if k in str(getattr(out, "dtype", ""))), "float32")
        out = check_real_array(out, f"fn's output (called with {what})").astype(np.float64)
        if out.shape != x.shape:
            raise ValueError(f"fn must map x of shape {x.shape} to the same shape, got {out.shape} ({what})")
        check_finite(out, f"fn's output for finite input ({what}, x of shape {x.shape})")
        self.unit, self.precision = max((self.unit, self.precision), (dict(PRECISIONS)[kind], kind))
        return out


def check_probe_arguments(fn, d, seq, seed, min_seq):
    """(d, seq, seed), each checked; ``fn`` callable; seq at least ``min_seq``."""
    if not callable(fn):
        raise TypeError(f"fn must be callable (the kernel under test), got {type(fn).__name__}")
    seq = check_positive_int(seq, "seq")
    if seq < min_seq:
        raise ValueError(f"seq must be at least {min_seq} rows to measure the angles, got {seq}")
    return check_d(d), seq, None if seed is None else check_nonnegative_int(seed, "seed")


def read_rotations(call: Caller, a, b):
    """The opening checks on random inputs ``a``, ``b`` ``(seq, d)`` (state, fn(0) = 0, linearity, rows apart), then
    the structure of the matrix fn applies to each row (:func:`read_structure`); a str saying why fn is not RoPE."""
    seq, d = a.shape
    ya, yb = call(a, "random input a"), call(b, "random input b")
    scale = max(np.abs(ya).max(), np.abs(yb).max(), 1e-300)
    if np.abs(call(a, "random input a again") - ya).max() > 1e-6 * scale:
        raise ValueError("fn must depend on its inputs alone: two calls with the same input gave different outputs")
    bias = np.abs(call(np.zeros((seq, d)), "zeros")).max() / scale
    if bias > 1e-6:
        return f"fn(0) is not 0 (up to {bias:.2g} relative): a rotary embedding is linear in its input"
    y_lin = call(2 * a - 3 * b, "2a - 3b")
    lin = np.abs(y_lin - (2 * ya - 3 * yb)).max() / max((np.abs(y_lin) + 2 * np.abs(ya) + 3 * np.abs(yb)).max(), 1e-300)
    if lin > RTOL:
        return f"fn is not linear in x: f(2a - 3b) differs from 2 f(a) - 3 f(b) by {lin:.2g} relative"
    matrices = np.stack([call(np.broadcast_to(e, (seq, d)), f"basis vector e_{j} in every row")
                         for j, e in enumerate(np.eye(d))], axis=-1)
    if np.abs(np.einsum("rij,rj->ri", matrices, a) - ya).max() / scale > RTOL:
        return "row r of the output depends on other rows: fn mixes rows (positions) or depends on content"
    return read_structure(matrices)


def read_structure(matrices) -> dict | str:
    """The structure of the matrices ``(seq, d, d)`` fn applies to the rows: a spec's fields (those returned) with
    ``out`` (each pair's output features, the lower for the lower input when written elsewhere, as DeepSeek's
    interleave-then-half) and ``angle`` ``(seq, pairs)``, each pair's at each row; or why it is not RoPE."""
    dep = np.abs(matrices).max(axis=0) > 1e-12 * max(np.abs(matrices).max(), 1e-300)      # [output, input]
    groups = {}                         # the output features an input moves -> the inputs moving exactly those
    for j in range(len(dep)):
        groups.setdefault(tuple(np.flatnonzero(dep[:, j]).tolist()), []).append(j)
    written = np.bincount([i for o in groups for i in o], minlength=len(dep))
    pairs, outs, passthrough = [], [], []
    for o, ins in sorted(groups.items(), key=lambda g: g[1]):
        if len(o) == len(ins) == 2 and written[list(o)].max() == 1:
            pairs, outs = pairs + [tuple(ins)], outs + [o]
        elif not o or (list(o) == ins and written[o[0]] == 1):
            passthrough += ins
        else:
            near = set(o) | set(np.flatnonzero(dep[list(o)].any(axis=0)).tolist())
            return f"feature {ins[0]} mixes with features {sorted(near - {ins[0]})[:6]}"
    if passthrough and np.abs(matrices[:, passthrough, passthrough] - 1).max() > RTOL:
        return f"features {passthrough[:6]} are scaled, not rotated or passed through"
    if not pairs:
        return "no pair of features is rotated at any row: fn ignores the positions"
    r = 2 * len(pairs)
    rotated = sorted(i for p in pairs for i in p)
    start = rotated[0] if rotated == list(range(rotated[0], rotated[0] + r)) else 0
    (ia, ib), (oa, ob) = np.array(pairs).T, np.array(outs).T
    c1, c2, s1, s2 = matrices[:, oa, ia], matrices[:, ob, ib], matrices[:, ob, ia], -matrices[:, oa, ib]
    unlike = np.abs(c1 - c2).max(0) + np.abs(s1 - s2).max(0)
    if unlike.max() > RTOL * np.abs(matrices).max():
        return f"a pair's 2x2 block is not a (scaled) rotation [[c, -s], [s, c]] (pair {pairs[int(np.argmax(unlike))]})"
    c, s = (c1 + c2) / 2, (s1 + s2) / 2
    scales = np.hypot(c, s)
    norm_scale = float(np.median(scales))
    scale_error = float(np.abs(scales / norm_scale - 1).max())
    if scale_error > RTOL:
        return f"the norm of a pair changes with position by up to {scale_error:.1%}"
    moved, in_place = outs != pairs, sorted(i for o in outs for i in o) == rotated
    return dict(pairs=pairs, pairing=_pairing_name(pairs, r, start), rotary_dim=r, rotary_start=start, out=(oa, ob),
                angle=np.arctan2(s, c), norm_scale=norm_scale, scale_error=scale_error,
                output_pairs=outs if moved else None,
                output_pairing=(_pairing_name(sorted(outs), r, start) if in_place else "other") if moved else None,
                notes=[] if rotated == list(range(start, start + r)) else [f"passthrough features {passthrough[:8]}"])


def _pairing_name(pairs, r, start):
    """"interleaved", "half" or "other": the sorted ``pairs`` within features start..start + r - 1."""
    return next((name for name in ("interleaved", "half")
                 if pairs == [(start + int(a), start + int(b)) for a, b in zip(*_pairs(r, name))]), "other")
