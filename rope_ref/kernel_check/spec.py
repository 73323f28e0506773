"""What the probes found: :class:`RopeSpec` (1-D kernels) and :class:`AxesSpec` (multi-axis ones), how their
numbers are displayed, and what both assertions share: the expected values checked, the pairing and precision
lines, and how they fail (:class:`RopeMismatch`; :class:`KernelRaised` when the function under test raised)."""

from __future__ import annotations

import itertools
import math
import numbers
from dataclasses import dataclass, field

import numpy as np

from .. import scaling
from .._validate import check_base, check_d, check_nonnegative_int, check_positive_real, check_scalar, check_choice
from ..multiaxis import MROPE_LAYOUTS


@dataclass
class ProbeSpec:
    """What both probes report.  ``is_rope`` False means the other fields are not meaningful; ``reason`` says why."""

    is_rope: bool
    reason: str = ""
    pairing: str | None = None          # "interleaved", "half" or "other", within the rotated features
    pairs: list = field(default_factory=list)
    rotary_dim: int | None = None
    rotary_start: int = 0               # first rotated feature (0: the leading rotary_dim features rotate)
    inv_freq: np.ndarray | None = None  # signed frequencies, pairs in pairing order: (pairs,) or (pairs, axes)
    base: float | None = None
    norm_scale: float | None = None     # |output| / |input| on the rotated features
    angle_precision: str | None = None  # the float type the kernel's angles behave like
    phase_error: float = 0.0            # max |measured angle - the angle the frequencies give|, radians
    scale_error: float = 0.0            # max relative spread of the per-pair scale over rows
    notes: list = field(default_factory=list)

    def __str__(self) -> str:
        if not self.is_rope:
            return f"not a {'1-D ' if getattr(self, 'multi_axis', False) else ''}rotary embedding: {self.reason}"
        return "\n".join(self._lines() + [f"note: {n}" for n in self.notes])


@dataclass
class RopeSpec(ProbeSpec):
    """What :func:`identify` found for a 1-D kernel (angle (offset + row) * inv_freq[p] in pair p).  ``base``: of
    the named method; for "custom", of the leading pairs."""

    output_pairing: str | None = None   # None: pair (i, j) is written back to features (i, j); else the
    output_pairs: list | None = None    # layout of the features it is written to (output_pairs[p] for pairs[p])
    offset: float | None = None         # position of row 0 (an integer when resolved as one)
    offset_resolution: float | None = None  # standard deviation of the offset, in positions
    offset_alternatives: np.ndarray = field(default_factory=lambda: np.zeros(0))  # others that fit as well
    rope_type: str | None = None        # a rope_ref.ROPE_TYPES name, "custom", or None (too noisy)
    rope_params: dict = field(default_factory=dict)
    closest: str | None = None          # for "custom": the method whose parameters rope_params holds
    frequency_defect: str | None = None  # for "custom": "indexed from 1", "rounded to bfloat16" or "to float16"
    also: list = field(default_factory=list)  # other (rope_type, params) with the same frequencies (a note says so)
    fit_error: float | None = None      # max relative |theta_method / theta_measured - 1|
    freq_tolerance: float | None = None  # largest relative tolerance used for the frequencies
    output_rounded: bool = False        # angle errors from rounding cos/sin or the output (norm errs alike)
    stateful: bool = False              # fn's output for the first input changed after the calls on more rows
    rows: int | None = None             # rows the angles were measured at
    multi_axis: bool = False            # not a 1-D RoPE, but its angles are exact: probe along several axes
    table_end: tuple | None = None      # (last position, "clamped" or "repeated"): a cos/sin table ran out there
    rounded_positions: str | None = None  # the 16-bit type(s) whose rounding of offset + r makes rows share positions

    def summary(self) -> str:
        """One line in a kernel engineer's words: pairs, rotated features, base, position of row 0, method."""
        if not self.is_rope:
            return str(self)
        pairs = {"half": "half-split pairs (i, i + d/2)", "interleaved": "interleaved pairs (2i, 2i + 1)"}
        where = f"features {self.rotary_start}..{self.rotary_start + self.rotary_dim - 1}"
        method = {None: "scaling not named (angles too noisy)", "custom": f"custom (closest {self.closest}"
                  + (f", frequencies {self.frequency_defect})" if self.frequency_defect else ")"),
                  "proportional": f"proportional ({self.rope_params.get('partial_rotary_factor', 0):g} of the "
                                  "features rotate)"}.get(self.rope_type, self.rope_type)
        return (f"{pairs.get(self.pairing, 'pairs ' + str(self.pairs[:2]) + '...')} on {where}, "
                f"base {show_number(float(f'{self.base:.6g}'))}, row 0 at position {show_number(self.offset, '.6g')}, "
                f"{method}")

    def _lines(self) -> list:
        where = (f" rotary_start={self.rotary_start}" if self.rotary_start else "") + (
            f" output_pairing={self.output_pairing}" if self.output_pairing else "")
        return [f"pairing={self.pairing} rotary_dim={self.rotary_dim}{where} base={show_number(self.base)} "
                f"offset={show_number(self.offset)} norm_scale={show_number(self.norm_scale)}",
                f"rope_type={self.rope_type}" + (f", closest {self.closest}" if self.closest else "")
                + (f" with frequencies {self.frequency_defect}" if self.frequency_defect else "")
                + f" {show_params(self.rope_params)}"
                + (f" (frequencies {'off by up to' if self.closest else 'within'} {self.fit_error:.1e} relative, "
                   f"tolerance {self.freq_tolerance:.1e})"
                   if self.fit_error is not None and self.freq_tolerance is not None else ""),
                f"angles behave like {self.angle_precision}: phase_error={self.phase_error:.2e} rad "
                f"over {self.rows} rows, offset resolution {show_number(self.offset_resolution, '.1e')}, "
                f"scale_error={self.scale_error:.2e}"]


