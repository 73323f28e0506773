"""Multi-axis kernels against what you expect: :func:`compare_axes` lists every difference (section split,
layout, pairing, sign, frequency) and :func:`assert_axes_match` raises them as one AssertionError."""

from __future__ import annotations

import numpy as np

from .._validate import check_finite_array, check_number, closest_name, suggest_keywords
from ..multiaxis import MROPE_LAYOUTS, mrope_frequencies
from .axes_probe import classify, identify_axes
from .spec import (AxesSpec, RopeMismatch, check_expected, layout_problems, precision_problems, raising_as, runs,
                   show_shifts)
from .tolerances import FREQ_ULPS, MAX_BYTES, MAX_POSITION, TIMEOUT

FLOAT32_RTOL = FREQ_ULPS * 2.0**-24      # the expected values may be float32 ones


def compare_axes(spec: AxesSpec, inv_freq=None, *, pairing: str | None = None, rotary_dim: int | None = None,
                 rotary_start: int | None = None, norm_scale: float | None = None, rtol: float = 0.0,
                 phase_atol: float | None = None, position_shift=None) -> list:
    """Every difference between what identify_axes found and what you expect, as readable lines ([] when all match).

    ``inv_freq``: the expected matrix (rotary_dim/2, axes), e.g. :func:`rope_ref.multiaxis.mrope_frequencies`,
    to the spec's tolerance, FREQ_ULPS float32 roundings and ``rtol`` relative.  ``phase_atol`` as for 1-D
    kernels.  ``position_shift``: the shift s_a fn adds to each axis's positions (pair j turned by
    sum_a F[j, a] s_a at position 0, as Qwen-Image's centred ids); by default a rotation at 0 is a difference."""
    if not isinstance(spec, AxesSpec):
        raise TypeError(f"spec must be an AxesSpec (from identify_axes), got {type(spec).__name__}")
    check_number(rtol, "rtol", "a real number in [0, 1)", lambda v: 0 <= v < 1, real=True)
    if not spec.is_rope:
        return [str(spec)]
    if inv_freq is not None:            # (rotary_dim/2,) for one axis
        inv_freq = check_finite_array(inv_freq, "inv_freq")
        inv_freq = inv_freq[:, None] if inv_freq.ndim == 1 and spec.axes == 1 else inv_freq
        if inv_freq.ndim != 2 or inv_freq.shape[1] != spec.axes:
            raise ValueError(f"inv_freq must have shape (rotary_dim/2, axes={spec.axes}), got {inv_freq.shape}")
    problems = layout_problems(spec, pairing, rotary_dim, rotary_start)
    if norm_scale is not None and abs(spec.norm_scale / norm_scale - 1) > max(FLOAT32_RTOL, 2 * spec.scale_error):
        problems.append(f"norm_scale: expected {norm_scale:.6g}, found {spec.norm_scale:.6g}")
    if position_shift is not None:
        want = _check_shift(position_shift, spec.axes)
        shown = show_shifts(spec.axis_names, want)
        found = spec.position_shift if spec.rotated_at_zero else (0.0,) * spec.axes
        if found is None:
            problems.append(f"position_shift: expected {shown}, found pairs turned by up to {spec.phase_at_zero:.3g} "
                            "rad at position 0 that no shift of the positions explains")
        elif not np.all(np.abs(np.subtract(found, want)) <= spec.shift_tolerance):
            why = "" if spec.rotated_at_zero else " (fn does not shift its positions: ids not centred?)"
            problems.append(f"position_shift: expected {shown}, found {show_shifts(spec.axis_names, found)}{why}")
    elif spec.rotated_at_zero:
        why = (f"fn shifts the positions by {show_shifts(spec.axis_names, spec.position_shift)}"
               if spec.position_shift else "positions shifted?")
        problems.append(f"rotation at position 0: expected none, found pairs turned by up to {spec.phase_at_zero:.3g} "
                        f"rad with every axis at 0 ({why})")
    if inv_freq is not None:
        problems += _compare_matrix(spec, inv_freq, max(rtol, FLOAT32_RTOL))
    return problems + precision_problems(spec, phase_atol, "sum_a F[j, a] p_a",
                                         "pass phase_atol= to accept that precision", "compute angles in float32 "
                                         "or better, or pass phase_atol= to accept that precision")


