"""Context-extension frequencies: the same numbers as HF transformers, and hand-derived limits."""

import json
import math
from pathlib import Path

import numpy as np
import pytest

import rope_ref as rr
from rope_ref.scaling import ROPE_TYPES, scaled_inv_freq

REF = json.loads((Path(__file__).parent / "data" / "hf_rope_reference.json").read_text())


@pytest.mark.parametrize("case", REF["cases"], ids=[c["label"] for c in REF["cases"]])
def test_matches_hf_transformers(case):
    """HF computes in float32, so agreement is to float32 precision."""
    params = dict(case["rope_parameters"])
    rope_type, base = params.pop("rope_type"), params.pop("rope_theta")
    params["max_position_embeddings"] = case["max_position_embeddings"]
    if rope_type in ("linear",):
        params.pop("max_position_embeddings")
    if rope_type in ("yarn", "longrope") and "factor" in params:
        params.pop("max_position_embeddings")   # factor given explicitly (HF v5 precedence)
    freqs, att = scaled_inv_freq(case["d"], base, rope_type=rope_type, seq_len=case["seq_len"], **params)
    np.testing.assert_allclose(freqs, case["inv_freq"], rtol=2e-6, err_msg=case["label"])
    assert math.isclose(att, case["attention_factor"], rel_tol=1e-6)


def test_default_and_linear_by_hand():
    f, a = scaled_inv_freq(8, 16.0)
    np.testing.assert_allclose(f, [1, 0.5, 0.25, 0.125])
    assert a == 1.0
    f, a = scaled_inv_freq(8, 16.0, rope_type="linear", factor=4.0)
    np.testing.assert_allclose(f, [0.25, 0.125, 0.0625, 0.03125])
    x = np.random.default_rng(0).standard_normal((10, 8))
    # Position interpolation: frequencies / 4 == positions / 4.
    np.testing.assert_allclose(rr.rotate(x, inv_freq=f, base=16.0), rr.rotate(x, np.arange(10) / 4, base=16.0), atol=1e-15)


def test_ntk_is_a_base_change():
    d, alpha = 64, 4.0
    f, _ = scaled_inv_freq(d, 10000.0, rope_type="ntk", factor=alpha)
    np.testing.assert_allclose(f, rr.frequencies(d, 10000.0 * alpha ** (d / (d - 2))), rtol=1e-14)
    # The lowest frequency is divided by exactly alpha; the highest (theta_0 = 1) is unchanged.
    assert f[0] == 1.0
    np.testing.assert_allclose(f[-1], rr.frequencies(d)[-1] / alpha, rtol=1e-12)


def test_dynamic_equals_default_within_training_length():
    kw = dict(rope_type="dynamic", factor=4.0, max_position_embeddings=2048)
    np.testing.assert_allclose(scaled_inv_freq(64, seq_len=1000, **kw)[0], rr.frequencies(64), rtol=1e-14)
    f, _ = scaled_inv_freq(64, seq_len=8192, **kw)     # L = 4 L_train: base * (4*4 - 3)^(d/(d-2))
    np.testing.assert_allclose(f, rr.frequencies(64, 10000.0 * 13 ** (64 / 62)), rtol=1e-14)


def test_yarn_limits_and_ramp():
    f, att = scaled_inv_freq(128, rope_type="yarn", factor=16.0, original_max_position_embeddings=4096)
    base = rr.frequencies(128)
    ratio = f / base
    assert ratio[0] == 1.0 and math.isclose(ratio[-1], 1 / 16)      # extrapolate fast, interpolate slow pairs
    assert np.all(np.diff(ratio) <= 1e-15)                           # monotone ramp between
    assert math.isclose(att, 0.1 * math.log(16) + 1)


