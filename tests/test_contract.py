"""dtypes: each accepted dtype kept (integers promoted to float64), with angles in float64."""

import ml_dtypes
import numpy as np
import pytest

import rope_ref as rr

# A NumPy RuntimeWarning (or any other) escaping a call is itself a contract violation.
pytestmark = pytest.mark.filterwarnings("error")

FLOATS = [np.float16, np.float32, np.float64, ml_dtypes.bfloat16]
TOL = {np.float16: 2e-3, np.float32: 1e-6, np.float64: 1e-13, ml_dtypes.bfloat16: 1.6e-2}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("fn", [
    lambda x: rr.rotate(x), lambda x: rr.rotate(x, pairing="half"), lambda x: rr.rotate(x, rotary_dim=4),
    rr.rotate_dense, rr.rotate_complex, rr.to_half, rr.to_interleaved,
])
def test_dtype_is_preserved_and_values_close(fn, dtype, rng):
    x64 = rng.standard_normal((3, 40, 8))
    x = x64.astype(dtype)
    out = fn(x)
    assert out.dtype == np.dtype(dtype)
    ref = fn(x.astype(np.float64))
    np.testing.assert_allclose(out.astype(np.float64), ref, atol=4 * TOL[dtype] * np.abs(ref).max())


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_angles_are_computed_in_float64(dtype):
    # At position 10^6 + 1 with theta_1 = 0.01, a float32 angle is off by ~6e-4 rad (float16 cannot
    # even hold the position); float64 angles keep the result within the output dtype's rounding.
    x = np.ones((1, 4), dtype=dtype)
    m = 1_000_001.0
    out = rr.rotate(x, [m]).astype(np.float64)
    a = m * np.array([1.0, 0.01])
    exact = np.stack([np.cos(a) - np.sin(a), np.cos(a) + np.sin(a)], axis=-1).ravel()
    eps = float(ml_dtypes.finfo(dtype).eps)
    np.testing.assert_allclose(out[0], exact, atol=4 * eps)


def test_integers_are_promoted_to_float64():
    out = rr.rotate(np.arange(8).reshape(2, 4))
    assert out.dtype == np.float64


def test_a_memoryview_of_numbers_is_still_numbers():
    np.testing.assert_array_equal(rr.rotate(np.ones((1, 2)), memoryview(np.array([0.0]))), [[1.0, 1.0]])
