"""identify / assert_rope_matches name the bug classes they once misdiagnosed (issue 30, "Wrong diagnoses" 1, 2, 4,
7 and 8; issue 32's vjp).

* frequencies rounded to a 16-bit type: transformers' own LlamaRotaryEmbedding after ``.to(torch.bfloat16)`` /
  ``.to(torch.float16)`` (tests/data/rounded_freqs.npz, record_rounded_freqs.py, replayed with numpy), and the same
  class written in numpy at other bases, pairings and offsets;
* a cos/sin table that stops (an index clamped to it, or taken modulo its length);
* a float32 or 16-bit 2-D grid kernel read as flattened rows;
* what was expected: a config's scaling left out, theta indexed from 1, a (batch, heads, seq, d) kernel;
* a kernel that blocks; a backward pass that is not callable or returns garbage.

Expected values come from the kernels' own parameters and from ml_dtypes' rounding, never from identify's output.
"""

import json
import threading
import time
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from rope_ref import assert_rope_grad_matches, assert_rope_matches, identify, scaled_inv_freq
from rope_ref.kernel_check import KernelRaised
from rope_ref.kernel_check.tolerances import TIMEOUT

from kernels import F32, freqs64, hf_cos_sin, hf_inv_freq, hf_rope, neox, rotate_half

DATA = Path(__file__).parent / "data"
META = json.loads((DATA / "rounded_freqs.json").read_text())
with np.load(DATA / "rounded_freqs.npz") as _z:
    REC = dict(_z)
LLAMA31 = DATA / "configs" / "llama-3.1-8b.json"
BF16 = ml_dtypes.bfloat16
PRECISION_BLAME = ("compute angles in float32", "behave like float16", "behave like bfloat16", "coarser than")


def replay(case, offset):
    """The recorded module as a kernel fn(x): transformers' apply_rotary_pos_emb (q*cos + rotate_half(q)*sin) in
    x's dtype on the recorded tables, which hold ROWS positions (more rows are an IndexError, as a cache)."""
    dtype = BF16 if META["cases"][case]["x_dtype"] == "torch.bfloat16" else F32
    cos, sin = (np.concatenate([REC[f"{case}/{offset}/{k}"]] * 2, axis=-1).astype(dtype) for k in ("cos", "sin"))

    def fn(x):
        if len(x) > len(cos):
            raise IndexError(f"the recorded table holds {len(cos)} positions")
        q = x.astype(dtype)
        return q * cos[:len(x)] + rotate_half(q) * sin[:len(x)]
    return fn


# ---- 1. frequencies rounded to bfloat16 / float16 ----------------------------------------------------------

@pytest.mark.parametrize("case", ["llama-bf16", "llama-fp16", "llama3.1-bf16"])
def test_recorded_buffer_is_the_float32_frequencies_rounded_by_ml_dtypes(case):
    meta = META["cases"][case]
    params = {k: v for k, v in meta["rope_parameters"].items() if k != "rope_type"}
    want, _ = scaled_inv_freq(64, 500000.0, rope_type=meta["rope_parameters"]["rope_type"], **params)
    dtype = BF16 if meta["module_dtype"] == "torch.bfloat16" else np.float16
    np.testing.assert_array_equal(meta["inv_freq"], want.astype(F32).astype(dtype).astype(np.float64))


@pytest.mark.parametrize("case", sorted(META["cases"]))
@pytest.mark.parametrize("offset", [0, 3000])
def test_replay_reproduces_transformers_output(case, offset):
    q = REC[f"{case}/{offset}/q"]
    np.testing.assert_array_equal(np.asarray(replay(case, offset)(q), np.float64), REC[f"{case}/{offset}/out"])


@pytest.mark.slow
@pytest.mark.parametrize("case,closest,type_name", [("llama-bf16", "default", "bfloat16"),
                                                     ("llama-fp16", "default", "float16"),
                                                     ("llama3.1-bf16", "llama3", "bfloat16")])
