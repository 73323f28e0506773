"""identify / assert_rope_matches on the kernel forms the audit (tests/data/audit_identify.py) got wrong.

Each kernel is a NumPy transcription of real model code, float32 (or bfloat16 / float16 through
ml_dtypes, rounding after every operation as torch does) where the model computes in that type;
expected values come from the kernels' own parameters, never from identify's output.
"""

import ml_dtypes
import numpy as np
import pytest

from rope_ref import assert_rope_matches, identify, scaled_inv_freq

from kernels import hf_cos_sin, hf_inv_freq, rotate_half

F32 = np.float32
BF16 = ml_dtypes.bfloat16


# ---- DeepSeek-V3: interleaved pairs written in half layout, on the last 64 features -----------------

def deepseek_v3(x, offset=0, nope=128, base=10000.0, inv=None, scale=1.0):
    """DeepseekV3Attention: q_pass, q_rot = split(q, [qk_nope_head_dim, qk_rope_head_dim]);
    apply_rotary_pos_emb_interleave: cos/sin = first half of cat(freqs, freqs); q1, q2 = q[0::2], q[1::2];
    cat([q1 cos - q2 sin, q2 cos + q1 sin]); query = cat(q_pass, q_rot)."""
    seq, d = x.shape
    r = d - nope
    cos, sin = hf_cos_sin(seq, offset, hf_inv_freq(r, base) if inv is None else np.asarray(inv, F32))
    cos, sin = cos[:, : r // 2] * F32(scale), sin[:, : r // 2] * F32(scale)
    q = x.astype(F32)
    q_pass, q_rot = q[:, :nope], q[:, nope:]
    q1, q2 = q_rot[:, 0::2], q_rot[:, 1::2]
    return np.concatenate([q_pass, q1 * cos - q2 * sin, q2 * cos + q1 * sin], axis=-1)


@pytest.mark.slow
@pytest.mark.parametrize("offset", [0, 5000])
def test_deepseek_interleave_then_half_on_the_last_features(offset):
    # The audit: "not a rotary embedding: feature 128 mixes with features [129, 160]".
    fn = lambda x: deepseek_v3(x, offset)  # noqa: E731
    s = identify(fn, 192)
    assert s.is_rope, s.reason
    assert (s.pairing, s.rotary_dim, s.rotary_start, s.output_pairing) == ("interleaved", 64, 128, "half"), str(s)
    assert (s.offset, s.rope_type, s.base) == (offset, "default", 10000.0), str(s)
    # pair (128 + 2p, 129 + 2p) is written to features (128 + p, 160 + p), as the code above says
    assert s.pairs[:2] == [(128, 129), (130, 131)] and s.output_pairs[:2] == [(128, 160), (129, 161)]
    np.testing.assert_allclose(s.inv_freq, hf_inv_freq(64), rtol=3e-7)
    assert "rotary_start=128 output_pairing=half" in str(s)
    assert_rope_matches(fn, 192, pairing="interleaved", rotary_dim=64, rotary_start=128, output_pairing="half",
                        offset=offset, base=10000.0, rope_type="default")
    # expectations that leave them out (leading features, written in place) are told what differs
    with pytest.raises(AssertionError) as info:
        assert_rope_matches(fn, 192, pairing="interleaved", rotary_dim=64, offset=offset, base=10000.0)
    msg = str(info.value)
    assert "rotary_start: expected rotated features from 0, found 128..191" in msg, msg
    assert "output_pairing: expected pairs written in place, found half ((128, 129)->(128, 160)" in msg, msg
    problems = msg.split("\nidentified:")[0]
    assert "frequencies" not in problems and "offset:" not in problems, msg


@pytest.mark.slow
def test_deepseek_yarn_with_mscale_folded_into_cos_sin():
    params = dict(factor=40.0, original_max_position_embeddings=4096, beta_fast=32.0, beta_slow=1.0, mscale=1.0,
                  mscale_all_dim=1.0)
    freqs, att = scaled_inv_freq(64, 10000.0, rope_type="yarn", **params)
    fn = lambda x: deepseek_v3(x, 5000, inv=freqs, scale=att)  # noqa: E731
    s = identify(fn, 192)
    assert (s.rope_type, s.offset, s.rotary_start, s.output_pairing) == ("yarn", 5000, 128, "half"), str(s)
    assert s.norm_scale == pytest.approx(att, rel=1e-6)
    assert_rope_matches(fn, 192, rotary_start=128, output_pairing="half", offset=5000, base=10000.0,
                        rope_type="yarn", **params)


def test_rotated_features_at_the_end_in_place_are_named_not_other():
    """A NeoX-style half rotation of the last 32 of 64 features, written in place."""
    def fn(x):
        y = x.astype(F32).copy()
        cos, sin = hf_cos_sin(len(x), 300, hf_inv_freq(32))
        q = y[:, 32:]
        y[:, 32:] = q * cos + np.concatenate([-q[:, 16:], q[:, :16]], axis=-1) * sin
        return y
    s = identify(fn, 64)
    assert (s.pairing, s.rotary_dim, s.rotary_start, s.output_pairing, s.offset) == ("half", 32, 32, None, 300), str(s)
    assert_rope_matches(fn, 64, pairing="half", rotary_dim=32, rotary_start=32, offset=300, base=10000.0)
    with pytest.raises(AssertionError, match="rotary_start: expected rotated features from 0, found 32..63"):
        assert_rope_matches(fn, 64, pairing="half", rotary_dim=32)


def test_a_pure_permutation_is_still_not_a_rotation():
    s = identify(lambda x: np.concatenate([x[:, 1::2], x[:, 0::2]], axis=1), 16)
    assert not s.is_rope and "mixes" in s.reason, s.reason


# ---- bfloat16 / float16 models: float32 angles, cos/sin and q rounded to 16 bits ---------------------

def hf_llama_16bit(x, offset=0, dtype=BF16, inv=None):
    """HF Llama in a bfloat16 model: cos/sin from float32 angles, `.to(x.dtype)`; q * cos + rotate_half(q) * sin
    in bfloat16, each product and the sum rounded (torch computes bf16 ops in float32 and rounds)."""
    seq, d = x.shape
    cos, sin = hf_cos_sin(seq, offset, hf_inv_freq(d) if inv is None else np.asarray(inv, F32), dtype)
    q = x.astype(dtype)
    rot = np.concatenate([-q[:, d // 2:], q[:, :d // 2]], axis=-1)
    return ((q * cos).astype(dtype) + (rot * sin).astype(dtype)).astype(dtype)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [BF16, np.float16], ids=["bfloat16", "float16"])
@pytest.mark.parametrize("offset", [0, 5000, 65535])
def test_16bit_cos_sin_is_a_rotary_embedding_at_its_offset(dtype, offset):
    # The audit: bfloat16 kernels were "not linear" (rounding 0.021 > 0.02 of the largest output), and
    # float16 ones at 5000 were given offset 5001.2 +- 130 with 600 "ambiguous" offsets.
    fn = lambda x: hf_llama_16bit(x, offset, dtype)  # noqa: E731
    s = identify(fn, 128)
    assert s.is_rope, s.reason
    assert (s.pairing, s.offset, s.rope_type, s.base) == ("half", offset, "default", 10000.0), str(s)
    assert s.output_rounded and s.angle_precision == "float32 (cos/sin 16-bit)", str(s)
    assert any("cos/sin or the output rounded to a 16-bit type" in n for n in s.notes), s.notes
    assert s.phase_error < 8 * 2.0**-8                     # a few bfloat16 roundings of cos/sin, not of the angle
    spec = assert_rope_matches(fn, 128, pairing="half", offset=offset, base=10000.0, phase_atol=0.05)
    assert spec.norm_scale == pytest.approx(1.0, abs=1e-3)
    with pytest.raises(AssertionError) as info:
        assert_rope_matches(fn, 128, pairing="half", offset=offset, base=10000.0)
    msg = str(info.value)
    assert "angle precision" in msg and "cos.to(x.dtype)" in msg and "phase_atol" in msg, msg
    assert "compute angles in float32" not in msg, msg


def test_16bit_cos_sin_with_llama3_frequencies():
    freqs, _ = scaled_inv_freq(128, 500000.0, rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                               high_freq_factor=4.0, original_max_position_embeddings=8192)
    s = identify(lambda x: hf_llama_16bit(x, 5000, np.float16, inv=freqs), 128)
    assert (s.rope_type, s.offset, s.base) == ("llama3", 5000, 500000.0), str(s)
    assert s.rope_params["factor"] == pytest.approx(8.0, rel=1e-4)


def test_angles_computed_in_float16_are_still_told_apart():
    """Angles rounded to float16 (norm exact): errors grow with the position; "compute angles in float32"."""
    def fn(x):
        ang = (np.arange(len(x)) + 100).astype(np.float16)[:, None] * hf_inv_freq(64).astype(np.float16)
        emb = np.concatenate([ang, ang], axis=-1).astype(F32)
        return x * np.cos(emb) + rotate_half(x) * np.sin(emb)
    s = identify(fn, 64)
    assert not s.output_rounded and s.rope_type is None, str(s)
    with pytest.raises(AssertionError, match="compute angles in float32 or better"):
        assert_rope_matches(fn, 64, base=10000.0)


# ---- not RoPE: an added position embedding is named ------------------------------------------------

@pytest.mark.parametrize("scale", [1.0, 0.02])
def test_added_position_embedding_is_named(scale):
    """GPT-2's learned wpe (entries ~0.02..0.2) added to x: affine, not linear: fn(0) != 0."""
    wpe = scale * np.random.default_rng(0).standard_normal((64, 32))
    s = identify(lambda x: x + wpe[: len(x)], 32)
    assert not s.is_rope and "fn(0) is not 0" in s.reason and "position embedding" in s.reason, s.reason


def test_nonlinear_is_still_not_linear():
    s = identify(np.tanh, 32)
    assert not s.is_rope and "not linear" in s.reason, s.reason


# ---- calling it wrongly: the messages say what to do ----------------------------------------------

def test_kernel_for_another_width_or_layout_gets_a_hint():
    cos, sin = hf_cos_sin(64, 0, hf_inv_freq(128))

    def fn(x):                                  # a d=128 kernel
        return x * cos + np.concatenate([-x[:, 64:], x[:, :64]], axis=-1) * sin
    with pytest.raises(ValueError) as info:
        identify(fn, 64)
    note = info.value.__notes__[0]
    assert "shape (64, 64)" in note and "is d=64 the width fn rotates?" in note, note
    assert "kernel(torch.from_numpy(x)[None, None])[0, 0]" in note, note


def test_kernel_with_a_short_cache_is_told_about_max_rows():
    cos, sin = hf_cos_sin(3000, 0, hf_inv_freq(32))

    def fn(x):                                  # a cos/sin cache of 3000 positions, read at 2000
        c, s = cos[2000:2000 + len(x)], sin[2000:2000 + len(x)]
        return x * c + np.concatenate([-x[:, 16:], x[:, :16]], axis=-1) * s
    with pytest.raises(ValueError) as info:
        identify(fn, 32)
    assert "pass max_rows=" in info.value.__notes__[0], info.value.__notes__
    assert identify(fn, 32, max_rows=1000).offset == 2000


@pytest.mark.parametrize("back,words", [
    (lambda x: x[None, None], "drop its batch and head axes"),
    (lambda x: np.stack([x, x]), "did fn return (q, k)?"),
])
def test_output_of_the_wrong_shape_says_what_to_fix(back, words):
    with pytest.raises(ValueError, match="same shape") as info:
        identify(back, 16)
    assert words in str(info.value)


@pytest.mark.parametrize("kw,err,words", [
    (dict(rotary_start=-1), ValueError, "rotary_start"),
    (dict(rotary_start=1.5), TypeError, "rotary_start must be a non-negative integer"),
    (dict(output_pairing="halff"), ValueError, "did you mean 'half'"),
])
def test_new_expectations_are_checked(kw, err, words):
    with pytest.raises(err, match=words):
        assert_rope_matches(lambda x: x, 16, **kw)


# ---- fn must depend on x alone -------------------------------------------------------------------

class HFDynamicModule:
    """transformers' dynamic NTK rotary module used as one object: dynamic_frequency_update recomputes
    inv_freq when seq_len = max(position_ids) + 1 exceeds max_seq_len_cached and then keeps it."""

    def __init__(self, offset, d=64, base=10000.0, factor=2.0, max_position_embeddings=2048):
        self.offset, self.d, self.base, self.factor, self.train = offset, d, base, factor, max_position_embeddings
        self.cached, self.inv = max_position_embeddings, hf_inv_freq(d, base)

    def __call__(self, x):
        seq_len = self.offset + len(x)
        if seq_len > self.cached:                          # growth; never shrinks while above the trained length
            base = self.base * (self.factor * seq_len / self.train - (self.factor - 1)) ** (self.d / (self.d - 2))
            self.inv, self.cached = hf_inv_freq(self.d, base), seq_len
        cos, sin = hf_cos_sin(len(x), self.offset, self.inv)
        q = x.astype(F32)
        return q * cos + np.concatenate([-q[:, self.d // 2:], q[:, :self.d // 2]], axis=-1) * sin


def test_a_module_that_keeps_the_longest_length_is_said_to_keep_state():
    # The audit: one transformers dynamic module was "custom, no dynamic NTK factor ... reproduce the
    # frequencies", with no word that the third length was measured with the second length's frequencies.
    s = identify(HFDynamicModule(5000), 64, base_hint=10000.0)
    assert s.stateful and any("keeps state between calls" in n and "fresh rotary module" in n for n in s.notes), s
    with pytest.raises(AssertionError, match="state: fn keeps state between calls"):
        assert_rope_matches(HFDynamicModule(5000), 64, base=10000.0, rope_type="dynamic", factor=2.0,
                            max_position_embeddings=2048, offset=5000)
    # a fresh module per call is a function of x: dynamic, named with its parameters
    s = identify(lambda x: HFDynamicModule(5000)(x), 64, base_hint=10000.0)
    assert not s.stateful and s.rope_type == "dynamic", str(s)
    assert (s.rope_params["factor"], s.rope_params["max_position_embeddings"]) == (2.0, 2048), str(s)


def test_a_kernel_whose_position_advances_every_call_is_refused():
    # The audit: such a kernel was "not linear" (each call saw other positions).
    pos = [0]

    def decode(x):
        cos, sin = hf_cos_sin(len(x), pos[0], hf_inv_freq(32))
        pos[0] += len(x)
        return x * cos + np.concatenate([-x[:, 16:], x[:, :16]], axis=-1) * sin
    with pytest.raises(ValueError, match="fn must depend on x alone: two calls with the same x gave outputs"):
        identify(decode, 32)


# ---- one rotated pair: its offset is known modulo one wavelength -----------------------------------

def test_one_pair_offset_is_said_undetermined_not_shifted():
    """d = 2, theta = 1: every offset 5000 + 2 pi k / theta... fits; the audit's assert said "positions
    shifted by -5001.416" and "pairing: expected half, found interleaved" (one pair is both)."""
    def fn(x):
        cos, sin = hf_cos_sin(len(x), 5000, hf_inv_freq(2))
        return x * cos + np.concatenate([-x[:, 1:], x[:, :1]], axis=-1) * sin
    s = identify(fn, 2)
    assert any("modulo its wavelength 2 pi / theta = 6.283 positions" in n for n in s.notes), s.notes
    with pytest.raises(AssertionError) as info:
        assert_rope_matches(fn, 2, pairing="half", offset=5000)
    msg = str(info.value).split("\nidentified:")[0]
    assert "expected row 0 at position 5000: it fits the angles, but so do" in msg, msg
    assert "shifted" not in msg and "pairing" not in msg, msg
    assert_rope_matches(fn, 2, pairing="half", rotary_dim=2)
    assert_rope_matches(fn, 2, pairing="interleaved", rotary_dim=2)


def _sci(v):
    """2.9e-03 -> 2.9·10⁻³, as README writes numbers."""
    mant, exp = f"{v:.1e}".split("e")
    return f"{mant}·10" + str(int(exp)).translate(str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"))


@pytest.mark.slow
def test_readme_numbers_for_16bit_kernels_are_todays():
    """docs/checking_kernels.md (moved from the README) quotes these runs; the text is checked against them."""
    from pathlib import Path
    readme = (Path(__file__).resolve().parent.parent / "docs" / "checking_kernels.md").read_text()
    bf = identify(lambda x: hf_llama_16bit(x, 5000, BF16), 128)
    f16 = identify(lambda x: hf_llama_16bit(x, 5000, np.float16), 128)
    assert bf.rows == 4096 and (bf.offset, bf.rope_params) == (5000, {"base": 10000.0})
    said = (f"(frequencies within {_sci(bf.fit_error)} relative, tolerance {_sci(bf.freq_tolerance)}) from 4096 rows,\n"
            f"angle errors up to {_sci(bf.phase_error)} rad, norm errors up to {_sci(bf.scale_error)}; in float16, "
            f"{_sci(f16.phase_error)} rad and {_sci(f16.scale_error)}.")
    assert said in readme, said


def test_config_may_carry_where_the_pairs_are_written():
    """A DeepSeek-V3 RopeConfig (head_dim 64: the rotary part alone) with output_pairing='half'."""
    import dataclasses

    @dataclasses.dataclass
    class Config:
        head_dim: int = 64
        rotary_dim: int = 64
        pairing: str = "interleaved"
        base: float = 10000.0
        rope_type: str = "default"
        params: dict = dataclasses.field(default_factory=dict)
        attention_factor: float = 1.0
        output_pairing: str = "half"
    fn = lambda x: deepseek_v3(x, 300, nope=0)  # noqa: E731
    assert_rope_matches(fn, config=Config(), offset=300)
    with pytest.raises(AssertionError, match="output_pairing: expected pairs written in place, found half"):
        assert_rope_matches(fn, config=Config(output_pairing=None), offset=300)


def test_rows_at_one_position_are_named():
    """A decode kernel given the rows as a batch of tokens all at position 5000 (the audit: a raw
    "ValueError: not enough values to unpack" from inside identify)."""
    def fn(x):
        cos, sin = hf_cos_sin(1, 5000, hf_inv_freq(32))
        return x * cos + np.concatenate([-x[:, 16:], x[:, :16]], axis=-1) * sin
    s = identify(fn, 32)
    assert not s.is_rope and "every row is rotated alike" in s.reason and "batch" in s.reason, s.reason
    with pytest.raises(AssertionError, match="every row is rotated alike"):
        assert_rope_matches(fn, 32, offset=5000)


LLAMA3 = dict(factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_max_position_embeddings=8192)


def test_16bit_slow_pairs_do_not_mislead_the_offset():
    """Llama 3 frequencies in bfloat16, 64 rows at 5000: the slowest pairs turn by ~2e-5 rad over the rows,
    far less than the rounding of cos/sin, whose error does not average out over the rows.  The audit:
    offset -1.85e7 "+- 4.1e5" (5000 excluded at 45 standard deviations)."""
    freqs, _ = scaled_inv_freq(128, 500000.0, rope_type="llama3", **LLAMA3)
    s = identify(lambda x: hf_llama_16bit(x, 5000, BF16, inv=freqs), 128, max_rows=64)
    assert s.offset == 5000 and s.rows == 64, str(s)


def test_16bit_frequencies_too_noisy_to_name_are_not_named():
    """64 rows of bfloat16 Llama 3 at 0: the slow pairs are known to no better than a factor of a few,
    which cannot tell Llama 3 (slow pairs / 8) from default: no name rather than a wrong one."""
    freqs, _ = scaled_inv_freq(128, 500000.0, rope_type="llama3", **LLAMA3)
    s = identify(lambda x: hf_llama_16bit(x, 0, BF16, inv=freqs), 128, max_rows=64)
    assert s.rope_type is None and any("too noisy to name" in n for n in s.notes), str(s)


@pytest.mark.slow
def test_16bit_llama3_far_out_is_named_with_its_round_factor():
    """float16 at 65535: the fitted factor 8.0017 (slowest pair) missed by the mid pairs; 8 fits."""
    freqs, _ = scaled_inv_freq(128, 500000.0, rope_type="llama3", **LLAMA3)
    s = identify(lambda x: hf_llama_16bit(x, 65535, np.float16, inv=freqs), 128)
    assert (s.rope_type, s.offset) == ("llama3", 65535), str(s)
    assert s.rope_params["factor"] == 8.0 and s.rope_params["original_max_position_embeddings"] == 8192


def test_a_pair_that_does_not_turn_gives_no_numpy_warning():
    import warnings
    freqs, _ = scaled_inv_freq(128, 500000.0, rope_type="llama3", **LLAMA3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = identify(lambda x: hf_llama_16bit(x, 65535, BF16, inv=freqs), 128, max_rows=64)
    assert s.rope_type is None, str(s)
