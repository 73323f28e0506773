"""Context-extension methods: per-pair frequencies (and an attention factor) for longer contexts, one entry of
:data:`SCALING_METHODS` each (as transformers' ``ROPE_INIT_FUNCTIONS``), with transformers' names, defaults and
numbers (tests/data/hf_rope_reference.json, to float32 precision)."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ._validate import (check_base, check_bool, check_choice, check_d, check_fraction, check_freqs, check_keywords,
                        check_length, check_number, check_positive_real)
from .forms import frequencies

#: The training length: original_max_position_embeddings, else max_position_embeddings (transformers v5).
TRAIN_LENGTH = ("original_max_position_embeddings", "max_position_embeddings")
#: yarn's and longrope's: a training length, and the factor or both lengths (whose ratio is the factor).
_FACTOR_OR_RATIO = (TRAIN_LENGTH, ("factor", "original_max_position_embeddings"), ("factor", "max_position_embeddings"))
#: Keys a published rope section carries besides the methods' own: accepted, and ignored by the methods.
_SECTION_KEYS = ("rope_theta", "type", "partial_rotary_factor", "short_mscale", "long_mscale")
#: Checks of the methods' scalar keys, made once by scaled_inv_freq (short_factor, long_factor: by longrope, given d).
_KEY_CHECKS = {**dict.fromkeys(("factor", "beta_fast", "beta_slow", "low_freq_factor", "high_freq_factor",
                                "attention_factor"), check_positive_real),
               **dict.fromkeys(TRAIN_LENGTH, check_length), "truncate": check_bool,
               "partial_rotary_factor": check_fraction, **dict.fromkeys(("mscale", "mscale_all_dim"),
                               lambda v, k: check_number(v, k, "a finite real number", math.isfinite, real=True))}
#: The training lengths llama3's and yarn's candidates try (the frequencies alone do not give it).
_TRAIN_LENGTHS = (1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072)


@dataclass(frozen=True)
class ScalingMethod:
    """Everything rope_ref knows about one context-extension method (one ``rope_type``)."""

    inv_freq: Callable                        # (d, base, seq_len, params) -> theta_i (d/2,); params: keys it uses
    attention_factor: Callable = lambda params: 1.0   # params -> the factor on cos and sin
    required: tuple = ()                      # tuples of alternative keys
    optional: tuple = ()                      # keys with defaults
    uses_seq_len: bool = False                # the frequencies depend on the current length (dynamic, longrope)
    whole_head: bool = False                  # d is the whole head and some pairs stand still (proportional)
    config_names: tuple | None = None         # rope_types configs give it; None: its name (() for rope_ref's "ntk")
    example: Callable | None = None           # (factor, train_len) -> params extending train_len (notebook 05)
    candidates: Callable | None = None        # identify's fit -> (rank, params) it compares, lowest rank first

    @property
    def used(self) -> frozenset:
        """Every key the method reads."""
        return frozenset(k for alternatives in self.required for k in alternatives) | frozenset(self.optional)

    def params_of(self, section) -> dict:
        """The entries of a rope section (a mapping) that the method uses and that are not None."""
        return {k: v for k, v in section.items() if k in self.used and v is not None}


def config_keys() -> frozenset:
    """Every key a published ``rope_scaling`` / ``rope_parameters`` section carries (the registry's, read now)."""
    return frozenset().union(*(method.used for method in SCALING_METHODS.values()), _SECTION_KEYS)


def scaled_inv_freq(d: int, base: float | None = None, *, rope_type: str | None = None, seq_len=None, **params):
    """``(inv_freq (d/2,), attention_factor)`` of a context-extension method, used as ``rotate(x, positions,
    inv_freq=inv_freq) * attention_factor``.  ``d``: the rotary dimension (the whole head for ``proportional``);
    ``base`` may come as ``rope_theta=`` and ``rope_type`` as ``type=``, so ``**params`` may be a config's whole rope
    section (keys of :func:`config_keys` a method does not use are ignored); ``seq_len``: the current length.  As
    transformers v5, ``yarn`` and ``longrope`` take ``factor`` as given, else ``max_position_embeddings /
    original_max_position_embeddings`` (docs/model_configs.md)."""
    check_keywords(params, config_keys(), "scaled_inv_freq")
    rope_type = _one_value(("rope_type", rope_type), ("type", params.pop("type", None)),
                           lambda value, name: check_choice(value, name, SCALING_METHODS, "a string, "), "default")
    base = _one_value(("base", base), ("rope_theta", params.pop("rope_theta", None)), check_base, 10000.0)
    d = check_d(d)
    method = SCALING_METHODS[rope_type]
    params = {k: _KEY_CHECKS[k](v, k) if k in _KEY_CHECKS else v for k, v in method.params_of(params).items()}
    missing = [" | ".join(alts) for alts in method.required if not any(k in params for k in alts)]
    if missing:
        raise ValueError(f"rope_type={rope_type!r} is missing {missing}; it reads {sorted(method.used)}")
    seq_len = None if seq_len is None else check_length(seq_len, "seq_len")
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):   # refused below, naming the cause
        inv_freq = method.inv_freq(d, base, seq_len, params)
        attention_factor = check_positive_real(params.get("attention_factor", method.attention_factor(params)),
                                               "attention_factor")     # given wins
    positive = np.all(inv_freq >= 0 if method.whole_head else inv_freq > 0)    # whole_head: pairs standing still
    if not (positive and np.all(np.isfinite(inv_freq))):
        raise ValueError(f"rope_type={rope_type!r} with {sorted(params)} gives frequencies from {np.min(inv_freq):.3g} "
                         f"to {np.max(inv_freq):.3g}; expected finite and positive ones")
    return inv_freq, attention_factor


