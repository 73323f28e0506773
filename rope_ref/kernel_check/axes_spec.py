"""What :func:`~rope_ref.kernel_check.axes_probe.identify_axes` found: :class:`AxesSpec`, its display, and the
naming of a frequency matrix (which axis turns each pair, the sections, the M-RoPE layout)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from ..multiaxis import MROPE_LAYOUTS
from .naming import _aliasing, geometric_base
from .spec import ProbeSpec, show_number
from .tolerances import FREQ_ULPS

#: Most position axes accepted.
MAX_AXES = 16
#: Default for max_position: the largest position the probe passes on any axis.
MAX_POSITION = 4096
#: Axis names shown when none are given: transformers' M-RoPE order (t, h, w) and a grid's (h, w).
DEFAULT_AXIS_NAMES = {1: ("p",), 2: ("h", "w"), 3: ("t", "h", "w")}


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

    def __str__(self) -> str:
        if not self.is_rope:
            return f"not a rotary embedding: {self.reason}"
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
            lines += [f"  {self.axis_names[a]}: {_spectrum(self.inv_freq[self.axis_of_pair == a, a])}"
                      + (f", axis base {show_number(self.axis_bases[a])}" if self.axis_bases and self.axis_bases[a]
                         else "")
                      for a in range(self.axes) if self.sections[a]]
        else:
            with np.printoptions(precision=4, suppress=False, threshold=12, edgeitems=2):
                lines.append(f"inv_freq (pairs x axes {names}) =\n{self.inv_freq}")
        lines.append(f"angles behave like {self.angle_precision}: phase_error={self.phase_error:.2e} rad at "
                     f"positions up to {int(self.positions.max())} per axis, scale_error={self.scale_error:.2e}; "
                     f"{self.calls} calls on {self.positions.shape[1]} rows")
        return "\n".join(lines + [f"note: {n}" for n in self.notes])


def _spectrum(theta) -> str:
    theta = np.asarray(theta, float)
    if theta.size == 1:
        return f"theta {theta[0]:.6g}"
    return f"theta {theta[0]:.6g} .. {theta[-1]:.6g} ({theta.size} pairs)"


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


# ---- naming --------------------------------------------------------------------------------------

def _rounded_base(theta, denominator, rtol):
    """base with theta_k = base^(-k/denominator) for k = 0.. (eq 15; theta_0 = 1), when every |theta_k| fits it
    within ``rtol`` (relative, per pair): :func:`.naming.geometric_base`'s fit, to the fewest significant digits
    that still fit every pair."""
    theta, rtol = np.abs(np.asarray(theta, float)), np.maximum(rtol, 4 * FREQ_ULPS * 2.0**-24)
    if theta.size < 2 or not np.all(theta > 0) or np.any(np.abs(theta[0] - 1) > rtol[0]):
        return None
    base = geometric_base(theta, 2 * denominator, rtol)
    k = np.arange(theta.size)
    for digits in range(1, 17):
        nice = float(f"{base:.{digits}g}")
        if np.all(np.abs(theta / nice ** (-k / denominator) - 1) <= rtol):
            return nice
    return None


def classify(freqs, nonzero=None):
    """(form, axis_of_pair, sections, mrope_layout) of a frequency matrix F (pairs, axes); entries where
    ``nonzero`` is False (default: F == 0) count as zero."""
    freqs = np.asarray(freqs, float)
    nonzero_mask = freqs != 0 if nonzero is None else nonzero
    n_axes = freqs.shape[1]
    if not np.all(nonzero_mask.sum(1) == 1):
        return "mixed", None, None, None
    axis = np.argmax(nonzero_mask, axis=1)
    sections = tuple(int(n) for n in np.bincount(axis, minlength=n_axes))
    if sum(n > 0 for n in sections) == 1:
        return "1-D", axis, sections, None
    theta = np.abs(freqs[np.arange(len(axis)), axis])
    if not np.all(np.diff(theta) < 0):
        return "axial", axis, sections, None
    layout = next((name for name, (assign_axes, _) in MROPE_LAYOUTS.items()
                   if np.array_equal(axis, assign_axes(sections))), None)
    return "M-RoPE", axis, sections, layout


def name_axes(spec, nonzero):
    freqs = spec.inv_freq
    spec.form, spec.axis_of_pair, spec.sections, spec.mrope_layout = classify(freqs, nonzero)
    names = spec.axis_names
    if spec.form in ("1-D", "M-RoPE"):
        theta = np.abs(freqs[np.arange(len(freqs)), spec.axis_of_pair])
        rel = spec.freq_tolerance[np.arange(len(freqs)), spec.axis_of_pair] / theta
        spec.base = _rounded_base(theta, spec.rotary_dim / 2, rel)
        if spec.form == "M-RoPE" and spec.mrope_layout is None:
            spec.notes.append(f"each pair turns with one axis and the pairs share one spectrum, but the axes are "
                              f"laid out in none of the known layouts {tuple(MROPE_LAYOUTS)}: "
                              f"{runs(spec.axis_of_pair, names)}")
    elif spec.form == "axial":
        rel = spec.freq_tolerance / np.maximum(np.abs(freqs), 1e-300)
        spec.axis_bases = tuple(_rounded_base(freqs[spec.axis_of_pair == a, a], spec.sections[a],
                                                rel[spec.axis_of_pair == a, a]) if spec.sections[a]
                                else None for a in range(spec.axes))
    if spec.sections is not None:
        unused = [names[a] for a in range(spec.axes) if spec.sections[a] == 0]
        if unused:
            spec.notes.append(f"no pair turns with {', '.join(unused)}: fn ignores "
                              f"{'that axis' if len(unused) == 1 else 'those axes'}")
    if spec.axis_of_pair is not None:       # the 1-D probe's aliasing note, rows one step apart along an axis
        aliased = {names[a]: note for a in range(spec.axes)
                   if spec.sections[a] and (note := _aliasing(freqs[spec.axis_of_pair == a, a]))}
        if aliased:
            spec.notes.append(f"along {', '.join(aliased)} (pairs counted within the axis): "
                              f"{next(iter(aliased.values()))}")
    flipped = [names[a] for a in range(spec.axes) if np.any(freqs[:, a] < 0) and not np.any(freqs[:, a] > 0)]
    if flipped:
        spec.notes.append(f"every frequency along {', '.join(flipped)} is negative: the kernel turns clockwise in "
                          f"{'that axis' if len(flipped) == 1 else 'those axes'} (eq 34 turns counter-clockwise)")