@dataclass
class AxesSpec(ProbeSpec):
    """What :func:`identify_axes` found: ``inv_freq[j, a]`` the signed frequency of pair j along axis a.  ``form``:
    ``"1-D"``, ``"M-RoPE"`` (each pair with one axis, one strictly decreasing spectrum), ``"axial"`` (the axes'
    spectra repeat) or ``"mixed"`` (a pair turns with several axes); ``base``: theta_j = base^(-2j/rotary_dim)
    over all pairs (1-D, M-RoPE), if so."""

    axes: int | None = None
    axis_names: tuple = ()
    freq_sigma: np.ndarray | None = None      # standard deviation of each entry, radians per position
    freq_tolerance: np.ndarray | None = None  # absolute tolerance on each entry used by compare_axes
    form: str | None = None
    axis_of_pair: np.ndarray | None = None  # the axis that turns each pair, when each pair turns with one
    sections: tuple | None = None       # pairs per axis, then
    mrope_layout: str | None = None     # M-RoPE: a name of MROPE_LAYOUTS (None: none of them, or not M-RoPE)
    axis_bases: tuple | None = None     # axial: per axis, theta_k = base_a^(-k/n_a) over its n_a pairs, if so
    phase_at_zero: float = 0.0          # largest |angle| at position 0 on every axis (0 unless positions shift)
    rotated_at_zero: bool = False       # pairs turned beyond rounding with every axis at 0
    position_shift: tuple | None = None  # per axis, the shift s_a with angle(0) = sum_a F[j, a] s_a, when solved
    shift_tolerance: tuple | None = None  # per axis, how far from position_shift (0 unrotated) s_a may be
    positions: np.ndarray | None = None  # (axes, seq): the positions fn was called with
    calls: int = 0

    def _lines(self) -> list:
        names = "/".join(self.axis_names)
        start = f" rotary_start={self.rotary_start}" if self.rotary_start else ""
        base = f" base={show_number(self.base)}" if self.base is not None else ""
        form = self.form if self.form == "M-RoPE" else f"{self.form} RoPE"
        lines = [f"{form} over {self.axes} {'axis' if self.axes == 1 else 'axes'} ({names}): pairing={self.pairing} "
                 f"rotary_dim={self.rotary_dim}{start}{base} norm_scale={show_number(self.norm_scale)}"]
        if self.sections is not None:
            layout = (f", layout {self.mrope_layout} ({MROPE_LAYOUTS[self.mrope_layout][1]})" if self.mrope_layout
                      else "")
            lines.append(f"sections {names} = {'/'.join(map(str, self.sections))} pairs{layout}; "
                         f"pairs by axis: {runs(self.axis_of_pair, self.axis_names)}")
            for a in (a for a in range(self.axes) if self.sections[a]):
                theta = self.inv_freq[self.axis_of_pair == a, a]
                spectrum = f" .. {theta[-1]:.6g} ({theta.size} pairs)" if theta.size > 1 else ""
                axis_base = self.axis_bases[a] if self.axis_bases else None
                lines.append(f"  {self.axis_names[a]}: theta {theta[0]:.6g}{spectrum}"
                             + (f", axis base {show_number(axis_base)}" if axis_base else ""))
        else:
            with np.printoptions(precision=4, suppress=False, threshold=12, edgeitems=2):
                lines.append(f"inv_freq (pairs x axes {names}) =\n{self.inv_freq}")
        return lines + [f"angles behave like {self.angle_precision}: phase_error={self.phase_error:.2e} rad at "
                        f"positions up to {int(self.positions.max())} per axis, scale_error={self.scale_error:.2e}; "
                        f"{self.calls} calls on {self.positions.shape[1]} rows"]


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
        if isinstance(v, list):
            return f"[{len(v)} values, {min(v):.4g}..{max(v):.4g}]"
        return repr(v)
    return "{" + ", ".join(f"{k}: {fmt(v)}" for k, v in params.items()) + "}"


