"""Black-box identification of a multi-axis RoPE kernel: which pairs turn with which position axis, how fast.

A multi-axis rotary embedding is a frequency matrix ``F`` of shape ``(rotary_dim/2, A)``: at positions
``p = (p_0, ..., p_{A-1})`` pair j is rotated (eq 34 of RoFormer, arXiv:2104.09864, one 2x2 block per pair)
by the angle ``sum_a F[j, a] * p_a``.  1-D RoPE is A = 1; M-RoPE (Qwen2-VL, Qwen2.5-VL, Qwen3-VL;
``mrope_section`` in transformers) drives each pair by exactly one of the t, h, w axes with one shared
spectrum theta_j; a 2-D axial ViT RoPE (timm, Heo et al. 2024, arXiv:2403.13298) gives each axis its own
spectrum; RoPE-Mixed (learned) is a dense F.

``identify_axes(fn, d, axes)`` calls ``fn(x, positions)`` with ``x`` float64 of shape ``(seq, d)`` and
``positions`` int64 of shape ``(axes, seq)`` that it chooses (row r at positions[:, r], transformers' layout
for M-RoPE position ids without the batch axis) and measures F:

1. structure (here): the d x d linear map of every row (one call per basis vector): which features pair up
   (pairing, rotary_dim), the norm scale, and that every block is a rotation;
2. angles (:mod:`.axes_angles`): the base row sits at position 0 on every axis; each axis is then moved
   alone, by 1, 2, ... (angles unwrapped from step to step) and then on geometrically to ``max_position``
   (each far angle's whole turns predicted from the fit so far), and a straight line through 0 fitted per
   pair and axis;
3. linearity (:mod:`.axes_angles`): the residuals of those lines, and rows at random combinations of all axes
   (predicted by ``sum_a F[j, a] p_a``), must stay within the rounding of the kernel's float type, else the
   spec says "not a rotation linear in positions";
4. naming (:mod:`.axes_spec`): which axis drives each pair, ``sections`` (pairs per axis) and, for M-RoPE,
   the layout: ``"blocks"`` (each axis one contiguous run, in axis order: Qwen2-VL) or ``"interleaved"``
   (Qwen3-VL's ``mrope_interleaved``).

``assert_axes_match(fn, d, axes, ...)`` and ``compare_axes`` (:mod:`.axes_compare`) name every difference
from what you expect (a wrong section split, layout, pairing, sign or frequency) in one AssertionError.

Positions are integers, so frequencies are measured modulo 2 pi: |F[j, a]| must stay below pi (every
published RoPE has |theta| <= 1 per position).
"""

from __future__ import annotations

import numpy as np

from .. import _validate as val
from .axes_angles import measure
from .axes_spec import DEFAULT_AXIS_NAMES, MAX_AXES, MAX_POSITION, AxesSpec, not_axes_rope
from .probe import check_seed, check_sizes, to_array
from .structure import couplings, pairs_of
from .tolerances import MAX_BYTES, PRECISIONS, STATE_RTOL, STRUCTURE_RTOL, ZERO_RTOL

# ---- calling fn ------------------------------------------------------------------------------

_FN_SHAPES = ("identify_axes calls fn(x, positions): x float64 of shape (seq, d), positions int64 of shape "
              "(axes, seq), row r at positions[:, r]; wrap a kernel taking torch (batch, heads, seq, d) and "
              "position ids (axes, batch, seq) as lambda x, p: kernel(torch.from_numpy(x)[None, None], "
              "torch.from_numpy(p)[:, None])[0, 0]")


def _to_array(out):
    """(numpy float64, name of the float type fn returned): :func:`.probe.to_array`, which takes numpy,
    ml_dtypes, lists, torch (any dtype or device, with grad), anything with ``__array__``."""
    kind = str(getattr(out, "dtype", ""))
    name = "bfloat16" if "bfloat16" in kind else "float16" if "float16" in kind else "float32"
    return to_array(out), name


