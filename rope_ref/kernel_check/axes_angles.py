"""The angle fits of :func:`~rope_ref.kernel_check.axes_probe.identify_axes`: a line through 0 per pair and axis,
unwrapped step by step then extended to far positions, checked on rows mixing all axes (the angles must add
up: pair j turns by ``sum_a F[j, a] p_a``), the float type the angles behave like, a shift of the positions."""

from __future__ import annotations

import numpy as np

from .angles import angle_precision, line_through_zero, rounding_allowance
from .axes_spec import kept, name_axes, not_axes_rope, show_shifts
from .tolerances import FREQ_ULPS, SIGMAS


def _fit_axis(wrapped, steps, linear, unit, out_err):
    """Slope through 0 of the angles ``wrapped`` (points, pairs; wrapped, relative to position 0) at ``steps``.

    The first ``linear`` steps are 1, 2, ...: unwrapped from step to step.  Each farther step's whole
    turns are predicted from the fit so far, and used only where SIGMAS standard deviations of that
    prediction plus rounding of a ``unit`` float type stay within a quarter turn.
    Returns (slope, its standard deviation, residuals, used mask).
    """
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
        turns = np.round((pred - wrapped[k]) / (2 * np.pi))
        ang[k] = wrapped[k] + 2 * np.pi * turns
        used[k] = spread < np.pi / 2
        slope, sigma, resid = line_through_zero(p, ang, used)
    return slope, np.maximum(sigma, 2.0**-52 * np.abs(slope)), resid, used


