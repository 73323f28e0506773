"""rope_ref._f16 against NumPy's own float16 casts, bit for bit, and against values worked out by hand.

NumPy's casts (scalar C code) are the independent reference; the hand-derived cases pin the rounding
rules themselves (ties to even, subnormal grid 2**-24, overflow at 65520) so that the tests would still
mean something if NumPy changed.  Every float32 -> float16 comparison is on the uint16 bit patterns, so
-0.0 vs 0.0 and NaN payloads count.
"""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from rope_ref._f16 import all_finite, from_float32, to_float32

ALL16 = np.arange(1 << 16, dtype=np.uint16)          # every float16 bit pattern


def numpy_half(f: np.ndarray) -> np.ndarray:
    """NumPy's float32 -> float16 cast, as uint16 bits."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(f, np.float32).astype(np.float16).view(np.uint16)


def ours_half(f: np.ndarray, **kw) -> np.ndarray:
    f = np.asarray(f, np.float32, order="C")
    return from_float32(f, np.empty(f.shape, np.uint16), **kw)


def ours_float(h: np.ndarray) -> np.ndarray:
    return to_float32(h, np.empty(h.shape, np.float32))


def assert_same_bits(got: np.ndarray, want: np.ndarray, inputs: np.ndarray) -> None:
    """Equal bit patterns; on failure, show the first inputs that differ (as bits) with both outputs."""
    got, want, inputs = got.reshape(-1), want.reshape(-1), inputs.reshape(-1)
    bad = np.flatnonzero(got != want)[:5]
    as_bits = inputs.view(np.uint32 if inputs.dtype.itemsize == 4 else np.uint16)
    assert bad.size == 0, "mismatches at input bits " + ", ".join(
        f"{int(as_bits[i]):#x}: got {int(got[i]):#x}, want {int(want[i]):#x}" for i in bad)


# ---- float16 -> float32 ---------------------------------------------------------------------------

def test_to_float32_every_pattern_matches_numpy():
    got = ours_float(ALL16)
    want = ALL16.view(np.float16).astype(np.float32)
    assert_same_bits(got.view(np.uint32), want.view(np.uint32), ALL16)


def test_to_float32_every_finite_pattern_matches_the_formula():
    """Decode sign, exponent, mantissa by the IEEE rule in float64: (-1)^s 2^(e-15) (1 + m/1024),
    subnormals 2^-14 (m/1024); inf for e = 31, m = 0; NaN otherwise."""
    s, e, m = ALL16 >> 15, (ALL16 >> 10) & 31, (ALL16 & 1023).astype(np.float64)
    sign = np.where(s == 1, -1.0, 1.0)
    with np.errstate(invalid="ignore"):
        value = sign * np.where(e == 0, 2.0 ** -14 * (m / 1024), 2.0 ** (e.astype(np.float64) - 15) * (1 + m / 1024))
        value = np.where(e == 31, np.where(m == 0, sign * np.inf, np.nan), value)
    with np.errstate(invalid="ignore"):                       # signalling NaNs
        got = ours_float(ALL16).astype(np.float64)
    np.testing.assert_array_equal(got, value)
    assert np.array_equal(np.signbit(got), s == 1)            # -0.0 stays negative


@pytest.mark.parametrize("chunk", [1 << 10, 1 << 16])
def test_to_float32_blocks_with_and_without_inf_nan(chunk):
    """Blocks of consecutive patterns: most hold no inf/NaN (no fix-up), a few do."""
    want = ALL16.view(np.float16).astype(np.float32).view(np.uint32)
    for start in range(0, 1 << 16, chunk):
        h = ALL16[start:start + chunk].view(np.float16)          # float16 input works like uint16
        assert_same_bits(ours_float(h).view(np.uint32), want[start:start + chunk], ALL16[start:start + chunk])


# ---- float32 -> float16 ---------------------------------------------------------------------------

def _float16_grid() -> np.ndarray:
    """Every finite float16 value as float32, sorted, -65504 .. 65504 (both zeros)."""
    v = ALL16.view(np.float16).astype(np.float32)
    return np.sort(v[np.isfinite(v)])


def structured_float32() -> np.ndarray:
    """Float16 values, midpoints between neighbours (exact in float32), each +- one float32 ulp,
    the overflow edge, the subnormal edges, zeros, infinities and NaNs with payloads."""
    grid = _float16_grid()
    mid = ((grid[:-1].astype(np.float64) + grid[1:]) / 2).astype(np.float32)
    assert np.array_equal(mid.astype(np.float64), (grid[:-1].astype(np.float64) + grid[1:]) / 2)
    base = np.concatenate([grid, mid])
    edges = np.array([65504, np.nextafter(np.float32(65520), 0), 65520, np.nextafter(np.float32(65520), np.inf),
                      65536, 131072, 1e10, np.finfo(np.float32).max, np.inf,
                      2.0 ** -14, np.nextafter(np.float32(2.0 ** -14), 0), 2.0 ** -14 - 2.0 ** -25,
                      2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -25, 2.0 ** -26, 2.0 ** -40,
                      np.finfo(np.float32).smallest_subnormal, np.finfo(np.float32).tiny, 0.0], np.float32)
    nan_bits = np.array([0x7F800001, 0x7F801FFF, 0x7F802000, 0x7FA00000, 0x7FC00000, 0x7FC00001, 0x7FFFFFFF,
                         0x7FBFE000], np.uint32)
    x = np.concatenate([base, np.nextafter(base, np.float32(np.inf)), np.nextafter(base, np.float32(-np.inf)), edges])
    x = np.concatenate([x, -x]).astype(np.float32)
    return np.concatenate([x, nan_bits.view(np.float32), (nan_bits | 0x80000000).view(np.float32)])


def test_from_float32_structured_values_match_numpy():
    f = structured_float32()
    assert_same_bits(ours_half(f), numpy_half(f), f)


def test_from_float32_structured_values_in_small_sorted_blocks():
    """The fix-up is decided per call: blocks of 16 neighbouring magnitudes, so that some calls hold
    only values just outside (or just inside) the float16 normal range, with nothing else to trigger it."""
    f = structured_float32()
    f = f[np.argsort(np.abs(f), kind="stable")]
    f = np.concatenate([f, np.zeros(-f.size % 16, np.float32)]).reshape(-1, 16)
    got = np.stack([ours_half(block) for block in f])
    assert_same_bits(got, numpy_half(f), f)


@pytest.mark.parametrize("f, bits", [
    (1.0, 0x3C00),
    (1 + 2.0 ** -11, 0x3C00),                  # tie between 1 and 1 + 2^-10: to even (1)
    (1 + 3 * 2.0 ** -11, 0x3C02),              # tie between 1 + 2^-10 and 1 + 2^-9: to even (up)
    (1 + 2.0 ** -11 + 2.0 ** -23, 0x3C01),     # just above a tie: up
    (2 - 2.0 ** -11, 0x4000),                  # tie at the top of a binade carries into the exponent
    (-2.5, 0xC100),
    (-0.0, 0x8000),
    (65504, 0x7BFF),
    (65519.99, 0x7BFF),                        # below the midpoint 65520 between 65504 and 2^16
    (65520, 0x7C00),                           # the tie rounds to even, i.e. 2^16, which overflows
    (70000, 0x7C00),                           # |f| in [2^16, 2^17): the normal path alone would give NaN bits
    (-131071, 0xFC00),
    (-1e6, 0xFC00),
    (2.0 ** -14, 0x0400),
    (2.0 ** -24, 0x0001),                      # smallest subnormal
    (2.0 ** -25, 0x0000),                      # tie between 0 and 2^-24: to even (0)
    (-(2.0 ** -25), 0x8000),
    (3 * 2.0 ** -25, 0x0002),                  # tie between 2^-24 and 2^-23: to even (up)
    (2.0 ** -14 - 2.0 ** -25, 0x0400),         # tie between the largest subnormal and 2^-14: to even (up)
    (np.inf, 0x7C00),
])
def test_from_float32_hand_derived(f, bits):
    assert int(ours_half(np.array([f], np.float32))[0]) == bits


def test_from_float32_nan_payloads():
    """NaN stays NaN (never inf) with the sign and the top 10 payload bits, as NumPy does."""
    nan = np.array([0x7F800001, 0xFF800001, 0x7FC00000, 0x7F802000, 0x7FFFFFFF], np.uint32).view(np.float32)
    assert [hex(b) for b in ours_half(nan)] == ["0x7c01", "0xfc01", "0x7e00", "0x7c01", "0x7fff"]


def test_from_float32_random_bit_patterns_match_numpy():
    f = np.random.default_rng(16).integers(0, 1 << 32, 1 << 21, dtype=np.uint32).view(np.float32)
    assert_same_bits(ours_half(f), numpy_half(f), f)


def test_from_float32_blocks_without_specials_match_numpy():
    """Typical data: normals only (no fix-up runs), then the same block with one zero in it."""
    rng = np.random.default_rng(5)
    f = (rng.standard_normal(1 << 16) * 30).astype(np.float32)
    f[np.abs(f) < 2.0 ** -14] = 1.0
    assert_same_bits(ours_half(f), numpy_half(f), f)
    f[123] = 0.0
    assert_same_bits(ours_half(f), numpy_half(f), f)


@settings(max_examples=200, deadline=None)
@given(hnp.arrays(np.float32, st.integers(0, 300), elements=st.floats(width=32, allow_subnormal=True)))
def test_from_float32_hypothesis_arrays(f):
    assert_same_bits(ours_half(f), numpy_half(f), f)


def test_no_floating_point_warnings():
    """Signalling NaNs, overflow and subnormals are data here, not errors: no RuntimeWarning."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours_half(structured_float32())
        ours_float(ALL16)


