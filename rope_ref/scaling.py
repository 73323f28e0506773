"""Context-extension methods: per-pair frequencies (and an attention factor) for longer contexts.

``scaled_inv_freq(d, base, rope_type=..., seq_len=..., **params)`` returns
``(inv_freq, attention_factor)``; use them as
``rotate(x, positions, inv_freq=inv_freq) * attention_factor`` (the factor
multiplies cos and sin, i.e. scales the rotated features).  Parameter names and
defaults follow the ``rope_scaling`` configuration of Hugging Face transformers
(``modeling_rope_utils``), and the numbers match that library's for the same
configuration (tests/data/hf_rope_reference.json, to float32 precision).
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from . import _validate as val
from .core import frequencies

ROPE_TYPES = ("default", "linear", "ntk", "dynamic", "yarn", "llama3", "longrope")

#: What each method needs, and what it may take (besides d, base and seq_len).
REQUIRED = {
    "default": (),
    "linear": ("factor",),
    "ntk": ("factor",),
    "dynamic": ("factor", "max_position_embeddings"),
    "yarn": ("factor", "original_max_position_embeddings | max_position_embeddings"),
    "llama3": ("factor", "original_max_position_embeddings", "low_freq_factor", "high_freq_factor"),
    "longrope": ("short_factor", "long_factor", "original_max_position_embeddings | max_position_embeddings"),
}
OPTIONAL = {
    "default": (),
    "linear": (),
    "ntk": (),
    "dynamic": (),
    "yarn": ("max_position_embeddings", "beta_fast", "beta_slow", "mscale", "mscale_all_dim", "attention_factor",
             "truncate"),
    "llama3": ("max_position_embeddings",),
    "longrope": ("factor", "max_position_embeddings", "attention_factor"),
}


def scaled_inv_freq(d: int, base: float = 10000.0, *, rope_type: str = "default", seq_len=None, **params):
    """Per-pair frequencies of a context-extension method: ``(inv_freq (d/2,), attention_factor)``.

    ``d`` is the rotary dimension (head_dim * partial_rotary_factor).  ``seq_len``
    matters only for ``dynamic`` (the current length) and ``longrope`` (short vs
    long factors).  Methods (HF ``rope_type`` names):

    * ``default`` -- theta_i = base^(-2i/d) (RoFormer eq 15).
    * ``linear`` -- position interpolation, theta_i / factor (Chen et al. 2023,
      "Extending Context Window of LLMs via Positional Interpolation").
    * ``ntk`` -- static NTK-aware: base * factor^(d/(d-2)) (bloc97, "NTK-Aware Scaled RoPE", 2023).
    * ``dynamic`` -- dynamic NTK: base * (factor*L/L_train - (factor-1))^(d/(d-2)) with
      L = max(seq_len, max_position_embeddings) (emozilla, "Dynamically Scaled RoPE", 2023).
    * ``yarn`` -- NTK-by-parts ramp between interpolation and extrapolation, attention factor
      0.1 ln(factor) + 1 (Peng et al. 2023, "YaRN"; mscale/mscale_all_dim as in DeepSeek-V2).
    * ``llama3`` -- low frequencies / factor, high unchanged, smooth between (Meta, Llama 3.1, 2024).
    * ``longrope`` -- per-pair rescale factors (Ding et al. 2024, "LongRoPE"), attention factor
      sqrt(1 + ln(factor)/ln(L_train)).
    """
    if rope_type not in ROPE_TYPES:
        raise ValueError(f"rope_type must be one of {ROPE_TYPES}, got {rope_type!r}")
    d, base = val.check_d(d), val.check_base(base)
    _check_keys(rope_type, params)
    return _METHODS[rope_type](d, base, seq_len, params)


def _check_keys(rope_type, params):
    allowed = {k for req in REQUIRED[rope_type] for k in req.split(" | ")} | set(OPTIONAL[rope_type])
    unknown = sorted(set(params) - allowed)
    if unknown:
        raise TypeError(f"rope_type={rope_type!r} does not take {unknown}; it takes "
                        f"{_needs(rope_type)}")
    missing = [req for req in REQUIRED[rope_type] if not any(k in params for k in req.split(" | "))]
    if missing:
        raise ValueError(f"rope_type={rope_type!r} is missing {missing}; it takes {_needs(rope_type)}")


def _needs(rope_type) -> str:
    req, opt = REQUIRED[rope_type], OPTIONAL[rope_type]
    return f"required {list(req)}" + (f", optional {list(opt)}" if opt else "")


def _pos_float(params, name):
    value = params[name]
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise TypeError(f"{name} must be a finite real number, got {value!r}")
    if value <= 0:
        raise ValueError(f"{name} must be > 0, got {value}")
    return float(value)


def _pos_int(params, name):
    return val.check_positive_int(params[name], name)


def _default(d, base, seq_len, p):
    """theta_i = base^(-2i/d): RoFormer (Su et al. 2021), eq 15."""
    return frequencies(d, base), 1.0


def _linear(d, base, seq_len, p):
    """Position interpolation: theta_i / factor (Chen et al. 2023, arXiv:2306.15595)."""
    return frequencies(d, base) / _pos_float(p, "factor"), 1.0


def _ntk(d, base, seq_len, p):
    """NTK-aware base change base * factor^(d/(d-2)) (bloc97, "NTK-Aware Scaled RoPE", 2023)."""
    return frequencies(d, base * _pos_float(p, "factor") ** (d / (d - 2)) if d > 2 else base), 1.0


def _dynamic(d, base, seq_len, p):
    """Dynamic NTK: the base grows with the current length (emozilla, "Dynamically Scaled RoPE", 2023)."""
    factor, L_train = _pos_float(p, "factor"), _pos_int(p, "max_position_embeddings")
    L = L_train if seq_len is None else max(val.check_positive_int(seq_len, "seq_len"), L_train)
    new_base = base * ((factor * L / L_train) - (factor - 1)) ** (d / (d - 2)) if d > 2 else base
    return frequencies(d, new_base), 1.0


def _train_length_and_factor(p, method):
    """HF convention: with both lengths given, factor = max_position_embeddings / original."""
    if "original_max_position_embeddings" in p and "max_position_embeddings" in p:
        L_train = _pos_int(p, "original_max_position_embeddings")
        ratio = _pos_int(p, "max_position_embeddings") / L_train
        if "factor" in p and not math.isclose(_pos_float(p, "factor"), ratio, rel_tol=1e-9):
            raise ValueError(f"{method}: factor={p['factor']} disagrees with max_position_embeddings / "
                             f"original_max_position_embeddings = {ratio:g}; give one or make them agree")
        return L_train, ratio
    key = "original_max_position_embeddings" if "original_max_position_embeddings" in p else "max_position_embeddings"
    if "factor" not in p:
        raise ValueError(f"rope_type={method!r} needs factor, or both max_position_embeddings and "
                         f"original_max_position_embeddings; it takes {_needs(method)}")
    return _pos_int(p, key), _pos_float(p, "factor")


def _yarn_mscale(scale, mscale=1.0):
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def _yarn(d, base, seq_len, p):
    """YaRN: NTK-by-parts ramp plus attention factor (Peng et al. 2023, arXiv:2309.00071)."""
    L_train, factor = _train_length_and_factor(p, "yarn")
    beta_fast = _pos_float(p, "beta_fast") if p.get("beta_fast") else 32.0
    beta_slow = _pos_float(p, "beta_slow") if p.get("beta_slow") else 1.0
    if beta_fast < beta_slow:
        raise ValueError(f"yarn: beta_fast ({beta_fast}) must be >= beta_slow ({beta_slow})")
    if p.get("attention_factor") is not None:
        attention_factor = _pos_float(p, "attention_factor")
    elif p.get("mscale") and p.get("mscale_all_dim"):
        attention_factor = _yarn_mscale(factor, p["mscale"]) / _yarn_mscale(factor, p["mscale_all_dim"])
    else:
        attention_factor = _yarn_mscale(factor)

    def correction_dim(n_rotations):  # the pair dimension whose wavelength fits n_rotations in L_train
        return d * math.log(L_train / (n_rotations * 2 * math.pi)) / (2 * math.log(base))

    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if p.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, d - 1)
    if low == high:
        high += 0.001
    ramp = np.clip((np.arange(d // 2) - low) / (high - low), 0.0, 1.0)  # 0: extrapolate, 1: interpolate
    extrapolation = frequencies(d, base)
    return extrapolation / factor * ramp + extrapolation * (1 - ramp), float(attention_factor)


def _llama3(d, base, seq_len, p):
    """Llama 3.1 frequency bands (Meta, "The Llama 3 Herd of Models", 2024, arXiv:2407.21783)."""
    factor = _pos_float(p, "factor")
    low_ff, high_ff = _pos_float(p, "low_freq_factor"), _pos_float(p, "high_freq_factor")
    L_train = _pos_int(p, "original_max_position_embeddings")
    if high_ff <= low_ff:
        raise ValueError(f"llama3: high_freq_factor ({high_ff}) must be > low_freq_factor ({low_ff})")
    freqs = frequencies(d, base)
    wavelen = 2 * math.pi / freqs
    out = np.where(wavelen > L_train / low_ff, freqs / factor, freqs)
    smooth = (L_train / wavelen - low_ff) / (high_ff - low_ff)
    medium = (wavelen >= L_train / high_ff) & (wavelen <= L_train / low_ff)
    return np.where(medium, (1 - smooth) * out / factor + smooth * out, out), 1.0


def _longrope(d, base, seq_len, p):
    """Per-pair rescale factors (Ding et al. 2024, "LongRoPE", arXiv:2402.13753)."""
    L_train, factor = _train_length_and_factor(p, "longrope")
    short, long_ = (val.check_inv_freq(p[k], d // 2, k) for k in ("short_factor", "long_factor"))
    if p.get("attention_factor") is not None:
        attention_factor = _pos_float(p, "attention_factor")
    else:
        attention_factor = 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(L_train))
    use_long = seq_len is not None and val.check_positive_int(seq_len, "seq_len") > L_train
    return frequencies(d, base) / (long_ if use_long else short), float(attention_factor)


_METHODS = {"default": _default, "linear": _linear, "ntk": _ntk, "dynamic": _dynamic,
            "yarn": _yarn, "llama3": _llama3, "longrope": _longrope}


def wavelengths(freqs) -> np.ndarray:
    """Wavelength 2 pi / theta_i of each pair, in positions."""
    return 2 * np.pi / np.asarray(freqs, dtype=float)