def _check_shift(want, axes):
    """The expected shift: ``axes`` finite reals, one per axis."""
    want = check_finite_array(want, "position_shift")
    if want.shape != (axes,):
        raise ValueError(f"position_shift must hold one shift per axis, shape ({axes},), got shape {want.shape}")
    return want


def _compare_matrix(spec, want, rtol):
    """The frequency lines: section split, layout, form and axis of each pair, then the spectra; else entry by entry."""
    found, names, pairs = spec.inv_freq, spec.axis_names, np.arange(len(want))
    if want.shape != found.shape:
        return [f"frequencies: expected a ({want.shape[0]}, {want.shape[1]}) matrix ({2 * want.shape[0]} rotated "
                f"features), found ({found.shape[0]}, {found.shape[1]}) (rotary_dim {spec.rotary_dim})"]
    form, axis, sections, layout = classify(want)
    found_axis, problems = spec.axis_of_pair, []
    if axis is not None and found_axis is None:
        j = int(np.flatnonzero((np.abs(found) > spec.freq_tolerance).sum(1) > 1)[0])
        drive = ", ".join(f"{names[a]} {found[j, a]:.4g}" for a in range(spec.axes)
                          if abs(found[j, a]) > spec.freq_tolerance[j, a])
        return [f"axes: expected each pair to turn with one axis ({form}), found pairs that turn with several: pair "
                f"{j} with {drive} (found {spec.form})"]
    if axis is not None:
        if sections != spec.sections:
            problems.append(f"sections: kernel gives {'/'.join(names)} {'/'.join(map(str, spec.sections))} pairs, "
                            f"expected {'/'.join(map(str, sections))}")
        if form == "M-RoPE" and spec.form == "M-RoPE" and layout != spec.mrope_layout:
            problems.append(f"layout: kernel's axes are {_layout(spec.mrope_layout, found_axis, names)}, "
                            f"expected {_layout(layout, axis, names)}")
        elif form != spec.form:
            problems.append(f"form: expected {form}, found {spec.form} ({runs(found_axis, names)})")
        elif sections == spec.sections and not np.array_equal(axis, found_axis):
            problems.append(f"axis of each pair: kernel has {runs(found_axis, names)}, expected {runs(axis, names)}")
        if not np.array_equal(axis, found_axis):
            want_theta, found_theta = np.abs(want[pairs, axis]), np.abs(found[pairs, found_axis])
            allowed = spec.freq_tolerance[pairs, found_axis] + rtol * want_theta
            bad = np.flatnonzero(np.abs(found_theta - want_theta) > allowed)
            if bad.size:
                problems.append("frequencies (whichever axis turns each pair): " + "; ".join(
                    f"pair {j} expected {want_theta[j]:.6g}, found {found_theta[j]:.6g}" for j in bad[:3])
                    + f"; {bad.size} of {len(want)} pairs differ")
            return problems
    tol = spec.freq_tolerance + rtol * np.abs(want)
    bad = np.abs(found - want) > tol
    for a in range(spec.axes):          # an axis with every sign flipped named first
        col = want[:, a] != 0
        if bad[:, a].any() and col.any() and np.all(np.abs(found[col, a] + want[col, a]) <= tol[col, a]):
            first = int(np.flatnonzero(col)[0])
            problems.append(f"axis {names[a]}: every frequency has the opposite sign (expected "
                            f"{want[first, a]:.6g} for pair {first}, found {found[first, a]:.6g}): the kernel turns "
                            f"the other way in {names[a]} (position negated or sin's sign flipped?)")
            bad[:, a] = False
    rows, cols = np.nonzero(bad)
    if rows.size:
        fast = np.abs(want[rows, cols]) > np.pi       # the 1-D comparison says the same of such pairs
        problems.append("frequencies: " + "; ".join(
            f"pair {j} along {names[a]} expected {want[j, a]:.6g}, found {found[j, a]:.6g}"
            for j, a in zip(rows[:3], cols[:3])) + f"; {rows.size} of {want.size} entries differ" + (
            f"; {int(fast.sum())} of them expected to turn by more than pi rad per position step (up to "
            f"{np.abs(want[rows, cols]).max():.4g}): sampled at integer positions such a turn aliases to theta - 2 pi "
            "k, so no measurement at those positions can check it; give fn positions closer together"
            if fast.any() else ""))
    return problems


