"""The public checks: identify (what a kernel does, measured), assert_rope_matches and assert_rope_grad_matches (its
angle table compared with the one the oracle computes for the expectation, a difference explained only by the
catalogue of known defects), and the same catalogue for assert_rope_close's outputs (:func:`explain_output`)."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import numpy as np

from .._validate import (check_base, check_choice, check_d, check_keywords, check_nonnegative_int,
                         check_positive_real, check_scalar)
from ..forms import _pairs
from ..hf_config import from_hf_config
from ..scaling import METHOD_PARAM_KEYS, ROPE_TYPES
from .axes import assert_axes_match, identify_axes
from .defects import DEFECTS, Model, diagnose, explain
from .measure import MAX_ROWS, method_frequencies, probe_one_axis
from .probe import Caller
from .spec import AxesSpec, RopeMismatch, RopeSpec

_SPEC_KEYS = ("pairing", "rotary_dim", "rotary_start", "output_pairing", "offset", "base", "norm_scale", "rope_type",
              "inv_freq")
PAIRINGS = ("interleaved", "half", "other")


def identify(fn, d: int, *, axes: int | None = None, seq: int = 64, seed: int | None = 0, max_rows: int = MAX_ROWS,
             base_hint: float | None = None, **axes_options) -> RopeSpec:
    """Measure the rotary embedding ``fn(x) -> y`` applies (``x`` float64 ``(seq, d)``, row r at the kernel's own
    position offset + r): d + 5 calls on ``seq`` rows, then one on ``max_rows`` (the most fn accepts) whose output is
    each pair's cos and sin.  ``base_hint``: a base scaling methods are tried with (NTK, LongRoPE).  ``axes=A``: a
    multi-axis kernel ``fn(x, positions)`` (:func:`~.axes.identify_axes`).

    >>> import rope_ref as rr, numpy as np
    >>> spec = rr.identify(lambda x: rr.rotate(x, np.arange(len(x)) + 7.0, base=500000.0), 16)
    >>> spec.pairing, spec.offset, spec.base, spec.rope_type
    ('interleaved', 7.0, 500000.0, 'default')
    """
    if axes is not None:
        return identify_axes(fn, d, axes, seq=seq, seed=seed, **axes_options)
    if axes_options:
        raise TypeError(f"identify() got unexpected keyword arguments {sorted(axes_options)} (they are for axes=A)")
    return probe_one_axis(Caller(fn), d, seq=seq, seed=seed, max_rows=max_rows, base_hint=base_hint)


def assert_rope_matches(fn, d: int | None = None, *, config=None, axes: int | None = None, seq: int = 64,
                        phase_atol: float | None = None, max_rows: int = MAX_ROWS, **expected) -> RopeSpec | AxesSpec:
    """Raise :class:`RopeMismatch` naming the known defects by which ``fn`` (as for :func:`identify`) differs from
    the expectation, else return the :class:`RopeSpec` measured.  ``expected``: ``pairing``, ``rotary_dim``,
    ``rotary_start`` (0), ``output_pairing`` (None: in place), ``offset`` (0; None: not checked), ``base``,
    ``norm_scale``, ``rope_type`` with its parameters, or ``inv_freq``; ``config``: a config.json (dict or path) or
    RopeConfig (keywords win).  The angles must agree within float32 (and fn's own 16-bit output) rounding plus
    ``phase_atol``.  ``axes=A`` or a multi-axis config: ``fn(x, positions)`` (:func:`~.axes.assert_axes_match`)."""
    d, axes, expected = _expectations(d, config, axes, expected, phase_atol)
    if axes is not None:
        return assert_axes_match(fn, d, axes, seq=seq, phase_atol=phase_atol, **expected)
    spec = probe_one_axis(Caller(fn, raising=True), d, seq=seq, max_rows=max_rows, base_hint=expected.get("base"))
    return _judge(spec, expected, phase_atol, "RoPE mismatch")


def assert_rope_grad_matches(vjp, d: int | None = None, *, config=None, seq: int = 64,
                             phase_atol: float | None = None, max_rows: int = MAX_ROWS, **expected) -> RopeSpec:
    """:func:`assert_rope_matches` for a backward pass ``vjp(x, g) -> dx``, the gradient of ``sum(fn(x) * g)``: for
    RoPE R^T g, g turned by minus the angles of eq 34; measured as a kernel of g, its angles negated."""
    if not callable(vjp):
        raise TypeError(f"vjp must be callable as vjp(x, g) -> dx (the backward pass), got {type(vjp).__name__}")
    d, _, expected = _expectations(d, config, None, expected, phase_atol, backward=True)
    back = probe_one_axis(Caller(lambda g: vjp(np.random.default_rng(len(g)).standard_normal(g.shape), g),
                                 raising=True), d, seq=seq, max_rows=max_rows)
    if back.is_rope:                                    # the forward: the backward's angles negated
        back = dataclasses.replace(back, table=-back.table, inv_freq=None if back.inv_freq is None else -back.inv_freq)
    return _judge(back, expected, phase_atol, "RoPE backward mismatch (vjp(x, g) should rotate g by minus the "
                  "forward angles)")


def _judge(spec, expected, phase_atol, title):
    """The spec when the expectation's model reproduces it; else RopeMismatch with the diagnosis."""
    if not spec.is_rope:
        raise RopeMismatch("", [str(spec)], spec)
    problems, defects = diagnose(expected_model(expected, spec), spec, phase_atol)
    if problems:
        raise RopeMismatch(title, problems, spec, defects)
    return spec


def expected_model(expected, spec) -> Model:
    """The oracle's :class:`Model` of the expectation; what is not expected is taken as measured (not checked)."""
    params = {k: v for k, v in expected.items() if k not in _SPEC_KEYS}
    offset = expected.get("offset", 0.0)
    model = Model(pairing=expected.get("pairing", spec.pairing), rotary_dim=expected.get("rotary_dim", spec.rotary_dim),
                  rotary_start=expected.get("rotary_start", 0), output_pairing=expected.get("output_pairing"),
                  offset=spec.offset if offset is None else offset, base=float(expected.get("base", 10000.0)),
                  rope_type=expected.get("rope_type", "default"), params=params, norm_scale=expected.get("norm_scale"))
    if "inv_freq" in expected:
        return dataclasses.replace(model, inv_freq=np.asarray(expected["inv_freq"], np.float64))
    if not {"base", "rope_type", *METHOD_PARAM_KEYS} & set(expected):      # frequencies not checked: the measured
        return dataclasses.replace(model, inv_freq=spec.inv_freq)
    if model.norm_scale is None and model.rope_type in ("yarn", "longrope"):
        length = {"seq_len": (model.offset or 0) + (spec.rows or 1)} if model.rope_type == "longrope" else {}
        return dataclasses.replace(model, norm_scale=method_frequencies(
            model.rope_type, dict(params, base=model.base, **length), model.rotary_dim, factor_too=True))
    return model


def _expectations(d, config, axes, expected, phase_atol, backward=False):
    """(d, axes, expectations) from the arguments and a config.json (dict or path) or RopeConfig; keywords win."""
    if config is not None:
        config = config if hasattr(config, "attention_factor") else from_hf_config(config)
        if backward and config.axes:
            raise ValueError(f"config is multi-axis RoPE ({config.axes} axes): backward passes are checked for 1-D")
        if axes not in (None, config.axes):
            raise ValueError(f"axes={axes!r} disagrees with config, whose RoPE has {config.axes or 1} position axes")
        want = dict(pairing=config.pairing, rotary_dim=config.rotary_dim, norm_scale=config.attention_factor,
                    rotary_start=getattr(config, "rotary_start", 0))
        if config.axes and not {"inv_freq", "sections", "layout", "base"} & set(expected):
            layout = "interleaved" if config.mrope_interleaved is True else config.mrope_interleaved or "blocks"
            want.update(dict(sections=config.mrope_section, base=config.base, layout=layout) if config.mrope_section
                        else dict(inv_freq=config.inv_freq()))
        elif not config.axes:
            want.update(base=config.base, offset=0, output_pairing=config.output_pairing)
            if "rope_type" not in expected and "inv_freq" not in expected:
                want.update(rope_type=config.rope_type, **dict(config.params))
                if config.clockwise:
                    want["inv_freq"] = config.inv_freq()
        d, axes, expected = (config.head_dim if d is None else d), config.axes, {**want, **expected}
    if d is None:
        raise TypeError("assert_rope_matches needs d (features per row) or config= with a head_dim")
    d = check_d(d)
    if axes is None:
        check_keywords(expected, {*_SPEC_KEYS, *METHOD_PARAM_KEYS, "seq_len"}, "assert_rope_matches()")
        if expected.get("offset") is not None:
            expected["offset"] = check_scalar(expected["offset"], "offset")
        for name, check in (("norm_scale", check_positive_real), ("base", check_base), ("rotary_dim", check_d),
                            ("rotary_start", check_nonnegative_int)):
            if expected.get(name) is not None:
                check(expected[name], name)
        for name, valid in (("pairing", PAIRINGS), ("rope_type", ROPE_TYPES), ("output_pairing", PAIRINGS)):
            if expected.get(name) is not None:
                check_choice(expected[name], name, valid)
    if phase_atol is not None:
        check_positive_real(phase_atol, "phase_atol", "None or a positive number of radians")
    return d, axes, expected


def explain_output(actual, x, positions, rope: dict, bound, unit) -> tuple:
    """The catalogue's diagnosis of a kernel's output ``actual`` of ``x`` ``(..., d)`` at ``positions``, for
    assert_rope_close: the known defects whose model y, computed by the oracle, is within ``bound`` of actual
    everywhere (plus ``unit`` (|x| + |y|), the bound's rounding terms, when the model pairs other features): (a line
    each, their names); else a line saying none is, and no name.  ``rope``: the keywords of rotate, or ``config=``."""
    d, rope = x.shape[-1], dict(rope)
    config = rope.pop("config", None)
    expected = dict(pairing="interleaved", rotary_dim=d, base=10000.0, offset=0) | rope
    if config is not None:
        config = config if hasattr(config, "attention_factor") else from_hf_config(config)
        expected = dict(pairing=config.pairing, rotary_dim=config.rotary_dim, inv_freq=config.inv_freq(), offset=0,
                        norm_scale=config.attention_factor) if config.axes else _expectations(d, config, None, rope,
                                                                                              None)[2]
    pos = np.arange(x.shape[-2], dtype=np.float64) if positions is None else np.asarray(positions, np.float64)
    model = expected_model(expected, SimpleNamespace(pairing=None, rotary_dim=d, offset=0, inv_freq=None,
                                                     rows=int(np.max(pos, initial=0)) + 1))
    rows, everything = int(np.prod(x.shape[:-1])), (x, pos, actual, bound)
    if rows > 4096 and np.ndim(model.inv_freq) < 2:     # searched on 4096 rows, the defects found checked on all
        keep = np.linspace(0, rows - 1, 4096).astype(int)
        pos = np.broadcast_to(pos, x.shape[:-1]).reshape(rows)[keep]
        x, actual, bound = (a.reshape(rows, d)[keep] for a in (x, actual, bound))
    def fits(m, x=x, pos=pos, actual=actual, bound=bound):      # the rounding terms again on pairs the bound lacks
        same = all(getattr(m, k) == getattr(model, k) for k in ("pairing", "rotary_dim", "rotary_start",
                                                                "output_pairing"))
        return _within(m, x, pos, actual, bound, 0.0 if same else unit)
    found = explain(model, measure_output(x, actual, pos, model), DEFECTS, fits, 2)
    if found and fits(found[2], *everything):
        return found[:2]
    return ["no known defect explains this (none of kernel_check.DEFECTS, alone or two together)"], []


def _within(model, x, positions, actual, bound, unit) -> bool:
    try:
        y = model.rotate(x, positions)
    except (ValueError, TypeError, ZeroDivisionError):       # a model the oracle refuses reproduces nothing
        return False
    return bool(np.all(np.abs(actual - y) <= bound + unit * (np.abs(x) + np.abs(y))))


def measure_output(x, y, positions, model) -> SimpleNamespace:
    """What ``y``, a kernel's output of ``x``, shows for the catalogue's measured parameters: the features it moves,
    the pairs that keep their norm (and where they are written), the norm; then, with the model's frequencies, the
    position each row turns as (from the slowest pair on), hence the offset and where a table ends, and the base
    from the slowest pair's line."""
    spec = SimpleNamespace(pairing=None, output_pairing=None, rotary_dim=None, rotary_start=0, norm_scale=None,
                           offset=None, base=None, rope_type=None, rope_params={}, table_end=None, inv_freq=None)
    moved = np.flatnonzero(np.any(np.abs(y - x) > 2.0**-6 * np.abs(x).max(axis=-1, keepdims=True),
                                  axis=tuple(range(x.ndim - 1))))
    if moved.size < 2:
        return spec
    start = int(moved[0])
    r = min(int(moved[-1] - start + 2), x.shape[-1] - start) // 2 * 2
    tried = []
    for pairing, out in (("interleaved", None), ("half", None), ("interleaved", "half")):
        a, b = (start + i for i in _pairs(r, pairing))
        oa, ob = (start + i for i in _pairs(r, out)) if out else (a, b)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.hypot(y[..., oa], y[..., ob]) / np.hypot(x[..., a], x[..., b])
        norm = float(np.nanmedian(ratio))
        tried.append((float(np.nanmax(np.abs(ratio / norm - 1))), pairing, out, norm,
                      np.arctan2(x[..., a] * y[..., ob] - x[..., b] * y[..., oa],
                                 x[..., a] * y[..., oa] + x[..., b] * y[..., ob])))
    _, spec.pairing, spec.output_pairing, spec.norm_scale, angle = min(tried, key=lambda t: t[0])
    spec.rotary_start, spec.rotary_dim = start, r
    theta = model.theta(model, int(np.max(positions, initial=0)) + 1)
    if theta.ndim != 1 or len(theta) != r // 2 or not np.all(theta > 0):
        return spec
    order = np.argsort(theta)
    pos = np.broadcast_to(positions, angle.shape[:-1])
    held = angle[..., order[0]] / theta[order[0]]
    for k in order[1:]:
        held = (angle[..., k] + 2 * np.pi * np.round((held * theta[k] - angle[..., k]) / (2 * np.pi))) / theta[k]
    near = np.abs(held * theta[order[0]]) < 3             # rows whose slowest angle has not wrapped
    if not near.any():
        return spec
    pos, held, angle = pos[near], held[near], angle[near]
    shifts, counts = np.unique(np.round(held - pos), return_counts=True)
    spec.offset = float(shifts[np.argmax(counts)])
    other = np.round(held - pos) != spec.offset
    gap = np.round(pos[other] + spec.offset - held[other])
    if other.any() and np.ptp(np.round(held[other])) == 0:
        spec.table_end = (float(np.round(held[other][0])), "clamped")
    elif other.any() and gap.min() > 0 and np.all(gap % gap.min() == 0):
        spec.table_end = (float(gap.min()) - 1, "repeated")
    j, slow = order[0], np.abs(pos * theta[order[0]]) < 1
    if j > 0 and slow.sum() > 2 and np.ptp(pos[slow]) > 0:      # theta_j from the slowest pair's line (any offset)
        (slope, _), resid = np.polyfit(pos[slow], angle[slow, j], 1, full=True)[:2]
        spread = np.sqrt(float(np.sum(resid)) / max(slow.sum() - 2, 1) / np.var(pos[slow]) / slow.sum()) / abs(slope)
        base = abs(slope) ** (-r / (2 * j))
        spec.base = next((nice for k in range(1, 13) if abs((nice := float(f"{base:.{k}g}")) / base - 1)
                          <= 6 * spread * r / (2 * j) + 1e-12), base)
    return spec
