"""Dynamic NTK: a base that grows with the sequence length, measured at two or three lengths."""

from __future__ import annotations

import math

import numpy as np

from ..forms import frequencies
from ..scaling import scaled_inv_freq
from .naming import log_fit, method_kwargs

def check_dynamic(spec, measure, theta, tau, base_hint, max_rows):
    """Static base or dynamic NTK: the frequencies measured again (``measure(rows)`` -> (|theta|, tau)) at one or
    two other lengths L = offset + rows.  transformers' dynamic NTK uses base * g^(r/(r-2)) past L_train, with
    g = 1 + factor (L - L_train) / L_train a line in L: two lengths past L_train give factor and L_train."""
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
    base_at = lambda th: log_fit(th, r, intercept=False)[0]  # noqa: E731
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
            freqs, _ = scaled_inv_freq(r, params["base"], rope_type="dynamic", seq_len=L, **method_kwargs(params))
        except (ValueError, TypeError):
            return math.inf
        rel = np.abs(freqs / theta - 1)
        worst = max(worst, float(rel.max() if relative else (rel / tau).max()))
    return worst

