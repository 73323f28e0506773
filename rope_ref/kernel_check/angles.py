"""Line fits of each pair's angle, the float type they behave like, row 0's position (docs/identify_internals.md)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from ..forms import wrap_angle
from .naming import rounded_to
from .tolerances import FREQ_ULPS, MAX_OFFSET, NOISE_ULPS, PRECISIONS, SIGMAS


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


@dataclass
class OffsetFit:
    """Where row 0 is, how well it is known, and the row fit it was solved from."""
    offset: float
    sigma: float                # standard deviation, in positions
    status: str                 # "ok", "ambiguous" (several offsets fit) or "inconsistent" (none does)
    fit: RowFit
    unit: float                 # unit roundoff of the float type the angles behave like
    also: list = field(default_factory=list)   # the other offsets that fit as well, nearest first


def fit_rows(phase, unit=0.0, offset=0.0, out_err=0.0) -> RowFit:
    """Per-pair straight line through the angles ``phase`` (rows, pairs) about the centre row, its deviations floored by
    rounding to unit roundoff ``unit`` at angles up to (offset + rows) |theta| (the slope's by 2 unit |angle| / rows:
    consecutive multiples' errors drift together), the centre's plus ``out_err`` radians (cos/sin rounded)."""
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


def refit_absolute(phase, offset, fit: RowFit) -> RowFit:
    """``fit`` with theta_p (its residuals, deviation) by least squares on the absolute angle: phase + 2 pi k_p =
    (offset + row) * theta_p, the turns k_p from the row fit at the centre row (its error falls by ~offset / rows)."""
    m = offset + np.arange(phase.shape[0], dtype=float)
    turns = np.round(((offset + fit.row_centre) * fit.theta - fit.centre) / (2 * np.pi))
    theta, sigma, resid = line_through_zero(m[:, None], phase + 2 * np.pi * turns)
    floor = 2.0**-52 * (1 + np.abs(np.outer(m, theta)).max(axis=0))
    return replace(fit, theta=theta, resid=resid, sigma_theta=np.maximum(sigma, floor / np.sqrt(m @ m)))


def line_through_zero(positions, angles, used=None):
    """Per-pair least-squares slope of the line through 0 fitting ``angles`` (points, pairs) at ``positions`` (points,
    pairs or 1) over the points ``used`` (default all): (slope, its standard deviation, residuals, 0 where unused)."""
    used = np.ones(angles.shape, bool) if used is None else used
    pu, au = np.where(used, positions, 0.0), np.where(used, angles, 0.0)
    slope = (pu * au).sum(0) / (pu * pu).sum(0)
    resid = np.where(used, angles - positions * slope, 0.0)
    dof = np.maximum(used.sum(0) - 1, 1)
    return slope, np.sqrt((resid**2).sum(0) / dof / (pu * pu).sum(0)), resid


def rounding_allowance(unit, angle, out_err=0.0):
    """Largest angle error that rounding to unit roundoff ``unit`` explains at |angle| radians, plus ``out_err``."""
    return NOISE_ULPS * unit * (1 + np.abs(angle)) + out_err


def angle_precision(resid, angle, out_err=0.0):
    """The finest float type whose :func:`rounding_allowance` covers the residuals: (name, unit roundoff)."""
    fits = ((name, unit) for name, unit in PRECISIONS
            if np.all(np.abs(resid) <= rounding_allowance(unit, angle, out_err)))
    return next(fits, ("coarser than bfloat16", 2.0**-4))


def freq_tol(fit: RowFit, unit, out_err, offset=None):
    """Relative tolerance on each |theta| of ``fit``: SIGMAS deviations, FREQ_ULPS roundings of the angles' float type,
    and a bias out_err at every row, at most out_err / rms(m) at m = ``offset`` + row (about the centre row if None)."""
    theta = np.maximum(np.abs(fit.theta), 1e-300)
    rows = np.arange(len(fit.resid))
    positions = rows - fit.row_centre if offset is None else offset + rows
    bias = out_err / max(math.sqrt(float(np.mean(np.square(positions)))), 1e-300)
    return np.maximum(np.maximum(SIGMAS * fit.sigma_theta / theta, FREQ_ULPS * unit), bias / theta)


def table_end(phase):
    """Where a cos/sin table runs out in the angles ``phase`` (rows, pairs): (k, "clamped") when rows k.. repeat row
    k - 1 and no row before stood still, (k, "repeated") when row k is at angle 0 after an unusual step; else None."""
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
    """How angles ``phase`` (rows, pairs) exact to some float type's rounding (plus ``out_err``) but not a line in the
    row advance: "one axis" (rows at uneven positions), "several axes" (a grid read as flattened rows), or None."""
    steps = (np.diff(phase, axis=0) + np.pi) % (2 * np.pi) - np.pi
    bound = np.abs(phase).max(axis=0) + np.pi                       # a step: two roundings of angles up to bound
    tols = (np.maximum(2 * rounding_allowance(unit, bound, out_err), 1e-9) for _, unit in PRECISIONS)
    return next(filter(None, (_row_steps(steps, tol) for tol in tols)), None)        # the finest rounding that tells


def _row_steps(steps, tol):
    """uneven_steps at one rounding: a step deviating by more than ``tol`` (per pair) from its pair's usual one."""
    mode = np.median(steps, axis=0)
    band = tol * (1 + np.abs(mode))
    irregular = np.abs(steps - mode) > band                     # (rows - 1, pairs)
    if np.any(irregular.mean(axis=0) > 0.5):
        return None
    uniform_jumps = all(not off.any() or np.ptp(col[off]) <= 2 * width for col, off, width in
                        zip(steps.T, irregular.T, band))
    stepping = irregular[:, irregular.any(axis=0)]              # one such pair may be a 1-D kernel's rounding
    if stepping.shape[1] < min(2, irregular.shape[1]) or np.any(stepping != irregular.any(axis=1)[:, None]):
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


def locate(phase, out_err=0.0) -> OffsetFit:
    """Row fit and offset of the angles ``phase`` (rows, pairs) for the finest float type whose rounding at that offset
    explains the residuals; with ``out_err`` (cos/sin rounded), first as float32 angles plus it."""
    rows_fit = fit_rows(phase)
    if out_err:
        found, angle = _search_offset(phase, 2.0**-24, out_err)
        float32_explains = np.all(np.abs(rows_fit.resid) <= rounding_allowance(2.0**-24, angle, out_err))
        if found.status != "inconsistent" and float32_explains:
            return found
    widest = (MAX_OFFSET + phase.shape[0]) * np.abs(rows_fit.theta) + np.abs(phase).max(axis=0) + np.pi
    _, unit = angle_precision(rows_fit.resid, widest)
    for _ in range(2):
        found, angle = _search_offset(phase, unit)
        _, unit_here = angle_precision(rows_fit.resid, angle)
        if unit_here == unit:
            break
        unit = unit_here
    found.unit = unit
    return found


def _search_offset(phase, unit, out_err=0.0):
    """Offset, the floors for angles of unit roundoff ``unit`` sized for it: (OffsetFit, largest |angle| per pair)."""
    n, sized = phase.shape[0], 0.0         # sized: the |offset| the floors are sized for
    while True:
        fit = fit_rows(phase, unit, sized, out_err)
        offset, sigma, status, also = solve_offset(fit)
        if (status != "inconsistent" and abs(offset) <= sized + n) or sized >= MAX_OFFSET:
            break
        sized = abs(offset) if status != "inconsistent" else max(4 * sized, n)
    angle = (np.abs(np.outer(offset + np.arange(n), fit.theta)) + np.abs(phase)).max(axis=0) + np.pi
    return OffsetFit(offset, sigma, status, fit, unit, also), angle


def solve_offset(fit: RowFit):
    """Offset o with (o + row_centre) * theta_p = centre_p (mod 2 pi) for every pair p: (offset, standard deviation,
    "ok" / "ambiguous" / "inconsistent", the other offsets that agree, nearest first)."""
    theta, centre, rc = fit.theta, fit.centre, fit.row_centre
    s_theta, s_centre = fit.sigma_theta, fit.sigma_centre
    order = [p for p in np.argsort(np.abs(theta)) if abs(theta[p]) > 1e-12]
    if not order:
        return 0.0, math.inf, "ambiguous", []
    p0 = order[0]
    kmax = min(math.ceil((MAX_OFFSET + abs(rc)) * abs(theta[p0]) / (2 * np.pi)) + 1, 100_000)   # candidates
    q = (centre[p0] + 2 * np.pi * np.arange(-kmax, kmax + 1)) / theta[p0]
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
    status = "ok" if ok.size == 1 else "ambiguous" if ok.size else "inconsistent"
    ok = ok[np.argsort(np.abs(offsets[ok]))] if ok.size else [int(np.argmin(worst))]     # else the best compromise
    return float(offsets[ok[0]]), float(np.sqrt(var_q[ok[0]])), status, offsets[ok[1:]].tolist()


#: Float types a kernel may hold its positions in: significant bits, largest exponent searched.
POSITION_TYPES = (("bfloat16", 8, 23), ("float16", 11, 15))


def rounded_positions(phase) -> list:
    """Each 16-bit type and binade [2^e, 2^(e+1)) whose rounding of positions offset + r stands still exactly at the
    rows of ``phase`` (rows, pairs) that do, and row 0's slowest angle allows, in words."""
    n = len(phase)
    still = np.all(np.diff(phase, axis=0) == 0, axis=1)
    slow = int(np.argmin(np.abs(phase[-1] - phase[0])))                 # the slowest pair
    found = []
    for name, bits, top in POSITION_TYPES:
        for e in range(bits, top + 1):
            spacing = 2 ** (e + 1 - bits)
            starts = np.unique(np.r_[2**e + np.arange(min(spacing, n)), 2 ** (e + 1) - np.arange(1, n)])
            with np.errstate(over="ignore", invalid="ignore"):          # float16 ends at 65504
                positions = rounded_to(starts[:, None] + np.arange(n), name)
                fits = np.all((np.diff(positions, axis=1) == 0) == still, axis=1) & np.isfinite(positions[:, -1])
            if not fits.any():
                continue
            row0 = positions[np.flatnonzero(fits)[0]]
            theta = (phase[-1, slow] - phase[0, slow]) / (row0[-1] - row0[0])
            if 0 < abs(theta) * 2 ** (e + 1) < np.pi and not 0.9 * 2**e <= phase[0, slow] / theta <= 1.1 * 2 ** (e + 1):
                continue                                    # row 0's angle puts it outside this binade
            found.append(f"{name} (positions {2**e}..{2 ** (e + 1) - 1} are multiples of {spacing})")
    return found
