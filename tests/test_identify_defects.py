"""assert_rope_matches / assert_rope_grad_matches: a difference is named only by the catalogue of known defects:
every entry planted in a kernel built from the oracle's model of the expectation, kernels written after real code
with real bugs planted, transformers' LlamaRotaryEmbedding cast to 16 bits (tests/data/rounded_freqs.npz), configs,
the backward pass, and bad expectations."""

import json
from pathlib import Path
from types import SimpleNamespace

import ml_dtypes
import numpy as np
import pytest

import rope_ref as rr
from rope_ref.kernel_check import DEFECTS, KernelRaised, RopeMismatch, expected_model

from kernels import F32, MEASURED, freqs64, hf_cos_sin, hf_inv_freq, hf_rope, meta_rope, neox, planted, rotate_half

DATA = Path(__file__).parent / "data"
LLAMA31 = DATA / "configs" / "llama-3.1-8b.json"
BF16 = ml_dtypes.bfloat16
D = 64


QUICK = ("position offset", "pairing swapped")


@pytest.mark.parametrize("name", [pytest.param(d.name, marks=() if d.name in QUICK else pytest.mark.slow)
                                  for d in DEFECTS])
def test_every_catalogued_defect_planted_in_a_correct_kernel_is_named(name):
    expected, model = planted(name)
    with pytest.raises(RopeMismatch) as info:
        rr.assert_rope_matches(lambda x: model.rotate(x, np.arange(len(x))), D, **expected)
    assert info.value.defects == [name], info.value.problems
    right = expected_model(expected, SimpleNamespace(**MEASURED))                  # the same kernel without it
    spec = rr.assert_rope_matches(lambda x: right.rotate(x, np.arange(len(x))), D, **expected)
    assert spec.offset == 0 and spec.rope_type == expected.get("rope_type", "default")


def test_another_base_is_not_tried_without_a_measured_base():
    model, another_base = expected_model({}, SimpleNamespace(**MEASURED)), DEFECTS[[d.name for d in DEFECTS].index(
        "another base")]
    assert another_base.apply(model, SimpleNamespace(**MEASURED)) is None                      # MEASURED: base None
    assert another_base.apply(model, SimpleNamespace(**dict(MEASURED, base=5e5)))[0].base == 5e5


# ---- kernels written after real code, with the bugs of the last two years planted -------------------------

def defects_of(fn, d=D, **expected):
    with pytest.raises(RopeMismatch) as info:
        rr.assert_rope_matches(fn, d, **expected)
    return info.value.defects


@pytest.mark.parametrize("fn,expected,named", [
    (lambda x: hf_rope(x, 5003), dict(offset=5000, base=1e4), ["position offset"]),
    (lambda x: hf_rope(x, 0), dict(offset=5000), ["position offset"]),
    (lambda x: hf_rope(x, 5000, inv_freq=freqs64(D, start=2)), dict(base=1e4, offset=5000), ["theta indexed from 1"]),
    (lambda x: hf_rope(x, 5000), dict(pairing="interleaved", offset=5000), ["pairing swapped"]),
    (lambda x: meta_rope(x, 5000, base=1e4), dict(base=5e5, offset=5000), ["another base"]),
    (lambda x: neox(x, 0, angle_dtype=np.float16), dict(base=1e4), ["angles computed in float16"]),
    (lambda x: neox(x, 0, sign=-1.0), dict(base=1e4), ["direction reversed"]),
    (lambda x: hf_rope(x, 3000, inv_freq=hf_inv_freq(D).astype(BF16)), dict(base=1e4, offset=3000),
     ["frequencies rounded to bfloat16"]),
    (lambda x: hf_rope(x, 5000, inv_freq=freqs64(D, start=2)), dict(base=1e4, offset=0),
     ["position offset", "theta indexed from 1"]),
    (lambda x: meta_rope(x, 5000, base=1e4), dict(base=1e4, offset=5000, output_pairing="half"), ["output layout"]),
    (lambda x: neox(x), dict(rotary_dim=8), ["different rotary_dim"]),                 # its frequencies not checked
    (lambda x: -neox(x), dict(pairing="half"), []),                 # a phase of pi: no offset made up to explain it
], ids=["plus_three", "cache_offset_ignored", "indexed_from_1", "pairing", "base_left_at_1e4", "float16_angles",
        "clockwise", "bf16_inv_freq", "two_bugs", "written_in_place", "all_features_rotated", "negated"])