def _one_value(given, alias, check, default):
    """The value given under either of two names for one thing (both: they must agree), checked, else ``default``."""
    values = {name: check(value, name) for name, value in (given, alias) if value is not None}
    if len(set(values.values())) > 1:
        raise ValueError(f"{' and '.join(f'{k}={v!r}' for k, v in values.items())} disagree; give one")
    return next(iter(values.values()), default)


def _linear(d, base, seq_len, p):
    """Position interpolation, theta_i / factor: position m read as m / factor (Chen et al. 2023, arXiv:2306.15595)."""
    return frequencies(d, base) / p["factor"]


def _ntk(d, base, seq_len, p):
    """Static NTK-aware scaling, the base raised to base * factor^(d/(d-2)) (bloc97, "NTK-Aware Scaled RoPE",
    2023; YaRN, arXiv:2309.00071, section 3.1)."""
    return frequencies(d, _new_base(base, p["factor"], d))


def _new_base(base, growth, d):
    """base * growth^(d/(d-2)), refused (naming factor, which makes growth) unless positive and finite."""
    new_base = float(base * np.float64(growth) ** (d / (d - 2))) if d > 2 else base    # overflow: inf
    if not 0 < new_base < math.inf:
        raise ValueError(f"factor: the new base base * {growth:g}^(d/(d-2)) is {new_base:g}, not a positive float64")
    return new_base


def _dynamic(d, base, seq_len, p):
    """Dynamic NTK: base * (factor * L / L_train - (factor - 1))^(d/(d-2)) with L = max(seq_len, L_train)
    (emozilla, "Dynamically Scaled RoPE", 2023; YaRN, arXiv:2309.00071, section 3.3)."""
    factor, train_len = p["factor"], p["max_position_embeddings"]
    length = train_len if seq_len is None else max(seq_len, train_len)
    return frequencies(d, _new_base(base, (factor * length / train_len) - (factor - 1), d))


def _train_length_and_factor(p):
    """The first key of TRAIN_LENGTH present, and the factor: as transformers v5, an explicit one wins, else
    max_position_embeddings / original_max_position_embeddings (_FACTOR_OR_RATIO requires one of them)."""
    train_len = next(p[k] for k in TRAIN_LENGTH if k in p)
    return train_len, p["factor"] if "factor" in p else p["max_position_embeddings"] / train_len


