"""The public checks: identify (what a kernel does, measured), assert_rope_matches and assert_rope_grad_matches (its
angle table against the oracle's for the expectation, a difference explained only by the catalogue of known defects)."""

from __future__ import annotations

import dataclasses

import numpy as np

from .._validate import RESOLVED_ANGLE, check_d, check_freqs, check_keywords, check_positive_real
from ..hf_config import RopeConfig, from_hf_config
from ..scaling import METHOD_PARAM_KEYS, scaled_inv_freq
from .axes import assert_axes_match, identify_axes
from .defects import FIELD_CHECKS as _FIELDS
from .defects import Model, diagnose
from .measure import MAX_ROWS, method_frequencies, probe_one_axis
from .probe import Caller
from .spec import AxesSpec, RopeMismatch, RopeSpec, show_number


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
        check_keywords(expected, assert_axes_match.__kwdefaults__, f"assert_rope_matches(axes={axes})")
        return assert_axes_match(fn, d, axes, seq=seq, phase_atol=phase_atol, **expected)
    return _judge(fn, d, seq, max_rows, expected, phase_atol)


def assert_rope_grad_matches(vjp, d: int | None = None, *, config=None, seq: int = 64,
                             phase_atol: float | None = None, max_rows: int = MAX_ROWS, **expected) -> RopeSpec:
    """:func:`assert_rope_matches` for a backward pass ``vjp(x, g) -> dx``, the gradient of ``sum(fn(x) * g)``: for
    RoPE R^T g, g turned by minus the angles of eq 34; measured as a kernel of g, its angles negated."""
    if not callable(vjp):
        raise TypeError(f"vjp must be callable as vjp(x, g) -> dx (the backward pass), got {type(vjp).__name__}")
    d, _, expected = _expectations(d, config, None, expected, phase_atol, backward=True)
    return _judge(lambda g: vjp(np.random.default_rng(len(g)).standard_normal(g.shape), g), d, seq, max_rows,
                  expected, phase_atol, backward=True)


def _judge(fn, d, seq, max_rows, expected, phase_atol, backward=False):
    """The spec of ``fn`` (a ``backward`` pass: its angles negated) when the expectation's model reproduces it; else
    RopeMismatch with the diagnosis."""
    spec = probe_one_axis(Caller(fn, raising=True), d, seq=seq, max_rows=max_rows, base_hint=expected.get("base"))
    if not spec.is_rope:
        raise RopeMismatch("", [("backward: " if backward else "") + str(spec)], spec)
    if backward:
        spec = dataclasses.replace(spec, table=-spec.table, inv_freq=None if spec.inv_freq is None else -spec.inv_freq)
    model = expected_model(expected, spec)
    _refuse_unresolvable(model, spec, expected)
    problems, defects = diagnose(model, spec, phase_atol)
    if problems:
        raise RopeMismatch("RoPE backward mismatch (vjp(x, g) should rotate g by minus the forward angles)"
                           if backward else "RoPE mismatch", problems, spec, defects)
    return spec


def _refuse_unresolvable(model, spec, expected):
    """A ValueError naming offset, or the frequencies' argument, when they take the expected angles on the rows read
    to 2^34 rad or beyond, where float64 rounds them by more than 1e-6 rad (the oracle's precision warning)."""
    n = len(spec.table)
    m = (model.offset or 0.0) + np.array([0.0, n - 1])
    try:
        theta = float(np.abs(model.theta(model, int(round(np.max(m, initial=0))) + 1)).max(initial=0.0))
    except (ValueError, TypeError, ZeroDivisionError):        # the oracle refuses the model: the diagnosis says so
        return
    peak = float(np.abs(m).max()) * theta
    if peak >= RESOLVED_ANGLE:
        frequencies = next((k for k in ("inv_freq", "base", "rope_type") if k in expected), "base")
        name = frequencies if (n - 1) * theta >= RESOLVED_ANGLE else "offset"
        raise ValueError(f"{name} must keep the expected angles below 2^34 rad, where float64 resolves them, got "
                         f"{peak:.3g} rad on rows 0..{n - 1} (offset "
                         f"{show_number(model.offset, '.3g')}, fastest frequency {theta:.3g}): they cannot be checked")


