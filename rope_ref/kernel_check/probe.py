"""Calling the kernel (:class:`Caller`: ``fn(x)`` or ``fn(x, positions)``), the five checks and row matrices every
probe starts with (:func:`read_rotations`), and their structure: which features pair up, where the pairs are written,
each row's 2x2 blocks [[cos, -sin], [sin, cos]] (eq 34) (:func:`read_structure`; docs/identify_internals.md)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import numpy as np

from .._validate import (FLOAT_DTYPES, check_d, check_nonnegative_int, check_positive_int, check_positive_real,
                         format_bytes)
from .tolerances import PRECISIONS, STATE_RTOL, STRUCTURE_RTOL, ZERO_RTOL


def to_array(out, name="fn"):
    """numpy float64 from whatever fn (called ``name`` in errors) returned: numpy, ml_dtypes, lists, torch (any
    dtype or device, with grad), anything with ``__array__``.  Duck-typed: torch is never imported."""
    if hasattr(out, "detach"):                          # torch: off the graph and the device
        out = out.detach().cpu()
        try:
            out = out.numpy()
        except (TypeError, RuntimeError, ValueError):   # e.g. torch bfloat16 has no numpy dtype
            out = out.float().numpy()
    try:
        arr = np.asarray(out)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must return an array (numpy, torch, jax, a list), got {type(out).__name__}: "
                        f"{err}") from err
    if not (arr.dtype in FLOAT_DTYPES or arr.dtype.kind in "fiu"):
        raise TypeError(f"{name} must return a real numeric array (numpy, torch, jax, a list), got "
                        f"{type(out).__name__} of dtype {arr.dtype}")
    return arr.astype(np.float64)


class Caller:
    """fn(x) -- or fn(x, positions) ``(axes, seq)`` -- as float64 of x's shape, checked, fn's errors noted with the
    call; counts ``calls``, the most rows asked for (``longest``), the coarsest float type returned (``unit``,
    ``precision``).  ``timeout``: seconds for all calls (fn in a worker thread); ``name``, ``argument``: in errors."""

    def __init__(self, fn, positions=None, *, timeout=None, name="fn", argument="x"):
        self.fn, self.positions, self.name, self.argument, self.timeout = fn, positions, name, argument, timeout
        self.deadline = None if timeout is None else time.monotonic() + timeout
        self.calls, self.longest = 0, 0
        self.unit, self.precision = 2.0**-24, "float32"
        self.inputs = "x" if positions is None else "x and positions"     # what fn may depend on

    def __call__(self, x, what, hint=""):
        kind, out = self._outcome(x)
        if kind == "raised" and isinstance(out, Exception):       # SystemExit, KeyboardInterrupt: as raised
            out.add_note(f"(raised by {self.name} when rope_ref.identify called it with {what}, shape {x.shape}{hint})"
                         if self.positions is None else
                         f"(fn raised this when rope_ref identify_axes called it with {what}: x of shape {x.shape}, "
                         f"positions of shape {self.positions.shape}{hint})")
        if kind == "raised":
            raise out
        if kind == "running":
            raise TimeoutError(f"identify's time limit of {self.timeout:g} s ran out while {self.name} was still "
                               f"running (call {self.calls + 1}, with {what}, x of shape {x.shape}): a kernel that "
                               "blocks (a lock, a queue, a device that never returns) stops here, the call left "
                               f"running in a background thread; if {self.name} is only slow, pass a larger "
                               "timeout= (seconds), or timeout=None for no limit")
        self.calls += 1
        self.longest = max(self.longest, len(x))
        kind = next((k for k in ("bfloat16", "float16") if k in str(getattr(out, "dtype", ""))), "float32")
        out = to_array(out, self.name)
        if out.shape != x.shape:
            raise ValueError(f"{self.name} must map {self.argument} of shape (seq, d) = {x.shape} to the same shape, "
                             f"got {out.shape} (called with {what}){_shape_hint(out.shape, x.shape)}")
        if not np.all(np.isfinite(out)):
            where = "" if self.positions is None else f", positions within 0..{int(self.positions.max())}"
            raise ValueError(f"{self.name} returned non-finite values (NaN or inf) for finite input ({what}, "
                             f"{self.argument} of shape {x.shape}{where}); a rotary embedding maps finite input to "
                             "finite output")
        if dict(PRECISIONS)[kind] > self.unit:         # the coarsest float type fn returned, float32 for finer ones
            self.unit, self.precision = dict(PRECISIONS)[kind], kind
        return out

    def _outcome(self, x):
        """("returned", fn's output), ("raised", its exception) or ("running", None) at the deadline."""
        args = (x.copy(),) if self.positions is None else (x.copy(), self.positions.copy())
        outcome = ["running", None]

        def run():
            try:
                outcome[:] = "returned", self.fn(*args)
            except BaseException as err:                # re-raised in the calling thread
                outcome[:] = "raised", err
        if self.deadline is None:
            run()
        else:
            worker = threading.Thread(target=run, name=f"rope_ref identify: {self.name}", daemon=True)
            worker.start()
            worker.join(max(self.deadline - time.monotonic(), 0.0))
        return tuple(outcome)


def read_rotations(call: Caller, a, b, hint):
    """The five opening checks on random inputs ``a``, ``b`` ``(seq, d)``, then the matrix fn applies to each row (d + 5
    calls; ``hint`` goes with the first): (Structure, fn(a), output scale), or why fn is not RoPE (a str)."""
    seq, d = a.shape
    ya, yb = call(a, "random input a", hint), call(b, "random input b")
    scale = max(np.abs(ya).max(), np.abs(yb).max(), 1e-300)
    state = np.abs(call(a, "random input a again") - ya).max() / scale
    if state > STATE_RTOL:
        raise ValueError(f"fn must depend on {call.inputs} alone: two calls with the same {call.inputs} gave "
                         f"outputs {state:.2g} apart (relative): fn keeps state between calls (a cache position "
                         "advanced by every call?); pass a function that applies the same positions on every call")
    bias = np.abs(call(np.zeros((seq, d)), "zeros")).max() / scale      # a linear kernel: exactly 0 in any float type
    if bias > ZERO_RTOL:
        zero = "fn(0)" if call.positions is None else "fn(0, positions)"
        return (f"{zero} is not 0 (up to {bias:.2g} relative to its output): fn adds something that does not "
                "depend on x (an absolute position embedding? a bias?); a rotary embedding is linear in its input")
    y_lin = call(2 * a - 3 * b, "2a - 3b")
    terms = np.abs(y_lin) + 2 * np.abs(ya) + 3 * np.abs(yb)             # the kernel's rounding is relative to them
    lin = np.abs(y_lin - (2 * ya - 3 * yb)).max() / max(terms.max(), 1e-300)
    if lin > STRUCTURE_RTOL:
        return (f"fn is not linear in x: f(2a - 3b) differs from 2 f(a) - 3 f(b) by {lin:.2g} (relative to the "
                "terms); a rotary embedding is linear in its input")
    matrices = np.stack([call(np.broadcast_to(e, (seq, d)), f"basis vector e_{j} in every row")
                         for j, e in enumerate(np.eye(d))], axis=-1)     # matrices[r] @ e_j: row r's response to e_j
    mix = np.abs(np.einsum("rij,rj->ri", matrices, a) - ya).max() / scale
    if mix > STRUCTURE_RTOL:
        return (f"row r of the output depends on other rows (error {mix:.2g} relative): fn mixes rows (positions) "
                "or depends on content")
    structure = read_structure(matrices)
    return structure if isinstance(structure, str) else (structure, ya, scale)


def check_probe_arguments(fn, d, seq, seed, timeout, min_seq, calling, why_min):
    """(d, seq, seed, timeout), each checked; seq >= ``min_seq`` (``why_min``: why); ``calling``: how fn is called."""
    if not callable(fn):
        raise TypeError(f"fn must be callable {calling}, got {fn!r} of type {type(fn).__name__}")
    d = check_d(d)
    seq = check_positive_int(seq, "seq")
    if seq < min_seq:
        raise ValueError(f"seq must be >= {min_seq} {why_min}, got {seq}")
    seed = None if seed is None else check_nonnegative_int(seed, "seed", "None or a non-negative integer")
    if timeout is not None:
        timeout = check_positive_real(timeout, "timeout", "None (no limit) or a positive number of seconds")
    return d, seq, seed, timeout


def check_sizes(seq, d, max_bytes, max_rows=None):
    """The arrays identify would hold (seq x d x d float64; max_rows x d a call) against max_bytes, before any call."""
    max_bytes = check_positive_int(max_bytes, "max_bytes")
    for size, what, fix in ((8 * seq * d * d, f"seq={seq} and d={d} need seq x d x d float64 (the matrix of every "
                             "row)", "a smaller seq (the default 64 is enough)"),
                            (8 * (max_rows or 0) * d, f"max_rows={max_rows} and d={d} need max_rows x d float64 "
                             "for one call", "a smaller max_rows")):
        if size > max_bytes:
            raise ValueError(f"{what}: {format_bytes(size, 4, exact=False)}, above max_bytes={max_bytes} "
                             f"({format_bytes(max_bytes, 4, exact=False)}); pass {fix}, or a larger max_bytes")


def _shape_hint(got, want):
    """What a kernel returning shape ``got`` for input shape ``want`` may have done; "" when nothing fits."""
    hints = {(2, *want): "; did fn return (q, k)? return one of them",
             want[::-1]: "; did fn return the transpose? return (seq, d)"}
    same = "; it holds the same values: drop its batch and head axes (e.g. [0, 0])"
    return hints.get(got, same if int(np.prod(got)) == int(np.prod(want)) else "")


@dataclass
class Structure:
    """The pairs fn rotates and the blocks it applies to them (a rotary embedding's shape, before angles)."""
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


def read_structure(matrices) -> Structure | str:
    """The :class:`Structure` of the matrices ``(seq, d, d)`` fn applies to each row, or why it is not RoPE (a str)."""
    dep = np.abs(matrices).max(axis=0) > 1e-12 * max(np.abs(matrices).max(), 1e-300)  # i reads j; zeros are exact
    perm = _output_order(matrices, dep)
    if perm is not None:
        matrices, dep = matrices[:, perm], dep[perm]
    off = dep & ~np.eye(matrices.shape[-1], dtype=bool)                 # a feature with one partner forms a pair
    linked = off | off.T
    crowded = np.flatnonzero(linked.sum(axis=1) > 1)
    if crowded.size:
        partners = np.flatnonzero(linked[crowded[0]]).tolist()
        return f"feature {crowded[0]} mixes with features {partners[:6]}: not pairwise rotations"
    pairs = [(int(j), int(k)) for j, k in np.argwhere(np.triu(linked))]                   # sorted
    passthrough = np.flatnonzero(~linked.any(axis=1)).tolist()
    if passthrough and np.abs(matrices[:, passthrough, passthrough] - 1).max() > STRUCTURE_RTOL:
        return f"features {passthrough[:6]} are scaled, not rotated or passed through"
    if not pairs:
        return "no pair of features is rotated at any row: fn leaves every feature in place (it ignores the positions)"
    notes, n, d = [], len(pairs), matrices.shape[-1]
    r = 2 * n
    rotated = sorted(i for p in pairs for i in p)
    start = rotated[0] if rotated == list(range(rotated[0], rotated[0] + r)) else 0
    proportional = n < d // 2 and pairs == [(p, p + d // 2) for p in range(n)]    # Gemma 4's, in naming
    if rotated != list(range(start, start + r)) and not proportional:
        notes.append(f"the rotated features are not {r} consecutive ones: passthrough features {passthrough[:8]}")
    elif start:
        notes.append(f"the rotated features are {start}..{start + r - 1}, not the leading {r} (rotary_start={start})")
    pairing = _pairing_name(pairs, r, start)
    out_pairing = out_pairs = None
    if perm is not None:
        out_pairs = [(int(perm[i]), int(perm[j])) for i, j in pairs]
        out_pairing = _pairing_name(sorted(out_pairs), r, start) if sorted(perm[rotated]) == rotated else "other"
        shown = ", ".join(f"{p} -> {o}" for p, o in zip(pairs[:2], out_pairs[:2]))
        notes.append(f"the rotated pairs are written to other features ({out_pairing} layout): {shown}, ...; "
                     "q.k is unchanged only if q and k are written alike")
    ia, ib = np.array(pairs).T
    out = (ia, ib) if perm is None else (perm[ia], perm[ib])
    c1, c2 = matrices[:, ia, ia], matrices[:, ib, ib]
    s1, s2 = matrices[:, ib, ia], -matrices[:, ia, ib]
    unlike = np.abs(c1 - c2).max(0) + np.abs(s1 - s2).max(0)         # per pair
    if unlike.max() > STRUCTURE_RTOL * np.abs(matrices).max():
        return ("a pair's 2x2 block is not a (scaled) rotation [[c, -s], [s, c]] (eq 34) "
                f"(pair {pairs[int(np.argmax(unlike))]})")
    c, s = (c1 + c2) / 2, (s1 + s2) / 2
    scales = np.hypot(c, s)                                # (seq, pairs)
    norm_scale = float(np.median(scales))
    if norm_scale == 0:
        return "fn maps the rotated features to zero"
    scale_error = float(np.abs(scales / norm_scale - 1).max())
    if scale_error > STRUCTURE_RTOL:
        return f"the norm of a pair changes with position by up to {scale_error:.1%}"
    return Structure(pairs=pairs, pairing=pairing, rotary_dim=r, rotary_start=start, out=out, cos=c, sin=s,
                     output_pairing=out_pairing, output_pairs=out_pairs, norm_scale=norm_scale, scale_error=scale_error,
                     notes=notes)


def _output_order(matrices, dep):
    """perm with matrices[:, perm] mapping every pair onto itself, when a kernel writes its pairs elsewhere (eq 34 then
    a permutation, as DeepSeek's apply_rotary_pos_emb_interleave); None when in place, or not pairs (``dep``: above)."""
    d = matrices.shape[-1]
    if np.array_equal(dep, dep.T):
        return None
    perm = np.full(d, -1)
    for j in range(d):
        outs = np.flatnonzero(dep[:, j])
        ins = np.flatnonzero(dep[outs].any(axis=0))
        if len(outs) == 1 and outs[0] == j and len(ins) == 1:
            perm[j] = j                                          # passed through in place
        elif len(outs) == 2 and len(ins) == 2 and dep[np.ix_(outs, ins)].all():
            if j == ins[0]:                                      # once per pair (j, k), j < k
                k, (a, b) = ins[1], outs
                block = matrices[:, [a, b]][:, :, [j, k]]        # [[c, -s], [s, c]] when a holds x_j cos
                straight = np.abs(block[:, 0, 0] - block[:, 1, 1]) + np.abs(block[:, 1, 0] + block[:, 0, 1])
                swapped = np.abs(block[:, 1, 0] - block[:, 0, 1]) + np.abs(block[:, 0, 0] + block[:, 1, 1])
                perm[[j, k]] = (a, b) if straight.max() <= swapped.max() else (b, a)
        else:
            return None
    return perm if len(set(perm.tolist())) == d else None


def _pairing_name(pairs, r, start):
    """Pairing name of the sorted ``pairs`` within the rotated features start..start + r - 1."""
    if pairs == [(start + 2 * p, start + 2 * p + 1) for p in range(r // 2)]:
        return "interleaved"
    return "half" if pairs == [(start + p, start + p + r // 2) for p in range(r // 2)] else "other"