def _yarn(d, base, seq_len, p):
    """YaRN's NTK-by-parts: theta_i ((1 - gamma_i) / factor + gamma_i), gamma the ramp from the pairs turning
    fewer than beta_slow times over L_train (interpolated) to those turning more than beta_fast times
    (extrapolated) (Peng et al. 2023, arXiv:2309.00071, section 3.2)."""
    train_len, factor = _train_length_and_factor(p)
    if base == 1.0:
        raise ValueError("base must be > 1 for rope_type='yarn' (the ramp divides by log(base)), got 1.0")
    beta_fast, beta_slow = p.get("beta_fast", 32.0), p.get("beta_slow", 1.0)
    # the pair dimensions whose wavelengths fit beta_fast and beta_slow turns in L_train
    turns = [train_len / (2 * math.pi * n) for n in (beta_fast, beta_slow)]     # as transformers computes them
    if not all(0 < t < math.inf for t in turns):
        raise ValueError(f"beta_fast and beta_slow must give finite YaRN bounds for the training length {train_len}, "
                         f"got beta_fast={beta_fast}, beta_slow={beta_slow}")
    low, high = (d * math.log(t) / (2 * math.log(base)) for t in turns)
    if p.get("truncate", True):
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, d - 1)
    if high < low:    # L_train < 2 pi beta_slow, the slowest pair turning > beta_fast times, or beta_fast < beta_slow
        raise ValueError(f"original_max_position_embeddings={train_len}, beta_fast, beta_slow: YaRN's ramp backwards")
    if low == high:
        high += 0.001
    ramp = np.clip((np.arange(d // 2) - low) / (high - low), 0.0, 1.0)  # 0: extrapolate, 1: interpolate
    extrapolation = frequencies(d, base)
    return extrapolation / factor * ramp + extrapolation * (1 - ramp)


def _yarn_attention(p):
    """sqrt(1/t) = 0.1 ln(factor) + 1 (arXiv:2309.00071, section 3.4), or, when mscale and mscale_all_dim are both
    non-zero, DeepSeek-V2's mscale(factor, mscale) / mscale(factor, mscale_all_dim) (a zero one counts as absent, as
    in transformers' _compute_yarn_parameters)."""
    _, factor = _train_length_and_factor(p)
    mscale, all_dim = p.get("mscale", 0.0), p.get("mscale_all_dim", 0.0)
    log_factor = max(math.log(factor), 0.0)          # factor <= 1: no scaling
    if not (mscale and all_dim):
        return 0.1 * log_factor + 1.0
    return (0.1 * mscale * log_factor + 1.0) / np.float64(0.1 * all_dim * log_factor + 1.0)     # / 0: inf, refused


def _llama3(d, base, seq_len, p):
    """Llama 3.1's bands: wavelengths above L_train / low_freq_factor divided by factor, below L_train /
    high_freq_factor unchanged, linear in L_train / wavelength between (Meta 2024, arXiv:2407.21783; transformers'
    _compute_llama3_parameters)."""
    (train_len, factor), low_ff, high_ff = _train_length_and_factor(p), p["low_freq_factor"], p["high_freq_factor"]
    if high_ff < low_ff:
        raise ValueError(f"llama3: high_freq_factor ({high_ff}) must be >= low_freq_factor ({low_ff})")
    freqs = frequencies(d, base)
    wavelen = 2 * math.pi / freqs
    out = np.where(wavelen > train_len / low_ff, freqs / factor, freqs)
    # high_freq_factor == low_freq_factor (Llama-4-Scout: both 1): no band between, a step at L_train / low_ff
    smooth = (train_len / wavelen - low_ff) / (high_ff - low_ff) if high_ff > low_ff else 0.0
    medium = (wavelen >= train_len / high_ff) & (wavelen <= train_len / low_ff)
    return np.where(medium, (1 - smooth) * out / factor + smooth * out, out)


def _longrope(d, base, seq_len, p):
    """theta_i / lambda_i with searched per-pair factors: short_factor up to L_train, long_factor beyond
    (Ding et al. 2024, "LongRoPE", arXiv:2402.13753)."""
    train_len, _ = _train_length_and_factor(p)
    short, long_ = (check_freqs(p[k], k, n_pairs=d // 2) for k in ("short_factor", "long_factor"))
    for name, f in (("short_factor", short), ("long_factor", long_)):
        if np.any(f <= 0):
            raise ValueError(f"{name} must be > 0 at every pair (it divides the frequencies), got {f.tolist()}")
    return frequencies(d, base) / (long_ if seq_len is not None and seq_len > train_len else short)


def _longrope_attention(p):
    """sqrt(1 + ln(factor) / ln(L_train)) (transformers' _compute_longrope_parameters)."""
    train_len, factor = _train_length_and_factor(p)
    if factor > 1 and train_len == 1:
        raise ValueError("original_max_position_embeddings must be > 1 for longrope (ln of it divides), got 1")
    return 1.0 if factor <= 1 else math.sqrt(1 + math.log(factor) / math.log(train_len))


def _proportional(d, base, seq_len, p):
    """Gemma 4's proportional RoPE (transformers' _compute_proportional_rope_parameters): the first
    int(partial_rotary_factor * d // 2) pairs at base^(-2i/d) over the whole head, the rest 0, all / factor."""
    freqs = frequencies(d, base)
    freqs[int(p.get("partial_rotary_factor", 1.0) * d // 2):] = 0.0
    return freqs / p.get("factor", 1.0)


def _default_candidates(fit):     # how identify names a method: (rank, params), simplest rank first
    if fit.base_hint is not None:
        yield (0,), dict(base=fit.base_hint)
    yield (2,), dict(base=fit.fitted_base)


def _ntk_candidates(fit):
    if fit.base_hint is not None and fit.r > 2 and fit.fitted_base > fit.base_hint:   # NTK raises the base
        yield (1,), dict(base=fit.base_hint, factor=float((fit.fitted_base / fit.base_hint) ** ((fit.r - 2) / fit.r)))


def _linear_candidates(fit):
    base, factor = fit.linear_fit
    if abs(factor - 1) > fit.tau[0]:
        yield (3,), dict(base=base, factor=factor)


def _llama3_candidates(fit):     # rank (4, factor's, training length's, 0): after the factor-free methods
    for (i, factor), (j, train_len) in itertools.product(enumerate(fit.factors), enumerate(_TRAIN_LENGTHS)):
        # Llama 3.1 (1, 4); Llama 4 (1, 1.5) and Llama-4-Scout's step (1, 1)
        for low, high in [(1.0, 4.0), (1.0, 2.0), (1.0, 8.0), (2.0, 8.0), (1.0, 1.5), (1.0, 1.0)]:
            yield (4, i, j, 0), dict(base=fit.base, factor=factor, low_freq_factor=low, high_freq_factor=high,
                                     original_max_position_embeddings=train_len)


def _yarn_candidates(fit):       # after llama3's of the same factor and training length
    for (i, factor), (j, train_len) in itertools.product(enumerate(fit.factors), enumerate(_TRAIN_LENGTHS)):
        for truncate in (True, False):          # GPT-OSS: truncate=False (unrounded correction range)
            for fast, slow in [(32.0, 1.0), (16.0, 1.0), (32.0, 2.0), (16.0, 2.0), (1.0, 1.0)]:  # (1, 1): Scout's step
                yield (4, i, j, 1), dict(base=fit.base, factor=factor, original_max_position_embeddings=train_len,
                                         beta_fast=fast, beta_slow=slow, **({} if truncate else {"truncate": False}))


#: rope_type -> ScalingMethod: the one registry of context-extension methods (names as transformers' rope_type).
SCALING_METHODS = {
    "default": ScalingMethod(lambda d, base, seq_len, p: frequencies(d, base), candidates=_default_candidates),  # eq 15
    "linear": ScalingMethod(_linear, required=(("factor",),), candidates=_linear_candidates,
                            example=lambda factor, train_len: dict(factor=factor)),
    "ntk": ScalingMethod(_ntk, required=(("factor",),), config_names=(), candidates=_ntk_candidates,
                         example=lambda factor, train_len: dict(factor=factor)),
    "dynamic": ScalingMethod(_dynamic, required=(("factor",), ("max_position_embeddings",)), uses_seq_len=True,
                             example=lambda factor, train_len: dict(factor=factor, max_position_embeddings=train_len,
                                                                    seq_len=int(factor * train_len))),
    "yarn": ScalingMethod(
        _yarn, _yarn_attention, required=_FACTOR_OR_RATIO, candidates=_yarn_candidates,
        optional=("beta_fast", "beta_slow", "mscale", "mscale_all_dim", "attention_factor", "truncate"),
        example=lambda factor, train_len: dict(factor=factor, original_max_position_embeddings=train_len)),
    "llama3": ScalingMethod(
        _llama3, required=(("factor",), TRAIN_LENGTH, ("low_freq_factor",), ("high_freq_factor",)),
        candidates=_llama3_candidates,
        example=lambda factor, train_len: dict(factor=factor, low_freq_factor=1.0, high_freq_factor=4.0,
                                               original_max_position_embeddings=train_len)),
    "longrope": ScalingMethod(
        _longrope, _longrope_attention, required=(("short_factor",), ("long_factor",), *_FACTOR_OR_RATIO),
        optional=("attention_factor",), uses_seq_len=True, config_names=("longrope", "su")),
    "proportional": ScalingMethod(_proportional, optional=("partial_rotary_factor", "factor"), whole_head=True),
}

#: The method names, in registry order.
ROPE_TYPES = tuple(SCALING_METHODS)
#: Every key some method uses, as at import (:func:`config_keys` reads the registry at call time).
METHOD_PARAM_KEYS = frozenset().union(*(method.used for method in SCALING_METHODS.values()))


def wavelengths(freqs) -> np.ndarray:
    """Wavelength 2 pi / |theta_i| of each pair, in positions: ``freqs`` ``(n,)`` -> ``(n,)`` float64; a frequency
    of 0, or one whose wavelength exceeds float64, is a ValueError."""
    freqs = check_freqs(freqs)
    if np.any(np.abs(freqs) < 2 * np.pi / np.finfo(np.float64).max):
        raise ValueError(f"freqs must be non-zero with a wavelength 2*pi/|theta| within float64, got {freqs}")
    return 2 * np.pi / np.abs(freqs)
