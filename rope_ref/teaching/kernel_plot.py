"""A measured kernel (a :class:`rope_ref.RopeSpec` from :func:`rope_ref.identify`) against what it should be: a
phase error flat in the position is a wrong offset, one that grows a wrong frequency."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from .._validate import check_finite_array, check_scalar
from ..forms import wrap_angle
from .style import new_axes


def phase_errors(spec, inv_freq, offset=0.0):
    """(positions (rows,), errors (rows, pairs)): each pair's measured angle (``spec``, a RopeSpec) minus the expected
    one (``inv_freq`` (pairs,)) at expected positions offset, offset + 1, ..., wrapped to (-pi, pi]."""
    if getattr(spec, "inv_freq", None) is None:
        raise TypeError(f"spec must be a rotary kernel's RopeSpec (from rope_ref.identify), got {type(spec).__name__}")
    want, offset = check_finite_array(inv_freq, "inv_freq"), check_scalar(offset, "offset")
    found = np.asarray(spec.inv_freq, dtype=np.float64)
    if want.shape != found.shape:
        raise ValueError(f"inv_freq must have one frequency per measured pair, shape {found.shape}, got {want.shape}")
    r = np.arange(spec.rows, dtype=np.float64)
    return offset + r, wrap_angle(np.outer(spec.offset + r, found) - np.outer(offset + r, want))


def kernel_vs_expected(spec, inv_freq, offset=0.0, *, title: str | None = None) -> Figure:
    """Per-pair frequency, measured vs expected (left), and the phase error of pairs 0 to 2 against position (right);
    ``inv_freq`` (pairs,) and ``offset``: the expected frequencies and position of row 0."""
    positions, err = phase_errors(spec, inv_freq, offset)
    if title is not None and not isinstance(title, str):
        raise TypeError(f"title must be a string or None, got {type(title).__name__}")
    fig, (left, right) = new_axes(10, 3.8, 1, 2)
    p = np.arange(len(spec.inv_freq))
    left.semilogy(p, np.abs(inv_freq), "o", color="0.6", ms=7, label="expected")
    left.semilogy(p, np.abs(spec.inv_freq), ".", color="C3", ms=6, label="measured")
    left.set(xlabel="pair $p$", ylabel=r"frequency $|\theta_p|$ (rad per position)", title="frequencies")
    left.legend(loc="upper right")
    for k in range(min(3, err.shape[1])):
        right.plot(positions, err[:, k], lw=1.2, label=f"pair {k}")
    right.axhline(0.0, color="0.5", lw=0.8, ls=":")
    right.set(xlabel="expected position of the row", ylabel="measured - expected angle (rad)",
              title="phase error", ylim=(-np.pi * 1.05, np.pi * 1.05))
    right.legend(loc="upper right")
    if title:
        fig.suptitle(title)
    return fig
