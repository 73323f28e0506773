"""Interactive views: a figure built once, whose ``update(**params)`` changes artists in place (widgets' sliders)."""

from __future__ import annotations

import io

import numpy as np
from matplotlib.artist import setp
from matplotlib.axis import Axis
from matplotlib.figure import Figure
from matplotlib.image import imsave
from matplotlib.ticker import NullLocator

from .._validate import check_base, check_d, check_number, check_positive_int, check_scalar
from ..forms import decay_bound, frequencies, rotate, wrap_angle
from .context_extension import TRAIN_LEN, angles_reached, frequency_ratios, method_configs, scaled_frequencies
from .quantities import random_qk, score, score_vs_distance
from .style import DPI, METADATA, VIEW_DPI, new_axes, unit_circle


class View:
    """Base: ``to_png`` draws the artists every step changes (``dynamic``) on a cached background; a change of
    ``relayout_params`` first draws ``relayout`` (in drawing order) on a cached image of everything else."""

    dynamic: tuple = ()
    relayout_params: frozenset = frozenset()
    relayout: tuple = ()
    _background = None            # everything but the dynamic artists
    _static = None                # everything but the dynamic and the relayout artists

    def update(self, **params) -> None:
        unknown = set(params) - set(self.params)
        if unknown:
            raise TypeError(f"unknown parameter(s) {sorted(unknown)}; expected some of {sorted(self.params)}")
        if any(self.params.get(k) != v for k, v in params.items() if k in self.relayout_params):
            self._background = None
        old = dict(self.params)
        self.params.update(params)
        try:
            self._redraw()
        except (TypeError, ValueError):   # a refused value leaves the view as it was, not half-updated
            self.params = old
            self._background = None
            self._redraw()
            raise

    def _freeze_layout(self) -> None:
        self.fig.canvas.draw()
        self.fig.set_layout_engine("none")
        for axis in self.relayout:        # a redrawn axis keeps its label where the layout put it, drawn once
            if isinstance(axis, Axis):
                anchor = axis.label.get_transform().transform(axis.label.get_position())
                axis.set_label_coords(*axis.axes.transAxes.inverted().transform(anchor))
        setp(self.dynamic, animated=True)

    def to_png(self) -> bytes:
        """The current state as PNG: the blitted canvas, at zlib's fastest level."""
        canvas = self.fig.canvas
        if self._background is None:
            labels = [axis.label for axis in self.relayout if isinstance(axis, Axis)]   # fixed: drawn once
            if self._static is None:                        # once: the figure without the relayout artists
                setp(self.relayout, visible=False)
                canvas.draw()
                for label in labels:
                    self.fig.draw_artist(label)
                self._static = canvas.copy_from_bbox(self.fig.bbox)
                setp(self.relayout, visible=True)
            canvas.restore_region(self._static)
            setp(labels, visible=False)
            for artist in self.relayout:
                self.fig.draw_artist(artist)
            setp(labels, visible=True)
            self._background = canvas.copy_from_bbox(self.fig.bbox)
        canvas.restore_region(self._background)
        for artist in self.dynamic:
            self.fig.draw_artist(artist)
        png = io.BytesIO()
        imsave(png, np.asarray(canvas.buffer_rgba()), format="png", metadata=METADATA["png"],
               pil_kwargs={"compress_level": 1})
        return png.getvalue()

    def static_figure(self) -> Figure:
        """The figure with every artist drawn normally, laid out again at :data:`DPI`; not stepped after this."""
        setp(self.dynamic, animated=False)
        self.fig.set_dpi(DPI)
        self.fig.set_layout_engine("constrained")
        self.fig.canvas.draw()                        # lay out at DPI, then keep it (for PNG and SVG alike)
        self.fig.set_layout_engine("none")
        return self.fig


def _minus(text: str) -> str:
    """Plain text with a typographic minus sign (as mathtext draws it) instead of the hyphen."""
    return text.replace("-", "\N{MINUS SIGN}")


