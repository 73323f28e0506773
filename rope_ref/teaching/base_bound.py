"""Men et al., "Base of RoPE Bounds Context Length" (arXiv:2405.14591), recomputed: the base a context length needs
(notebooks 08 and 10).

A query should score a key like itself higher than a random key: for i.i.d. q, k that margin is
2 sigma^2 B_{m,theta}, B_{m,theta} = sum_i cos(m theta_i) (Theorem 1, eq 9), and a base supports L when
B_{m,theta} >= 0 for every distance m <= L (eq 10).  ``d`` is the head dimension."""

import numpy as np

from ..forms import frequencies


def supported_context(base: float, d: int = 128, limit: int = 1 << 22, inv_freq=None) -> int:
    """Men et al.'s L_theta = sup{L | B_{m,theta} >= 0 for all integer m in 0..L} (eq 10), capped at ``limit``;
    B_m = sum_i cos(m theta_i) with theta_i of ``base`` and ``d``, or ``inv_freq`` when given."""
    inv_freq = frequencies(d, base) if inv_freq is None else inv_freq
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

