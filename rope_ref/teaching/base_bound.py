"""Men et al., "Base of RoPE Bounds Context Length" (arXiv:2405.14591), recomputed: the base a context length needs
(notebooks 08 and 10).

A query should score a key like itself higher than a random key: for i.i.d. q, k that margin is
2 sigma^2 B_{m,theta}, B_{m,theta} = sum_i cos(m theta_i) (Theorem 1, eq 9), and a base supports L when
B_{m,theta} >= 0 for every distance m <= L (eq 10).  ``d`` is the head dimension."""

import numpy as np

from .._validate import check_freqs, check_positive_int
from ..forms import frequencies
from ..hf_config import from_hf_config
from .example_kernels import config
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


#: Real models: the shipped config.json (rope_ref/teaching/data; ``hub``: its Hub id), the layer type where layers
#: differ, and ``scaled_from``: the training length before scaling (from the model's report, not its config).
MODELS = {
    "Llama 2 7B": dict(config="llama-2-7b-hf", hub="meta-llama/Llama-2-7b-hf"),
    "Llama 3 8B": dict(config="meta-llama-3-8b", hub="meta-llama/Meta-Llama-3-8B"),
    "Llama 3.1 8B": dict(config="llama-3.1-8b", hub="meta-llama/Llama-3.1-8B", scaled_from=8192),
    "Mistral 7B v0.1": dict(config="mistral-7b-v0.1", hub="mistralai/Mistral-7B-v0.1"),
    "Qwen2.5 7B": dict(config="qwen2.5-7b-instruct-yarn", hub="Qwen/Qwen2.5-7B-Instruct", scaled_from=32768),
    # ^ with the yarn section its model card adds for contexts beyond 32k
    "Gemma 7B": dict(config="gemma-7b", hub="google/gemma-7b"),
    "Gemma 3 27B (global layers)": dict(config="gemma-3-27b-pt", hub="google/gemma-3-27b-pt",
                                        layer_type="full_attention", scaled_from=32768),
}


def model_points() -> dict:
    """name -> dict(base, context, head_dim, scaled_from, rope_type, supported, source (Hub id), file) for every
    model of :data:`MODELS`, from its shipped config.json via :func:`rope_ref.from_hf_config`; ``supported``: eq 10
    at the (scaled) frequencies the model runs at; context: max_position_embeddings, times the factor if scaled."""
    out = {}
    for name, entry in MODELS.items():
        raw = config(entry["config"])
        cfg = from_hf_config(raw, **({"layer_type": entry["layer_type"]} if "layer_type" in entry else {}))
        text = raw.get("text_config", raw)
        context = text.get("max_position_embeddings") or 131072     # gemma3_text's default (transformers 5.24.0)
        scaled_from = entry.get("scaled_from")
        if scaled_from and int(context) == scaled_from:
            context = int((text.get("rope_scaling") or {}).get("factor", 1) * scaled_from)
        out[name] = dict(base=cfg.base, context=int(context), head_dim=cfg.head_dim, scaled_from=scaled_from,
                         rope_type=cfg.rope_type,
                         supported=supported_context(cfg.base, limit=1 << 21, inv_freq=cfg.inv_freq()),
                         source=entry["hub"], file=f"rope_ref/teaching/data/{entry['config']}.json")
    return out


def fig_base_bound(points: dict, d: int = 128, bases=None):
    """The longest context each base supports (Men et al.'s B >= 0, head dimension ``d``), real models as points
    judged at their own head_dim and (scaled) frequencies, whose supported length a bar marks."""
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
