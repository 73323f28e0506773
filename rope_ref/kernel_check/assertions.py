"""assert_rope_matches and assert_rope_grad_matches: what fn (or its backward pass) does against what you expect,
as one readable AssertionError."""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping

import numpy as np

from .._validate import check_keywords
from ..forms import frequencies
from ..hf_config import from_hf_config
from ..scaling import METHOD_PARAM_KEYS, scaled_inv_freq
from .analyse import probe_one_axis
from .axes_compare import FLOAT32_RTOL, assert_axes_match
from .naming import ROUNDING_TYPES, geometric_base, method_frequencies, rounded_to, scale_tol
from .spec import (AxesSpec, KernelRaised, RopeMismatch, RopeSpec, check_expected, layout_problems, precision_problems,
                   raising_as, show_number, show_params)
from .tolerances import MAX_BYTES, MAX_ROWS, OFFSET_SIGMA, SIGMAS, TIMEOUT

_SPEC_KEYS = ("pairing", "rotary_dim", "rotary_start", "output_pairing", "offset", "base", "norm_scale", "rope_type",
              "inv_freq")
_CONFIG_ATTRIBUTES = ("head_dim", "rotary_dim", "pairing", "base", "rope_type", "params", "attention_factor")


def assert_rope_matches(fn, d: int | None = None, *, config=None, axes: int | None = None, seq: int = 64,
                        phase_atol: float | None = None, max_rows: int | None = None, max_bytes: int = MAX_BYTES,
                        timeout: float | None = TIMEOUT, **expected) -> RopeSpec | AxesSpec:
    """Raise AssertionError (:class:`RopeMismatch`) naming every property in which ``fn`` differs from
    ``expected``; return the :class:`RopeSpec` when all match.

    ``fn(x) -> y`` as for :func:`identify` (``max_rows``, ``max_bytes``, ``timeout`` as there).  ``expected``:
    ``pairing``, ``rotary_dim``, ``rotary_start`` (default 0), ``output_pairing`` (default None: in place;
    "half" for DeepSeek's interleave-then-half), ``offset``, ``base``, ``norm_scale``, ``rope_type``,
    ``inv_freq`` and the parameters of ``rope_type`` (``seq_len``: by default last position + 1).  ``config``:
    a ``config.json`` (dict or path) or a ``RopeConfig``-like object giving ``d`` and the expectations (keywords
    win; ``offset=0`` unless given, ``offset=None`` skips it).  Angles must behave like float32 or better, or
    deviate from (offset + row) * theta by at most ``phase_atol`` radians.  An exception raised inside ``fn`` is
    re-raised as ``KernelRaised``.  A multi-axis ``config`` (M-RoPE) or ``axes=A`` checks ``fn(x, positions)``
    with :func:`~.axes_compare.assert_axes_match` (its keywords) and returns the :class:`AxesSpec`.

    >>> import rope_ref as rr, numpy as np
    >>> spec = rr.assert_rope_matches(lambda x: rr.rotate(x, np.arange(len(x)) + 5.0), 8, offset=5, base=1e4)
    >>> F = rr.mrope_frequencies(16, [4, 2, 2], interleaved=True)      # Qwen3-VL's layout
    >>> kernel = lambda x, p: rr.rotate(x, p, inv_freq=F, pairing="half")
    >>> spec = rr.assert_rope_matches(kernel, 16, axes=3, sections=[4, 2, 2], layout="interleaved")
    """
    d, axes, expected = _expectations(d, config, axes, expected, phase_atol)
    if axes is not None:
        if max_rows is not None:
            raise TypeError("max_rows= is for 1-D kernels fn(x); a multi-axis kernel is probed on seq rows: pass "
                            "max_position= (the largest position it accepts) instead")
        return assert_axes_match(fn, d, axes, seq=seq, phase_atol=phase_atol, max_bytes=max_bytes,
                                 timeout=timeout, **expected)
    spec = _probe(raising_as("fn", fn), d, seq=seq, base_hint=expected.get("base"), max_rows=max_rows,
                  max_bytes=max_bytes, timeout=timeout)
    if not spec.is_rope:
        raise RopeMismatch("", [str(spec)], spec)
    problems = compare(spec, expected, phase_atol, whose="the config's" if config is not None else "the expected")
    if problems:
        raise RopeMismatch("RoPE mismatch", problems, spec)
    return spec


