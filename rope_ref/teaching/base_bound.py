"""Men et al., "Base of RoPE Bounds Context Length" (arXiv:2405.14591), recomputed: the base a context length needs
(notebooks 08 and 10).

A query should score a key like itself higher than a random key.  For i.i.d. q, k that margin is
2 sigma^2 B_{m,theta}, B_{m,theta} = sum_i cos(m theta_i) (Theorem 1, eq 9: :func:`similarity_margin`).  A base
supports L when B_{m,theta} >= 0 for every distance m <= L (eq 10: :func:`supported_context`); the smallest such
base is their lower bound (eq 11, Table 2, Figure 1: :func:`base_lower_bound`).  :func:`negative_margin_count`
recomputes their Table 4; :func:`model_points` and :func:`fig_base_bound` place real models' configs (shipped
in rope_ref/teaching/data) against the bound.  ``d`` is the head dimension.
"""

from __future__ import annotations

import json
from importlib import resources

import numpy as np

from .. import _validate as val
from ..forms import frequencies
from ..hf_config import from_hf_config
from .style import new_figure


def similarity_margin(m, d: int = 128, base: float = 10000.0) -> np.ndarray:
    """Men et al.'s B_{m,theta} = sum_{i=0}^{d/2-1} cos(m theta_i), theta_i = base^(-2i/d) (arXiv:2405.14591,
    Theorem 1, eq 9): for i.i.d. query and key components of standard deviation sigma and k* = q + eps
    (eps of mean 0), (E[q.R_m k*] - E[q.R_m k]) / (2 sigma^2) = B_{m,theta} -- how much more a query scores a
    key like itself than a random key at distance m.  ``m.shape``."""
    m = val.check_positions_any(m, "m")
    return np.cos(np.multiply.outer(m, frequencies(d, base))).sum(axis=-1)


#: The most integer distances a scan of B_{m,theta} covers (about 10 s at d = 128): limit= and length= above it are
#: refused before any work.
MAX_DISTANCES = 1 << 24


def _check_distances(n, name: str) -> int:
    n = val.check_positive_int(n, name)
    if n > MAX_DISTANCES:
        raise ValueError(f"{name} must be at most {MAX_DISTANCES:,} (B_m is computed at every integer distance up "
                         f"to it), got {n:,}")
    return n


def _margins(inv_freq: np.ndarray, limit: int, block: int = 4096):
    """(m, B_m = sum_i cos(m inv_freq_i)) for the integers m in 0..limit, in blocks of ``block`` distances."""
    for start in range(0, limit + 1, block):
        m = np.arange(start, min(start + block, limit + 1), dtype=float)
        yield m, np.cos(np.multiply.outer(m, inv_freq)).sum(axis=1)


def _first_negative(inv_freq: np.ndarray, limit: int):
    """The first integer m in 0..limit with sum_i cos(m inv_freq_i) < 0, or None."""
    for m, margin in _margins(inv_freq, limit):
        if np.any(margin < 0):
            return int(m[np.argmax(margin < 0)])
    return None


def supported_context(base: float, d: int = 128, limit: int = 1 << 22) -> int:
    """Men et al.'s L_theta = sup{L | B_{m,theta} >= 0 for all m in 0..L} (eq 10): the longest L with
    B_{m,theta} >= 0 at every integer distance 0 <= m <= L (capped at ``limit``)."""
    limit = _check_distances(limit, "limit")
    first = _first_negative(frequencies(d, base), limit)
    return limit if first is None else first - 1


