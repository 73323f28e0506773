"""RoPE's spectrum (notebooks 08 and 10): which features turn (:data:`SCHEMES`), the context a base supports (Men et
al., arXiv:2405.14591), and Barbero et al.'s positional heads and semantic channels (arXiv:2410.06205) recomputed.
``d`` is the head dimension."""

import matplotlib
import numpy as np
from matplotlib.colors import LogNorm

from .._validate import (check_choice, check_d, check_freqs, check_number, check_positions_any, check_positive_int,
    check_scalar, check_seed)
from ..rope_attention import softmax
from ..forms import frequencies, rotate
from .style import VIEW_DPI, new_axes
from .views import View

#: RoPE; partial rotary (GPT-NeoX, Phi-2, GLM-4, Qwen3.5); p-RoPE (Barbero et al.); proportional (Gemma 4); NoPE layers
#: (Llama 4, SmolLM3).  ``fraction``: partial_rotary_factor for "partial" and "proportional", p for "p-rope".
SCHEMES = ("rope", "partial", "p-rope", "proportional", "nope")


def scheme_frequencies(scheme: str = "rope", d: int = 128, base: float = 10000.0, fraction: float = 1.0) -> np.ndarray:
    """Frequency of each of the d/2 pairs under ``scheme``, fast to slow (0 where not rotated), ``(d/2,)``: "partial"
    spreads the geometric range over the first ``fraction * d`` features, "p-rope" and "proportional" keep
    RoPE's theta_i for the first ``fraction * d/2`` pairs."""
    scheme, d = check_choice(scheme, "scheme", SCHEMES), check_d(d)
    fraction = check_number(fraction, "fraction", "a real number in [0, 1]", lambda v: 0 <= v <= 1, real=True)
    r = int(fraction * d) // 2 * 2 if scheme == "partial" else d                 # the width theta_i is spread over
    turning = {"rope": d // 2, "partial": r // 2, "nope": 0}.get(scheme, int(fraction * d / 2))    # pairs that turn
    out = np.zeros(d // 2)
    if turning:
        out[:turning] = frequencies(r, base)[:turning]
    return out


def supported_context(base: float, d: int = 128, limit: int = 1 << 22, inv_freq=None) -> int:
    """Men et al.'s L_theta = sup{L | B_{m,theta} >= 0 for all integer m in 0..L} (eq 10), capped at ``limit``:
    for i.i.d. q, k, a query scores a key like itself above a random key by 2 sigma^2 B_{m,theta} (Theorem 1, eq 9),
    B_m = sum_i cos(m theta_i) with theta_i of ``base`` and ``d``, or ``inv_freq`` when given."""
    inv_freq = frequencies(d, base) if inv_freq is None else check_freqs(inv_freq, "inv_freq")
    limit = check_positive_int(limit, "limit")
    for start in range(0, limit + 1, 4096):
        m = np.arange(start, min(start + 4096, limit + 1), dtype=float)
        negative = np.cos(np.multiply.outer(m, inv_freq)).sum(axis=1) < 0
        if negative.any():
            return int(m[np.argmax(negative)]) - 1
    return limit


def fig_turning_dimensions(d: int = 128, base: float = 10000.0):
    """Which features of a d = 128 head turn, and how fast, in each scheme: one row per scheme, each feature's
    frequency in the model's layout ("half": j with j + r/2 in the rotated part of width r, "interleaved": 2j with
    2j + 1; 0, white, where it does not turn)."""
    rows = [("RoPE (Llama, Qwen2.5, Gemma 3)", "rope", 1.0, "half"),
            ("partial 1/4, rotate_half (GPT-NeoX, Qwen3.5)", "partial", 0.25, "half"),
            ("partial 1/2, interleaved (GLM-4)", "partial", 0.5, "interleaved"),
            ("p-RoPE, p = 3/4 (Barbero et al.)", "p-rope", 0.75, "half"),
            ("proportional, 1/4 (Gemma 4)", "proportional", 0.25, "half"),
            ("NoPE layer (Llama 4, SmolLM3)", "nope", 1.0, "half")]
    feature_freqs = np.zeros((len(rows), check_d(d)))
    for row, (_, scheme, fraction, pairing) in zip(feature_freqs, rows):
        rotated = scheme_frequencies(scheme, d, base, fraction)
        rotated = rotated[:int(fraction * d) // 2] if scheme == "partial" else rotated
        row[:2 * len(rotated)] = np.tile(rotated, 2) if pairing == "half" else np.repeat(rotated, 2)
    fig, ax = new_axes(10, 4.2, gridlines=False)
    im = ax.imshow(np.ma.masked_equal(feature_freqs, 0.0), aspect="auto", cmap=matplotlib.colormaps["viridis"],
                   norm=LogNorm(vmin=base ** -1, vmax=1.0), interpolation="nearest")
    ax.set_yticks(range(len(rows)), [r[0] for r in rows])
    ax.set(facecolor="white", xlabel=f"feature of the head (0 .. {d - 1}); white: does not turn",
           title=f"Which features turn, and how fast ($d = {d}$, base {base:g})")
    for y in np.arange(len(rows) - 1) + 0.5:
        ax.axhline(y, color="0.6", lw=0.8)
    fig.colorbar(im, ax=ax, label=r"frequency $\theta$ (rad per position)")
    return fig


def offset_attention(offset: float, pair: int, n_keys: int = 48, scale: float = 8.0, d: int = 64,
                     base: float = 10000.0, scheme: str = "rope", fraction: float = 0.75, width: int = 4) -> np.ndarray:
    """Attention weights ``(n_keys,)`` of a positional head (Barbero et al.) on keys 0..n_keys-1 behind the query:
    every token is u on the ``width`` pairs from ``pair`` (|u|^2 = ``scale``), the query u turned back by ``offset``."""
    n_keys, d, width = check_positive_int(n_keys, "n_keys"), check_d(d), check_positive_int(width, "width")
    scale = check_number(scale, "scale", "a finite real number >= 0", lambda v: 0 <= v < np.inf, real=True)
    pair = check_number(pair, "pair", f"an integer in 0..{d // 2 - width}", lambda v: 0 <= v <= d // 2 - width)
    u = np.zeros(d)
    u[2 * np.arange(pair, pair + width)] = np.sqrt(scale / width)      # |u|^2 = scale, spread evenly over the pairs
    freqs = scheme_frequencies(scheme, d, base, fraction)
    m = float(n_keys - 1)                                   # the query's position; keys at m - r
    r = np.arange(n_keys, dtype=float)
    q = rotate(u[None], np.array([m - check_scalar(offset, "offset")]), inv_freq=freqs)[0]
    k = rotate(np.broadcast_to(u, (n_keys, d)), m - r, inv_freq=freqs)
    return softmax(k @ q)


def semantic_match(distances, band: str = "low", d: int = 128, base: float = 10000.0, width: int = 8,
                   scheme: str = "rope", fraction: float = 0.75, seed: int = 0) -> np.ndarray:
    """Score of a key equal to the query at each distance, over its score at 0, ``distances.shape``: content on
    the ``width`` fastest ("high") or slowest ("low") pairs.  On the slowest it stays near 1 for thousands of
    positions (Barbero et al.'s semantic channels); a random unit word scores about 1/sqrt(2 width)."""
    r, seed, d = check_positions_any(distances, "distances"), check_seed(seed), check_d(d)
    width = check_number(width, "width", f"an integer in 1..{d // 2}", lambda v: 0 < v <= d // 2)
    band = check_choice(band, "band", ("high", "low"))
    pairs = np.arange(width) if band == "high" else np.arange(d // 2 - width, d // 2)
    c = np.zeros(d)
    c.reshape(-1, 2)[pairs] = np.random.default_rng(seed).standard_normal((len(pairs), 2))
    c /= np.linalg.norm(c)
    freqs = scheme_frequencies(scheme, d, base, fraction)
    q = rotate(np.broadcast_to(c, r.shape + (d,)), r, inv_freq=freqs)      # query at r, key (= c) at 0
    return q @ c


class _CurvesView(View):
    """One axes, a line per entry of ``curves`` (key -> (label, style)) and a title, all drawn at every step."""

    def _curves(self, curves: dict, **axes_settings):
        self.fig, self.ax = new_axes(9, 3.9, dpi=VIEW_DPI)
        self.lines = {key: self.ax.plot([], [], label=label, **style)[0] for key, (label, style) in curves.items()}
        self.ax.set(**axes_settings)
        self.fig.legend(*self.ax.get_legend_handles_labels(), loc="outside lower center", ncols=3)
        self.title = self.ax.set_title(" ")


class OffsetAttentionView(_CurvesView):
    """The attention of :func:`offset_attention`'s head under RoPE, p-RoPE and NoPE, for one target offset."""

    d, n_keys, fraction, width = 64, 48, 0.75, 4            # notebook 08's head

    def build(self):
        self._curves({"rope": ("RoPE", dict(color="C0", marker="o", ms=4, lw=1.5)),
                      "p-rope": (f"p-RoPE, p = {self.fraction:g}", dict(color="C1", ls="--", lw=2)),
                      "nope": ("NoPE", dict(color="0.4", ls=":", lw=2))},
                     xlabel="distance to the key (positions back)", ylabel="attention weight",
                     xlim=(-0.5, self.n_keys - 0.5), ylim=(0, 1.02))
        self.target = self.ax.axvline(0, color="C3", lw=1, alpha=0.6)
        self.dynamic = (self.target, *self.lines.values(), self.title)

    def draw(self, pair: int = 0, offset: int = 1, scale: float = 16.0) -> str:
        offset = check_number(offset, "offset", f"an integer 0..{self.n_keys - 1}", lambda v: 0 <= v < self.n_keys)
        w = {name: offset_attention(offset, pair, self.n_keys, scale, self.d, scheme=name, fraction=self.fraction,
                                    width=self.width) for name in self.lines}
        for name, line in self.lines.items():
            line.set_data(np.arange(self.n_keys), w[name])
        self.target.set_xdata([offset] * 2)
        theta = frequencies(self.d)[[pair, pair + self.width - 1]]
        self.title.set_text(rf"pairs {pair}..{pair + self.width - 1} ($\theta$ from {theta[0]:.3g} to "
                            rf"{theta[1]:.3g}), target offset {offset}, $|u|^2 = {scale:g}$")
        return (f"weight on the target offset {offset}: RoPE {w['rope'][offset]:.3f}, "
                f"p-RoPE {w['p-rope'][offset]:.3f}, NoPE {w['nope'][offset]:.3f} (= 1/{self.n_keys})")


class SemanticMatchView(_CurvesView):
    """:func:`semantic_match` on the fastest and slowest pairs (RoPE) and the slowest under p-RoPE, against noise."""

    d, width, fraction = 128, 8, 0.75                        # notebook 08's head and content width
    level = 1.0 / np.sqrt(2 * width)                         # a random unit key's typical |score|

    def build(self):
        self._curves({("high", "rope"): (f"RoPE, {self.width} fastest pairs", dict(color="C0", lw=1)),
                      ("low", "rope"): (f"RoPE, {self.width} slowest pairs", dict(color="C2", lw=2)),
                      ("low", "p-rope"): (f"p-RoPE ({self.width} slowest do not turn)",
                                          dict(color="C1", lw=2, ls="--"))},
                     xlabel="distance $r$ between the two occurrences", ylabel="score / score at $r = 0$",
                     ylim=(-1.05, 1.15))
        self.ax.axhspan(-2 * self.level, 2 * self.level, color="0.88", zorder=0)
        self.dynamic = (self.ax.xaxis, *self.lines.values(), self.title)

    def draw(self, base: float = 10000.0, max_distance: int = 4096) -> str:
        r = np.linspace(0, check_positive_int(max_distance, "max_distance"), 801)
        s = {(band, scheme): semantic_match(r, band, self.d, base, self.width, scheme, self.fraction)
             for band, scheme in self.lines}
        for key, line in self.lines.items():
            line.set_data(r, s[key])
        self.ax.set_xlim(0, r[-1])
        self.title.set_text(f"base {base:g}; grey band: a random word's score (two standard deviations)")
        return (f"at distance {r[-1]:g}: fastest pairs {s[('high', 'rope')][-1]:+.2f}, slowest pairs "
                f"{s[('low', 'rope')][-1]:+.2f}, p-RoPE slowest {s[('low', 'p-rope')][-1]:+.2f}; a random word "
                f"scores within ±{2 * self.level:.2f}")
