"""The reports of assert_rope_matches and identify name what the kernel does (issue 21): the kernel's own
base, LongRoPE's factor set, only hints that apply, fn's own exceptions, aliasing, and config dicts with
their offset.  Each test below failed on the version before these reports (named in its comment)."""

import numpy as np
import pytest

import rope_ref as rr
from kernels import freqs64, neox

D = 16


def test_a_mismatched_base_names_the_kernels_base_not_the_expected_one():
    # before: "found base 500000, rope_type ntk {factor: 0.0226}" for a base-1e4 kernel
    with pytest.raises(AssertionError) as info:
        rr.assert_rope_matches(lambda x: neox(x, 5), D, base=500000.0, offset=5)
    report = str(info.value).split("\nidentified")[0]
    assert "found base 500000" not in report and "ntk" not in report
    assert "the kernel's frequencies follow base 10000" in report and "base left at 10^4?" in report


def longrope_params():
    short = np.linspace(1.0, 2.0, D // 2)
    return dict(short_factor=short.tolist(), long_factor=(4 * short).tolist(), original_max_position_embeddings=4096,
                factor=1.0)


def test_longrope_mismatch_says_which_factor_set_the_kernel_uses():
    # before: the short and long factors printed alike, and no word on which set the kernel uses
    p = longrope_params()
    short_freqs = freqs64(D) / np.array(p["short_factor"])
    with pytest.raises(AssertionError) as info:             # rows 5000.. are past 4096: long expected
        rr.assert_rope_matches(lambda x: neox(x, 5000, freqs=short_freqs), D, offset=5000, rope_type="longrope", **p)
    assert ("longrope: at length 5064 (last position + 1) the kernel uses short_factor; expected long_factor: "
            "the switch to long_factor is expected for lengths above original_max_position_embeddings = 4096"
            in str(info.value))
    rr.assert_rope_matches(lambda x: neox(x, 100, freqs=short_freqs), D, offset=100, rope_type="longrope", **p)


def test_no_q_k_hint_when_the_output_is_not_a_pair():
    # before: out.shape[1:] == x.shape fired "did fn return (q, k)?" for any (n, seq, d) output, e.g. seq == d
    with pytest.raises(ValueError, match="same shape") as info:
        rr.identify(lambda x: np.broadcast_to(x, (len(x),) + x.shape), D, seq=D)
    assert "(q, k)" not in str(info.value)
    with pytest.raises(ValueError, match=r"did fn return \(q, k\)"):
        rr.identify(lambda x: np.stack([neox(x), neox(x)]), D, seq=D)


def test_an_exception_inside_fn_is_reported_as_fn_raised_not_as_a_mismatch():
    # before: fn's AssertionError passed through assert_rope_matches as if it were a RoPE mismatch
    def kernel(x):
        assert np.any(x), "all-zero input"          # the kernel's own check; identify calls it with zeros
        return neox(x)
    with pytest.raises(RuntimeError, match="fn raised AssertionError: all-zero input") as info:
        rr.assert_rope_matches(kernel, D, base=10000.0, offset=0, pairing="interleaved")
    assert not isinstance(info.value, AssertionError)


def strided(x, stride=4):
    """A kernel whose rows are `stride` positions apart: pair 0 turns by 4 rad > pi per row."""
    return neox(x, freqs=stride * freqs64(D))


def test_angles_turning_more_than_pi_per_row_are_named_aliasing():
    # before: identify said "some pairs rotate clockwise: the sign of sin is flipped for them"
    spec = rr.identify(strided, D)
    assert any("aliasing" in n for n in spec.notes) and not any("clockwise: the sign" in n for n in spec.notes)
    with pytest.raises(AssertionError) as info:
        rr.assert_rope_matches(strided, D, inv_freq=4 * freqs64(D))
    report = str(info.value).split("\nidentified")[0]
    assert "more than pi rad per row" in report and "rows fewer positions apart" in report
    assert "clockwise" not in report.replace("not a clockwise", "")


def test_config_dict_is_accepted_and_row_0_must_be_position_0():
    # before: "config must be a RopeConfig", and with a RopeConfig no offset was checked
    cfg = {"model_type": "llama", "head_dim": D, "hidden_size": 4 * D, "num_attention_heads": 4, "rope_theta": 10000.0}
    rr.assert_rope_matches(lambda x: neox(x), config=cfg)
    with pytest.raises(AssertionError, match="offset: expected row 0 at position 0, found 3"):
        rr.assert_rope_matches(lambda x: neox(x, 3), config=cfg)
    with pytest.raises(AssertionError, match="offset: expected row 0 at position 0, found 3"):
        rr.assert_rope_matches(lambda x: neox(x, 3), config=rr.from_hf_config(cfg))
    rr.assert_rope_matches(lambda x: neox(x, 3), config=cfg, offset=3)
    rr.assert_rope_matches(lambda x: neox(x, 3), config=cfg, offset=None)    # skips the offset check


def test_summary_says_what_the_kernel_does_in_one_line():
    # expected words from the kernels' definitions: neox = half pairs, row r at offset + r, base 10^4
    assert rr.identify(lambda x: neox(x, 7), D).summary() == (
        "half-split pairs (i, i + d/2) on features 0..15, base 10000, row 0 at position 7, default")
    assert rr.identify(lambda x: rr.rotate(x, np.arange(len(x)) + 2.0, base=5e5), D).summary() == (
        "interleaved pairs (2i, 2i + 1) on features 0..15, base 500000, row 0 at position 2, default")
    assert rr.identify(lambda x: neox(x) + 1.0, D).summary().startswith("not a rotary embedding: fn(0) is not 0")


def step_frequencies(d, base, factor, length, beta):
    """Pairs whose wavelength 2 pi / theta exceeds length / beta divided by factor, the rest unchanged: the step
    llama3 gives with low_freq_factor == high_freq_factor == beta and YaRN with beta_fast == beta_slow == beta."""
    theta = freqs64(d, base)
    return np.where(2 * np.pi / theta > length / beta, theta / factor, theta)


def test_a_step_of_divided_pairs_names_llama3_and_yarn_alike():
    # before: one of the two named, nothing said of the other (Kimi-K2's YaRN reported as llama3)
    d, base, factor, length = 64, 50000.0, 32.0, 4096
    freqs = step_frequencies(d, base, factor, length, beta=1.0)
    assert 0 < np.sum(freqs != freqs64(d, base)) < d // 2          # a real step inside the spectrum
    spec = rr.identify(lambda x: neox(x, 0, freqs), d, max_rows=8192)
    named = {spec.rope_type: spec.rope_params, **dict(spec.also)}
    assert set(named) == {"llama3", "yarn"}, spec
    assert named["yarn"]["beta_fast"] == named["yarn"]["beta_slow"] == 1.0
    assert named["llama3"]["low_freq_factor"] == named["llama3"]["high_freq_factor"] == 1.0
    assert all(p["factor"] == factor and p["original_max_position_embeddings"] == length for p in named.values())
    assert any("rotations alone cannot tell them apart" in n for n in spec.notes)
    # assert_rope_matches compares the frequencies: the YaRN expectation passes on the same kernel
    rr.assert_rope_matches(lambda x: neox(x, 0, freqs), d, offset=0, base=base, rope_type="yarn", factor=factor,
                           original_max_position_embeddings=length, beta_fast=1.0, beta_slow=1.0, norm_scale=1.0,
                           max_rows=8192)


def test_a_llama3_ramp_names_one_method():
    d, base, factor, length, low, high = 64, 50000.0, 8.0, 4096, 1.0, 4.0
    theta = freqs64(d, base)
    wavelength = 2 * np.pi / theta
    smooth = np.clip((length / wavelength - low) / (high - low), 0, 1)        # Llama 3.1's ramp
    freqs = (1 - smooth) * theta / factor + smooth * theta
    spec = rr.identify(lambda x: neox(x, 0, freqs), d, max_rows=8192)
    assert (spec.rope_type, spec.also) == ("llama3", []), spec
    assert not any("also exactly" in n for n in spec.notes)
