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
from typing import NamedTuple

import numpy as np

from . import _validate as val
from .forms import frequencies

ROPE_TYPES = ("default", "linear", "ntk", "dynamic", "yarn", "llama3", "longrope", "proportional")

_TRAIN_LENGTH = ("original_max_position_embeddings", "max_position_embeddings")

#: What each method needs and what it uses besides: the one schema of a rope section.  Each required
#: entry is a tuple of alternative keys, satisfied by any of them (the first given wins).  Read it
#: through :func:`method_keys` / :func:`used_params`.
REQUIRED = {
    "default": (),
    "linear": (("factor",),),
    "ntk": (("factor",),),
    "dynamic": (("factor",), ("max_position_embeddings",)),
    "yarn": (_TRAIN_LENGTH,),
    "llama3": (("factor",), _TRAIN_LENGTH, ("low_freq_factor",), ("high_freq_factor",)),
    "longrope": (("short_factor",), ("long_factor",), _TRAIN_LENGTH),
    "proportional": (),
}
OPTIONAL = {
    "default": (),
    "linear": (),
    "ntk": (),
    "dynamic": (),
    "yarn": ("factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim", "attention_factor", "truncate"),
    "llama3": (),
    "longrope": ("factor", "attention_factor"),
    "proportional": ("partial_rotary_factor", "factor"),
}


class MethodKeys(NamedTuple):
    """The keys of one ``rope_type``: ``required`` (each a tuple of alternatives), ``optional``, and
    ``used`` (every key the method reads)."""
    required: tuple
    optional: tuple
    used: frozenset


def method_keys(rope_type: str) -> MethodKeys:
    """The schema of ``rope_type`` (a name in :data:`ROPE_TYPES`), from :data:`REQUIRED` and
    :data:`OPTIONAL`: ``method_keys("yarn").required == (("original_max_position_embeddings",
    "max_position_embeddings"),)``."""
    if rope_type not in REQUIRED:
        raise ValueError(f"rope_type must be one of {ROPE_TYPES}, got {rope_type!r}"
                         f"{val.closest_name(str(rope_type), ROPE_TYPES)}")
    required = tuple(tuple(alts) for alts in REQUIRED[rope_type])
    optional = tuple(OPTIONAL[rope_type])
    return MethodKeys(required, optional, frozenset(k for alts in required for k in alts) | frozenset(optional))


def used_params(rope_type: str, section) -> dict:
    """The entries of a rope section (a mapping) that ``rope_type`` uses and that are not None."""
    used = method_keys(rope_type).used
    return {k: v for k, v in section.items() if k in used and v is not None}


#: Every key some method uses (the union of :func:`method_keys` over :data:`ROPE_TYPES`).
METHOD_PARAM_KEYS = frozenset().union(*(method_keys(t).used for t in ROPE_TYPES))

#: Every key a published ``rope_scaling`` / ``rope_parameters`` section carries.  A method ignores
#: the ones it does not use (as transformers does); a name outside this list is a TypeError.
CONFIG_KEYS = (
    "factor", "max_position_embeddings", "original_max_position_embeddings", "low_freq_factor",
    "high_freq_factor", "beta_fast", "beta_slow", "mscale", "mscale_all_dim", "attention_factor", "truncate",
    "short_factor", "long_factor", "short_mscale", "long_mscale", "rope_theta", "partial_rotary_factor", "type",
)


