"""Slider views: a figure built once whose ``update(**params)`` moves its artists in place and whose ``to_png()``
renders the current frame.  :mod:`~rope_ref.teaching.widgets` puts sliders over them; the site renders frames.
Notebook 05's numbers (each scaling method's frequencies, ratios, angles) sit with their view, :class:`ScalingView`."""

import inspect
import struct
import zlib

import numpy as np
from matplotlib.artist import setp
from matplotlib.axis import Axis
from matplotlib.figure import Figure
from matplotlib.ticker import NullLocator

from .._validate import check_base, check_d, check_number, check_scalar
from ..forms import decay_bound, frequencies, rotate, wrap_angle
from ..scaling import SCALING_METHODS, scaled_inv_freq
from .quantities import random_qk, score
from .style import DPI, PALETTE, VIEW_DPI, new_axes, unit_circle


class View:
    """A figure made once by ``build()`` (``fig``, its artists, ``dynamic``) whose ``draw(**params)`` checks the
    parameters (the arguments of ``draw``, the view's own with their defaults), moves the artists and returns one line
    of the numbers on show, kept as ``readout``.  ``dynamic`` artists (lines, texts, an axis whose limits follow a
    slider) are drawn at every step over a cached image of the rest, drawn again when one of ``background_params``
    moves (the other artists may then change)."""

    background_params: frozenset = frozenset()
    _background = None

    def __init__(self, *args, **kwargs):
        """The view at the given parameters (``draw``'s, by position or name; else its defaults), laid out once."""
        signature = inspect.signature(self.draw)
        self.params = {name: p.default for name, p in signature.parameters.items()}
        self.build()
        self.update(**signature.bind(*args, **kwargs).arguments)
        self._freeze()

    def update(self, **params) -> None:
        """Set some of ``params`` and move the artists; a refused value leaves the view as it was, then raises."""
        unknown = set(params) - set(self.params)
        if unknown:
            raise TypeError(f"unknown parameter(s) {sorted(unknown)}; expected some of {sorted(self.params)}")
        old, self.params = self.params, {**self.params, **params}
        if any(not np.array_equal(old[k], self.params[k]) for k in self.background_params):    # an array: refused below
            self._background = None                 # draw() moves the background's artists while this is None
        try:
            self.readout = self.draw(**self.params)
        except (TypeError, ValueError):
            self.params = old
            self.readout = self.draw(**old)
            raise

    def _freeze(self) -> None:
        """Lay the figure out once and keep it, ``dynamic`` animated; a dynamic axis's label stays where the layout
        put it (no tick-label boxes measured per step)."""
        self.fig.canvas.draw()
        self.fig.set_layout_engine("none")
        for axis in (a for a in self.dynamic if isinstance(a, Axis)):
            xy = axis.label.get_transform().transform(axis.label.get_position())
            axis.set_label_coords(*axis.axes.transAxes.inverted().transform(xy))
        setp(self.dynamic, animated=True)

    def to_png(self) -> bytes:
        """The current frame as PNG: the cached image, the dynamic artists over it, zlib's fastest level."""
        canvas = self.fig.canvas
        if self._background is None:
            canvas.draw()                                   # animated artists are left out
            self._background = canvas.copy_from_bbox(self.fig.bbox)
        canvas.restore_region(self._background)
        for artist in self.dynamic:
            self.fig.draw_artist(artist)
        return _png(np.asarray(canvas.buffer_rgba()))

    def static_figure(self) -> Figure:
        """The figure with every artist drawn normally, laid out again at :data:`DPI`; not stepped after this."""
        setp(self.dynamic, animated=False)
        self.fig.set_dpi(DPI)
        self.fig.set_layout_engine("constrained")
        self.fig.canvas.draw()
        self.fig.set_layout_engine("none")
        return self.fig


def _png(rgba: np.ndarray) -> bytes:
    """A PNG of an ``(h, w, 4)`` uint8 image: unfiltered rows, zlib level 1 (a third of Pillow's time)."""
    h, w, _ = rgba.shape
    rows = np.pad(rgba.reshape(h, -1), ((0, 0), (1, 0)))     # each row: filter type 0, then its pixels

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))
    header = struct.pack(">IIBBBBB", w, h, 8, 6, 0, 0, 0)   # 8-bit RGBA, not interlaced
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows.tobytes(), 1))
            + chunk(b"IEND", b""))