class DecayView(View):
    """Figure 2 (eq 37) for any d and base, ``n_points`` samples over [0, 256]: the paper's view and the full range."""

    def __init__(self, d: int = 128, base: float = 10000.0, n_points: int = 1025):
        self.params = dict(d=d, base=base)
        check_number(n_points, "n_points", "an integer from 2 to 100000 (the curve's samples over [0, 256])",
                     lambda v: 2 <= v <= 100_000)
        self.r = np.linspace(0, 256, n_points)
        self.fig, self.axes = new_axes(9, 3.4, 1, 2, dpi=VIEW_DPI)
        self.lines = [ax.plot(self.r, np.zeros_like(self.r), lw=1)[0] for ax in self.axes]
        for ax, title in zip(self.axes, ["paper's view (distance $\\geq$ 5, peak cut off)", "full range"]):
            ax.set(xlabel="relative distance $m-n$", ylabel=r"$\frac{1}{d/2}\sum_j |S_j|$", xlim=(0, 256), title=title)
        self.title = self.fig.suptitle(" ")
        self.dynamic = (*self.lines, self.title)
        self.relayout_params = frozenset({"d", "base"})      # they move both panels' y-limits
        self.relayout = tuple(a for ax in self.axes for a in (ax.yaxis, *ax.spines.values()))
        self._redraw()
        self._freeze_layout()

    def _redraw(self):
        d, base = self.params["d"], self.params["base"]
        self.y = decay_bound(self.r, d, base)
        setp(self.lines, ydata=self.y)
        self.axes[1].set_ylim(0, (d / 2 + 1) / 2 * 1.05)
        beyond = self.y[self.r >= 5]
        self.axes[0].set_ylim(0.95 * beyond.min(), 1.05 * beyond.max())
        self.title.set_text(f"$d$ = {d}, base = {base:g}")

    def readout(self) -> str:
        return (f"d = {self.params['d']}, base = {self.params['base']:g}: bound at 0 = {self.y[0]:.2f}, "
                f"at 256 = {self.y[-1]:.2f}, mean over [128, 256] = {self.y[self.r >= 128].mean():.2f}")