def scaled_inv_freq(d: int, base: float | None = None, *, rope_type: str | None = None, seq_len=None, **params):
    """Per-pair frequencies of a context-extension method: ``(inv_freq (d/2,), attention_factor)``.

    ``d`` is the rotary dimension (head_dim * partial_rotary_factor).  ``base`` is
    rope_theta (default 10000; a ``rope_theta=`` keyword is the same thing).  ``seq_len``
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
    * ``proportional`` -- Gemma 4's full-attention layers: ``d`` is the whole head; the first
      ``int(partial_rotary_factor * d // 2)`` pairs turn at base^(-2i/d) (the exponent over the whole
      head, not over the rotated part), the other pairs at 0 (they pass through), all / ``factor``
      (transformers' ``_compute_proportional_rope_parameters``).

    ``**params`` may be a model config's whole rope section (``**config["rope_scaling"]``
    or ``**config["rope_parameters"]``): every key in :data:`CONFIG_KEYS` is accepted,
    ``type`` is the old name of ``rope_type``, keys a method does not use are ignored,
    and ``partial_rotary_factor`` is ignored because ``d`` is already the rotary dimension (except by
    ``proportional``, whose ``d`` is the whole head).
    A misspelt key is a TypeError naming the closest valid one.

    Where transformers v4 and v5 differ, this follows v5 (``modeling_rope_utils``):
    for ``yarn`` and ``longrope`` an explicit ``factor`` is used as given, with
    ``original_max_position_embeddings`` (else ``max_position_embeddings``) as the
    training length, and ``max_position_embeddings / original_max_position_embeddings``
    is used only when ``factor`` is missing.  transformers v4 (4.4x-4.5x) replaced
    ``factor`` by that ratio whenever ``original_max_position_embeddings`` was given, so
    Qwen2.5's published YaRN block (factor 4, both lengths 32768) meant factor 1 there
    and means factor 4 in v5 and here.  ``short_mscale``/``long_mscale`` (Phi-3-small) are
    ignored, as v5 ignores them.
    """
    params = dict(params)
    val.check_keywords(params, CONFIG_KEYS, "scaled_inv_freq")
    rope_type = _resolve_rope_type(rope_type, params.pop("type", None))
    base = _resolve_base(base, params.pop("rope_theta", None))
    d = val.check_d(d)
    _check_keys(rope_type, params)
    params = used_params(rope_type, params)
    if seq_len is not None:
        seq_len = val.check_positive_int(seq_len, "seq_len")
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):   # _check_result names the cause
        inv_freq, attention_factor = _METHODS[rope_type](d, base, seq_len, params)
    _check_result(inv_freq, attention_factor, rope_type, params, zeros=rope_type == "proportional")
    return inv_freq, attention_factor


def _resolve_rope_type(rope_type, old_name):
    for name, value in (("rope_type", rope_type), ("type", old_name)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name} must be a string, one of {ROPE_TYPES}, got {value!r} of type {type(value).__name__}")
    if rope_type is None:
        rope_type = "default" if old_name is None else old_name
    elif old_name is not None and old_name != rope_type:
        raise ValueError(f"rope_type={rope_type!r} and type={old_name!r} disagree; give one of them")
    if rope_type not in ROPE_TYPES:
        raise ValueError(f"rope_type must be one of {ROPE_TYPES}, got {rope_type!r}"
                         f"{val.closest_name(rope_type, ROPE_TYPES)}")
    return rope_type


def _resolve_base(base, rope_theta):
    if rope_theta is None:
        return val.check_base(10000.0 if base is None else base)
    rope_theta = val.check_base(rope_theta, "rope_theta")
    if base is not None and val.check_base(base) != rope_theta:
        raise ValueError(f"base={base} and rope_theta={rope_theta} disagree; they are the same thing, give one")
    return rope_theta


def _check_keys(rope_type, params):
    missing = [" | ".join(alts) for alts in method_keys(rope_type).required
               if not any(params.get(k) is not None for k in alts)]
    if missing:
        raise ValueError(f"rope_type={rope_type!r} is missing {missing}; it takes {_needs(rope_type)}")