@pytest.mark.parametrize("offset", [0, 3000])
def test_transformers_module_cast_to_16_bits_is_named_rounded(case, closest, type_name, offset):
    # was: "custom, closest linear {base: 499749...}"
    s = identify(replay(case, offset), 64, max_rows=256)
    assert (s.rope_type, s.closest, s.frequency_defect, s.offset) == ("custom", closest, f"rounded to {type_name}",
                                                                        offset), str(s)
    assert s.base == 500000.0 and s.rope_params.get("factor", 8.0) == 8.0, str(s)
    assert f"rounded to {type_name}" in s.summary()
    note = next(n for n in s.notes if "inv_freq buffer" in n)
    want = np.asarray(META["cases"][case]["inv_freq"])
    unrounded = np.abs(s.inv_freq)                   # how far the rounding moved each pair: from the buffer
    moved = np.abs(want / scaled_inv_freq(64, 500000.0, **({} if closest == "default" else dict(
        rope_type="llama3", factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0,
        original_max_position_embeddings=8192)))[0] - 1)
    np.testing.assert_allclose(unrounded, want, rtol=1e-5)
    assert f"by up to {moved.max():.2g} relative" in note and f"pair {int(np.argmax(moved))}: " in note, note


def test_bfloat16_model_is_not_misnamed():
    # x in bfloat16 too: cos/sin and the output rounded; 256 rows cannot tell the rounded frequencies apart
    s = identify(replay("llama-bf16-model", 0), 64, max_rows=256)
    assert s.rope_type in (None, "custom") and s.closest in (None, "default"), str(s)
    assert s.rope_type is None or s.frequency_defect == "rounded to bfloat16", str(s)


@pytest.mark.slow
@pytest.mark.parametrize("base,offset", [(10000.0, 0), (10000.0, 3000), (500000.0, 3000)])
def test_bfloat16_model_over_4096_rows_is_named_rounded(base, offset):
    # the whole model in bfloat16: inv_freq rounded, cos/sin and the output rounded too (x in bfloat16)
    inv = hf_inv_freq(64, base).astype(BF16).astype(F32)

    def fn(x):
        emb = np.concatenate([(np.arange(len(x)) + offset).astype(F32)[:, None] * inv] * 2, axis=-1)
        q = x.astype(BF16)
        return q * np.cos(emb).astype(BF16) + rotate_half(q) * np.sin(emb).astype(BF16)
    s = identify(fn, 64)
    assert (s.closest, s.frequency_defect, s.base, s.offset) == ("default", "rounded to bfloat16", base, offset)
    with pytest.raises(AssertionError) as info:
        assert_rope_matches(fn, 64, base=base, offset=offset)
    assert "frequencies: the expected ones rounded to bfloat16" in str(info.value), str(info.value)


@pytest.mark.slow
@pytest.mark.parametrize("type_name,dtype", [("bfloat16", BF16), ("float16", np.float16)])
@pytest.mark.parametrize("base,d,offset", [(10000.0, 64, 0), (1e6, 128, 7), (500000.0, 64, 5000)])
@pytest.mark.parametrize("pairing", ["half", "interleaved"])
def test_inv_freq_cast_before_the_phase_is_named(type_name, dtype, base, d, offset, pairing):
    inv = hf_inv_freq(d, base).astype(dtype).astype(F32)          # inv_freq.to(bfloat16), then .float()

    def fn(x):                                                    # angles and cos/sin in float32
        angles = (np.arange(len(x)) + offset).astype(F32)[:, None] * inv[None]
        q = x.astype(F32)
        if pairing == "half":
            emb = np.concatenate([angles, angles], axis=-1)
            return q * np.cos(emb) + rotate_half(q) * np.sin(emb)
        cos, sin = np.repeat(np.cos(angles), 2, axis=-1), np.repeat(np.sin(angles), 2, axis=-1)
        return q * cos + np.stack([-q[:, 1::2], q[:, 0::2]], axis=-1).reshape(q.shape) * sin
    s = identify(fn, d)
    assert (s.rope_type, s.closest, s.frequency_defect, s.base, s.offset, s.pairing) == (
        "custom", "default", f"rounded to {type_name}", base, offset, pairing), str(s)
    with pytest.raises(AssertionError) as info:
        assert_rope_matches(fn, d, base=base, offset=offset, pairing=pairing)
    assert f"the expected frequencies rounded to {type_name}" in str(info.value), str(info.value)


@pytest.mark.slow
@pytest.mark.parametrize("type_name,dtype,offset,spacing,low", [("bfloat16", BF16, 1000, 4, 512),
                                                                ("bfloat16", BF16, 300, 2, 256),
                                                                ("float16", np.float16, 5000, 4, 4096),
                                                                ("float16", np.float16, 40000, 32, 32768)])
