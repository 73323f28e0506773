"""Context-extension frequencies: the same numbers as HF transformers, hand-derived limits, and the registry."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

import rope_ref as rr
from rope_ref import scaling
from rope_ref.scaling import ROPE_TYPES, scaled_inv_freq
from rope_ref.teaching import views

REF = json.loads((Path(__file__).parent / "data" / "hf_rope_reference.json").read_text())
YARN = dict(rope_type="yarn", factor=4.0, max_position_embeddings=4096)
LONG = dict(rope_type="longrope", factor=8.0, original_max_position_embeddings=1024)


@pytest.mark.parametrize("case", REF["cases"], ids=[c["label"] for c in REF["cases"]])
def test_matches_hf_transformers(case):          # to float32 precision: HF computes in float32
    params = dict(case["rope_parameters"])
    rope_type, base = params.pop("rope_type"), params.pop("rope_theta")
    if rope_type not in ("linear",) and not (rope_type in ("yarn", "longrope") and "factor" in params):
        params["max_position_embeddings"] = case["max_position_embeddings"]   # v5: an explicit factor wins
    freqs, att = scaled_inv_freq(case["d"], base, rope_type=rope_type, seq_len=case["seq_len"], **params)
    np.testing.assert_allclose(freqs, case["inv_freq"], rtol=2e-6, err_msg=case["label"])
    assert math.isclose(att, case["attention_factor"], rel_tol=1e-6)
    assert {c["rope_parameters"]["rope_type"] for c in REF["cases"]} | {"default", "ntk", "proportional"} \
        == set(ROPE_TYPES)      # every method has a recording here or a test by hand below


def test_default_linear_ntk_dynamic_by_hand():
    f, a = scaled_inv_freq(8, 16.0)
    np.testing.assert_allclose(f, [1, 0.5, 0.25, 0.125])
    f, a = scaled_inv_freq(8, 16.0, rope_type="linear", factor=4.0)
    np.testing.assert_allclose(f, [0.25, 0.125, 0.0625, 0.03125])
    x = np.random.default_rng(0).standard_normal((10, 8))        # position interpolation: positions / 4
    np.testing.assert_allclose(rr.rotate(x, inv_freq=f), rr.rotate(x, np.arange(10) / 4, base=16.0), atol=1e-15)
    f, _ = scaled_inv_freq(64, 10000.0, rope_type="ntk", factor=4.0)
    np.testing.assert_allclose(f, rr.frequencies(64, 10000.0 * 4.0 ** (64 / 62)), rtol=1e-14)
    assert f[0] == 1.0 and math.isclose(f[-1], rr.frequencies(64)[-1] / 4, rel_tol=1e-12)
    kw = dict(rope_type="dynamic", factor=4.0, max_position_embeddings=2048)
    np.testing.assert_allclose(scaled_inv_freq(64, seq_len=1000, **kw)[0], rr.frequencies(64), rtol=1e-14)
    f, _ = scaled_inv_freq(64, seq_len=8192, **kw)     # L = 4 L_train: base * (4*4 - 3)^(d/(d-2))
    np.testing.assert_allclose(f, rr.frequencies(64, 10000.0 * 13 ** (64 / 62)), rtol=1e-14)


def test_yarn_limits_ramp_and_edges():
    f, att = scaled_inv_freq(128, rope_type="yarn", factor=16.0, original_max_position_embeddings=4096)
    ratio = f / rr.frequencies(128)
    assert ratio[0] == 1.0 and math.isclose(ratio[-1], 1 / 16) and np.all(np.diff(ratio) <= 1e-15)
    assert math.isclose(att, 0.1 * math.log(16) + 1)
    for train_len, truncate in ((7, False), (6, True)):      # just inside its range: pair 0 kept, the rest divided
        f, _ = scaled_inv_freq(128, rope_type="yarn", factor=4.0, original_max_position_embeddings=train_len,
                               truncate=truncate)
        np.testing.assert_allclose(f[1:], rr.frequencies(128)[1:] / 4, rtol=1e-12)


@pytest.mark.parametrize("mscales, want", [
    ({"mscale_all_dim": 0}, 0.1 * math.log(4) + 1),                       # transformers: 0 is absent
    ({"mscale": 0, "mscale_all_dim": 1.0}, 0.1 * math.log(4) + 1),
    ({"mscale": 1.0}, 0.1 * math.log(4) + 1),                              # one alone: the paper's factor
    ({"mscale": 1.0, "mscale_all_dim": 1.0}, 1.0),                         # DeepSeek-V3: the ratio
    ({"mscale": 0.707, "mscale_all_dim": 1.0}, (0.0707 * math.log(4) + 1) / (0.1 * math.log(4) + 1)),
])
def test_yarn_attention_factor_reads_mscales_as_transformers(mscales, want):
    _, att = scaled_inv_freq(64, rope_type="yarn", factor=4.0, original_max_position_embeddings=2048, **mscales)
    assert math.isclose(att, want, rel_tol=1e-12)      # 1.1386 for mscale_all_dim 0 (it was refused)


def test_llama3_bands_and_step():
    base = rr.frequencies(128, 500000.0)
    wavelen = 2 * np.pi / base
    kw = dict(rope_type="llama3", low_freq_factor=1.0, original_max_position_embeddings=8192)
    f, _ = scaled_inv_freq(128, 500000.0, factor=8.0, high_freq_factor=4.0, **kw)
    np.testing.assert_array_equal(f[wavelen < 8192 / 4], base[wavelen < 8192 / 4])
    np.testing.assert_allclose(f[wavelen > 8192], base[wavelen > 8192] / 8, rtol=1e-15)
    f, _ = scaled_inv_freq(128, 500000.0, factor=16.0, high_freq_factor=1.0, **kw)   # Llama-4-Scout: a step
    np.testing.assert_array_equal(f, np.where(wavelen > 8192, base / 16, base))


def test_longrope_switches_factors_with_seq_len():
    kw = dict(LONG, short_factor=np.full(8, 2.0), long_factor=np.full(8, 5.0))
    np.testing.assert_allclose(scaled_inv_freq(16, seq_len=100, **kw)[0], rr.frequencies(16) / 2)
    f, att = scaled_inv_freq(16, seq_len=5000, **kw)
    np.testing.assert_allclose(f, rr.frequencies(16) / 5)
    assert math.isclose(att, math.sqrt(1 + math.log(8) / math.log(1024)))


def test_proportional_by_hand():
    """Gemma 4's full attention: int(0.25 * 512 // 2) = 64 pairs turn at 1e6^(-2i/512), the rest stand still."""
    f, att = scaled_inv_freq(512, 1e6, rope_type="proportional", partial_rotary_factor=0.25)
    np.testing.assert_allclose(f[:64], 1e6 ** (-2.0 * np.arange(64) / 512), rtol=1e-15)
    assert f.shape == (256,) and np.all(f[64:] == 0) and att == 1.0
    g, _ = scaled_inv_freq(512, 1e6, rope_type="proportional", partial_rotary_factor=0.25, factor=2.0)
    np.testing.assert_allclose(g, f / 2, rtol=1e-15)
    assert np.count_nonzero(scaled_inv_freq(10, rope_type="proportional", partial_rotary_factor=0.5)[0]) == 2