@pytest.mark.slow
def test_real_bugs_are_named(fn, expected, named):
    assert defects_of(fn, **expected) == named


@pytest.mark.slow
def test_missing_attention_factor_and_missing_scaling_are_named():
    params = dict(factor=16.0, original_max_position_embeddings=4096)
    freqs, att = rr.scaled_inv_freq(D, 10000.0, rope_type="yarn", **params)
    assert defects_of(lambda x: hf_rope(x, 5000, inv_freq=freqs), rope_type="yarn", base=1e4, offset=5000,
                      **params) == ["attention factor missing"]
    assert defects_of(lambda x: hf_rope(x, 5000, attention_scaling=att), rope_type="yarn", base=1e4, offset=5000,
                      **params) == ["scaling missing"]
    rr.assert_rope_matches(lambda x: hf_rope(x, 5000, inv_freq=freqs, attention_scaling=att), D, rope_type="yarn",
                           base=1e4, offset=5000, **params)
    assert defects_of(lambda x: neox(x, 3), 2, rope_type="linear", factor=2.0) == ["position offset", "scaling missing"]


def position_kernel(dtype, offset):
    """HF with position_ids.to(dtype): the angles of positions rounded to a 16-bit type."""
    def fn(x):
        positions = (np.arange(len(x)) + offset).astype(dtype).astype(F32)
        emb = np.concatenate([positions[:, None] * hf_inv_freq(D)] * 2, axis=-1)
        return x.astype(F32) * np.cos(emb) + rotate_half(x.astype(F32)) * np.sin(emb)
    return fn


@pytest.mark.parametrize("dtype,name,offset", [(BF16, "bfloat16", 1000), (BF16, "bfloat16", 0),
                                               (np.float16, "float16", 5000)])
@pytest.mark.slow
def test_positions_held_in_16_bits_are_named_without_a_made_up_base(dtype, name, offset):
    spec = rr.identify(position_kernel(dtype, offset), D)
    assert (spec.linear, spec.base, spec.offset) == (False, None, None), spec
    assert "indexed" not in str(spec)
    assert defects_of(position_kernel(dtype, offset), base=1e4, offset=offset) == [f"positions held in {name}"]


def table_kernel(rows, offset, beyond):
    """HF's cached float32 cos/sin of `rows` positions gathered at offset + r, clamped to it or modulo its length."""
    cos, sin = hf_cos_sin(rows, 0, hf_inv_freq(D))
    mode = {"clamped": "clip", "repeated": "wrap"}[beyond]

    def fn(x):
        index = np.arange(len(x)) + offset
        c, s = np.take(cos, index, axis=0, mode=mode), np.take(sin, index, axis=0, mode=mode)
        return x.astype(F32) * c + rotate_half(x.astype(F32)) * s
    return fn


@pytest.mark.slow
@pytest.mark.parametrize("beyond", ["clamped", "repeated"])
@pytest.mark.parametrize("rows,offset", [(2048, 2000), (100, 90)])
def test_a_table_that_stops_is_measured_and_named(beyond, rows, offset):
    fn = table_kernel(rows, offset, beyond)
    spec = rr.identify(fn, D)
    assert spec.table_end == (rows - 1, beyond) and spec.offset == offset, spec
    assert defects_of(fn, base=1e4, offset=offset) == [f"table {beyond}"]


