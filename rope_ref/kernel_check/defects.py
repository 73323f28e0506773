"""The catalogue of known defects: each :class:`Defect` turns the oracle's :class:`Model` of the expectation into the
one a known bug gives, and is named only when that model reproduces what the kernel does within its own rounding.
Adding a known defect is adding one entry to :data:`DEFECTS` (docs/checking_kernels.md)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Callable, NamedTuple

import numpy as np

from .._validate import (check_base, check_choice, check_d, check_nonnegative_int, check_positive_real,
                         check_scalar)
from ..forms import _pairs, frequencies, rotation_angles, wrap_angle
from ..multiaxis import MROPE_LAYOUTS
from ..scaling import ROPE_TYPES, scaled_inv_freq
from .measure import NOISE_ULPS, allowance, norm_tolerance, rounded_to
from .probe import PRECISIONS
from .spec import show_number

OTHER_PAIRING = {"interleaved": "half", "half": "interleaved"}
_PAIRING = partial(check_choice, choices=("interleaved", "half", "other"))
#: The Model fields an expectation gives, each with its check (inv_freq: the oracle's, when the model is built)
FIELD_CHECKS = dict(pairing=_PAIRING, rotary_dim=check_d, rotary_start=check_nonnegative_int, output_pairing=_PAIRING,
                    offset=check_scalar, base=check_base, norm_scale=check_positive_real,
                    rope_type=partial(check_choice, choices=ROPE_TYPES), inv_freq=None)


def _oracle_freqs(model, seq_len):
    """theta of the model's recipe: its inv_freq, or scaled_inv_freq of base, rope_type and params."""
    if model.inv_freq is not None:
        return np.asarray(model.inv_freq, np.float64)
    params = {"seq_len": seq_len} | {k: v for k, v in model.params.items() if k != "base"}     # params' win
    return scaled_inv_freq(model.rotary_dim, model.base, rope_type=model.rope_type, **params)[0]


@dataclass(frozen=True)
class Model:
    """A RoPE as the oracle computes it: row r turns by angles(positions(offset + r), theta(seq_len))."""
    pairing: str | None
    rotary_dim: int | None
    rotary_start: int = 0
    output_pairing: str | None = None
    norm_scale: float | None = None
    offset: float | None = 0.0
    base: float = 10000.0
    rope_type: str = "default"
    params: dict = field(default_factory=dict)
    inv_freq: np.ndarray | None = None
    theta: Callable = _oracle_freqs                 # (model, seq_len) -> (pairs,)
    positions: Callable = lambda p: p               # positions as the kernel holds them
    angles: Callable = rotation_angles              # (positions, theta) -> (rows, pairs)
    table_type: str | None = None                   # cos/sin rounded to this 16-bit type
    sections: tuple | None = None                   # multi-axis: M-RoPE's pairs per axis, laid out as ``layout``
    layout: str = "blocks"
    shift: tuple | None = None                      # multi-axis: the shift of each axis (None: none)

    def __post_init__(self):                        # a model built by hand: its structure refused by name
        for k in ("pairing", "rotary_dim", "rotary_start", "output_pairing", "norm_scale"):
            if getattr(self, k) is not None:
                FIELD_CHECKS[k](getattr(self, k), k)

    def matrix(self):
        """F (pairs, axes) of a multi-axis model: inv_freq, or theta_j = base^(-2j/rotary_dim) on the axis
        MROPE_LAYOUTS gives pair j (NaN when the sections do not split the pairs)."""
        if self.inv_freq is not None:
            return self.inv_freq
        theta = frequencies(self.rotary_dim, self.base)
        try:                                        # theta_j in the column of pair j's axis
            F = np.eye(len(self.sections))[MROPE_LAYOUTS[self.layout][0](self.sections)].reshape(len(theta), -1)
        except (ValueError, IndexError):
            F = np.full((len(theta), len(self.sections)), np.nan)
        return F * theta[:, None]

    def angles_at(self, positions):
        """Angles ``P + (pairs,)`` at ``positions`` ``P`` (rows, moved by the offset)."""
        m = (self.offset or 0.0) + np.asarray(positions, np.float64)
        return self.angles(self.positions(m), self.theta(self, int(round(np.max(m, initial=0))) + 1))

    def rotate(self, x, positions):
        """The model's output on ``x`` ``(..., d)`` at ``positions`` (broadcasting to x.shape[:-1]): its pairs turned
        by its angles (eq 34), written in its output layout, times norm_scale."""
        with np.errstate(invalid="ignore"):         # positions a 16-bit type cannot hold: NaN angles, a miss
            ang = self.angles_at(positions)
            cos, sin = np.cos(ang), np.sin(ang)
        if self.table_type:
            cos, sin = rounded_to(cos, self.table_type), rounded_to(sin, self.table_type)
        s, n = self.rotary_start, self.rotary_dim // 2
        if s + 2 * n > np.shape(x)[-1]:
            raise ValueError(f"x must have rotary_start + rotary_dim = {s + 2 * n} features, got shape {np.shape(x)}")
        a, b = (s + i for i in _pairs(2 * n, self.pairing if self.pairing in OTHER_PAIRING else "interleaved"))
        oa, ob = (s + i for i in _pairs(2 * n, "half")) if self.output_pairing == "half" else (a, b)
        out, scale = np.array(x, np.float64), self.norm_scale or 1.0
        out[..., oa] = scale * (x[..., a] * cos - x[..., b] * sin)
        out[..., ob] = scale * (x[..., a] * sin + x[..., b] * cos)
        return out


