"""The public checks: identify (what a kernel does, measured), assert_rope_matches and assert_rope_grad_matches (its
angle table compared with the one the oracle computes for the expectation, a difference explained only by the
catalogue of known defects)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping

import numpy as np

from .._validate import (check_base, check_choice, check_d, check_keywords, check_nonnegative_int,
                         check_positive_real, check_scalar)
from ..hf_config import from_hf_config
from ..scaling import METHOD_PARAM_KEYS, ROPE_TYPES, scaled_inv_freq
from .axes import assert_axes_match, identify_axes
from .defects import Model, diagnose
from .measure import MAX_ROWS, probe_one_axis
from .probe import Caller
from .spec import AxesSpec, RopeMismatch, RopeSpec

_SPEC_KEYS = ("pairing", "rotary_dim", "rotary_start", "output_pairing", "offset", "base", "norm_scale", "rope_type",
              "inv_freq")
_CONFIG_ATTRIBUTES = ("head_dim", "rotary_dim", "pairing", "base", "rope_type", "params", "attention_factor")


def identify(fn, d: int, *, axes: int | None = None, seq: int = 64, seed: int | None = 0, max_rows: int = MAX_ROWS,
             base_hint: float | None = None, **axes_options) -> RopeSpec:
    """Measure the rotary embedding ``fn(x) -> y`` applies: a :class:`RopeSpec`.

    ``x`` float64 ``(seq, d)``, row r at the kernel's own position offset + r; fn may return numpy, torch or a list.
    Calls fn d + 5 times on ``seq`` rows (random inputs from ``seed``, the basis vectors), then once on
    ``max_rows`` rows (the most fn accepts) with 1 on the first feature of every pair, whose output is each pair's
    cos and sin: the angle table.  ``base_hint``: a base the scaling methods are tried with (NTK, LongRoPE).
    ``axes=A``: a multi-axis kernel ``fn(x, positions)``, measured by :func:`~.axes.identify_axes`.

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
    """Raise :class:`RopeMismatch` (an AssertionError) naming how ``fn`` differs from what you expect; return the
    :class:`RopeSpec` measured when it matches.

    ``fn(x) -> y`` as for :func:`identify`.  ``expected``: ``pairing``, ``rotary_dim``, ``rotary_start`` (default
    0), ``output_pairing`` (default None: in place), ``offset`` (default 0; None: not checked), ``base``,
    ``norm_scale``, ``rope_type`` with its parameters, or ``inv_freq``.  ``config``: a config.json (dict or path) or
    a RopeConfig giving ``d`` and the expectations (keywords win).  The oracle's angle table for the expectation
    must reproduce the kernel's within float32 rounding (and the rounding of fn's own 16-bit output), plus
    ``phase_atol`` radians; a difference is named by the known defect that explains it (``RopeMismatch.defects``),
    else described.  An exception inside fn is re-raised as ``KernelRaised``.  A multi-axis config or ``axes=A``
    checks ``fn(x, positions)`` (:func:`~.axes.assert_axes_match`).

    >>> import rope_ref as rr, numpy as np
    >>> spec = rr.assert_rope_matches(lambda x: rr.rotate(x, np.arange(len(x)) + 5.0), 8, offset=5, base=1e4)
    """
    d, axes, expected = _expectations(d, config, axes, expected, phase_atol)
    if axes is not None:
        return assert_axes_match(fn, d, axes, seq=seq, phase_atol=phase_atol, **expected)
    spec = probe_one_axis(Caller(fn, raising=True), d, seq=seq, max_rows=max_rows, base_hint=expected.get("base"))
    return _judge(spec, expected, phase_atol, "RoPE mismatch")