def runs(axis_of_pair, names) -> str:
    """'t 0..15, h 16..39, w 40..63' (contiguous runs), the first few runs only."""
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


def not_rope(reason, multi_axis=False) -> RopeSpec:
    """The spec of a function that is not a (1-D) rotary embedding, and why."""
    return RopeSpec(is_rope=False, reason=reason, multi_axis=multi_axis)


#: The expected values that are names: each with its valid names (output_pairing may also be None: in place).
_NAMES = (("pairing", ("interleaved", "half", "other"), ""),
          ("output_pairing", ("interleaved", "half", "other"), "None (pairs written in place) or "),
          ("rope_type", scaling.ROPE_TYPES, ""))


class RopeMismatch(AssertionError):
    """An AssertionError with each difference on its own line (``problems``) and the ``spec`` identified (a RopeSpec
    or an AxesSpec); its message: a title, the problems indented, then the whole spec."""

    def __init__(self, title: str, problems: list, spec, spec_title: str = "identified"):
        message = (f"{title}:\n  " + "\n  ".join(problems) + f"\n{spec_title}: {spec}" if spec.is_rope
                   else "\n".join(problems))
        super().__init__(message)
        self.problems, self.spec = list(problems), spec


class KernelRaised(RuntimeError):
    """The function under test raised: reported as "fn raised ...", never as a RoPE mismatch."""


def raising_as(name, fn):
    """fn, with any exception it raises (AssertionError included) re-raised as KernelRaised."""
    if not callable(fn):
        return fn                       # identify names it
    def guarded(*args):
        try:
            return fn(*args)
        except Exception as err:
            raise KernelRaised(f"{name} raised {type(err).__name__}: {err}") from err
    return guarded


def check_expected(expected, phase_atol=None):
    """Expected values are the right kind of thing, named when not (``offset`` is made a float)."""
    if expected.get("offset") is not None:
        expected["offset"] = check_scalar(expected["offset"], "offset")
    first = "a non-negative integer (the first rotated feature)"
    for name, check, *words in (("norm_scale", check_positive_real), ("base", check_base), ("rotary_dim", check_d),
                                ("rotary_start", check_nonnegative_int, first)):
        if name in expected:
            check(expected[name], name, *words)
    for name, valid, meaning in _NAMES:
        if name in expected and (expected[name] is not None or not meaning):
            check_choice(expected[name], name, valid, meaning)
    if phase_atol is not None:
        check_positive_real(phase_atol, "phase_atol", "None or a positive number of radians")


def layout_problems(spec, pairing, rotary_dim, rotary_start) -> list:
    """The pairing, rotary_dim and rotary_start lines of a comparison (None: not checked) of either spec."""
    problems = []
    one_pair = spec.rotary_dim == 2 and {pairing, spec.pairing} <= {"half", "interleaved"}   # both names fit
    if pairing is not None and pairing != spec.pairing and not one_pair:
        shown = ", ".join(str(p) for p in spec.pairs[:3])
        problems.append(f"pairing: expected {pairing}, found {spec.pairing} (pairs {shown}, ...)")
    if rotary_dim is not None and rotary_dim != spec.rotary_dim:
        problems.append(f"rotary_dim: expected {rotary_dim}, found {spec.rotary_dim}")
    if rotary_start is not None and rotary_start != spec.rotary_start:
        problems.append(f"rotary_start: expected rotated features from {rotary_start}, found {spec.rotary_start}.."
                        f"{spec.rotary_start + spec.rotary_dim - 1} (pass rotary_start={spec.rotary_start} if "
                        "intended)")
    return problems


def precision_problems(spec, phase_atol, exact_angles, rounded_hint, plain_hint) -> list:
    """The angle precision line: angles off ``exact_angles`` by more than ``phase_atol`` radians, or without it, like
    a type coarser than float32 (``rounded_hint`` when cos/sin or the output was rounded, ``plain_hint`` else)."""
    if phase_atol is not None and spec.phase_error > phase_atol:
        return [f"angle precision: angles deviate from {exact_angles} by up to {spec.phase_error:.2g} rad "
                f"(> phase_atol={phase_atol:g})"]
    if phase_atol is None and spec.angle_precision not in ("float64", "float32"):
        hint = rounded_hint if spec.angle_precision.startswith("float32 (") else plain_hint
        return [f"angle precision: angles behave like {spec.angle_precision} (errors up to {spec.phase_error:.2g} "
                f"rad); {hint}"]
    return []
