"""The precision experiments of notebook 06, against rounding bounds and float64."""

import ml_dtypes
import numpy as np

import rope_ref as rr
from rope_ref.teaching import precision, quantities


def test_angle_errors_by_dtype():
    e = precision.angle_errors([1, 1e3, 1e6], 64, 1e4, np.float64)
    assert np.all(e["angle"] == 0) and np.all(e["cos"] == 0)                   # float64 angles have no error
    pos = np.array([10.0, 1e3, 1e5, 1e6])             # each float32 rounding (theta_i, the product) is half an ulp
    e = precision.angle_errors(pos, 128, 1e4, np.float32)["angle"]
    assert np.all(e <= pos * 2 * 2.0 ** -24 + 1e-12) and e[-1] > 1e-3          # but milliradians at 10^6
    assert np.isinf(precision.angle_errors([70000.0], 8, 1e4, np.float16)["angle"][0])    # float16 overflows
    assert precision.angle_errors([1e5], 128, 1e4, ml_dtypes.bfloat16)["angle"][0] > 2 * np.pi  # whole turns lost


def test_rotate_with_float64_angles_is_rotate():
    x = np.random.default_rng(0).standard_normal((5, 16))
    pos = np.arange(5) * 1000.0
    np.testing.assert_allclose(precision.rotate_with_angle_dtype(x, pos, dtype=np.float64), rr.rotate(x, pos),
                               atol=1e-15)
    q, k = quantities.random_qk(16)
    assert np.all(precision.score_error_by_dtype(q, k, pos, dtype=np.float64) < 1e-12)
    assert precision.score_error_by_dtype(q, k, np.array([1e5]), dtype=np.float32)[0] > 1e-6
