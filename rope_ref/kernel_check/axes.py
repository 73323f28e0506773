"""Multi-axis kernels ``fn(x, positions)`` (M-RoPE, axial, mixed): the frequency matrix ``F`` ``(pairs, axes)`` by
which pair j turns sum_a F[j, a] p_a (eq 34 per pair), measured by moving one axis at a time, and compared with the
oracle's (rope_ref.mrope_frequencies) through the catalogue of known multi-axis defects :data:`AXES_DEFECTS`."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .._validate import check_choice, check_d, check_freqs, check_nonnegative_int, check_number, check_positive_int
from ..forms import wrap_angle
from ..multiaxis import MROPE_LAYOUTS, _check_sections
from .defects import OTHER_PAIRING, Defect, Model, _same_norm, explain, measured, same_structure
from .measure import FREQ_ULPS, SIGMAS, allowance, precision_of, shortest_base
from .probe import Caller, check_probe_arguments, read_rotations
from .spec import AxesSpec, RopeMismatch, show_shifts

MAX_POSITION = 4096     # default max_position: the largest position passed on each axis


def identify_axes(fn, d: int, axes: int, *, seq: int = 64, seed: int | None = 0, max_position: int = MAX_POSITION,
                  raising=False) -> AxesSpec:
    """Measure the frequency matrix ``F`` ``(rotary_dim/2, axes)`` of ``fn(x, positions) -> y``: an
    :class:`AxesSpec`.  ``x`` float64 ``(seq, d)``, ``positions`` int64 ``(axes, seq)``, row r at positions[:, r]:
    row 0 at 0, rows moving one axis alone by 1, 2, ... then on to ``max_position``, and rows moving every axis."""
    axes = check_positive_int(axes, "axes")
    d, seq, seed = check_probe_arguments(fn, d, seq, seed, 3 * axes + 3)
    max_position = check_number(max_position, "max_position", "an integer from 3 to 2**53", lambda v: 3 <= v <= 2**53)
    names = {1: ("p",), 2: ("h", "w"), 3: ("t", "h", "w")}.get(axes, tuple(f"axis{a}" for a in range(axes)))
    rng = np.random.default_rng(seed)
    n_mix = max(2, min(8, seq // 8))
    per_axis = (seq - 1 - n_mix) // axes
    linear = min(max(3, per_axis // 2), max_position)
    far = np.unique(np.round(np.geomspace(2 * linear, max_position, max(per_axis - linear, 1))).astype(np.int64))
    steps = np.concatenate([np.arange(1, linear + 1), far[(far > linear) & (far <= max_position)][:per_axis - linear]])
    sweeps, mixed = np.arange(1, 1 + axes * len(steps)).reshape(axes, -1), np.arange(1 + axes * len(steps), seq)
    positions = np.zeros((axes, seq), np.int64)
    positions[:, sweeps.ravel()] = np.kron(np.eye(axes, dtype=np.int64), steps)     # row 0 at 0, one axis at a time
    positions[:, mixed] = rng.integers(0, min(max_position, 63) + 1, size=(axes, len(mixed)))
    call = Caller(fn, positions, raising=raising)
    found = read_rotations(call, *rng.standard_normal((2, seq, d)))
    done = dict(axes=axes, axis_names=names)
    if isinstance(found, str) or found["output_pairing"] is not None:
        return AxesSpec(is_rope=False, reason=found if isinstance(found, str) else "the rotated pairs are written to "
                        "other features: multi-axis probing follows pairs written back in place only", **done)
    phase, unit = found.pop("angle"), call.unit
    del found["out"], found["output_pairs"]
    spec = AxesSpec(is_rope=True, **found, **done)
    out_err = 4 * spec.scale_error if spec.scale_error > 2.0**-16 else 0.0
    fits = [_fit_axis(wrap_angle(phase[rows] - phase[0]), steps, linear, unit, out_err) for rows in sweeps]
    freqs, sigma, resids, used = (np.stack(v, axis=-1) for v in zip(*fits))     # (steps or pairs, pairs, axes)
    spec.rotated_at_zero = bool(np.abs(phase[0]).max() > allowance(unit, 0.0, out_err / 2))
    shift, spec.shift_tolerance = _shift(freqs, sigma, phase[0], unit, out_err)
    spec.position_shift = shift if spec.rotated_at_zero else None
    at_zero = np.abs(freqs @ shift if shift else phase[0])
    P = positions[:, 1:].T.astype(float)                    # rows 1..: the sweeps (their fits), then the mixed rows
    resid = np.vstack([resids.transpose(2, 0, 1).reshape(-1, len(freqs)),
                       wrap_angle(phase[mixed] - phase[0] - P[mixed - 1] @ freqs.T)])
    angle = np.abs(P) @ np.abs(freqs.T) + 2 * at_zero
    extra = SIGMAS * (P @ sigma.T) * (np.arange(1, seq) >= mixed[0])[:, None]
    found = precision_of(resid, angle, out_err + extra)
    if found is None:
        return AxesSpec(is_rope=False, reason="the angles are not linear in the positions (not a linear/geometric "
                        f"family): one strays from sum_a F[j, a] p_a by {np.abs(resid).max():.3g} rad", **done)
    spec.angle_precision, prec_unit = found
    if out_err and prec_unit <= 2.0**-24 and (precision_of(resid, angle, extra) or (0, 1.0))[1] > 2.0**-24:
        spec.angle_precision, prec_unit = "float32 (cos/sin or output rounded to 16 bits)", 2.0**-24
    pu = np.where(used, steps[:, None, None].astype(float), 0.0)
    spec.inv_freq, spec.freq_tolerance = freqs, (SIGMAS * sigma + FREQ_ULPS * prec_unit * np.abs(freqs)
                                                 + out_err * pu.sum(0) / (pu * pu).sum(0))
    _name_axes(spec, np.abs(freqs) > SIGMAS * sigma)
    return spec


def _fit_axis(wrapped, steps, linear, unit, out_err):
    """(slope, its deviation, residuals, used) of the line through 0 of angles ``wrapped`` (points, pairs) at
    ``steps``: the first ``linear`` unwrapped, each farther one's whole turns predicted from the line so far."""
    n, npairs = wrapped.shape
    p = steps.astype(float)[:, None] * np.ones((1, npairs))
    ang = np.unwrap(np.vstack([np.zeros((1, npairs)), wrapped]), axis=0)[1:]        # beyond ``linear``: set below
    used = np.repeat((np.arange(n) < linear)[:, None], npairs, axis=1)
    for k in range(linear, n + 1):
        pu, au = np.where(used, p, 0.0), np.where(used, ang, 0.0)
        slope = (pu * au).sum(0) / (pu * pu).sum(0)
        resid = np.where(used, ang - p * slope, 0.0)
        sigma = np.sqrt((resid**2).sum(0) / np.maximum(used.sum(0) - 1, 1) / (pu * pu).sum(0))
        if k < n:
            pred = slope * p[k]
            ang[k] = wrapped[k] + 2 * np.pi * np.round((pred - wrapped[k]) / (2 * np.pi))
            used[k] = SIGMAS * sigma * p[k] + allowance(unit, pred, out_err) < np.pi / 2
    return slope, np.maximum(sigma, 2.0**-52 * np.abs(slope)), resid, used