def _probe(fn, d, **probing):
    """identify's 1-D probe; the notes of an error fn raised (which call, what to try) go into its message."""
    try:
        return probe_one_axis(fn, d, **probing)
    except KernelRaised as err:
        raise KernelRaised("\n".join([str(err), *getattr(err, "__notes__", [])])) from err.__cause__


def _expectations(d, config, axes, expected, phase_atol, backward=False):
    """(d, axes, expectations) from the arguments and a config.json (dict or path) or RopeConfig-like object; keywords
    win.  1-D: row 0 at position 0 unless ``offset`` is given, each expectation checked; multi-axis: the config's
    matrix unless inv_freq/sections/layout/base (assert_axes_match checks them)."""
    if isinstance(config, (Mapping, str, os.PathLike)):
        config = from_hf_config(config)
    if config is not None:
        missing = [n for n in _CONFIG_ATTRIBUTES if not hasattr(config, n)]
        if missing:
            raise TypeError(f"config must be a model's config.json (a dict or a path, as rope_ref.from_hf_config "
                            f"reads) or a RopeConfig (rope_ref.from_hf_config) or have its attributes; "
                            f"{type(config).__name__} lacks {missing}")
        config_axes = getattr(config, "axes", None) or None
        if backward and config_axes:
            raise ValueError(f"config is multi-axis RoPE ({config.axes} position axes: M-RoPE): backward passes are "
                             "checked for 1-D RoPE only")
        if axes not in (None, config_axes):
            raise ValueError(f"axes={axes!r} disagrees with config, whose RoPE has {config.axes} position axes "
                             "(M-RoPE: t, h, w); leave axes= out with config=" if config_axes else
                             f"axes={axes!r} with a config whose RoPE has one position per row (1-D): leave axes= "
                             "out to check fn(x) against it")
        if config_axes and getattr(config, "output_pairing", None) is not None:
            raise ValueError(f"config writes its pairs in {config.output_pairing} layout (output_pairing): "
                             "multi-axis probing follows pairs written back in place only")
        want = dict(pairing=config.pairing, rotary_dim=config.rotary_dim, norm_scale=config.attention_factor,
                    rotary_start=getattr(config, "rotary_start", 0))
        if config_axes and not {"inv_freq", "sections", "layout", "base"} & set(expected):
            want["inv_freq"] = config.inv_freq()
        elif not config_axes:
            want.update(base=config.base, offset=0, output_pairing=getattr(config, "output_pairing", None))
            if "rope_type" not in expected and "inv_freq" not in expected:
                want.update(rope_type=config.rope_type, **dict(config.params))
                if getattr(config, "clockwise", False):          # NanoChat: the config's negative frequencies
                    want["inv_freq"] = config.inv_freq()
        d, axes, expected = (config.head_dim if d is None else d), config_axes, {**want, **expected}
    if d is None:
        raise TypeError("assert_rope_matches needs d (features per row) or config= with a head_dim")
    if axes is None:
        check_keywords(expected, {*_SPEC_KEYS, *METHOD_PARAM_KEYS, "seq_len"}, "assert_rope_matches()")
        check_expected(expected, phase_atol)
    return d, axes, expected