def test_positions_held_in_16_bits_are_named(type_name, dtype, offset, spacing, low):
    # was: "base 386.66, offset 995.89, some pairs rotate clockwise, angles coarser than bfloat16"
    def fn(x):                                    # position_ids.to(dtype), then HF's float32 angles
        positions = (np.arange(len(x)) + offset).astype(dtype).astype(F32)
        emb = np.concatenate([positions[:, None] * hf_inv_freq(64)] * 2, axis=-1)
        return x.astype(F32) * np.cos(emb) + rotate_half(x.astype(F32)) * np.sin(emb)
    s = identify(fn, 64)
    assert s.rope_type is None and f"{type_name} (positions {low}..{2 * low - 1} are multiples of {spacing})" in (
        s.rounded_positions or ""), str(s)
    assert not any("clockwise" in n or "too noisy" in n for n in s.notes), s.notes
    with pytest.raises(AssertionError) as info:
        assert_rope_matches(fn, 64, base=10000.0, offset=offset)
    assert "rows share positions" in str(info.value) and not any(w in str(info.value) for w in PRECISION_BLAME)


def test_assert_against_the_config_names_rounding_and_keeps_quiet_otherwise():
    fn = replay("llama3.1-bf16", 0)
    with pytest.raises(AssertionError) as info:
        assert_rope_matches(fn, 64, config=LLAMA31, rotary_dim=64, max_rows=256)     # recorded with head_dim 64
    assert "the expected frequencies rounded to bfloat16" in str(info.value), str(info.value)
    # the same module left in float32 matches the config
    cos, sin = hf_cos_sin(256, 0, scaled_inv_freq(64, 500000.0, rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                                                  high_freq_factor=4.0, original_max_position_embeddings=8192)[0]
                          .astype(F32))
    assert_rope_matches(lambda x: x.astype(F32) * cos[:len(x)] + rotate_half(x.astype(F32)) * sin[:len(x)],
                        64, config=LLAMA31, rotary_dim=64, max_rows=256)


# ---- 2. cos/sin tables that stop --------------------------------------------------------------------------

def table_kernel(rows, offset, beyond, d=64, base=10000.0):
    """HF's cached cos/sin (float32, `rows` positions) gathered at offset + r, the index clamped to the table
    (np.take mode="clip") or taken modulo its length (mode="wrap")."""
    cos, sin = hf_cos_sin(rows, 0, hf_inv_freq(d, base))
    mode = {"clamped": "clip", "repeated": "wrap"}[beyond]

    def fn(x):
        index = np.arange(len(x)) + offset
        c, s = np.take(cos, index, axis=0, mode=mode), np.take(sin, index, axis=0, mode=mode)
        return x.astype(F32) * c + rotate_half(x.astype(F32)) * s
    return fn


@pytest.mark.slow
@pytest.mark.parametrize("beyond", ["clamped", "repeated"])
@pytest.mark.parametrize("rows,offset,d,base", [(4096, 4090, 128, 10000.0), (100, 90, 64, 10000.0),
                                                (2048, 2000, 64, 500000.0), (65536 + 1000, 65536, 32, 10000.0)])
def test_table_that_stops_is_named(beyond, rows, offset, d, base):
    # was: "angles behave like float16 ... compute angles in float32" (notebook 06, checklist item 2).  The last
    # case's table ends past the first 64 rows, inside the longer probe that pins the offset down.
    fn = table_kernel(rows, offset, beyond, d, base)
    s = identify(fn, d)
    assert s.table_end[1] == beyond and abs(s.table_end[0] - (rows - 1)) <= max(1, 6 * s.offset_resolution), str(s)
    assert abs(s.offset - offset) <= max(1e-9, 6 * s.offset_resolution) and s.angle_precision == "float32", str(s)
    assert s.rope_type == "default" or (s.rope_type is None and s.rows == 6), str(s)     # 6 rows name no method
    assert any(f"(row {rows - 1 - offset} here)" in n for n in s.notes), s.notes
    with pytest.raises(AssertionError) as info:
        assert_rope_matches(fn, d, base=base, offset=offset)
    message = str(info.value)
    assert "table: the cos/sin table stops at position" in message and f"{rows - 1}" in message, message
    assert not any(words in message for words in PRECISION_BLAME), message


def test_table_ending_before_the_third_row_says_so():
    s = identify(table_kernel(100, 98, "clamped"), 64)
    assert not s.is_rope and "rows 0..1 only" in s.reason and "clamped" in s.reason, s.reason
    s = identify(table_kernel(100, 500, "clamped"), 64)           # every row past the table: all alike
    assert not s.is_rope and "beyond its end" in s.reason, s.reason