def _check_result(inv_freq, attention_factor, rope_type, params, zeros=False):
    """Finite input must not give inf, NaN or non-positive frequencies (zeros where the method intends them):
    name the arguments that did it."""
    if np.all(np.isfinite(inv_freq)) and np.all(inv_freq >= 0 if zeros else inv_freq > 0) \
            and math.isfinite(attention_factor) \
            and attention_factor > 0:
        return
    given = {k: v for k, v in params.items() if not isinstance(v, (list, tuple, np.ndarray))}
    raise ValueError(f"rope_type={rope_type!r} with {given} gives frequencies or an attention factor that are "
                     f"not finite and positive (min frequency {np.min(inv_freq):.3g}, attention factor "
                     f"{attention_factor:.3g}); check the size of {sorted(params)}")


def _needs(rope_type) -> str:
    keys = method_keys(rope_type)
    required = [" | ".join(alts) for alts in keys.required]        # "a | b": either key
    return f"required {required}" + (f", optional {list(keys.optional)}" if keys.optional else "")


def _pos_float(params, name):
    return val.check_positive_real(params[name], name, "a finite real number > 0")


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
    factor = _pos_float(p, "factor")
    return frequencies(d, _new_base(base, factor, d, "factor")), 1.0


def _new_base(base, growth, d, name):
    """base * growth^(d/(d-2)), refused (naming ``name``) when it overflows."""
    if d <= 2:
        return base
    try:
        new_base = base * growth ** (d / (d - 2))
    except OverflowError:
        new_base = math.inf
    if not math.isfinite(new_base) or new_base <= 0:
        raise ValueError(f"{name} out of range: the new base, base * {growth:g}^(d/(d-2)) with base={base:g}, "
                         f"is {new_base:g}; it must be a positive finite float64")
    return new_base


def _dynamic(d, base, seq_len, p):
    """Dynamic NTK: the base grows with the current length (emozilla, "Dynamically Scaled RoPE", 2023)."""
    factor, L_train = _pos_float(p, "factor"), _pos_int(p, "max_position_embeddings")
    L = L_train if seq_len is None else max(seq_len, L_train)
    return frequencies(d, _new_base(base, (factor * L / L_train) - (factor - 1), d, "factor")), 1.0


def _train_length_and_factor(p, method):
    """transformers v5: an explicit factor wins; else max_position_embeddings / original."""
    key = "original_max_position_embeddings" if "original_max_position_embeddings" in p else "max_position_embeddings"
    L_train = _pos_int(p, key)
    if "factor" in p:
        return L_train, _pos_float(p, "factor")
    if "original_max_position_embeddings" in p and "max_position_embeddings" in p:
        return L_train, _pos_int(p, "max_position_embeddings") / L_train
    raise ValueError(f"rope_type={method!r} needs factor, or both max_position_embeddings and "
                     f"original_max_position_embeddings; it takes {_needs(method)}")


def _yarn_mscale(scale, mscale=1.0):
    return 1.0 if scale <= 1 else 0.1 * mscale * math.log(scale) + 1.0