@pytest.mark.parametrize("train_len,truncate", [(1, True), (6, False), (10**12, True), (10**12, False)])
def test_yarn_refuses_training_lengths_that_turn_its_ramp_backwards(train_len, truncate):
    """YaRN keeps the pairs turning more than beta_fast times in L_train and divides by factor those turning fewer
    than beta_slow times, with a ramp between pair dimensions d ln(L / (2 pi beta)) / (2 ln base).  Below 2 pi beta_slow
    positions (the fastest pair, theta_0 = 1, turns fewer than beta_slow times) or so long that even the slowest pair
    turns more than beta_fast times, the clipped ends cross: the formula would keep what YaRN divides and divide what
    it keeps (transformers computes it silently)."""
    with pytest.raises(ValueError, match=rf"original_max_position_embeddings={train_len} .* backwards, so it would "
                                         r"keep the frequencies YaRN divides by factor"):
        scaled_inv_freq(128, rope_type="yarn", factor=4.0, original_max_position_embeddings=train_len,
                        truncate=truncate)


def test_yarn_at_the_edges_of_its_range():
    """Just inside: 7 positions (> 2 pi) keep pair 0 and divide the rest; truncated, 6 positions too (rounded ends)."""
    for train_len, truncate in ((7, False), (6, True)):
        f, _ = scaled_inv_freq(128, rope_type="yarn", factor=4.0, original_max_position_embeddings=train_len,
                               truncate=truncate)
        np.testing.assert_allclose(f[1:], rr.frequencies(128)[1:] / 4, rtol=1e-12)


def test_llama3_three_bands():
    f, _ = scaled_inv_freq(128, 500000.0, rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                           high_freq_factor=4.0, original_max_position_embeddings=8192)
    base = rr.frequencies(128, 500000.0)
    wavelen = 2 * np.pi / base
    np.testing.assert_array_equal(f[wavelen < 8192 / 4], base[wavelen < 8192 / 4])
    np.testing.assert_allclose(f[wavelen > 8192], base[wavelen > 8192] / 8, rtol=1e-15)


def test_llama3_with_equal_band_factors_is_a_step():
    """Llama-4-Scout: low_freq_factor == high_freq_factor == 1.  transformers v5 only warns and computes it:
    pairs with wavelength > original_max_position_embeddings are divided by factor, the others kept."""
    f, _ = scaled_inv_freq(128, 500000.0, rope_type="llama3", factor=16.0, low_freq_factor=1.0,
                           high_freq_factor=1.0, original_max_position_embeddings=8192)
    base = rr.frequencies(128, 500000.0)
    long_wave = 2 * np.pi / base > 8192
    assert 0 < long_wave.sum() < 64
    np.testing.assert_array_equal(f, np.where(long_wave, base / 16, base))


def test_longrope_switches_factors_with_seq_len():
    short, long_ = np.full(8, 2.0), np.full(8, 5.0)
    kw = dict(rope_type="longrope", short_factor=short, long_factor=long_, factor=8.0,
              original_max_position_embeddings=1024)
    np.testing.assert_allclose(scaled_inv_freq(16, seq_len=100, **kw)[0], rr.frequencies(16) / 2)
    f, att = scaled_inv_freq(16, seq_len=5000, **kw)
    np.testing.assert_allclose(f, rr.frequencies(16) / 5)
    assert math.isclose(att, math.sqrt(1 + math.log(8) / math.log(1024)))


@pytest.mark.parametrize("rope_type,params,exc,words", [
    ("bogus", {}, ValueError, ["rope_type", "llama3", "yarn"]),
    ("linear", {}, ValueError, ["missing", "factor"]),
    ("linear", {"factor": 0.0}, ValueError, ["factor", "> 0"]),
    ("linear", {"factor": "2"}, TypeError, ["factor"]),
    ("linear", {"factor": 2.0, "beta_fats": 3}, TypeError, ["'beta_fats'", "did you mean 'beta_fast'"]),
    ("dynamic", {"factor": 2.0}, ValueError, ["max_position_embeddings"]),
    ("llama3", {"factor": 8.0}, ValueError, ["low_freq_factor", "high_freq_factor", "original_max_position_embeddings"]),
    ("llama3", {"factor": 8.0, "low_freq_factor": 4.0, "high_freq_factor": 1.0,
                "original_max_position_embeddings": 8192}, ValueError, ["high_freq_factor", "low_freq_factor"]),
    ("yarn", {"factor": 4.0}, ValueError, ["original_max_position_embeddings | max_position_embeddings"]),
    ("yarn", {"max_position_embeddings": 8192}, ValueError, ["factor", "original_max_position_embeddings"]),
    ("yarn", {"factor": 4.0, "max_position_embeddings": 4096, "beta_fast": 1.0, "beta_slow": 8.0},
     ValueError, ["beta_fast"]),
    ("longrope", {"short_factor": [1.0] * 3, "long_factor": [1.0] * 4, "factor": 2.0,
                  "max_position_embeddings": 10}, ValueError, ["short_factor", "(4,)"]),
])
def test_bad_configuration_is_named(rope_type, params, exc, words):
    with pytest.raises(exc) as info:
        scaled_inv_freq(8, rope_type=rope_type, **params)
    for w in words:
        assert w in str(info.value), (w, str(info.value))


