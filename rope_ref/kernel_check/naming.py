"""Naming: the base, and the simplest scaling method whose frequencies match to the measured precision."""

from __future__ import annotations

import math
from typing import NamedTuple

import ml_dtypes
import numpy as np

from ..forms import frequencies
from ..scaling import SCALING_METHODS, scaled_inv_freq
from .spec import show_number, show_params
from .tolerances import FREQ_ULPS, NAME_RTOL, PRECISIONS, SIGMAS, TRAIN_LENGTHS

#: 16-bit types an inv_freq buffer is rounded to, coarsest first (in float16's range a bfloat16 value is a float16 one).
ROUNDING_TYPES = {"bfloat16": ml_dtypes.bfloat16, "float16": np.float16}


class FrequencyFit(NamedTuple):
    """Measured frequencies as scaling methods' ``candidates`` read them (rope_ref.scaling.ScalingMethod)."""
    r: int                    # rotated features
    base: float               # geometric_base of the leading pairs
    base_hint: float | None   # the caller's base
    tau: np.ndarray           # relative precision per pair
    fitted_base: float        # least squares of log theta_p = -(2p/r) log base
    linear_fit: tuple         # (base, factor): the same with an intercept, -log factor
    factors: tuple            # the factors dividing the slowest pair: fitted, and rounded where it cannot tell
    train_lengths: tuple      # the usual training lengths


def geometric_base(theta, r, tau):
    """Base from the leading pairs that follow theta_p = theta_0 base^(-2p/r) (eq 15), as YaRN and Llama 3 keep them."""
    last = 1
    for p in range(2, len(theta)):
        rho = (theta[last] / theta[0]) ** (1 / last)
        if abs(theta[p] / (theta[0] * rho**p) - 1) > tau[p] + p / last * (tau[0] + tau[last]):
            break
        last = p
    return float((theta[0] / theta[last]) ** (r / (2 * last)))


def log_fit(theta, r, intercept):
    """Least squares of log theta_p = a - (2p/r) log base (a = 0 unless intercept): (base, factor e^a)."""
    x = -2 * np.arange(len(theta)) / r
    y = np.log(theta)
    slope, a = np.polyfit(x, y, 1) if intercept else ((x @ y) / (x @ x), 0.0)
    return float(np.exp(slope)), float(np.exp(-a))


def method_frequencies(rope_type, params, r, **at):
    """(inverse frequencies, attention factor) of a configuration (``at``: seq_len); (None, None) when refused."""
    kwargs = {k: v for k, v in params.items() if k != "base"}
    try:
        return scaled_inv_freq(r, params["base"], rope_type=rope_type, **kwargs, **at)
    except (ValueError, TypeError):
        return None, None


def rounded_to(freqs, type_name):
    """float64 ``freqs`` as a float32 buffer cast to ``type_name`` holds them (torch's ``.to(torch.bfloat16)``)."""
    return np.asarray(freqs, np.float32).astype(ROUNDING_TYPES[type_name]).astype(np.float64)


def scale_tol(spec):
    """Relative tolerance on norm_scale: its measured spread, or a few roundings of the angles' float type."""
    rounding = 0.0 if spec.output_rounded else FREQ_ULPS * dict(PRECISIONS).get(spec.angle_precision, 2.0**-4)
    return max(SIGMAS * spec.scale_error, rounding)     # cos/sin rounded: the spread measures that rounding