def _yarn(d, base, seq_len, p):
    """YaRN: NTK-by-parts ramp plus attention factor (Peng et al. 2023, arXiv:2309.00071)."""
    L_train, factor = _train_length_and_factor(p, "yarn")
    if base == 1.0:
        raise ValueError("base must be > 1 for rope_type='yarn' (the ramp divides by log(base)), got 1.0")
    beta_fast = _pos_float(p, "beta_fast") if "beta_fast" in p else 32.0
    beta_slow = _pos_float(p, "beta_slow") if "beta_slow" in p else 1.0
    if beta_fast < beta_slow:
        raise ValueError(f"yarn: beta_fast ({beta_fast}) must be >= beta_slow ({beta_slow})")
    truncate = val.check_bool(p.get("truncate", True), "truncate")
    if "attention_factor" in p:
        attention_factor = _pos_float(p, "attention_factor")
    elif "mscale" in p and "mscale_all_dim" in p:
        mscale, mscale_all_dim = _pos_float(p, "mscale"), _pos_float(p, "mscale_all_dim")
        attention_factor = _yarn_mscale(factor, mscale) / _yarn_mscale(factor, mscale_all_dim)
    else:
        for k in ("mscale", "mscale_all_dim"):   # one alone is unused (as in transformers), but must be sane
            if k in p:
                _pos_float(p, k)
        attention_factor = _yarn_mscale(factor)

    def correction_dim(n_rotations):  # the pair dimension whose wavelength fits n_rotations in L_train
        return d * math.log(L_train / (n_rotations * 2 * math.pi)) / (2 * math.log(base))

    low, high = correction_dim(beta_fast), correction_dim(beta_slow)
    if truncate:
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
    key = "original_max_position_embeddings" if "original_max_position_embeddings" in p else "max_position_embeddings"
    L_train = _pos_int(p, key)
    if high_ff < low_ff:
        raise ValueError(f"llama3: high_freq_factor ({high_ff}) must be >= low_freq_factor ({low_ff})")
    freqs = frequencies(d, base)
    wavelen = 2 * math.pi / freqs
    out = np.where(wavelen > L_train / low_ff, freqs / factor, freqs)
    # high_freq_factor == low_freq_factor (Llama-4-Scout: both 1): no band between, a step at L_train / low_ff
    smooth = (L_train / wavelen - low_ff) / (high_ff - low_ff) if high_ff > low_ff else 0.0
    medium = (wavelen >= L_train / high_ff) & (wavelen <= L_train / low_ff)
    return np.where(medium, (1 - smooth) * out / factor + smooth * out, out), 1.0


def _longrope(d, base, seq_len, p):
    """Per-pair rescale factors (Ding et al. 2024, "LongRoPE", arXiv:2402.13753)."""
    L_train, factor = _train_length_and_factor(p, "longrope")
    short, long_ = (val.check_inv_freq(p[k], d // 2, k) for k in ("short_factor", "long_factor"))
    for name, f in (("short_factor", short), ("long_factor", long_)):
        if np.any(f <= 0):
            raise ValueError(f"{name} must be > 0 (it divides the frequencies), got {f[f <= 0][:3].tolist()} "
                             f"at pair(s) {np.flatnonzero(f <= 0)[:3].tolist()}")
    if "attention_factor" in p:
        attention_factor = _pos_float(p, "attention_factor")
    else:
        attention_factor = 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(L_train))
    use_long = seq_len is not None and seq_len > L_train
    return frequencies(d, base) / (long_ if use_long else short), float(attention_factor)


def _proportional(d, base, seq_len, p):
    """Gemma 4's proportional RoPE (transformers' _compute_proportional_rope_parameters): the first
    int(partial_rotary_factor * d // 2) pairs at base^(-2i/d) over the whole head, the rest 0, all / factor."""
    share = val.check_positive_real(p.get("partial_rotary_factor", 1.0), "partial_rotary_factor", "a number in (0, 1]")
    if share > 1:
        raise ValueError(f"partial_rotary_factor must be a number in (0, 1], got {share}")
    factor = _pos_float(p, "factor") if "factor" in p else 1.0
    freqs = frequencies(d, base)
    freqs[int(share * d // 2):] = 0.0
    return freqs / factor, 1.0


_METHODS = {"default": _default, "linear": _linear, "ntk": _ntk, "dynamic": _dynamic,
            "yarn": _yarn, "llama3": _llama3, "longrope": _longrope, "proportional": _proportional}


def wavelengths(freqs) -> np.ndarray:
    """Wavelength 2 pi / |theta_i| of each pair, in positions: ``freqs`` ``(n,)`` -> ``(n,)`` float64.

    A frequency of 0 (a pair that never turns), or one so small that its wavelength exceeds float64,
    is a ValueError."""
    f = val.check_freqs(freqs)
    small = np.abs(f) < 2 * np.pi / np.finfo(np.float64).max
    if small.any():
        i = int(np.argmax(small))
        raise ValueError(f"freqs must be non-zero with a wavelength 2*pi/|theta| within float64, got freqs[{i}] = {f[i]}")
    return 2 * np.pi / np.abs(f)