def test_every_rope_type_has_a_reference_or_hand_test():
    covered = {c["rope_parameters"]["rope_type"] for c in REF["cases"]} | {"default", "ntk", "proportional"}
    assert covered == set(ROPE_TYPES)


def test_proportional_by_hand():
    """Gemma 4's full-attention layers (transformers' _compute_proportional_rope_parameters): d = 512, share 0.25:
    int(0.25 * 512 // 2) = 64 pairs turn at 1e6^(-2i/512) -- the exponent over the whole head -- the other 192 stand
    still; factor divides them all.  (Recorded against Gemma 4's own module in tests/test_hf_config.py.)"""
    f, att = scaled_inv_freq(512, 1e6, rope_type="proportional", partial_rotary_factor=0.25)
    i = np.arange(64)
    np.testing.assert_allclose(f[:64], 1e6 ** (-2.0 * i / 512), rtol=1e-15)
    assert f.shape == (256,) and np.all(f[64:] == 0) and att == 1.0
    g, _ = scaled_inv_freq(512, 1e6, rope_type="proportional", partial_rotary_factor=0.25, factor=2.0)
    np.testing.assert_allclose(g, f / 2, rtol=1e-15)
    h, _ = scaled_inv_freq(10, 1e4, rope_type="proportional", partial_rotary_factor=0.5)   # int(2.5) = 2 pairs
    assert np.count_nonzero(h) == 2
    with pytest.raises(ValueError, match="partial_rotary_factor"):
        scaled_inv_freq(64, rope_type="proportional", partial_rotary_factor=1.5)


# ---- published config sections, transformers v5 semantics --------------------------------------

def test_config_keys_a_method_does_not_use_are_ignored():
    f, _ = scaled_inv_freq(128, rope_type="linear", factor=4.0, max_position_embeddings=4096)
    np.testing.assert_allclose(f, rr.frequencies(128) / 4, rtol=1e-15)
    # A whole v5 rope_parameters section, rope_theta and partial_rotary_factor included.
    section = {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0, "low_freq_factor": 1.0,
               "high_freq_factor": 4.0, "original_max_position_embeddings": 8192, "partial_rotary_factor": 1.0}
    f, _ = scaled_inv_freq(128, **section)
    base = rr.frequencies(128, 500000.0)
    assert f[0] == base[0] and math.isclose(f[-1], base[-1] / 8, rel_tol=1e-14)


def test_v4_type_key_is_rope_type():
    a = scaled_inv_freq(64, type="yarn", factor=4.0, original_max_position_embeddings=4096)
    b = scaled_inv_freq(64, rope_type="yarn", factor=4.0, original_max_position_embeddings=4096)
    np.testing.assert_array_equal(a[0], b[0])
    assert a[1] == b[1]


def test_qwen25_yarn_uses_factor_4_as_transformers_v5():
    """Qwen2.5's published block: factor 4, original 32768, max 32768.  transformers v4 (4.4x-4.5x)
    replaced factor by max/original = 1; v5 uses the explicit factor (attention 0.1 ln 4 + 1)."""
    f, att = scaled_inv_freq(128, 1e6, type="yarn", factor=4.0, original_max_position_embeddings=32768,
                             max_position_embeddings=32768)
    assert math.isclose(att, 0.1 * math.log(4.0) + 1)
    ratio = f / rr.frequencies(128, 1e6)
    assert ratio[0] == 1.0 and math.isclose(ratio[-1], 1 / 4)