class RotationsView(View):
    """Pair i of q and k (``random_qk(d)``) rotated to m + shift and n + shift, and q_m . k_n against m - n:
    the angle between them, (phi_q - phi_k) + (m - n) theta_i, depends only on m - n (eq 11)."""

    def __init__(self, m: float = 3, n: float = 7, i: int = 0, base: float = 10000.0, d: int = 16,
                 max_distance: int = 64, shift: float = 0):
        check_number(max_distance, "max_distance", "an integer from 1 to 100000 (the score panel spans "
                     "-max_distance..max_distance)", lambda v: 1 <= v <= 100_000)
        self.params = dict(m=m, n=n, i=i, base=base, d=d, shift=shift)
        self.r = np.arange(-max_distance, max_distance + 1, 0.5)
        self.fig, (self.ax_plane, self.ax_score) = new_axes(9, 3.8, 1, 2, dpi=VIEW_DPI, width_ratios=[1, 1.6])
        ax = self.ax_plane
        ax.add_patch(unit_circle())
        ax.axhline(0, color="0.85", lw=0.8)
        ax.axvline(0, color="0.85", lw=0.8)
        self.q0, = ax.plot([], [], color="C0", alpha=0.3, lw=2, label="$q$ (at 0)")
        self.k0, = ax.plot([], [], color="C1", alpha=0.3, lw=2, label="$k$ (at 0)")
        self.qm, = ax.plot([], [], "-o", color="C0", lw=2, markevery=[1], label="$q_m$")
        self.kn, = ax.plot([], [], "-o", color="C1", lw=2, markevery=[1], label="$k_n$")
        # The angle as a formula (mathtext, changes with i only) over its value (plain text, every step).
        self.angle_values = ax.text(0.02, 0.02, " ", transform=ax.transAxes)
        self.angle_text = ax.annotate(" ", xy=(0, 1), xycoords=self.angle_values, va="bottom")
        ax.set(aspect="equal", xlim=(-1.8, 1.8), ylim=(-1.8, 1.8), xticks=[], yticks=[])
        self.plane_title = ax.set_title(" \n ")          # two lines: the pair and theta, then the lengths
        ax.legend(loc="upper right", ncols=2)
        self.curve, = self.ax_score.plot(self.r, np.zeros_like(self.r), lw=1)
        self.marker, = self.ax_score.plot([0], [0], "o", color="C3", ms=8)
        self.ax_score.set(xlabel="relative distance $m - n$", ylabel=r"$q_m \cdot k_n$ (sum over all $d/2$ pairs)",
                          xlim=self.r[[0, -1]])
        self.score_title = self.ax_score.set_title(" ", y=1.0, loc="left")   # fixed: a relayout step draws it alone
        self.score_text = self.ax_score.set_title(" ", y=1.0, loc="right", color="C3")   # the red dot's value
        self.dynamic = (self.qm, self.kn, self.q0, self.k0, self.angle_values, self.angle_text, self.marker,
                        self.score_text, self.plane_title)
        self.relayout_params = frozenset({"base", "d"})      # they change the curve, its y-limits and the title
        self.relayout = (self.ax_score.yaxis, self.curve, *self.ax_score.spines.values(), self.score_title)
        self._redraw()
        ylim = self.ax_score.get_ylim()
        self.ax_score.set_ylim(-150, 150)          # lay out room for the widest tick labels (d up to 128), then
        self._freeze_layout()                      # keep it: the y-label then never meets a tick label
        self.ax_score.set_ylim(*ylim)

    def _redraw(self):
        p = self.params
        d, base = check_d(p["d"]), check_base(p["base"])
        check_scalar(p["m"], "m"), check_scalar(p["n"], "n"), check_scalar(p["shift"], "shift")
        expected = f"a pair index 0..d/2-1 = 0..{d // 2 - 1} for d = {d} (an integer)"
        i = check_number(p["i"], "i", expected, lambda v: 0 <= v <= d // 2 - 1)
        self.q, self.k = q, k = random_qk(d)
        pm, pn = p["m"] + p["shift"], p["n"] + p["shift"]
        qm, kn = rotate(q, pm, base=base), rotate(k, pn, base=base)
        lengths = [float(np.linalg.norm(v[2 * i:2 * i + 2])) for v in (q, k)]
        for line, vec, length in zip((self.q0, self.k0, self.qm, self.kn), (q, k, qm, kn), lengths * 2):
            a, b = vec[2 * i:2 * i + 2] / length if length > 0 else (0.0, 0.0)
            line.set_data([0, a], [0, b])
        self.theta_i = frequencies(d, base)[i]
        self.value = float(score(q, k, pm, pn, base=base))
        phi_q, phi_k = (np.angle(v[2 * i] + 1j * v[2 * i + 1]) for v in (q, k))
        self.angle = phi_q - phi_k + (p["m"] - p["n"]) * self.theta_i      # angle from k_n to q_m
        self.angle_text.set_text(rf"$(\phi_q - \phi_k) + (m-n)\theta_{{{i}}}$")
        self.angle_values.set_text(_minus(f"= {phi_q - phi_k:+.2f} {(p['m'] - p['n']) * self.theta_i:+.2f}\n"
                                          f"= {self.angle:+.2f} rad ({float(wrap_angle(self.angle)):+.2f} "
                                          "mod 2\N{GREEK SMALL LETTER PI})"))
        self.plane_title.set_text(rf"pair {i}: $\theta_{{{i}}} = {self.theta_i:.3g}$" "\n"
                                  rf"$|q_{{{i}}}| = {lengths[0]:.2f}$, $|k_{{{i}}}| = {lengths[1]:.2f}$")
        if getattr(self, "_curve_for", None) != (d, base):   # the curve depends on d and base only
            y = score_vs_distance(q, k, -self.r, base=base)               # x-axis is m - n = -(n - m)
            self.curve.set_ydata(y)
            self.ax_score.set_ylim(y.min() - 0.1 * np.ptp(y) - 1e-9, y.max() + 0.1 * np.ptp(y) + 1e-9)
            self.score_title.set_text(f"$d$ = {d}, base = {base:g}")
            self._curve_for = (d, base)
        self.marker.set_data([p["m"] - p["n"]], [self.value])       # shift moves both: m - n stays
        self.score_text.set_text(_minus(f"red dot: q\N{MIDDLE DOT}k = {self.value:.4f}"))

    def readout(self) -> str:
        p = self.params
        where = (f"m = {p['m']:g}, n = {p['n']:g}" if p["shift"] == 0 else
                 f"m = {p['m']:g} + {p['shift']:g}, n = {p['n']:g} + {p['shift']:g}")
        return (f"{where}, m - n = {p['m'] - p['n']:g}; pair {int(p['i'])} of {p['d'] // 2}: "
                f"theta = {self.theta_i:.4g}, angle k_n to q_m = {self.angle:+.4f} rad; q_m . k_n = {self.value:.4f}")


class ScalingView(View):
    """For a factor s, d, base and training length L, per pair: each method's frequency ratio (left), the largest
    angle in training against the largest at s L (middle), and the angle between neighbours theta_i' (right)."""

    #: Each method's colour, dashes and marker (at pairs of its own), so lines that coincide still show each one.
    STYLES = {"linear": dict(color="C0", ls=(0, (5, 2)), marker="o"), "ntk": dict(color="C1", ls="-", marker="s"),
              "dynamic": dict(color="C2", ls=(0, (1, 1.5)), marker="^"), "yarn": dict(color="C3", ls="-", marker="D"),
              "llama3": dict(color="C4", ls=(0, (6, 2, 1, 2)), marker="v"),
              "default": dict(color="0.35", ls=(0, (3, 3)), marker="")}
    #: Training's curve: a wide pale band under every method (linear keeps exactly training's angles: on the band).
    TRAINING = dict(color="0.78", lw=7, solid_capstyle="butt", zorder=1.5)

    def __init__(self, factor: float = 8.0, d: int = 128, base: float = 10000.0, train_len: int = TRAIN_LEN):
        self.params = dict(factor=factor, d=d, base=base, train_len=train_len)
        self.fig, (self.ax_ratio, self.ax_angle, self.ax_gap) = new_axes(13, 4.6, 1, 3, dpi=VIEW_DPI)
        names = list(method_configs())
        xlabel = r"pair $i$ (fast $\rightarrow$ slow)"

        def method_line(ax, name, j):
            return ax.plot([], [], lw=1.6, ms=4.5, markevery=(2 * j, 11), label=name, zorder=2.5,
                           **self.STYLES[name])[0]
        self.ratio_lines = {n: method_line(self.ax_ratio, n, j) for j, n in enumerate(names)}
        self.ax_ratio.set(xlabel=xlabel, ylabel=r"$\theta_i' / \theta_i$", yscale="log",
                          title="frequency ratio per pair")
        ticks = [4.0 ** -k for k in range(6)][::-1]
        self.ax_ratio.set_yticks(ticks, [f"1/{round(1 / t)}" if t < 1 else "1" for t in ticks])
        self.ax_ratio.yaxis.set_minor_locator(NullLocator())
        self.ax_ratio.set_ylim(4.0 ** -5.5, 1.5)              # fixed, so a step only redraws the lines
        ax = self.ax_angle
        self.train_line, = ax.semilogy([], [], label=r"training: $L\,\theta_i$, $\theta_i$", **self.TRAINING)
        self.angle_lines = {n: method_line(ax, n, j) for j, n in enumerate(["default", *names])}
        self.angle_lines["default"].set_label("no scaling")
        ax.axhline(1.0, color="0.5", ls=":", lw=1)
        ax.text(0.02, 0.02, "dotted: one full turn", transform=ax.transAxes, ha="left", va="bottom", color="0.35")
        ax.set(xlabel=xlabel, ylabel=r"largest angle $/\ 2\pi$ (turns)", ylim=(1e-3, 1e6))
        self.angle_title = ax.set_title(" ")
        ax = self.ax_gap                                # theta_i': the angle between positions m and m + 1
        self.gap_train, = ax.semilogy([], [], **self.TRAINING)
        self.gap_lines = {n: method_line(ax, n, j) for j, n in enumerate(names)}
        ax.set(xlabel=xlabel, ylabel="angle between neighbours (rad)", ylim=(1e-9, 3.0))
        self.gap_text = ax.set_title(" \n ")            # the squeeze in numbers, two lines (dynamic)
        self.fig.legend(*self.ax_angle.get_legend_handles_labels(), loc="outside lower center", ncols=7)
        self.title = self.fig.suptitle(" ")
        self.dynamic = (*self.ratio_lines.values(), self.train_line, *self.angle_lines.values(), self.angle_title,
                        self.gap_train, *self.gap_lines.values(), self.gap_text, self.title)
        self.relayout_params = frozenset({"d"})              # d moves the three x-axes
        # what a new x-axis is drawn under, in a full redraw's order: the grid, the static lines and notes, the spines
        self.relayout = tuple(a for ax in self.fig.axes for a in (
            ax.xaxis, ax.yaxis, *(ln for ln in ax.lines if ln not in self.dynamic),
            *(tx for tx in ax.texts if tx not in self.dynamic), *ax.spines.values()))
        self._redraw()
        self._freeze_layout()

    def _redraw(self):
        p = self.params
        factor = check_number(p["factor"], "factor", "a real number >= 1 (how many times longer than training)",
                              lambda v: 1 <= v < np.inf, real=True)
        d = check_number(p["d"], "d", "an even integer from 4 (two pairs, for a spectrum) to 4096 (one line point "
                         "per pair)", lambda v: 4 <= v <= 4096 and v % 2 == 0)
        base, train_len = check_base(p["base"]), check_positive_int(p["train_len"], "train_len")
        scaled = scaled_frequencies(d, base, factor, train_len)   # once per step
        self.ratios = ratios = frequency_ratios(d, base, scaled=scaled)
        x = np.arange(d // 2)
        setp(self.fig.axes, xlim=(0, d // 2 - 1))
        theta = frequencies(d, base)
        self.gaps = {name: ratio * theta for name, (ratio, _) in ratios.items()}
        for name, (ratio, _) in ratios.items():
            self.ratio_lines[name].set_data(x, ratio)
            self.gap_lines[name].set_data(x, self.gaps[name])
        self.angles = angles_reached(d, base, factor, train_len, scaled=scaled)
        extended = factor * train_len
        self.angles["default"] = extended * theta
        self.train_line.set_data(x, self.angles["training"] / (2 * np.pi))
        for name, line in self.angle_lines.items():
            line.set_data(x, self.angles[name] / (2 * np.pi))
        self.gap_train.set_data(x, theta)
        # short plain text: every glyph is rasterised again each step (~50 us each), mathtext parsed (~6 ms)
        self.angle_title.set_text(f"largest angle per pair at {factor:g} L = {extended:g}")
        self.gap_text.set_text(f"the squeeze, pair 0: neighbours\n{theta[0]:.3g} rad apart, "
                               f"{self.gaps['linear'][0]:.3g} with linear")
        self.title.set_text(f"d = {d}, base = {base:g}, trained on L = {train_len} positions, extended {factor:g}x")

    def readout(self) -> str:
        p = self.params
        return (f"factor {float(p['factor']):g}, d = {p['d']}, base = {float(p['base']):g}, L = {p['train_len']}: "
                "slowest pair scaled by " + ", ".join(f"{n} {r[-1]:.3g}" for n, (r, _) in self.ratios.items())
                + f"; neighbours in pair 0 apart by {self.gaps['linear'][0]:.3g} rad with linear")