def _minus(text: str) -> str:
    """Plain text with a typographic minus sign (as mathtext draws it) instead of the hyphen."""
    return text.replace("-", "\N{MINUS SIGN}")


class DecayView(View):
    """Figure 2 (eq 37) for any d and base, 1025 samples over [0, 256]: the paper's view and the full range."""

    def build(self):
        self.r = np.linspace(0, 256, 1025)
        self.fig, self.axes = new_axes(9, 3.4, 1, 2, dpi=VIEW_DPI)
        self.lines = [ax.plot(self.r, np.zeros_like(self.r), lw=1)[0] for ax in self.axes]
        for ax, title in zip(self.axes, ["paper's view (distance $\\geq$ 5, peak cut off)", "full range"]):
            ax.set(xlabel="relative distance $m-n$", ylabel=r"$\frac{1}{d/2}\sum_j |S_j|$", xlim=(0, 256), title=title)
        self.title = self.fig.suptitle(" ")
        self.dynamic = (*(ax.yaxis for ax in self.axes), *self.lines, self.title)

    def draw(self, d: int = 128, base: float = 10000.0) -> str:
        d, base = check_d(d), check_base(base)
        y = decay_bound(self.r, d, base)
        setp(self.lines, ydata=y)
        self.axes[1].set_ylim(0, (d / 2 + 1) / 2 * 1.05)
        beyond = y[self.r >= 5]
        self.axes[0].set_ylim(0.95 * beyond.min(), 1.05 * beyond.max())
        self.title.set_text(f"$d$ = {d}, base = {base:g}")
        return (f"d = {d}, base = {base:g}: bound at 0 = {y[0]:.2f}, at 256 = {y[-1]:.2f}, "
                f"mean over [128, 256] = {y[self.r >= 128].mean():.2f}")


