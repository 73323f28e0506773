"""identify(fn, d) on 1-D kernels transcribed from published rotary code (tests/kernels.py): what it measures (pairs,
rotated features, offset, precision, base, scaling method) and what it never makes up."""

import numpy as np
import pytest

import rope_ref as rr
from rope_ref import identify, scaled_inv_freq

from kernels import F32, gptj_rope, hf_cos_sin, hf_inv_freq, hf_rope, llama, meta_rope, neox

D = 64


@pytest.mark.parametrize("offset", [0, 7, 5000, pytest.param(65536, marks=pytest.mark.slow)])
@pytest.mark.parametrize("kernel,pairing,base", [(hf_rope, "half", 10000.0), (gptj_rope, "interleaved", 10000.0),
                                                  (meta_rope, "interleaved", 500000.0)],
                         ids=["hf_llama", "gptj", "meta_polar"])
def test_float32_kernels_at_decode_offsets(kernel, pairing, base, offset):
    s = identify(lambda x: kernel(x, offset, base=base), D)
    assert (s.pairing, s.rotary_dim, s.offset, s.rope_type, s.base) == (pairing, D, offset, "default", base), s
    assert s.angle_precision == "float32" and s.linear and s.geometric
    np.testing.assert_allclose(s.inv_freq, hf_inv_freq(D, base), rtol=3e-7)


@pytest.mark.slow
@pytest.mark.parametrize("offset,d", [(0, D), (1, 128), (10**6, D)])
def test_float64_kernels_up_to_a_million(offset, d):
    s = identify(lambda x: neox(x, offset), d)
    assert (s.offset, s.rope_type, s.angle_precision, s.base) == (offset, "default", "float64", 10000.0), s
    np.testing.assert_allclose(s.inv_freq, 1.0 / 10000.0 ** (np.arange(0, d, 2) / d), rtol=1e-12)
    assert identify(lambda x: llama(x, offset), d).pairing == "interleaved"


def test_partial_rotary_and_rotated_features_at_the_end():
    s = identify(lambda x: hf_rope(x, 5000, rotary_dim=16), D)
    assert (s.rotary_dim, s.rotary_start, s.pairing, s.offset, s.base) == (16, 0, "half", 5000, 10000.0), s

    one = identify(lambda x: rr.rotate(x, rotary_dim=2), 8)       # one pair turning by 1 rad a row: eq 15's theta_0
    assert (one.rotary_dim, one.rope_type, one.base) == (2, "default", 10000.0), one

    def last_half(x):                   # NeoX-style rotation of the last 32 of 64 features, in place
        y = x.astype(F32).copy()
        cos, sin = hf_cos_sin(len(x), 300, hf_inv_freq(32))
        q = y[:, 32:]
        y[:, 32:] = q * cos + np.concatenate([-q[:, 16:], q[:, :16]], axis=-1) * sin
        return y
    s = identify(last_half, D)
    assert (s.pairing, s.rotary_dim, s.rotary_start, s.output_pairing, s.offset) == ("half", 32, 32, None, 300), s


