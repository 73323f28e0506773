"""Every static figure the README and notebooks show, and :func:`write_all` (``python -m rope_ref figures``)."""

import io
from pathlib import Path

import matplotlib
import numpy as np
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure
from matplotlib.patches import Circle

from ..rope_attention import softmax
from ..forms import decay_bound, frequencies, partial_sums, rotate, sinusoidal, wrap_angle
from ..scaling import wavelengths
from .spectrum import fig_turning_dimensions
from .vision_rope import fig_mrope_layout
from .precision import PRECISION_DTYPES, angle_errors, score_error_by_dtype
from .real_model import fig_real_attention_maps
from .quantities import random_qk, score
from .style import METADATA, PALETTE, RC, new_axes, unit_circle
from .views import TRAIN_LEN, ScalingView
from .files import output_folder, write_atomically  # noqa: I001 (apart: the figures above change often)

#: Relative distances of Figure 2: continuous over [0, 256] in steps of 0.01 (25,601 points).
FIG2_DISTANCES = np.linspace(0.0, 256.0, 25601)
FIG2_PAPER_YLIM = (6.0, 22.0)


def fig2_long_term_decay(d: int = 128, base: float = 10000.0) -> Figure:
    """Figure 2 of the paper, (1/(d/2)) sum_j |S_j| over relative distance 0..256 (eq 37): the paper's view
    (y from 6 to 22, the peak (d/2+1)/2 at 0 cut off) and the full range."""
    fig, axes = new_axes(10, 3.8, 1, 2)
    y = decay_bound(FIG2_DISTANCES, d, base)
    for ax, title in zip(axes, ["as in the paper ($y$ from 6 to 22)", "full range"]):
        ax.plot(FIG2_DISTANCES, y, lw=1.0, color="C0")
        ax.set(xlabel="relative distance $m-n$", ylabel=r"$\frac{1}{d/2}\sum_j |S_j|$", title=title, xlim=(0, 256))
    fig.axes[0].set_ylim(*FIG2_PAPER_YLIM)
    peak = (d / 2 + 1) / 2
    fig.axes[1].axhline(peak, color="0.5", ls=":", lw=1)
    fig.axes[1].annotate(f"$(d/2+1)/2 = {peak:g}$ at distance 0", xy=(0, peak), xytext=(40, peak - 4))
    fig.suptitle(rf"Long-term decay (Figure 2): $d = {d}$, $\theta_i = {base:g}^{{-2i/d}}$, $i = 0..{d // 2 - 1}$")
    return fig


def fig_decay_vs_actual(d: int = 128, base: float = 10000.0, n_samples: int = 256, seed: int = 0) -> Figure:
    """The Figure-2 bound beside the actual mean |q . R_r k| of random vectors, each divided by its value at 0:
    independent q, k do not decay; k = q does; the bound only caps."""
    fig, ax = new_axes(7, 4.4)
    r = np.linspace(0, 256, 129)
    bound = decay_bound(FIG2_DISTANCES, d, base)
    ax.plot(FIG2_DISTANCES, bound / bound[0], lw=1, label=r"bound $\frac{1}{d/2}\sum_j |S_j|$ (eq 37)")
    q, k = random_qk(d, seed, n_samples)                                        # (n_samples, d) each
    for keys, label in [(k, r"mean $|q \cdot R_r k|$, $q, k$ independent"), (q, r"mean $|q \cdot R_r q|$, $k = q$")]:
        y = np.array([np.abs(score(q, keys, 0.0, dist, base=base)).mean() for dist in r])    # mean |q . R_r k|
        ax.plot(r, y / y[0], label=label)
    ax.set(xlabel="relative distance $r$", ylabel="value / value at $r = 0$", xlim=(0, 256), ylim=(0, 1.3),
           title=f"What the bound promises: $d = {d}$, {n_samples} random vectors")
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=2)
    return fig


def fig_relative_heatmaps(d: int = 64, n_pos: int = 48, seed: int = 0) -> Figure:
    """q_m . k_n over (m, n): constant along diagonals with RoPE, not with the additive sinusoid."""
    q, k = random_qk(d, seed)
    pos = np.arange(n_pos)
    fig, axes = new_axes(9, 4.2, 1, 2, gridlines=False)
    E = sinusoidal(pos, d)                                                      # the additive embedding E(m)
    for ax, S, title in zip(axes, [score(q, k, pos[:, None], pos[None, :]), (q + E) @ (k + E).T],
                            [r"RoPE: $(R_m q)\cdot(R_n k)$", r"sinusoidal: $(q + E_m)\cdot(k + E_n)$"]):
        im = ax.imshow(S, origin="lower", cmap="RdBu_r", vmin=-np.abs(S).max(), vmax=np.abs(S).max())
        ax.set(xlabel="key position $n$", ylabel="query position $m$", title=title)
        fig.colorbar(im, ax=ax, shrink=0.8)
    return fig