@pytest.mark.slow
def test_16bit_cos_sin_of_a_float32_output_is_named_and_accepted_with_phase_atol():
    def fn(x):                          # float32 angles, cos/sin and q rounded to float16, result as float32
        cos, sin = hf_cos_sin(len(x), 3000, hf_inv_freq(D), np.float16)
        q = x.astype(np.float16)
        return (q * cos + rotate_half(q) * sin).astype(F32)
    assert defects_of(fn, base=1e4, offset=3000) == ["cos/sin in float16"]
    rr.assert_rope_matches(fn, D, base=1e4, offset=3000, phase_atol=0.01)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [BF16, np.float16], ids=["bfloat16", "float16"])
def test_a_16bit_model_kernel_matches_within_its_own_rounding(dtype):
    def fn(x):                          # HF in a 16-bit model: cos/sin .to(x.dtype), arithmetic and output 16-bit
        cos, sin = hf_cos_sin(len(x), 5000, hf_inv_freq(D), dtype)
        q = x.astype(dtype)
        return ((q * cos).astype(dtype) + (rotate_half(q) * sin).astype(dtype)).astype(dtype)
    spec = rr.assert_rope_matches(fn, D, pairing="half", base=1e4, offset=5000)
    assert spec.angle_precision == "float32 (cos/sin 16-bit)"
    assert (spec.pairing, spec.offset, spec.rope_type, spec.base) == ("half", 5000, "default", 10000.0), spec
    assert defects_of(fn, pairing="half", base=1e4, offset=4999) == ["position offset"]


# ---- transformers' LlamaRotaryEmbedding cast to 16 bits (recorded) ------------------------------------------

META = json.loads((DATA / "rounded_freqs.json").read_text())
with np.load(DATA / "rounded_freqs.npz") as _z:
    REC = dict(_z)


def replay(case, offset):
    """The recorded module: apply_rotary_pos_emb in x's dtype on the recorded tables (their rows at most)."""
    dtype = BF16 if META["cases"][case]["x_dtype"] == "torch.bfloat16" else F32
    cos, sin = (np.concatenate([REC[f"{case}/{offset}/{k}"]] * 2, axis=-1).astype(dtype) for k in ("cos", "sin"))

    def fn(x):
        if len(x) > len(cos):
            raise IndexError(f"the recorded table holds {len(cos)} positions")
        q = x.astype(dtype)
        return q * cos[:len(x)] + rotate_half(q) * sin[:len(x)]
    return fn


@pytest.mark.parametrize("case,named", [("llama-bf16", "frequencies rounded to bfloat16"),
                                        ("llama-fp16", "frequencies rounded to float16"),
                                        ("llama3.1-bf16", "frequencies rounded to bfloat16")])
@pytest.mark.slow
@pytest.mark.parametrize("offset", [0, 3000])
def test_transformers_module_cast_to_16_bits_is_named(case, named, offset):
    rope = META["cases"][case]["rope_parameters"]
    params = {k: v for k, v in rope.items() if k not in ("rope_type", "rope_theta")}
    assert defects_of(replay(case, offset), base=500000.0, rope_type=rope["rope_type"], offset=offset,
                      max_rows=256, **params) == [named]


@pytest.mark.slow
def test_the_config_names_rounding_and_missing_scaling_and_passes_the_float32_module():
    assert defects_of(replay("llama3.1-bf16", 0), config=LLAMA31, rotary_dim=64, max_rows=256, d=64) == [
        "frequencies rounded to bfloat16"]
    freqs = rr.scaled_inv_freq(64, 500000.0, rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                               high_freq_factor=4.0, original_max_position_embeddings=8192)[0]
    cos, sin = hf_cos_sin(256, 0, freqs.astype(F32))
    fn = lambda x: x.astype(F32) * cos[:len(x)] + rotate_half(x.astype(F32)) * sin[:len(x)]  # noqa: E731
    rr.assert_rope_matches(fn, 64, config=LLAMA31, rotary_dim=64, max_rows=256)
    assert defects_of(lambda x: hf_rope(x, base=500000.0), config=LLAMA31, d=None) == ["scaling missing"]


