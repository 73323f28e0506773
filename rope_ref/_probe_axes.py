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

1. structure: the d x d linear map of every row (one call per basis vector): which features pair up
   (pairing, rotary_dim), the norm scale, and that every block is a rotation;
2. angles: the base row sits at position 0 on every axis; each axis is then moved alone, by 1, 2, ...
   (angles unwrapped from step to step) and then on geometrically to ``max_position`` (each far angle's
   whole turns predicted from the fit so far), and a straight line through 0 fitted per pair and axis;
3. linearity: the residuals of those lines, and rows at random combinations of all axes (predicted by
   ``sum_a F[j, a] p_a``), must stay within the rounding of the kernel's float type, else the spec says
   "not a rotation linear in positions";
4. naming: which axis drives each pair, ``sections`` (pairs per axis) and, for M-RoPE, the layout:
   ``"blocks"`` (each axis one contiguous run, in axis order: Qwen2-VL) or ``"interleaved"`` (Qwen3-VL's
   ``mrope_interleaved``).

``assert_axes_match(fn, d, axes, ...)`` and :func:`compare_axes` name every difference from what you expect
(a wrong section split, layout, pairing, sign or frequency) in one AssertionError.

Positions are integers, so frequencies are measured modulo 2 pi: |F[j, a]| must stay below pi (every
published RoPE has |theta| <= 1 per position).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import numpy as np

from . import _validate as val
from .multiaxis import mrope_frequencies

#: Relative tolerance for structure (linearity in x, pair blocks): loose enough for bfloat16 kernels.
STRUCTURE_RTOL = 2e-2
#: Two calls with the same input must agree to this relative tolerance (fn depends on x and positions alone).
STATE_RTOL = 1e-6
#: fn(0) must be 0 to this relative tolerance.
ZERO_RTOL = 1e-6
#: Unit roundoff of the float types a kernel's angles may be computed in, finest first.
PRECISIONS = (("float64", 2.0**-53), ("float32", 2.0**-24), ("float16", 2.0**-11), ("bfloat16", 2.0**-8))
#: Angles behave like a float type when |error| <= NOISE_ULPS * u * (1 + |angle|).
NOISE_ULPS = 8
#: Frequencies may carry a few roundings of their float type (float32 inv_freq buffers): FREQ_ULPS * u relative.
FREQ_ULPS = 64
#: Measured quantities agree when within SIGMAS standard deviations of their noise.
SIGMAS = 6.0
#: Most position axes accepted.
MAX_AXES = 16
#: Default for max_position: the largest position the probe passes on any axis.
MAX_POSITION = 4096
#: The per-row matrices take seq * d * d float64 values: refused above this many (256 MiB).
MAX_PROBE_VALUES = 2**25
#: Axis names shown when none are given: transformers' M-RoPE order (t, h, w) and a grid's (h, w).
DEFAULT_AXIS_NAMES = {1: ("p",), 2: ("h", "w"), 3: ("t", "h", "w")}
#: What each layout is, for the reports.
LAYOUTS = {"blocks": "contiguous sections in axis order, as Qwen2-VL / Qwen2.5-VL",
           "interleaved": "axes interleaved pair by pair, as Qwen3-VL's mrope_interleaved"}


