"""identify / assert_rope_matches on imitations of real kernels, which compute their angles in float32.

Each kernel below is a NumPy transcription of a published rotary module, float32 exactly where
torch computes in float32 (HF transformers' Llama/NeoX rotary embedding, GPT-J's interleaved
form, Meta Llama's torch.polar form).  Expected values come from the kernels' own parameters,
never from identify's output.  The offsets are those of a KV cache at decode time.
"""

import math

import numpy as np
import pytest

from rope_ref import ROPE_TYPES, RopeSpec, assert_rope_matches, identify, scaled_inv_freq
SIGMAS = 6.0

from kernels import gptj_rope, hf_inv_freq, hf_rope, meta_rope, neox

F32 = np.float32
D = 64


# Phi-3.5-mini-instruct's published rope_scaling.short_factor (first 32 of 48; head_dim 96 there).
PHI35_SHORT = [1.0, 1.0199999809265137, 1.0299999713897705, 1.0299999713897705, 1.0499999523162842,
               1.0499999523162842, 1.0499999523162842, 1.0499999523162842, 1.0499999523162842,
               1.0699999332427979, 1.0999999046325684, 1.1099998950958252, 1.1599998474121094,
               1.1599998474121094, 1.1699998378753662, 1.2899998426437378, 1.339999794960022,
               1.679999828338623, 1.7899998426437378, 1.8199998140335083, 1.8499997854232788,
               1.8799997568130493, 1.9099997282028198, 1.9399996995925903, 1.9899996519088745,
               2.0199997425079346, 2.0199997425079346, 2.0199997425079346, 2.0199997425079346,
               2.0199997425079346, 2.0199997425079346, 2.0299997329711914]

OFFSETS = [0, 7, 2000, 4000, 5000, 65536]


@pytest.mark.slow
@pytest.mark.parametrize("offset", OFFSETS)
@pytest.mark.parametrize("kernel,pairing,base", [(hf_rope, "half", 10000.0), (gptj_rope, "interleaved", 10000.0),
                                                  (meta_rope, "interleaved", 500000.0)],
                         ids=["hf_llama", "gptj", "meta_polar"])
def test_float32_kernels_at_decode_offsets(kernel, pairing, base, offset):
    # The issue: at 2000 this kernel was called longrope, at 4000 "too noisy", at 5000 the offset check failed.
    fn = lambda x: kernel(x, offset, base=base)  # noqa: E731
    s = identify(fn, D)
    assert (s.pairing, s.rotary_dim, s.offset, s.rope_type) == (pairing, D, offset, "default"), str(s)
    assert s.base == base              # rounded to the 6 digits float32 frequencies resolve (README)
    assert s.angle_precision == "float32"
    np.testing.assert_allclose(s.inv_freq, hf_inv_freq(D, base), rtol=3e-7)   # the kernel's float32 thetas
    assert s.phase_error < 8 * 2.0**-24 * (1 + (offset + s.rows) * 1.0)   # float32 rounding of the fastest angle
    assert f"offset={offset} " in str(s)                                  # printed as an integer
    assert not any("ambiguous" in n or "do not agree" in n for n in s.notes), s.notes
    assert_rope_matches(fn, D, pairing=pairing, base=base, offset=offset, rotary_dim=D, rope_type="default")


@pytest.mark.parametrize("offset", [0, 5000])
def test_partial_rotary_neox(offset):
    fn = lambda x: hf_rope(x, offset, rotary_dim=16)  # noqa: E731   rotary_pct = 0.25
    s = identify(fn, D)
    assert (s.rotary_dim, s.pairing, s.offset, s.rope_type) == (16, "half", offset, "default")
    assert math.isclose(s.base, 10000.0, rel_tol=1e-4)


@pytest.mark.parametrize("offset,d", [(0, D), (1, 128), (12345, D), (10**6, D)])
def test_float64_kernel_up_to_a_million(offset, d):
    s = identify(lambda x: neox(x, offset), d)
    assert (s.offset, s.rope_type, s.angle_precision) == (offset, "default", "float64")
    assert s.phase_error < 1e-9                     # float64 rounding of angles up to 1e6 rad
    assert s.offset_resolution < (1e-9 if offset < 10**5 else 1e-5)
    assert math.isclose(s.base, 10000.0, rel_tol=1e-9)
    np.testing.assert_allclose(s.inv_freq, 1.0 / 10000.0 ** (np.arange(0, d, 2) / d), rtol=1e-12)


SCALED = [
    ("linear", 10000.0, dict(factor=4.0)),
    ("yarn", 10000.0, dict(factor=16.0, original_max_position_embeddings=4096)),
    ("yarn", 1000000.0, dict(factor=4.0, original_max_position_embeddings=32768)),   # Qwen2.5's settings
    ("llama3", 500000.0, dict(factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
                              original_max_position_embeddings=8192)),
]