class Defect(NamedTuple):
    """A known bug: ``apply(model, spec)`` -> (the model with that bug, what it changes in words), or None when it
    does not apply (nothing measured to take its parameter from)."""
    name: str
    description: str
    apply: Callable


def measured(field, found_as=None, when=None, show=None, none_ok=False):
    """The defect of a value that differs from the model's: the model takes the kernel's measured one (the spec's
    ``found_as``, by default ``field``) when it was measured (``none_ok``: None is a measured value too) and
    ``when(model, spec)`` allows; ``show(spec, value)`` words a value."""
    def apply(model, spec):
        want, found = getattr(model, field), getattr(spec, found_as or field)
        if np.array_equal(found, want) or (found is None and not none_ok) or (when and not when(model, spec)):
            return None
        shown = [show(spec, v) if show else show_number(v) for v in (want, found)]
        return replace(model, **{field: found}), f"expected {shown[0]}, found {shown[1]}"
    return apply


def _wrap(field, change, words=""):
    """The defect passing the model's function ``field`` through ``change(f, *args)``, ``f`` the model's own."""
    return lambda model, spec: (replace(model, **{field: partial(change, getattr(model, field))}), words)


def _table_end(kind):
    def apply(model, spec):
        if not spec.table_end or spec.table_end[1] != kind:
            return None
        last = spec.table_end[0]                                # the table holds positions 0..last
        held = (lambda f, p: np.minimum(f(p), last)) if kind == "clamped" else (lambda f, p: f(p) % (last + 1))
        return _wrap("positions", held, f"beyond position {show_number(last)}")(model, spec)
    return apply


def _angles_in(kind, f, p, theta):
    """Positions, frequencies and their product rounded to ``kind`` (``f``, the exact product, unused)."""
    with np.errstate(over="ignore", invalid="ignore"):     # beyond the type's range: inf, then NaN, a miss
        return rounded_to(np.multiply.outer(rounded_to(p, kind), rounded_to(theta, kind)), kind)


def _other_method(model, spec):
    if spec.rope_type in (None, "custom"):         # the model's own method, or its inv_freq: no change, never named
        return None
    return (replace(model, rope_type=spec.rope_type, params=dict(spec.rope_params),
                    base=spec.rope_params.get("base", spec.base)),     # a single pair's "default" has no params
            f"expected {model.rope_type}, found {spec.rope_type} {show_number(spec.rope_params)}")