@dataclass
class AxesSpec:
    """What :func:`identify_axes` found.  ``is_rope`` False means the other fields are not meaningful.

    ``inv_freq[j, a]``: signed angular frequency of pair j along axis a (radians per position), pairs in
    pairing order (theta order for RoPE).  ``form``: ``"1-D"`` (every pair turns with the same single axis),
    ``"M-RoPE"`` (each pair with one axis, one spectrum strictly decreasing over the pairs), ``"axial"``
    (each pair with one axis, the axes' spectra repeat: 2-D ViT RoPE) or ``"mixed"`` (some pair turns with
    several axes: RoPE-Mixed).  ``axis_of_pair``, ``sections``: when each pair turns with one axis.
    ``mrope_layout``: ``"blocks"`` / ``"interleaved"`` for M-RoPE, None otherwise.
    """

    is_rope: bool
    reason: str = ""
    axes: int | None = None
    axis_names: tuple = ()
    pairing: str | None = None          # "interleaved", "half" or "other", within the rotated features
    pairs: list = field(default_factory=list)
    rotary_dim: int | None = None
    rotary_start: int = 0
    inv_freq: np.ndarray | None = None  # (rotary_dim/2, axes), signed
    freq_sigma: np.ndarray | None = None      # standard deviation of each entry, radians per position
    freq_tolerance: np.ndarray | None = None  # absolute tolerance on each entry used by compare_axes
    form: str | None = None
    axis_of_pair: np.ndarray | None = None
    sections: tuple | None = None
    mrope_layout: str | None = None
    base: float | None = None           # theta_j = base^(-2j/rotary_dim) over all pairs (1-D, M-RoPE), if so
    axis_bases: tuple | None = None     # axial: per axis, theta_k = base_a^(-k/n_a) over its n_a pairs, if so
    norm_scale: float | None = None
    angle_precision: str | None = None  # the float type the kernel's angles behave like
    phase_error: float = 0.0            # largest |measured angle - sum_a F[j, a] p_a| over the rows, radians
    phase_at_zero: float = 0.0          # largest |angle| at position 0 on every axis (0 unless positions shift)
    rotated_at_zero: bool = False       # pairs turned beyond rounding with every axis at 0
    position_shift: tuple | None = None  # per axis, the shift s_a with angle(0) = sum_a F[j, a] s_a, when solved
    scale_error: float = 0.0
    positions: np.ndarray | None = None  # (axes, seq): the positions fn was called with
    calls: int = 0
    notes: list = field(default_factory=list)

    def __str__(self) -> str:
        if not self.is_rope:
            return f"not a rotary embedding: {self.reason}"
        names = "/".join(self.axis_names)
        start = f" rotary_start={self.rotary_start}" if self.rotary_start else ""
        base = f" base={_num(self.base)}" if self.base is not None else ""
        form = self.form if self.form == "M-RoPE" else f"{self.form} RoPE"
        lines = [f"{form} over {self.axes} {'axis' if self.axes == 1 else 'axes'} ({names}): pairing={self.pairing} "
                 f"rotary_dim={self.rotary_dim}{start}{base} norm_scale={_num(self.norm_scale)}"]
        if self.sections is not None:
            layout = (f", layout {self.mrope_layout} ({LAYOUTS[self.mrope_layout]})" if self.mrope_layout
                      else "")
            lines.append(f"sections {names} = {'/'.join(map(str, self.sections))} pairs{layout}; "
                         f"pairs by axis: {_runs(self.axis_of_pair, self.axis_names)}")
            lines += [f"  {self.axis_names[a]}: {_spectrum(self.inv_freq[self.axis_of_pair == a, a])}"
                      + (f", axis base {_num(self.axis_bases[a])}" if self.axis_bases and self.axis_bases[a]
                         else "")
                      for a in range(self.axes) if self.sections[a]]
        else:
            with np.printoptions(precision=4, suppress=False, threshold=12, edgeitems=2):
                lines.append(f"inv_freq (pairs x axes {names}) =\n{self.inv_freq}")
        lines.append(f"angles behave like {self.angle_precision}: phase_error={self.phase_error:.2e} rad at "
                     f"positions up to {int(self.positions.max())} per axis, scale_error={self.scale_error:.2e}; "
                     f"{self.calls} calls on {self.positions.shape[1]} rows")
        return "\n".join(lines + [f"note: {n}" for n in self.notes])


def _num(v, fmt=".7g") -> str:
    if v is None:
        return "None"
    if isinstance(v, numbers.Integral) or (math.isfinite(v) and v == round(v) and abs(v) < 2**53):
        return str(int(v))
    return format(v, fmt)


def _spectrum(theta) -> str:
    theta = np.asarray(theta, float)
    if theta.size == 1:
        return f"theta {theta[0]:.6g}"
    return f"theta {theta[0]:.6g} .. {theta[-1]:.6g} ({theta.size} pairs)"


def _runs(axis_of_pair, names) -> str:
    """'t 0..15, h 16..39, w 40..63' (contiguous runs), the first few runs only."""
    runs, j = [], 0
    n = len(axis_of_pair)
    while j < n:
        k = j
        while k + 1 < n and axis_of_pair[k + 1] == axis_of_pair[j]:
            k += 1
        runs.append(f"{names[axis_of_pair[j]]} {j}" + (f"..{k}" if k > j else ""))
        j = k + 1
    return ", ".join(runs[:9]) + (f", ... ({len(runs)} runs)" if len(runs) > 9 else "")


# ---- calling fn ------------------------------------------------------------------------------

_FN_SHAPES = ("identify_axes calls fn(x, positions): x float64 of shape (seq, d), positions int64 of shape "
              "(axes, seq), row r at positions[:, r]; wrap a kernel taking torch (batch, heads, seq, d) and "
              "position ids (axes, batch, seq) as lambda x, p: kernel(torch.from_numpy(x)[None, None], "
              "torch.from_numpy(p)[:, None])[0, 0]")


def _to_array(out):
    """(numpy float64, name of the float type fn returned) from numpy, ml_dtypes, lists, torch (any dtype or
    device, with grad), anything with ``__array__``.  Duck-typed: torch is never imported."""
    kind = str(getattr(out, "dtype", ""))
    if hasattr(out, "detach"):
        out = out.detach()
    if hasattr(out, "cpu") and not isinstance(out, np.ndarray):
        out = out.cpu()
    if hasattr(out, "numpy") and not isinstance(out, np.ndarray):
        try:
            out = out.numpy()
        except (TypeError, RuntimeError, ValueError):   # torch bfloat16 has no numpy dtype
            if not hasattr(out, "float"):
                raise
            out = out.float().numpy()
    try:
        arr = np.asarray(out)
    except (TypeError, ValueError) as err:
        raise TypeError(f"fn must return an array (numpy, torch, jax, a list), got {type(out).__name__}: "
                        f"{err}") from err
    if not (arr.dtype in val.FLOAT_DTYPES or arr.dtype.kind in "fiu"):
        raise TypeError(f"fn must return a real numeric array of shape (seq, d), got {type(out).__name__} of "
                        f"dtype {arr.dtype}")
    kind = kind or str(arr.dtype)
    name = "bfloat16" if "bfloat16" in kind else "float16" if "float16" in kind else "float32"
    return arr.astype(np.float64), name


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