def compare(spec, expected, phase_atol, *, what="fn", whose="the expected") -> list:
    """The differences between ``spec`` and ``expected``, a line each; ``whose``: where the expectations came from."""
    problems = layout_problems(spec, expected.get("pairing"), expected.get("rotary_dim"),
                               expected.get("rotary_start", 0))     # by default the leading features rotate
    if expected.get("output_pairing") != spec.output_pairing:     # by default, pairs written back in place
        want = expected.get("output_pairing") or "in place"
        shown = ", ".join(f"{p}->{o}" for p, o in zip(spec.pairs[:2], (spec.output_pairs or spec.pairs)[:2]))
        problems.append(f"output_pairing: expected pairs written {want}, found {spec.output_pairing or 'in place'} "
                        f"({shown}, ...)")
    if spec.rounded_positions:          # neither offset nor frequencies are measured at shared positions
        return problems + [f"positions: rows share positions, as positions offset + r rounded to "
                           f"{spec.rounded_positions} do: keep position ids integers, or float32 (see the note)"]
    if expected.get("offset") is not None:
        problems += _compare_offset(expected["offset"], spec)
    if spec.table_end:
        problems.append(f"table: the cos/sin table stops at position {spec.table_end[0]:.0f} and rows "
                        f"beyond it are {spec.table_end[1]} (see the note): every position needs its own row")
    if expected.get("rope_type") in ("dynamic", "longrope") and expected.get("seq_len") is None:
        offset = spec.offset if expected.get("offset") is None else expected["offset"]
        expected = {**expected, "seq_len": max(int(round(offset)) + spec.rows, 1)}      # last position + 1
    want_freqs, want_scale = _expected_frequencies(expected, spec)
    freq_problems = [] if want_freqs is None else _compare_frequencies(want_freqs, spec, expected, whose)
    problems += freq_problems
    if freq_problems and expected.get("rope_type") == spec.rope_type == "dynamic":   # name the parameter
        problems += [f"{k}: expected {show_number(expected[k])}, found {show_number(spec.rope_params[k])}"
                     for k in ("factor", "max_position_embeddings") if expected.get(k, spec.rope_params[k])
                     != spec.rope_params[k]]
    want_scale = expected.get("norm_scale", want_scale)
    scale_rtol = max(scale_tol(spec), FLOAT32_RTOL)          # the expected factor may be a float32 one
    if want_scale is not None and abs(spec.norm_scale / want_scale - 1) > scale_rtol:
        hint = " (attention factor not applied?)" if math.isclose(spec.norm_scale, 1.0, rel_tol=scale_rtol) else ""
        problems.append(f"norm_scale: expected {want_scale:.6g}, found {spec.norm_scale:.6g}{hint}")
    if spec.stateful:
        problems.append(f"state: {what} keeps state between calls (its output for the same input changed after "
                        "calls on more rows): its frequencies at one length depend on the calls before")
    return problems + precision_problems(spec, phase_atol, "(offset + row) * theta",
                                         f"they come with norm errors up to {spec.scale_error:.2g}: cos/sin or the "
                                         "output rounded to a 16-bit type (cos.to(x.dtype)?); pass phase_atol= to "
                                         "accept that precision", "compute angles in float32 or better")


def _compare_offset(want, spec):
    diff, within = spec.offset - want, max(SIGMAS * spec.offset_resolution, 1e-9)
    expected = f"offset: expected row 0 at position {show_number(float(want))}"
    if np.any(np.abs(np.asarray(spec.offset_alternatives, float) - want) <= within) and abs(diff) > 0:
        return [f"{expected}: it fits the angles, but so do {show_number(spec.offset)} (reported) and "
                f"{len(spec.offset_alternatives) - 1} other offsets: not determined by these rotations (see the note)"]
    if abs(diff) <= within:
        if spec.offset_resolution <= OFFSET_SIGMA or want != round(want):
            return []
        return [f"{expected}, measured {spec.offset:.7g} +- {spec.offset_resolution:.2g}: not resolved to one "
                f"position from {spec.rows} rows (pass a larger max_rows if fn accepts more rows)"]
    why = (" (kernel ignores its cache offset?)" if spec.offset == 0 else " (positions off by one?)"
           if abs(abs(diff) - 1) <= within else f" (positions shifted by {show_number(diff)})")
    return [f"{expected}, found {show_number(spec.offset)}{why}"]


def _expected_frequencies(expected, spec):
    """The expected frequencies and attention factor (None, None when nothing about them is expected)."""
    if "inv_freq" in expected:
        return np.asarray(expected["inv_freq"], float), None
    params = {k: v for k, v in expected.items() if k not in _SPEC_KEYS}
    if "base" not in expected and "rope_type" not in expected and not params:
        return None, None
    return scaled_inv_freq(expected.get("rotary_dim", spec.rotary_dim), expected.get("base", 10000.0),
                           rope_type=expected.get("rope_type", "default"), **params)


