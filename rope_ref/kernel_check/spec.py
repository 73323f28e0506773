"""What the checker measured: :class:`RopeSpec` (1-D kernels), :class:`AxesSpec` (multi-axis ones), and how a check
fails (:class:`RopeMismatch`)."""

from __future__ import annotations

import itertools
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
    inv_freq: np.ndarray | None = None  # signed frequencies, pairs in pairing order: (pairs,) or (pairs, axes)
    base: float | None = None
    norm_scale: float | None = None     # |output| / |input| on the rotated features
    scale_error: float = 0.0            # largest relative spread of that scale over rows and pairs
    angle_precision: str | None = None  # the float type whose rounding explains the angles' errors
    phase_error: float = 0.0            # largest |measured angle - the line through them|, radians
    notes: list = field(default_factory=list)

    def __str__(self) -> str:
        if not self.is_rope:
            return f"not a rotary embedding: {self.reason}"
        return "\n".join([self.summary()] + [f"note: {n}" for n in self.notes])


@dataclass
class RopeSpec(ProbeSpec):
    """What :func:`identify` measured on a 1-D kernel: pair p turns by (offset + row) * inv_freq[p] when ``linear``."""

    output_pairing: str | None = None   # None: pairs written back in place; else the layout they are written in
    output_pairs: list | None = None
    offset: float | None = None         # position of row 0 (an integer when resolved as one)
    offset_resolution: float | None = None  # its standard deviation, in positions
    offset_alternatives: np.ndarray = field(default_factory=lambda: np.zeros(0))  # other offsets that fit as well
    rope_type: str | None = None        # a rope_ref.ROPE_TYPES name, "custom" (none reproduces), None (too noisy)
    rope_params: dict = field(default_factory=dict)
    also: list = field(default_factory=list)  # other (rope_type, params) that reproduce the frequencies too
    freq_tolerance: np.ndarray | None = None  # relative precision of each measured frequency
    linear: bool | None = None          # the angles are (offset + row) * theta to the kernel's rounding
    geometric: bool | None = None       # theta_p = theta_0 base^(-2p/rotary_dim)
    output_rounded: bool = False        # cos/sin or the output rounded to a 16-bit type
    length_dependent: bool = False      # the angles of the first rows change with the number of rows
    rows: int | None = None             # rows the angles were measured at
    table_end: tuple | None = None      # (last position, "clamped" or "repeated"): where a cos/sin table ran out
    rounded_positions: str | None = None  # rows share positions, as positions held in a 16-bit type do
    table: np.ndarray | None = field(default=None, repr=False)  # the measured angles (rows, pairs), wrapped
    unit: float = 2.0**-24              # unit roundoff of the kernel's own rounding (angles or output)
    out_err: float = 0.0                # angle error of cos/sin or output rounding, radians
    output_precision: str = "float32"   # the float type fn returned

    def summary(self) -> str:
        """One line in a kernel engineer's words: pairs, rotated features, and what the angle table is."""
        if not self.is_rope:
            return str(self)
        pairs = {"half": "half-split pairs (i, i + d/2)", "interleaved": "interleaved pairs (2i, 2i + 1)"}
        out = f" written {self.output_pairing}" if self.output_pairing else ""
        head = (f"{pairs.get(self.pairing, f'pairs {self.pairs[:2]}...')}{out} on features {self.rotary_start}.."
                f"{self.rotary_start + (self.rotary_dim or 0) - 1}, norm {show_number(self.norm_scale, '.6g')}")
        if self.rounded_positions:
            return f"{head}, rows share positions (positions held in {self.rounded_positions})"
        if not self.linear:
            return f"{head}, angles not linear in the position: not a linear/geometric family"
        params = {k: v for k, v in self.rope_params.items() if k != "base"}
        base = "frequencies not a geometric family" if self.base is None else f"base {show_number(self.base)}"
        return (f"{head}, {base}, row 0 at position {show_number(self.offset, '.6g')}, "
                f"{self.rope_type or 'scaling not named'}{' ' + show_params(params) if params else ''}, angles "
                f"like {self.angle_precision} over {self.rows} rows")