def test_published_sections_with_transformers_v5_semantics():
    section = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 8192, "partial_rotary_factor": 1.0}
    f, _ = scaled_inv_freq(128, **section)              # a whole section; keys a method does not use are ignored
    assert f[0] == 1.0 and math.isclose(f[-1], rr.frequencies(128, 500000.0)[-1] / 8, rel_tol=1e-14)
    a, b = scaled_inv_freq(64, type="yarn", **YARN | {"rope_type": None}), scaled_inv_freq(64, **YARN)
    np.testing.assert_array_equal(a[0], b[0])
    f, att = scaled_inv_freq(128, 1e6, type="yarn", factor=4.0, original_max_position_embeddings=32768,
                             max_position_embeddings=32768)           # Qwen2.5: v5 keeps the explicit factor 4
    assert math.isclose(att, 0.1 * math.log(4.0) + 1) and math.isclose(f[-1] / rr.frequencies(128, 1e6)[-1], 1 / 4)
    f, att = scaled_inv_freq(64, rope_type="yarn", original_max_position_embeddings=4096,
                             max_position_embeddings=163840)
    g, att40 = scaled_inv_freq(64, rope_type="yarn", factor=40.0, original_max_position_embeddings=4096)
    np.testing.assert_array_equal(f, g)                   # no factor: max / original = 40
    np.testing.assert_array_equal(scaled_inv_freq(16, rope_theta=500.0)[0], rr.frequencies(16, 500.0))
    np.testing.assert_array_equal(scaled_inv_freq(64, **YARN, beta_fast=None)[0], scaled_inv_freq(64, **YARN)[0])


