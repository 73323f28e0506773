"""Every static figure the README and notebooks show, and :func:`write_all`, which regenerates them.

``python -m rope_ref figures [--out DIR]`` calls :func:`write_all`; the files are byte-identical
run to run.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.figure import Figure

from ..core import decay_bound, frequencies, rotate
from ..scaling import scaled_inv_freq, wavelengths
from .context_extension import TRAIN_LEN, method_configs
from .precision import PRECISION_DTYPES, angle_errors, score_error_by_dtype
from .quantities import (FIG2_DISTANCES, FIG2_PAPER_YLIM, form_errors, mean_abs_score, random_qk, score_map,
                         score_vs_distance, sinusoidal_score_map)
from .style import METADATA, RC, new_figure, unit_circle
from .views import ScalingView


def fig2_long_term_decay(d: int = 128, base: float = 10000.0) -> Figure:
    """Figure 2 of the paper: (1/(d/2)) sum_j |S_j| over relative distance 0..256 (eq 37).

    Left: the paper's view (y from 6 to 22, so the peak of (d/2+1)/2 near 0 is cut off);
    right: the full range.
    """
    fig = new_figure(10, 3.8)
    y = decay_bound(FIG2_DISTANCES, d, base)
    for ax, title in zip(fig.subplots(1, 2), ["as in the paper (y from 6 to 22)", "full range"]):
        ax.plot(FIG2_DISTANCES, y, lw=1.0, color="C0")
        ax.set(xlabel="relative distance", ylabel="relative upper bound", title=title, xlim=(0, 256))
        ax.grid(alpha=0.3)
    fig.axes[0].set_ylim(*FIG2_PAPER_YLIM)
    fig.axes[1].axhline((d / 2 + 1) / 2, color="0.5", ls=":", lw=1)
    fig.axes[1].annotate(f"(d/2+1)/2 = {(d / 2 + 1) / 2:g} at distance 0", xy=(0, (d / 2 + 1) / 2),
                         xytext=(40, (d / 2 + 1) / 2 - 3), fontsize=9)
    fig.suptitle(f"Long-term decay of RoPE (Figure 2): d = {d}, theta_i = {base:g}^(-2i/d), i = 0..{d // 2 - 1}")
    return fig


def fig_decay_vs_actual(d: int = 128, base: float = 10000.0, n_samples: int = 256, seed: int = 0) -> Figure:
    """The Figure-2 bound beside the actual mean |q . R_r k| of random vectors, each divided by its
    value at distance 0: independent q, k do not decay; k = q does; the bound only caps."""
    fig = new_figure(7, 3.8)
    ax = fig.subplots()
    r = np.linspace(0, 256, 129)
    bound = decay_bound(FIG2_DISTANCES, d, base)
    ax.plot(FIG2_DISTANCES, bound / bound[0], lw=1, label="bound (1/(d/2)) sum |S_j| (eq 37)")
    for same, label in [(False, "mean |q . R_r k|, q and k independent"), (True, "mean |q . R_r q|, k = q")]:
        y = mean_abs_score(r, d, base=base, n_samples=n_samples, seed=seed, same_vector=same)
        ax.plot(r, y / y[0], label=label)
    ax.set(xlabel="relative distance r", ylabel="value / value at r = 0", xlim=(0, 256), ylim=(0, 1.3),
           title=f"What the bound promises: d = {d}, {n_samples} random vectors")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return fig


def fig_three_forms(d: int = 128) -> Figure:
    """Max |difference| between the elementwise form (eq 34) and the dense (eq 14), complex (eq 12)
    and half-split forms, at positions from 1 to 10^6."""
    pos = np.unique(np.round(np.logspace(0, 6, 200)))
    errs = form_errors(pos, d)
    fig = new_figure(7, 3.6)
    ax = fig.subplots()
    for (name, e), marker in zip(errs.items(), "o^s"):
        ax.semilogx(pos, np.maximum(e, 1e-17), marker, ms=3, label=name, alpha=0.8)
    ax.set_yscale("log")
    ax.axhline(1e-12, color="C3", ls="--", lw=1, label="tolerance 1e-12")
    ax.set(xlabel="position m", ylabel="max |difference| (0 shown as 1e-17)", ylim=(1e-18, 1e-10),
           title=f"The three forms agree (d = {d}, float64)")
    ax.legend(fontsize=8)
    return fig


def fig_relative_heatmaps(d: int = 64, n_pos: int = 48, seed: int = 0) -> Figure:
    """q_m . k_n over (m, n): constant along diagonals with RoPE, not with the additive sinusoid."""
    q, k = random_qk(d, seed)
    pos = np.arange(n_pos)
    fig = new_figure(9, 4.2)
    axes = fig.subplots(1, 2)
    for ax, S, title in zip(axes, [score_map(q, k, pos), sinusoidal_score_map(q, k, pos)],
                            ["RoPE: (R_m q).(R_n k)", "sinusoidal: (q + E(m)).(k + E(n))"]):
        im = ax.imshow(S, origin="lower", cmap="RdBu_r", vmin=-np.abs(S).max(), vmax=np.abs(S).max())
        ax.set(xlabel="key position n", ylabel="query position m", title=title)
        fig.colorbar(im, ax=ax, shrink=0.8)
    return fig


def fig_rotation(d: int = 8, base: float = 10000.0, positions=range(7)) -> Figure:
    """Figure-1-style illustration: pairs 0 and 1 of one vector at positions 0..6 (eq 13)."""
    x = np.tile(np.array([1.0, 0.0] * (d // 2)), (len(positions), 1))
    rot = rotate(x, np.asarray(list(positions), float), base=base)
    fig = new_figure(8, 4)
    for i, ax in enumerate(fig.subplots(1, 2)):
        theta = frequencies(d, base)[i]
        ax.add_patch(unit_circle())
        for m, (a, b) in zip(positions, rot[:, 2 * i:2 * i + 2]):
            ax.annotate("", xy=(a, b), xytext=(0, 0), arrowprops=dict(arrowstyle="->", color=f"C{m % 10}"))
            ax.text(1.12 * a, 1.12 * b, f"m={m}", ha="center", va="center", fontsize=8)
        ax.set(xlim=(-1.35, 1.35), ylim=(-1.35, 1.35), aspect="equal",
               title=f"pair {i}: angle m theta_{i}, theta_{i} = {theta:.3g}")
    return fig


def fig_wavelengths(d: int = 128, base: float = 10000.0, train_len: int = TRAIN_LEN):
    """Wavelength 2 pi / theta_i of every pair against the training length."""
    fig = new_figure(7, 3.6)
    ax = fig.subplots()
    wl = wavelengths(frequencies(d, base))
    ax.semilogy(np.arange(d // 2), wl, "o-", ms=3, label="wavelength 2 pi / theta_i")
    ax.axhline(train_len, color="C3", ls="--", label=f"training length {train_len}")
    n_long = int((wl > train_len).sum())
    ax.set(xlabel="pair i", ylabel="positions", title=f"d = {d}, base = {base:g}: {n_long} of {d // 2} pairs "
           "never complete a turn in training")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return fig


def fig_frequency_ratios(factor: float = 8.0):
    """Static snapshot of :class:`ScalingView` for the figures folder."""
    return ScalingView(factor=factor).static_figure()


def fig_scores_beyond_training(d: int = 128, base: float = 10000.0, factor: float = 8.0, seed: int = 0):
    """q . R_r k for k = q over distances up to factor x training, default RoPE vs linear and YaRN."""
    q, _ = random_qk(d, seed)
    r = np.linspace(0, factor * TRAIN_LEN, 2001)
    fig = new_figure(8, 3.6)
    ax = fig.subplots()
    ax.plot(r, score_vs_distance(q, q, r, base=base), lw=0.6, label="default")
    for name in ("linear", "yarn"):
        freqs, att = scaled_inv_freq(d, base, rope_type=name, **method_configs(factor)[name])
        ax.plot(r, att ** 2 * score_vs_distance(q, q, r, inv_freq=freqs), lw=0.6, label=name)
    ax.axvline(TRAIN_LEN, color="0.4", ls=":", label="training length")
    ax.set(xlabel="relative distance r", ylabel="q . R_r q", title=f"score of a vector with itself, d = {d}")
    ax.legend(fontsize=8)
    return fig


def fig_precision(d: int = 128, seed: int = 0):
    """Error of m*theta and cos, and of q.k, when angles are computed in a narrow dtype, vs float64."""
    pos = np.unique(np.round(np.logspace(0, 6, 121)))
    fig = new_figure(11, 3.6)
    axes = fig.subplots(1, 3)
    for (name, dt), color in zip(PRECISION_DTYPES.items(), ["C0", "C1", "C2"]):
        for base, ls in [(1e4, "-"), (5e5, "--")]:
            e = angle_errors(pos, d, base, dt)
            axes[0].loglog(pos, e["angle"], ls, color=color, label=f"{name}, base {base:g}")
            axes[1].loglog(pos, e["cos"], ls, color=color)
        q, k = random_qk(d, seed)
        axes[2].loglog(pos, score_error_by_dtype(q, k, pos, dtype=dt), color=color, label=name)
    axes[0].set(xlabel="position m", ylabel="max |angle error| (rad)", title="m * theta_i")
    axes[1].set(xlabel="position m", ylabel="max |cos error|", title="cos(m * theta_i)")
    axes[2].set(xlabel="position m", ylabel="|q.k error|", title="q_m . k_{m+16}, base 1e4")
    axes[0].legend(fontsize=6)
    axes[2].legend(fontsize=7)
    for ax in axes:
        ax.grid(alpha=0.3)
    return fig


#: name -> function returning a Figure.  Each is written as NAME.png and NAME.svg.
FIGURES = {
    "fig2_long_term_decay": fig2_long_term_decay,
    "decay_bound_vs_actual": fig_decay_vs_actual,
    "three_forms_agreement": fig_three_forms,
    "relative_identity_heatmaps": fig_relative_heatmaps,
    "rotation_illustration": fig_rotation,
    "wavelengths_vs_training_length": fig_wavelengths,
    "context_extension_frequency_ratios": fig_frequency_ratios,
    "scores_beyond_training": fig_scores_beyond_training,
    "precision_angle_errors": fig_precision,
}

def write_all(out_dir: Path | str, names=None) -> list[Path]:
    """Write NAME.png and NAME.svg for every figure (or the given ``names``) into ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    with matplotlib.rc_context(matplotlib.rcParamsDefault), matplotlib.rc_context(RC):
        for name in names or FIGURES:
            fig = FIGURES[name]()
            for fmt in ("png", "svg"):
                path = out_dir / f"{name}.{fmt}"
                fig.savefig(path, format=fmt, metadata=METADATA[fmt])
                written.append(path)
    return written