def describe_frequencies(spec, d, base_hint, tau, unit):
    """Names on ``spec`` the base and method of its frequencies known to ``tau`` relative (angles to ``unit``)."""
    proportional = _name_proportional(spec, d, tau)
    if np.all(spec.inv_freq < 0):
        spec.notes.append("every pair rotates clockwise (negative frequencies): the sign of sin is flipped")
    elif np.any(spec.inv_freq < 0):
        spec.notes.append(_aliasing(spec.inv_freq) or "some pairs rotate clockwise: the sign of sin is flipped "
                          "for them")
    if spec.offset == round(spec.offset) and spec.offset != 0:
        spec.notes.append(f"row 0 is rotated as position {int(spec.offset)}")
    if proportional:
        return
    theta, r = np.abs(spec.inv_freq), spec.rotary_dim
    spec.freq_tolerance = float(tau.max())
    if not np.all(np.isfinite(theta) & (theta > 0)):
        spec.base = float("nan")
        spec.notes.append("a pair does not turn measurably between rows: frequencies too noisy to name a method")
        return
    if len(theta) < 2:
        spec.base = float("nan")
        spec.rope_type, spec.rope_params = "default", {}
        return
    spec.base = geometric_base(theta, r, tau)
    if abs(theta[0] / spec.base ** (-2 / r) - 1) <= tau[0] and abs(theta[0] - 1) > tau[0]:
        spec.notes.append(f"theta_0 = {theta[0]:.6g} = base^(-2/d): frequencies look indexed from 1 (eq 15's "
                          f"{show_number(float(f'{spec.base:.6g}'))}^(-2(i-1)/d) with i starting at 0, not at 1)")
    if unit > 2.0**-24:
        spec.notes.append(f"angles behave like {spec.angle_precision} (errors up to {spec.phase_error:.2g} rad): "
                          "frequencies are too noisy to name a scaling method")
    elif tau.max() > NAME_RTOL:
        spec.notes.append(f"the frequencies are known only to {tau.max():.2g} relative (pair {int(np.argmax(tau))}, "
                          f"{spec.rows} rows): too noisy to name a scaling method")
    else:
        _name_method(spec, theta, base_hint, tau, unit)


def _aliasing(theta) -> str:
    """A note when the leading pairs look clockwise only because they turn more than pi per row."""
    k = int(np.argmax(theta >= 0))                        # first pair turning counterclockwise
    if k == 0 or np.any(theta[k:] < 0) or not theta[k - 1] + 2 * np.pi > theta[k]:
        return ""
    return (f"pairs 0..{k - 1} turn more than pi rad per row (aliasing): sampled once per row, a turn by theta "
            f"looks like theta - 2 pi, so they seem to rotate clockwise (pair 0 measured {theta[0]:.4g}, i.e. "
            f"{theta[0] + 2 * np.pi:.4g} + 2 pi k): their frequencies are known only modulo 2 pi. Rows that are "
            "positions apart (a stride, scaled positions) alias; give fn consecutive positions, fewer apart")