def _check_inputs(fn, d, axes, seq, seed, max_position):
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
    if seq * d * d > MAX_PROBE_VALUES:
        raise ValueError(f"d={d} with seq={seq} needs seq * d * d = {seq * d * d} float64 values "
                         f"({seq * d * d * 8 / 2**20:.0f} MiB) for the per-row matrices, more than the limit of "
                         f"{MAX_PROBE_VALUES} ({MAX_PROBE_VALUES * 8 // 2**20} MiB): is d the width fn rotates "
                         "(one head's head_dim)? or pass a smaller seq")
    seed = val.check_seed(seed)
    max_position = val.check_positive_int(max_position, "max_position")
    if max_position < 3:
        raise ValueError(f"max_position must be >= 3 (positions 1, 2, 3 on each axis), got {max_position}")
    return d, axes, seq, seed, max_position


def _not_rope(reason, **kw):
    return AxesSpec(is_rope=False, reason=reason, **kw)


# ---- the probe ---------------------------------------------------------------------------------

def identify_axes(fn, d: int, axes: int, *, seq: int = 64, seed: int = 0, max_position: int = MAX_POSITION,
                  axis_names=None) -> AxesSpec:
    """Measure the frequency matrix ``F`` (rotary_dim/2, axes) of a multi-axis RoPE kernel.

    ``fn(x, positions) -> y``: ``x`` float64 of shape ``(seq, d)``, ``positions`` int64 of shape
    ``(axes, seq)`` (row r at positions[:, r]: transformers' M-RoPE position ids without the batch axis);
    ``y`` any real array of x's shape (numpy, torch of any dtype or device, jax, a list), row r rotated as at
    positions[:, r].  fn must depend on x and positions alone.  Calls fn d + 5 times, always with the same
    positions: at 0 on every axis; each axis alone at 1, 2, ... and geometrically up to ``max_position``
    (pass the largest position fn accepts, e.g. its cos/sin cache length - 1); random combinations of all axes.
    ``axis_names``: for the reports (default t/h/w for 3 axes, h/w for 2).

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
    d, axes, seq, seed, max_position = _check_inputs(fn, d, axes, seq, seed, max_position)
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
        return _not_rope(f"fn(0, positions) is not 0 (up to {bias:.2g} relative to its output): fn adds something "
                         "that does not depend on x (a position embedding? a bias?); a rotary embedding is linear "
                         "in x", calls=call.calls, **done)
    y_lin = call(2 * a - 3 * b, "2a - 3b")
    terms = np.abs(y_lin) + 2 * np.abs(ya) + 3 * np.abs(yb)
    lin = np.abs(y_lin - (2 * ya - 3 * yb)).max() / max(terms.max(), 1e-300)
    if lin > STRUCTURE_RTOL:
        return _not_rope(f"fn is not linear in x: f(2a - 3b) differs from 2 f(a) - 3 f(b) by {lin:.2g} (relative "
                         "to the terms); a rotary embedding is linear in its input", calls=call.calls, **done)
    M = np.stack([call(np.broadcast_to(e, (seq, d)), f"basis vector e_{j} in every row")
                  for j, e in enumerate(np.eye(d))], axis=-1)            # M[r][:, j]: response to e_j at row r
    mix = np.abs(np.einsum("rij,rj->ri", M, a) - ya).max() / scale
    if mix > STRUCTURE_RTOL:
        return _not_rope(f"row r of the output depends on other rows (error {mix:.2g} relative): fn mixes rows "
                         "or depends on content", calls=call.calls, **done)
    done["calls"] = call.calls
    spec, c, s = _structure(M, done)
    if not spec.is_rope:
        return spec
    return _measure(spec, c, s, steps, linear, sweeps, mixed, call)


def _find_pairs(M):
    """Partner of each feature from where the off-diagonal entries are non-zero at some row."""
    d = M.shape[-1]
    dep = np.abs(M).max(axis=0) > 1e-12 * max(np.abs(M).max(), 1e-300)   # structural zeros are exact
    off = dep & ~np.eye(d, dtype=bool)
    if not np.array_equal(off, off.T):
        i, j = np.argwhere(off & ~off.T)[0]
        return None, None, (f"output feature {i} depends on input feature {j} but not the other way round: not "
                            "rotations of pairs of features written back in place (identify_axes does not follow "
                            "pairs written to other features)")
    pairs, passthrough = [], []
    for j in range(d):
        partners = np.flatnonzero(off[j])
        if len(partners) == 0:
            passthrough.append(j)
        elif len(partners) > 1:
            return None, None, f"feature {j} mixes with features {partners.tolist()[:6]}: not pairwise rotations"
        elif j < partners[0]:
            pairs.append((j, int(partners[0])))
    return pairs, passthrough, ""


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
        return _not_rope(why, **done), None, None
    if passthrough and np.abs(M[:, passthrough, passthrough] - 1).max() > STRUCTURE_RTOL:
        return _not_rope(f"features {passthrough[:6]} are scaled, not rotated or passed through", **done), None, None
    if not pairs:
        return _not_rope("no pair of features is rotated at any of the positions: fn ignores the positions",
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
        return _not_rope("a pair's 2x2 block is not a (scaled) rotation [[c, -s], [s, c]] (eq 34) (pair "
                         f"{pairs[int(np.argmax(bad))]})", **done), None, None
    c, s = (c1 + c2) / 2, (s1 + s2) / 2
    scales = np.hypot(c, s)
    norm_scale = float(np.median(scales))
    if norm_scale == 0:
        return _not_rope("fn maps the rotated features to zero", **done), None, None
    scale_error = float(np.abs(scales / norm_scale - 1).max())
    if scale_error > STRUCTURE_RTOL:
        return _not_rope(f"the norm of a pair changes with position by up to {scale_error:.1%}", **done), None, None
    spec = AxesSpec(is_rope=True, pairing=pairing, pairs=pairs, rotary_dim=r, rotary_start=start,
                    norm_scale=norm_scale, scale_error=scale_error, notes=notes, **done)
    return spec, c, s


def _allow(unit, angle, out_err=0.0):
    """Largest angle error rounding in a float type of unit roundoff ``unit`` explains, at |angle| radians,
    plus ``out_err`` radians (cos/sin or the output rounded to a coarser type: see _measure)."""
    return NOISE_ULPS * unit * (1 + np.abs(angle)) + out_err


def _fit_axis(psi, steps, linear, unit, out_err):
    """Slope through 0 of the angles ``psi`` (points, pairs; wrapped, relative to position 0) at ``steps``.

    The first ``linear`` steps are 1, 2, ...: unwrapped from step to step.  Each farther step's whole
    turns are predicted from the fit so far, and used only where SIGMAS standard deviations of that
    prediction plus rounding of a ``unit`` float type stay within a quarter turn.
    Returns (slope, its standard deviation, residuals, used mask).
    """
    n, npairs = psi.shape
    p = steps.astype(float)[:, None] * np.ones((1, npairs))
    ang = np.zeros_like(psi)
    ang[:linear] = np.unwrap(np.vstack([np.zeros((1, npairs)), psi[:linear]]), axis=0)[1:]
    used = np.zeros((n, npairs), bool)
    used[:linear] = True

    def fit():
        pu, au = np.where(used, p, 0.0), np.where(used, ang, 0.0)
        slope = (pu * au).sum(0) / (pu * pu).sum(0)
        resid = np.where(used, ang - p * slope, 0.0)
        dof = np.maximum(used.sum(0) - 1, 1)
        sigma = np.sqrt((resid**2).sum(0) / dof / (pu * pu).sum(0))
        return slope, sigma, resid
    slope, sigma, _ = fit()
    for k in range(linear, n):
        pred = slope * p[k]
        spread = SIGMAS * sigma * p[k] + _allow(unit, pred, out_err)
        turns = np.round((pred - psi[k]) / (2 * np.pi))
        ang[k] = psi[k] + 2 * np.pi * turns
        used[k] = spread < np.pi / 2
        slope, sigma, _ = fit()
    slope, sigma, resid = fit()
    return slope, np.maximum(sigma, 2.0**-52 * np.abs(slope)), resid, used


def _measure(spec, c, s, steps, linear, sweeps, mixed, call):
    P, names, A = spec.positions, spec.axis_names, spec.axes
    unit = call.unit                                 # the coarsest rounding fn's output type explains
    phase = np.arctan2(s, c)                         # (seq, pairs)
    phi0 = phase[0]
    # Rounding cos/sin or the output (a bfloat16 result handed back as float32) errs in a pair's angle and
    # norm alike; an angle relative to the base row's carries two such errors.
    out_err = 4 * spec.scale_error if spec.scale_error > 2.0**-16 else 0.0
    spec.phase_at_zero = float(np.abs(phi0).max())
    npairs = len(spec.pairs)
    F = np.zeros((npairs, A))
    sigma = np.zeros((npairs, A))
    bias = np.zeros((npairs, A))                    # the most an error out_err at every point moves a slope
    worst = []                                      # (excess over the allowance, message) of each check
    resid_all, angle_all = [], []
    for a in range(A):
        psi = np.angle(np.exp(1j * (phase[sweeps[a]] - phi0)))
        F[:, a], sigma[:, a], resid, used = _fit_axis(psi, steps, linear, unit, out_err)
        angle = np.outer(steps, F[:, a])
        pu = np.where(used, steps[:, None].astype(float), 0.0)
        bias[:, a] = out_err * pu.sum(0) / (pu * pu).sum(0)
        resid_all.append(resid[used])
        angle_all.append(angle[used])
        excess = np.where(used, np.abs(resid) - _allow(unit, angle, out_err), -np.inf)
        k, j = np.unravel_index(int(np.argmax(excess)), excess.shape)
        if excess[k, j] > 0:
            worst.append((excess[k, j] / _allow(unit, angle[k, j], out_err), (
                f"along {names[a]} (the other axes at 0) pair {j} (features {spec.pairs[j]}) turns by "
                f"{resid[k, j] + angle[k, j]:.7g} rad at {names[a]} = {steps[k]}, where the line through the "
                f"other positions 0..{steps[used[:, j]].max()} gives {angle[k, j]:.7g} (off by "
                f"{abs(resid[k, j]):.2g} rad; {call.precision} rounding allows "
                f"{_allow(unit, angle[k, j], out_err):.2g})")))
    # Rows at combinations of all axes: the angles must add up.
    pm = P[:, mixed].T.astype(float)                       # (rows, A)
    pred = pm @ F.T                                        # (rows, pairs)
    meas = phase[mixed] - phi0
    resid = np.angle(np.exp(1j * (meas - pred)))
    terms = np.abs(pm) @ np.abs(F.T)
    allow = _allow(unit, terms, out_err) + SIGMAS * (pm @ sigma.T)
    excess = np.abs(resid) - allow
    k, j = np.unravel_index(int(np.argmax(excess)), excess.shape)
    if excess[k, j] > 0:
        at = ", ".join(f"{n}={int(v)}" for n, v in zip(names, pm[k]))
        worst.append((excess[k, j] / allow[k, j], (
            f"the angles are linear along each axis alone but do not add up across axes: at {at} pair {j} "
            f"(features {spec.pairs[j]}) turns by {np.angle(np.exp(1j * meas[k, j])):.7g} rad, "
            f"sum_a F[j, a] p_a gives {np.angle(np.exp(1j * pred[k, j])):.7g} (mod 2 pi; off by "
            f"{abs(resid[k, j]):.2g} rad, {call.precision} rounding allows {allow[k, j]:.2g})")))
    if worst:
        worst.sort(key=lambda w: -w[0])
        return _not_rope("not a rotation linear in positions: " + worst[0][1], **_kept(spec))
    resid_all.append(resid.ravel())
    angle_all.append(terms.ravel())
    resid_all, angle_all = np.concatenate([r.ravel() for r in resid_all]), np.concatenate(
        [t.ravel() for t in angle_all])
    spec.phase_error = float(np.abs(resid_all).max()) if resid_all.size else 0.0
    for err in ((0.0, out_err) if out_err else (0.0,)):
        fits = [(name, u) for name, u in PRECISIONS
                if u <= unit and np.all(np.abs(resid_all) <= _allow(u, angle_all, err))]
        if fits:
            spec.angle_precision, prec_unit = fits[0]
            if err:
                spec.angle_precision, prec_unit = "float32 (cos/sin or output rounded to 16 bits)", 2.0**-24
                spec.notes.append(f"the angle errors (up to {spec.phase_error:.2g} rad) come with norm errors (up to "
                                  f"{spec.scale_error:.2g}): cos/sin or the output rounded to a 16-bit type")
            break
    spec.inv_freq, spec.freq_sigma = F, sigma
    spec.freq_tolerance = SIGMAS * sigma + FREQ_ULPS * prec_unit * np.abs(F) + bias
    _name(spec, nonzero=np.abs(F) > SIGMAS * sigma)
    if spec.phase_at_zero > _allow(unit, 0.0, out_err / 2):
        spec.rotated_at_zero = True
        j = int(np.argmax(np.abs(phi0)))
        spec.position_shift = _shift(spec, phi0, unit, out_err)
        why = ("fn shifts the positions by " + _shifts(spec) if spec.position_shift else
               "are its positions shifted?")
        spec.notes.append(f"at position 0 on every axis fn already turns pair {j} by {phi0[j]:.6g} rad (up to "
                          f"{spec.phase_at_zero:.2g} rad over the pairs): {why}; the frequencies are measured from "
                          "that rotation")
    return spec


def _shift(spec, phi0, unit, out_err):
    """Per-axis shift s with phi0_j = sum_a F[j, a] s_a (mod 2 pi), when each pair turns with one axis:
    read from the axis's slowest pair (no whole turn for |s| < pi / theta_slowest), checked on all of them."""
    if spec.axis_of_pair is None:
        return None
    F, shift = spec.inv_freq, []
    for a in range(spec.axes):
        own = np.flatnonzero(spec.axis_of_pair == a)
        if own.size == 0:
            shift.append(0.0)
            continue
        j = own[np.argmin(np.abs(F[own, a]))]
        s = phi0[j] / F[j, a]
        if abs(s - round(s)) <= max(SIGMAS * spec.freq_sigma[j, a] * abs(s) / abs(F[j, a]), 1e-6):
            s = float(round(s))
        miss = np.angle(np.exp(1j * (F[own, a] * s - phi0[own])))
        allow = _allow(unit, F[own, a] * s, out_err) + SIGMAS * spec.freq_sigma[own, a] * abs(s) + 1e-9
        if np.any(np.abs(miss) > allow):
            return None
        shift.append(float(s))
    return tuple(shift)