class _Caller:
    """fn(x, positions) as float64 of x's shape, checked; counts the calls and the coarsest float type seen."""

    def __init__(self, fn, positions):
        self.fn, self.positions, self.calls = fn, positions, 0
        self.unit = 2.0**-24      # float32: a float64 kernel may compute its angles in float32
        self.precision = "float32"

    def __call__(self, x, what, hint=""):
        try:
            out = self.fn(x.copy(), self.positions.copy())
        except Exception as err:
            err.add_note(f"(fn raised this when rope_ref identify_axes called it with {what}: x of shape {x.shape}, "
                         f"positions of shape {self.positions.shape}{hint})")
            raise
        self.calls += 1
        out, kind = _to_array(out)
        if out.shape != x.shape:
            extra = ("; it holds the same values: drop its batch and head axes (e.g. [0, 0])"
                     if out.size == x.size else "")
            raise ValueError(f"fn must map x of shape (seq, d) = {x.shape} to the same shape, got {out.shape} "
                             f"(called with {what}){extra}")
        if not np.all(np.isfinite(out)):
            raise ValueError(f"fn returned non-finite values (NaN or inf) for finite input ({what}, x of shape "
                             f"{x.shape}, positions within 0..{int(self.positions.max())}); a rotary embedding "
                             "maps finite input to finite output")
        unit = dict(PRECISIONS)[kind]
        if unit > self.unit:
            self.unit, self.precision = unit, kind
        return out


# ---- the probe's positions ------------------------------------------------------------------------

def min_rows(axes: int) -> int:
    """Fewest rows ``seq`` identify_axes needs for ``axes`` axes: the base row, 3 steps per axis, 2 mixed rows."""
    return 1 + 3 * axes + 2