@pytest.mark.parametrize("d,base,kw,exc,name", [
    (8, None, dict(rope_type="bogus"), ValueError, "rope_type"),
    (8, None, dict(rope_type="linear", factor="2"), TypeError, "factor"),
    (8, None, dict(rope_type="linear", factor=2.0, beta_fats=3), TypeError, "beta_fats"),
    (8, None, dict(rope_type="dynamic", factor=2.0), ValueError, "max_position_embeddings"),
    (8, None, dict(rope_type="llama3", factor=8.0, low_freq_factor=4.0, high_freq_factor=1.0,
                   original_max_position_embeddings=8192), ValueError, "high_freq_factor"),
    (8, None, dict(rope_type="yarn", factor=4.0), ValueError, "original_max_position_embeddings"),
    (8, None, dict(rope_type="yarn", original_max_position_embeddings=4096), ValueError, "factor"),
    # YaRN's ramp turned backwards (below 2 pi beta_slow positions, or so long that the slowest pair turns more than
    # beta_fast times): it would keep what YaRN divides (transformers computes it silently)
    *[(128, None, dict(rope_type="yarn", factor=4.0, original_max_position_embeddings=n, truncate=t), ValueError,
       "original_max_position_embeddings") for n, t in ((1, True), (6, False), (10**12, True))],
    (64, None, dict(YARN, beta_fast=1.0, beta_slow=8.0), ValueError, "beta_fast"),
    (64, None, dict(YARN, truncate="False"), TypeError, "truncate"),
    (128, None, dict(rope_type="ntk", factor=1e300), ValueError, "factor"),
    (64, 1.0, YARN, ValueError, "base"),
    *[(64, None, dict(YARN, beta_fast=b, beta_slow=b), ValueError, "beta_fast") for b in (1e-308, 1e308)],
    (64, None, dict(YARN, original_max_position_embeddings=10**400), ValueError, "original_max_position_embeddings"),
    (64, None, dict(YARN, factor=math.e, mscale=1.0, mscale_all_dim=-10.0), ValueError, "attention_factor"),
    (64, None, dict(YARN, beta_fast=0), ValueError, "beta_fast"),          # transformers' `or 32` would replace it
    (64, None, dict(YARN, mscale=float("nan"), mscale_all_dim=1.0), ValueError, "mscale"),
    (64, None, dict(YARN, mscale=1.0, mscale_all_dim=float("inf")), ValueError, "mscale_all_dim"),
    (64, None, dict(YARN, attention_factor=0.0), ValueError, "attention_factor"),
    (64, None, dict(YARN, factor=float("nan")), ValueError, "factor"),
    (64, None, dict(rope_type="linear", factor=True), TypeError, "factor"),
    (64, None, dict(rope_type="dynamic", factor=2.0, max_position_embeddings=2048.5), TypeError,
     "max_position_embeddings"),
    (16, None, dict(LONG, short_factor=[0.0] * 8, long_factor=[1.0] * 8), ValueError, "short_factor"),
    (16, None, dict(LONG, short_factor=[1.0] * 8, long_factor=[-2.0] * 8), ValueError, "long_factor"),
    (16, None, dict(LONG, short_factor=[1.0] * 3, long_factor=[1.0] * 8), ValueError, "short_factor"),
    (16, None, dict(LONG, original_max_position_embeddings=1, short_factor=[1] * 8, long_factor=[1] * 8), ValueError,
     "original_max_position_embeddings"),
    (16, None, dict(rope_type="linear", type="yarn", factor=2.0), ValueError, "type"),
    *[(16, None, dict(rope_type="dynamic", factor=2.0, max_position_embeddings=16, seq_len=n), ValueError, "seq_len")
      for n in (-3, 10**400)],
    (16, None, dict(rope_theta="10000"), TypeError, "rope_theta"),
    (16, 10000.0, dict(rope_theta=500.0), ValueError, "rope_theta"),
    (64, None, dict(rope_type="proportional", partial_rotary_factor=1.5), ValueError, "partial_rotary_factor"),
    (15, None, {}, ValueError, "d"),
])
def test_bad_input_is_named(d, base, kw, exc, name):
    with pytest.raises(exc, match=name):
        scaled_inv_freq(d, base, **kw)


