"""Figures and interactive views.  Pure functions of their parameters; no pyplot state.

Static figures are functions returning a :class:`matplotlib.figure.Figure`.
Interactive views are small classes: build the figure once, then ``update(**params)``
changes the existing artists' data (no new figure), and ``to_png()`` renders it.
:mod:`rope_ref.widgets` wraps each view in ipywidgets sliders.
"""

from __future__ import annotations

import io

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from .analysis import (form_errors, mean_abs_score, random_qk, score, score_map,
                       score_vs_distance, sinusoidal_score_map)
from .core import decay_bound, inv_freq, rotate

#: Relative distances of Figure 2: continuous over [0, 256] in steps of 0.01 (25,601 points).
FIG2_DISTANCES = np.linspace(0.0, 256.0, 25601)
#: The y-range of the paper's Figure 2 axis.
FIG2_PAPER_YLIM = (6.0, 22.0)


def new_figure(width: float = 9.0, height: float = 3.6, dpi: int = 80) -> Figure:
    """A pyplot-free Figure with an Agg canvas (renders the same under any backend)."""
    fig = Figure(figsize=(width, height), dpi=dpi, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def figure_png(fig: Figure) -> bytes:
    """PNG bytes of a figure, without the software/date metadata that makes files differ."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


# ---- static figures ---------------------------------------------------------------------------

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
        theta = inv_freq(d, base)[i]
        ax.add_patch(_circle())
        for m, (a, b) in zip(positions, rot[:, 2 * i:2 * i + 2]):
            ax.annotate("", xy=(a, b), xytext=(0, 0), arrowprops=dict(arrowstyle="->", color=f"C{m % 10}"))
            ax.text(1.12 * a, 1.12 * b, f"m={m}", ha="center", va="center", fontsize=8)
        ax.set(xlim=(-1.35, 1.35), ylim=(-1.35, 1.35), aspect="equal",
               title=f"pair {i}: angle m theta_{i}, theta_{i} = {theta:.3g}")
    return fig


def _circle():
    from matplotlib.patches import Circle
    return Circle((0, 0), 1.0, fill=False, color="0.7", lw=0.8)


# ---- interactive views ------------------------------------------------------------------------

class View:
    """Base: a figure built once; ``update`` changes artists in place; ``to_png`` renders.

    Subclasses list the artists a step changes (``dynamic``) and the parameters whose change
    moves axes or ticks (``relayout_params``).  A step that changes only dynamic artists
    restores a cached background and redraws just those (blitting); others redraw everything.
    """

    fig: Figure
    params: dict
    dynamic: tuple = ()
    relayout_params: frozenset = frozenset()
    _background = None

    def update(self, **params) -> None:
        unknown = set(params) - set(self.params)
        if unknown:
            raise TypeError(f"unknown parameter(s) {sorted(unknown)}; expected some of {sorted(self.params)}")
        if any(self.params.get(k) != v for k, v in params.items() if k in self.relayout_params):
            self._background = None
        self.params.update(params)
        self._redraw()

    def _redraw(self) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def readout(self) -> str:
        return ""

    def _freeze_layout(self) -> None:
        """Lay out once with the constrained engine, then keep those positions, and mark the
        dynamic artists as animated (drawn by :meth:`to_png` on top of a cached background)."""
        self.fig.canvas.draw()
        self.fig.set_layout_engine("none")
        for artist in self.dynamic:
            artist.set_animated(True)

    def to_png(self) -> bytes:
        """Render the current state to PNG (fast zlib level; the figures/ files use :func:`figure_png`)."""
        from PIL import Image
        canvas = self.fig.canvas
        if self._background is None:
            canvas.draw()                                   # everything but the dynamic artists
            self._background = canvas.copy_from_bbox(self.fig.bbox)
        canvas.restore_region(self._background)
        for artist in self.dynamic:
            self.fig.draw_artist(artist)
        buf = io.BytesIO()
        Image.fromarray(np.asarray(canvas.buffer_rgba())).save(buf, format="png", compress_level=1)
        return buf.getvalue()

    def static_figure(self) -> Figure:
        """The figure with every artist drawn normally (for savefig / figures/)."""
        for artist in self.dynamic:
            artist.set_animated(False)
        return self.fig


class DecayView(View):
    """Figure 2 for any d and base: the paper's view and the full range, updated in place."""

    def __init__(self, d: int = 128, base: float = 10000.0, n_points: int = 2561):
        self.params = dict(d=d, base=base)
        self.r = np.linspace(0, 256, n_points)
        self.fig = new_figure(9, 3.4)
        self.axes = self.fig.subplots(1, 2)
        self.lines = [ax.plot(self.r, np.zeros_like(self.r), lw=1)[0] for ax in self.axes]
        for ax, title in zip(self.axes, ["paper's view (y 6 to 22)", "full range"]):
            ax.set(xlabel="relative distance", ylabel="relative upper bound", xlim=(0, 256), title=title)
            ax.grid(alpha=0.3)
        self.axes[0].set_ylim(*FIG2_PAPER_YLIM)
        self.title = self.fig.suptitle(" ")
        self.dynamic = (*self.lines, self.title)
        self.relayout_params = frozenset({"d"})              # d moves the right panel's y-limit
        self._redraw()
        self._freeze_layout()

    def _redraw(self):
        d, base = self.params["d"], self.params["base"]
        self.y = decay_bound(self.r, d, base)
        for line in self.lines:
            line.set_ydata(self.y)
        self.axes[1].set_ylim(0, (d / 2 + 1) / 2 * 1.05)
        self.title.set_text(f"d = {d}, base = {base:g}")

    def readout(self) -> str:
        d = self.params["d"]
        return (f"d = {d}, base = {self.params['base']:g}: bound at 0 = {self.y[0]:.2f}, "
                f"at 256 = {self.y[-1]:.2f}, mean over [128, 256] = {self.y[self.r >= 128].mean():.2f}")


class RotationsView(View):
    """Pair i of q and k drawn as arrows rotated to positions m and n, and q_m.k_n against n - m.

    Moving m and n together rotates both arrows but keeps their angle, and the
    marker on the right stays put: the score depends only on n - m (eq 11).
    """

    def __init__(self, m: float = 3, n: float = 7, i: int = 0, base: float = 10000.0, d: int = 16,
                 seed: int = 0, max_distance: int = 64):
        self.params = dict(m=m, n=n, i=i, base=base, d=d)
        self.seed, self.max_distance = seed, max_distance
        self.r = np.arange(-max_distance, max_distance + 1, 0.5)
        self.fig = new_figure(9, 3.8)
        self.ax_plane, self.ax_score = self.fig.subplots(1, 2, width_ratios=[1, 1.6])
        ax = self.ax_plane
        ax.add_patch(_circle())
        ax.axhline(0, color="0.85", lw=0.8)
        ax.axvline(0, color="0.85", lw=0.8)
        self.q0, = ax.plot([], [], color="C0", alpha=0.3, lw=2, label="q pair (m=0)")
        self.k0, = ax.plot([], [], color="C1", alpha=0.3, lw=2, label="k pair (n=0)")
        self.qm, = ax.plot([], [], "-o", color="C0", lw=2, markevery=[1], label="q rotated to m")
        self.kn, = ax.plot([], [], "-o", color="C1", lw=2, markevery=[1], label="k rotated to n")
        self.angle_text = ax.text(0.02, 0.02, "", transform=ax.transAxes, fontsize=9)
        ax.set(aspect="equal", xlim=(-1.6, 1.6), ylim=(-1.6, 1.6), title="pair i on the complex plane")
        ax.legend(loc="upper right", fontsize=7)
        self.curve, = self.ax_score.plot(self.r, np.zeros_like(self.r), lw=1)
        self.marker, = self.ax_score.plot([0], [0], "o", color="C3", ms=8)
        self.ax_score.set(xlabel="relative distance n - m", ylabel="q_m . k_n", xlim=self.r[[0, -1]])
        self.ax_score.grid(alpha=0.3)
        self.dynamic = (self.qm, self.kn, self.q0, self.k0, self.angle_text, self.marker, self.ax_score.title)
        self.relayout_params = frozenset({"base", "d"})      # they change the curve and its y-limits
        self._redraw()
        self._freeze_layout()

    def _vectors(self):
        p = self.params
        q, k = random_qk(p["d"], self.seed)
        return q / np.linalg.norm(q) * np.sqrt(p["d"] / 2), k / np.linalg.norm(k) * np.sqrt(p["d"] / 2)

    def _redraw(self):
        p = self.params
        d, base = p["d"], p["base"]
        i = min(int(p["i"]), d // 2 - 1)
        q, k = self._vectors()
        qm, kn = rotate(q, p["m"], base=base), rotate(k, p["n"], base=base)
        for line, vec in [(self.q0, q), (self.k0, k), (self.qm, qm), (self.kn, kn)]:
            a, b = vec[2 * i:2 * i + 2] / max(np.linalg.norm(q[2 * i:2 * i + 2]), np.linalg.norm(k[2 * i:2 * i + 2]))
            line.set_data([0, a], [0, b])
        self.theta_i = inv_freq(d, base)[i]
        self.value = float(score(q, k, p["m"], p["n"], base=base))
        self.angle_text.set_text(f"(m-n) theta_{i} = {(p['m'] - p['n']) * self.theta_i:.3f} rad")
        y = score_vs_distance(q, k, self.r, base=base)
        self.curve.set_ydata(y)
        self.ax_score.set_ylim(y.min() - 0.1 * np.ptp(y) - 1e-9, y.max() + 0.1 * np.ptp(y) + 1e-9)
        self.marker.set_data([p["n"] - p["m"]], [self.value])
        self.ax_score.set_title(f"d = {d}, base = {base:g}: q_m.k_n = {self.value:.4f}")

    def readout(self) -> str:
        p = self.params
        return (f"m = {p['m']:g}, n = {p['n']:g}, n - m = {p['n'] - p['m']:g}; pair {min(int(p['i']), p['d'] // 2 - 1)}: "
                f"theta = {self.theta_i:.4g}; q_m . k_n = {self.value:.6f}")