def _layout(layout, axis, names) -> str:
    if layout:
        return f"{layout} ({MROPE_LAYOUTS[layout][1]})"
    return f"neither blocks nor interleaved ({runs(axis, names)})"


@suggest_keywords
def assert_axes_match(fn, d: int, axes: int, *, inv_freq=None, sections=None, layout: str | None = None,
                      base: float | None = None, pairing: str | None = None, rotary_dim: int | None = None,
                      rotary_start: int = 0, norm_scale: float | None = None, rtol: float = 0.0,
                      phase_atol: float | None = None, position_shift=None, seq: int = 64, seed: int = 0,
                      max_position: int = MAX_POSITION, axis_names=None, max_bytes: int = MAX_BYTES,
                      timeout: float | None = TIMEOUT) -> AxesSpec:
    """Raise AssertionError (:class:`~rope_ref.kernel_check.RopeMismatch`) naming every way the multi-axis kernel
    ``fn(x, positions)`` (as for :func:`~.axes_probe.identify_axes`) differs from what you expect
    (:func:`compare_axes`); return the :class:`AxesSpec` when all match.  Expect ``inv_freq`` or, for M-RoPE,
    ``sections`` (mrope_section) with ``layout`` (a name of MROPE_LAYOUTS) and ``base`` (default 10000)."""
    if inv_freq is not None and (sections is not None or layout is not None or base is not None):
        raise TypeError("pass either inv_freq= or sections= (with layout= and base=), not both")
    if inv_freq is None and sections is None and (layout is not None or base is not None):
        raise TypeError("layout= and base= describe M-RoPE: pass sections= with them (pairs per axis)")
    given = dict(pairing=pairing, rotary_dim=rotary_dim, norm_scale=norm_scale, rotary_start=rotary_start)
    check_expected({k: v for k, v in given.items() if v is not None}, phase_atol)
    if position_shift is not None:
        _check_shift(position_shift, axes)
    if sections is not None:
        if axes != 3:
            raise ValueError(f"sections= describes M-RoPE's three axes (t, h, w), got axes={axes}: pass inv_freq= "
                             "(rotary_dim/2, axes) for other layouts")
        if layout not in (None, *MROPE_LAYOUTS):
            raise ValueError(f"layout must be 'blocks' or 'interleaved', got {layout!r}"
                             f"{closest_name(str(layout), tuple(MROPE_LAYOUTS))}; the layouts: {tuple(MROPE_LAYOUTS)}")
        inv_freq = mrope_frequencies(rotary_dim or d, sections, base=10000.0 if base is None else base,
                                     interleaved=layout or "blocks")
    spec = identify_axes(raising_as("fn", fn), d, axes, seq=seq, seed=seed, max_position=max_position,
                         axis_names=axis_names, max_bytes=max_bytes, timeout=timeout)
    problems = compare_axes(spec, inv_freq, pairing=pairing, rotary_dim=rotary_dim, rotary_start=rotary_start,
                            norm_scale=norm_scale, rtol=rtol, phase_atol=phase_atol, position_shift=position_shift)
    if problems:
        raise RopeMismatch("multi-axis RoPE mismatch", problems, spec)
    return spec