def measure(spec, c, s, steps, linear, sweeps, mixed, call):
    positions, names, n_axes = spec.positions, spec.axis_names, spec.axes
    unit = call.unit                                 # the coarsest rounding fn's output type explains
    phase = np.arctan2(s, c)                         # (seq, pairs)
    phase_at_zero = phase[0]
    # Rounding cos/sin or the output (a bfloat16 result handed back as float32) errs in a pair's angle and
    # norm alike; an angle relative to the base row's carries two such errors.
    out_err = 4 * spec.scale_error if spec.scale_error > 2.0**-16 else 0.0
    spec.phase_at_zero = float(np.abs(phase_at_zero).max())
    npairs = len(spec.pairs)
    freqs = np.zeros((npairs, n_axes))
    sigma = np.zeros((npairs, n_axes))
    bias = np.zeros((npairs, n_axes))               # the most an error out_err at every point moves a slope
    worst = []                                      # (excess over the allowance, message) of each check
    resid_all, angle_all = [], []
    for a in range(n_axes):
        wrapped = np.angle(np.exp(1j * (phase[sweeps[a]] - phase_at_zero)))
        freqs[:, a], sigma[:, a], resid, used = _fit_axis(wrapped, steps, linear, unit, out_err)
        angle = np.outer(steps, freqs[:, a])
        pu = np.where(used, steps[:, None].astype(float), 0.0)
        bias[:, a] = out_err * pu.sum(0) / (pu * pu).sum(0)
        resid_all.append(resid[used])
        angle_all.append(angle[used])
        excess = np.where(used, np.abs(resid) - rounding_allowance(unit, angle, out_err), -np.inf)
        k, j = np.unravel_index(int(np.argmax(excess)), excess.shape)
        if excess[k, j] > 0:
            worst.append((excess[k, j] / rounding_allowance(unit, angle[k, j], out_err), (
                f"along {names[a]} (the other axes at 0) pair {j} (features {spec.pairs[j]}) turns by "
                f"{resid[k, j] + angle[k, j]:.7g} rad at {names[a]} = {steps[k]}, where the line through the "
                f"other positions 0..{steps[used[:, j]].max()} gives {angle[k, j]:.7g} (off by "
                f"{abs(resid[k, j]):.2g} rad; {call.precision} rounding allows "
                f"{rounding_allowance(unit, angle[k, j], out_err):.2g})")))
    # Rows at combinations of all axes: the angles must add up.
    mixed_positions = positions[:, mixed].T.astype(float)      # (rows, axes)
    pred = mixed_positions @ freqs.T                            # (rows, pairs)
    meas = phase[mixed] - phase_at_zero
    resid = np.angle(np.exp(1j * (meas - pred)))
    terms = np.abs(mixed_positions) @ np.abs(freqs.T)
    allow = rounding_allowance(unit, terms, out_err) + SIGMAS * (mixed_positions @ sigma.T)
    excess = np.abs(resid) - allow
    k, j = np.unravel_index(int(np.argmax(excess)), excess.shape)
    if excess[k, j] > 0:
        at = ", ".join(f"{n}={int(v)}" for n, v in zip(names, mixed_positions[k]))
        worst.append((excess[k, j] / allow[k, j], (
            f"the angles are linear along each axis alone but do not add up across axes: at {at} pair {j} "
            f"(features {spec.pairs[j]}) turns by {np.angle(np.exp(1j * meas[k, j])):.7g} rad, "
            f"sum_a F[j, a] p_a gives {np.angle(np.exp(1j * pred[k, j])):.7g} (mod 2 pi; off by "
            f"{abs(resid[k, j]):.2g} rad, {call.precision} rounding allows {allow[k, j]:.2g})")))
    if worst:
        worst.sort(key=lambda w: -w[0])
        return not_axes_rope("not a rotation linear in positions: " + worst[0][1], **kept(spec))
    resid_all.append(resid.ravel())
    angle_all.append(terms.ravel())
    resid_all, angle_all = np.concatenate([r.ravel() for r in resid_all]), np.concatenate(
        [t.ravel() for t in angle_all])
    spec.phase_error = float(np.abs(resid_all).max()) if resid_all.size else 0.0
    spec.angle_precision, prec_unit = angle_precision(resid_all, angle_all)
    if out_err and prec_unit > unit and angle_precision(resid_all, angle_all, out_err)[1] <= unit:
        spec.angle_precision, prec_unit = "float32 (cos/sin or output rounded to 16 bits)", 2.0**-24
        spec.notes.append(f"the angle errors (up to {spec.phase_error:.2g} rad) come with norm errors (up to "
                          f"{spec.scale_error:.2g}): cos/sin or the output rounded to a 16-bit type")
    spec.inv_freq, spec.freq_sigma = freqs, sigma
    spec.freq_tolerance = SIGMAS * sigma + FREQ_ULPS * prec_unit * np.abs(freqs) + bias
    name_axes(spec, nonzero=np.abs(freqs) > SIGMAS * sigma)
    if spec.phase_at_zero > rounding_allowance(unit, 0.0, out_err / 2):
        spec.rotated_at_zero = True
        j = int(np.argmax(np.abs(phase_at_zero)))
        spec.position_shift = _shift(spec, phase_at_zero, unit, out_err)
        why = ("fn shifts the positions by " + show_shifts(spec) if spec.position_shift else
               "are its positions shifted?")
        spec.notes.append(f"at position 0 on every axis fn already turns pair {j} by {phase_at_zero[j]:.6g} rad "
                          f"(up to {spec.phase_at_zero:.2g} rad over the pairs): {why}; the frequencies are measured "
                          "from that rotation")
    return spec


def _shift(spec, phase_at_zero, unit, out_err):
    """Per-axis shift s with phase_at_zero[j] = sum_a F[j, a] s_a (mod 2 pi), when each pair turns with one axis:
    read from the axis's slowest pair (no whole turn for |s| < pi / theta_slowest), checked on all of them."""
    if spec.axis_of_pair is None:
        return None
    freqs, shift = spec.inv_freq, []
    for a in range(spec.axes):
        own = np.flatnonzero(spec.axis_of_pair == a)
        if own.size == 0:
            shift.append(0.0)
            continue
        j = own[np.argmin(np.abs(freqs[own, a]))]
        s = phase_at_zero[j] / freqs[j, a]
        if abs(s - round(s)) <= max(SIGMAS * spec.freq_sigma[j, a] * abs(s) / abs(freqs[j, a]), 1e-6):
            s = float(round(s))
        miss = np.angle(np.exp(1j * (freqs[own, a] * s - phase_at_zero[own])))
        allow = (rounding_allowance(unit, freqs[own, a] * s, out_err) + SIGMAS * spec.freq_sigma[own, a] * abs(s)
                 + 1e-9)
        if np.any(np.abs(miss) > allow):
            return None
        shift.append(float(s))
    return tuple(shift)