def _recipe(model, spec):
    return model.inv_freq is None and spec.rotary_dim is not None


#: The known defects, each one entry; the diagnosis tries them in this order.
DEFECTS = (
    Defect("pairing swapped", "interleaved pairs (2i, 2i + 1) for half-split (i, i + d/2), or the reverse",
           measured("pairing", when=lambda model, spec: {model.pairing, spec.pairing} <= set(OTHER_PAIRING))),
    Defect("different rotary_dim", "another number of features rotate",      # frequencies of the width measured too
           measured("rotary_dim", when=lambda m, s: _recipe(m, s) or np.shape(m.inv_freq)[:1] == (s.rotary_dim // 2,))),
    Defect("different rotary_start", "the rotated features start elsewhere", measured("rotary_start")),
    Defect("output layout", "the pairs are written to other features (interleave, then half)",
           measured("output_pairing", none_ok=True)),
    Defect("position offset", "row 0 at another position (a cache offset ignored, off by one)", measured("offset")),
    *(Defect(f"frequencies rounded to {t}", f"inv_freq held in {t} ({how})",
             _wrap("theta", lambda f, m, n, t=t: rounded_to(f(m, n), t)))
      for t, how in (("bfloat16", "model.to(torch.bfloat16)"), ("float16", "model.half()"))),
    *(Defect(f"angles computed in {t}", f"positions, frequencies and their product in {t}",
             _wrap("angles", partial(_angles_in, t))) for t in ("bfloat16", "float16")),
    *(Defect(f"cos/sin in {t}", f"cos and sin rounded to {t}",
             lambda model, spec, t=t: (replace(model, table_type=t), "")) for t in ("float16", "bfloat16")),
    *(Defect(f"positions held in {t}", f"position ids cast to {t}: above {above} rows share positions",
             _wrap("positions", lambda f, p, t=t: rounded_to(f(p), t)))
      for t, above in (("bfloat16", 256), ("float16", 2048))),
    Defect("table clamped", "a cos/sin table too short, read with a clamped index", _table_end("clamped")),
    Defect("table repeated", "a cos/sin table too short, read modulo its length", _table_end("repeated")),
    Defect("theta indexed from 1", "theta_i = base^(-2(i+1)/d): eq 15 counted from 1",
           lambda model, spec: _wrap("theta", lambda f, m, n: f(m, n) * m.base ** (-2 / m.rotary_dim))(model, spec)
           if _recipe(model, spec) else None),
    Defect("direction reversed", "sin's sign flipped: every pair turns clockwise",
           _wrap("theta", lambda f, m, n: -f(m, n))),
    Defect("another base", "another rope_theta (left at 10^4?)", measured("base", when=_recipe)),
    Defect("scaling missing", "the expected scaling method not applied (plain eq 15 frequencies)",
           lambda model, spec: (replace(model, rope_type="default", params={}), f"expected {model.rope_type}")
           if model.rope_type != "default" and _recipe(model, spec) else None),
    Defect("another scaling method", "another method or parameters reproduce the kernel", _other_method),
    Defect("attention factor missing", "YaRN's / LongRoPE's factor on cos and sin not applied",
           lambda model, spec: (replace(model, norm_scale=1.0), f"expected norm_scale {model.norm_scale:.6g}")
           if model.norm_scale not in (None, 1.0) else None),
)


def same_structure(model, spec, scale_errors=2) -> bool:
    """``model`` has the pairs, rotated features, output layout and norm (within ``scale_errors`` times the measured
    spread) that were measured."""
    one_pair = spec.rotary_dim == 2 and model.pairing in OTHER_PAIRING and spec.pairing in OTHER_PAIRING
    return ((model.pairing in (None, spec.pairing) or one_pair) and model.rotary_dim == spec.rotary_dim
            and model.rotary_start == spec.rotary_start and model.output_pairing == spec.output_pairing
            and _same_norm(model, spec, scale_errors))


def _same_norm(model, spec, scale_errors=2) -> bool:
    return model.norm_scale is None or abs(spec.norm_scale / model.norm_scale - 1) <= norm_tolerance(
        spec.scale_error, scale_errors)


def table_differences(model, spec, phase_atol=None):
    """((rows, pairs), misses) where the model's angles miss the measured ones beyond the kernel's rounding; None
    when every angle agrees."""
    try:
        want = model.angles_at(np.arange(len(spec.table)))
    except (ValueError, TypeError, ZeroDivisionError):         # the oracle refuses the model
        want = None
    if want is None or want.shape != spec.table.shape or (
            model.table_type and spec.out_err > NOISE_ULPS * dict(PRECISIONS)[model.table_type]):
        return (np.array([0]), np.array([0])), np.array([np.inf])   # all miss (also: cos/sin coarser than its type)
    own = spec.out_err if (spec.output_precision != "float32" or model.table_type) else 0.0
    tol = allowance(min(spec.unit, 2.0**-24), want, own) + (phase_atol or 0.0)
    miss, held = np.full(want.shape, np.inf), np.isfinite(want)     # inf: an angle the model cannot hold misses
    miss[held] = np.abs(wrap_angle(spec.table[held] - want[held]))
    bad = ~(miss <= tol) | ~held                                     # tol is inf at an inf angle
    return (np.nonzero(bad), miss[bad]) if bad.any() else None


def explain(model, spec, catalogue, fits, most, least=1):
    """(problem lines, defect names, the model with them) of the fewest defects of ``catalogue`` (``least`` to
    ``most``, in catalogue order) that turn ``model`` into one that ``fits``; None when none do."""
    for chosen in (c for size in range(least, most + 1) for c in itertools.combinations(catalogue, size)):
        changed, said = model, []
        for defect in chosen:
            out = defect.apply(changed, spec)
            if out is None:
                break
            changed, said = out[0], said + [(defect, out[1])]
        if len(said) == len(chosen) and fits(changed):        # every defect chosen applies
            return ([f"{d.name}: {detail + '; ' if detail else ''}{d.description}" for d, detail in said],
                    [d.name for d, _ in said], changed)
    return None


def diagnose(model: Model, spec, phase_atol=None):
    """(problems, names of the defects that explain them): [] when the model reproduces the kernel; else the fewest
    known defects (up to two) whose model does; else the differences, said to be explained by none."""
    if not isinstance(model, Model) or not hasattr(spec, "table"):
        raise TypeError(f"model and spec must be a Model and a RopeSpec, got {type(model).__name__} and "
                        f"{type(spec).__name__}")

    def reproduces(m):                  # the structure measured, and the angle table within the kernel's rounding
        return same_structure(m, spec) and table_differences(m, spec, phase_atol) is None
    if found := explain(model, spec, DEFECTS, reproduces, 2, least=0):         # none, when the model reproduces it
        return found[:2]
    fields = ("pairing", "rotary_dim", "rotary_start", "output_pairing")      # DEFECTS[:4]'s; said where they differ
    problems = [f"{d.name}: {out[1]}" if out else f"{f}: expected {getattr(model, f)}, found {getattr(spec, f)}"
                for d, f in zip(DEFECTS, fields)
                if (out := d.apply(model, spec)) or getattr(model, f) not in (None, getattr(spec, f))]
    if not problems and (differences := table_differences(model, spec, phase_atol)) is not None:
        (rows, pairs), miss = differences
        problems.append(f"angles: {len(miss)} of {spec.table.size} differ, by up to {miss.max():.3g} rad (pair "
                        f"{pairs[np.argmax(miss)]}, row {rows[np.argmax(miss)]})")
    norm = [] if _same_norm(model, spec) else [f"norm {spec.norm_scale:.6g}, expected {model.norm_scale or 1:.6g}"]
    return problems + norm + ["no known defect explains this"], []