def _shift(freqs, sigma, phase_at_zero, unit, out_err):
    """(s or None, tolerance of each s_a): the shift with phase_at_zero[j] = sum_a F[j, a] s_a (mod 2 pi), solved
    from the slowest pair on; s_a an integer when resolved to one."""
    order = np.argsort(np.abs(freqs).sum(1), kind="stable")
    unwrapped, shift = np.zeros_like(phase_at_zero), np.zeros(freqs.shape[1])
    for k, j in enumerate(order):
        unwrapped[j] = phase_at_zero[j] + 2 * np.pi * np.round((freqs[j] @ shift - phase_at_zero[j]) / (2 * np.pi))
        shift = np.linalg.lstsq(freqs[order[:k + 1]], unwrapped[order[:k + 1]], rcond=None)[0]
    allow = allowance(unit, 2 * np.abs(freqs @ shift), out_err) + SIGMAS * sigma @ np.abs(shift) + 1e-9
    tolerance = np.abs(np.linalg.pinv(freqs)) @ allow
    near = np.round(shift)
    shift = np.where((np.abs(shift - near) <= tolerance) & (tolerance < 0.5), near, shift)
    fits = bool(np.all(np.abs(wrap_angle(freqs @ shift - phase_at_zero)) <= allow))
    return (tuple(float(s) for s in shift) if fits else None), tuple(float(t) for t in tolerance)


