"""The precision experiments of notebook 06."""

import ml_dtypes
import numpy as np

import rope_ref as rr
from rope_ref.teaching import precision, quantities


def test_float64_angles_have_no_error():
    e = precision.angle_errors([1, 1e3, 1e6], 64, 1e4, np.float64)
    assert np.all(e["angle"] == 0) and np.all(e["cos"] == 0)


def test_float32_angle_error_is_within_rounding_bounds():
    # Each float32 rounding (theta_i, then the product) is off by at most half an ulp:
    # |error| <= m * theta_i * 2^-24 * 2 (plus the position itself, exact below 2^24).
    pos = np.array([10.0, 1e3, 1e5, 1e6])
    e = precision.angle_errors(pos, 128, 1e4, np.float32)["angle"]
    assert np.all(e <= pos * 2 * 2.0 ** -24 + 1e-12)
    assert e[-1] > 1e-3          # but at 10^6 it is already milliradians


def test_float16_cannot_hold_large_positions():
    e = precision.angle_errors([70000.0], 8, 1e4, np.float16)["angle"]
    assert np.isinf(e[0])


def test_bfloat16_angles_lose_whole_turns():
    e = precision.angle_errors([1e5], 128, 1e4, ml_dtypes.bfloat16)["angle"]
    assert e[0] > 2 * np.pi


def test_rotate_with_float64_angles_is_rotate():
    x = np.random.default_rng(0).standard_normal((5, 16))
    pos = np.arange(5) * 1000.0
    np.testing.assert_allclose(precision.rotate_with_angle_dtype(x, pos, dtype=np.float64), rr.rotate(x, pos),
                               atol=1e-15)
    q, k = quantities.random_qk(16)
    assert np.all(precision.score_error_by_dtype(q, k, pos, dtype=np.float64) < 1e-12)
    assert precision.score_error_by_dtype(q, k, np.array([1e5]), dtype=np.float32)[0] > 1e-6
