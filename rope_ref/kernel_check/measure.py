"""What a 1-D kernel ``fn(x)`` does, measured: its pairs, its angle table (pair x row), and what that table is: linear
with one offset, rounded like a float type, a geometric family (a base), a scaling method's; nothing it cannot tell."""

from __future__ import annotations

import math
from types import SimpleNamespace

import ml_dtypes  # noqa: F401 (numpy knows the type name "bfloat16" from it)
import numpy as np

from .._validate import check_number, check_positive_real
from ..forms import frequencies, wrap_angle
from ..scaling import SCALING_METHODS, scaled_inv_freq
from .probe import PRECISIONS, Caller, check_probe_arguments, read_rotations
from .spec import RopeSpec

NOISE_ULPS = 8              # rounding to unit roundoff u errs by at most NOISE_ULPS * u * (1 + |angle|)
FREQ_ULPS = 64              # a measured frequency carries a few roundings: FREQ_ULPS * u relative
SIGMAS = 6.0                # agreement: within SIGMAS standard deviations
MAX_OFFSET = 2**24          # |offset| searched: float32 holds every integer up to it
MAX_ROWS = 4096             # default max_rows: the longest call


def rounded_to(values, type_name):
    """float64 ``values`` rounded to "bfloat16" or "float16" (the type's values, as float64)."""
    with np.errstate(over="ignore"):
        return np.asarray(values, np.float64).astype(type_name).astype(np.float64)


def allowance(unit, angle, out_err=0.0):
    """Largest angle error that rounding to unit roundoff ``unit`` explains at |angle| radians, plus ``out_err``."""
    return NOISE_ULPS * unit * (1 + np.abs(angle)) + out_err


def norm_tolerance(scale_error, scale_errors=2):
    """Largest relative difference of two norms that ``scale_errors`` times the measured spread of the pairs' norms
    explains (never below a few float32 roundings)."""
    return max(scale_errors * scale_error, 4e-6)


def precision_of(resid, angle, out_err):
    """(name, unit roundoff) of the finest float type whose rounding explains the residuals; None when none does."""
    return next((p for p in PRECISIONS if np.all(np.abs(resid) <= allowance(p[1], angle, out_err))), None)


