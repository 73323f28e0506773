"""Calling the kernel and reading its structure: which features pair up, where the pairs are written, and each row's
2x2 blocks [[cos, -sin], [sin, cos]] (eq 34), from the matrices fn applies to the rows (d + 5 calls)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._validate import FLOAT_DTYPES, check_d, check_nonnegative_int, check_positive_int, from_torch

STRUCTURE_RTOL = 2e-2       # linearity and pair blocks, relative: loose enough for bfloat16 kernels
STATE_RTOL = 1e-6           # two calls with the same input agree
ZERO_RTOL = 1e-6            # fn(0) is exactly 0 for a linear kernel in any float type
#: Unit roundoff of the float types a kernel may compute in, finest first.
PRECISIONS = (("float64", 2.0**-53), ("float32", 2.0**-24), ("float16", 2.0**-11), ("bfloat16", 2.0**-8))


class KernelRaised(RuntimeError):
    """The function under test raised: reported as "fn raised ...", never as a RoPE mismatch."""


def to_array(out, name="fn"):
    """float64 NumPy from what fn returned: numpy, ml_dtypes, lists, torch (detached, on the CPU; never imported)."""
    arr = from_torch(out) if type(out).__module__.startswith("torch") else np.asarray(out)
    if not (arr.dtype in FLOAT_DTYPES or arr.dtype.kind in "fiu"):
        raise TypeError(f"{name} must return a real numeric array, got {type(out).__name__} of dtype {arr.dtype}")
    return arr.astype(np.float64)


class Caller:
    """fn(x), or fn(x, positions) ``(axes, seq)``, as float64 of x's shape; counts ``calls``, keeps the coarsest
    float type fn returned (``precision``, its unit roundoff ``unit``).  ``raising``: fn's errors as KernelRaised."""

    def __init__(self, fn, positions=None, raising=False):
        self.fn, self.positions, self.raising = fn, positions, raising
        self.calls, self.unit, self.precision = 0, 2.0**-24, "float32"

    def __call__(self, x, what):
        args = (x.copy(),) if self.positions is None else (x.copy(), self.positions.copy())
        try:
            out = self.fn(*args)
        except Exception as err:
            err.add_note(f"(raised by fn when rope_ref's checker called it with {what}, x of shape {x.shape})")
            if self.raising:
                raise KernelRaised(f"fn raised {type(err).__name__}: {err}") from err
            raise
        self.calls += 1
        kind = next((k for k in ("bfloat16", "float16") if k in str(getattr(out, "dtype", ""))), "float32")
        out = to_array(out)
        if out.shape != x.shape:
            raise ValueError(f"fn must map x of shape (seq, d) = {x.shape} to the same shape, got {out.shape} "
                             f"(called with {what})")
        if not np.all(np.isfinite(out)):
            raise ValueError(f"fn returned NaN or inf for finite input ({what}, x of shape {x.shape})")
        if dict(PRECISIONS)[kind] > self.unit:
            self.unit, self.precision = dict(PRECISIONS)[kind], kind
        return out


def check_probe_arguments(fn, d, seq, seed, min_seq):
    """(d, seq, seed), each checked; ``fn`` callable; seq at least ``min_seq``."""
    if not callable(fn):
        raise TypeError(f"fn must be callable (the kernel under test), got {type(fn).__name__}")
    d = check_d(d)
    seq = check_positive_int(seq, "seq")
    if seq < min_seq:
        raise ValueError(f"seq must be at least {min_seq} rows to measure the angles, got {seq}")
    seed = None if seed is None else check_nonnegative_int(seed, "seed", "None or a non-negative integer")
    return d, seq, seed


@dataclass
class Structure:
    """The pairs fn rotates and each row's blocks (a rotary embedding's shape, before its angles)."""
    pairs: list                  # (i, j) input features of each pair, in pairing order
    pairing: str                 # "interleaved", "half" or "other"
    rotary_dim: int
    rotary_start: int            # first rotated feature
    out: tuple                   # (oa, ob): the output features each pair is written to
    output_pairing: str | None   # None: written in place
    output_pairs: list | None
    cos: np.ndarray              # (seq, pairs): scaled cos of each pair's angle at each row
    sin: np.ndarray
    norm_scale: float            # median |output| / |input| of a pair
    scale_error: float           # max relative spread of that scale over rows and pairs
    notes: list = field(default_factory=list)


def read_rotations(call: Caller, a, b):
    """The opening checks on random inputs ``a``, ``b`` ``(seq, d)`` (state, fn(0) = 0, linearity, rows apart), then
    the :class:`Structure` of the matrix fn applies to each row; a str saying why fn is not RoPE otherwise."""
    seq, d = a.shape
    ya, yb = call(a, "random input a"), call(b, "random input b")
    scale = max(np.abs(ya).max(), np.abs(yb).max(), 1e-300)
    if np.abs(call(a, "random input a again") - ya).max() / scale > STATE_RTOL:
        raise ValueError("fn must depend on its inputs alone: two calls with the same input gave different outputs "
                         "(a cache position advanced by every call?)")
    bias = np.abs(call(np.zeros((seq, d)), "zeros")).max() / scale
    if bias > ZERO_RTOL:
        return (f"fn(0) is not 0 (up to {bias:.2g} relative to its output): fn adds something that does not depend "
                "on x (an absolute position embedding? a bias?); a rotary embedding is linear in its input")
    y_lin = call(2 * a - 3 * b, "2a - 3b")
    terms = np.abs(y_lin) + 2 * np.abs(ya) + 3 * np.abs(yb)
    lin = np.abs(y_lin - (2 * ya - 3 * yb)).max() / max(terms.max(), 1e-300)
    if lin > STRUCTURE_RTOL:
        return f"fn is not linear in x: f(2a - 3b) differs from 2 f(a) - 3 f(b) by {lin:.2g} relative"
    matrices = np.stack([call(np.broadcast_to(e, (seq, d)), f"basis vector e_{j} in every row")
                         for j, e in enumerate(np.eye(d))], axis=-1)
    if np.abs(np.einsum("rij,rj->ri", matrices, a) - ya).max() / scale > STRUCTURE_RTOL:
        return "row r of the output depends on other rows: fn mixes rows (positions) or depends on content"
    return read_structure(matrices)


