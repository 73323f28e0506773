"""Figures and a slider view for context extension (notebook 05) and precision (notebook 06)."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from .analysis import angle_errors, random_qk, score_error_by_dtype, score_vs_distance
from .core import decay_bound, inv_freq
from .plots import View, new_figure
from .scaling import scaled_inv_freq, wavelengths

#: Example configurations for a model trained on 4k positions, extended 8x.
TRAIN_LEN = 4096


def method_configs(factor: float = 8.0, train_len: int = TRAIN_LEN) -> dict:
    """rope_type -> parameters for scaled_inv_freq, for a model trained on ``train_len`` extended ``factor``x."""
    return {
        "linear": dict(factor=factor),
        "ntk": dict(factor=factor),
        "dynamic": dict(factor=factor, max_position_embeddings=train_len, seq_len=int(factor * train_len)),
        "yarn": dict(factor=factor, original_max_position_embeddings=train_len),
        "llama3": dict(factor=factor, low_freq_factor=1.0, high_freq_factor=4.0,
                       original_max_position_embeddings=train_len),
    }


def scaled_frequencies(d: int = 128, base: float = 10000.0, factor: float = 8.0, train_len: int = TRAIN_LEN) -> dict:
    """rope_type -> (scaled theta_i, attention_factor) for every method of :func:`method_configs`."""
    return {name: scaled_inv_freq(d, base, rope_type=name, **params)
            for name, params in method_configs(factor, train_len).items()}


def frequency_ratios(d: int = 128, base: float = 10000.0, factor: float = 8.0, train_len: int = TRAIN_LEN,
                     scaled: dict | None = None) -> dict:
    """rope_type -> (scaled theta_i / default theta_i, attention_factor) per pair."""
    default = inv_freq(d, base)
    scaled = scaled_frequencies(d, base, factor, train_len) if scaled is None else scaled
    return {name: (freqs / default, att) for name, (freqs, att) in scaled.items()}


def fig_wavelengths(d: int = 128, base: float = 10000.0, train_len: int = TRAIN_LEN):
    """Wavelength 2 pi / theta_i of every pair against the training length."""
    fig = new_figure(7, 3.6)
    ax = fig.subplots()
    wl = wavelengths(inv_freq(d, base))
    ax.semilogy(np.arange(d // 2), wl, "o-", ms=3, label="wavelength 2 pi / theta_i")
    ax.axhline(train_len, color="C3", ls="--", label=f"training length {train_len}")
    n_long = int((wl > train_len).sum())
    ax.set(xlabel="pair i", ylabel="positions", title=f"d = {d}, base = {base:g}: {n_long} of {d // 2} pairs "
           "never complete a turn in training")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return fig


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
        from matplotlib.ticker import FixedFormatter, FixedLocator, NullLocator
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
            freqs = inv_freq(self.d, self.base) if name == "default" else scaled[name][0]
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


PRECISION_DTYPES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32}


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
