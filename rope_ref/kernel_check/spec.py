"""What the checker measured: :class:`RopeSpec` (1-D kernels), :class:`AxesSpec` (multi-axis ones), and how a check
fails (:class:`RopeMismatch`)."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field

import numpy as np


@dataclass
class ProbeSpec:
    """What both probes report.  ``is_rope`` False means the other fields are not meaningful; ``reason`` says why."""

    is_rope: bool
    reason: str = ""
    pairing: str | None = None          # "interleaved", "half" or "other", within the rotated features
    pairs: list = field(default_factory=list)
    rotary_dim: int | None = None
    rotary_start: int = 0               # first rotated feature
    output_pairing: str | None = None   # None: pairs written back in place; else the layout they are written in
    inv_freq: np.ndarray | None = None  # signed frequencies, pairs in pairing order: (pairs,) or (pairs, axes)
    freq_tolerance: np.ndarray | None = None  # relative (1-D) or absolute (multi-axis) precision of inv_freq
    base: float | None = None
    norm_scale: float | None = None     # |output| / |input| on the rotated features
    scale_error: float = 0.0            # largest relative spread of that scale over rows and pairs
    angle_precision: str | None = None  # the float type whose rounding explains the angles' errors
    notes: list = field(default_factory=list)

    def __str__(self) -> str:
        if not self.is_rope:
            return f"not a rotary embedding: {self.reason}"
        return "\n".join([self.summary()] + [f"note: {n}" for n in self.notes])


@dataclass
class RopeSpec(ProbeSpec):
    """What :func:`identify` measured on a 1-D kernel: pair p turns by (offset + row) * inv_freq[p] when ``linear``."""

    output_pairs: list | None = None
    offset: float | None = None         # position of row 0 (an integer when resolved as one)
    rope_type: str | None = None        # a rope_ref.ROPE_TYPES name, "custom" (none reproduces), None (too noisy)
    rope_params: dict = field(default_factory=dict)
    also: list = field(default_factory=list)  # other (rope_type, params) that reproduce the frequencies too
    linear: bool | None = None          # the angles are (offset + row) * theta to the kernel's rounding
    geometric: bool | None = None       # theta_p = theta_0 base^(-2p/rotary_dim)
    rows: int | None = None             # rows the angles were measured at
    table_end: tuple | None = None      # (last position, "clamped" or "repeated"): where a cos/sin table ran out
    table: np.ndarray | None = field(default=None, repr=False)  # the measured angles (rows, pairs), wrapped
    unit: float = 2.0**-24              # unit roundoff of the kernel's own rounding (angles or output)
    out_err: float = 0.0                # angle error of cos/sin or output rounding, radians
    output_precision: str = "float32"   # the float type fn returned

    def summary(self) -> str:
        """One line: pairs, rotated features, and what the angle table is."""
        out = f" written {self.output_pairing}" if self.output_pairing else ""
        head = (f"{self.pairing} pairs{out} on features {self.rotary_start}.."
                f"{self.rotary_start + (self.rotary_dim or 0) - 1}, norm {show_number(self.norm_scale, '.6g')}")
        if not self.linear:
            return f"{head}, angles not linear in the position: not a linear/geometric family"
        params = {k: v for k, v in self.rope_params.items() if k != "base"}
        return (f"{head}, base {show_number(self.base)}, row 0 at position {show_number(self.offset, '.6g')}, "
                f"{self.rope_type} {show_number(params)}, angles like {self.angle_precision}")


@dataclass
class AxesSpec(ProbeSpec):
    """What identify(axes=A) measured: ``inv_freq[j, a]`` the signed frequency of pair j along axis a.  ``form``:
    ``"1-D"``, ``"M-RoPE"`` (each pair with one axis, one decreasing spectrum), ``"axial"`` (the axes' spectra
    repeat) or ``"mixed"`` (a pair turns with several axes)."""

    axes: int | None = None
    axis_names: tuple = ()
    form: str | None = None
    sections: tuple | None = None       # pairs per axis
    mrope_layout: str | None = None     # M-RoPE: a name of MROPE_LAYOUTS (None: none of them)
    axis_bases: tuple | None = None     # axial: per axis, theta_k = base_a^(-k/n_a), if so
    rotated_at_zero: bool = False       # pairs turned beyond rounding with every axis at 0
    position_shift: tuple | None = None  # per axis, the shift s_a with angle(0) = sum_a F[j, a] s_a, when solved
    shift_tolerance: tuple | None = None

    def summary(self) -> str:
        """One line: form, axes, pairs, sections and layout or bases, shift, precision."""
        return (f"{self.form} RoPE over axes {'/'.join(self.axis_names)}: {self.pairing} pairs on features "
                f"{self.rotary_start}..{self.rotary_start + self.rotary_dim - 1}, sections {self.sections} "
                f"({self.mrope_layout}), base {self.base}, axis bases {self.axis_bases}, positions shifted by "
                f"{show_shifts(self.axis_names, self.position_shift or ())}, angles like {self.angle_precision}")


def show_number(v, fmt=".7g") -> str:
    """A value for display: a number holding an integer as that integer, None as None, a list by its length, a dict
    entry by entry (parameters: floats to 7 digits)."""
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {show_number(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return f"[{len(v)} values]"
    if isinstance(v, numbers.Real) and math.isfinite(v) and v == round(v) and abs(v) < 2**53:
        return str(int(v))
    return format(v, fmt) if isinstance(v, numbers.Real) else str(v)


def show_shifts(names, shifts) -> str:
    """'h-24, w-24': a per-axis position shift (non-zero axes only; 'none' when every axis is 0)."""
    return ", ".join(f"{n}{'+' * (s > 0)}{show_number(s)}" for n, s in zip(names, shifts) if s != 0) or "none"


class RopeMismatch(AssertionError):
    """An AssertionError listing each difference (``problems``), the known defects that explain them (``defects``,
    catalogue names) and the ``spec`` measured (None for assert_rope_close)."""

    def __init__(self, title: str, problems: list, spec, defects=()):
        measured = f"\nmeasured: {spec}" if spec is not None and spec.is_rope else ""
        super().__init__(f"{title}:\n  " + "\n  ".join(problems) + measured if title else "\n".join(problems))
        self.problems, self.spec, self.defects = list(problems), spec, list(defects)