def test_a_kernel_at_a_negative_offset_is_not_a_repeated_table():
    s = identify(lambda x: neox(x, -20), 64)                      # row 20 is at position 0: a legitimate zero
    assert (s.table_end, s.offset, s.rope_type) == (None, -20, "default"), str(s)


# ---- 4. 2-D grid kernels read as flattened rows -----------------------------------------------------------

def grid_kernel(width, angle_dtype=F32, out_dtype=None):
    """timm-style 2-D axial RoPE over a grid `width` wide, read row-major: y on the first d/4 pairs, x on the
    next, bands 1 / 10000^(i / (d/4)) (half pairing), angles in angle_dtype, output cast to out_dtype."""
    bands = (F32(1.0) / F32(10000.0) ** (np.arange(16, dtype=F32) / F32(16))).astype(angle_dtype)

    def fn(x):
        row = np.arange(len(x))
        y, x_pos = (row // width).astype(angle_dtype), (row % width).astype(angle_dtype)
        angles = np.concatenate([y[:, None] * bands, x_pos[:, None] * bands], axis=-1).astype(F32)
        emb = np.concatenate([angles, angles], axis=-1)
        out = x.astype(F32) * np.cos(emb) + rotate_half(x.astype(F32)) * np.sin(emb)
        return out if out_dtype is None else out.astype(out_dtype)
    return fn


@pytest.mark.slow
@pytest.mark.parametrize("width", [8, 14])
@pytest.mark.parametrize("angle_dtype,out_dtype", [(np.float64, None), (F32, None), (F32, BF16), (F32, np.float16),
                                                   (np.float16, None)])
def test_grid_kernel_is_sent_to_multi_axis_probing_never_blamed_on_precision(width, angle_dtype, out_dtype):
    # was: the float32 grid "behaves like ... compute angles in float32"
    fn = grid_kernel(width, angle_dtype, out_dtype)
    s = identify(fn, 64)
    assert not s.is_rope and s.multi_axis and "identify(fn, d, axes=A)" in s.reason, str(s)
    with pytest.raises(AssertionError) as info:
        assert_rope_matches(fn, 64, base=10000.0)
    assert "axes=A" in str(info.value) and not any(w in str(info.value) for w in PRECISION_BLAME), str(info.value)


@pytest.mark.parametrize("dtype", [np.float16, BF16])
def test_1d_kernel_with_16_bit_angles_is_still_a_precision_finding(dtype):
    fn = lambda x: neox(x, 3000, angle_dtype=dtype)  # noqa: E731
    s = identify(fn, 64)
    assert s.is_rope and not s.multi_axis and s.angle_precision in ("float16", "bfloat16", "coarser than bfloat16")


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [np.float16, BF16])
@pytest.mark.parametrize("offset", [0, 1000, 5000, 9000, 20000, 40000])
@pytest.mark.parametrize("d", [8, 32, 64])
def test_1d_kernel_with_16_bit_positions_and_angles_is_never_a_grid(dtype, offset, d):
    # positions and angles both rounded (neox's angle_dtype casts positions too): the angles jump at shared
    # positions by amounts that vary with the rounding, which no grid does
    s = identify(lambda x: neox(x, offset, angle_dtype=dtype), d)
    assert not s.multi_axis and (s.is_rope or "16-bit float type" in s.reason), str(s)   # bfloat16 at 40000: one


# ---- 7. what was expected is named -----------------------------------------------------------------------

def test_missing_llama3_scaling_is_named_against_the_config():
    with pytest.raises(AssertionError) as info:
        assert_rope_matches(lambda x: hf_rope(x, base=500000.0), config=LLAMA31)
    assert "the config's llama3 scaling is missing" in str(info.value), str(info.value)
    with pytest.raises(AssertionError) as info:                   # keywords instead of a config
        assert_rope_matches(lambda x: hf_rope(x, base=500000.0, rotary_dim=64), 64, base=500000.0,
                            rope_type="yarn", factor=4.0, original_max_position_embeddings=4096)
    assert "the expected yarn scaling is missing" in str(info.value), str(info.value)


@pytest.mark.slow
@pytest.mark.parametrize("base,d", [(500000.0, 128), (10000.0, 64)])
def test_theta_indexed_from_one_is_named_so(base, d):
    fn = lambda x: neox(x, freqs=freqs64(d, base, start=2))  # noqa: E731
    s = identify(fn, d)
    assert (s.rope_type, s.closest, s.frequency_defect, s.base) == ("custom", "default", "indexed from 1", base)
    assert "linear" not in s.summary() and "indexed from 1" in s.summary()
    with pytest.raises(AssertionError) as info:
        assert_rope_matches(fn, d, base=base)
    message = str(info.value)
    assert "indexed from 1" in message and "rope_type=linear" not in message, message
    assert base == 10000.0 or "10000" not in message, message       # no other base quoted
    with pytest.raises(AssertionError) as info:                 # against Llama 3.1: both bugs named
        assert_rope_matches(lambda x: neox(x, freqs=freqs64(128, 500000.0, start=2)), config=LLAMA31)
    assert "llama3 scaling is missing" in str(info.value) and "indexed from 1" in str(info.value)


