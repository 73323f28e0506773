"""Interactive views: a figure built once, whose ``update(**params)`` changes artists in place.

Each view lists the artists a slider step changes (``dynamic``); a step redraws only those on a
cached background (blitting).  :mod:`rope_ref.teaching.widgets` wraps each view in sliders.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import FixedFormatter, FixedLocator, NullLocator

from ..core import decay_bound, frequencies, rotate
from .context_extension import TRAIN_LEN, frequency_ratios, method_configs, scaled_frequencies
from .quantities import FIG2_PAPER_YLIM, random_qk, score, score_vs_distance
from .style import new_figure, unit_circle


class View:
    """Base: a figure built once; ``update`` changes artists in place; ``to_png`` renders.

    Subclasses list the artists a step changes (``dynamic``), the parameters whose change
    moves axes or ticks (``relayout_params``) and the axes those parameters move
    (``relayout_axes``).  A step that changes only dynamic artists restores a cached background
    and redraws just those (blitting); a relayout step redraws only ``relayout_axes`` on a cached
    image of the rest of the figure, then blits.
    """

    fig: Figure
    params: dict
    dynamic: tuple = ()
    relayout_params: frozenset = frozenset()
    relayout_axes: tuple = ()
    _background = None            # everything but the dynamic artists
    _static = None                # everything but the dynamic artists and relayout_axes

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
        canvas = self.fig.canvas
        if self._background is None:
            if self._static is None:                        # once: the figure without the axes that move
                for ax in self.relayout_axes:
                    ax.set_visible(False)
                canvas.draw()
                self._static = canvas.copy_from_bbox(self.fig.bbox)
                for ax in self.relayout_axes:
                    ax.set_visible(True)
            canvas.restore_region(self._static)
            for ax in self.relayout_axes:
                self.fig.draw_artist(ax)
            self._background = canvas.copy_from_bbox(self.fig.bbox)
        canvas.restore_region(self._background)
        for artist in self.dynamic:
            self.fig.draw_artist(artist)
        return _png(np.asarray(canvas.buffer_rgba()))

    def static_figure(self) -> Figure:
        """The figure with every artist drawn normally (for savefig / figures/)."""
        for artist in self.dynamic:
            artist.set_animated(False)
        return self.fig


def _png(rgba: np.ndarray) -> bytes:
    """A PNG of an ``(h, w, 4)`` uint8 image: unfiltered rows, zlib level 1 (several times faster than
    PIL's encoder here; lossless like any PNG).  Opaque images are stored as RGB."""
    h, w, _ = rgba.shape
    opaque = bool((rgba[..., 3] == 255).all())
    pixels = rgba[..., :3] if opaque else rgba
    rows = np.zeros((h, 1 + pixels.shape[-1] * w), np.uint8)    # each row: filter byte 0, then pixels
    rows[:, 1:] = pixels.reshape(h, -1)

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    header = struct.pack(">IIBBBBB", w, h, 8, 2 if opaque else 6, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows.tobytes(), 1))
            + chunk(b"IEND", b""))


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
        self.relayout_axes = (self.axes[1],)
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
        ax.add_patch(unit_circle())
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
        self.relayout_axes = (self.ax_score,)
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
        self.theta_i = frequencies(d, base)[i]
        self.value = float(score(q, k, p["m"], p["n"], base=base))
        self.angle_text.set_text(f"(m-n) theta_{i} = {(p['m'] - p['n']) * self.theta_i:.3f} rad")
        if getattr(self, "_curve_for", None) != (d, base):   # the curve depends on d and base only
            y = score_vs_distance(q, k, self.r, base=base)
            self.curve.set_ydata(y)
            self.ax_score.set_ylim(y.min() - 0.1 * np.ptp(y) - 1e-9, y.max() + 0.1 * np.ptp(y) + 1e-9)
            self._curve_for = (d, base)
        self.marker.set_data([p["n"] - p["m"]], [self.value])
        self.ax_score.set_title(f"d = {d}, base = {base:g}: q_m.k_n = {self.value:.4f}")

    def readout(self) -> str:
        p = self.params
        return (f"m = {p['m']:g}, n = {p['n']:g}, n - m = {p['n'] - p['m']:g}; pair {min(int(p['i']), p['d'] // 2 - 1)}: "
                f"theta = {self.theta_i:.4g}; q_m . k_n = {self.value:.6f}")