# ---- round trip, shapes, buffers, bad input --------------------------------------------------------

def test_round_trip_is_identity_on_every_pattern():
    back = ours_half(ours_float(ALL16))
    assert_same_bits(back, ALL16, ALL16)


def test_shapes_buffers_and_inputs_untouched():
    rng = np.random.default_rng(3)
    f = rng.standard_normal((3, 5, 8)).astype(np.float32)
    f_before = f.copy()
    out = np.empty(f.shape, np.float16)
    work = np.empty((3,) + f.shape, np.uint32)
    assert from_float32(f, out, work=work) is out
    assert np.array_equal(out.view(np.uint16), numpy_half(f))
    assert np.array_equal(f, f_before)
    h_before = out.copy()
    back = np.empty(f.shape, np.float32)
    assert to_float32(out, back) is back
    assert np.array_equal(back, out.astype(np.float32)) and np.array_equal(out.view(np.uint16), h_before.view(np.uint16))
    for shape in ((0,), (1,), (), (2, 0, 3)):
        assert ours_half(np.ones(shape, np.float32)).shape == shape and ours_float(np.ones(shape, np.uint16)).shape == shape
    assert int(ours_half(np.array(-2.0 ** -24, np.float32))) == 0x8001          # 0-d: the smallest negative subnormal
    assert ours_float(np.array(0xFC00, np.uint16)) == -np.inf