def _name_proportional(spec, d, tau) -> bool:
    """Names proportional RoPE (Gemma 4's full attention, described in its note) on ``spec``: True when it is that."""
    n, theta = len(spec.pairs), np.abs(spec.inv_freq)
    if not (2 <= n < d // 2 and spec.pairs == [(p, p + d // 2) for p in range(n)] and np.all(spec.inv_freq > 0)):
        return False
    base = geometric_base(theta, d, tau)
    rel = np.abs(frequencies(d, base)[:n] / theta - 1)
    tol = np.maximum(tau, FREQ_ULPS * 2.0**-24)
    if not np.all(rel <= tol):
        return False
    fraction = 2 * n / d
    spec.pairing, spec.rotary_dim, spec.base, spec.rope_type = "half", d, base, "proportional"
    spec.pairs = [(p, p + d // 2) for p in range(d // 2)]
    spec.inv_freq = np.concatenate([spec.inv_freq, np.zeros(d // 2 - n)])
    spec.rope_params = dict(base=base, partial_rotary_factor=fraction)
    spec.fit_error, spec.freq_tolerance = float(rel.max()), float(tol.max())
    spec.notes.append(f"proportional RoPE (Gemma 4 full attention; transformers' 'proportional'): half pairing over "
                      f"all {d} features, theta_i = base^(-2i/{d}) on the first {n} of {d // 2} pairs, the other "
                      f"{d // 2 - n} not rotated: a fraction {fraction:g} of the features rotates "
                      f"(partial_rotary_factor {fraction:g})")
    return True


def _candidates(theta, r, base, base_hint, tau):
    """(rope_type, params) configurations of every method in the registry worth comparing, simplest first."""
    ratio = theta / frequencies(r, base)
    f_max = float(1 / ratio.min())
    # the factor as fitted, and rounded to fewer digits where the slowest pair cannot tell them apart
    factors = dict.fromkeys([f_max] + [float(f"{f_max:.{k}g}") for k in (1, 2, 3, 4)
                                       if abs(float(f"{f_max:.{k}g}") / f_max - 1) <= tau[int(np.argmin(ratio))]])
    fit = FrequencyFit(r, base, base_hint, tau, log_fit(theta, r, intercept=False)[0],
                       log_fit(theta, r, intercept=True), tuple(factors) if f_max > 1 + tau.max() else (),
                       TRAIN_LENGTHS)
    ranked = [(rank, rope_type, params) for rope_type, method in SCALING_METHODS.items() if method.candidates
              for rank, params in method.candidates(fit)]
    return [(rope_type, params) for _, rope_type, params in sorted(ranked, key=lambda candidate: candidate[0])]


def _rounded_params(params, digits):
    """``params`` with every float rounded to ``digits`` significant digits."""
    return {k: float(f"{v:.{digits}g}") if isinstance(v, float) else v for k, v in params.items()}


def _name_method(spec, theta, base_hint, tau, unit):
    """The first candidate matching within tau; else one rounded to 16 bits, LongRoPE factors of base_hint, custom."""
    r, norm_scale = spec.rotary_dim, spec.norm_scale
    float32_tau = np.maximum(tau, FREQ_ULPS * 2.0**-24)
    best = (np.inf, None, {})
    for rope_type, params in _candidates(theta, r, spec.base, base_hint, tau):
        freqs, att = method_frequencies(rope_type, params, r)
        if freqs is None:
            continue
        if "attention_factor" in SCALING_METHODS[rope_type].optional and abs(norm_scale / att - 1) > scale_tol(spec):
            params = dict(params, attention_factor=norm_scale)   # frequencies do not depend on it
        rel = np.abs(freqs / theta - 1)
        if np.all(rel <= tau) or (unit < 2.0**-24 and np.all(rel <= float32_tau)):
            if not np.all(rel <= tau):
                spec.notes.append(f"frequencies match {rope_type} to {rel.max():.1e} relative, as if computed in "
                                  "float32 (the angles themselves are float64)")
            rounded = _rounded_params(params, max(1, int(-math.log10(float(tau.max())))))   # 8.000001 -> 8, if it fits
            rounded_freqs = method_frequencies(rope_type, rounded, r)[0]
            if rounded_freqs is not None and np.all(np.abs(rounded_freqs / theta - 1) <= np.maximum(tau, rel)):
                params, rel = rounded, np.abs(rounded_freqs / theta - 1)
            spec.rope_type, spec.rope_params, spec.base = rope_type, params, float(params["base"])
            spec.fit_error = float(rel.max())
            if rope_type == "linear":
                _name_indexed_from_one(spec, theta, tau)
            _name_twins(spec, theta, np.maximum(tau, rel))
            return
        if rel.max() < best[0]:
            best = (float(rel.max()), rope_type, params)
    confounded = ("LongRoPE's base and per-pair factors cannot be told apart from rotations alone: "
                  "theta_p = base^(-2p/d) / factor_p fits any base")
    if _name_rounded(spec, theta, base_hint, tau):
        return
    factors = None if base_hint is None else frequencies(r, base_hint) / theta
    if factors is not None and np.all(factors >= 1 - tau):
        spec.rope_type, spec.base, spec.fit_error = "longrope", base_hint, 0.0
        spec.rope_params = dict(base=base_hint, short_factor=factors.tolist(), long_factor=factors.tolist())
        if abs(norm_scale - 1) > scale_tol(spec):
            spec.rope_params["attention_factor"] = norm_scale
        spec.notes.append(confounded + "; the factors here are relative to base_hint. Which of short_factor and "
                          "long_factor the kernel used, and original_max_position_embeddings, are not observable: "
                          "add the latter to use these parameters with scaled_inv_freq")
        return
    spec.rope_type, spec.closest, spec.rope_params, spec.fit_error = "custom", best[1], dict(best[2]), best[0]
    spec.notes.append(f"no scaling method fits to the measured precision (tolerance {tau.max():.1e}); closest: "
                      f"{best[1]} {show_params(best[2])}, off by {best[0]:.2g} relative")
    spec.notes.append(confounded + ("" if base_hint is not None else "; pass base_hint to express the "
                                    "frequencies as LongRoPE factors of that base"))


def _name_indexed_from_one(spec, theta, tau):
    """linear with factor base^(2/r) is theta_i = base^(-2(i+1)/r): eq 15 indexed from 1, a bug, named as such."""
    r = spec.rotary_dim
    fits = [base for base in [float(f"{spec.base:.{digits}g}") for digits in range(1, 6)] + [spec.base]
            if np.all(np.abs(frequencies(r, base) * base ** (-2 / r) / theta - 1) <= tau)]
    if fits:
        base = spec.base = fits[0]
        spec.rope_type, spec.closest, spec.rope_params = "custom", "default", dict(base=base)
        spec.frequency_defect = "indexed from 1"
        spec.notes[:] = [n for n in spec.notes if not n.startswith("theta_0 = ")]      # said better below
        spec.notes.append(f"the frequencies are default {{base: {show_number(base)}}}'s indexed from 1: theta_i = "
                          f"base^(-2(i+1)/d), every pair one step slower (the same as linear with factor base^(2/d) "
                          f"= {base ** (2 / r):.6g}, which no published config uses): count i from 0 (eq 15)")


def _name_rounded(spec, theta, base_hint, tau):
    """Names on ``spec`` the method whose frequencies rounded to bfloat16 or float16 are the measured ones (True), its
    parameters tried with base_hint, rounded to 1..5 digits, then as fitted: many round to the same 16-bit ones."""
    r = spec.rotary_dim
    for type_name in ROUNDING_TYPES:
        if not np.all(np.abs(rounded_to(theta, type_name) / theta - 1) <= tau):
            continue                                     # the frequencies are not that type's values
        loose = np.maximum(tau, 2 * dict(PRECISIONS)[type_name])
        for rope_type, params in _candidates(theta, r, geometric_base(theta, r, loose), base_hint, loose):
            tries = ([dict(params, base=base_hint)] if base_hint is not None else []) + [
                _rounded_params(params, digits) for digits in range(1, 6)] + [params]
            for tried in tries:
                freqs = method_frequencies(rope_type, tried, r)[0]
                if freqs is not None and np.all(np.abs(rounded_to(freqs, type_name) / theta - 1) <= tau):
                    _note_rounded(spec, theta, rope_type, tried, freqs, type_name)
                    return True
    return False


def _note_rounded(spec, theta, rope_type, params, freqs, type_name):
    """Names ``rope_type`` ``params`` (frequencies ``freqs``) rounded to ``type_name`` on ``spec``, with a note."""
    moved = np.abs(theta / freqs - 1)
    worst = [int(p) for p in np.argsort(-moved)[:3] if moved[p] > spec.freq_tolerance]
    spec.rope_type, spec.closest, spec.rope_params = "custom", rope_type, dict(params)
    spec.base, spec.frequency_defect = float(params["base"]), f"rounded to {type_name}"
    spec.fit_error = float(np.abs(rounded_to(freqs, type_name) / theta - 1).max())
    last = abs(spec.offset) + spec.rows
    spec.notes.append(
        f"the frequencies are {rope_type} {show_params(params)}'s rounded to {type_name} (model.to(torch.{type_name}) "
        f"rounds a module's inv_freq buffer; transformers #25681, #29496): {np.sum(moved > spec.freq_tolerance)} of "
        f"{len(theta)} pairs differ from the unrounded ones, by up to {moved.max():.2g} relative ("
        + ", ".join(f"pair {p}: {moved[p]:.2g}" for p in worst)
        + f"), which turns the angles at position {last:.0f} by up to {last * np.abs(theta - freqs).max():.2g} rad; "
        f"keep inv_freq in float32 (cast the model, then rebuild the buffer, or compute it in forward)")


def _name_twins(spec, theta, tau):
    """The other method with the same step (llama3 low == high factor, YaRN beta_fast == beta_slow) to spec.also."""
    params, twins = spec.rope_params, []
    shared = {k: params[k] for k in ("base", "factor", "original_max_position_embeddings") if k in params}
    if spec.rope_type == "llama3" and params["low_freq_factor"] == params["high_freq_factor"]:
        beta = params["low_freq_factor"]
        twins = [("yarn", dict(shared, beta_fast=beta, beta_slow=beta)),
                 ("yarn", dict(shared, beta_fast=beta, beta_slow=beta, truncate=False))]
    elif spec.rope_type == "yarn" and params.get("beta_fast") == params.get("beta_slow") is not None:
        twins = [("llama3", dict(shared, low_freq_factor=params["beta_fast"], high_freq_factor=params["beta_fast"]))]
    for rope_type, twin in twins:
        freqs = method_frequencies(rope_type, twin, spec.rotary_dim)[0]
        if freqs is not None and np.all(np.abs(freqs / theta - 1) <= tau):
            spec.also.append((rope_type, twin))
            spec.notes.append(f"the frequencies are also exactly {rope_type} {show_params(twin)}: a step between "
                              "unchanged and divided pairs, which llama3 with low_freq_factor == high_freq_factor and "
                              "YaRN with beta_fast == beta_slow both give; rotations alone cannot tell them apart "
                              "(compare the frequencies, as assert_rope_matches does)")
            return