class ScalingView(View):
    """How each method rescales each frequency, and the Figure-2 bound beyond training, for a scale factor."""

    def __init__(self, factor: float = 8.0, d: int = 128, base: float = 10000.0, train_len: int = TRAIN_LEN):
        self.params = dict(factor=factor)
        self.d, self.base, self.train_len = d, base, train_len
        self.fig = new_figure(10, 3.8)
        self.ax_ratio, self.ax_bound = self.fig.subplots(1, 2)
        names = list(method_configs())
        self.ratio_lines = {n: self.ax_ratio.plot([], [], label=n, lw=1.5)[0] for n in names}
        self.ax_ratio.set(xlabel="pair i (fast -> slow)", ylabel="scaled theta_i / theta_i", yscale="log",
                          xlim=(0, d // 2 - 1), title="frequency ratio per pair")
        self.ax_ratio.legend(fontsize=7, loc="lower left")
        ticks = [4.0 ** -k for k in range(6)][::-1]
        self.ax_ratio.set_ylim(4.0 ** -5.5, 1.5)              # fixed, so a step only redraws the lines
        self.ax_ratio.yaxis.set_major_locator(FixedLocator(ticks))
        self.ax_ratio.yaxis.set_major_formatter(FixedFormatter([f"1/{round(1 / t)}" if t < 1 else "1" for t in ticks]))
        self.ax_ratio.yaxis.set_minor_locator(NullLocator())
        self.ax_ratio.grid(alpha=0.3)
        # The bound oscillates fast at large distances: show its mean over blocks of 4 samples.
        self.r = np.linspace(0, 8 * train_len, 1025)
        self.r_mid = self.r[:-1].reshape(-1, 4).mean(axis=1)
        self.bound_lines = {n: self.ax_bound.plot(self.r_mid, np.zeros_like(self.r_mid), lw=1.2, label=n)[0]
                            for n in ["default", "linear", "yarn", "llama3"]}
        self.ax_bound.legend(fontsize=7)
        self.ax_bound.axvline(train_len, color="0.5", ls=":", lw=1)
        self.ax_bound.set(xlabel="relative distance", ylabel="decay bound (eq 37), block mean", xlim=(0, self.r[-1]),
                          title="Figure-2 bound, far beyond training")
        self.ax_bound.grid(alpha=0.3)
        self.ax_bound.set_ylim(0, 12)
        self.title = self.fig.suptitle(" ")
        self.dynamic = (*self.ratio_lines.values(), *self.bound_lines.values(), self.title)
        self._redraw()
        self._freeze_layout()

    def _redraw(self):
        factor = float(self.params["factor"])
        scaled = scaled_frequencies(self.d, self.base, factor, self.train_len)   # once per step
        self.ratios = ratios = frequency_ratios(self.d, self.base, scaled=scaled)
        pairs = np.arange(self.d // 2)
        for name, (ratio, _) in ratios.items():
            self.ratio_lines[name].set_data(pairs, ratio)
        for name, line in self.bound_lines.items():
            freqs = frequencies(self.d, self.base) if name == "default" else scaled[name][0]
            line.set_ydata(self._block_mean(decay_bound(self.r, self.d, inv_freq=freqs)))
        self.title.set_text(f"trained on {self.train_len} positions, extended x{factor:g}")

    @staticmethod
    def _block_mean(y):
        return y[:-1].reshape(-1, 4).mean(axis=1)

    def readout(self) -> str:
        f = float(self.params["factor"])
        ratios = self.ratios
        return "factor {:g}: slowest pair scaled by ".format(f) + ", ".join(
            f"{n} {r[-1]:.3g}" for n, (r, _) in ratios.items())
