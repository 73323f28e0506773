"""Angles: straight-line fits of each pair's angle against the row or position, and the float type they behave
like (docs/identify_internals.md, "2. Angles and their float type")."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..forms import wrap_angle
from .tolerances import FREQ_ULPS, NOISE_ULPS, PRECISIONS, SIGMAS


@dataclass
class RowFit:
    """Per-pair straight line through the angles of the rows, about the centre row."""

    theta: np.ndarray           # slope of each pair (radians per row)
    centre: np.ndarray          # angle at the centre row
    row_centre: float
    resid: np.ndarray           # (rows, pairs) residuals about the line
    noise: np.ndarray           # per-pair residual standard deviation (floored)
    sigma_theta: np.ndarray
    sigma_centre: np.ndarray
    also: list = field(default_factory=list)   # other offsets that fit as well (set by the offset search)


@dataclass
class AbsoluteFit:
    """theta_p fitted against the absolute position offset + row."""

    theta: np.ndarray
    resid: np.ndarray
    sigma_theta: np.ndarray


def fit_rows(phase, unit=0.0, offset=0.0, out_err=0.0) -> RowFit:
    """Per-pair straight line through the angles ``phase`` (rows, pairs), about the centre row; the deviations
    are floored by what rounding to a float type of unit roundoff ``unit`` does to angles near (offset + row) *
    theta (consecutive multiples' errors drift together: a slope error up to 2 unit |angle| / rows), and the
    centre's by ``out_err`` radians at every row (cos/sin rounded)."""
    n = phase.shape[0]
    x = np.arange(n) - (n - 1) / 2
    centre = phase.mean(axis=0)
    theta = x @ (phase - centre) / (x @ x)
    resid = phase - centre - np.outer(x, theta)
    biggest = 1 + np.abs(offset + n) * np.abs(theta)      # largest |angle| over the rows, + 1 for cos/sin rounding
    floor = np.maximum(2.0**-52 * (np.pi + n * np.abs(theta)), unit * biggest)
    noise = np.maximum(np.sqrt((resid**2).sum(axis=0) / max(n - 2, 1)), floor)
    sigma_theta = np.maximum(noise / np.sqrt(x @ x), 2 * unit * biggest / n)
    return RowFit(theta=theta, centre=centre, row_centre=(n - 1) / 2, resid=resid, noise=noise,
                  sigma_theta=sigma_theta, sigma_centre=np.maximum(noise / np.sqrt(n), unit * biggest + out_err))


def refit_absolute(phase, offset, fit: RowFit) -> AbsoluteFit:
    """theta_p by least squares on the absolute angle: phase + 2 pi k_p = (offset + row) * theta_p, the whole
    turns k_p decided from the row fit at the centre row (its error falls by about offset / rows)."""
    m = offset + np.arange(phase.shape[0], dtype=float)
    if m @ m == 0:
        return AbsoluteFit(fit.theta, fit.resid, fit.sigma_theta)
    turns = np.round(((offset + fit.row_centre) * fit.theta - fit.centre) / (2 * np.pi))
    theta, sigma, resid = line_through_zero(m[:, None], phase + 2 * np.pi * turns)
    floor = 2.0**-52 * (1 + np.abs(np.outer(m, theta)).max(axis=0))
    return AbsoluteFit(theta, resid, np.maximum(sigma, floor / np.sqrt(m @ m)))


def line_through_zero(positions, angles, used=None):
    """Per-pair slope of the line through 0 that fits ``angles`` (points, pairs) at ``positions`` (points, pairs)
    or (points, 1), by least squares over the points ``used`` (default all): (slope, its standard deviation,
    residuals, 0 where not used).  Both probes fit their frequencies with it."""
    used = np.ones(angles.shape, bool) if used is None else used
    pu, au = np.where(used, positions, 0.0), np.where(used, angles, 0.0)
    slope = (pu * au).sum(0) / (pu * pu).sum(0)
    resid = np.where(used, angles - positions * slope, 0.0)
    dof = np.maximum(used.sum(0) - 1, 1)
    return slope, np.sqrt((resid**2).sum(0) / dof / (pu * pu).sum(0)), resid


def rounding_allowance(unit, angle, out_err=0.0):
    """Largest angle error rounding in a float type of unit roundoff ``unit`` explains at |angle| radians:
    NOISE_ULPS * unit * (1 + |angle|), plus ``out_err`` radians (cos/sin or the output rounded)."""
    return NOISE_ULPS * unit * (1 + np.abs(angle)) + out_err


def angle_precision(resid, angle, out_err=0.0):
    """The finest float type whose rounding (:func:`rounding_allowance`) covers the residuals:
    (name, unit roundoff)."""
    for name, unit in PRECISIONS:
        if np.all(np.abs(resid) <= rounding_allowance(unit, angle, out_err)):
            return name, unit
    return "coarser than bfloat16", 2.0**-4


def freq_tol(theta, sigma_theta, unit, out_err, positions):
    """Relative tolerance on each |theta|: SIGMAS standard deviations, a few roundings of the angles'
    float type, and the bias an angle error out_err at every row can give a line fitted against
    ``positions`` m (through 0): |sum m e| / sum m^2 <= out_err / rms(m)."""
    theta = np.maximum(np.abs(theta), 1e-300)
    bias = out_err / max(math.sqrt(float(np.mean(np.square(positions)))), 1e-300)
    return np.maximum(np.maximum(SIGMAS * sigma_theta / theta, FREQ_ULPS * unit), bias / theta)


def theta_at(phase, offset, unit, out_err=0.0):
    """|theta| refitted against (offset + row) and its relative tolerance, as for the first rows."""
    fit = refit_absolute(phase, offset, fit_rows(phase, unit, offset))
    theta = np.abs(fit.theta)
    return theta, freq_tol(theta, fit.sigma_theta, unit, out_err, offset + np.arange(phase.shape[0]))


def table_end(phase):
    """Where a cos/sin table read row by row runs out in the angles ``phase`` (rows, pairs): (k, "clamped") when
    rows k.. repeat row k - 1 exactly (an index clamped to the table) and no rows before stood still, (k,
    "repeated") at the first row k rotated by exactly 0 in every pair after a step unlike the others (an index
    modulo the table length, starting over at position 0); None otherwise.  Rows 0..k-1 are the table's."""
    steps = np.diff(phase, axis=0)
    still = np.all(steps == 0, axis=1)                         # still[r]: row r + 1 is rotated as row r
    run = int(np.argmin(still[::-1])) if not still.all() else len(still)      # trailing rows standing still
    if 0 < run < len(still) and not still[:-run].any():
        return len(phase) - run, "clamped"
    jumps = np.abs(wrap_angle(steps - np.median(steps, axis=0))).max(axis=1)
    at_zero = np.abs(wrap_angle(phase[1:])).max(axis=1) <= 1e-9
    restart = np.flatnonzero(at_zero & (jumps > 1e-3))
    return (int(restart[0]) + 1, "repeated") if restart.size else None


def uneven_steps(phase, out_err=0.0) -> str | None:
    """How angles ``phase`` (rows, pairs) that are not a line in the row index advance, exact to some float type's
    rounding (float64, float32, float16, bfloat16, plus ``out_err`` radians at every row): "one axis" (rows at
    uneven positions of one axis), "several axes" (pairs advance on different rows, a grid read as flattened
    rows: each pair jumps by one amount), or None when they are not that (a 1-D kernel's rounded angles deviate at
    rows that differ from pair to pair, or by amounts that differ, and within the type's rounding no row
    deviates)."""
    for _, unit in PRECISIONS:
        tol = 2 * rounding_allowance(unit, np.abs(phase).max(axis=0) + np.pi, out_err)      # a step: two roundings
        steps = _row_steps(phase, np.maximum(tol, 1e-9))
        if steps is not None:
            return steps
    return None


def _row_steps(phase, tol):
    """uneven_steps at one rounding: a step deviating by more than ``tol`` (per pair) from its pair's usual one."""
    steps = np.diff(phase, axis=0)
    steps = (steps + np.pi) % (2 * np.pi) - np.pi
    irregular, uniform_jumps = [], True
    for col, col_tol in zip(steps.T, tol):
        mode = np.median(col)
        off = np.abs(col - mode) > col_tol * (1 + abs(mode))
        if off.mean() > 0.5:
            return None
        irregular.append(off)
        uniform_jumps &= not off.any() or np.ptp(col[off]) <= 2 * col_tol * (1 + abs(mode))
    rows = np.any(irregular, axis=0)
    stepping = [off for off in irregular if off.any()]            # one such pair may be a 1-D kernel's rounding
    if len(stepping) < min(2, len(irregular)) or not all(np.array_equal(off, rows) for off in stepping):
        return None
    # one axis: every slow pair's steps are one position step times its theta, shared within the rounding
    slow = [(col, col_tol) for col, col_tol in zip(steps.T, tol) if np.abs(col).max() < np.pi / 2 and col.any()]
    if any(col.sum() == 0 for col, _ in slow):
        return "several axes"
    reference, reference_tol = max(slow, key=lambda pair: abs(pair[0].sum()), default=(None, 0.0))
    for col, col_tol in slow:
        ratio = col.sum() / reference.sum()
        if np.any(np.abs(col - ratio * reference) > 1e-3 * abs(col.sum()) + 2 * (col_tol + reference_tol * abs(ratio))):
            return "several axes" if uniform_jumps else None     # a grid jumps alike at every row it wraps
    return "one axis"