def _name_axes(spec, nonzero):
    """form, sections, M-RoPE layout and bases of ``spec.inv_freq`` (pairs, axes), entries ``nonzero`` False counting
    as zero; a note on an axis no pair turns with."""
    freqs, rel = spec.inv_freq, spec.freq_tolerance / np.maximum(np.abs(spec.inv_freq), 1e-300)
    if not np.all(nonzero.sum(1) == 1):
        spec.form = "mixed"
        return
    axis = np.argmax(nonzero, axis=1)
    spec.sections = tuple(int(n) for n in np.bincount(axis, minlength=freqs.shape[1]))
    if sum(n > 0 for n in spec.sections) == 1 or np.all(np.diff(np.abs(freqs[nonzero])) < 0):  # one per pair
        spec.form = "1-D" if sum(n > 0 for n in spec.sections) == 1 else "M-RoPE"
        spec.base = shortest_base(np.abs(freqs[nonzero]), spec.rotary_dim, rel[nonzero], from_one=True)
        spec.mrope_layout = None if spec.form == "1-D" else next(
            (name for name, (assign, _) in MROPE_LAYOUTS.items() if np.array_equal(axis, assign(spec.sections))), None)
    else:
        spec.form = "axial"
        spec.axis_bases = tuple(shortest_base(np.abs(freqs[axis == a, a]), 2 * spec.sections[a], rel[axis == a, a],
                                              from_one=True) if spec.sections[a] else None for a in range(spec.axes))
    if 0 in spec.sections:
        spec.notes.append(f"fn ignores axis {[n for n, s in zip(spec.axis_names, spec.sections) if s == 0]}")