@pytest.mark.slow
def test_a_config_json_names_an_offset(tmp_path):          # a config dict: docs/checking_kernels.md's example
    config = dict(model_type="llama", hidden_size=128, num_attention_heads=2, rope_theta=10000.0)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config))
    with pytest.raises(RopeMismatch) as info:
        rr.assert_rope_matches(lambda x: hf_rope(x, 7), config=path)
    assert info.value.defects == ["position offset"] and "expected 0, found 7" in info.value.problems[0]
    rr.assert_rope_matches(lambda x: hf_rope(x, 7), config=rr.from_hf_config(config), offset=7)


# ---- the backward pass ---------------------------------------------------------------------------------

@pytest.mark.slow
def test_the_backward_pass_is_checked_and_its_defects_named():
    def back(x, g, sign=-1.0, pairing="interleaved"):          # R^T g: g rotated by minus the angles
        return rr.rotate(g, np.arange(len(g)), inv_freq=sign * rr.frequencies(D), pairing=pairing)
    spec = rr.assert_rope_grad_matches(back, D, base=1e4, offset=0, pairing="interleaved")
    assert spec.offset == 0 and spec.base == 1e4
    with pytest.raises(RopeMismatch) as info:
        rr.assert_rope_grad_matches(lambda x, g: back(x, g, sign=1.0), D, base=1e4, pairing="interleaved")
    assert info.value.defects == ["direction reversed"]
    with pytest.raises(RopeMismatch) as info:
        rr.assert_rope_grad_matches(lambda x, g: back(x, g, pairing="half"), D, base=1e4, pairing="interleaved")
    assert info.value.defects == ["pairing swapped"]


# ---- bad expectations ----------------------------------------------------------------------------------

@pytest.mark.parametrize("kw,err,name", [
    (dict(pairing="sideways"), ValueError, "pairing"), (dict(rope_type="bogus"), ValueError, "rope_type"),
    (dict(base=-1.0), ValueError, "base"), (dict(inv_freq=[1] * D), ValueError, "inv_freq"),     # 64 pairs > d/2
    (dict(rotary_start=-2), ValueError, "rotary_start"), (dict(phase_atol=-1.0), ValueError, "phase_atol"),
    (dict(colour=1), TypeError, "colour"), (dict(axes=3, rtol=-1), ValueError, "rtol"),
    (dict(axes=3, pairing="?"), ValueError, "pairing"), (dict(axes=3, sections=[2, "a", 3]), TypeError, "sections"),
    (dict(axes=3, sections=[D] * 3), ValueError, "sections"), (dict(axes=3, sections=[0] * 3), ValueError, "sections"),
    (dict(axes=3, sections=[4, 2, 2], rotary_dim=8), ValueError, "sections"),
    (dict(axes=2, layout=np.ones(2)), TypeError, "layout"),
    (dict(config=type("NotAConfig", (), dict(attention_factor=1.0))), TypeError, "config"),
    (dict(offset=1e300), ValueError, "offset"), (dict(base=1e-300), ValueError, "base"),     # no angle resolved
    (dict(rotary_dim=2 * D), ValueError, "rotary_dim"), (dict(rotary_start=D - 1), ValueError, "rotary_start"),
    (dict(rope_type="linear", factor=0), ValueError, "factor"), (dict(seq_len="a"), TypeError, "seq_len"),
    (dict(inv_freq=np.ones((1, 4))), ValueError, "inv_freq"), (dict(axes=3, offset=5), TypeError, r"3\).*offset"),
    (dict(axes=3, inv_freq=np.ones((8, 2))), ValueError, "inv_freq"), (dict(offset="x"), TypeError, "offset")])
def test_bad_expectations_are_refused_by_name(kw, err, name):
    with pytest.raises(err, match=name):
        rr.assert_rope_matches(rr.rotate, D, **kw)


def test_a_kernel_that_raises_is_reported_as_raising():
    def fn(x):
        raise RuntimeError("device lost")
    with pytest.raises(KernelRaised, match="fn raised RuntimeError: device lost"):
        rr.assert_rope_matches(fn, D, base=1e4)