def _shifts(spec):
    return ", ".join(f"{n}{_num(s) if s < 0 else '+' + _num(s)}" for n, s in zip(spec.axis_names, spec.position_shift)
                     if s != 0)


def _kept(spec):
    return dict(axes=spec.axes, axis_names=spec.axis_names, positions=spec.positions, calls=spec.calls,
                notes=spec.notes)


# ---- naming --------------------------------------------------------------------------------------

def blocks_assignment(sections) -> np.ndarray:
    """Axis of each pair when axis a owns one contiguous run of sections[a] pairs, in axis order (Qwen2-VL)."""
    return np.repeat(np.arange(len(sections)), sections)


def interleaved_assignment(sections) -> np.ndarray:
    """Axis of each pair in Qwen3-VL's interleaving (transformers' ``apply_interleaved_mrope``): axis a >= 1
    takes pairs a, a + A, a + 2A, ... below A * sections[a]; axis 0 the rest."""
    A, n = len(sections), int(sum(sections))
    axis = np.zeros(n, np.int64)
    for a in range(1, A):
        idx = np.arange(a, A * sections[a], A)
        axis[idx[idx < n]] = a
    return axis


def _geometric_base(theta, denominator, rtol):
    """base with theta_k = base^(-k/denominator) for k = 0.. (eq 15; theta_0 = 1), when every |theta_k| fits it
    within ``rtol`` (relative, per pair); the base with the fewest significant digits that fits."""
    theta, rtol = np.abs(np.asarray(theta, float)), np.maximum(rtol, 4 * FREQ_ULPS * 2.0**-24)
    if theta.size < 2 or not np.all(theta > 0) or np.any(np.abs(theta[0] - 1) > rtol[0]):
        return None
    k = np.arange(theta.size)
    rate = -(k @ np.log(theta)) / (k @ k)          # log base / denominator
    base = float(np.exp(rate * denominator))
    for digits in range(1, 17):
        nice = float(f"{base:.{digits}g}")
        if np.all(np.abs(theta / nice ** (-k / denominator) - 1) <= rtol):
            return nice
    return None