def probe_one_axis(call: Caller, d, *, seq=64, seed=0, max_rows=MAX_ROWS, base_hint=None) -> RopeSpec:
    """identify's 1-D measurement through ``call``."""
    d, seq, seed = check_probe_arguments(call.fn, d, seq, seed, 3)
    max_rows = check_number(max_rows, "max_rows", f"an integer >= seq={seq} (the most rows fn accepts)",
                            lambda v: v >= seq)
    base_hint = None if base_hint is None else check_positive_real(base_hint, "base_hint", "None or a positive base")
    rng = np.random.default_rng(seed)
    found = read_rotations(call, *rng.standard_normal((2, seq, d)))
    if isinstance(found, str):
        return RopeSpec(is_rope=False, reason=found)
    out, short = found.pop("out"), found.pop("angle")
    spec = RopeSpec(is_rope=True, **found)
    x = np.zeros((max_rows, d))
    x[:, [i for i, _ in spec.pairs]] = 1.0
    y = call(x, f"1 on the first feature of every pair, {max_rows} rows")
    table = np.arctan2(y[:, out[1]], y[:, out[0]])
    norms = np.hypot(y[:, out[1]], y[:, out[0]])
    drift = np.abs(norms / spec.norm_scale - 1).max(axis=1)                                # each row's worst pair
    n = len(spec.pairs)
    if n < d // 2 and spec.pairs == [(p, p + d // 2) for p in range(n)]:    # proportional: the other pairs at 0
        spec.pairs, spec.pairing, spec.rotary_dim = [(p, p + d // 2) for p in range(d // 2)], "half", d
        short, table = (np.hstack([t, np.zeros((len(t), d // 2 - n))]) for t in (short, table))
        spec.notes = []                                                 # no passthrough features: pairs at 0
    # cos/sin or the output rounded to a 16-bit type errs in angle and norm alike
    spec.out_err = max(2 * spec.scale_error if spec.scale_error > 2.0**-16 else 0.0,
                       2 * call.unit if call.unit > 2.0**-24 else 0.0)
    spec.unit, spec.output_precision = call.unit, call.precision
    moved = np.abs(wrap_angle(table[:seq] - short)).max()
    if moved > allowance(2.0**-24, np.abs(table[:seq]).max() + np.pi, 2 * spec.out_err):
        spec.notes.append(f"the angles of rows 0..{seq - 1} change with the number of rows: measured on those")
        table = short
    elif drift.max() > norm_tolerance(spec.scale_error):
        row = int(np.argmax(drift))
        worst = norms[row, np.argmax(np.abs(norms[row] - spec.norm_scale))]
        return RopeSpec(is_rope=False, reason=f"the norm of a pair changes with position: {spec.norm_scale:.6g} on "
                        f"rows 0..{seq - 1}, {worst:.6g} at row {row}")
    spec.table = table
    measure_table(spec, table, base_hint)
    return spec


def measure_table(spec: RopeSpec, table, base_hint=None):
    """Fill ``spec`` from the angle table ``(rows, pairs)`` (wrapped): where it ends, whether rows share positions,
    the offset and frequencies when linear, its precision, the geometric base and the scaling method."""
    rows, steps = len(table), np.diff(table, axis=0)
    still = np.all(steps == 0, axis=1)
    end = int(np.flatnonzero(~still)[-1]) + 2 if (~still).any() else 1        # the first row of the last still run
    jumps = np.abs(wrap_angle(steps - np.median(steps, axis=0))).max(axis=1)
    restart = np.flatnonzero((np.abs(table[1:]).max(axis=1) <= 1e-9) & (jumps > 1e-3))      # back to angle 0
    if end < rows and not still[:end - 1].any():
        spec.table_end = (end - 1.0, "clamped")
    elif restart.size:
        spec.table_end = (float(restart[0]), "repeated")
    if spec.table_end:                  # measured up to its end: its last row, a position once the offset is known
        table = table[:int(spec.table_end[0]) + 1]
    spec.rows = n = len(table)
    if n < 2 or still[:n - 1].any():
        spec.linear = False             # which 16-bit type: the catalogue tells
        spec.notes.append("every row has the same angles: fn ignores the positions" if n < 2 else
                          "rows share positions, as positions held in a 16-bit type do")
        return
    steps = steps[:n - 1]                         # whole turns counted as integers: np.unwrap's sum of 2 pi
    turns = np.cumsum(np.round((wrap_angle(steps) - steps) / (2 * np.pi)), axis=0)
    phase = table + 2 * np.pi * np.vstack([np.zeros((1, table.shape[1])), turns])
    x, centre = np.arange(n) - (n - 1) / 2, phase.mean(axis=0)
    theta = x @ (phase - centre) / (x @ x)
    resid = phase - centre - np.outer(x, theta)
    noise = np.maximum(np.sqrt((resid**2).sum(axis=0) / max(n - 2, 1)), 2.0**-52 * (np.pi + n * np.abs(theta)))
    offset, sigma, also = _locate(theta, centre, noise, n, spec.out_err)
    if also and sigma > 0.5 / SIGMAS:       # several offsets fit, none to a row: the angles do not determine one
        spec.notes.append(f"{len(also) + 1} offsets fit the angles, none to within a row: no offset is determined")
        offset = None
    spec.linear = offset is not None and precision_of(resid, np.abs(np.outer(offset + np.arange(n), theta)) + np.pi,
                                                      spec.out_err) is not None
    if not spec.linear:
        return
    if sigma <= 0.5 / SIGMAS and abs(offset - round(offset)) <= max(SIGMAS * sigma, 1e-9):
        offset = float(round(offset))
    if also:
        spec.notes.append(f"the offset is ambiguous: {len(also) + 1} offsets fit the angles (reported the smallest; "
                          f"also {', '.join(f'{o:.1f}' for o in also[:3])})")
    spec.offset = offset
    if spec.table_end:
        spec.table_end = (offset + spec.table_end[0], spec.table_end[1])
        spec.notes.append(f"the cos/sin table stops at position {spec.table_end[0]:g}: rows beyond it are "
                          f"{spec.table_end[1]}")
    m = offset + np.arange(n, dtype=float)
    absolute = phase + 2 * np.pi * np.round(((offset + (n - 1) / 2) * theta - centre) / (2 * np.pi))
    theta = (m @ absolute) / (m @ m)
    resid = absolute - np.outer(m, theta)
    spec.angle_precision, unit = precision_of(resid, np.abs(np.outer(m, theta)), spec.out_err) or ("float32", 2**-24)
    if spec.out_err and unit <= 2.0**-24:
        spec.angle_precision = "float32 (cos/sin 16-bit)"
    spread = np.sqrt((resid**2).sum(axis=0) / max(n - 1, 1) / max(m @ m, 1e-300))
    bias = spec.out_err / max(math.sqrt(float(np.mean(m * m))), 1e-300)
    tau = np.maximum(SIGMAS * spread + bias, FREQ_ULPS * unit * np.abs(theta)) / np.maximum(np.abs(theta), 1e-300)
    spec.inv_freq, spec.freq_tolerance, spec.unit = theta, tau, max(unit, spec.unit if spec.out_err else 0.0)
    describe_frequencies(spec, np.abs(theta), tau, unit, base_hint)


def describe_frequencies(spec, theta, tau, unit, base_hint):
    """base (a geometric family), then the scaling method whose frequencies are the measured ones, when one does."""
    r, moving = spec.rotary_dim, int(np.count_nonzero(theta))

    def reproduces(rope_type, params):
        freqs = method_frequencies(rope_type, params, r)[0]
        return freqs is not None and bool(np.all(np.abs(freqs / theta - 1) <= tau))
    if 1 < moving < len(theta) and not theta[moving:].any():           # Gemma 4's proportional RoPE
        spec.base = shortest_base(theta[:moving], r, tau[:moving])
        if spec.base and np.all(np.abs(frequencies(r, spec.base)[:moving] / theta[:moving] - 1) <= tau[:moving]):
            spec.rope_type, spec.geometric = "proportional", True
            spec.rope_params = dict(base=spec.base, partial_rotary_factor=2 * moving / r)
        return
    if len(theta) < 2 or not np.all(theta > 0):
        spec.rope_type = "default" if len(theta) == 1 and abs(theta[0] - 1) <= tau[0] else "custom"
        spec.base = 10000.0 if spec.rope_type == "default" else None
        return
    spec.base = shortest_base(theta, r, tau)
    spec.geometric = spec.base is not None
    if unit > 2.0**-24 or tau.max() > 0.5:      # too noisy to name a scaling method
        return
    lead = leading_base(theta, r, tau)
    ratio = theta / frequencies(r, lead)
    f_max = float(1 / ratio.min())
    factors = dict.fromkeys([f_max] + [float(f"{f_max:.{k}g}") for k in (1, 2, 3, 4)
                                       if abs(float(f"{f_max:.{k}g}") / f_max - 1) <= tau[int(np.argmin(ratio))]])
    x = -2 * np.arange(len(theta)) / r
    (slope, a), fitted = np.polyfit(x, np.log(theta), 1), float(np.exp((x @ np.log(theta)) / (x @ x)))
    # what scaling methods' candidates read (rope_ref.scaling.ScalingMethod): the base of the leading pairs, the least
    # squares base of log theta_p = -(2p/r) log base, the same with an intercept, the factor dividing the slowest pair
    fit = SimpleNamespace(r=r, base=lead, base_hint=base_hint, tau=tau, linear_fit=np.exp([slope, -a]).tolist(),
                          fitted_base=fitted, factors=tuple(factors) if f_max > 1 + tau.max() else ())
    ranked = sorted(((rank, rope_type, params) for rope_type, method in SCALING_METHODS.items() if method.candidates
                     for rank, params in method.candidates(fit)), key=lambda c: c[0])
    found = {}                          # rope_type -> params of its first candidate that reproduces
    digits = max(1, int(-math.log10(float(tau.max()))))
    for _, rope_type, params in ranked:
        if rope_type in found or not reproduces(rope_type, params):
            continue
        rounded = {k: float(f"{v:.{digits}g}") if isinstance(v, float) else v for k, v in params.items()}
        params = rounded if reproduces(rope_type, rounded) else params
        if params.get("factor") != 1.0:           # a factor of 1 is no scaling: the default method's
            found[rope_type] = params
    if base_hint is not None and not found and np.all(frequencies(r, base_hint) / theta >= 1 - tau):
        factors = (frequencies(r, base_hint) / theta).tolist()       # LongRoPE: per-pair factors of base_hint
        found["longrope"] = dict(base=base_hint, short_factor=factors, long_factor=factors)
    if not found:
        spec.rope_type = "custom"
        spec.notes.append("no scaling method reproduces the frequencies" + (
            "" if spec.geometric else ": not a geometric family (theta_p = theta_0 base^(-2p/d))"))
        return
    (rope_type, params), *_ = found.items()
    spec.rope_type, spec.rope_params, spec.also = rope_type, params, list(found.items())[1:]
    spec.base = spec.base if spec.geometric else float(params["base"])
    factor = method_frequencies(rope_type, params, r)[1]
    if "attention_factor" in SCALING_METHODS[rope_type].optional and abs(spec.norm_scale / (factor or 1) - 1) > 1e-5:
        spec.rope_params = dict(params, attention_factor=spec.norm_scale)


def method_frequencies(rope_type, params, r):
    """(frequencies, attention factor) of a configuration; (None, None) when refused."""
    try:
        return scaled_inv_freq(r, params["base"], rope_type=rope_type, **{k: params[k] for k in params if k != "base"})
    except (ValueError, TypeError):
        return None, None


def leading_base(theta, r, tau):
    """Base of the leading pairs that follow theta_p = theta_0 base^(-2p/r) (eq 15), as YaRN and Llama 3 keep them."""
    last = 1
    for p in range(2, len(theta)):
        rho = (theta[last] / theta[0]) ** (1 / last)
        if abs(theta[p] / (theta[0] * rho**p) - 1) > tau[p] + p / last * (tau[0] + tau[last]):
            break
        last = p
    return float((theta[0] / theta[last]) ** (r / (2 * last)))


def shortest_base(theta, r, tau, from_one=False):
    """The base with theta_p = theta_0 base^(-2p/r) for every pair within ``tau``, to the fewest digits that still
    reproduce it (10000, not 9999.9997); None when the frequencies are not such a family (``from_one``: with theta_0 = 1
    within at least a few float32 roundings, as a multi-axis kernel's pairs)."""
    tau = np.maximum(tau, 4 * FREQ_ULPS * 2.0**-24) if from_one else tau
    if theta.size < 2 or not np.all(theta > 0) or (from_one and abs(theta[0] - 1) > tau[0]):
        return None
    base = leading_base(theta, r, tau)
    k = np.arange(len(theta))
    for digits in range(1, 17):
        nice = float(f"{base:.{digits}g}")
        if nice > 0 and np.all(np.abs(theta / (theta[0] * nice ** (-2 * k / r)) - 1) <= tau + tau[0]):
            return nice
    return None


def _locate(theta, centre, noise, n, out_err):
    """(offset or None, its deviation, the others that fit, nearest first): the smallest offset with (offset + rc)
    theta_p = centre_p (mod 2 pi) for every pair, rc the centre row, from the slowest pair on, for the finest rounding
    that lets every pair agree on one, the noise floors sized for the offset found (rounding grows with the angle)."""
    rc, x2 = (n - 1) / 2, n * (n * n - 1) / 12     # x2: sum of (row - rc)^2
    order = [p for p in np.argsort(np.abs(theta)) if abs(theta[p]) > 1e-12]
    if not order:
        return 0.0, math.inf, []
    p0 = order[0]
    kmax = min(math.ceil((MAX_OFFSET + abs(rc)) * abs(theta[p0]) / (2 * np.pi)) + 1, 100_000)
    for _, unit in PRECISIONS:
        sized = 0.0
        while True:
            biggest = 1 + np.abs(centre) + (sized + n) * np.abs(theta)
            s_theta = np.maximum(noise / np.sqrt(x2), 2 * unit * biggest / n) + 1e-300
            s_centre = np.maximum(noise / np.sqrt(n), unit * biggest) + out_err / 2
            q = (centre[p0] + 2 * np.pi * np.arange(-kmax, kmax + 1)) / theta[p0]
            var_q, worst = (s_centre[p0] ** 2 + (q * s_theta[p0]) ** 2) / theta[p0] ** 2, np.zeros_like(q)
            for p in order[1:]:             # pair p's own estimate, var_p, fused with the one so far, var_q
                var_p = (s_centre[p] ** 2 + (q * s_theta[p]) ** 2) / theta[p] ** 2
                miss = centre[p] - q * theta[p]
                miss -= 2 * np.pi * np.round(miss / (2 * np.pi))       # the angle the prediction misses by
                decidable = (var_q + var_p) * theta[p] ** 2 < (np.pi / 4) ** 2
                worst = np.where(decidable, np.maximum(worst, np.abs(miss / theta[p]) / np.sqrt(var_q + var_p)), worst)
                w = np.where(decidable, var_q / (var_q + var_p), 0.0)
                q, var_q = q + w * miss / theta[p], np.where(decidable, var_q * var_p / (var_q + var_p), var_q)
            ok = np.flatnonzero(worst <= SIGMAS)
            ok = ok[np.argsort(np.abs(q[ok] - rc))]
            if ok.size and abs(q[ok[0]] - rc) <= sized + n or sized >= MAX_OFFSET:
                break
            sized = float(abs(q[ok[0]] - rc)) if ok.size else max(4 * sized, n)
        if ok.size:
            return float(q[ok[0]] - rc), float(np.sqrt(var_q[ok[0]])), (q[ok[1:]] - rc).tolist()
    return None, math.inf, []