def test_bad_arguments_are_named():
    f, h = np.ones(8, np.float32), np.ones(8, np.float16)
    with pytest.raises(TypeError, match=r"^f must be a numpy array of float32, got dtype float64"):
        from_float32(np.ones(8), np.empty(8, np.float16))
    with pytest.raises(TypeError, match=r"^out must be a numpy array of float16 or uint16, got dtype float32"):
        from_float32(f, np.empty(8, np.float32))
    with pytest.raises(TypeError, match=r"^h must be a numpy array of float16 or uint16, got list"):
        to_float32([1.0], np.empty(1, np.float32))
    with pytest.raises(TypeError, match=r"^h must be a numpy array of float16 or uint16, got dtype int16"):
        to_float32(np.ones(8, np.int16), np.empty(8, np.float32))
    with pytest.raises(ValueError, match=r"^out must have shape \(8,\) \(the input's\), got \(7,\)"):
        to_float32(h, np.empty(7, np.float32))
    with pytest.raises(ValueError, match=r"^f must be C-contiguous"):
        from_float32(np.ones(16, np.float32)[::2], np.empty(8, np.float16))
    with pytest.raises(TypeError, match=r"^work must be a C-contiguous uint32 array of shape \(3, 8\), got int32 of shape \(3, 8\)"):
        from_float32(f, np.empty(8, np.float16), work=np.empty((3, 8), np.int32))
    with pytest.raises(TypeError, match=r"^work must be a C-contiguous uint32 array of shape \(3, 8\), got uint32 of shape \(8,\)"):
        from_float32(f, np.empty(8, np.float16), work=np.empty(8, np.uint32))
    with pytest.raises(ValueError, match=r"^out must not overlap the input"):
        buf = np.ones(16, np.float32)
        from_float32(buf[:8], buf.view(np.uint16)[4:12])
    with pytest.raises(ValueError, match=r"^work must not overlap f or out"):
        out = np.empty(48, np.uint16)
        from_float32(f, out[:8], work=out.view(np.uint32).reshape(3, 8))


def test_benchmark_script_runs():
    """benchmarks/bench_f16.py --quick prints every row (a smoke run: no timing is asserted)."""
    script = Path(__file__).resolve().parent.parent / "benchmarks" / "bench_f16.py"
    res = subprocess.run([sys.executable, str(script), "--quick"], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    rows = [line for line in res.stdout.splitlines() if line.startswith("| 2**")]
    assert len(rows) == 6 * 4, res.stdout                       # 6 block/data cases x (3 directions + floors)
    assert sum(("faster" in r) for r in rows) == 6 * 3


def test_all_finite_reads_every_float16_bit_pattern_right():
    """The float16 fast path of all_finite against the definition: exponent field all ones is inf or NaN."""
    patterns = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    nonfinite = patterns[(patterns & 0x7C00) == 0x7C00]                  # 2 infinities, 2046 NaNs
    assert nonfinite.size == 2048
    finite = patterns[(patterns & 0x7C00) != 0x7C00].view(np.float16)
    assert all_finite(finite) and all_finite(np.tile(finite, 3).reshape(3, -1)) and all_finite(finite[:0])
    rng = np.random.default_rng(5)
    for p in nonfinite:                                                  # alone, anywhere in a long array
        big = np.tile(finite, 2)                                         # 126,976 values: several blocks
        big[rng.integers(big.size)] = p.view(np.float16)
        assert not all_finite(big), hex(int(p))
    for dtype in (np.float32, np.float64):
        assert all_finite(np.array([0.0, -1e30], dtype)) and not all_finite(np.array([0.0, np.inf], dtype))