def test_factor_from_the_lengths_only_when_missing():
    f, att = scaled_inv_freq(64, rope_type="yarn", original_max_position_embeddings=4096,
                             max_position_embeddings=163840)                       # 163840 / 4096 = 40
    g, att40 = scaled_inv_freq(64, rope_type="yarn", factor=40.0, original_max_position_embeddings=4096)
    np.testing.assert_array_equal(f, g)
    assert att == att40 == 0.1 * math.log(40) + 1


def test_rope_theta_is_base():
    np.testing.assert_array_equal(scaled_inv_freq(16, rope_theta=500.0)[0], rr.frequencies(16, 500.0))
    with pytest.raises(ValueError, match="rope_theta"):
        scaled_inv_freq(16, 10000.0, rope_theta=500.0)


def test_beta_zero_is_refused_not_replaced():
    """transformers reads ``beta_fast or 32``: 0 silently becomes 32.  Here 0 is a bad value."""
    with pytest.raises(ValueError, match="beta_fast"):
        scaled_inv_freq(64, rope_type="yarn", factor=4.0, max_position_embeddings=4096, beta_fast=0)
    # None means "not given" (as a config's null), and takes the default.
    a = scaled_inv_freq(64, rope_type="yarn", factor=4.0, max_position_embeddings=4096, beta_fast=None)
    b = scaled_inv_freq(64, rope_type="yarn", factor=4.0, max_position_embeddings=4096, beta_fast=32.0)
    np.testing.assert_array_equal(a[0], b[0])


YARN = dict(rope_type="yarn", factor=4.0, max_position_embeddings=4096)
LONG = dict(rope_type="longrope", factor=8.0, original_max_position_embeddings=1024)


@pytest.mark.parametrize("d,base,kw,exc,name", [
    (64, None, dict(YARN, truncate="False"), TypeError, "truncate"),
    (64, None, dict(YARN, truncate=np.array([True, False])), TypeError, "truncate"),
    (128, None, dict(rope_type="ntk", factor=1e300), ValueError, "factor"),
    (128, None, dict(rope_type="dynamic", factor=1e300, max_position_embeddings=2048), ValueError, "factor"),
    (64, 1.0, YARN, ValueError, "base"),
    (64, None, dict(YARN, beta_fast=0), ValueError, "beta_fast"),
    (64, None, dict(YARN, beta_slow=-1.0), ValueError, "beta_slow"),
    (64, None, dict(YARN, mscale=float("nan"), mscale_all_dim=1.0), ValueError, "mscale"),
    (64, None, dict(YARN, mscale=1.0, mscale_all_dim=float("inf")), ValueError, "mscale_all_dim"),
    (64, None, dict(YARN, attention_factor=0.0), ValueError, "attention_factor"),
    (64, None, dict(YARN, attention_factor="1"), TypeError, "attention_factor"),
    (64, None, dict(YARN, factor=float("nan")), ValueError, "factor"),
    (64, None, dict(rope_type="linear", factor=1e-320), ValueError, "factor"),
    (64, None, dict(rope_type="linear", factor=True), TypeError, "factor"),
    (64, None, dict(rope_type="dynamic", factor=2.0, max_position_embeddings=0), ValueError, "max_position_embeddings"),
    (64, None, dict(rope_type="dynamic", factor=2.0, max_position_embeddings=2048.5), TypeError,
     "max_position_embeddings"),
    (16, None, dict(LONG, short_factor=[0.0] * 8, long_factor=[1.0] * 8), ValueError, "short_factor"),
    (16, None, dict(LONG, short_factor=[1.0] * 8, long_factor=[-2.0] * 8), ValueError, "long_factor"),
    (16, None, dict(LONG, short_factor=[1.0] * 7 + [float("inf")], long_factor=[1.0] * 8), ValueError, "short_factor"),
    (16, None, dict(LONG, short_factor="1.0", long_factor=[1.0] * 8), TypeError, "short_factor"),
    (16, None, dict(LONG, short_factor=[[1.0]] * 8, long_factor=[1.0] * 8), ValueError, "short_factor"),   # (8, 1)
    (16, None, dict(rope_type="yarn", typ="yarn"), TypeError, "typ"),
    (16, None, dict(rope_type="linear", type="yarn", factor=2.0), ValueError, "type"),
    (16, None, dict(rope_type="Yarn"), ValueError, "rope_type"),
    (16, None, dict(rope_type="linear", factor=2.0, seq_len=-3), ValueError, "seq_len"),
    (16, None, dict(rope_theta="10000"), TypeError, "rope_theta"),
    (15, None, {}, ValueError, "d"),
    (16, float("inf"), {}, ValueError, "base"),
])
def test_bad_input_catalogue(d, base, kw, exc, name):
    """Each bad input: the right error type, a message naming the argument, never NaN or inf."""
    with pytest.raises(exc) as info:
        scaled_inv_freq(d, base, **kw)
    assert name in str(info.value), str(info.value)


