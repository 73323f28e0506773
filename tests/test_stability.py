"""Finite input never gives NaN or inf: stable softmax and linear attention (with tests/test_attention.py), the
precision warnings (on every call), and the precision numbers docs/precision.md states."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import rope_ref as rr
from rope_ref import checks
from test_attention import linear_attention_loop   # eq 19 term by term, dense rotation matrices


@pytest.mark.parametrize("scale", [1e200, 1e100])
def test_huge_tied_keys_share_the_weight_and_tiny_inputs_give_the_mean(scale, rng):
    q, k, v = rng.standard_normal((6, 8)), rng.standard_normal((7, 8)), rng.standard_normal((7, 3))
    np.testing.assert_allclose(rr.attention(q / scale, k / scale, v), np.tile(v.mean(0), (6, 1)), atol=1e-15)
    causal = rr.attention(q * scale, k * scale, v, causal=True)
    np.testing.assert_allclose(causal[0], v[0], atol=1e-15)                       # position 0 sees only key 0
    tied = np.array([[1.0, 0, 0, 0], [1.0, 0, 0, 0], [-1.0, 0, 0, 0]]) * scale
    out = rr.attention(tied[:1], tied, np.array([[2.0], [4.0], [100.0]]), q_positions=[0], k_positions=[0, 0, 0])
    np.testing.assert_allclose(out, [[3.0]], atol=1e-15)


@pytest.mark.parametrize("causal", [False, True])
def test_linear_attention_with_huge_or_underflowing_features(causal, rng):
    """phi(1e300) is proportional to phi(0); phi(q).phi(k) = 2e^-2000 is 0 however scaled: refused, not NaN."""
    v = rng.standard_normal((6, 2))
    zeros = linear_attention_loop(np.zeros((6, 8)), np.zeros((6, 8)), v, causal)
    for value in (-800.0, 1e300):
        np.testing.assert_allclose(rr.linear_attention(np.full((6, 8), value), np.full((6, 8), value), v,
                                                       causal=causal), zeros, atol=1e-12)
    with pytest.raises(ValueError):
        rr.linear_attention(np.array([[0.0, -2000.0]]), np.array([[-2000.0, 0.0]]), np.ones((1, 2)), causal=causal)


def _precision_warnings(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [w for w in caught if issubclass(w.category, rr.RopeRefPrecisionWarning)]


TINY = [1e-20]                                                      # angles far below 2^34: no angle warning


@pytest.mark.parametrize("fn", [
    lambda x, p: rr.rotate(x, p, inv_freq=TINY), lambda x, p: rr.rotate_elementwise(x, p, inv_freq=TINY),
    lambda x, p: rr.rotate_dense(x, p, inv_freq=TINY), lambda x, p: rr.rotate(x, p[None], inv_freq=[TINY]),
    lambda x, p: rr.rotate_complex(x, p * 0 + 1e15), lambda x, p: rr.rotation_matrix(p, 2, inv_freq=TINY),
    lambda x, p: rr.partial_sums(p, 2, inv_freq=TINY), lambda x, p: rr.rotation_angles([1e15], [1.0]),
    lambda x, p: rr.softmax(p), lambda x, p: rr.wrap_angle(p)])                     # scores and angles too
def test_positions_float64_cannot_hold_warn_on_every_call(fn):
    """Issue 38: two int64 positions beyond 2^53 giving identical rows warn on every call, not once per process."""
    pos = np.array([2**60, 2**60 + 1], dtype=np.int64)
    x = np.ones((2, 2))
    for _ in range(2):
        assert len(_precision_warnings(lambda: fn(x, pos))) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = rr.rotate(x, pos, inv_freq=[1e-20])
    np.testing.assert_array_equal(out[0], out[1])                  # why it warns: the rows are identical
    assert _precision_warnings(lambda: rr.rotate(x, [2**53 + 1, 0.5], inv_freq=[1e-20]))   # Python ints beside floats
    assert not _precision_warnings(lambda: rr.rotate(x, np.array([2**53, 2**53 - 1]), inv_freq=[1e-20]))


@pytest.mark.slow
def test_the_precision_numbers_docs_state():
    """~1e-12 at 10^3, ~1e-10 at 10^6; the angle error just below half an ulp of the largest angle."""
    for position, lo, hi in [(1e3, 1e-14, 1e-12), (1e6, 1e-11, 1e-9)]:
        r = checks.precision_at(position)
        half_ulp = np.spacing(position + 31) / 2
        assert half_ulp / 4 <= r.angle_error <= half_ulp
        assert lo <= r.matrix_error <= hi
        assert lo <= r.score_error <= 10 * hi
    assert checks.precision_at(0).matrix_error < 1e-14


@settings(max_examples=30, deadline=None)
@given(exp_m=st.floats(-3, 300), exp_f=st.floats(-300, 10), sign=st.sampled_from([1.0, -1.0]),
       fn=st.sampled_from([rr.rotate, rr.rotate_elementwise, rr.rotate_dense]))
@example(exp_m=10.2, exp_f=0.0, sign=1.0, fn=rr.rotate)           # 1.6e10 < 2^34: no warning
@example(exp_m=10.3, exp_f=0.0, sign=-1.0, fn=rr.rotate)          # 2.0e10 > 2^34: warning
@example(exp_m=10.3, exp_f=-5.0, sign=1.0, fn=rr.rotate_dense)    # theta_0 = 1: warning
@example(exp_m=20.0, exp_f=-11.0, sign=1.0, fn=rr.rotate)         # 1e9 rad: the limit follows the frequencies
@example(exp_m=300.0, exp_f=9.0, sign=1.0, fn=rr.rotate_elementwise)  # 1e309: overflow
def test_any_finite_position_is_answered_or_refused(exp_m, exp_f, sign, fn):
    m, f = sign * 10.0 ** exp_m, 10.0 ** exp_f
    x = np.array([[1.0, 2.0, -0.5, 0.25]])
    kw = {} if fn is rr.rotate_dense else {"inv_freq": [f, f / 2]}   # rotate_dense: theta_0 = 1
    peak = abs(m) * (1.0 if fn is rr.rotate_dense else f)            # Python floats: inf iff float64 overflows
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if math.isinf(peak):
            with pytest.raises(ValueError, match="^positions"):
                fn(x, [m], **kw)
            return
        out = fn(x, [m], **kw)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(np.linalg.norm(out), np.linalg.norm(x), rtol=1e-14)   # still a rotation
    warned = [w for w in caught if issubclass(w.category, rr.RopeRefPrecisionWarning)]
    assert bool(warned) == (peak >= 2.0 ** 34)