@dataclass
class AxesSpec(ProbeSpec):
    """What identify(axes=A) measured: ``inv_freq[j, a]`` the signed frequency of pair j along axis a.  ``form``:
    ``"1-D"``, ``"M-RoPE"`` (each pair with one axis, one decreasing spectrum), ``"axial"`` (the axes' spectra
    repeat) or ``"mixed"`` (a pair turns with several axes)."""

    axes: int | None = None
    axis_names: tuple = ()
    freq_tolerance: np.ndarray | None = None  # absolute tolerance on each entry
    form: str | None = None
    axis_of_pair: np.ndarray | None = None
    sections: tuple | None = None       # pairs per axis
    mrope_layout: str | None = None     # M-RoPE: a name of MROPE_LAYOUTS (None: none of them)
    axis_bases: tuple | None = None     # axial: per axis, theta_k = base_a^(-k/n_a), if so
    phase_at_zero: float = 0.0          # largest |angle| with every axis at 0
    rotated_at_zero: bool = False       # pairs turned beyond rounding with every axis at 0
    position_shift: tuple | None = None  # per axis, the shift s_a with angle(0) = sum_a F[j, a] s_a, when solved
    shift_tolerance: tuple | None = None
    positions: np.ndarray | None = None  # (axes, seq): the positions fn was called with
    calls: int = 0

    def summary(self) -> str:
        """One line: form, axes, pairs, sections and layout or bases, shift, precision."""
        if not self.is_rope:
            return str(self)
        split = "" if self.sections is None else f", sections {'/'.join(map(str, self.sections))} " + (
            f"({self.mrope_layout})" if self.mrope_layout else f"({runs(self.axis_of_pair, self.axis_names)})")
        return (f"{self.form} RoPE over axes {'/'.join(self.axis_names)}: {self.pairing} pairs on features "
                f"{self.rotary_start}..{self.rotary_start + self.rotary_dim - 1}{split}"
                + (f", base {show_number(self.base)}" if self.base else "")
                + (f", axis bases {self.axis_bases}" if self.axis_bases else "")
                + (f", positions shifted by {show_shifts(self.axis_names, self.position_shift)}"
                   if self.rotated_at_zero and self.position_shift else "")
                + f", angles like {self.angle_precision}")


def show_number(v, fmt=".7g") -> str:
    """A number for display: integers as integers, None as None."""
    if v is None:
        return "None"
    if isinstance(v, numbers.Integral) or (math.isfinite(v) and v == round(v) and abs(v) < 2**53):
        return str(int(v))
    return format(v, fmt)


def show_params(params: dict) -> str:
    """Parameters for display: floats to 7 digits, long lists summarized."""
    def fmt(v):
        if isinstance(v, float):
            return f"{v:.7g}"
        return f"[{len(v)} values, {min(v):.4g}..{max(v):.4g}]" if isinstance(v, list) else repr(v)
    return "{" + ", ".join(f"{k}: {fmt(v)}" for k, v in params.items()) + "}"


def runs(axis_of_pair, names) -> str:
    """'t 0..15, h 16..39, w 40..63': contiguous runs of pairs by axis, the first few."""
    found, j = [], 0
    for axis, run in itertools.groupby(axis_of_pair):
        k = j + len(list(run)) - 1
        found.append(f"{names[axis]} {j}" + (f"..{k}" if k > j else ""))
        j = k + 1
    return ", ".join(found[:9]) + (f", ... ({len(found)} runs)" if len(found) > 9 else "")


def show_shifts(names, shifts) -> str:
    """'t+0, w-7': a per-axis position shift (non-zero axes only; 'none' when every axis is 0)."""
    return ", ".join(f"{n}{show_number(s) if s < 0 else '+' + show_number(s)}"
                     for n, s in zip(names, shifts) if s != 0) or "none"


class RopeMismatch(AssertionError):
    """An AssertionError listing each difference (``problems``), the known defects that explain them (``defects``,
    catalogue names) and the ``spec`` measured."""

    def __init__(self, title: str, problems: list, spec, defects=()):
        super().__init__(f"{title}:\n  " + "\n  ".join(problems) + (f"\nmeasured: {spec}" if spec else "")
                         if spec is None or spec.is_rope else "\n".join(problems))
        self.problems, self.spec, self.defects = list(problems), spec, list(defects)