def test_extreme_valid_values_stay_finite_and_inputs_untouched():
    for kw in (dict(rope_type="ntk", factor=1e5), dict(rope_type="linear", factor=1e-300),
               dict(YARN, factor=1e6), dict(rope_type="dynamic", factor=1e3, max_position_embeddings=16)):
        f, att = scaled_inv_freq(128, seq_len=10**20, **kw)        # beyond int64: a float64 length
        assert np.all(np.isfinite(f)) and np.all(f > 0) and math.isfinite(att) and att > 0, kw
    short, long_ = np.full(8, 2.0), [5.0] * 8
    f, _ = scaled_inv_freq(16, **LONG, short_factor=short, long_factor=long_)
    f[:] = 0
    assert np.all(short == 2.0) and long_ == [5.0] * 8
    np.testing.assert_allclose(rr.wavelengths([1.0, -0.5]), [2 * np.pi, 4 * np.pi])
    with pytest.raises(ValueError, match="freqs"):
        rr.wavelengths([1.0, 0.0])


# ---- the registry: one entry per method ------------------------------------------------------------------

def _every_other_pair_halved(d, base, seq_len, p):
    """Toy method: odd pairs' theta_i / toy_divisor (cites nothing: a test)."""
    freqs = rr.frequencies(d, base)
    freqs[1::2] /= p["toy_divisor"]
    return freqs


def test_adding_a_method_is_one_entry(monkeypatch):
    """One SCALING_METHODS entry is seen by scaled_inv_freq, from_hf_config and notebook 05's examples."""
    for name, method in scaling.SCALING_METHODS.items():
        if method.example is not None:
            f, att = scaled_inv_freq(64, rope_type=name, **method.example(4.0, 2048))
            assert f.shape == (32,) and np.all(f > 0) and att > 0, name
    config = {"model_type": "llama", "head_dim": 16, "rope_scaling": {"rope_type": "toy", "toy_divisor": 2.0}}
    want = rr.frequencies(16) / np.tile([1.0, 2.0], 4)
    with pytest.raises(TypeError, match="toy_divisor"):
        scaled_inv_freq(16, rope_type="toy", toy_divisor=2.0)
    with pytest.raises(ValueError, match="toy_divisor"):
        rr.from_hf_config(config)
    assert "toy" not in views.method_configs()
    monkeypatch.setitem(scaling.SCALING_METHODS, "toy", scaling.ScalingMethod(
        _every_other_pair_halved, required=(("toy_divisor",),), example=lambda factor, train_len: {"toy_divisor": 8}))
    np.testing.assert_array_equal(scaled_inv_freq(16, rope_type="toy", toy_divisor=2.0)[0], want)
    cfg = rr.from_hf_config(config)
    assert (cfg.rope_type, dict(cfg.params)) == ("toy", {"toy_divisor": 2.0})
    np.testing.assert_array_equal(cfg.inv_freq(), want)
    assert views.method_configs(8.0)["toy"] == {"toy_divisor": 8}