def deepseek_v3(x, offset=0, nope=128):
    """DeepseekV3's apply_rotary_pos_emb_interleave on the last 64 features: interleaved pairs, written half-split."""
    seq, d = x.shape
    r = d - nope
    cos, sin = hf_cos_sin(seq, offset, hf_inv_freq(r))
    cos, sin = cos[:, :r // 2], sin[:, :r // 2]
    q = x.astype(F32)
    q1, q2 = q[:, nope::2], q[:, nope + 1::2]
    return np.concatenate([q[:, :nope], q1 * cos - q2 * sin, q2 * cos + q1 * sin], axis=-1)


@pytest.mark.slow
def test_deepseek_interleave_then_half_on_the_last_features():
    s = identify(lambda x: deepseek_v3(x, 5000), 192)
    assert (s.pairing, s.rotary_dim, s.rotary_start, s.output_pairing) == ("interleaved", 64, 128, "half"), s
    assert (s.offset, s.rope_type, s.base, s.notes) == (5000, "default", 10000.0, []), s
    assert s.pairs[:2] == [(128, 129), (130, 131)] and s.output_pairs[:2] == [(128, 160), (129, 161)]
    rr.assert_rope_matches(lambda x: deepseek_v3(x, 5000), 192, pairing="interleaved", rotary_dim=64,
                           rotary_start=128, output_pairing="half", offset=5000, base=10000.0)


SCALED = [("linear", 10000.0, dict(factor=4.0)),
          ("yarn", 10000.0, dict(factor=16.0, original_max_position_embeddings=4096)),
          ("yarn", 1000000.0, dict(factor=4.0, original_max_position_embeddings=32768)),
          ("llama3", 500000.0, dict(factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                                    original_max_position_embeddings=8192)),
          ("llama3", 5e5, dict(factor=8, low_freq_factor=1, high_freq_factor=1, original_max_position_embeddings=8192))]


@pytest.mark.slow
@pytest.mark.parametrize("rope_type,base,params", SCALED, ids=["linear", "yarn", "yarn_qwen", "llama3", "step"])
def test_scaling_methods_that_reproduce_the_frequencies_are_named(rope_type, base, params):
    freqs, att = scaled_inv_freq(D, base, rope_type=rope_type, **params)
    fn = lambda x: hf_rope(x, 5000, inv_freq=freqs, attention_scaling=att)  # noqa: E731
    s = identify(fn, D)
    step = params.get("low_freq_factor") == params.get("high_freq_factor") == 1     # Llama 3's step: YaRN's too
    assert (s.rope_type, s.offset, s.base, [t for t, _ in s.also]) == (rope_type, 5000, base, ["yarn"] * step), s
    assert all(s.rope_params[k] == pytest.approx(v, rel=1e-4) for k, v in params.items()), s.rope_params
    assert s.norm_scale == pytest.approx(att, rel=1e-6) and "attention_factor" not in s.rope_params
    rr.assert_rope_matches(fn, D, base=base, rope_type=rope_type, offset=5000, pairing="half", **params)


@pytest.mark.slow
def test_ntk_against_a_base_hint_and_custom_frequencies():
    freqs, _ = scaled_inv_freq(D, 10000.0, rope_type="ntk", factor=4.0)
    s = identify(lambda x: hf_rope(x, 5000, inv_freq=freqs), D, base_hint=10000.0)
    assert s.rope_type == "ntk" and s.rope_params["factor"] == pytest.approx(4.0, rel=1e-4), s
    wobble = 1 + 1e-3 * np.random.default_rng(3).standard_normal(D // 2)       # no published method
    s = identify(lambda x: hf_rope(x, 5000, inv_freq=hf_inv_freq(D) * wobble), D)
    assert (s.rope_type, s.geometric, s.base, s.offset) == ("custom", False, None, 5000), s
    assert any("not a geometric family" in n for n in s.notes)


@pytest.mark.slow
def test_random_angles_are_not_a_linear_family_and_no_known_defect():
    angles = np.random.default_rng(0).uniform(-np.pi, np.pi, (4096, D // 2))

    def fn(x):                          # flash-attention's tests drive kernels with random angle tables
        c, s = np.cos(angles[:len(x)]), np.sin(angles[:len(x)])
        return np.concatenate([x[:, :D // 2] * c - x[:, D // 2:] * s, x[:, :D // 2] * s + x[:, D // 2:] * c], 1)
    s = identify(fn, D)
    assert s.is_rope and (s.linear, s.base, s.offset, s.rope_type) == (False, None, None, None), s
    assert "not a linear/geometric family" in s.summary()
    with pytest.raises(rr.kernel_check.RopeMismatch) as info:
        rr.assert_rope_matches(fn, D, base=1e4)
    assert info.value.defects == [] and "no known defect explains" in info.value.problems[-1]


@pytest.mark.filterwarnings("error")
def test_a_kernel_with_the_same_angles_in_every_row_ignores_the_positions():
    s = identify(lambda x: rr.rotate(x, np.full(len(x), 5.0)), D)
    assert s.is_rope and s.linear is False and "ignores the positions" in s.notes[-1], s
    with pytest.raises(rr.kernel_check.RopeMismatch, match="rotary_dim: expected 8, found 64\n  no known"):  # all
        rr.assert_rope_matches(lambda x: neox(x), D, inv_freq=np.ones(4))      # that differs, and nothing that does not


def test_angles_computed_in_16_bits_are_measured_as_such():
    s = identify(lambda x: neox(x, 0, angle_dtype=np.float16), D, max_rows=np.int64(64))     # numpy's ints too
    assert s.angle_precision in ("float16", "bfloat16") and s.rope_type is None, s


@pytest.mark.slow
def test_frequencies_that_depend_on_the_length_are_noted_and_checked_as_dynamic():
    def hf_dynamic(x, offset=4000, factor=2.0, trained=4096):
        """HF dynamic NTK: past the trained length the base grows with the length of the call."""
        length, base = offset + len(x), 10000.0
        if length > trained:
            base *= (factor * length / trained - (factor - 1)) ** (D / (D - 2))
        return hf_rope(x, offset, base=base)
    s = identify(hf_dynamic, D)
    assert s.rows == 64 and s.offset == 4000, s          # measured on the first call's rows
    rr.assert_rope_matches(hf_dynamic, D, rope_type="dynamic", factor=2.0, max_position_embeddings=4096,
                           offset=4000)


@pytest.mark.parametrize("fn,words", [
    (lambda x: x + 1.0, "not 0"),
    (lambda x: x * np.abs(x), "not linear"),
    (lambda x: np.roll(x, 1, axis=0), "other rows"),
    (lambda x: np.concatenate([x[:, 1::2], x[:, 0::2]], axis=1), "mixes"),
    (lambda x: x * 2.0, "scaled"),
    (lambda x: x.copy(), "no pair"),
    (lambda x: neox(x) * (1 + 0.01 * np.maximum(np.arange(len(x)) - 63, 0))[:, None], "norm"),     # beyond row 63
], ids=["bias", "nonlinear", "rows", "permutation", "scale", "identity", "norm_grows"])
def test_not_a_rotary_embedding_is_said_plainly(fn, words):
    s = identify(fn, 16)
    assert not s.is_rope and words in s.reason, s.reason


@pytest.mark.slow
def test_a_kernel_that_keeps_state_is_refused():
    calls = []

    def fn(x):                          # the position advances with every call
        calls.append(1)
        return neox(x, len(calls))
    with pytest.raises(ValueError, match="inputs alone"):
        identify(fn, 16)


@pytest.mark.parametrize("kw,err,name", [(dict(fn=None), TypeError, "fn"), (dict(d=7), ValueError, "d"),
                                         (dict(seq=0), ValueError, "seq"), (dict(seed=-1), ValueError, "seed"),
                                         (dict(max_rows=8), ValueError, "max_rows"),
                                         (dict(base_hint="x"), TypeError, "base_hint")])
def test_bad_arguments_are_refused_by_name(kw, err, name):
    args = {"fn": lambda x: neox(x), "d": 16, **kw}
    with pytest.raises(err, match=name):
        identify(args.pop("fn"), args.pop("d"), **args)


def test_an_unknown_keyword_is_refused_by_identify_and_a_backward_that_is_not_rope_is_named_the_backward():
    with pytest.raises(TypeError, match=r"identify\(\).*bogus"):     # identify's name, not an internal function's
        identify(lambda x: neox(x), 8, bogus=1)
    with pytest.raises(AssertionError, match="backward"):     # RopeMismatch
        rr.assert_rope_grad_matches(lambda x, g: g[:, ::-1], 8)


@pytest.mark.parametrize("back,err", [(lambda x: x[:, :4], ValueError), (lambda x: x * np.nan, ValueError),
                                      (lambda x: np.array(["a"] * x.size).reshape(x.shape), TypeError)])
def test_bad_output_is_an_error_naming_fn(back, err):
    with pytest.raises(err, match="fn"):
        identify(back, 16)


@pytest.mark.slow
def test_output_of_any_array_type_and_an_exception_inside_fn():
    s = identify(lambda x: neox(x, 3).astype(F32).tolist(), 16)
    assert s.offset == 3 and s.angle_precision == "float32"

    def fn(x):
        raise RuntimeError("device lost")
    with pytest.raises(RuntimeError, match="device lost") as info:
        identify(fn, 16)
    assert "random input a" in "".join(getattr(info.value, "__notes__", []))
