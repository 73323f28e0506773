"""Black-box identification of a multi-axis RoPE kernel (M-RoPE, 2-D axial, RoPE-Mixed): the frequency matrix
``F`` ``(rotary_dim/2, A)`` by which pair j turns ``sum_a F[j, a] * p_a`` (eq 34 per pair; 1-D RoPE is A = 1)
and its naming (the axis of each pair, sections, M-RoPE layout, bases).  How: docs/identify_internals.md."""

from __future__ import annotations

import numpy as np

from .._validate import check_number, check_positive_int
from ..forms import wrap_angle
from ..multiaxis import MROPE_LAYOUTS
from .angles import angle_precision, line_through_zero, rounding_allowance
from .naming import _aliasing, geometric_base
from .probe import Caller, check_probe_arguments, check_sizes, read_rotations
from .spec import AxesSpec, runs, show_shifts
from .tolerances import FREQ_ULPS, MAX_AXES, MAX_BYTES, MAX_POSITION, NOISE_ULPS, SIGMAS, TIMEOUT

_FN_SHAPES = ("identify_axes calls fn(x, positions): x float64 of shape (seq, d), positions int64 of shape "
              "(axes, seq), row r at positions[:, r]; wrap a kernel taking torch (batch, heads, seq, d) and "
              "position ids (axes, batch, seq) as lambda x, p: kernel(torch.from_numpy(x)[None, None], "
              "torch.from_numpy(p)[:, None])[0, 0]")


def min_rows(axes: int) -> int:
    """Fewest rows ``seq`` identify_axes needs for ``axes`` axes: the base row, 3 steps per axis, 2 mixed rows."""
    return 1 + 3 * axes + 2