def fig_rotation(d: int = 8, base: float = 10000.0, positions=range(7)) -> Figure:
    """Figure-1-style: pairs 0 and 1 of a vector at positions 0..6 (eq 13); pair 0 puts m = 6 0.28 rad from m = 0."""
    positions = list(positions)
    x = np.tile(np.array([1.0, 0.0] * (d // 2)), (len(positions), 1))
    rot = rotate(x, np.asarray(positions, float), base=base)
    fig, axes = new_axes(8, 4, 1, 2, gridlines=False)
    for i, ax in enumerate(axes):
        ax.add_patch(unit_circle())
        angles = np.arctan2(rot[:, 2 * i + 1], rot[:, 2 * i])
        labelled = []
        for j, (m, (a, b)) in enumerate(zip(positions, rot[:, 2 * i:2 * i + 2])):
            ax.annotate("", xy=(a, b), xytext=(0, 0), arrowprops=dict(arrowstyle="->", color=PALETTE[m % len(PALETTE)]))
            gaps = [abs(np.angle(np.exp(1j * (angles[j] - angles[k])))) for k in [*labelled, -1]]   # to the last too
            if j == len(positions) - 1 or min(gaps) >= 0.35:
                ax.text(1.17 * a, 1.17 * b, f"$m={m}$", ha="center", va="center")
                labelled.append(j)
        ax.set(xlim=(-1.45, 1.45), ylim=(-1.45, 1.45), aspect="equal",
               title=rf"pair {i}: angle $m\theta_{i}$, $\theta_{i} = {frequencies(d, base)[i]:.3g}$")
    return fig


def fig_wavelengths(d: int = 128, base: float = 10000.0, train_len: int = TRAIN_LEN):
    """Wavelength 2 pi / theta_i of every pair against the training length."""
    fig, ax = new_axes(7, 3.6)
    wl = wavelengths(frequencies(d, base))
    ax.semilogy(np.arange(d // 2), wl, "o-", ms=3, label=r"wavelength $2\pi/\theta_i$")
    ax.axhline(train_len, color="C3", ls="--", label=f"training length {train_len}")
    n_long = int((wl > train_len).sum())
    ax.set(xlabel="pair $i$", ylabel="positions per turn",
           title=f"$d = {d}$, base $= {base:g}$:\n{n_long} of {d // 2} pairs never complete a turn in training")
    ax.legend(loc="upper left")
    return fig


def fig_precision(d: int = 128, seed: int = 0, base: float = 10000.0, distance: float = 16.0) -> Figure:
    """The largest error up to position m, per dtype, of the angle m theta_i (worst pair, left) and of
    q_m . k_{m+r} (r = ``distance``, right), against float64.  float16 stops at 65504 (inf beyond)."""
    pos = np.unique(np.round(np.logspace(0, 6, 241)))
    q, k = random_qk(d, seed)
    fig, axes = new_axes(11, 4.6, 1, 2, subplot_kw=dict(xlabel="position $m$", xlim=(1, 1e6)))
    for (name, dt), color in zip(PRECISION_DTYPES.items(), ["C3", "C1", "C0"]):
        for ax, err in [(axes[0], angle_errors(pos, d, base, dt)),
                        (axes[1], score_error_by_dtype(q, k, pos, distance, base=base, dtype=dt))]:
            finite = np.isfinite(err) & (err > 0)
            drawn = np.maximum.accumulate(err[finite])
            if ax is axes[1]:   # score errors to 0.1%: their last bits vary with the CPU's SIMD and BLAS kernels
                drawn = 10 ** np.round(np.log10(drawn), 3)
            ax.loglog(pos[finite], drawn, color=color, lw=2.2, label=f"angles in {name}" if ax is axes[0] else None)
    axes[0].axhline(np.pi, color="0.4", ls=":", lw=1.2)
    axes[0].text(1.5, np.pi * 1.4, r"$\pi$: the angle says nothing", color="0.3", va="bottom")
    axes[0].set(ylabel="largest |angle error| so far (rad)", title=r"angle $m\theta_i$ (worst pair)", ylim=(1e-8, 1e5))
    axes[1].set(ylabel=rf"largest $|q_m \cdot k_{{m+{distance:g}}}$ error$|$ so far",
                title=rf"score $q_m \cdot k_{{m+{distance:g}}}$", ylim=(1e-8, 1e3))
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=3)
    fig.suptitle(rf"Angles computed in a narrow dtype, against float64 ($d = {d}$, base {base:g}); "
                 "float16 stops at 65504")
    return fig


def fig_clock_hands(positions=(0, 1, 2, 5, 30), d: int = 16, base: float = 10000.0) -> Figure:
    """Every pair as a clock hand at angle m theta_i (hand 0 fastest), each on its own ring, hand 0 outermost."""
    fig, axes = new_axes(2.3 * len(positions), 2.9, 1, len(positions), gridlines=False)
    n_pairs = d // 2
    ring = 0.85 / n_pairs                                      # the width of one hand's ring
    outer = 1.0 - ring * np.arange(n_pairs)                   # hand i spans [outer_i - 0.85 ring, outer_i]
    for ax, m in zip(axes, positions):
        for i, (a, radius) in enumerate(zip(wrap_angle(m * frequencies(d, base)), outer)):
            color = PALETTE[i % len(PALETTE)]
            ax.add_patch(Circle((0, 0), radius, fill=False, color="0.88", lw=0.6))
            span = np.array([radius - 0.85 * ring, radius])
            ax.plot(span * np.cos(a), span * np.sin(a), "-", color=color, lw=4, solid_capstyle="butt",
                    label=f"hand {i}" if m == positions[0] else None)
            ax.plot([radius * np.cos(a)], [radius * np.sin(a)], "o", color=color, ms=5)
        ax.set(xlim=(-1.15, 1.15), ylim=(-1.15, 1.15), aspect="equal", xticks=[], yticks=[], title=f"$m = {m}$")
    fig.legend(*fig.axes[0].get_legend_handles_labels(), loc="outside right center")
    fig.suptitle(rf"Position $m$ as {n_pairs} clock hands: hand $i$ at angle $m\theta_i$ ($d = {d}$, base {base:g})")
    return fig


def fig_aliasing(d: int = 8, base: float = 10000.0, max_position: int = 60) -> Figure:
    """How far the code at m is from the code at 0, |R_m u - u| for u = (1, 0, 1, 0, ...) on pair 0 only or on every
    pair (0 elsewhere): pair 0 alone nearly comes back at m = 6, all pairs never."""
    m = np.linspace(0, max_position, 6001)
    u = np.zeros((2, 1, d))
    u[0, :, 0], u[1, :, ::2] = 1.0, 1.0
    distance = np.linalg.norm(rotate(np.broadcast_to(u, (2, m.size, d)), m, base=base) - u, axis=-1)
    fig, ax = new_axes(8, 3.6)
    ax.plot(m, distance[0], label=r"pair 0 only ($\theta_0 = 1$)")
    ax.plot(m, distance[1], label=f"all {d // 2} pairs")
    for k in range(1, int(max_position / (2 * np.pi)) + 1):
        ax.axvline(2 * np.pi * k, color="0.8", lw=0.8, zorder=0)
    ax.annotate(r"$m = 6$: pair 0 almost back at $m = 0$", xy=(6, 2 * np.sin(3.0)),   # |e^{6i} - 1|
                xytext=(8, 3.05), arrowprops=dict(arrowstyle="->"))
    ax.set(xlabel="position $m$", ylabel=r"$\|R_m u - R_0 u\|$", xlim=(0, max_position), ylim=(-0.05, 3.5),
           title=rf"One frequency repeats every $2\pi$ positions;" "\n"
           rf"many frequencies together do not ($d = {d}$)")
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=2)
    return fig


def fig_decay_intuition(d: int = 64, base: float = 10000.0, distances=(0, 3, 30)) -> Figure:
    """Why scores fade with distance: the d/2 hands at r theta_i agree at r = 0, then spread; |S_{d/2}| shrinks."""
    fig, axes = new_axes(11, 3.4, 1, len(distances) + 1, width_ratios=[1] * len(distances) + [2])
    n_pairs = d // 2
    for ax, r in zip(axes, distances):
        ax.add_patch(unit_circle())
        a = wrap_angle(r * frequencies(d, base))
        ax.plot([np.zeros_like(a), np.cos(a)], [np.zeros_like(a), np.sin(a)], color="C0", lw=0.8, alpha=0.6)  # hands
        mean = np.exp(1j * a).mean()
        arrow = dict(arrowstyle="->", color=PALETTE[3], lw=2)
        ax.annotate("", xy=(mean.real, mean.imag), xytext=(0, 0), arrowprops=arrow)
        ax.set(xlim=(-1.1, 1.1), ylim=(-1.1, 1.1), aspect="equal", xticks=[], yticks=[],
               title=f"$r = {r}$\nmean length {abs(mean):.2f}")
    r = np.linspace(0, 256, 2561)
    ax = axes[-1]
    ax.plot(r, np.abs(partial_sums(r, d, base)[..., -1]) / n_pairs, lw=1, label=r"$|S_{d/2}| / (d/2)$ (red arrow)")
    ax.plot(r, decay_bound(r, d, base) / decay_bound(0.0, d, base), lw=1.5, label="Figure-2 bound / its value at 0")
    ax.set(xlabel="relative distance $r$", ylabel="length", xlim=(0, 256), ylim=(0, 1.05), title="the hands spread out")
    ax.legend(loc="upper right")
    fig.suptitle(rf"{n_pairs} hands at angles $r\theta_i$ and their mean (red arrow), $d = {d}$")
    return fig


def fig_attention_pattern(n: int = 32, d: int = 64, seed: int = 0, scale: float = 6.0) -> Figure:
    """Causal softmax weights, every token the same content: equal without positions, nearby keys larger with RoPE."""
    x = np.random.default_rng(seed).standard_normal(d)
    x = np.tile(x / np.linalg.norm(x) * np.sqrt(scale * np.sqrt(d)), (n, 1))    # |x|^2 / sqrt(d) = scale
    fig, axes = new_axes(9.5, 4.2, 1, 2, gridlines=False)
    pos = np.arange(n, dtype=float)
    for ax, positions, title in zip(axes, [np.zeros(n), pos], ["no positions (all at $m = 0$)", "RoPE"]):
        rotated = rotate(x, positions)
        scores = rotated @ rotated.T / np.sqrt(d)
        w = softmax(np.where(pos[None, :] <= pos[:, None], scores, -np.inf))     # causal softmax weights (eq 2)
        im = ax.imshow(np.where(np.tril(np.ones((n, n))) > 0, w, np.nan), origin="upper", cmap="viridis",
                       norm=LogNorm(vmin=0.005, vmax=1.0))    # weights from 0.0096 to 1: a log scale saturates none
        ax.set(xlabel="key position $n$", ylabel="query position $m$", title=title)
    fig.colorbar(im, ax=axes, shrink=0.8, label="softmax weight (log scale)")
    fig.suptitle(f"Causal attention weights, every token the same content ($d = {d}$)")
    return fig


#: name -> function returning a Figure.  Each is written as NAME.png and NAME.svg.
FIGURES = {
    "fig2_long_term_decay": fig2_long_term_decay,
    "decay_bound_vs_actual": fig_decay_vs_actual,
    "relative_identity_heatmaps": fig_relative_heatmaps,
    "rotation_illustration": fig_rotation,
    "wavelengths_vs_training_length": fig_wavelengths,
    "context_extension_frequency_ratios": lambda: ScalingView(factor=8.0).static_figure(),   # notebook 05's view
    "precision_angle_errors": fig_precision,
    "clock_hands": fig_clock_hands,
    "aliasing": fig_aliasing,
    "decay_intuition": fig_decay_intuition,
    "attention_pattern": fig_attention_pattern,
    "turning_dimensions": fig_turning_dimensions,          # notebook 00: which features turn in each scheme
    "mrope_layout": fig_mrope_layout,                      # notebook 09: which pairs serve t, h, w (Qwen2-VL, Qwen3-VL)
    "real_attention_maps": fig_real_attention_maps,        # notebook 11: SmolLM2's previous-token and induction heads
}


def write_all(out_dir: Path | str, names=None) -> list[Path]:
    """Write NAME.png and NAME.svg of every figure (or of ``names``), each whole, into ``out_dir`` (made if missing)."""
    names = [names] if isinstance(names, str) else list(names or FIGURES)
    unknown = sorted(set(names) - set(FIGURES))
    if unknown:
        raise ValueError(f"names must be figure names from {sorted(FIGURES)}, got {unknown}")
    out_dir = output_folder(out_dir, "out_dir", [f"{name}.{fmt}" for name in names for fmt in ("png", "svg")])
    written = []
    with matplotlib.rc_context(matplotlib.rcParamsDefault), matplotlib.rc_context(RC):
        for name in names:
            fig = FIGURES[name]()
            for fmt in ("png", "svg"):
                buf = io.BytesIO()
                fig.savefig(buf, format=fmt, metadata=METADATA[fmt])
                written.append(write_atomically(out_dir / f"{name}.{fmt}", buf.getvalue()))
    return written