def base_lower_bound(context_lengths, d: int = 128, rel_step: float = 1e-4) -> np.ndarray:
    """Men et al.'s lower bound base_L = inf{base | B_{m,theta} >= 0 for all m in 0..L} (eq 11), one per
    context length, ``np.shape(context_lengths)``.

    Computed as the paper did (the "inverse" method, Su Jianlin's account of it): for a base, the longest
    supported L is easy (eq 10, :func:`supported_context`); so walk up a geometric grid of bases,
    b_{k+1} = b_k (1 + ``rel_step``), from L/4, and return the first base that supports L.  The bound is *not*
    monotone in the base: B_{m,theta} dips to just below 0 at scattered m, so a base can pass where slightly
    larger ones fail (at L = 4096, d = 128: bases 26,955..26,970 pass, 27,000..28,600 fail), and a grid
    coarser than such windows misses them.  That is why the walk tests every grid base in turn instead of
    bisecting.  Speed-up, exact on the grid: a base is first tested at the distances where lower bases failed
    (they usually fail there too); only if it survives is it scanned from m = 0.
    """
    L = np.asarray(context_lengths)
    if L.dtype.kind not in "iu" and not (L.dtype.kind == "f" and np.all(L == np.round(L))):
        raise TypeError(f"context_lengths must be whole numbers of positions, got {context_lengths!r}")
    if np.any(L < 1) or np.any(L > 1 << 21):
        raise ValueError(f"context_lengths must be in 1..{1 << 21}, got {context_lengths!r}")
    rel = val.check_scalar(rel_step, "rel_step")
    if not 0 < rel <= 0.1:
        raise ValueError(f"rel_step must be in (0, 0.1] (the relative spacing of the bases tried), got {rel_step!r}")
    d = val.check_d(d)
    val.check_nbytes(8 * d, "d", what=f"d = {d} float64 exponents")
    exponents = np.arange(0, d, 2) / d
    out = np.empty(L.shape)
    for idx, length in np.ndenumerate(L):
        length = int(length)
        base, witnesses = max(2.0, length / 4), []
        while True:
            theta = base ** -exponents
            known = np.array([m for m in witnesses[-64:] if m <= length], dtype=float)
            if not (len(known) and (np.cos(np.multiply.outer(known, theta)).sum(axis=1) < 0).any()):
                first = _first_negative(theta, length)
                if first is None:
                    break
                witnesses.append(first)
            base *= 1 + rel
        out[idx] = base
    return out


def men_method_frequencies(method: int) -> np.ndarray:
    """The frequencies of the two ways Men et al. extend Llama 2 (d = 128) from 4k to 32k in their §5.5 / Table 4,
    ``(64,)``, fast to slow.  Both leave no rotation angle out of distribution:

    * method 1: theta_i = (5e6)^(-2i/d), a larger base;
    * method 2: theta_i = (1e4)^(-2i/128) / 8 for i >= 44 (interpolated by 8), (1e4 * 8^(128/88))^(-2i/128)
      for i < 44 (the two pieces meet at i = 44)."""
    i = np.arange(64)
    if method == 1:
        return 5e6 ** (-2 * i / 128)
    if method == 2:
        return np.where(i >= 44, 1e4 ** (-2 * i / 128) / 8, (1e4 * 8 ** (128 / 88)) ** (-2 * i / 128))
    raise ValueError(f"method must be 1 or 2 (Men et al.'s Table 4), got {method!r}")


def negative_margin_count(inv_freq, length: int) -> int:
    """How many integer distances 0 <= m <= ``length`` have sum_i cos(m inv_freq_i) < 0: where eq 10's condition
    B_{m,theta} >= 0 fails (Men et al.'s Table 4 counts these)."""
    theta = val.check_real_array(inv_freq, "inv_freq").astype(float)
    if theta.ndim != 1 or not np.all(np.isfinite(theta)):
        raise ValueError(f"inv_freq must be a 1-D array of finite frequencies, got shape {theta.shape}")
    length = _check_distances(length, "length")
    val.check_nbytes(8 * 4096 * theta.size, "inv_freq", what=f"blocks of 4096 distances x {theta.size} frequencies")
    return sum(int((margin < 0).sum()) for _, margin in _margins(theta, length))


#: Men et al. (arXiv:2405.14591) Table 2 for d = 128, as printed (two significant digits), with Su Jianlin's
#: recomputation by brute force ("Transformer upgrade road 18: principles for choosing the RoPE base",
#: kexue.fm/archives/10122, May 2024): context length -> (paper, Su).
MEN_TABLE_2 = {1024: (4.3e3, 4.3e3), 2048: (1.6e4, 1.2e4), 4096: (2.7e4, 2.7e4), 8192: (8.4e4, 8.4e4),
               16384: (3.1e5, 2.3e5), 32768: (6.4e5, 6.3e5), 65536: (2.1e6, 2.1e6), 131072: (7.8e6, 4.9e6),
               262144: (3.6e7, 2.4e7), 524288: (6.4e7, 5.8e7), 1048576: (5.1e8, 6.5e7)}


