"""identify / assert_rope_matches on RoPE kernels written here, in both pairings, with planted bugs."""

import math

import numpy as np
import pytest

from rope_ref.kernel_check import assert_rope_matches, identify
from rope_ref.scaling import scaled_inv_freq

from kernels import freqs64, llama, neox

D = 64


@pytest.mark.slow
@pytest.mark.parametrize("offset", [0, 7, 1000])
def test_identifies_neox_and_llama(offset):
    s = identify(lambda x: neox(x, offset=offset), D)
    assert (s.is_rope, s.pairing, s.rotary_dim, s.rope_type) == (True, "half", D, "default")
    assert s.pairs[:2] == [(0, 32), (1, 33)]
    assert math.isclose(s.base, 10000.0, rel_tol=1e-9) and s.offset == offset
    np.testing.assert_allclose(s.inv_freq, freqs64(D), rtol=1e-9)
    s = identify(lambda x: llama(x, offset=offset), D)
    assert (s.pairing, s.offset, s.rope_type, s.norm_scale) == ("interleaved", offset, "default", pytest.approx(1.0))
    assert_rope_matches(lambda x: llama(x, offset=offset), D, pairing="interleaved", base=10000.0,
                        offset=offset, rotary_dim=D, rope_type="default", norm_scale=1.0)


def test_partial_rotary_and_other_base():
    fn = lambda x: neox(x, rotary_dim=16, freqs=freqs64(16, 500000.0))  # noqa: E731
    s = identify(fn, D)
    assert (s.rotary_dim, s.pairing) == (16, "half")
    assert math.isclose(s.base, 500000.0, rel_tol=1e-9)
    assert_rope_matches(fn, D, rotary_dim=16, base=500000.0, pairing="half")


SCALINGS = [
    ("linear", dict(factor=4.0)),
    ("llama3", dict(factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_max_position_embeddings=8192)),
    ("yarn", dict(factor=16.0, original_max_position_embeddings=4096)),
]


@pytest.mark.parametrize("rope_type,params", SCALINGS, ids=[s[0] for s in SCALINGS])
def test_identifies_scaling_methods(rope_type, params):
    base = 500000.0 if rope_type == "llama3" else 10000.0
    freqs, att = scaled_inv_freq(D, base, rope_type=rope_type, **params)
    fn = lambda x: neox(x, freqs=freqs, scale=att)  # noqa: E731
    s = identify(fn, D)
    assert s.rope_type == rope_type
    assert math.isclose(s.rope_params["factor"], params["factor"], rel_tol=1e-9)
    assert math.isclose(s.norm_scale, att, rel_tol=1e-9)
    if "original_max_position_embeddings" in params:
        assert s.rope_params["original_max_position_embeddings"] == params["original_max_position_embeddings"]
    assert_rope_matches(fn, D, base=base, rope_type=rope_type, pairing="half", **params)


def test_ntk_reported_against_a_base_hint():
    freqs, _ = scaled_inv_freq(D, 10000.0, rope_type="ntk", factor=4.0)
    s = identify(lambda x: neox(x, freqs=freqs), D, base_hint=10000.0)
    assert s.rope_type == "ntk" and math.isclose(s.rope_params["factor"], 4.0, rel_tol=1e-9)
    assert_rope_matches(lambda x: neox(x, freqs=freqs), D, base=10000.0, rope_type="ntk", factor=4.0)


def test_identifies_dynamic_as_a_base_change():
    freqs, _ = scaled_inv_freq(D, rope_type="dynamic", seq_len=8192, factor=2.0, max_position_embeddings=4096)
    fn = lambda x: llama(x, freqs=freqs)  # noqa: E731
    s = identify(fn, D, base_hint=10000.0)
    assert s.rope_type == "ntk"   # dynamic NTK at a given length is a static base change


# ---- planted bugs -----------------------------------------------------------------------------

def _raises(fn, words, **expected):
    with pytest.raises(AssertionError) as info:
        assert_rope_matches(fn, D, **expected)
    msg = str(info.value)
    for w in words:
        assert w in msg, f"{w!r} not in:\n{msg}"
    return msg


def test_bug_wrong_pairing_is_named():
    _raises(lambda x: neox(x), ["pairing: expected interleaved, found half", "(0, 32)"],
            pairing="interleaved", base=10000.0)


def test_bug_wrong_sign():
    s = identify(lambda x: neox(x, sign=-1.0), D)
    assert s.is_rope and np.all(s.inv_freq < 0) and any("clockwise" in n for n in s.notes)
    _raises(lambda x: neox(x, sign=-1.0), ["frequencies", "sign flipped"], base=10000.0, pairing="half")


def test_bug_theta_indexed_from_one():
    fn = lambda x: llama(x, freqs=freqs64(D, start=2))  # noqa: E731
    s = identify(fn, D)
    assert any("indexed from 1" in n for n in s.notes)
    _raises(fn, ["frequencies", "pair 0 expected 1, found 0.7498", "indexed from 1"], base=10000.0)


def test_bug_positions_off_by_one():
    _raises(lambda x: llama(x, offset=1), ["offset: expected row 0 at position 0, found 1",
                                                   "off by one"], offset=0, base=10000.0)


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_bug_angles_in_low_precision(dtype):
    fn = lambda x: neox(x, angle_dtype=dtype)  # noqa: E731
    s = identify(fn, D)
    assert s.is_rope
    if dtype == np.float16:
        assert s.phase_error > 1e-3
        _raises(fn, ["angle precision", "float32 or better"], pairing="half")
    else:   # float32 angles at positions < 64 are fine to 1e-5 rad
        assert s.phase_error < 1e-5
        assert_rope_matches(fn, D, pairing="half", base=10000.0)


def test_bug_missing_attention_factor():
    freqs, att = scaled_inv_freq(D, rope_type="yarn", factor=16.0, original_max_position_embeddings=4096)
    _raises(lambda x: neox(x, freqs=freqs), ["norm_scale: expected 1.27726, found 1"],
            rope_type="yarn", factor=16.0, original_max_position_embeddings=4096)


@pytest.mark.parametrize("fn,words", [
    (np.tanh, "not linear"),
    (lambda x: x[::-1].copy(), "depends on other rows"),
    (lambda x: x @ np.random.default_rng(0).standard_normal((D, D)), "mixes with features"),
    (lambda x: x * (np.abs(x.sum(axis=1, keepdims=True)) + 1), "not linear"),
    (lambda x: x * np.arange(1, x.shape[0] + 1)[:, None], "scaled"),
    (lambda x: np.concatenate([x[:, 1::2], x[:, 0::2]], axis=1), "mixes"),
    (lambda x: x.copy(), "no pair"),
])
def test_not_a_rotary_embedding_is_said_plainly(fn, words):
    s = identify(fn, D)
    assert not s.is_rope and words in s.reason, s.reason
    with pytest.raises(AssertionError, match="not a rotary embedding"):
        assert_rope_matches(fn, D)


def test_fn_with_wrong_output_shape_is_an_error():
    with pytest.raises(ValueError, match="same shape"):
        identify(lambda x: x[:, :4], D)