def classify(F, nonzero=None):
    """(form, axis_of_pair, sections, mrope_layout) of a frequency matrix F (pairs, axes); entries where
    ``nonzero`` is False (default: F == 0) count as zero."""
    F = np.asarray(F, float)
    nz = F != 0 if nonzero is None else nonzero
    A = F.shape[1]
    if not np.all(nz.sum(1) == 1):
        return "mixed", None, None, None
    axis = np.argmax(nz, axis=1)
    sections = tuple(int(n) for n in np.bincount(axis, minlength=A))
    if sum(n > 0 for n in sections) == 1:
        return "1-D", axis, sections, None
    theta = np.abs(F[np.arange(len(axis)), axis])
    if not np.all(np.diff(theta) < 0):
        return "axial", axis, sections, None
    layout = ("blocks" if np.array_equal(axis, blocks_assignment(sections)) else
              "interleaved" if np.array_equal(axis, interleaved_assignment(sections)) else None)
    return "M-RoPE", axis, sections, layout


def _name(spec, nonzero):
    F = spec.inv_freq
    spec.form, spec.axis_of_pair, spec.sections, spec.mrope_layout = classify(F, nonzero)
    names = spec.axis_names
    if spec.form in ("1-D", "M-RoPE"):
        theta = np.abs(F[np.arange(len(F)), spec.axis_of_pair])
        rel = spec.freq_tolerance[np.arange(len(F)), spec.axis_of_pair] / theta
        spec.base = _geometric_base(theta, spec.rotary_dim / 2, rel)
        if spec.form == "M-RoPE" and spec.mrope_layout is None:
            spec.notes.append(f"each pair turns with one axis and the pairs share one spectrum, but the axes are "
                              f"laid out neither as blocks nor as Qwen3-VL's interleaving: "
                              f"{_runs(spec.axis_of_pair, names)}")
    elif spec.form == "axial":
        rel = spec.freq_tolerance / np.maximum(np.abs(F), 1e-300)
        spec.axis_bases = tuple(_geometric_base(F[spec.axis_of_pair == a, a], spec.sections[a],
                                                rel[spec.axis_of_pair == a, a]) if spec.sections[a]
                                else None for a in range(spec.axes))
    if spec.sections is not None:
        unused = [names[a] for a in range(spec.axes) if spec.sections[a] == 0]
        if unused:
            spec.notes.append(f"no pair turns with {', '.join(unused)}: fn ignores "
                              f"{'that axis' if len(unused) == 1 else 'those axes'}")
    flipped = [names[a] for a in range(spec.axes) if np.any(F[:, a] < 0) and not np.any(F[:, a] > 0)]
    if flipped:
        spec.notes.append(f"every frequency along {', '.join(flipped)} is negative: the kernel turns clockwise in "
                          f"{'that axis' if len(flipped) == 1 else 'those axes'} (eq 34 turns counter-clockwise)")


