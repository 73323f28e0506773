"""docs/handout.md: each formula, as the handout writes it, transcribed here and checked against the package."""

import math
import re
from pathlib import Path

import numpy as np
import pytest

import rope_ref as rr

HANDOUT = Path(__file__).resolve().parents[2] / "docs" / "handout.md"
TEXT = HANDOUT.read_text()
#: (d, base, factor, training length): a head of Llama's size, a small one, a large base and a small factor.
CASES = [(128, 10000.0, 8.0, 4096), (64, 500000.0, 4.0, 8192), (16, 10000.0, 2.0, 2048), (96, 1e6, 32.0, 32768)]


def row(method):
    """The table row of ``method`` (its first cell starts with the name)."""
    found = re.findall(rf"^\| {re.escape(method)}[ (].*$", TEXT, re.M)
    assert len(found) == 1, method
    return found[0]


def theta(d, base):
    return base ** (-2 * np.arange(d // 2) / d)


def yarn_gamma(d, base, train_len, beta_fast=32.0, beta_slow=1.0):
    """gamma_i as the handout writes it: 1 - min(1, max(0, (i - floor r(fast)) / (ceil r(slow) - floor r(fast))))."""
    def r(beta):
        return d * math.log(train_len / (2 * math.pi * beta)) / (2 * math.log(base))
    low, high = math.floor(r(beta_fast)), math.ceil(r(beta_slow))
    return 1 - np.minimum(1, np.maximum(0, (np.arange(d // 2) - low) / (high - low)))


def llama3_sigma(d, base, train_len, low=1.0, high=4.0):
    wavelength = 2 * np.pi / theta(d, base)
    between = (train_len / wavelength - low) / (high - low)
    return np.where(wavelength < train_len / high, 1.0, np.where(wavelength > train_len / low, 0.0, between))


#: method -> (the handout's LaTeX for theta_i' and the attention factor, its arXiv number, rope_type and params,
#: the transcription of the formula: (d, base, s, L) -> (theta', attention factor))
FORMULAS = {
    "linear": (r"$\theta_i' = \theta_i / s$", "2306.15595", lambda s, L: ("linear", {"factor": s}),
               lambda d, b, s, L: (theta(d, b) / s, 1.0)),
    "NTK-aware": (r"$\theta_i' = b'^{-2i/d}$, $b' = b\, s^{d/(d-2)}$", "2309.00071",
                  lambda s, L: ("ntk", {"factor": s}),
                  lambda d, b, s, L: (theta(d, b * s ** (d / (d - 2))), 1.0)),
    "dynamic NTK": (r"$b' = b \left(s\, \ell / L - (s - 1)\right)^{d/(d-2)}$", "2309.00071",
                    lambda s, L: ("dynamic", {"factor": s, "max_position_embeddings": L}),
                    lambda d, b, s, L: (theta(d, b * (s * (3 * L) / L - (s - 1)) ** (d / (d - 2))), 1.0)),
    "YaRN": (r"$\theta_i' = (1 - \gamma_i)\, \theta_i / s + \gamma_i\, \theta_i$ | $0.1 \ln s + 1$", "2309.00071",
             lambda s, L: ("yarn", {"factor": s, "original_max_position_embeddings": L}),
             lambda d, b, s, L: ((1 - yarn_gamma(d, b, L)) * theta(d, b) / s + yarn_gamma(d, b, L) * theta(d, b),
                                 0.1 * math.log(s) + 1)),
    "Llama 3": (r"$\theta_i' = (1 - \sigma_i)\, \theta_i / s + \sigma_i\, \theta_i$ | 1", "2407.21783",
                lambda s, L: ("llama3", {"factor": s, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                         "original_max_position_embeddings": L}),
                lambda d, b, s, L: ((1 - llama3_sigma(d, b, L)) * theta(d, b) / s + llama3_sigma(d, b, L) * theta(d, b),
                                    1.0)),
    "LongRoPE": (r"$\theta_i' = \theta_i / \mu_i$ | $\sqrt{1 + \ln s / \ln L}$", "2402.13753",
                 lambda s, L: ("longrope", {"factor": s, "original_max_position_embeddings": L,
                                            "short_factor": [1.0] * 100, "long_factor": [s] * 100}),
                 lambda d, b, s, L: (theta(d, b) / s, math.sqrt(1 + math.log(s) / math.log(L)))),
}


@pytest.mark.parametrize("method", FORMULAS)
def test_each_formula_as_written_matches_scaled_inv_freq(method):
    latex, arxiv, config, transcription = FORMULAS[method]
    line = row(method)
    assert latex in line and f"arXiv:{arxiv}" in line, (method, line)
    for d, base, factor, train_len in CASES:
        rope_type, params = config(factor, train_len)
        if rope_type == "longrope":
            params = {**params, "short_factor": params["short_factor"][:d // 2],
                      "long_factor": params["long_factor"][:d // 2]}
        seq_len = 3 * train_len     # dynamic reads the current length; longrope then uses long_factor
        got, attention = rr.scaled_inv_freq(d, base, rope_type=rope_type, seq_len=seq_len, **params)
        want, want_attention = transcription(d, base, factor, train_len)
        np.testing.assert_allclose(got, want, rtol=1e-12, err_msg=f"{method} d={d} base={base} factor={factor}")
        assert attention == pytest.approx(want_attention, rel=1e-12), method


def test_the_ramps_and_bands_are_written_as_transcribed():
    for latex in [r"r(\beta) = d \ln\!\left(L / (2\pi \beta)\right) / (2 \ln b)",
                  r"\gamma_i = 1 - \min\left(1, \max\left(0, \frac{i - \lfloor r(\beta_{\text{fast}}) \rfloor}"
                  r"{\lceil r(\beta_{\text{slow}}) \rceil - \lfloor r(\beta_{\text{fast}}) \rfloor}\right)\right)",
                  r"\sigma_i = \frac{L / \lambda_i - l}{h - l}", r"$\lambda_i < L/h$", r"$\lambda_i > L/l$",
                  r"$\beta_{\text{fast}} = 32$", r"$\beta_{\text{slow}} = 1$", r"$\theta_i = b^{-2i/d}$"]:
        assert latex in TEXT, latex


def test_yarn_numbers_at_factor_8():
    _, attention = rr.scaled_inv_freq(128, 10000.0, rope_type="yarn", factor=8.0, original_max_position_embeddings=4096)
    assert f"factor is ${attention:.3f}$" in TEXT and f"${attention:.3f}^2 = {attention ** 2:.3f}$" in TEXT


def test_rotate_half_examples():
    x = np.array([1.0, 2.0, 3.0, 4.0])
    for call, result in [("`rr.rotate_half(x)`", rr.rotate_half(x)),
                         ('`rr.rotate_half(x, pairing="half")`', rr.rotate_half(x, pairing="half"))]:
        assert f"{call} is $({', '.join(f'{v:g}' for v in result)})$" in TEXT, call
    half = np.concatenate([-x[2:], x[:2]])                          # Hugging Face: cat(-x2, x1)
    np.testing.assert_array_equal(rr.rotate_half(x, pairing="half"), half)


def test_score_turns_the_key_by_n_minus_m():         # the identity itself: test_forms.test_relative_position_identity
    assert r"$(R_m q)^\top (R_n k) = q^\top R_{n-m} k$" in TEXT
