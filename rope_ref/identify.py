"""Black-box identification of a RoPE implementation: which pairing, base, offset, scaling.

``identify(fn, d)`` feeds ``fn`` float64 inputs of shape ``(seq, d)`` (the function
applies its own positions, row r at position offset + r) and reads back, row by row,
the linear map it applies.  A rotary embedding maps each row by the block-diagonal
rotation of eq 34 (RoFormer, arXiv:2104.09864): one 2x2 block [[cos, -sin], [sin, cos]]
per pair of features, with angle (offset + row) * theta_i.  Everything else follows
from measuring those blocks:

1. structure: which features pair up (pairing, rotary_dim), and the norm scale;
2. angles: the measured angle of each pair at each row; their scatter about a line is
   the angle noise, from which every tolerance below is derived;
3. offset: solved from the angles at the rows (modulo 2 pi per pair, like the Chinese
   remainder theorem), with more rows fetched when the noise leaves it unresolved;
4. frequencies: refitted against the absolute angle (offset + row) * theta_i;
5. naming: the simplest scaling method whose frequencies match to the measured precision.

``assert_rope_matches(fn, d, **expected)`` turns the differences from what you expect
into one readable AssertionError.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import numpy as np

from . import _validate as val
from . import scaling
from .forms import frequencies, wrap_angle
from .scaling import scaled_inv_freq

#: Relative tolerance for structure (linearity, pair blocks): loose enough for bfloat16 kernels.
STRUCTURE_RTOL = 2e-2
#: Two calls with the same input must agree to this relative tolerance (fn depends on x alone).
STATE_RTOL = 1e-6
#: fn(0) must be 0 to this relative tolerance (exactly 0 for a linear kernel in any float type).
ZERO_RTOL = 1e-6
#: Unit roundoff of the float types a kernel's angles may be computed in, finest first.
PRECISIONS = (("float64", 2.0**-53), ("float32", 2.0**-24), ("float16", 2.0**-11), ("bfloat16", 2.0**-8))
#: Angles "behave like" a float type when |error| <= NOISE_ULPS * u * (1 + |angle|).
NOISE_ULPS = 8
#: Frequencies computed in a float type carry a few roundings: allow FREQ_ULPS * u relative.
FREQ_ULPS = 64
#: A scaling method is named only when every frequency is known to this relative tolerance: Llama 3 and
#: YaRN change only the slow pairs, by their factor (4 to 40 in published models: 0.75 relative or more).
NAME_RTOL = 0.5
#: Measured quantities agree when within SIGMAS standard deviations of their noise.
SIGMAS = 6.0
#: Offsets searched: |offset| <= MAX_OFFSET (float32 represents every integer up to 2^24).
MAX_OFFSET = 2**24
#: The offset is resolved to an integer when SIGMAS standard deviations stay within half a position.
OFFSET_SIGMA = 0.5 / SIGMAS
#: A `default` kernel whose rows start this far in is measured at a second length too: dynamic NTK
#: leaves the frequencies at their default up to its training length (1024 or more in published models).
DYNAMIC_MIN_OFFSET = 1024
#: Default for max_rows: at most this many rows are requested from fn when refining the offset.
MAX_ROWS = 4096

_TRAIN_LENGTHS = (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)


@dataclass
class RopeSpec:
    """What :func:`identify` found.  ``is_rope`` False means the other fields are not meaningful."""

    is_rope: bool
    reason: str = ""
    pairing: str | None = None          # "interleaved", "half" or "other", within the rotated features
    pairs: list = field(default_factory=list)
    rotary_dim: int | None = None
    rotary_start: int = 0               # first rotated feature (0: the leading rotary_dim features rotate)
    output_pairing: str | None = None   # None: pair (i, j) is written back to features (i, j); else the
    output_pairs: list | None = None    # layout of the features it is written to (output_pairs[p] for pairs[p])
    inv_freq: np.ndarray | None = None  # signed per-pair angular frequency, pair p in pairing order
    base: float | None = None           # of the named method; for "custom", of the leading pairs
    offset: float | None = None         # position of row 0 (an integer when resolved as one)
    offset_resolution: float | None = None  # standard deviation of the offset, in positions
    offset_alternatives: np.ndarray = field(default_factory=lambda: np.zeros(0))  # others that fit as well
    norm_scale: float | None = None     # |output| / |input| on the rotated features
    rope_type: str | None = None        # a rope_ref.ROPE_TYPES name, "custom", or None (too noisy)
    rope_params: dict = field(default_factory=dict)
    closest: str | None = None          # for "custom": the method whose parameters rope_params holds
    fit_error: float | None = None      # max relative |theta_method / theta_measured - 1|
    freq_tolerance: float | None = None  # largest relative tolerance used for the frequencies
    angle_precision: str | None = None  # the float type the kernel's angles behave like
    phase_error: float = 0.0            # max |measured angle - (offset + row) * theta|, radians
    output_rounded: bool = False        # angle errors from rounding cos/sin or the output (norm errs alike)
    stateful: bool = False              # fn's output for the first input changed after the calls on more rows
    scale_error: float = 0.0            # max relative spread of the per-pair scale over rows
    rows: int | None = None             # rows the angles were measured at
    notes: list = field(default_factory=list)

    def __str__(self) -> str:
        if not self.is_rope:
            return f"not a rotary embedding: {self.reason}"
        where = (f" rotary_start={self.rotary_start}" if self.rotary_start else "") + (
            f" output_pairing={self.output_pairing}" if self.output_pairing else "")
        lines = [f"pairing={self.pairing} rotary_dim={self.rotary_dim}{where} base={_num(self.base)} "
                 f"offset={_num(self.offset)} norm_scale={_num(self.norm_scale)}",
                 f"rope_type={self.rope_type}" + (f", closest {self.closest}" if self.closest else "")
                 + f" {_short(self.rope_params)}"
                 + (f" (frequencies {'off by up to' if self.closest else 'within'} {self.fit_error:.1e} relative, "
                    f"tolerance {self.freq_tolerance:.1e})"
                    if self.fit_error is not None and self.freq_tolerance is not None else ""),
                 f"angles behave like {self.angle_precision}: phase_error={self.phase_error:.2e} rad "
                 f"over {self.rows} rows, offset resolution {_num(self.offset_resolution, '.1e')}, "
                 f"scale_error={self.scale_error:.2e}"]
        return "\n".join(lines + [f"note: {n}" for n in self.notes])


def _num(v, fmt=".7g") -> str:
    """A number for display: integers as integers, None as None."""
    if v is None:
        return "None"
    if isinstance(v, numbers.Integral) or (math.isfinite(v) and v == round(v) and abs(v) < 2**53):
        return str(int(v))
    return format(v, fmt)


def _short(params: dict) -> str:
    """Parameters for display: floats to 6 digits, long lists summarized."""
    def fmt(v):
        if isinstance(v, float):
            return f"{v:.7g}"
        if isinstance(v, list):
            return f"[{len(v)} values, {min(v):.4g}..{max(v):.4g}]"
        return repr(v)
    return "{" + ", ".join(f"{k}: {fmt(v)}" for k, v in params.items()) + "}"


# ---- calling fn ------------------------------------------------------------------------------

def _to_array(out):
    """numpy float64 from whatever fn returned: numpy, ml_dtypes, lists, torch (any dtype or
    device, with grad), anything with ``__array__``.  Duck-typed: torch is never imported."""
    if hasattr(out, "detach"):
        out = out.detach()
    if hasattr(out, "cpu") and not isinstance(out, np.ndarray):
        out = out.cpu()
    if hasattr(out, "numpy") and not isinstance(out, np.ndarray):
        try:
            out = out.numpy()
        except (TypeError, RuntimeError, ValueError):   # e.g. torch bfloat16 has no numpy dtype
            if not hasattr(out, "float"):
                raise
            out = out.float().numpy()
    try:
        arr = np.asarray(out)
    except (TypeError, ValueError) as err:
        raise TypeError(f"fn must return an array (numpy, torch, jax, a list), got {type(out).__name__}: "
                        f"{err}") from err
    if not (arr.dtype in val.FLOAT_DTYPES or arr.dtype.kind in "fiu"):
        raise TypeError(f"fn must return a real numeric array (numpy, torch, jax, a list), got "
                        f"{type(out).__name__} of dtype {arr.dtype}")
    return arr.astype(np.float64)


def _call(fn, x, what: str, hint: str = "") -> np.ndarray:
    """fn(x) as float64 of x's shape; fn's own errors are re-raised with a note saying which call
    (and ``hint``: what the caller may have got wrong)."""
    try:
        out = fn(x.copy())
    except Exception as err:
        err.add_note(f"(raised by fn when rope_ref.identify called it with {what}, shape {x.shape}{hint})")
        raise
    out = _to_array(out)
    if out.shape != x.shape:
        extra = ("; it holds the same values: drop its batch and head axes (e.g. [0, 0])" if out.size == x.size else
                 "; did fn return (q, k)? return one of them" if out.shape[1:] == x.shape else "")
        raise ValueError(f"fn must map an array of shape {x.shape} to the same shape, got {out.shape} "
                         f"(called with {what}){extra}")
    if not np.all(np.isfinite(out)):
        raise ValueError(f"fn returned non-finite values (NaN or inf) for finite input ({what}, shape "
                         f"{x.shape}); a rotary embedding maps finite input to finite output")
    return out


def _not_rope(reason):
    return RopeSpec(is_rope=False, reason=reason)


def _check_seed(seed):
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, numbers.Integral)):
        raise TypeError(f"seed must be None or a non-negative integer, got {seed!r} of type {type(seed).__name__}")
    if seed is not None and seed < 0:
        raise ValueError(f"seed must be None or a non-negative integer, got {seed}")
    return seed


def identify(fn, d: int, *, seq: int = 64, seed: int = 0, base_hint: float | None = None,
             max_rows: int = MAX_ROWS) -> RopeSpec:
    """Identify the RoPE variant that ``fn`` implements.

    ``fn(x) -> y``: x float64 of shape ``(seq, d)``, row r at the function's own
    position for row r; y any real array of that shape (numpy, torch of any dtype or
    device, jax, a list).  ``base_hint`` (optional): the base the model was trained
    with, so a changed base is reported as NTK scaling and LongRoPE factors can be
    separated from the base.  Calls ``fn`` d + 5 times on ``seq`` rows (the first input twice:
    ``fn`` must depend on x alone, else ValueError), and up to twice on
    more rows (never more than ``max_rows``, e.g. the size of a kernel's cos/sin cache) when
    the angle noise leaves the offset unresolved; if it stays unresolved, the spec says so
    (a note, and ``offset_resolution``).  Once more on ``max_rows`` rows when the slowest pairs
    turn too little over the rows measured to tell the scaling methods apart.  A kernel that looks like ``ntk`` (or ``default`` with rows
    from DYNAMIC_MIN_OFFSET on) is measured at one or two other lengths: if its base changes with
    the length offset + rows it is ``dynamic`` (solved given ``base_hint``) or ``"custom"``.
    After calls on more rows the first call is repeated: a changed output sets ``stateful``.
    Returns a :class:`RopeSpec`.
    """
    if not callable(fn):
        raise TypeError(f"fn must be callable (x of shape (seq, d) -> rotated x), got {fn!r} of type "
                        f"{type(fn).__name__}")
    d = val.check_d(d)
    seq = val.check_positive_int(seq, "seq")
    if seq < 3:
        raise ValueError(f"seq must be >= 3 to measure frequencies, got {seq}")
    max_rows = val.check_positive_int(max_rows, "max_rows")
    if max_rows < seq:
        raise ValueError(f"max_rows (the most rows fn accepts) must be >= seq={seq}, got {max_rows}")
    if base_hint is not None:
        base_hint = val.check_base(base_hint, "base_hint")
    rng = np.random.default_rng(_check_seed(seed))
    a, b = rng.standard_normal((2, seq, d))
    first = (f"; identify passes a float64 NumPy array of shape (seq, d) = ({seq}, {d}): is d={d} the width fn "
             "rotates? wrap a kernel that takes (batch, heads, seq, d) torch tensors as "
             "lambda x: kernel(torch.from_numpy(x)[None, None])[0, 0]")
    ya, yb = _call(fn, a, "random input a", first), _call(fn, b, "random input b")
    scale = max(np.abs(ya).max(), np.abs(yb).max(), 1e-300)
    state = np.abs(_call(fn, a, "random input a again") - ya).max() / scale
    if state > STATE_RTOL:
        raise ValueError(f"fn must depend on x alone: two calls with the same x gave outputs {state:.2g} apart "
                         "(relative): fn keeps state between calls (a cache position advanced by every call?); "
                         "pass a function that applies the same positions on every call")
    # A linear kernel maps 0 to exactly 0 in any float type: a bias or an added position embedding does not.
    bias = np.abs(_call(fn, np.zeros((seq, d)), "zeros")).max() / scale
    if bias > ZERO_RTOL:
        return _not_rope(f"fn(0) is not 0 (up to {bias:.2g} relative to its output): fn adds something that does "
                         "not depend on x (an absolute position embedding? a bias?); a rotary embedding is linear "
                         "in its input")
    # Rounding in the kernel's float type is relative to the terms: |f(2a - 3b)| + 2 |f(a)| + 3 |f(b)|.
    y_lin = _call(fn, 2 * a - 3 * b, "2a - 3b")
    terms = np.abs(y_lin) + 2 * np.abs(ya) + 3 * np.abs(yb)
    lin = np.abs(y_lin - (2 * ya - 3 * yb)).max() / max(terms.max(), 1e-300)
    if lin > STRUCTURE_RTOL:
        return _not_rope(f"fn is not linear: f(2a - 3b) differs from 2 f(a) - 3 f(b) by {lin:.2g} "
                         "(relative to the terms); a rotary embedding is linear in its input")
    # M[r] is the d x d matrix applied to row r: column j is the response to e_j.
    M = np.stack([_call(fn, np.broadcast_to(e, (seq, d)), f"basis vector e_{j} in every row")
                  for j, e in enumerate(np.eye(d))], axis=-1)
    mix = np.abs(np.einsum("rij,rj->ri", M, a) - ya).max() / scale
    if mix > STRUCTURE_RTOL:
        return _not_rope(f"row r of the output depends on other rows (error {mix:.2g} relative): "
                         "fn mixes positions or depends on content")
    longest = [seq]

    def counted(x):
        longest[0] = max(longest[0], len(x))
        return fn(x)
    spec = _analyse(counted, M, base_hint, max_rows)
    if spec.is_rope and longest[0] > seq:       # transformers' dynamic RoPE keeps the longest length seen
        state = np.abs(_call(fn, a, "random input a after the longer calls") - ya).max() / scale
        if state > STATE_RTOL:
            spec.stateful = True
            spec.notes.append(f"fn keeps state between calls: after the calls on more rows, the first call gives "
                              f"outputs {state:.2g} apart (relative); transformers' dynamic RoPE keeps the frequencies "
                              "of the longest sequence seen: pass a fresh rotary module per call. The frequencies at "
                              "other lengths above were measured in that state")
    return spec


# ---- 1. structure ----------------------------------------------------------------------------

def _find_pairs(M):
    """Partner of each feature from where the off-diagonal entries are non-zero."""
    d = M.shape[-1]
    off = np.abs(M).max(axis=0) * (1 - np.eye(d))
    tol = 1e-12 * max(np.abs(M).max(), 1e-300)  # structural zeros are exact, even in float16 kernels
    pairs, passthrough = [], []
    for j in range(d):
        partners = np.flatnonzero((off[:, j] > tol) | (off[j, :] > tol))
        if len(partners) == 0:
            passthrough.append(j)
        elif len(partners) > 1:
            return None, None, f"feature {j} mixes with features {partners.tolist()[:6]}: not pairwise rotations"
        elif j < partners[0]:
            pairs.append((j, int(partners[0])))
    partnered = {i for p in pairs for i in p}
    lonely = [j for j in range(d) if j not in partnered and j not in passthrough]
    if lonely:
        return None, None, f"features {lonely[:6]} mix one-way with others: not pairwise rotations"
    return pairs, passthrough, ""


def _output_order(M):
    """Output feature for each input feature, when a kernel writes its rotated pairs elsewhere.

    DeepSeek's apply_rotary_pos_emb_interleave rotates the interleaved pairs (x0, x1), (x2, x3), ...
    and writes them in half layout: out_p = x_2p cos - x_2p+1 sin, out_(p + r/2) = x_2p+1 cos + x_2p sin.
    That is eq 34 followed by a fixed permutation of the features (q.k is unchanged when q and k are
    permuted alike).  Returns perm with M[:, perm] mapping every pair back onto itself, or None when
    the outputs are in place or the structure is not pairs of features (left to _find_pairs to name).
    """
    d = M.shape[-1]
    dep = np.abs(M).max(axis=0) > 1e-12 * max(np.abs(M).max(), 1e-300)   # dep[i, j]: output i uses input j
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
                block = M[:, [a, b]][:, :, [j, k]]               # [[c, -s], [s, c]] when a holds x_j cos
                straight = np.abs(block[:, 0, 0] - block[:, 1, 1]) + np.abs(block[:, 1, 0] + block[:, 0, 1])
                swapped = np.abs(block[:, 1, 0] - block[:, 0, 1]) + np.abs(block[:, 0, 0] + block[:, 1, 1])
                perm[[j, k]] = (a, b) if straight.max() <= swapped.max() else (b, a)
        else:
            return None
    return perm if len(set(perm.tolist())) == d else None


def _order_pairs(pairs, r, start=0):
    """Pairing name within the rotated features start..start + r - 1, and the pairs in that order."""
    if pairs == [(start + 2 * p, start + 2 * p + 1) for p in range(r // 2)]:
        return "interleaved", pairs
    if sorted(pairs) == [(start + p, start + p + r // 2) for p in range(r // 2)]:
        return "half", sorted(pairs)
    return "other", sorted(pairs)


def _analyse(fn, M, base_hint, max_rows):
    seq, d = M.shape[0], M.shape[-1]
    perm = _output_order(M)
    if perm is not None:
        M = M[:, perm]
    pairs, passthrough, why = _find_pairs(M)
    if pairs is None:
        return _not_rope(why)
    pt_diag = M[:, passthrough, passthrough] if passthrough else np.ones(1)
    if np.abs(pt_diag - 1).max() > STRUCTURE_RTOL:
        return _not_rope(f"features {passthrough[:6]} are scaled, not rotated or passed through")
    if not pairs:
        return _not_rope("no pair of features is rotated: fn leaves every feature in place")
    notes = []
    r = 2 * len(pairs)
    rotated = sorted(i for p in pairs for i in p)
    start = rotated[0] if rotated == list(range(rotated[0], rotated[0] + r)) else 0
    if rotated != list(range(start, start + r)):
        notes.append(f"the rotated features are not {r} consecutive ones: passthrough features {passthrough[:8]}")
    elif start:
        notes.append(f"the rotated features are {start}..{start + r - 1}, not the leading {r} (rotary_start={start})")
    pairing, pairs = _order_pairs(pairs, r, start)
    out_pairing = out_pairs = None
    if perm is not None:
        out_pairs = [(int(perm[i]), int(perm[j])) for i, j in pairs]
        out_pairing = _order_pairs(sorted(out_pairs), r, start)[0] if sorted(perm[rotated]) == rotated else "other"
        shown = ", ".join(f"{p} -> {o}" for p, o in zip(pairs[:2], out_pairs[:2]))
        notes.append(f"the rotated pairs are written to other features ({out_pairing} layout): {shown}, ...; "
                     "q.k is unchanged only if q and k are written alike")
    ia, ib = np.array(pairs).T
    out = (ia, ib) if perm is None else (perm[ia], perm[ib])    # where fn writes each pair
    c1, c2 = M[:, ia, ia], M[:, ib, ib]
    s1, s2 = M[:, ib, ia], -M[:, ia, ib]
    big = np.abs(M).max()
    if max(np.abs(c1 - c2).max(), np.abs(s1 - s2).max()) > STRUCTURE_RTOL * big:
        return _not_rope("a pair's 2x2 block is not a (scaled) rotation [[c, -s], [s, c]] (eq 34) "
                         f"(pair {pairs[int(np.argmax(np.abs(c1 - c2).max(0) + np.abs(s1 - s2).max(0)))]})")
    c, s = (c1 + c2) / 2, (s1 + s2) / 2
    scales = np.hypot(c, s)                                # (seq, pairs)
    norm_scale = float(np.median(scales))
    scale_error = float(np.abs(scales / norm_scale - 1).max())
    if scale_error > STRUCTURE_RTOL:
        return _not_rope(f"the norm of a pair changes with position by up to {scale_error:.1%}")
    if norm_scale == 0:
        return _not_rope("fn maps the rotated features to zero")

    # ---- 2.-3. angles and offset
    phase = np.unwrap(np.arctan2(s, c), axis=0)            # (seq, pairs), relative to row 0
    if np.abs(phase - phase[0]).max() <= 1e-9:
        return _not_rope(f"every row is rotated alike (by up to {np.abs(phase[0]).max():.3g} rad): fn does not "
                         "advance the position with the row; identify needs row r at position offset + r "
                         "(does fn treat the first axis as a batch of tokens at one position?)")
    # Rounding cos/sin or the output to a 16-bit type (cos.to(x.dtype) in a bfloat16 model) errs in the
    # angle and the norm alike, by up to about the norm's error at every position; rounding the angles
    # themselves leaves the norm exact.  Such angles are first tried as float32 ones plus that error.
    out_err = 2 * scale_error if scale_error > 2.0**-16 else 0.0
    offset, sigma_o, status, fit, unit = _locate(phase, out_err)
    out_rounded = bool(out_err and unit <= 2.0**-24)
    bias_err = out_err if out_rounded else 0.0           # what the frequency tolerances allow for it
    rows, drifted = seq, False

    def longer(rows, why):
        """The angles over ``rows`` rows, or None (with a note) when those of the first rows moved."""
        long_phase = _probe_phase(fn, d, ia, out, rows, why)
        drift = np.abs(wrap_angle(long_phase[:seq] - phase[:seq])).max()
        if drift > SIGMAS * fit["noise"].max() + 1e-12:
            notes.append(f"the angles at rows 0..{seq - 1} change by {drift:.2g} rad when fn is given "
                         f"{rows} rows: its frequencies depend on the sequence length (dynamic scaling?)")
            return None
        return long_phase

    # More rows pin the offset down (at most two more calls), unless the angles are coarser than
    # float32: then their errors grow with the position faster than more rows help.
    while (sigma_o > OFFSET_SIGMA or status != "ok") and rows < max_rows and unit <= 2.0**-24:
        rows = max_rows if rows > seq or status != "ok" else _rows_needed(seq, sigma_o, max_rows)
        long_phase = longer(rows, "to refine the offset")
        if long_phase is None:
            drifted = True
            break
        phase = long_phase
        offset, sigma_o, status, fit, unit = _locate(phase, out_err)
    # Pairs that turn too little over the rows measured (a large base; llama3's divided low frequencies)
    # leave their frequencies too uncertain to tell the methods apart, which differ exactly there: one
    # more call on max_rows rows lengthens the lever.
    if status == "ok" and not drifted and phase.shape[0] < max_rows and unit <= 2.0**-24:
        theta, _, sigma_theta = _refit_absolute(phase, offset, fit)
        lever = offset + np.arange(phase.shape[0])
        if _freq_tol(theta, sigma_theta, unit, bias_err, lever).max() > NAME_RTOL:
            long_phase = longer(max_rows, "to measure the slowest pairs' frequencies")
            if long_phase is None:
                drifted = True
            else:
                phase = long_phase
                offset, sigma_o, status, fit, unit = _locate(phase, out_err)
    if status == "ambiguous":
        also = ", ".join(f"{o:.0f}" for o in fit["also"][:3])
        why = (f"one rotated pair fixes the offset only modulo its wavelength 2 pi / theta = "
               f"{2 * np.pi / abs(fit['theta'][0]):.4g} positions" if len(pairs) == 1
               else "the frequencies' ratios nearly repeat there")
        notes.append(f"the offset is ambiguous: {len(fit['also']) + 1} offsets within +-{MAX_OFFSET} fit the angles "
                     f"within their noise (reported the smallest; also {also}"
                     f"{', ...' if len(fit['also']) > 3 else ''}): {why}")
    elif status == "inconsistent":
        notes.append("the angles of different pairs do not agree on one offset (best compromise reported)")
    if sigma_o > OFFSET_SIGMA:
        more = phase.shape[0] >= max_rows and unit <= 2.0**-24
        notes.append(f"the offset is not resolved to an integer from the {phase.shape[0]} rows measured (standard "
                     f"deviation {sigma_o:.2g} positions)" + ("; pass a larger max_rows if fn accepts more rows"
                                                             if more else ""))
    if sigma_o <= OFFSET_SIGMA and abs(offset - round(offset)) <= max(SIGMAS * sigma_o, 1e-9):
        offset = float(round(offset))

    # ---- 4. frequencies against the absolute angle (offset + row) * theta
    if status == "ok":
        theta, resid, sigma_theta = _refit_absolute(phase, offset, fit)
    else:
        theta, resid, sigma_theta = fit["theta"], fit["resid"], fit["sigma_theta"]
    positions = offset + np.arange(phase.shape[0])
    angle = np.abs(np.outer(positions, theta))
    precision, unit = _angle_precision(resid, angle)
    if out_rounded:
        notes.append(f"the angle errors (up to {np.abs(resid).max():.2g} rad) come with norm errors (up to "
                     f"{scale_error:.2g}): float32 angles, with cos/sin or the output rounded to a 16-bit type "
                     "(cos.to(x.dtype)?); frequencies are compared to the precision that leaves")
        precision, unit = "float32 (cos/sin 16-bit)", 2.0**-24
    lever = positions if status == "ok" else np.arange(phase.shape[0]) - (phase.shape[0] - 1) / 2   # of the fit used
    tau = _freq_tol(theta, sigma_theta, unit, bias_err, lever)
    spec = RopeSpec(is_rope=True, pairing=pairing, pairs=pairs, rotary_dim=r, rotary_start=start,
                    output_pairing=out_pairing, output_pairs=out_pairs, inv_freq=theta,
                    offset=offset, offset_resolution=float(sigma_o), norm_scale=norm_scale,
                    angle_precision=precision, phase_error=float(np.abs(resid).max()),
                    scale_error=scale_error, output_rounded=out_rounded,
                    offset_alternatives=np.asarray(fit["also"] if status == "ambiguous" else [], float),
                    rows=int(phase.shape[0]), notes=notes)
    _describe_frequencies(spec, base_hint, tau, unit)
    if spec.rope_type == "ntk" or (spec.rope_type == "default" and offset >= DYNAMIC_MIN_OFFSET):
        if offset == round(offset):
            def measure(n):
                return _theta_at(_probe_phase(fn, d, ia, out, n, "to see if the frequencies depend on the "
                                              "sequence length"), offset, unit, bias_err)
            _check_dynamic(spec, measure, np.abs(theta), tau, base_hint, max_rows)
        elif drifted and spec.rope_type == "ntk":
            spec.rope_type, spec.closest = "custom", "ntk"
            notes.append("not static NTK: the frequencies depend on the sequence length, and dynamic NTK "
                         "cannot be solved for while the offset is not resolved")
        elif spec.rope_type == "ntk":
            notes.append("not checked at another sequence length (offset not resolved): dynamic NTK at one "
                         "length is the same base change")
    return spec


def _probe_phase(fn, d, ia, out, rows, why):
    """Unwrapped angle of every pair at rows 0..rows-1, from one call: column ia of every block at once,
    read from the output features ``out`` = (oa, ob) the pairs are written to."""
    x = np.zeros((rows, d))
    x[:, ia] = 1.0
    y = _call(fn, x, f"e_i on the first feature of every pair, {rows} rows, {why}",
              "; if fn accepts fewer rows (a cos/sin cache read at an offset), pass max_rows= the most it accepts")
    return np.unwrap(np.arctan2(y[:, out[1]], y[:, out[0]]), axis=0)


def _theta_at(phase, offset, unit, out_err=0.0):
    """|theta| refitted against (offset + row) and its relative tolerance, as for the first rows."""
    theta, _, sigma_theta = _refit_absolute(phase, offset, _fit_rows(phase, unit, offset))
    theta = np.abs(theta)
    return theta, _freq_tol(theta, sigma_theta, unit, out_err, offset + np.arange(phase.shape[0]))


def _freq_tol(theta, sigma_theta, unit, out_err, positions):
    """Relative tolerance on each |theta|: SIGMAS standard deviations, a few roundings of the angles'
    float type, and the bias an angle error out_err at every row can give a line fitted against
    ``positions`` m (through 0): |sum m e| / sum m^2 <= out_err / rms(m)."""
    theta = np.maximum(np.abs(theta), 1e-300)
    bias = out_err / max(math.sqrt(float(np.mean(np.square(positions)))), 1e-300)
    return np.maximum(np.maximum(SIGMAS * sigma_theta / theta, FREQ_ULPS * unit), bias / theta)


# ---- 2. angles --------------------------------------------------------------------------------

def _fit_rows(phase, unit=0.0, offset=0.0, out_err=0.0):
    """Per-pair straight line through the angles of the rows, about the centre row.

    Returns theta (slopes), centre (angle at the centre row), their standard deviations and
    the residuals.  The deviations come from the scatter about the line, floored by what
    rounding to a float type with unit roundoff ``unit`` can do to angles near
    (offset + row) * theta: up to unit * |angle| at every row, and -- rounding errors of
    consecutive multiples of one theta can drift together -- a slope error up to 2 unit |angle| / rows.
    ``out_err``: an error up to that many radians at every row (cos/sin rounded), which the centre
    angle may keep whole (a slowly turning pair's rounding errors do not average out).
    """
    n = phase.shape[0]
    x = np.arange(n) - (n - 1) / 2
    centre = phase.mean(axis=0)
    theta = x @ (phase - centre) / (x @ x)
    resid = phase - centre - np.outer(x, theta)
    biggest = 1 + np.abs(offset + n) * np.abs(theta)      # largest |angle| over the rows, + 1 for cos/sin rounding
    floor = np.maximum(2.0**-52 * (np.pi + n * np.abs(theta)), unit * biggest)
    noise = np.maximum(np.sqrt((resid**2).sum(axis=0) / max(n - 2, 1)), floor)
    sigma_theta = np.maximum(noise / np.sqrt(x @ x), 2 * unit * biggest / n)
    return dict(theta=theta, centre=centre, row_centre=(n - 1) / 2, resid=resid, noise=noise,
                sigma_theta=sigma_theta, sigma_centre=np.maximum(noise / np.sqrt(n), unit * biggest + out_err))


def _locate(phase, out_err=0.0):
    """Row fit and offset, with the rounding floor sized for the offset found.

    The unit roundoff is the finest float type whose rounding explains the residuals at some
    offset in range.  The floors start sized for the rows alone and grow (to the offset found,
    or fourfold while no offset fits) until they cover the offset they find: the smallest
    angle scale that explains the measurements.  If the angles at that offset behave like a
    coarser type, the search is repeated with it.

    With ``out_err`` (the angle error from rounding cos/sin or the output, at every position) the
    angles are first tried as float32 ones: kept if float32 rounding plus out_err explains them.

    Returns (offset, its standard deviation, status, fit, unit roundoff the angles behave like)."""
    n = phase.shape[0]
    rows_fit = _fit_rows(phase)
    if out_err:
        offset, sigma, status, fit, angle = _search_offset(phase, 2.0**-24, out_err)
        if status != "inconsistent" and np.all(np.abs(rows_fit["resid"]) <= NOISE_ULPS * 2.0**-24 * (1 + angle)
                                               + out_err):
            return offset, sigma, status, fit, 2.0**-24
    widest = (MAX_OFFSET + n) * np.abs(rows_fit["theta"]) + np.abs(phase).max(axis=0) + np.pi
    _, unit = _angle_precision(rows_fit["resid"], widest)
    for _ in range(2):
        offset, sigma, status, fit, angle = _search_offset(phase, unit)
        _, unit_here = _angle_precision(rows_fit["resid"], angle)
        if unit_here == unit:
            break
        unit = unit_here
    return offset, sigma, status, fit, unit


def _search_offset(phase, unit, out_err=0.0):
    """Offset with the floors for angles of unit roundoff ``unit`` sized for the offset found;
    returns (offset, sigma, status, fit, largest |angle| of each pair at that offset)."""
    n = phase.shape[0]
    sized = 0.0
    while True:
        fit = _fit_rows(phase, unit, sized, out_err)
        offset, sigma, status, also = _solve_offset(fit)
        if (status != "inconsistent" and abs(offset) <= sized + n) or sized >= MAX_OFFSET:
            break
        sized = abs(offset) if status != "inconsistent" else max(4 * sized, n)
    fit["also"] = also
    angle = (np.abs(np.outer(offset + np.arange(n), fit["theta"])) + np.abs(phase)).max(axis=0) + np.pi
    return offset, sigma, status, fit, angle


def _rows_needed(seq, sigma_o, max_rows):
    """Rows for an offset standard deviation OFFSET_SIGMA: it falls as rows^-3/2 (slope of a line fit)."""
    if not math.isfinite(sigma_o):
        return max_rows
    want = seq * (sigma_o / OFFSET_SIGMA) ** (2 / 3)
    return int(min(max_rows, 2 ** math.ceil(math.log2(max(want, 2 * seq)))))


# ---- 3. offset --------------------------------------------------------------------------------

def _solve_offset(fit, max_candidates=200_000):
    """Offset o with (o + row_centre) * theta_p = centre_p (mod 2 pi) for every pair p.

    Each pair fixes q = o + row_centre modulo its wavelength 2 pi / theta_p.  Candidates
    come from the slowest pair; each is refined from slow to fast pairs (a wrap count is
    chosen only where the uncertainty makes it decidable) and kept if every pair agrees
    within SIGMAS of its noise.  Returns (offset, standard deviation, status) with status
    "ok", "ambiguous" (several offsets agree) or "inconsistent" (none does), and the other
    offsets that agree, nearest first.
    """
    theta, centre, rc = fit["theta"], fit["centre"], fit["row_centre"]
    s_theta, s_centre = fit["sigma_theta"], fit["sigma_centre"]
    order = [p for p in np.argsort(np.abs(theta)) if abs(theta[p]) > 1e-12]
    if not order:
        return 0.0, math.inf, "ambiguous", []
    p0 = order[0]
    kmax = min(math.ceil((MAX_OFFSET + abs(rc)) * abs(theta[p0]) / (2 * np.pi)) + 1, max_candidates // 2)
    k = np.arange(-kmax, kmax + 1)
    q = (centre[p0] + 2 * np.pi * k) / theta[p0]
    var_q = (s_centre[p0] ** 2 + (q * s_theta[p0]) ** 2) / theta[p0] ** 2
    worst = np.zeros_like(q)
    for p in order[1:]:
        pred = q * theta[p]
        var_pred = var_q * theta[p] ** 2 + (q * s_theta[p]) ** 2 + s_centre[p] ** 2
        decidable = var_pred < (np.pi / 4) ** 2
        wraps = np.round((pred - centre[p]) / (2 * np.pi))
        miss = np.abs(pred - centre[p] - 2 * np.pi * wraps) / np.sqrt(var_pred)
        worst = np.where(decidable, np.maximum(worst, miss), worst)
        q_p = (centre[p] + 2 * np.pi * wraps) / theta[p]
        var_p = (s_centre[p] ** 2 + (q * s_theta[p]) ** 2) / theta[p] ** 2
        w = np.where(decidable, var_q / (var_q + var_p), 0.0)   # inverse-variance combination
        q, var_q = q + w * (q_p - q), np.where(decidable, var_q * var_p / (var_q + var_p), var_q)
    offsets = q - rc
    ok = np.flatnonzero(worst <= SIGMAS)
    if ok.size == 0:
        best = int(np.argmin(worst))
        return float(offsets[best]), float(np.sqrt(var_q[best])), "inconsistent", []
    ok = ok[np.argsort(np.abs(offsets[ok]))]
    status = "ok" if ok.size == 1 else "ambiguous"
    return float(offsets[ok[0]]), float(np.sqrt(var_q[ok[0]])), status, offsets[ok[1:]].tolist()


# ---- 4. frequencies ---------------------------------------------------------------------------

def _refit_absolute(phase, offset, fit):
    """theta_p by least squares on the absolute angle: phase + 2 pi k_p = (offset + row) * theta_p.

    With the offset known, the angle at row r is known absolutely (up to a whole number of
    turns k_p, decided from the row fit at the centre row), so theta is measured against
    (offset + row) rather than against the few rows of the block: its error falls by about
    the ratio offset / rows.
    """
    m = offset + np.arange(phase.shape[0], dtype=float)
    if m @ m == 0:
        return fit["theta"], fit["resid"], fit["sigma_theta"]
    turns = np.round(((offset + fit["row_centre"]) * fit["theta"] - fit["centre"]) / (2 * np.pi))
    absolute = phase + 2 * np.pi * turns
    theta = m @ absolute / (m @ m)
    resid = absolute - np.outer(m, theta)
    floor = 2.0**-52 * (1 + np.abs(np.outer(m, theta)).max(axis=0))
    noise = np.maximum(np.sqrt((resid**2).sum(axis=0) / max(len(m) - 1, 1)), floor)
    return theta, resid, noise / np.sqrt(m @ m)


def _angle_precision(resid, angle):
    """The finest float type whose rounding, NOISE_ULPS * u * (1 + |angle|), covers the residuals."""
    for name, unit in PRECISIONS:
        if np.all(np.abs(resid) <= NOISE_ULPS * unit * (1 + angle)):
            return name, unit
    return "coarser than bfloat16", 2.0**-4


def _geometric_base(theta, r, tau):
    """Base from the leading pairs that follow theta_p = theta_0 * base^(-2p/r) (eq 15).

    Scaling methods that keep the fast pairs (YaRN, Llama 3) keep them geometric; the run
    of leading pairs that agree with the ratio so far gives the base with the most precision.
    """
    last = 1
    for p in range(2, len(theta)):
        rho = (theta[last] / theta[0]) ** (1 / last)
        if abs(theta[p] / (theta[0] * rho**p) - 1) > tau[p] + p / last * (tau[0] + tau[last]):
            break
        last = p
    return float((theta[0] / theta[last]) ** (r / (2 * last)))


def _describe_frequencies(spec, base_hint, tau, unit):
    theta = np.abs(spec.inv_freq)
    r = spec.rotary_dim
    if np.all(spec.inv_freq < 0):
        spec.notes.append("every pair rotates clockwise (negative frequencies): the sign of sin is flipped")
    elif np.any(spec.inv_freq < 0):
        spec.notes.append("some pairs rotate clockwise: the sign of sin is flipped for them")
    if spec.offset == round(spec.offset) and spec.offset != 0:
        spec.notes.append(f"row 0 is rotated as position {int(spec.offset)}")
    spec.freq_tolerance = float(tau.max())
    if not np.all(np.isfinite(theta) & (theta > 0)):
        spec.base = float("nan")
        spec.notes.append("a pair does not turn measurably between rows: frequencies too noisy to name a method")
        return
    if len(theta) < 2:
        spec.base = float("nan")
        spec.rope_type, spec.rope_params = "default", {}
        return
    spec.base = _geometric_base(theta, r, tau)
    if abs(theta[0] / spec.base ** (-2 / r) - 1) <= tau[0] and abs(theta[0] - 1) > tau[0]:
        spec.notes.append(f"theta_0 = {theta[0]:.6g} = base^(-2/d): frequencies look indexed from 1 "
                          "(eq 15's 10000^(-2(i-1)/d) with i starting at 0)")
    if unit > 2.0**-24:
        spec.notes.append(f"angles behave like {spec.angle_precision} (errors up to {spec.phase_error:.2g} rad): "
                          "frequencies are too noisy to name a scaling method")
        return
    if tau.max() > NAME_RTOL:
        spec.notes.append(f"the frequencies are known only to {tau.max():.2g} relative (pair {int(np.argmax(tau))}, "
                          f"{spec.rows} rows): too noisy to name a scaling method")
        return
    _name_method(spec, theta, base_hint, tau, unit)


# ---- 5. naming ---------------------------------------------------------------------------------

def _log_fit(theta, r, intercept):
    """Least squares of log theta_p = a - (2p/r) log base (a = 0 unless intercept)."""
    x = -2 * np.arange(len(theta)) / r
    y = np.log(theta)
    if intercept:
        slope, a = np.polyfit(x, y, 1)
    else:
        slope, a = (x @ y) / (x @ x), 0.0
    return float(np.exp(slope)), float(np.exp(-a))       # base, factor


def _candidates(theta, r, base, norm_scale, base_hint, tau):
    """(rope_type, params) configurations worth comparing, simplest first."""
    if base_hint is not None:
        yield "default", dict(base=base_hint)
        fitted, _ = _log_fit(theta, r, intercept=False)
        if r > 2:
            yield "ntk", dict(base=base_hint, factor=float((fitted / base_hint) ** ((r - 2) / r)))
    yield "default", dict(base=_log_fit(theta, r, intercept=False)[0])
    b, factor = _log_fit(theta, r, intercept=True)
    if abs(factor - 1) > tau[0]:
        yield "linear", dict(base=b, factor=factor)
    ratio = theta / frequencies(r, base)
    f_max = float(1 / ratio.min())
    # the factor as fitted, and rounded to fewer digits where the slowest pair cannot tell them apart
    factors = dict.fromkeys([f_max] + [float(f"{f_max:.{k}g}") for k in (1, 2, 3, 4)
                                       if abs(float(f"{f_max:.{k}g}") / f_max - 1) <= tau[int(np.argmin(ratio))]])
    for f_max in factors if f_max > 1 + tau.max() else ():
        for L in _TRAIN_LENGTHS:
            # Llama 3.1 (1, 4); Llama 4 (1, 1.5) and Llama-4-Scout's step (1, 1)
            for low, high in [(1.0, 4.0), (1.0, 2.0), (1.0, 8.0), (2.0, 8.0), (1.0, 1.5), (1.0, 1.0)]:
                yield "llama3", dict(base=base, factor=f_max, low_freq_factor=low, high_freq_factor=high,
                                     original_max_position_embeddings=L)
            for truncate in (True, False):          # GPT-OSS: truncate=False (unrounded correction range)
                for fast, slow in [(32.0, 1.0), (16.0, 1.0), (32.0, 2.0), (16.0, 2.0)]:
                    yield "yarn", dict(base=base, factor=f_max, original_max_position_embeddings=L,
                                       beta_fast=fast, beta_slow=slow, **({} if truncate else {"truncate": False}))


def _scale_tol(spec):
    """Relative tolerance on norm_scale: its measured spread, or a few roundings of the angles' float type."""
    if spec.output_rounded:             # cos/sin rounded: the spread measures that rounding
        return SIGMAS * spec.scale_error
    return max(SIGMAS * spec.scale_error, FREQ_ULPS * dict(PRECISIONS).get(spec.angle_precision, 2.0**-4))


def _kw(params):
    return {k: v for k, v in params.items() if k != "base"}


def _round_params(rope_type, params, theta, r, tau, rel):
    """Fitted parameters rounded to the digits the frequencies resolve (8.000001 -> 8), if they still fit."""
    digits = max(1, int(-math.log10(float(tau.max()))))
    rounded = {k: float(f"{v:.{digits}g}") if isinstance(v, float) else v for k, v in params.items()}
    try:
        freqs, _ = scaled_inv_freq(r, rounded["base"], rope_type=rope_type, **_kw(rounded))
    except (ValueError, TypeError):
        return params, rel
    rounded_rel = np.abs(freqs / theta - 1)
    return (rounded, rounded_rel) if np.all(rounded_rel <= np.maximum(tau, rel)) else (params, rel)


def _name_method(spec, theta, base_hint, tau, unit):
    """The first candidate whose frequencies match within tau; else LongRoPE factors or "custom"."""
    r, norm_scale = spec.rotary_dim, spec.norm_scale
    float32_tau = np.maximum(tau, FREQ_ULPS * 2.0**-24)
    best = (np.inf, None, {})
    for rope_type, params in _candidates(theta, r, spec.base, norm_scale, base_hint, tau):
        try:
            freqs, att = scaled_inv_freq(r, params["base"], rope_type=rope_type, **_kw(params))
        except (ValueError, TypeError):
            continue
        if rope_type == "yarn" and abs(norm_scale / att - 1) > _scale_tol(spec):
            params = dict(params, attention_factor=norm_scale)   # frequencies do not depend on it
        rel = np.abs(freqs / theta - 1)
        if np.all(rel <= tau) or (unit < 2.0**-24 and np.all(rel <= float32_tau)):
            if not np.all(rel <= tau):
                spec.notes.append(f"frequencies match {rope_type} to {rel.max():.1e} relative, as if computed in "
                                  "float32 (the angles themselves are float64)")
            params, rel = _round_params(rope_type, params, theta, r, tau, rel)
            spec.rope_type, spec.rope_params, spec.base = rope_type, params, float(params["base"])
            spec.fit_error = float(rel.max())
            return
        if rel.max() < best[0]:
            best = (float(rel.max()), rope_type, params)
    confounded = ("LongRoPE's base and per-pair factors cannot be told apart from rotations alone: "
                  "theta_p = base^(-2p/d) / factor_p fits any base")
    if base_hint is not None:
        factors = frequencies(r, base_hint) / theta
        if np.all(factors >= 1 - tau):
            spec.rope_type, spec.base = "longrope", base_hint
            spec.rope_params = dict(base=base_hint, short_factor=factors.tolist(), long_factor=factors.tolist())
            if abs(norm_scale - 1) > _scale_tol(spec):
                spec.rope_params["attention_factor"] = norm_scale
            spec.fit_error = 0.0
            spec.notes.append(confounded + "; the factors here are relative to base_hint. Which of short_factor "
                              "and long_factor the kernel used, and original_max_position_embeddings, are not "
                              "observable: add the latter to use these parameters with scaled_inv_freq")
            return
    spec.rope_type, spec.closest, spec.rope_params, spec.fit_error = "custom", best[1], dict(best[2]), best[0]
    spec.notes.append(f"no scaling method fits to the measured precision (tolerance {tau.max():.1e}); closest: "
                      f"{best[1]} {_short(best[2])}, off by {best[0]:.2g} relative")
    spec.notes.append(confounded + ("" if base_hint is not None else "; pass base_hint to express the "
                                    "frequencies as LongRoPE factors of that base"))


def _check_dynamic(spec, measure, theta, tau, base_hint, max_rows):
    """Static base or dynamic NTK: measure the frequencies again at another length L = offset + rows.

    transformers' dynamic NTK uses base * g^(r/(r-2)), g = 1 + factor (L - L_train) / L_train, past
    L_train (max_position_embeddings) and the default frequencies up to it: g is a straight line in L,
    so two lengths past L_train give factor and L_train, given the trained base (base_hint).
    ``measure(rows)`` -> (|theta|, tau) at that many rows.  One call; a second if the base changes.
    """
    r, offset, kind = spec.rotary_dim, int(spec.offset), spec.rope_type
    rows1 = max_rows if max_rows > spec.rows else spec.rows // 2
    if rows1 < 3:
        if kind == "ntk":
            spec.notes.append("not checked at another sequence length (max_rows): dynamic NTK at one length "
                              "is the same base change")
        return
    seen = [(offset + spec.rows, theta, tau), (offset + rows1, *measure(rows1))]
    (L0, _, _), (L1, theta1, tau1) = seen
    if np.all(np.abs(theta1 / theta - 1) <= tau + tau1):
        if kind == "ntk":
            spec.notes.append(f"static NTK: the same base at sequence lengths {L0} and {L1} (offset + rows)")
        return
    base_at = lambda th: _log_fit(th, r, intercept=False)[0]  # noqa: E731
    spec.notes.append(f"the frequencies depend on the sequence length L = offset + rows: base {base_at(theta):.7g} "
                      f"at L = {L0}, {base_at(theta1):.7g} at L = {L1}")
    if base_hint is None:
        spec.rope_type, spec.closest = "custom", kind
        spec.notes.append("dynamic NTK? its factor and max_position_embeddings can be solved for only from the "
                          "trained base: pass base_hint")
        return
    rows2 = (spec.rows + rows1) // 2
    if rows2 not in (spec.rows, rows1) and rows2 >= 3:      # a third length checks that g is a line in L
        seen.append((offset + rows2, *measure(rows2)))
    default = frequencies(r, base_hint)
    far = sorted(x for x in seen if not np.all(np.abs(default / x[1] - 1) <= x[2]))   # lengths past L_train
    params = _solve_dynamic(far, r, base_hint, base_at) if len(far) >= 2 else None
    digits = max(1, int(-math.log10(float(tau.max()))))
    fits = lambda p: p is not None and _dynamic_error(p, seen, r) <= 1  # noqa: E731
    if fits(params):
        rounded = dict(params, factor=float(f"{params['factor']:.{digits}g}"))
        params = rounded if fits(rounded) else params
        spec.rope_type, spec.closest, spec.rope_params, spec.base = "dynamic", None, params, base_hint
        spec.fit_error = _dynamic_error(params, seen[:1], r, relative=True)
        T = params["max_position_embeddings"]
        if any(fits(_solve_dynamic(far, r, base_hint, base_at, T + dt)) for dt in (-1, 1)):
            spec.notes.append(f"max_position_embeddings is not resolved to one integer from lengths "
                              f"{[x[0] for x in seen]} (a larger max_rows would)")
        return
    if kind == "default" and len(far) < 2:
        spec.notes.append("dynamic NTK past a training length? one length past it is not enough to solve for "
                          f"its factor and max_position_embeddings; at L = {L0} the frequencies are the default ones")
        return
    spec.rope_type, spec.closest = "custom", "dynamic" if params else kind
    if params:
        spec.rope_params, spec.fit_error = params, _dynamic_error(params, seen, r, relative=True)
    spec.notes.append("no dynamic NTK factor and max_position_embeddings reproduce the frequencies at every "
                      "length measured")


def _solve_dynamic(far, r, base_hint, base_at, T=None):
    """factor and max_position_embeddings T from g at lengths past T: g - 1 = factor (L - T) / T."""
    L = np.array([x[0] for x in far], float)
    g = np.array([(base_at(x[1]) / base_hint) ** ((r - 2) / r) for x in far])
    slope = (g[-1] - g[0]) / (L[-1] - L[0])
    if T is None:
        if not slope > 0:
            return None
        T = int(round(L[0] - (g[0] - 1) / slope))
    if T < 1 or np.any(L <= T):
        return None
    factor = T * float((g - 1) @ (L - T) / ((L - T) @ (L - T)))
    return dict(base=base_hint, factor=factor, max_position_embeddings=T) if factor > 0 else None


def _dynamic_error(params, seen, r, relative=False):
    """Largest |theta_dynamic / theta_measured - 1| over the lengths seen, in units of tau (or relative)."""
    worst = 0.0
    for L, theta, tau in seen:
        try:
            freqs, _ = scaled_inv_freq(r, params["base"], rope_type="dynamic", seq_len=L, **_kw(params))
        except (ValueError, TypeError):
            return math.inf
        rel = np.abs(freqs / theta - 1)
        worst = max(worst, float(rel.max() if relative else (rel / tau).max()))
    return worst


# ---- assertions -----------------------------------------------------------------------------

_SPEC_KEYS = ("pairing", "rotary_dim", "rotary_start", "output_pairing", "offset", "base", "norm_scale", "rope_type",
              "inv_freq")
_PARAM_KEYS = tuple(sorted({k for table in (scaling.REQUIRED, scaling.OPTIONAL) for keys in table.values()
                            for req in keys for k in req.split(" | ")} | {"seq_len"}))
_RELIABLE = ("float64", "float32")


def assert_rope_matches(fn, d: int | None = None, *, config=None, seq: int = 64, phase_atol: float | None = None,
                        max_rows: int = MAX_ROWS, **expected) -> RopeSpec:
    """Raise AssertionError naming every property in which ``fn`` differs from ``expected``.

    ``expected`` may hold ``pairing``, ``rotary_dim``, ``rotary_start`` (default 0: the leading
    features rotate), ``output_pairing`` (default None: each pair is written back to its own
    features; "half" for DeepSeek's interleave-then-half), ``offset``, ``base``, ``norm_scale``,
    ``rope_type``, ``inv_freq`` and the parameters of ``rope_type`` (``factor``,
    ``original_max_position_embeddings``, ..., and ``seq_len`` for dynamic/longrope).
    ``config``: any object with ``head_dim``, ``rotary_dim``, ``pairing``, ``base``,
    ``rope_type``, ``params`` and ``attention_factor`` (e.g. ``rope_ref.from_hf_config(...)``):
    ``d`` defaults to its head_dim and the expectations come from it; explicit keywords win.
    Frequencies are compared pair by pair to the precision identify measured; angles must
    behave like float32 or better (or, with ``phase_atol``, deviate from (offset + row) * theta
    by at most that many radians).  ``max_rows``: the most rows ``fn`` accepts (see :func:`identify`).
    For dynamic and LongRoPE the expected frequencies are those at ``seq_len``, by default the
    length a model sees at the rows measured: last position + 1, as ``RopeConfig.rotate``.
    Returns the :class:`RopeSpec` when all match.
    """
    val.check_keywords(expected, _SPEC_KEYS + _PARAM_KEYS, "assert_rope_matches()")
    if config is not None:
        d, expected = _from_config(config, d, expected)
    if d is None:
        raise TypeError("assert_rope_matches needs d (features per row) or config= with a head_dim")
    _check_expected(expected)
    if phase_atol is not None and (isinstance(phase_atol, bool) or not isinstance(phase_atol, numbers.Real)
                                   or not phase_atol > 0):
        raise ValueError(f"phase_atol must be None or a positive number of radians, got {phase_atol!r}")
    spec = identify(fn, d, seq=seq, base_hint=expected.get("base"), max_rows=max_rows)
    if not spec.is_rope:
        raise AssertionError(f"not a rotary embedding: {spec.reason}")
    problems = []
    same_pair = spec.rotary_dim == 2 and {expected.get("pairing"), spec.pairing} <= {"half", "interleaved"}
    if "pairing" in expected and expected["pairing"] != spec.pairing and not same_pair:   # one pair: both names
        shown = ", ".join(str(p) for p in spec.pairs[:3])
        problems.append(f"pairing: expected {expected['pairing']}, found {spec.pairing}; pairs {shown}…")
    if "rotary_dim" in expected and expected["rotary_dim"] != spec.rotary_dim:
        problems.append(f"rotary_dim: expected {expected['rotary_dim']}, found {spec.rotary_dim}")
    if expected.get("rotary_start", 0) != spec.rotary_start:      # HF and Meta rotate the leading features
        problems.append(f"rotary_start: expected rotated features from {expected.get('rotary_start', 0)}, found "
                        f"{spec.rotary_start}..{spec.rotary_start + spec.rotary_dim - 1} (pass rotary_start="
                        f"{spec.rotary_start} if intended)")
    if expected.get("output_pairing") != spec.output_pairing:     # by default, pairs written back in place
        want = expected.get("output_pairing") or "in place"
        shown = ", ".join(f"{p}->{o}" for p, o in zip(spec.pairs[:2], (spec.output_pairs or spec.pairs)[:2]))
        problems.append(f"output_pairing: expected pairs written {want}, found {spec.output_pairing or 'in place'} "
                        f"({shown}, ...)")
    if "offset" in expected:
        problems += _compare_offset(expected["offset"], spec)
    want_freqs, want_scale = _expected_frequencies(expected, spec)
    freq_problems = [] if want_freqs is None else _compare_frequencies(want_freqs, spec)
    if freq_problems and expected.get("rope_type") == spec.rope_type == "dynamic":   # name the parameter
        freq_problems += [f"{k}: expected {_num(expected[k])}, found {_num(spec.rope_params[k])}"
                          for k in ("factor", "max_position_embeddings") if expected.get(k, spec.rope_params[k])
                          != spec.rope_params[k]]
    problems += freq_problems
    if "norm_scale" in expected:
        want_scale = expected["norm_scale"]
    scale_tol = max(_scale_tol(spec), FREQ_ULPS * 2.0**-24)   # the expected factor may be a float32 one
    if want_scale is not None and abs(spec.norm_scale / want_scale - 1) > scale_tol:
        hint = " (attention factor not applied?)" if math.isclose(spec.norm_scale, 1.0, rel_tol=scale_tol) else ""
        problems.append(f"norm_scale: expected {want_scale:.6g}, found {spec.norm_scale:.6g}{hint}")
    if "rope_type" in expected and want_freqs is None and expected["rope_type"] != spec.rope_type:
        problems.append(f"rope_type: expected {expected['rope_type']}, found {spec.rope_type} "
                        f"{_short(spec.rope_params)}")
    if spec.stateful:
        problems.append("state: fn keeps state between calls (its output for the same input changed after calls on "
                        "more rows): its frequencies at one length depend on the calls before")
    if phase_atol is not None and spec.phase_error > phase_atol:
        problems.append(f"angle precision: angles deviate from (offset + row) * theta by up to "
                        f"{spec.phase_error:.2g} rad (> phase_atol={phase_atol:g})")
    elif phase_atol is None and spec.angle_precision not in _RELIABLE:
        problems.append(f"angle precision: angles behave like {spec.angle_precision} (errors up to "
                        f"{spec.phase_error:.2g} rad); " + (
                            f"they come with norm errors up to {spec.scale_error:.2g}: cos/sin or the output rounded "
                            "to a 16-bit type (cos.to(x.dtype)?); pass phase_atol= to accept that precision"
                            if spec.output_rounded else "compute angles in float32 or better"))
    if problems:
        raise AssertionError("RoPE mismatch:\n  " + "\n  ".join(problems) + f"\nidentified: {spec}")
    return spec


def _from_config(config, d, expected):
    """Expectations from a RopeConfig-like object (duck-typed); explicit keywords win."""
    names = ("head_dim", "rotary_dim", "pairing", "base", "rope_type", "params", "attention_factor")
    missing = [n for n in names if not hasattr(config, n)]
    if missing:
        raise TypeError(f"config must be a RopeConfig (rope_ref.from_hf_config) or have its attributes; "
                        f"{type(config).__name__} lacks {missing}")
    want = dict(pairing=config.pairing, rotary_dim=config.rotary_dim, base=config.base,
                norm_scale=config.attention_factor)
    want.update({k: getattr(config, k) for k in ("rotary_start", "output_pairing") if hasattr(config, k)})
    if "rope_type" not in expected and "inv_freq" not in expected:
        want.update(rope_type=config.rope_type, **dict(config.params))
    want.update(expected)
    return (config.head_dim if d is None else d), want


def _check_expected(expected):
    """Expected values are the right kind of thing, named when not."""
    def real(name, positive):
        v = expected[name]
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v):
            raise TypeError(f"{name} must be a finite real number, got {v!r} of type {type(v).__name__}")
        if positive and v <= 0:
            raise ValueError(f"{name} must be > 0, got {v}")
    if "offset" in expected:
        real("offset", positive=False)
    if "norm_scale" in expected:
        real("norm_scale", positive=True)
    if "base" in expected:
        val.check_base(expected["base"])
    if "pairing" in expected and expected["pairing"] not in ("interleaved", "half", "other"):
        raise ValueError(f"pairing must be 'interleaved', 'half' or 'other', got {expected['pairing']!r}"
                         f"{val.closest_name(expected['pairing'], ('interleaved', 'half', 'other'))}")
    if "rotary_dim" in expected:
        val.check_d(expected["rotary_dim"], "rotary_dim")
    if "rotary_start" in expected:
        v = expected["rotary_start"]
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 0:
            raise ValueError(f"rotary_start must be a non-negative integer (the first rotated feature), got {v!r}")
    if "output_pairing" in expected and expected["output_pairing"] not in (None, "interleaved", "half", "other"):
        raise ValueError(f"output_pairing must be None (pairs written in place), 'interleaved', 'half' or 'other', "
                         f"got {expected['output_pairing']!r}"
                         f"{val.closest_name(str(expected['output_pairing']), ('interleaved', 'half', 'other'))}")
    if "rope_type" in expected and expected["rope_type"] not in scaling.ROPE_TYPES:
        raise ValueError(f"rope_type must be one of {scaling.ROPE_TYPES}, got {expected['rope_type']!r}"
                         f"{val.closest_name(expected['rope_type'], scaling.ROPE_TYPES)}")


def _compare_offset(want, spec):
    diff = spec.offset - want
    alts = np.asarray(spec.offset_alternatives, float)
    if np.any(np.abs(alts - want) <= max(SIGMAS * spec.offset_resolution, 1e-9)) and abs(diff) > 0:
        return [f"offset: expected row 0 at position {_num(float(want))}: it fits the angles, but so do "
                f"{_num(spec.offset)} (reported) and {len(spec.offset_alternatives) - 1} other offsets: not "
                f"determined by these rotations (see the note)"]
    if abs(diff) <= max(SIGMAS * spec.offset_resolution, 1e-9):
        if spec.offset_resolution <= OFFSET_SIGMA or want != round(want):
            return []
        return [f"offset: expected row 0 at position {_num(float(want))}, measured {spec.offset:.7g} +- "
                f"{spec.offset_resolution:.2g}: not resolved to one position from {spec.rows} rows (pass a "
                "larger max_rows if fn accepts more rows)"]
    if spec.offset == 0:
        why = " (kernel ignores its cache offset?)"
    elif abs(abs(diff) - 1) <= max(SIGMAS * spec.offset_resolution, 1e-9):
        why = " (positions off by one?)"
    else:
        why = f" (positions shifted by {_num(diff)})"
    return [f"offset: expected row 0 at position {_num(float(want))}, found {_num(spec.offset)}{why}"]


def _expected_frequencies(expected, spec):
    if "inv_freq" in expected:
        return np.asarray(expected["inv_freq"], float), None
    params = {k: v for k, v in expected.items() if k not in _SPEC_KEYS}
    if "base" not in expected and "rope_type" not in expected and not params:
        return None, None
    r = expected.get("rotary_dim", spec.rotary_dim)
    if expected.get("rope_type") in ("dynamic", "longrope") and "seq_len" not in params:
        params["seq_len"] = max(int(round(expected.get("offset", spec.offset))) + spec.rows, 1)
    freqs, att = scaled_inv_freq(r, expected.get("base", 10000.0),
                                 rope_type=expected.get("rope_type", "default"), **params)
    return freqs, att


def _compare_frequencies(want, spec):
    found = spec.inv_freq
    if want.shape != found.shape:
        return [f"frequencies: expected {want.size} pairs, found {found.size}"]
    tol = spec.freq_tolerance
    rel = np.abs(found / want - 1)
    bad = np.flatnonzero(rel > tol)
    if bad.size == 0:
        return []
    msg = "frequencies: " + "; ".join(f"pair {p} expected {want[p]:.6g}, found {found[p]:.6g}" for p in bad[:3])
    if np.all(np.abs(found / -want - 1) <= tol):
        msg += " (every sign flipped: rotation is clockwise)"
    elif len(want) > 1 and np.all(np.abs(found / (want * (want[1] / want[0])) - 1) <= tol):
        msg += " (found theta_i = expected theta_{i+1}: indexed from 1?)"
    elif np.all(np.abs(found / frequencies(len(want) * 2, 10000.0) - 1) <= tol):
        msg += " (found the default base 10000: base left at 10^4?)"
    return [msg + f"; {bad.size} of {want.size} pairs differ (tolerance {tol:.1e} relative); found base "
            f"{_num(spec.base)}, rope_type {spec.rope_type} {_short(spec.rope_params)}"]