# ---- comparing with what you expect ----------------------------------------------------------------

def _check_layout(layout):
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be 'blocks' or 'interleaved', got {layout!r}"
                         f"{val.closest_name(str(layout), tuple(LAYOUTS))}")
    return layout


def _describe_layout(layout, axis, names):
    if layout:
        return f"{layout} ({LAYOUTS[layout]})"
    return f"neither blocks nor interleaved ({_runs(axis, names)})"


def compare_axes(spec: AxesSpec, inv_freq=None, *, pairing: str | None = None, rotary_dim: int | None = None,
                 rotary_start: int | None = None, norm_scale: float | None = None, rtol: float = 0.0) -> list:
    """Every difference between what identify_axes found and what you expect, as readable lines.

    ``inv_freq``: the expected matrix (rotary_dim/2, axes), e.g. :func:`rope_ref.multiaxis.mrope_frequencies`.
    Frequencies agree within the spec's measured tolerance, FREQ_ULPS float32 roundings (a float32 inv_freq
    buffer) and ``rtol`` relative.  For matrices where each pair turns with one axis the lines name the section split
    ("kernel gives t/h/w 16/24/24 pairs, expected 24/20/20"), the layout, which axis drives which pairs and
    an axis whose frequencies have the opposite sign before listing wrong frequencies.  [] when all match.
    """
    if not isinstance(spec, AxesSpec):
        raise TypeError(f"spec must be an AxesSpec (from identify_axes), got {type(spec).__name__}")
    if isinstance(rtol, bool) or not isinstance(rtol, numbers.Real) or not 0 <= rtol < 1:
        raise ValueError(f"rtol must be a real number in [0, 1), got {rtol!r}")
    if not spec.is_rope:
        return [f"not a rotary embedding: {spec.reason}"]
    problems = []
    names = spec.axis_names
    if pairing is not None and pairing != spec.pairing and not (spec.rotary_dim == 2 and pairing in val.PAIRINGS
                                                                  and spec.pairing in val.PAIRINGS):
        shown = ", ".join(str(p) for p in spec.pairs[:3])
        problems.append(f"pairing: expected {pairing}, found {spec.pairing} (pairs {shown}, ...)")
    if rotary_dim is not None and rotary_dim != spec.rotary_dim:
        problems.append(f"rotary_dim: expected {rotary_dim}, found {spec.rotary_dim}")
    if rotary_start is not None and rotary_start != spec.rotary_start:
        problems.append(f"rotary_start: expected rotated features from {rotary_start}, found {spec.rotary_start}.."
                        f"{spec.rotary_start + spec.rotary_dim - 1}")
    scale_tol = max(FREQ_ULPS * 2.0**-24, 2 * spec.scale_error)
    if norm_scale is not None and abs(spec.norm_scale / norm_scale - 1) > scale_tol:
        problems.append(f"norm_scale: expected {norm_scale:.6g}, found {spec.norm_scale:.6g}")
    if spec.rotated_at_zero:
        why = f"fn shifts the positions by {_shifts(spec)}" if spec.position_shift else "positions shifted?"
        problems.append(f"rotation at position 0: expected none, found pairs turned by up to {spec.phase_at_zero:.3g} "
                        f"rad with every axis at 0 ({why})")
    if inv_freq is not None:
        problems += _compare_matrix(spec, _check_matrix(inv_freq, spec.axes), rtol, names)
    return problems