@pytest.mark.slow
@pytest.mark.parametrize("offset", [0, 5000, 65536])
@pytest.mark.parametrize("rope_type,base,params", SCALED, ids=["linear", "yarn", "yarn_qwen", "llama3"])
def test_scaled_float32_kernels(rope_type, base, params, offset):
    freqs, att = scaled_inv_freq(D, base, rope_type=rope_type, **params)
    fn = lambda x: hf_rope(x, offset, inv_freq=freqs, attention_scaling=att)  # noqa: E731
    s = identify(fn, D)
    assert (s.rope_type, s.offset) == (rope_type, offset), str(s)
    assert not any("ambiguous" in n or "do not agree" in n for n in s.notes), s.notes
    assert math.isclose(s.base, base, rel_tol=1e-4)
    for k, v in params.items():
        assert s.rope_params[k] == pytest.approx(v, rel=1e-4), k
    assert "attention_factor" not in s.rope_params     # the kernel applies YaRN's default factor
    assert math.isclose(s.norm_scale, att, rel_tol=1e-6)
    assert_rope_matches(fn, D, base=base, rope_type=rope_type, offset=offset, pairing="half", **params)


@pytest.mark.slow
@pytest.mark.parametrize("offset", [0, 5000])
def test_ntk_and_dynamic_against_base_hint(offset):
    # A float32 plain kernel is "default" against its own base (the issue: "ntk, factor 0.999998").
    s = identify(lambda x: hf_rope(x, offset), D, base_hint=10000.0)
    assert s.rope_type == "default" and s.rope_params == {"base": 10000.0}
    freqs, _ = scaled_inv_freq(D, 10000.0, rope_type="ntk", factor=4.0)
    s = identify(lambda x: hf_rope(x, offset, inv_freq=freqs), D, base_hint=10000.0)
    assert s.rope_type == "ntk" and s.rope_params["factor"] == pytest.approx(4.0, rel=1e-4)
    # dynamic NTK frozen at length 8192 (trained 4096, factor 2): base * (2*8192/4096 - 1)^(d/(d-2)), the
    # same at every length: static NTK factor 3 (tests/test_identify_dynamic.py has kernels that follow the length).
    freqs, _ = scaled_inv_freq(D, 10000.0, rope_type="dynamic", factor=2.0, max_position_embeddings=4096, seq_len=8192)
    s = identify(lambda x: hf_rope(x, offset, inv_freq=freqs), D, base_hint=10000.0)
    assert s.rope_type == "ntk" and s.rope_params["factor"] == pytest.approx(3.0, rel=1e-4)
    assert any("static NTK" in n for n in s.notes), s.notes


@pytest.mark.parametrize("offset", [0, 5000])
def test_longrope_phi35_factors(offset):
    params = dict(short_factor=PHI35_SHORT, long_factor=PHI35_SHORT, original_max_position_embeddings=4096,
                  max_position_embeddings=131072)
    freqs, att = scaled_inv_freq(D, 10000.0, rope_type="longrope", **params)
    fn = lambda x: hf_rope(x, offset, inv_freq=freqs, attention_scaling=att)  # noqa: E731
    s = identify(fn, D, base_hint=10000.0)
    assert (s.rope_type, s.base, s.offset) == ("longrope", 10000.0, offset)
    np.testing.assert_allclose(s.rope_params["short_factor"], PHI35_SHORT, rtol=1e-5)
    assert s.rope_params["attention_factor"] == pytest.approx(att, rel=1e-6)
    assert any("cannot be told apart" in n for n in s.notes)
    # the parameters are ones scaled_inv_freq takes, once the unobservable lengths are added
    kw = {k: v for k, v in s.rope_params.items() if k != "base"}
    again, _ = scaled_inv_freq(D, s.base, rope_type="longrope", original_max_position_embeddings=4096,
                               max_position_embeddings=131072, **kw)
    np.testing.assert_allclose(again, freqs, rtol=1e-5)
    # without base_hint, base and factors are confounded: "custom", never a wrong name
    s = identify(fn, D)
    assert s.rope_type == "custom" and s.fit_error > 1e-3
    assert any("cannot be told apart" in n and "base_hint" in n for n in s.notes)