class RotationsView(View):
    """Pair i of q and k (``random_qk(d)``) rotated to m + shift and n + shift, and q_m . k_n against m - n:
    the angle between them, (phi_q - phi_k) + (m - n) theta_i, depends only on m - n (eq 11)."""

    background_params = frozenset({"d", "base"})     # the score curve and its y-limits follow d and the base

    def build(self):
        self.r = np.arange(-64, 64.5, 0.5)                  # m - n on the score panel
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
        self.score_title = self.ax_score.set_title(" ", y=1.0, loc="left")
        self.score_text = self.ax_score.set_title(" ", y=1.0, loc="right", color="C3")   # the red dot's value
        self.dynamic = (self.qm, self.kn, self.q0, self.k0, self.angle_values, self.angle_text, self.marker,
                        self.score_text, self.plane_title)

    def _freeze(self):
        ylim = self.ax_score.get_ylim()
        self.ax_score.set_ylim(-150, 150)          # lay out room for the widest tick labels (d up to 128), then
        super()._freeze()                          # keep it: the y-label then never meets a tick label
        self.ax_score.set_ylim(*ylim)

    def draw(self, m: float = 3, n: float = 7, i: int = 0, base: float = 10000.0, d: int = 16, shift: float = 0) -> str:
        d, base = check_d(d), check_base(base)
        m, n, shift = check_scalar(m, "m"), check_scalar(n, "n"), check_scalar(shift, "shift")
        i = check_number(i, "i", f"a pair index 0..{d // 2 - 1} (d = {d})", lambda v: 0 <= v < d // 2)
        q, k = random_qk(d)
        qm, kn = rotate(q, m + shift, base=base), rotate(k, n + shift, base=base)
        lengths = [float(np.linalg.norm(v[2 * i:2 * i + 2])) for v in (q, k)]
        for line, vec, length in zip((self.q0, self.k0, self.qm, self.kn), (q, k, qm, kn), lengths * 2):
            a, b = vec[2 * i:2 * i + 2] / length if length > 0 else (0.0, 0.0)
            line.set_data([0, a], [0, b])
        theta_i = frequencies(d, base)[i]
        self.value = float(score(q, k, m + shift, n + shift, base=base))
        phi_q, phi_k = (np.angle(v[2 * i] + 1j * v[2 * i + 1]) for v in (q, k))
        self.angle = phi_q - phi_k + (m - n) * theta_i      # angle from k_n to q_m
        self.angle_text.set_text(rf"$(\phi_q - \phi_k) + (m-n)\theta_{{{i}}}$")
        self.angle_values.set_text(_minus(f"= {phi_q - phi_k:+.2f} {(m - n) * theta_i:+.2f}\n"
                                          f"= {self.angle:+.2f} rad ({float(wrap_angle(self.angle)):+.2f} "
                                          "mod 2\N{GREEK SMALL LETTER PI})"))
        self.plane_title.set_text(rf"pair {i}: $\theta_{{{i}}} = {theta_i:.3g}$" "\n"
                                  rf"$|q_{{{i}}}| = {lengths[0]:.2f}$, $|k_{{{i}}}| = {lengths[1]:.2f}$")
        if self._background is None:                        # the curve depends on d and base only
            y = score(q, k, 0.0, -self.r, base=base)                      # x-axis is m - n = -(n - m)
            self.curve.set_ydata(y)
            self.ax_score.set_ylim(y.min() - 0.1 * np.ptp(y) - 1e-9, y.max() + 0.1 * np.ptp(y) + 1e-9)
            self.score_title.set_text(f"$d$ = {d}, base = {base:g}")
        self.marker.set_data([m - n], [self.value])       # shift moves both: m - n stays
        self.score_text.set_text(_minus(f"red dot: q\N{MIDDLE DOT}k = {self.value:.4f}"))
        where = f"m = {m:g}, n = {n:g}" if shift == 0 else f"m = {m:g} + {shift:g}, n = {n:g} + {shift:g}"
        return (f"{where}, m - n = {m - n:g}; pair {i} of {d // 2}: theta = {theta_i:.4g}, "
                f"angle k_n to q_m = {self.angle:+.4f} rad; q_m . k_n = {self.value:.4f}")


TRAIN_LEN = 4096          # the example model's training length


def method_configs(factor: float = 8.0, train_len: int = TRAIN_LEN) -> dict:
    """rope_type -> parameters for scaled_inv_freq (each method's ``example``): ``train_len`` extended ``factor``x."""
    train_len = check_number(train_len, "train_len", "a positive integer below 2**53", lambda v: 0 < v < 2 ** 53)
    factor = check_number(factor, "factor", "a real number >= 1 with factor * train_len finite",
                          lambda v: 1 <= v and v * train_len < float("inf"), real=True)
    return {name: method.example(factor, train_len) for name, method in SCALING_METHODS.items() if method.example}


def frequency_ratios(d: int = 128, base: float = 10000.0, factor: float = 8.0, train_len: int = TRAIN_LEN) -> dict:
    """rope_type -> (scaled theta_i / theta_i per pair, attention_factor) for every method of :func:`method_configs`."""
    return {name: (freqs / frequencies(d, base), att) for name, params in method_configs(factor, train_len).items()
            for freqs, att in [scaled_inv_freq(d, base, rope_type=name, **params)]}


class ScalingView(View):
    """For a factor s, d, base and training length L, per pair (placed at 2i/d, so every d shares one axis): each
    method's frequency ratio (left), the largest angle in training against the largest at s L (middle), and the
    angle between neighbours theta_i' (right)."""

    #: Each method's Okabe-Ito colour (no two alike for colour-blind eyes), dashes and markers, so lines that
    #: coincide still show each one on a projector.
    STYLES = {"linear": dict(color=PALETTE[0], ls=(0, (5, 2)), marker="o"),
              "ntk": dict(color=PALETTE[1], ls="-", marker="s"),
              "dynamic": dict(color=PALETTE[2], ls=(0, (1, 1.2)), marker="^"),
              "yarn": dict(color=PALETTE[4], ls="-", marker="D"),
              "llama3": dict(color=PALETTE[5], ls=(0, (6, 2, 1, 2)), marker="v"),
              "default": dict(color="0.45", ls=(0, (3, 3)), marker="x", label="no scaling")}
    #: Training: a thick black line under every method (linear keeps exactly training's angles: drawn on it).
    TRAINING = dict(color="black", lw=5, solid_capstyle="butt", zorder=1.5)

    def build(self):
        self.fig, axes = new_axes(13, 4.8, 1, 3, dpi=VIEW_DPI)
        self.ax_ratio, self.ax_angle, self.ax_gap = axes
        names = list(self.STYLES)[:-1]
        self.train_line, = self.ax_angle.semilogy([], [], label=r"training: $L\,\theta_i$, $\theta_i$", **self.TRAINING)
        self.gap_train, = self.ax_gap.semilogy([], [], **self.TRAINING)   # theta_i': the angle from m to m + 1
        self.ratio_lines, self.angle_lines, self.gap_lines = (   # each method's line in each panel
            {n: ax.plot([], [], lw=2.4, ms=7, markevery=(j, 6), zorder=2.5, **{"label": n, **self.STYLES[n]})[0]
             for j, n in enumerate(panel_names)}
            for ax, panel_names in ((self.ax_ratio, names), (self.ax_angle, ["default", *names]), (self.ax_gap, names)))
        self.ax_ratio.set(ylabel=r"$\theta_i' / \theta_i$", yscale="log", title="frequency ratio per pair")
        ticks = [4.0 ** -k for k in range(6)][::-1]
        self.ax_ratio.set_yticks(ticks, [f"1/{round(1 / t)}" if t < 1 else "1" for t in ticks])
        self.ax_ratio.yaxis.set_minor_locator(NullLocator())
        self.ax_ratio.set_ylim(4.0 ** -5.5, 1.5)
        self.ax_angle.axhline(1.0, color="0.5", ls=":", lw=1)
        self.ax_angle.text(0.02, 0.02, "dotted: one full turn", transform=self.ax_angle.transAxes, color="0.35")
        self.ax_angle.set(ylabel=r"largest angle $/\ 2\pi$ (turns)", ylim=(1e-3, 1e6))
        self.angle_title = self.ax_angle.set_title(" ")
        self.ax_gap.set(ylabel="angle between neighbours (rad)", ylim=(1e-9, 3.0))
        self.gap_text = self.ax_gap.set_title(" \n ")
        setp(axes, xlabel=r"pair $i$ (fast $\rightarrow$ slow)", xlim=(0, 1), xticks=[0, 0.25, 0.5, 0.75, 1],
             xticklabels=["0", "d/8", "d/4", "3d/8", "d/2"])
        self.fig.legend(*self.ax_angle.get_legend_handles_labels(), loc="outside lower center", ncols=7)
        self.title = self.fig.suptitle(" ")
        self.dynamic = (*self.ratio_lines.values(), self.train_line, *self.angle_lines.values(), self.angle_title,
                        self.gap_train, *self.gap_lines.values(), self.gap_text, self.title)

    def draw(self, factor: float = 8.0, d: int = 128, base: float = 10000.0, train_len: int = TRAIN_LEN) -> str:
        d = check_number(d, "d", "an even integer from 4 to 4096", lambda v: 4 <= v <= 4096 and v % 2 == 0)
        ratios = frequency_ratios(d, base, factor, train_len)           # checks base, factor and train_len
        x, theta = np.arange(d // 2) * 2 / d, frequencies(d, base)
        gaps = {"default": theta} | {name: ratio * theta for name, (ratio, _) in ratios.items()}   # scaled theta_i
        # the largest angle each pair reaches, in training and at s L: a pair meets unseen angles above training's
        angles = {"training": train_len * theta} | {name: factor * train_len * gap for name, gap in gaps.items()}
        for name, (ratio, _) in ratios.items():
            self.ratio_lines[name].set_data(x, ratio)
            self.gap_lines[name].set_data(x, gaps[name])
        for name, line in [("training", self.train_line), *self.angle_lines.items()]:
            line.set_data(x, angles[name] / (2 * np.pi))
        self.gap_train.set_data(x, theta)
        self.angle_title.set_text(f"largest angle per pair at {factor:g} L = {factor * train_len:g}")
        self.gap_text.set_text(f"the squeeze, pair 0: neighbours\n{theta[0]:.3g} rad apart, "
                               f"{gaps['linear'][0]:.3g} with linear")
        self.title.set_text(f"d = {d}, base = {base:g}, trained on L = {train_len} positions, extended {factor:g}x")
        return (f"factor {factor:g}, d = {d}, base = {base:g}, L = {train_len}: slowest pair scaled by "
                + ", ".join(f"{n} {r[-1]:.3g}" for n, (r, _) in ratios.items())
                + f"; neighbours in pair 0 apart by {gaps['linear'][0]:.3g} rad with linear")