def test_kernel_for_batch_and_heads_has_its_hint_in_the_message():
    def kernel(q):                                # written for (batch, heads, seq, d) torch tensors
        batch, heads, seq, d = q.shape
        return q
    with pytest.raises(KernelRaised) as info:
        assert_rope_matches(kernel, 64, base=10000.0)
    assert "(batch, heads, seq, d)" in str(info.value) and "[None, None]" in str(info.value), str(info.value)
    assert "fn raised ValueError" in str(info.value)


# ---- 8. a time limit --------------------------------------------------------------------------------------

@pytest.mark.slow
def test_blocking_kernel_ends_in_a_timeout_naming_the_limit():
    release = threading.Event()

    def blocks(x):
        release.wait()                              # a lock or a device that never returns
        return x
    start = time.monotonic()
    try:
        with pytest.raises(TimeoutError) as info:
            identify(blocks, 8, timeout=0.5)
        with pytest.raises(TimeoutError):
            assert_rope_matches(blocks, 8, base=10000.0, timeout=0.5)
    finally:
        release.set()
    assert time.monotonic() - start < 10
    assert "time limit of 0.5 s" in str(info.value) and "timeout=" in str(info.value), str(info.value)


@pytest.mark.slow
def test_slow_kernel_hits_the_limit_and_a_larger_one_passes():
    def slow(x):
        time.sleep(0.05)
        return neox(x)
    with pytest.raises(TimeoutError, match="time limit of 0.3 s"):
        identify(slow, 8, timeout=0.3)
    assert identify(slow, 8, timeout=60).rope_type == "default"


def test_default_limit_and_no_limit():
    import inspect
    assert inspect.signature(identify).parameters["timeout"].default == TIMEOUT
    threads = set()
    s = identify(lambda x: threads.add(threading.current_thread()) or neox(x), 8, timeout=None)
    assert s.rope_type == "default" and threads == {threading.main_thread()}
    with pytest.raises(ValueError, match="timeout"):
        identify(neox, 8, timeout=-1)
    with pytest.raises(ValueError, match="timeout"):
        identify(lambda x, p: x, 8, axes=2, timeout=-1)


@pytest.mark.slow
def test_blocking_multi_axis_kernel_ends_in_a_timeout_too():
    release = threading.Event()

    def blocks(x, positions):
        release.wait()
        return x
    start = time.monotonic()
    try:
        with pytest.raises(TimeoutError, match="time limit of 0.5 s"):
            identify(blocks, 8, axes=2, timeout=0.5)
        with pytest.raises(TimeoutError, match="time limit of 0.5 s"):
            assert_rope_matches(blocks, 8, axes=3, sections=[2, 1, 1], timeout=0.5)
    finally:
        release.set()
    assert time.monotonic() - start < 10


def test_fn_raising_inside_the_worker_thread_is_reraised_as_raised():
    def exits(x):
        raise SystemExit(3)
    with pytest.raises(SystemExit) as info:            # not a TimeoutError: the call ended
        identify(exits, 8, timeout=30)
    assert info.value.code == 3
    with pytest.raises(KeyError, match="slot 7") as info:
        identify(lambda x: {}["slot 7"], 8, timeout=30)
    assert "raised by fn when rope_ref.identify called it" in info.value.__notes__[0]


# ---- issue 32: a backward pass that is not callable or returns garbage -----------------------------------

@pytest.mark.parametrize("vjp,error,words", [
    (5, TypeError, "vjp must be callable"),
    (lambda x, g: None, TypeError, "vjp must return"),
    (lambda x, g: g[:, :4], ValueError, "vjp must map g of shape"),
    (lambda x, g: g * np.nan, ValueError, "vjp returned non-finite"),
])
def test_bad_vjp_is_named_vjp(vjp, error, words):
    with pytest.raises(error) as info:
        assert_rope_grad_matches(vjp, 8, base=10000.0)
    assert words in str(info.value) and "fn " not in str(info.value), str(info.value)