def test_no_method_fits_is_custom_with_best_fit():
    rng = np.random.default_rng(3)
    wobble = 1 + 1e-3 * rng.standard_normal(D // 2)          # no published method; factors both sides of 1
    freqs = 1.0 / 10000.0 ** (np.arange(0, D, 2) / D) * wobble
    for hint in (None, 10000.0):
        s = identify(lambda x: hf_rope(x, 5000, inv_freq=freqs), D, base_hint=hint)
        assert s.rope_type == "custom" and s.offset == 5000 and s.closest in ROPE_TYPES
        assert 1e-4 < s.fit_error < 1e-2
        assert any("no scaling method fits" in n for n in s.notes)


def test_angle_precision_is_reported():
    assert identify(lambda x: neox(x, 5000), D).angle_precision == "float64"
    assert identify(lambda x: hf_rope(x, 5000), D).angle_precision == "float32"

    def float16_angles(x):
        seq, d = x.shape
        ang = np.arange(seq).astype(np.float16)[:, None] * hf_inv_freq(d, 10000.0).astype(np.float16)
        emb = np.concatenate([ang, ang], axis=-1).astype(np.float64)
        return x * np.cos(emb) + np.concatenate([-x[:, d // 2:], x[:, :d // 2]], axis=-1) * np.sin(emb)
    s = identify(float16_angles, D)
    assert s.angle_precision in ("float16", "bfloat16", "coarser than bfloat16") and s.rope_type is None
    assert s.rows == 64 and s.offset == 0      # no longer calls: float16 errors grow with the position


def test_str_of_a_bare_spec_and_integer_offsets():
    assert "pairing=None" in str(RopeSpec(is_rope=True))
    assert "offset=4000 " in str(identify(lambda x: hf_rope(x, 4000), D))


# ---- assert_rope_matches names each planted bug, on float32 kernels at a decode offset ------------

def _mismatch(fn, *words, d=D, **expected):
    with pytest.raises(AssertionError) as info:
        assert_rope_matches(fn, d, **expected)
    msg = str(info.value)
    for w in words:
        assert w in msg, f"{w!r} not in:\n{msg}"
    assert "\n  \n" not in msg                       # no blank problem line
    return msg


def test_bug_offset_plus_three():
    _mismatch(lambda x: hf_rope(x, 5003), "offset: expected row 0 at position 5000, found 5003",
              "shifted by 3", offset=5000, base=10000.0)


def test_bug_kernel_ignores_cache_offset():
    _mismatch(lambda x: hf_rope(x, 0), "offset: expected row 0 at position 5000, found 0",
              "ignores its cache offset", offset=5000)


def test_bug_off_by_one_at_decode_offset():
    _mismatch(lambda x: gptj_rope(x, 4001), "found 4001", "off by one", offset=4000)


def test_bug_theta_indexed_from_one():
    freqs = 1.0 / 10000.0 ** (np.arange(2, D + 2, 2) / D)
    _mismatch(lambda x: hf_rope(x, 5000, inv_freq=freqs), "frequencies", "indexed from 1", base=10000.0)


def test_bug_wrong_pairing():
    _mismatch(lambda x: hf_rope(x, 5000), "pairing: expected interleaved, found half", pairing="interleaved")


def test_bug_missing_attention_factor():
    params = dict(factor=16.0, original_max_position_embeddings=4096)
    freqs, att = scaled_inv_freq(D, 10000.0, rope_type="yarn", **params)
    _mismatch(lambda x: hf_rope(x, 5000, inv_freq=freqs), f"norm_scale: expected {att:.6g}, found 1",
              "attention factor not applied", rope_type="yarn", base=10000.0, **params)


def test_bug_base_left_at_ten_thousand():
    _mismatch(lambda x: meta_rope(x, 5000, base=10000.0), "base left at 10^4", base=500000.0)


def test_frequencies_that_change_with_the_sequence_length_are_noted():
    def hf_dynamic(x, offset=65536, factor=2.0, max_position_embeddings=65600):
        """HF dynamic NTK: the base grows once offset + seq passes the trained length."""
        seq, d = x.shape
        seq_len, base = offset + seq, 10000.0
        if seq_len > max_position_embeddings:
            base *= (factor * seq_len / max_position_embeddings - (factor - 1)) ** (d / (d - 2))
        return hf_rope(x, offset, base=base)
    s = identify(hf_dynamic, D)              # 64 rows end at the trained length; the refining call passes it
    assert any("depend on the sequence length" in n for n in s.notes), s.notes
    assert s.rows == 64 and abs(s.offset - 65536) <= SIGMAS * s.offset_resolution, s
    # 64 rows leave the offset to ~2 positions here: not claimed as an integer, and said so
    assert s.offset_resolution > 0.5 / SIGMAS and s.offset != round(s.offset), s
    assert any("not resolved to an integer" in n for n in s.notes), s.notes


def cache_kernel(offset, rows, base=10000.0, d=128):
    """A float32 kernel with a fixed-size cos/sin cache of `rows` rows: more rows are refused."""
    asked = []

    def fn(x):
        asked.append(len(x))
        if len(x) > rows:
            raise ValueError(f"cache holds {rows} rows, asked for {len(x)}")
        return hf_rope(x, offset, base=base)
    return fn, asked


@pytest.mark.parametrize("offset", [0, 7, 5000])
def test_max_rows_is_never_exceeded_and_64_rows_resolve_a_decode_offset(offset):
    """d = 128, base 10^4, float32: at 5000 the slowest pairs' angles (~0.6 rad) are precise to ~1e-7,
    so 64 rows fix the offset to ~0.01 positions; the rounding floors must be sized for 5000, not
    for an offset that no pair agrees with."""
    fn, asked = cache_kernel(offset, 64)
    s = identify(fn, 128, max_rows=64)
    assert max(asked) == 64
    assert s.offset == offset and s.offset_resolution < 0.5 / SIGMAS, s
    assert (s.rope_type, s.rotary_dim, s.pairing) == ("default", 128, "half"), s
    assert math.isclose(s.base, 1e4, rel_tol=1e-4), s
    assert not any("ambiguous" in n or "not resolved" in n for n in s.notes), s.notes


def test_unresolved_offset_within_max_rows_is_said_not_guessed():
    """8 rows of a float32 kernel at 40000 cannot pin the offset to one position: the spec says so."""
    fn, asked = cache_kernel(40000, 8, d=16)
    s = identify(fn, 16, seq=8, max_rows=8)
    assert max(asked) == 8
    assert s.offset_resolution > 0.5 / SIGMAS, s
    assert any("not resolved to an integer" in n and "max_rows" in n for n in s.notes), s.notes
    assert s.offset != round(s.offset) and abs(s.offset - 40000) <= SIGMAS * s.offset_resolution, s
    with pytest.raises(AssertionError, match="offset: expected row 0 at position 40000, measured .* not resolved"):
        assert_rope_matches(cache_kernel(40000, 8, d=16)[0], 16, seq=8, max_rows=8, offset=40000)


def test_max_rows_below_seq_is_refused():
    with pytest.raises(ValueError, match="max_rows"):
        identify(lambda x: x, 8, seq=64, max_rows=32)
    with pytest.raises(ValueError, match="max_rows"):
        assert_rope_matches(lambda x: x, 8, max_rows=0)


def test_few_pairs_a_near_common_period_is_named_and_the_smallest_offset_reported():
    """StableLM-2's rotary part: 8 pairs, base 10^4, so theta_p = 10^(-p/2).  q = 2 pi * 721000 turns every
    pair by nearly whole turns (1000 q theta_even / 2 pi is an integer; 721 * sqrt 10 = 2280.002): at float32
    precision (theta known to ~2^-24 relative, so q theta to ~0.3 rad) that offset cannot be excluded.
    identify reports 0, the smallest, and names the alternative rather than guessing silently."""
    fn, asked = cache_kernel(0, 64, d=16)
    s = identify(fn, 16, max_rows=64)
    assert s.offset == 0 and max(asked) == 64, s
    note = next(n for n in s.notes if "ambiguous" in n)
    also = [float(w.strip(",):")) for w in note.split("also ")[1].split()[:3]]
    assert any(abs(abs(o) - 2 * math.pi * 721000) < 5 for o in also), note


def half_cos_sin_rope(x, offset, base):
    """A float16 model's kernel: float32 angles, cos/sin and q rounded to float16 (cos.to(x.dtype)),
    q*cos + rotate_half(q)*sin computed in float16."""
    seq, d = x.shape
    inv = hf_inv_freq(d, base)
    angles = (np.arange(seq) + offset).astype(F32)[:, None] * inv[None, :]
    emb = np.concatenate([angles, angles], axis=-1)
    cos, sin, q = np.cos(emb).astype(np.float16), np.sin(emb).astype(np.float16), x.astype(np.float16)
    rotate_half = np.concatenate([-q[:, d // 2:], q[:, :d // 2]], axis=-1)
    return (q * cos + rotate_half * sin).astype(F32)


@pytest.mark.slow
@pytest.mark.parametrize("offset", [0, 1000])
def test_slow_pairs_are_measured_on_more_rows_before_a_method_is_named(offset):
    """Pairs that turn too little over 64 rows (base 1e6: the slowest by 7.7e-5 rad) leave their
    frequencies too uncertain, with cos/sin rounded to float16, to tell default from llama3 (which
    differ exactly there); one more call on max_rows rows lengthens the lever and names the method."""
    spec = identify(lambda x: half_cos_sin_rope(x, offset, 1e6), 128)
    assert (spec.rope_type, spec.rows, spec.offset) == ("default", 4096, offset), spec
    assert math.isclose(spec.base, 1e6, rel_tol=1e-3), spec
    short = identify(lambda x: half_cos_sin_rope(x, offset, 1e6), 128, max_rows=64)   # a 64-row cos/sin cache
    assert short.rope_type is None and any("too noisy to name" in n for n in short.notes), short