def assert_rope_grad_matches(vjp, d: int | None = None, *, config=None, seq: int = 64,
                             phase_atol: float | None = None, max_rows: int = MAX_ROWS, **expected) -> RopeSpec:
    """Raise :class:`RopeMismatch` naming how the backward pass ``vjp`` differs from that of the RoPE expected.

    ``vjp(x, g) -> dx``: the gradient of ``sum(fn(x) * g)`` with respect to x, which for RoPE is R^T g: g rotated
    by minus the angles of eq 34.  It is measured as a kernel of g (at a fixed random x) and its angles negated;
    the rest as :func:`assert_rope_matches`.  Returns the :class:`RopeSpec` of the forward it implies.

    >>> import rope_ref as rr, numpy as np
    >>> back = lambda x, g: rr.rotate(g, np.arange(len(g)), inv_freq=-rr.frequencies(8))
    >>> spec = rr.assert_rope_grad_matches(back, 8, base=1e4, offset=0)
    """
    if not callable(vjp):
        raise TypeError(f"vjp must be callable as vjp(x, g) -> dx (the backward pass), got {type(vjp).__name__}")
    d, _, expected = _expectations(d, config, None, expected, phase_atol, backward=True)
    back = probe_one_axis(Caller(lambda g: vjp(np.random.default_rng(len(g)).standard_normal(g.shape), g),
                                 raising=True), d, seq=seq, max_rows=max_rows)
    if not back.is_rope:
        raise RopeMismatch("", [f"backward: {back}"], back)
    forward = np.zeros((2, 1)) if back.table is None else -back.table
    spec = dataclasses.replace(back, table=forward, notes=list(back.notes),
                               inv_freq=None if back.inv_freq is None else -back.inv_freq,
                               offset=None if back.offset is None else back.offset)
    if spec.linear:                                     # the backward's measured frequencies, negated
        spec.notes = [n for n in spec.notes if "clockwise" not in n]
    return _judge(spec, expected, phase_atol, "RoPE backward mismatch (vjp(x, g) should rotate g by minus the "
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
    frequency_keys = {"base", "rope_type", "inv_freq", *METHOD_PARAM_KEYS} & set(expected)
    params = {k: v for k, v in expected.items() if k not in _SPEC_KEYS}
    model = Model(pairing=expected.get("pairing", spec.pairing),
                  rotary_dim=expected.get("rotary_dim", spec.rotary_dim),
                  rotary_start=expected.get("rotary_start", 0),
                  output_pairing=expected.get("output_pairing"),
                  offset=expected.get("offset", 0.0) if "offset" not in expected or expected["offset"] is not None
                  else spec.offset,
                  base=float(expected.get("base", 10000.0)), rope_type=expected.get("rope_type", "default"),
                  params=params, norm_scale=expected.get("norm_scale"))
    if "inv_freq" in expected:
        model = dataclasses.replace(model, inv_freq=np.asarray(expected["inv_freq"], np.float64))
    elif not frequency_keys:                # the frequencies are not checked: the measured ones
        model = dataclasses.replace(model, inv_freq=spec.inv_freq)
    elif model.norm_scale is None and model.rope_type in ("yarn", "longrope"):
        try:
            length = {"seq_len": (model.offset or 0) + (spec.rows or 1)} if model.rope_type == "longrope" else {}
            factor = scaled_inv_freq(model.rotary_dim, model.base, rope_type=model.rope_type, **length, **params)[1]
        except (TypeError, ValueError):
            factor = None
        model = dataclasses.replace(model, norm_scale=factor)
    return model


def _expectations(d, config, axes, expected, phase_atol, backward=False):
    """(d, axes, expectations) from the arguments and a config.json (dict or path) or RopeConfig; keywords win."""
    if isinstance(config, (Mapping, str, os.PathLike)):
        config = from_hf_config(config)
    if config is not None:
        missing = [n for n in _CONFIG_ATTRIBUTES if not hasattr(config, n)]
        if missing:
            raise TypeError(f"config must be a config.json (dict or path) or a RopeConfig, got "
                            f"{type(config).__name__} without {missing}")
        config_axes = getattr(config, "axes", None) or None
        if backward and config_axes:
            raise ValueError(f"config is multi-axis RoPE ({config.axes} position axes): backward passes are checked "
                             "for 1-D RoPE only")
        if axes not in (None, config_axes):
            raise ValueError(f"axes={axes!r} disagrees with config, whose RoPE has {config_axes or 1} position axes")
        want = dict(pairing=config.pairing, rotary_dim=config.rotary_dim, norm_scale=config.attention_factor,
                    rotary_start=getattr(config, "rotary_start", 0))
        if config_axes and not {"inv_freq", "sections", "layout", "base"} & set(expected):
            layout = getattr(config, "mrope_interleaved", False)
            want.update(dict(sections=config.mrope_section, base=config.base, layout=layout if isinstance(
                layout, str) else "interleaved" if layout else "blocks") if getattr(config, "mrope_section", None)
                else dict(inv_freq=config.inv_freq()))
        elif not config_axes:
            want.update(base=config.base, offset=0, output_pairing=getattr(config, "output_pairing", None))
            if "rope_type" not in expected and "inv_freq" not in expected:
                want.update(rope_type=config.rope_type, **dict(config.params))
                if getattr(config, "clockwise", False):
                    want["inv_freq"] = config.inv_freq()
        d, axes, expected = (config.head_dim if d is None else d), config_axes, {**want, **expected}
    if d is None:
        raise TypeError("assert_rope_matches needs d (features per row) or config= with a head_dim")
    d = check_d(d)
    if axes is None:
        check_keywords(expected, {*_SPEC_KEYS, *METHOD_PARAM_KEYS, "seq_len"}, "assert_rope_matches()")
        check_expected(expected, phase_atol)
    return d, axes, expected


def check_expected(expected, phase_atol=None):
    """Each expected value is the right kind of thing, named when not."""
    if expected.get("offset") is not None:
        expected["offset"] = check_scalar(expected["offset"], "offset")
    for name, check in (("norm_scale", check_positive_real), ("base", check_base), ("rotary_dim", check_d),
                        ("rotary_start", check_nonnegative_int)):
        if expected.get(name) is not None:
            check(expected[name], name)
    for name, valid in (("pairing", ("interleaved", "half", "other")), ("rope_type", ROPE_TYPES)):
        if name in expected:
            check_choice(expected[name], name, valid)
    if expected.get("output_pairing") is not None:
        check_choice(expected["output_pairing"], "output_pairing", ("interleaved", "half", "other"))
    if phase_atol is not None:
        check_positive_real(phase_atol, "phase_atol", "None or a positive number of radians")
