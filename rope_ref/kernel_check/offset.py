"""Offset: the position of row 0, solved from the angles modulo 2 pi per pair (as in the Chinese
remainder theorem), and the float type the angles behave like at that offset."""

from __future__ import annotations

import math
from dataclasses import dataclass

import ml_dtypes
import numpy as np

from .angles import RowFit, angle_precision, fit_rows, rounding_allowance
from .tolerances import MAX_OFFSET, OFFSET_SIGMA, SIGMAS


@dataclass
class OffsetFit:
    """Where row 0 is, how well it is known, and the row fit it was solved from."""

    offset: float
    sigma: float                # standard deviation, in positions
    status: str                 # "ok", "ambiguous" (several offsets fit) or "inconsistent" (none does)
    fit: RowFit
    unit: float                 # unit roundoff of the float type the angles behave like


def locate(phase, out_err=0.0) -> OffsetFit:
    """Row fit and offset of the angles ``phase`` (rows, pairs), with the rounding floors grown until they cover
    the offset found (the smallest angle scale that explains the measurements), for the finest float type
    whose rounding explains the residuals there.  With ``out_err`` (cos/sin or the output rounded: radians at
    every row) the angles are first tried as float32 ones plus that error."""
    n = phase.shape[0]
    rows_fit = fit_rows(phase)
    if out_err:
        found, angle = _search_offset(phase, 2.0**-24, out_err)
        float32_explains = np.all(np.abs(rows_fit.resid) <= rounding_allowance(2.0**-24, angle, out_err))
        if found.status != "inconsistent" and float32_explains:
            return found
    widest = (MAX_OFFSET + n) * np.abs(rows_fit.theta) + np.abs(phase).max(axis=0) + np.pi
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
    """Offset with the floors for angles of unit roundoff ``unit`` sized for the offset found;
    returns (OffsetFit, largest |angle| of each pair at that offset)."""
    n = phase.shape[0]
    sized = 0.0
    while True:
        fit = fit_rows(phase, unit, sized, out_err)
        offset, sigma, status, also = solve_offset(fit)
        if (status != "inconsistent" and abs(offset) <= sized + n) or sized >= MAX_OFFSET:
            break
        sized = abs(offset) if status != "inconsistent" else max(4 * sized, n)
    fit.also = also
    angle = (np.abs(np.outer(offset + np.arange(n), fit.theta)) + np.abs(phase)).max(axis=0) + np.pi
    return OffsetFit(offset, sigma, status, fit, unit), angle


def rows_needed(seq, sigma_o, max_rows):
    """Rows for an offset standard deviation OFFSET_SIGMA: it falls as rows^-3/2 (slope of a line fit)."""
    if not math.isfinite(sigma_o):
        return max_rows
    want = seq * (sigma_o / OFFSET_SIGMA) ** (2 / 3)
    return int(min(max_rows, 2 ** math.ceil(math.log2(max(want, 2 * seq)))))


def solve_offset(fit: RowFit, max_candidates=200_000):
    """Offset o with (o + row_centre) * theta_p = centre_p (mod 2 pi) for every pair p, as docs/identify_internals.md
    ("3. The offset") says: (offset, standard deviation, "ok" / "ambiguous" / "inconsistent", the other offsets
    that agree, nearest first)."""
    theta, centre, rc = fit.theta, fit.centre, fit.row_centre
    s_theta, s_centre = fit.sigma_theta, fit.sigma_centre
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



#: Float types a kernel may hold its positions in: significant bits, largest exponent searched.
POSITION_TYPES = (("bfloat16", ml_dtypes.bfloat16, 8, 23), ("float16", np.float16, 11, 15))


def rounded_positions(phase) -> list:
    """The ways positions offset + r rounded to a 16-bit float type make the rows of ``phase`` (rows, pairs) that
    stand still (rotated exactly as the row before: a shared position): (type, first, last position, spacing)
    for each type and binade [2^e, 2^(e+1)) whose rounding stands still at exactly those rows; [] when none does.
    A binade is dropped when the slowest pair's angle at row 0, too small to have wrapped, rules it out."""
    n = len(phase)
    still = np.all(np.diff(phase, axis=0) == 0, axis=1)
    slow = int(np.argmin(np.abs(phase[-1] - phase[0])))                 # the slowest pair
    found = []
    for name, dtype, bits, top in POSITION_TYPES:
        for e in range(bits, top + 1):
            spacing = 2 ** (e + 1 - bits)
            starts = np.unique(np.r_[2**e + np.arange(min(spacing, n)), 2 ** (e + 1) - np.arange(1, n)])
            with np.errstate(over="ignore", invalid="ignore"):          # float16 ends at 65504
                positions = (starts[:, None] + np.arange(n)).astype(np.float32).astype(dtype).astype(np.float64)
                fits = np.all((np.diff(positions, axis=1) == 0) == still, axis=1) & np.isfinite(positions[:, -1])
            if not fits.any():
                continue
            row0 = positions[np.flatnonzero(fits)[0]]
            theta = (phase[-1, slow] - phase[0, slow]) / (row0[-1] - row0[0])
            if 0 < abs(theta) * 2 ** (e + 1) < np.pi and not 0.9 * 2**e <= phase[0, slow] / theta <= 1.1 * 2 ** (e + 1):
                continue                                    # row 0's angle puts it outside this binade
            found.append((name, 2**e, 2 ** (e + 1) - 1, spacing))
    return found