def _axes_rotary_dim(model, spec):
    if model.inv_freq is not None or spec.rotary_dim == model.rotary_dim:
        return None
    sections = tuple(n * spec.rotary_dim // model.rotary_dim for n in model.sections)     # the same split, scaled
    return (replace(model, rotary_dim=spec.rotary_dim, sections=sections),
            f"expected {model.rotary_dim}, found {spec.rotary_dim} (sections {sections})")


def _axis_reversed(model, spec):
    F, found = model.matrix(), spec.inv_freq
    flipped = tuple(a for a in range(spec.axes) if F.shape == found.shape and np.any(F[:, a])
                    and np.all(np.sign(found[F[:, a] != 0, a]) == -np.sign(F[F[:, a] != 0, a])))
    return (replace(model, inv_freq=F * [-1.0 if a in flipped else 1.0 for a in range(spec.axes)]),
            f"along {', '.join(spec.axis_names[a] for a in flipped)}") if flipped else None


#: The known multi-axis defects, each one entry (the 1-D ones are rope_ref.kernel_check.defects.DEFECTS).
AXES_DEFECTS = (
    Defect("M-RoPE layout swapped", "the axes laid out another way (blocks, interleaved)",
           measured("layout", "mrope_layout")),
    Defect("M-RoPE sections swapped", "another split of the pairs between t, h and w", measured("sections")),
    Defect("another base", "another rope_theta", measured("base")),
    Defect("pairing swapped", "interleaved pairs for half-split, or the reverse",
           measured("pairing", when=lambda model, spec: model.pairing in OTHER_PAIRING)),
    Defect("different rotary_dim", "another number of features rotate", _axes_rotary_dim),
    Defect("ids shifted or centred", "positions shifted on some axes (centred image ids)",
           measured("shift", "position_shift", show=lambda spec, v: show_shifts(spec.axis_names, v or [0]))),
    Defect("axis direction reversed", "an axis's positions negated or its sin flipped", _axis_reversed),
)


def _differences(model, spec, rtol=0.0, slack=0.0) -> list:
    """What differs from ``model``, in words: where the rotated features start, the norm, the frequencies (beyond the
    spec's tolerance and ``rtol`` relative), the shift (beyond its tolerance and ``slack``); [] when it reproduces."""
    F, shift = model.matrix(), spec.position_shift if spec.rotated_at_zero else (0.0,) * spec.axes
    lines = []
    if model.rotary_start != spec.rotary_start:
        lines.append(f"rotary_start: expected {model.rotary_start}, found {spec.rotary_start}")
    if not _same_norm(model, spec, 4):
        lines.append(f"norm: expected {model.norm_scale:.6g}, found {spec.norm_scale:.6g}")
    if F.shape != spec.inv_freq.shape:
        return lines + [f"frequencies: expected {F.shape[0]} pairs, found {spec.inv_freq.shape[0]}"]
    miss = np.nan_to_num(np.abs(spec.inv_freq - F) - (spec.freq_tolerance + rtol * np.abs(F)), nan=np.inf)
    j, a = np.unravel_index(int(np.argmax(miss)), F.shape)
    if miss[j, a] > 0:
        lines.append(f"frequencies: {int((miss > 0).sum())} entries differ, most pair {j} along {spec.axis_names[a]}: "
                     f"expected {F[j, a]:.6g}, found {spec.inv_freq[j, a]:.6g}")
    if shift is None or np.any(np.abs(np.subtract(shift, model.shift or 0.0))
                               > np.asarray(spec.shift_tolerance) + slack):
        lines.append(f"positions shifted: expected {show_shifts(spec.axis_names, model.shift or (0,) * spec.axes)}, "
                     f"found {'none that fits' if shift is None else show_shifts(spec.axis_names, shift)}")
    return lines


def assert_axes_match(fn, d, axes, *, inv_freq=None, sections=None, layout=None, base=None, pairing=None,
                      rotary_dim=None, rotary_start=0, norm_scale=None, rtol=0.0, phase_atol=None, position_shift=None,
                      seq=64, seed=0, max_position=MAX_POSITION) -> AxesSpec:
    """Raise :class:`RopeMismatch` naming how the multi-axis kernel ``fn(x, positions)`` differs from what you
    expect: ``inv_freq`` ``(rotary_dim/2, axes)``, or M-RoPE's ``sections`` with ``layout`` (a name of
    MROPE_LAYOUTS) and ``base``, within the spec's tolerance and ``rtol`` relative; ``position_shift`` per axis (the
    shift of centred ids); ``phase_atol`` accepts angles coarser than float32.  Returns the :class:`AxesSpec`."""
    if inv_freq is not None and (sections is not None or layout is not None or base is not None):
        raise TypeError("pass either inv_freq= or sections= (with layout= and base=), not both")
    d, axes = check_d(d), check_positive_int(axes, "axes")
    layout = check_choice("blocks" if layout is None else layout, "layout", MROPE_LAYOUTS)
    rtol = check_number(rtol, "rtol", "a non-negative real number", lambda v: 0 <= v < np.inf, real=True)
    rotary_dim = None if rotary_dim is None else check_d(rotary_dim, "rotary_dim")
    rotary_start = check_nonnegative_int(rotary_start, "rotary_start")
    if sections is not None:                            # the pairs of rotary_dim (else 2 sum(sections)) per axis
        sections = _check_sections(sections, rotary_dim, count=axes)
        try:
            laid = np.bincount(MROPE_LAYOUTS[layout][0](sections), minlength=axes).tolist() == list(sections)
        except (ValueError, IndexError):
            laid = False
        if not laid or not 0 < 2 * sum(sections) <= d - rotary_start:
            raise ValueError(f"sections must be {axes} pair counts that layout {layout!r} holds, 1 to "
                             f"{(d - rotary_start) // 2} in all (d={d} from feature {rotary_start}), got {sections}")
        rotary_dim = 2 * sum(sections)
    if inv_freq is not None:                            # (pairs,): a 1-D kernel's
        inv_freq = check_freqs(inv_freq, "inv_freq", axes=True).reshape(len(inv_freq), -1)
        if inv_freq.shape[1] != axes or 2 * len(inv_freq) > d:
            raise ValueError(f"inv_freq must have shape (pairs, {axes}) with at most {d // 2} pairs for d={d}, got "
                             f"shape {inv_freq.shape}")
    if position_shift is not None:
        position_shift = tuple(check_freqs(position_shift, "position_shift", n_pairs=axes).tolist())
    spec = identify_axes(fn, d, axes, seq=seq, seed=seed, max_position=max_position, raising=True)
    if not spec.is_rope:
        raise RopeMismatch("", [str(spec)], spec)
    model = Model(pairing=pairing, rotary_dim=rotary_dim or spec.rotary_dim, rotary_start=rotary_start,
                  norm_scale=norm_scale, inv_freq=spec.inv_freq if sections is None and inv_freq is None else inv_freq,
                  sections=sections, layout=layout, base=10000.0 if base is None else base, shift=position_shift)
    problems = [] if phase_atol is not None or spec.angle_precision.startswith(("float64", "float32")) else [
        f"angle precision: angles behave like {spec.angle_precision}; compute them in float32"]
    tolerance = max(rtol, FREQ_ULPS * 2.0**-24)             # reproduces: the structure, then no difference
    found = explain(model, spec, AXES_DEFECTS, lambda m: same_structure(m, spec, 4) and not _differences(
        m, spec, tolerance, 1e-9), 3, least=0) or (
        _differences(model, spec) + ["no known defect explains this"], [])
    if problems or found[0]:
        raise RopeMismatch("multi-axis RoPE mismatch", problems + found[0], spec, found[1])
    return spec