def test_extreme_but_valid_values_stay_finite():
    for kw in (dict(rope_type="ntk", factor=1e5), dict(rope_type="linear", factor=1e-300),
               dict(YARN, factor=1e6), dict(rope_type="dynamic", factor=1e3, max_position_embeddings=16)):
        f, att = scaled_inv_freq(128, seq_len=1 << 20, **kw)
        assert np.all(np.isfinite(f)) and np.all(f > 0) and math.isfinite(att) and att > 0, kw


def test_inputs_are_not_modified():
    short, long_ = np.full(8, 2.0), [5.0] * 8
    params = dict(LONG, short_factor=short, long_factor=long_)
    f, _ = scaled_inv_freq(16, **params)
    f[:] = 0
    assert np.all(short == 2.0) and long_ == [5.0] * 8 and params["rope_type"] == "longrope"


from hypothesis import given, settings, strategies as st  # noqa: E402

finite = st.floats(min_value=1e-300, max_value=1e300, allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(d=st.integers(1, 128).map(lambda n: 2 * n), base=st.floats(1.0001, 1e12), factor=finite,
       rope_type=st.sampled_from(["linear", "ntk", "dynamic", "yarn", "llama3"]),
       seq_len=st.none() | st.integers(1, 1 << 22))
def test_finite_input_gives_finite_frequencies_or_names_the_cause(d, base, factor, rope_type, seq_len):
    params = {"factor": factor, "max_position_embeddings": 4096, "original_max_position_embeddings": 4096,
              "low_freq_factor": 1.0, "high_freq_factor": 4.0}
    try:
        f, att = scaled_inv_freq(d, base, rope_type=rope_type, seq_len=seq_len, **params)
    except ValueError as err:
        assert "factor" in str(err), str(err)
        return
    assert f.shape == (d // 2,) and np.all(np.isfinite(f)) and np.all(f > 0) and math.isfinite(att) and att > 0


# ---- the registry: one entry per method ------------------------------------------------------------------

from rope_ref import scaling  # noqa: E402
from rope_ref.teaching import context_extension  # noqa: E402


def entry_problems(name, method):
    """What an entry of scaling.SCALING_METHODS lacks: a formula citing its source, keys in the schema's shape,
    an attention factor and example that run, candidates that scaled_inv_freq accepts."""
    problems = []
    doc = method.inv_freq.__doc__ or ""
    if not any(source in doc for source in ("arXiv:", "transformers'")):
        problems.append("inv_freq's docstring cites no paper (arXiv:) or transformers function")
    if not all(isinstance(alts, tuple) and alts and all(isinstance(k, str) for k in alts) for alts in method.required):
        problems.append(f"required must be tuples of alternative key names, got {method.required!r}")
    if not all(isinstance(k, str) for k in method.optional) or set(method.optional) & {"type", "rope_theta"}:
        problems.append(f"optional must be key names other than type and rope_theta, got {method.optional!r}")
    if method.attention_factor is not None and not callable(method.attention_factor):
        problems.append("attention_factor must be None or a function of the parameters")
    if method.example is not None:
        try:
            f, att = scaled_inv_freq(64, rope_type=name, **method.example(4.0, 2048))
            assert f.shape == (32,) and np.all(f > 0) and att > 0
        except Exception as err:   # noqa: BLE001 - any failure is the entry's problem
            problems.append(f"example(4.0, 2048) does not run: {err!r}")
    if method.candidates is not None:
        fit = scaling_fit()
        for rank, params in method.candidates(fit):
            if not isinstance(rank, tuple) or "base" not in params:
                problems.append(f"a candidate must be (rank tuple, params with 'base'), got {rank!r}, {params!r}")
                break
            params = dict(params)
            scaled_inv_freq(fit.r, params.pop("base"), rope_type=name, **params)
    return problems


def scaling_fit():
    """A FrequencyFit of Llama 3.1's frequencies (8x, 8192 positions), as identify's naming builds it."""
    from rope_ref.kernel_check.naming import FrequencyFit, log_fit
    theta, _ = scaled_inv_freq(64, 5e5, rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                               original_max_position_embeddings=8192)
    return FrequencyFit(64, 5e5, 5e5, np.full(32, 1e-9), log_fit(theta, 64, False)[0], log_fit(theta, 64, True),
                        (8.0,), (8192,))


@pytest.mark.parametrize("name", ROPE_TYPES)
def test_every_registry_entry_is_complete(name):
    assert entry_problems(name, scaling.SCALING_METHODS[name]) == []


def test_an_incomplete_entry_is_caught():
    """The completeness check can fail: an entry without a cited formula, with a bare key, a broken example."""
    def undocumented(d, base, seq_len, p):
        return rr.frequencies(d, base)
    broken = scaling.ScalingMethod(undocumented, required=("factor",), example=lambda factor, train_len: {"factr": 1})
    problems = entry_problems("default", broken)
    assert len(problems) == 3, problems


def _every_other_pair_halved(d, base, seq_len, p):
    """Toy method for the registry test: odd pairs' theta_i / toy_divisor (no paper; transformers' has none)."""
    freqs = rr.frequencies(d, base)
    freqs[1::2] /= _checked_divisor(p["toy_divisor"])
    return freqs


def _checked_divisor(x):
    if not x > 0:
        raise ValueError(f"toy_divisor must be > 0, got {x}")
    return float(x)


def _toy_candidates(fit):
    if fit.base_hint is not None:
        yield (5,), dict(base=fit.base_hint, toy_divisor=2.0)


TOY = scaling.ScalingMethod(_every_other_pair_halved, required=(("toy_divisor",),), candidates=_toy_candidates,
                            example=lambda factor, train_len: dict(toy_divisor=factor))


def test_adding_a_method_is_one_entry(monkeypatch):
    """One entry in SCALING_METHODS (restored after the test) is seen by scaled_inv_freq, from_hf_config's key
    check, identify's naming and notebook 05's examples; before it, each of them refuses or ignores the method."""
    config = {"model_type": "llama", "head_dim": 16, "rope_scaling": {"rope_type": "toy", "toy_divisor": 2.0}}
    d, base = 16, 10000.0
    want = rr.frequencies(d, base) / np.tile([1.0, 2.0], d // 4)

    def kernel(x):
        return rr.rotate(x, pairing="half", inv_freq=want)

    with pytest.raises(TypeError, match="toy_divisor"):
        scaled_inv_freq(d, base, rope_type="toy", toy_divisor=2.0)
    with pytest.raises(ValueError, match="toy_divisor"):
        rr.from_hf_config(config)
    assert rr.identify(kernel, d, base_hint=base).rope_type == "longrope"    # per-pair factors: the fallback
    assert "toy" not in context_extension.method_configs()

    monkeypatch.setitem(scaling.SCALING_METHODS, "toy", TOY)
    f, att = scaled_inv_freq(d, base, rope_type="toy", toy_divisor=2.0)
    np.testing.assert_array_equal(f, want)
    assert att == 1.0
    cfg = rr.from_hf_config(config)
    assert (cfg.rope_type, dict(cfg.params)) == ("toy", {"toy_divisor": 2.0})
    np.testing.assert_array_equal(cfg.inv_freq(), want)
    spec = rr.identify(kernel, d, base_hint=base)
    assert (spec.rope_type, spec.rope_params) == ("toy", {"base": base, "toy_divisor": 2.0})
    assert context_extension.method_configs(8.0)["toy"] == {"toy_divisor": 8.0}