def expected_model(expected, spec) -> Model:
    """The oracle's :class:`Model` of the expectation; what is not expected is taken as measured (not checked)."""
    if not isinstance(expected, dict):
        raise TypeError(f"expected must be a dict of assert_rope_matches' keywords, got {expected!r:.60}")
    given = {k: v for k, v in expected.items() if k in _FIELDS}      # Model's fields; the rest: the method's params
    unchecked = not {"base", "rope_type", *METHOD_PARAM_KEYS} & set(expected)       # frequencies: the measured
    width = 2 * len(given["inv_freq"]) if np.ndim(given.get("inv_freq")) == 1 else spec.rotary_dim   # its pairs'
    inv_freq, offset = given.pop("inv_freq", spec.inv_freq if unchecked else None), given.pop("offset", 0.0)
    model = Model(**{"pairing": spec.pairing, "rotary_dim": width, **given,
                     "base": float(given.get("base", 10000.0)), "offset": spec.offset if offset is None else offset},
                  params={k: v for k, v in expected.items() if k not in _FIELDS},
                  inv_freq=None if inv_freq is None else np.asarray(inv_freq, np.float64))
    if model.inv_freq is None and model.norm_scale is None and model.rope_type in ("yarn", "longrope"):
        length = {"seq_len": (model.offset or 0) + (spec.rows or 1)} if model.rope_type == "longrope" else {}
        return dataclasses.replace(model, norm_scale=method_frequencies(
            model.rope_type, dict(model.params, base=model.base, **length), model.rotary_dim)[1])
    return model


def _expectations(d, config, axes, expected, phase_atol, backward=False):
    """(d, axes, expectations) from the arguments and a config.json (dict or path) or RopeConfig; keywords win."""
    if config is not None:
        config = config if isinstance(config, RopeConfig) else from_hf_config(config)
        if backward and config.axes:
            raise ValueError(f"config is multi-axis RoPE ({config.axes} axes): backward passes are checked for 1-D")
        if axes not in (None, config.axes):
            raise ValueError(f"axes={axes!r} disagrees with config, whose RoPE has {config.axes or 1} position axes")
        want = dict(pairing=config.pairing, rotary_dim=config.rotary_dim, norm_scale=config.attention_factor)
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
    d, expected = check_d(d), {k: v for k, v in expected.items() if v is not None or k == "offset"}    # None: unset
    if axes is None:
        check_keywords(expected, {*_FIELDS, *METHOD_PARAM_KEYS, "seq_len"}, "assert_rope_matches()")
    expected.update({k: _FIELDS[k](v, k) for k, v in expected.items() if _FIELDS.get(k) and v is not None})
    r, start, f = expected.get("rotary_dim"), expected.get("rotary_start") or 0, expected.get("inv_freq")
    if axes is None and f is not None:                  # (pairs,), rotary_dim/2 of them when given
        f = expected["inv_freq"] = check_freqs(f, "inv_freq", n_pairs=r and r // 2)
    width = r or (2 * len(f) if axes is None and f is not None else 2)      # the features rotated, at the least
    if start + width > d:
        raise ValueError(f"rotary_start + the rotated features (rotary_dim, else 2 len(inv_freq), else 2) must be at "
                         f"most d={d}, got {start} + {width}")
    if axes is None and f is None:                     # the method's parameters, refused by name (not a mismatch)
        params = {k: v for k, v in expected.items() if k not in _FIELDS}
        scaled_inv_freq(r or 2 * np.size(params.get("short_factor", d / 2)), expected.get("base") or 10000.0,
                        rope_type=expected.get("rope_type") or "default", **params)
    if phase_atol is not None:
        check_positive_real(phase_atol, "phase_atol", "None or a positive number of radians")
    return d, axes, expected