#: Real models: the config.json each is read from (shipped as package data in rope_ref/teaching/data, published
#: on the Hugging Face Hub under the id named), the layer type where layers differ, and the training length
#: before a scaling method where the model reaches its context by one (from the model's report: not in its config).
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

#: Context lengths a published config leaves to its config class's default (transformers 5.24.0).
DEFAULT_CONTEXT = {"gemma3_text": 131072}


def _shipped_config(name: str) -> dict:
    return json.loads((resources.files(__package__) / "data" / f"{name}.json").read_text(encoding="utf-8"))


def model_points() -> dict:
    """name -> dict(base, context, head_dim, scaled_from or None, source: the Hub id, file: the shipped copy) for
    every model of :data:`MODELS`, each read from its shipped config.json with :func:`rope_ref.from_hf_config`
    (works in an installed copy).  The
    context is the config's max_position_embeddings (its text_config's for a vision-language model, or the
    config class's default where the published file leaves it out); where that is the length before scaling
    (``scaled_from``, as in Qwen2.5's config with its yarn section), factor x scaled_from."""
    out = {}
    for name, entry in MODELS.items():
        raw = _shipped_config(entry["config"])
        cfg = from_hf_config(raw, **({"layer_type": entry["layer_type"]} if "layer_type" in entry else {}))
        text = raw.get("text_config", raw)
        context = text.get("max_position_embeddings") or DEFAULT_CONTEXT[text["model_type"]]
        scaled_from = entry.get("scaled_from")
        if scaled_from and int(context) == scaled_from:
            context = int((text.get("rope_scaling") or {}).get("factor", 1) * scaled_from)
        out[name] = dict(base=cfg.base, context=int(context), head_dim=cfg.head_dim, scaled_from=scaled_from,
                         source=entry["hub"], file=f"rope_ref/teaching/data/{entry['config']}.json")
    return out


def fig_base_bound(points: dict, d: int = 128, bases=None):
    """The longest context each base supports (Men et al.'s B >= 0, for head dimension ``d``), with real models as
    points; a model's verdict (X: above its base's supported length) uses its own head_dim."""
    bases = 10.0 ** np.arange(3, 6.41, 0.025) if bases is None else np.asarray(bases, float)
    supported = np.array([supported_context(b, d, limit=1 << 21) for b in bases])
    fig = new_figure(9, 6.2)
    ax = fig.subplots()
    ax.loglog(bases, supported, color="0.3", lw=1.2, label=rf"longest $L$ with $B_{{m,\theta}} \geq 0$, $d = {d}$")
    ax.fill_between(bases, supported, 1, color="0.85", zorder=0)
    for j, (name, p) in enumerate(points.items()):
        ok = supported_context(p["base"], p["head_dim"], limit=1 << 21) >= p["context"]
        ax.plot([p["base"]], [p["context"]], "o" if ok else "X", ms=13 - 1.1 * j, color=f"C{j}",   # shrinking: a
                # later model at the same point (Gemma 3 on Qwen2.5) sits inside the earlier one
                label=f"{name}: {p['context']:,} at {p['base']:g}" + ("" if ok else " (above)"))
        if p["scaled_from"]:
            ax.plot([p["base"]], [p["scaled_from"]], "o", ms=6, mfc="none", color=f"C{j}")
            ax.plot([p["base"]] * 2, [p["scaled_from"], p["context"]], ":", color=f"C{j}", lw=1)
    ax.set(xlabel="RoPE base (rope_theta)", ylabel="context length", xlim=(bases[0], bases[-1]), ylim=(5e2, 3e5),
           title="Context a base supports (shaded); X: a model above it; hollow: length before scaling")
    ax.grid(alpha=0.3)
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncols=2)
    return fig
