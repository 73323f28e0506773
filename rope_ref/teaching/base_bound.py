"""Men et al., "Base of RoPE Bounds Context Length" (arXiv:2405.14591), recomputed: the base a context length needs
(notebooks 08 and 10).

A query should score a key like itself higher than a random key: for i.i.d. q, k that margin is
2 sigma^2 B_{m,theta}, B_{m,theta} = sum_i cos(m theta_i) (Theorem 1, eq 9), and a base supports L when
B_{m,theta} >= 0 for every distance m <= L (eq 10).  ``d`` is the head dimension."""

import numpy as np

from .._validate import check_freqs, check_positive_int
from ..forms import frequencies
from .style import new_axes


def supported_context(base: float, d: int = 128, limit: int = 1 << 22, inv_freq=None) -> int:
    """Men et al.'s L_theta = sup{L | B_{m,theta} >= 0 for all integer m in 0..L} (eq 10), capped at ``limit``;
    B_m = sum_i cos(m theta_i) with theta_i of ``base`` and ``d``, or ``inv_freq`` when given."""
    inv_freq = frequencies(d, base) if inv_freq is None else check_freqs(inv_freq, "inv_freq")
    limit = check_positive_int(limit, "limit")
    for start in range(0, limit + 1, 4096):
        m = np.arange(start, min(start + 4096, limit + 1), dtype=float)
        negative = np.cos(np.multiply.outer(m, inv_freq)).sum(axis=1) < 0
        if negative.any():
            return int(m[np.argmax(negative)]) - 1
    return limit


def fig_base_bound(points: dict, d: int = 128, bases=None):
    """The longest context each base supports (Men et al.'s B >= 0, head dimension ``d``), and ``points``: name ->
    dict(base, context, rope_type, supported, scaled_from) of real models, each judged at its own head_dim and (scaled)
    frequencies, a bar marking the length a scaled model's frequencies support."""
    bases = 10.0 ** np.arange(3, 6.41, 0.025) if bases is None else np.asarray(bases, float)
    supported = np.array([supported_context(b, d, limit=1 << 21) for b in bases])
    fig, ax = new_axes(9, 6.2)
    ax.loglog(bases, supported, color="0.3", lw=1.2, label=rf"longest $L$ with $B_{{m,\theta}} \geq 0$, $d = {d}$")
    ax.fill_between(bases, supported, 1, color="0.85", zorder=0)
    for j, (name, p) in enumerate(points.items()):
        ok = p["supported"] >= p["context"]
        scaled = "" if p["rope_type"] == "default" else f", {p['rope_type']} {p['supported']:,}"
        ax.plot([p["base"]], [p["context"]], "o" if ok else "X", ms=13 - 1.1 * j, color=f"C{j}",   # shrinking: a
                # later model at the same point (Gemma 3 on Qwen2.5) sits inside the earlier one
                label=f"{name}: {p['context']:,}{scaled}" + ("" if ok else " (above)"))
        if scaled:
            ax.plot([p["base"]], [p["supported"]], "_", ms=16, mew=2.5, color=f"C{j}")
        if p["scaled_from"]:
            ax.plot([p["base"]], [p["scaled_from"]], "o", ms=6, mfc="none", color=f"C{j}")
            ax.plot([p["base"]] * 2, [p["scaled_from"], p["context"]], ":", color=f"C{j}", lw=1)
    ax.set(xlabel="RoPE base (rope_theta)", ylabel="context length", xlim=(bases[0], bases[-1]), ylim=(5e2, 3e5),
           title="Context a base supports (shaded); X: a model above what its frequencies support;\n"
                 "bar: what a scaled model's frequencies support; hollow: length before scaling")
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=2)
    return fig