def _compare_frequencies(want, spec, expected, whose):
    found, tol = spec.inv_freq, spec.freq_tolerance
    if want.shape != found.shape:
        return [f"frequencies: expected {want.size} pairs, found {found.size}"]
    with np.errstate(divide="ignore", invalid="ignore"):
        bad = np.flatnonzero(np.where(want == 0, np.abs(found), np.abs(found / want - 1)) > tol)
    if bad.size == 0:
        return _told_apart(want, spec)
    msg = "frequencies: " + "; ".join(f"pair {p} expected {want[p]:.6g}, found {found[p]:.6g}" for p in bad[:3])
    aliased = np.abs(want) > np.pi
    if np.any(aliased[bad]):
        fast = np.flatnonzero(aliased)
        return [msg + f"; pairs {fast[0]}..{fast[-1]} are expected to turn by more than pi rad per row (up to "
                f"{np.abs(want).max():.4g}): sampled once per row such a turn aliases to theta - 2 pi k, so no "
                "per-row measurement can check it (it is not a clockwise rotation). Give fn rows fewer positions "
                "apart (consecutive positions), or check those pairs another way"]
    msg += _frequency_defect(found, want, expected, tol, whose)
    lines = [msg + f"; {bad.size} of {want.size} pairs differ (tolerance {tol:.1e} relative); " + _kernel_named(spec)]
    if expected.get("rope_type") == "longrope":
        lines.append(_longrope_factor_set(spec, expected))
    return lines


def _told_apart(want, spec):
    """The frequency line when they agree within the largest pair's tolerance, yet identify told them apart pair
    by pair: the kernel has the expected method's frequencies rounded to a 16-bit type (spec.frequency_defect)."""
    if not (spec.frequency_defect or "").startswith("rounded to "):
        return []
    named = method_frequencies(spec.closest, spec.rope_params, spec.rotary_dim)[0]
    if named is None or named.shape != want.shape or not np.all(np.abs(named / want - 1) <= spec.freq_tolerance):
        return []
    return [f"frequencies: the expected ones {spec.frequency_defect}, told apart within each pair's tolerance (see "
            f"the note): model.to(torch.{spec.frequency_defect.removeprefix('rounded to ')}) rounds a module's "
            "inv_freq buffer; keep it in float32"]


def _frequency_defect(found, want, expected, tol, whose):
    """" (what turns the expected frequencies into the found ones)", or "" when no known bug does: a flipped
    sign, theta indexed from 1, a buffer rounded to a 16-bit type, the scaling method left out, base 10^4."""
    r, base, rope_type = 2 * len(want), expected.get("base", 10000.0), expected.get("rope_type", "default")

    def rounded(freqs, words):
        return [(rounded_to(freqs, t), f"{words} rounded to {t}: model.to(torch.{t}) rounds a module's inv_freq "
                 "buffer (transformers #25681, #29496); keep it in float32") for t in ROUNDING_TYPES]
    known = [(-want, "every sign flipped: rotation is clockwise"),
             (want * (want[1] / want[0]) if len(want) > 1 else want, "found theta_i = expected theta_{i+1}: "
                                                                     "indexed from 1?")]
    known += rounded(want, "the expected frequencies")
    if "inv_freq" not in expected and rope_type != "default":
        missing = (f"{whose} {rope_type} scaling is missing: the kernel has base {show_number(base)}'s unscaled "
                   "frequencies")
        plain = frequencies(r, base)
        known += [(plain, missing),
                  (plain * base ** (-2 / r), missing + ", indexed from 1 (theta_i = base^(-2(i+1)/d))")]
        known += rounded(plain, missing + ",")
    known.append((frequencies(r, 10000.0), "the kernel uses the default base 10000: base left at 10^4?"))
    with np.errstate(divide="ignore", invalid="ignore"):      # pairs expected not to turn (proportional RoPE): 0/0
        return next((f" ({words})" for freqs, words in known if np.all(np.abs(found / freqs - 1) <= tol)), "")


def _kernel_named(spec):
    """What the kernel's own frequencies are, never the expectation passed to identify as base_hint."""
    theta = np.abs(spec.inv_freq)
    if len(theta) < 2 or not np.all(theta > 0):
        return f"the kernel: rope_type {spec.rope_type}"
    base = geometric_base(theta, spec.rotary_dim, np.full(len(theta), spec.freq_tolerance))
    named = "" if spec.rope_type in (None, "default") else (            # a frequency defect is named "custom"
        f", named {spec.closest if spec.frequency_defect else spec.rope_type} {show_params(spec.rope_params)}"
        + (f" with frequencies {spec.frequency_defect}" if spec.frequency_defect else ""))
    return f"the kernel's frequencies follow base {show_number(float(f'{base:.7g}'))} (leading pairs){named}"