def _design(axes, seq, max_position, rng):
    """Positions (axes, seq) int64: row 0 at 0; per axis, rows with that axis alone at 1, 2, ..., ``linear`` then
    geometrically on to max_position; the rest random in 0..min(max_position, 63) on every axis."""
    n_mix = max(2, min(8, seq // 8))
    per_axis = (seq - 1 - n_mix) // axes
    linear = min(max(3, per_axis // 2), max_position)
    far = np.unique(np.round(np.geomspace(2 * linear, max_position, max(per_axis - linear, 1))).astype(np.int64))
    far = far[(far > linear) & (far <= max_position)][:per_axis - linear] if max_position > linear else far[:0]
    steps = np.concatenate([np.arange(1, linear + 1), far]).astype(np.int64)
    sweeps = [1 + a * len(steps) + np.arange(len(steps)) for a in range(axes)]
    positions = np.zeros((axes, seq), np.int64)
    for a, rows in enumerate(sweeps):
        positions[a, rows] = steps
    mixed = np.arange(1 + axes * len(steps), seq)
    positions[:, mixed] = rng.integers(0, min(max_position, 63) + 1, size=(axes, len(mixed)))
    return positions, steps, linear, sweeps, mixed


def _check_inputs(fn, d, axes, seq, seed, max_position, max_bytes, axis_names, timeout):
    axes = check_positive_int(axes, "axes")
    if axes > MAX_AXES:
        raise ValueError(f"axes must be at most {MAX_AXES} (the position axes fn reads: 3 for M-RoPE, 2 for a "
                         f"2-D grid), got {axes}")
    d, seq, seed, timeout = check_probe_arguments(fn, d, seq, seed, timeout, min_rows(axes),
                                                  "as fn(x, positions) -> rotated x",
                                                  f"rows for {axes} axes (the base row, 3 steps per axis, 2 rows "
                                                  "mixing the axes)")
    check_sizes(seq, d, max_bytes)
    max_position = check_number(max_position, "max_position", ">= 3 and an integer up to 2**53 (positions 1, 2, 3 "
                                "on each axis; float64 holds each position exactly)", lambda v: 3 <= v <= 2**53)
    if axis_names is None:              # transformers' M-RoPE order (t, h, w) and a grid's (h, w)
        axis_names = {1: ("p",), 2: ("h", "w"), 3: ("t", "h", "w")}.get(axes, tuple(f"axis{a}" for a in range(axes)))
    if isinstance(axis_names, str) or not all(isinstance(n, str) and n for n in axis_names):
        raise TypeError(f"axis_names must be a sequence of {axes} non-empty strings (e.g. ('t', 'h', 'w')), got "
                        f"{axis_names!r}")
    if len(tuple(axis_names)) != axes or len(set(axis_names)) != axes:
        raise ValueError(f"axis_names must hold {axes} distinct names, one per axis, got {tuple(axis_names)!r}")
    return d, axes, seq, seed, max_position, tuple(axis_names), timeout


def identify_axes(fn, d: int, axes: int, *, seq: int = 64, seed: int = 0, max_position: int = MAX_POSITION,
                  axis_names=None, max_bytes: int = MAX_BYTES, timeout: float | None = TIMEOUT) -> AxesSpec:
    """Measure the frequency matrix ``F`` ``(rotary_dim/2, axes)`` of a multi-axis RoPE kernel: an :class:`AxesSpec`.

    ``fn(x, positions) -> y``: ``x`` float64 ``(seq, d)``, ``positions`` int64 ``(axes, seq)``; ``y`` of x's shape,
    row r rotated as at positions[:, r].  Calls fn d + 5 times, at positions up to ``max_position`` (the largest
    fn accepts) on each axis; ``axis_names`` for the reports; ``max_bytes``, ``timeout`` as for
    :func:`rope_ref.identify`.  Positions fn shifts (Qwen-Image's centred ids) give ``position_shift``.

    >>> import numpy as np, rope_ref as rr
    >>> theta = 10000.0 ** (-np.arange(0, 8, 2) / 8)                        # 4 pairs
    >>> F = np.zeros((4, 2)); F[:2, 0] = theta[:2]; F[2:, 1] = theta[2:]    # pairs 0-1 turn with h, 2-3 with w
    >>> spec = identify_axes(lambda x, p: rr.rotate(x, p, inv_freq=F, pairing="half"), 8, 2)
    >>> spec.form, spec.pairing, spec.sections, spec.mrope_layout, bool(np.allclose(spec.inv_freq, F))
    ('M-RoPE', 'half', (2, 2), 'blocks', True)
    """
    d, axes, seq, seed, max_position, names, timeout = _check_inputs(fn, d, axes, seq, seed, max_position, max_bytes,
                                                                     axis_names, timeout)
    rng = np.random.default_rng(seed)
    positions, steps, linear, sweeps, mixed = _design(axes, seq, max_position, rng)
    call = Caller(fn, positions, timeout=timeout)
    read = read_rotations(call, *rng.standard_normal((2, seq, d)), f"; {_FN_SHAPES}; is d={d} the width fn rotates?")
    done = dict(axes=axes, axis_names=names, positions=positions, calls=call.calls)
    if isinstance(read, str):
        return AxesSpec(is_rope=False, reason=read, **done)
    structure = read[0]
    if structure.output_pairing is not None:
        return AxesSpec(is_rope=False, reason="the rotated pairs are written to other features (output feature "
                        f"{structure.output_pairs[0][0]} holds pair {structure.pairs[0]}): identify_axes follows pairs "
                        "written back in place only", **done)
    shared = ("pairing", "pairs", "rotary_dim", "rotary_start", "norm_scale", "scale_error", "notes")
    spec = AxesSpec(is_rope=True, **{name: getattr(structure, name) for name in shared}, **done)
    return _measure(spec, np.arctan2(structure.sin, structure.cos), steps, linear, sweeps, mixed, call)


def _fit_axis(wrapped, steps, linear, unit, out_err):
    """(slope, its standard deviation, residuals, used mask) through 0 of the angles ``wrapped`` (points, pairs) at
    ``steps``: the first ``linear`` unwrapped, each farther one's turns predicted, used when sure to a quarter turn."""
    n, npairs = wrapped.shape
    p = steps.astype(float)[:, None] * np.ones((1, npairs))
    ang = np.zeros_like(wrapped)
    ang[:linear] = np.unwrap(np.vstack([np.zeros((1, npairs)), wrapped[:linear]]), axis=0)[1:]
    used = np.zeros((n, npairs), bool)
    used[:linear] = True
    slope, sigma, resid = line_through_zero(p, ang, used)
    for k in range(linear, n):
        pred = slope * p[k]
        spread = SIGMAS * sigma * p[k] + rounding_allowance(unit, pred, out_err)
        ang[k] = wrapped[k] + 2 * np.pi * np.round((pred - wrapped[k]) / (2 * np.pi))
        used[k] = spread < np.pi / 2
        slope, sigma, resid = line_through_zero(p, ang, used)
    return slope, np.maximum(sigma, 2.0**-52 * np.abs(slope)), resid, used


def _measure(spec, phase, steps, linear, sweeps, mixed, call):
    """The frequency matrix, shift, tolerances, float type and naming from ``phase`` ``(seq, pairs)``; else not RoPE."""
    names, unit = spec.axis_names, call.unit         # the coarsest rounding fn's output type explains
    # cos/sin or the output rounded to 16 bits errs in angle and norm alike; relative to the base row's, twice
    out_err = 4 * spec.scale_error if spec.scale_error > 2.0**-16 else 0.0
    spec.phase_at_zero = float(np.abs(phase[0]).max())
    fits = [_fit_axis(wrap_angle(phase[rows] - phase[0]), steps, linear, unit, out_err) for rows in sweeps]
    freqs = np.stack([fit[0] for fit in fits], axis=1)          # (pairs, axes)
    sigma = np.stack([fit[1] for fit in fits], axis=1)
    spec.rotated_at_zero = bool(spec.phase_at_zero > rounding_allowance(unit, 0.0, out_err / 2))
    shift, spec.shift_tolerance = _shift(freqs, sigma, phase[0], unit, out_err)
    spec.position_shift = shift if spec.rotated_at_zero else None
    # Rounding errs with the absolute angle F (p + s) (unsolved, the angle at 0 is known modulo 2 pi only)
    at_zero = np.abs(freqs @ spec.position_shift if spec.position_shift else phase[0])
    worst, resid_all, angle_all = [], [], []        # worst: (excess over the allowance, message) of each check
    for a, (_, _, resid, used) in enumerate(fits):
        angle = np.outer(steps, freqs[:, a])
        absolute = np.abs(angle) + 2 * at_zero             # |F (p + s)| + the base row's |F s|
        allow = rounding_allowance(unit, absolute, out_err)
        resid_all.append(resid[used])
        angle_all.append(absolute[used])
        excess = np.where(used, np.abs(resid) - allow, -np.inf)
        k, j = np.unravel_index(int(np.argmax(excess)), excess.shape)
        far = _far_angle(resid[excess[:, j] > 0, j], steps[excess[:, j] > 0], unit)
        if far:
            worst.append((excess[k, j] / allow[k, j], (
                f"the angles alias or are shifted far: along {names[a]} pair {j} (features {spec.pairs[j]}) strays "
                f"from its line by up to {np.abs(resid[:, j]).max():.2g} rad at random, as {call.precision} rounding "
                f"does to angles of some {far:.2g} rad or more, far beyond the line's: the pair turns by more than pi "
                "per position step (normalised or scaled coordinates? at integer positions its frequency is then "
                "known only modulo 2 pi), or fn shifts its positions further than the slowest pair tells; give fn "
                "unscaled, unshifted positions")))
        elif excess[k, j] > 0:
            worst.append((excess[k, j] / allow[k, j], (
                f"not a rotation linear in positions: along {names[a]} (the other axes at 0) pair {j} (features "
                f"{spec.pairs[j]}) turns by {resid[k, j] + angle[k, j]:.7g} rad at {names[a]} = {steps[k]}, where the "
                f"line through the other positions 0..{steps[used[:, j]].max()} gives {angle[k, j]:.7g} (off by "
                f"{abs(resid[k, j]):.2g} rad; {call.precision} rounding allows {allow[k, j]:.2g})")))
    # Rows at combinations of all axes: the angles must add up.
    mixed_positions = spec.positions[:, mixed].T.astype(float)  # (rows, axes)
    pred = mixed_positions @ freqs.T                            # (rows, pairs)
    meas = phase[mixed] - phase[0]
    resid = wrap_angle(meas - pred)
    terms = np.abs(mixed_positions) @ np.abs(freqs.T) + 2 * at_zero
    allow = rounding_allowance(unit, terms, out_err) + SIGMAS * (mixed_positions @ sigma.T)
    excess = np.abs(resid) - allow
    k, j = np.unravel_index(int(np.argmax(excess)), excess.shape)
    if excess[k, j] > 0:
        at = ", ".join(f"{n}={int(v)}" for n, v in zip(names, mixed_positions[k]))
        worst.append((excess[k, j] / allow[k, j], (
            f"not a rotation linear in positions: the angles are linear along each axis alone but do not add up "
            f"across axes: at {at} pair {j} (features {spec.pairs[j]}) turns by {wrap_angle(meas[k, j]):.7g} rad, "
            f"sum_a F[j, a] p_a gives {wrap_angle(pred[k, j]):.7g} (mod 2 pi; off by {abs(resid[k, j]):.2g} rad, "
            f"{call.precision} rounding allows {allow[k, j]:.2g})")))
    if worst:
        return AxesSpec(is_rope=False, reason=max(worst, key=lambda w: w[0])[1], axes=spec.axes,
                        axis_names=names, positions=spec.positions, calls=spec.calls, notes=spec.notes)
    resid_all = np.concatenate([*resid_all, resid.ravel()])
    angle_all = np.concatenate([*angle_all, terms.ravel()])
    spec.phase_error = float(np.abs(resid_all).max()) if resid_all.size else 0.0
    spec.angle_precision, prec_unit = angle_precision(resid_all, angle_all)
    if out_err and prec_unit > 2.0**-24 and angle_precision(resid_all, angle_all, out_err)[1] <= 2.0**-24:
        spec.angle_precision, prec_unit = "float32 (cos/sin or output rounded to 16 bits)", 2.0**-24
        spec.notes.append(f"the angle errors (up to {spec.phase_error:.2g} rad) come with norm errors (up to "
                          f"{spec.scale_error:.2g}): cos/sin or the output rounded to a 16-bit type")
    pu = np.stack([np.where(fit[3], steps[:, None].astype(float), 0.0) for fit in fits], axis=2)
    bias = out_err * pu.sum(0) / (pu * pu).sum(0)   # the most an error out_err at every point moves a slope
    spec.inv_freq, spec.freq_sigma = freqs, sigma
    spec.freq_tolerance = SIGMAS * sigma + FREQ_ULPS * prec_unit * np.abs(freqs) + bias
    _name_axes(spec, nonzero=np.abs(freqs) > SIGMAS * sigma)
    if spec.rotated_at_zero:
        j = int(np.argmax(np.abs(phase[0])))
        why = ("fn shifts the positions by " + show_shifts(names, spec.position_shift) if spec.position_shift
               else "are its positions shifted?")
        spec.notes.append(f"at position 0 on every axis fn already turns pair {j} by {phase[0, j]:.6g} rad "
                          f"(up to {spec.phase_at_zero:.2g} rad over the pairs): {why}; the frequencies are measured "
                          "from that rotation")
    return spec


def _far_angle(resid, steps, unit):
    """The angle whose rounding explains one pair's residuals ``resid`` at ``steps``, when above pi per step and they
    look like rounding (three or more, signs flipping between a third of neighbours, unlike a clamp); else None."""
    signs = np.sign(resid)
    if resid.size < 3 or np.mean(signs[1:] != signs[:-1]) < 1 / 3:
        return None
    per_step = np.abs(resid) / (NOISE_ULPS * unit * steps)
    return float(np.abs(resid).max() / (NOISE_ULPS * unit)) if per_step.max() > np.pi else None


def _shift(freqs, sigma, phase_at_zero, unit, out_err):
    """(s or None when none fits, the tolerance on each s_a): the shift s ``(axes,)`` with phase_at_zero[j] = sum_a
    F[j, a] s_a (mod 2 pi), least squares from the slowest pair on; s_a an integer when resolved to one."""
    order = np.argsort(np.abs(freqs).sum(1), kind="stable")
    unwrapped = np.zeros_like(phase_at_zero)
    shift = np.zeros(freqs.shape[1])
    for k, j in enumerate(order):
        unwrapped[j] = phase_at_zero[j] + 2 * np.pi * np.round((freqs[j] @ shift - phase_at_zero[j]) / (2 * np.pi))
        shift = np.linalg.lstsq(freqs[order[:k + 1]], unwrapped[order[:k + 1]], rcond=None)[0]
    allow = rounding_allowance(unit, 2 * np.abs(freqs @ shift), out_err) + SIGMAS * sigma @ np.abs(shift) + 1e-9
    tolerance = np.abs(np.linalg.pinv(freqs)) @ allow
    near = np.round(shift)
    shift = np.where((np.abs(shift - near) <= tolerance) & (tolerance < 0.5), near, shift)
    fits = bool(np.all(np.abs(wrap_angle(freqs @ shift - phase_at_zero)) <= allow))
    return (tuple(float(s) for s in shift) if fits else None), tuple(float(t) for t in tolerance)


def _rounded_base(theta, denominator, rtol):
    """base with theta_k = base^(-k/denominator) (eq 15) within ``rtol`` per pair, to the fewest digits; else None."""
    theta, rtol = np.abs(np.asarray(theta, float)), np.maximum(rtol, 4 * FREQ_ULPS * 2.0**-24)
    if theta.size < 2 or not np.all(theta > 0) or np.any(np.abs(theta[0] - 1) > rtol[0]):
        return None
    base = geometric_base(theta, 2 * denominator, rtol)
    k = np.arange(theta.size)
    return next((nice for nice in (float(f"{base:.{digits}g}") for digits in range(1, 17))
                 if np.all(np.abs(theta / nice ** (-k / denominator) - 1) <= rtol)), None)


def classify(freqs, nonzero=None):
    """(form, axis_of_pair, sections, mrope_layout) of F (pairs, axes); entries ``nonzero`` False count as zero."""
    freqs = np.asarray(freqs, float)
    nonzero = freqs != 0 if nonzero is None else nonzero
    if not np.all(nonzero.sum(1) == 1):
        return "mixed", None, None, None
    axis = np.argmax(nonzero, axis=1)
    sections = tuple(int(n) for n in np.bincount(axis, minlength=freqs.shape[1]))
    if sum(n > 0 for n in sections) == 1:
        return "1-D", axis, sections, None
    if not np.all(np.diff(np.abs(freqs[np.arange(len(axis)), axis])) < 0):
        return "axial", axis, sections, None
    layout = next((name for name, (assign_axes, _) in MROPE_LAYOUTS.items()
                   if np.array_equal(axis, assign_axes(sections))), None)
    return "M-RoPE", axis, sections, layout


def _name_axes(spec, nonzero):
    """The form, sections, layout and bases of ``spec.inv_freq`` on ``spec``; notes on odd layouts, axes, signs."""
    freqs, names, axes = spec.inv_freq, spec.axis_names, range(spec.axes)
    spec.form, axis, spec.sections, spec.mrope_layout = classify(freqs, nonzero)
    spec.axis_of_pair = axis
    if spec.form in ("1-D", "M-RoPE"):
        theta = np.abs(freqs[np.arange(len(freqs)), axis])
        spec.base = _rounded_base(theta, spec.rotary_dim / 2, spec.freq_tolerance[np.arange(len(freqs)), axis] / theta)
        if spec.form == "M-RoPE" and spec.mrope_layout is None:
            spec.notes.append(f"each pair turns with one axis and the pairs share one spectrum, but the axes are "
                              f"laid out in none of the known layouts {tuple(MROPE_LAYOUTS)}: {runs(axis, names)}")
    elif spec.form == "axial":
        rel = spec.freq_tolerance / np.maximum(np.abs(freqs), 1e-300)
        spec.axis_bases = tuple(_rounded_base(freqs[axis == a, a], spec.sections[a], rel[axis == a, a])
                                if spec.sections[a] else None for a in axes)
    if axis is not None:
        unused = [names[a] for a in axes if spec.sections[a] == 0]
        if unused:
            spec.notes.append(f"no pair turns with {', '.join(unused)}: fn ignores "
                              f"{'that axis' if len(unused) == 1 else 'those axes'}")
        # the 1-D probe's aliasing note, rows one step apart along an axis
        aliased = {names[a]: note for a in axes if spec.sections[a] and (note := _aliasing(freqs[axis == a, a]))}
        if aliased:
            spec.notes.append(f"along {', '.join(aliased)} (pairs counted within the axis): "
                              f"{next(iter(aliased.values()))}")
    flipped = [names[a] for a in axes if np.any(freqs[:, a] < 0) and not np.any(freqs[:, a] > 0)]
    if flipped:
        spec.notes.append(f"every frequency along {', '.join(flipped)} is negative: the kernel turns clockwise in "
                          f"{'that axis' if len(flipped) == 1 else 'those axes'} (eq 34 turns counter-clockwise)")