def _design(axes, seq, max_position, rng):
    """Positions (axes, seq) int64 and where each part of the design sits.

    Row 0: every axis at 0.  Per axis a, rows with axis a alone at 1, 2, ..., L (consecutive: angles unwrap
    from step to step) then geometrically on to max_position (a long lever for the slow pairs).  The rest:
    every axis at a random position in 0..min(max_position, 63), to check that the axes' angles add up.
    """
    n_mix = max(2, min(8, seq // 8))
    per_axis = (seq - 1 - n_mix) // axes
    linear = min(max(3, per_axis // 2), max_position)
    far = np.unique(np.round(np.geomspace(2 * linear, max_position, max(per_axis - linear, 1))).astype(np.int64))
    far = far[(far > linear) & (far <= max_position)][:per_axis - linear] if max_position > linear else far[:0]
    steps = np.concatenate([np.arange(1, linear + 1), far]).astype(np.int64)
    P = np.zeros((axes, seq), np.int64)
    sweeps = []
    row = 1
    for a in range(axes):
        rows = np.arange(row, row + len(steps))
        P[a, rows] = steps
        sweeps.append(rows)
        row += len(steps)
    mixed = np.arange(row, seq)
    P[:, mixed] = rng.integers(0, min(max_position, 63) + 1, size=(axes, len(mixed)))
    return P, steps, linear, sweeps, mixed


# ---- checks ------------------------------------------------------------------------------------

def _check_names(axis_names, axes):
    if axis_names is None:
        return DEFAULT_AXIS_NAMES.get(axes, tuple(f"axis{a}" for a in range(axes)))
    if isinstance(axis_names, str) or not all(isinstance(n, str) and n for n in axis_names):
        raise TypeError(f"axis_names must be a sequence of {axes} non-empty strings (e.g. ('t', 'h', 'w')), got "
                        f"{axis_names!r}")
    names = tuple(axis_names)
    if len(names) != axes or len(set(names)) != axes:
        raise ValueError(f"axis_names must hold {axes} distinct names, one per axis, got {names!r}")
    return names


def _check_inputs(fn, d, axes, seq, seed, max_position, max_bytes):
    if not callable(fn):
        raise TypeError(f"fn must be callable as fn(x, positions) -> rotated x, got {fn!r} of type "
                        f"{type(fn).__name__}")
    d = val.check_d(d)
    axes = val.check_positive_int(axes, "axes")
    if axes > MAX_AXES:
        raise ValueError(f"axes must be at most {MAX_AXES} (the position axes fn reads: 3 for M-RoPE, 2 for a "
                         f"2-D grid), got {axes}")
    seq = val.check_positive_int(seq, "seq")
    if seq < min_rows(axes):
        raise ValueError(f"seq must be >= {min_rows(axes)} rows for {axes} axes (the base row, 3 steps per axis, "
                         f"2 rows mixing the axes), got {seq}")
    check_sizes(seq, d, max_bytes)
    seed = check_seed(seed)
    max_position = val.check_positive_int(max_position, "max_position")
    if max_position < 3:
        raise ValueError(f"max_position must be >= 3 (positions 1, 2, 3 on each axis), got {max_position}")
    return d, axes, seq, seed, max_position



# ---- the probe ---------------------------------------------------------------------------------

def identify_axes(fn, d: int, axes: int, *, seq: int = 64, seed: int = 0, max_position: int = MAX_POSITION,
                  axis_names=None, max_bytes: int = MAX_BYTES) -> AxesSpec:
    """Measure the frequency matrix ``F`` (rotary_dim/2, axes) of a multi-axis RoPE kernel.

    ``fn(x, positions) -> y``: ``x`` float64 of shape ``(seq, d)``, ``positions`` int64 of shape
    ``(axes, seq)`` (row r at positions[:, r]: transformers' M-RoPE position ids without the batch axis);
    ``y`` any real array of x's shape (numpy, torch of any dtype or device, jax, a list), row r rotated as at
    positions[:, r].  fn must depend on x and positions alone.  Calls fn d + 5 times, always with the same
    positions: at 0 on every axis; each axis alone at 1, 2, ... and geometrically up to ``max_position``
    (pass the largest position fn accepts, e.g. its cos/sin cache length - 1); random combinations of all axes.
    ``axis_names``: for the reports (default t/h/w for 3 axes, h/w for 2).  ``max_bytes``: the largest array
    it may hold (seq x d x d float64 for the row matrices), as for :func:`rope_ref.identify`.
    ``rope_ref.identify(fn, d, axes=A)`` calls this.

    Returns an :class:`AxesSpec`: ``inv_freq`` (pair j turns by ``sum_a inv_freq[j, a] * p_a``, eq 34 per
    pair), pairing, rotary_dim, ``sections`` and ``mrope_layout`` for M-RoPE.  ``is_rope`` is False, with the
    reason, when fn is not a rotation of pairs of features or its angles are not linear in the positions.

    >>> import numpy as np
    >>> theta = 10000.0 ** (-np.arange(0, 8, 2) / 8)                        # 4 pairs, half pairing
    >>> F = np.zeros((4, 2)); F[:2, 0] = theta[:2]; F[2:, 1] = theta[2:]    # pairs 0-1 turn with h, 2-3 with w
    >>> def kernel(x, p):
    ...     ang = p.T @ F.T
    ...     c, s, x1, x2 = np.cos(ang), np.sin(ang), x[:, :4], x[:, 4:]
    ...     return np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=1)
    >>> spec = identify_axes(kernel, 8, 2)
    >>> spec.form, spec.pairing, spec.sections, spec.mrope_layout, bool(np.allclose(spec.inv_freq, F))
    ('M-RoPE', 'half', (2, 2), 'blocks', True)
    """
    d, axes, seq, seed, max_position = _check_inputs(fn, d, axes, seq, seed, max_position, max_bytes)
    names = _check_names(axis_names, axes)
    rng = np.random.default_rng(seed)
    P, steps, linear, sweeps, mixed = _design(axes, seq, max_position, rng)
    call = _Caller(fn, P)
    done = dict(axes=axes, axis_names=names, positions=P)

    a, b = rng.standard_normal((2, seq, d))
    ya = call(a, "random input a", "; " + _FN_SHAPES + f"; is d={d} the width fn rotates?")
    yb = call(b, "random input b")
    scale = max(np.abs(ya).max(), np.abs(yb).max(), 1e-300)
    state = np.abs(call(a, "random input a again") - ya).max() / scale
    if state > STATE_RTOL:
        raise ValueError(f"fn must depend on x and positions alone: two calls with the same x and positions gave "
                         f"outputs {state:.2g} apart (relative): fn keeps state between calls")
    bias = np.abs(call(np.zeros((seq, d)), "zeros")).max() / scale
    if bias > ZERO_RTOL:
        return not_axes_rope(f"fn(0, positions) is not 0 (up to {bias:.2g} relative to its output): fn adds something "
                             "that does not depend on x (a position embedding? a bias?); a rotary embedding is linear "
                             "in x", calls=call.calls, **done)
    y_lin = call(2 * a - 3 * b, "2a - 3b")
    terms = np.abs(y_lin) + 2 * np.abs(ya) + 3 * np.abs(yb)
    lin = np.abs(y_lin - (2 * ya - 3 * yb)).max() / max(terms.max(), 1e-300)
    if lin > STRUCTURE_RTOL:
        return not_axes_rope(f"fn is not linear in x: f(2a - 3b) differs from 2 f(a) - 3 f(b) by {lin:.2g} (relative "
                             "to the terms); a rotary embedding is linear in its input", calls=call.calls, **done)
    M = np.stack([call(np.broadcast_to(e, (seq, d)), f"basis vector e_{j} in every row")
                  for j, e in enumerate(np.eye(d))], axis=-1)            # M[r][:, j]: response to e_j at row r
    mix = np.abs(np.einsum("rij,rj->ri", M, a) - ya).max() / scale
    if mix > STRUCTURE_RTOL:
        return not_axes_rope(f"row r of the output depends on other rows (error {mix:.2g} relative): fn mixes rows "
                             "or depends on content", calls=call.calls, **done)
    done["calls"] = call.calls
    spec, c, s = _structure(M, done)
    if not spec.is_rope:
        return spec
    return measure(spec, c, s, steps, linear, sweeps, mixed, call)


def _find_pairs(M):
    """Partner of each feature from where the off-diagonal entries are non-zero at some row."""
    off = couplings(M)
    if not np.array_equal(off, off.T):
        i, j = np.argwhere(off & ~off.T)[0]
        return None, None, (f"output feature {i} depends on input feature {j} but not the other way round: not "
                            "rotations of pairs of features written back in place (identify_axes does not follow "
                            "pairs written to other features)")
    return pairs_of(off)


def _order_pairs(pairs, r, start):
    """Pairing name within the rotated features start..start + r - 1, and the pairs in that order."""
    if sorted(pairs) == [(start + 2 * p, start + 2 * p + 1) for p in range(r // 2)]:
        return "interleaved", sorted(pairs)
    if sorted(pairs) == [(start + p, start + p + r // 2) for p in range(r // 2)]:
        return "half", sorted(pairs)
    return "other", sorted(pairs)


def _structure(M, done):
    """(spec with pairs, pairing, rotary_dim, norm scale; each pair's 2x2 block (c, s) per row, (seq, pairs))."""
    pairs, passthrough, why = _find_pairs(M)
    if pairs is None:
        return not_axes_rope(why, **done), None, None
    if passthrough and np.abs(M[:, passthrough, passthrough] - 1).max() > STRUCTURE_RTOL:
        return (not_axes_rope(f"features {passthrough[:6]} are scaled, not rotated or passed through", **done),
                None, None)
    if not pairs:
        return not_axes_rope("no pair of features is rotated at any of the positions: fn ignores the positions",
                             **done), None, None
    notes = []
    r = 2 * len(pairs)
    rotated = sorted(i for p in pairs for i in p)
    start = rotated[0] if rotated == list(range(rotated[0], rotated[0] + r)) else 0
    if rotated != list(range(start, start + r)):
        notes.append(f"the rotated features are not {r} consecutive ones: passthrough features {passthrough[:8]}")
    elif start:
        notes.append(f"the rotated features are {start}..{start + r - 1}, not the leading {r} (rotary_start={start})")
    pairing, pairs = _order_pairs(pairs, r, start)
    ia, ib = np.array(pairs).T
    c1, c2, s1, s2 = M[:, ia, ia], M[:, ib, ib], M[:, ib, ia], -M[:, ia, ib]
    big = np.abs(M).max()
    bad = np.abs(c1 - c2).max(0) + np.abs(s1 - s2).max(0)
    if bad.max() > STRUCTURE_RTOL * big:
        return not_axes_rope("a pair's 2x2 block is not a (scaled) rotation [[c, -s], [s, c]] (eq 34) (pair "
                             f"{pairs[int(np.argmax(bad))]})", **done), None, None
    c, s = (c1 + c2) / 2, (s1 + s2) / 2
    scales = np.hypot(c, s)
    norm_scale = float(np.median(scales))
    if norm_scale == 0:
        return not_axes_rope("fn maps the rotated features to zero", **done), None, None
    scale_error = float(np.abs(scales / norm_scale - 1).max())
    if scale_error > STRUCTURE_RTOL:
        return (not_axes_rope(f"the norm of a pair changes with position by up to {scale_error:.1%}", **done),
                None, None)
    spec = AxesSpec(is_rope=True, pairing=pairing, pairs=pairs, rotary_dim=r, rotary_start=start,
                    norm_scale=norm_scale, scale_error=scale_error, notes=notes, **done)
    return spec, c, s