def _longrope_factor_set(spec, expected):
    """Which LongRoPE factor set the kernel uses at the length measured, and where the switch is expected."""
    L, found, sets = expected["seq_len"], spec.inv_freq, {}
    L_train = expected.get("original_max_position_embeddings") or expected.get("max_position_embeddings")
    params = {k: v for k, v in expected.items() if k != "inv_freq"}
    for name, seq_len in (("short", 1), ("long", int(L_train) + 1)):
        freqs, _ = _expected_frequencies({**params, "seq_len": seq_len}, spec)
        sets[name] = bool(freqs.shape == found.shape and np.all(np.abs(found / freqs - 1) <= spec.freq_tolerance))
    uses = ("both (short_factor and long_factor agree)" if all(sets.values()) else
            "short_factor" if sets["short"] else "long_factor" if sets["long"] else "neither factor set")
    want = "long_factor" if L > L_train else "short_factor"
    return (f"longrope: at length {L} (last position + 1) the kernel uses {uses}; expected {want}: the switch to "
            f"long_factor is expected for lengths above original_max_position_embeddings = {L_train}")


def assert_rope_grad_matches(vjp, d: int | None = None, *, config=None, seq: int = 64,
                             phase_atol: float | None = None, max_rows: int = MAX_ROWS, max_bytes: int = MAX_BYTES,
                             timeout: float | None = TIMEOUT, **expected) -> RopeSpec:
    """Raise AssertionError naming every way the backward pass ``vjp`` differs from that of the RoPE expected.

    ``vjp(x, g) -> dx``: x and g ``(seq, d)``, dx the gradient of ``sum(fn(x) * g)`` with respect to x (e.g.
    ``torch.autograd.grad((fn(x) * g).sum(), x)[0]``): R(r)^T g, the rotation of g by minus the angles of eq 34,
    measured as a forward kernel (docs/identify_internals.md).  The other arguments and the expectations are
    :func:`assert_rope_matches`' for the forward pass; returns the :class:`RopeSpec` of the forward it implies.

    >>> import rope_ref as rr, numpy as np
    >>> back = lambda x, g: rr.rotate(g, np.arange(len(g)), inv_freq=-rr.frequencies(8))
    >>> spec = rr.assert_rope_grad_matches(back, 8, base=1e4, offset=0)
    """
    if not callable(vjp):
        raise TypeError(f"vjp must be callable as vjp(x, g) -> dx (the backward pass), got {vjp!r} of type "
                        f"{type(vjp).__name__}")
    d, _, expected = _expectations(d, config, None, expected, phase_atol, backward=True)
    guarded = raising_as("vjp", vjp)

    def g_to_dx(g):
        """The backward as a function of g alone, at one fixed random x per length."""
        return guarded(np.random.default_rng(len(g)).standard_normal(g.shape), g)
    back = _probe(g_to_dx, d, seq=seq, base_hint=expected.get("base"), max_rows=max_rows, max_bytes=max_bytes,
                  timeout=timeout, name="vjp", argument="g")
    if not back.is_rope:
        raise RopeMismatch("", [f"backward: {back}"], back)
    # the forward rotation whose vjp back is: every frequency negated (the names, from |theta|, stay)
    spec = dataclasses.replace(back, inv_freq=-back.inv_freq, notes=[n for n in back.notes if "clockwise" not in n])
    problems = [_backward_words(p) for p in compare(spec, expected, phase_atol, what="vjp")]
    if problems:
        raise RopeMismatch("RoPE backward mismatch (vjp(x, g) should rotate g by minus the forward angles)",
                           problems, back, "identified backward, as a rotation of g")
    return spec


def _backward_words(problem: str) -> str:
    """A forward report line, said of the backward."""
    problem = problem.replace("(every sign flipped: rotation is clockwise)", "(wrong direction: the backward rotates "
                              "g forward, by +angles, instead of applying the inverse rotation R^T)")
    if problem.startswith("pairing:"):
        problem += " (wrong pairing in the backward: it rotates other pairs than the forward)"
    return "backward " + problem