def _check_matrix(E, axes):
    try:
        E = np.array(E, dtype=np.float64)
    except (TypeError, ValueError) as err:
        raise TypeError(f"inv_freq must be a real array of shape (rotary_dim/2, axes={axes}), got "
                        f"{type(E).__name__}: {err}") from None
    if E.ndim == 1 and axes == 1:
        E = E[:, None]
    if E.ndim != 2 or E.shape[1] != axes:
        raise ValueError(f"inv_freq must have shape (rotary_dim/2, axes={axes}), got {E.shape}")
    if not np.all(np.isfinite(E)):
        raise ValueError("inv_freq must be finite")
    return E


def _compare_matrix(spec, E, rtol, names):
    F = spec.inv_freq
    if E.shape != F.shape:
        return [f"frequencies: expected a ({E.shape[0]}, {E.shape[1]}) matrix ({2 * E.shape[0]} rotated features), "
                f"found ({F.shape[0]}, {F.shape[1]}) (rotary_dim {spec.rotary_dim})"]
    tol = spec.freq_tolerance + max(rtol, FREQ_ULPS * 2.0**-24) * np.abs(E)
    form, axis, sections, layout = classify(E)
    problems = []
    if axis is not None and spec.axis_of_pair is None:
        j = int(np.flatnonzero((np.abs(F) > spec.freq_tolerance).sum(1) > 1)[0])
        drive = ", ".join(f"{names[a]} {F[j, a]:.4g}" for a in range(spec.axes)
                          if abs(F[j, a]) > spec.freq_tolerance[j, a])
        return [f"axes: expected each pair to turn with one axis ({form}), found pairs that turn with several: pair "
                f"{j} with {drive} (found {spec.form})"]
    if axis is not None:
        found_axis = spec.axis_of_pair
        if sections != spec.sections:
            problems.append(f"sections: kernel gives {'/'.join(names)} {'/'.join(map(str, spec.sections))} pairs, "
                            f"expected {'/'.join(map(str, sections))}")
        if form == "M-RoPE" and spec.form == "M-RoPE" and layout != spec.mrope_layout:
            problems.append(f"layout: kernel's axes are {_describe_layout(spec.mrope_layout, found_axis, names)}, "
                            f"expected {_describe_layout(layout, axis, names)}")
        elif form != spec.form:
            problems.append(f"form: expected {form}, found {spec.form} ({_runs(found_axis, names)})")
        elif sections == spec.sections and not np.array_equal(axis, found_axis):
            problems.append(f"axis of each pair: kernel has {_runs(found_axis, names)}, expected {_runs(axis, names)}")
        if not np.array_equal(axis, found_axis):
            # the spectra, whichever axis drives each pair
            want = np.abs(E[np.arange(len(E)), axis])
            got = np.abs(F[np.arange(len(F)), found_axis])
            bad = np.flatnonzero(np.abs(got - want) > spec.freq_tolerance[np.arange(len(F)), found_axis]
                                 + max(rtol, FREQ_ULPS * 2.0**-24) * want)
            if bad.size:
                problems.append("frequencies (whichever axis turns each pair): " + "; ".join(
                    f"pair {j} expected {want[j]:.6g}, found {got[j]:.6g}" for j in bad[:3])
                    + f"; {bad.size} of {len(want)} pairs differ")
            return problems
    # Same zero pattern or dense: entry by entry, an axis with every sign flipped named first.
    bad = np.abs(F - E) > tol
    for a in range(spec.axes):
        col = E[:, a] != 0
        if bad[:, a].any() and col.any() and np.all(np.abs(F[col, a] + E[col, a]) <= tol[col, a]):
            first = int(np.flatnonzero(col)[0])
            problems.append(f"axis {names[a]}: every frequency has the opposite sign (expected {E[first, a]:.6g} for "
                            f"pair {first}, found {F[first, a]:.6g}): the kernel turns the other way in {names[a]} "
                            "(position negated or sin's sign flipped?)")
            bad[:, a] = False
    rows, cols = np.nonzero(bad)
    if rows.size:
        problems.append("frequencies: " + "; ".join(
            f"pair {j} along {names[a]} expected {E[j, a]:.6g}, found {F[j, a]:.6g}"
            for j, a in zip(rows[:3], cols[:3]))
            + f"; {rows.size} of {E.size} entries differ")
    return problems