def read_structure(matrices) -> Structure | str:
    """The :class:`Structure` of the matrices ``(seq, d, d)`` fn applies to the rows, or why it is not RoPE."""
    dep = np.abs(matrices).max(axis=0) > 1e-12 * max(np.abs(matrices).max(), 1e-300)
    perm = _output_order(matrices, dep)
    if perm is not None:
        matrices, dep = matrices[:, perm], dep[perm]
    off = dep & ~np.eye(matrices.shape[-1], dtype=bool)
    linked = off | off.T
    crowded = np.flatnonzero(linked.sum(axis=1) > 1)
    if crowded.size:
        partners = np.flatnonzero(linked[crowded[0]]).tolist()
        return f"feature {crowded[0]} mixes with features {partners[:6]}: not pairwise rotations"
    pairs = [(int(j), int(k)) for j, k in np.argwhere(np.triu(linked))]
    passthrough = np.flatnonzero(~linked.any(axis=1)).tolist()
    if passthrough and np.abs(matrices[:, passthrough, passthrough] - 1).max() > STRUCTURE_RTOL:
        return f"features {passthrough[:6]} are scaled, not rotated or passed through"
    if not pairs:
        return "no pair of features is rotated at any row: fn leaves every feature in place (it ignores the positions)"
    r, d = 2 * len(pairs), matrices.shape[-1]
    rotated = sorted(i for p in pairs for i in p)
    start = rotated[0] if rotated == list(range(rotated[0], rotated[0] + r)) else 0
    pairing = _pairing_name(pairs, r, start)
    out_pairing = out_pairs = None
    if perm is not None:
        out_pairs = [(int(perm[i]), int(perm[j])) for i, j in pairs]
        out_pairing = _pairing_name(sorted(out_pairs), r, start) if sorted(perm[rotated]) == rotated else "other"
    ia, ib = np.array(pairs).T
    out = (ia, ib) if perm is None else (perm[ia], perm[ib])
    c1, c2 = matrices[:, ia, ia], matrices[:, ib, ib]
    s1, s2 = matrices[:, ib, ia], -matrices[:, ia, ib]
    unlike = np.abs(c1 - c2).max(0) + np.abs(s1 - s2).max(0)
    if unlike.max() > STRUCTURE_RTOL * np.abs(matrices).max():
        return f"a pair's 2x2 block is not a (scaled) rotation [[c, -s], [s, c]] (pair {pairs[int(np.argmax(unlike))]})"
    c, s = (c1 + c2) / 2, (s1 + s2) / 2
    scales = np.hypot(c, s)
    norm_scale = float(np.median(scales))
    if norm_scale == 0:
        return "fn maps the rotated features to zero"
    scale_error = float(np.abs(scales / norm_scale - 1).max())
    if scale_error > STRUCTURE_RTOL:
        return f"the norm of a pair changes with position by up to {scale_error:.1%}"
    proportional = len(pairs) < d // 2 and pairs == [(p, p + d // 2) for p in range(len(pairs))]
    notes = [] if rotated == list(range(start, start + r)) or proportional else [
        f"the rotated features are not {r} consecutive ones: passthrough features {passthrough[:8]}"]
    return Structure(pairs=pairs, pairing=pairing, rotary_dim=r, rotary_start=start, out=out, cos=c, sin=s,
                     output_pairing=out_pairing, output_pairs=out_pairs, norm_scale=norm_scale,
                     scale_error=scale_error, notes=notes)


def _output_order(matrices, dep):
    """perm with matrices[:, perm] mapping every pair onto itself when a kernel writes its pairs elsewhere (DeepSeek's
    interleave-then-half); None when in place or not pairs."""
    d = matrices.shape[-1]
    if np.array_equal(dep, dep.T):
        return None
    perm = np.full(d, -1)
    for j in range(d):
        outs = np.flatnonzero(dep[:, j])
        ins = np.flatnonzero(dep[outs].any(axis=0))
        if len(outs) == 1 and outs[0] == j and len(ins) == 1:
            perm[j] = j
        elif len(outs) == 2 and len(ins) == 2 and dep[np.ix_(outs, ins)].all():
            if j == ins[0]:
                k, (a, b) = ins[1], outs
                block = matrices[:, [a, b]][:, :, [j, k]]
                straight = np.abs(block[:, 0, 0] - block[:, 1, 1]) + np.abs(block[:, 1, 0] + block[:, 0, 1])
                swapped = np.abs(block[:, 1, 0] - block[:, 0, 1]) + np.abs(block[:, 0, 0] + block[:, 1, 1])
                perm[[j, k]] = (a, b) if straight.max() <= swapped.max() else (b, a)
        else:
            return None
    return perm if len(set(perm.tolist())) == d else None


def _pairing_name(pairs, r, start):
    """"interleaved", "half" or "other": the sorted ``pairs`` within features start..start + r - 1."""
    if pairs == [(start + 2 * p, start + 2 * p + 1) for p in range(r // 2)]:
        return "interleaved"
    return "half" if pairs == [(start + p, start + p + r // 2) for p in range(r // 2)] else "other"
