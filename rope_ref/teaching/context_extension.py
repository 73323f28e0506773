"""Context extension (notebook 05): every scaling method applied to one model, side by side."""

from .._validate import check_number
from ..forms import frequencies
from ..scaling import SCALING_METHODS, scaled_inv_freq

TRAIN_LEN = 4096          # the example model's training length


def method_configs(factor: float = 8.0, train_len: int = TRAIN_LEN) -> dict:
    """rope_type -> parameters for scaled_inv_freq (each method's ``example``): ``train_len`` extended ``factor``x."""
    train_len = check_number(train_len, "train_len", "a positive integer below 2**53", lambda v: 0 < v < 2 ** 53)
    factor = check_number(factor, "factor", "a real number >= 1 with factor * train_len finite",
                          lambda v: 1 <= v and v * train_len < float("inf"), real=True)
    return {name: method.example(factor, train_len) for name, method in SCALING_METHODS.items() if method.example}


def scaled_frequencies(d: int = 128, base: float = 10000.0, factor: float = 8.0, train_len: int = TRAIN_LEN) -> dict:
    """rope_type -> (scaled theta_i, attention_factor) for every method of :func:`method_configs`."""
    return {name: scaled_inv_freq(d, base, rope_type=name, **params)
            for name, params in method_configs(factor, train_len).items()}


def frequency_ratios(d: int = 128, base: float = 10000.0, factor: float = 8.0, train_len: int = TRAIN_LEN,
                     scaled: dict | None = None) -> dict:
    """rope_type -> (scaled theta_i / theta_i per pair, attention_factor); ``scaled``: those arguments' frequencies."""
    scaled = scaled_frequencies(d, base, factor, train_len) if scaled is None else scaled
    return {name: (freqs / frequencies(d, base), att) for name, (freqs, att) in scaled.items()}


def angles_reached(d: int = 128, base: float = 10000.0, factor: float = 8.0, train_len: int = TRAIN_LEN,
                   scaled: dict | None = None) -> dict:
    """The largest angle (radians) each pair reaches: ``"training"`` -> L_train * theta_i, and rope_type ->
    factor * L_train * scaled theta_i (a pair meets unseen angles unless this stays at or below training's)."""
    scaled = scaled_frequencies(d, base, factor, train_len) if scaled is None else scaled
    return {"training": train_len * frequencies(d, base)} | {name: factor * train_len * freqs
                                                             for name, (freqs, _) in scaled.items()}