def assert_axes_match(fn, d: int, axes: int, *, inv_freq=None, sections=None, layout: str | None = None,
                      base: float | None = None, pairing: str | None = None, rotary_dim: int | None = None,
                      rotary_start: int = 0, norm_scale: float | None = None, rtol: float = 0.0, seq: int = 64,
                      seed: int = 0, max_position: int = MAX_POSITION, axis_names=None) -> AxesSpec:
    """Raise AssertionError naming every way the multi-axis kernel ``fn(x, positions)`` differs from what you
    expect; return the :class:`AxesSpec` when all match.

    Expect either ``inv_freq`` (rotary_dim/2, axes) or, for M-RoPE (axes=3), ``sections`` (t, h, w pairs: a
    config's mrope_section) with ``layout`` ("blocks", the default, or "interleaved") and ``base`` (default
    10000): :func:`rope_ref.multiaxis.mrope_frequencies` with rotary_dim defaulting to d.  Also ``pairing``,
    ``rotary_dim``, ``rotary_start`` (default 0: the leading features rotate), ``norm_scale``.  See
    :func:`identify_axes` for how fn is called and :func:`compare_axes`
    for the comparison.
    """
    if inv_freq is not None and (sections is not None or layout is not None or base is not None):
        raise TypeError("pass either inv_freq= or sections= (with layout= and base=), not both")
    if inv_freq is None and sections is None and (layout is not None or base is not None):
        raise TypeError("layout= and base= describe M-RoPE: pass sections= with them (pairs per axis)")
    if pairing is not None and pairing not in ("interleaved", "half", "other"):
        raise ValueError(f"pairing must be 'interleaved', 'half' or 'other', got {pairing!r}"
                         f"{val.closest_name(str(pairing), ('interleaved', 'half', 'other'))}")
    if rotary_dim is not None:
        rotary_dim = val.check_d(rotary_dim, "rotary_dim")
    if norm_scale is not None:
        norm_scale = val.check_positive_real(norm_scale, "norm_scale")
    if isinstance(rotary_start, bool) or not isinstance(rotary_start, numbers.Integral) or rotary_start < 0:
        raise ValueError(f"rotary_start must be a non-negative integer (the first rotated feature), got "
                         f"{rotary_start!r}")
    if sections is not None:
        if axes != 3:
            raise ValueError(f"sections= describes M-RoPE's three axes (t, h, w), got axes={axes}: pass inv_freq= "
                             "(rotary_dim/2, axes) for other layouts")
        interleaved = _check_layout("blocks" if layout is None else layout) == "interleaved"
        inv_freq = mrope_frequencies(rotary_dim or d, sections, base=10000.0 if base is None else base,
                                     interleaved=interleaved)
    spec = identify_axes(fn, d, axes, seq=seq, seed=seed, max_position=max_position, axis_names=axis_names)
    problems = compare_axes(spec, inv_freq, pairing=pairing, rotary_dim=rotary_dim, rotary_start=rotary_start,
                            norm_scale=norm_scale, rtol=rtol)
    if problems:
        raise AssertionError("multi-axis RoPE mismatch:\n  " + "\n  ".join(problems) + f"\nidentified: {spec}")
    return spec
