"""Finite input never gives NaN or inf: stable softmax, stable linear attention, the precision warning,
and the precision numbers README "Precision" states."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import rope_ref as rr
from rope_ref import checks
from test_attention import linear_attention_loop   # eq 19 term by term, dense rotation matrices


# ---- softmax attention --------------------------------------------------------------------------------

def _pad(a, extra):
    """Append one pair (extra, 0) to every vector: its feature pair rotates, but by the same angle for every
    key when all keys sit at one position."""
    pair = np.zeros(a.shape[:-1] + (2,))
    pair[..., 0] = extra
    return np.concatenate([a, pair], axis=-1)


@pytest.mark.parametrize("shift", [0.0, 50.0, 1e3, 1e5])
def test_scores_shifted_by_a_constant_give_identical_attention(shift, rng):
    """softmax(s + c) = softmax(s): with every key at position 0, an extra feature pair (c*sqrt(d'), 0) in q and
    (1, 0) in k adds c to every score of a row.  A softmax that does not subtract the row max overflows for
    c = 1e3 (e^1000 = inf) and returns NaN."""
    q, k, v = rng.standard_normal((2, 4, 6)), rng.standard_normal((2, 5, 6)), rng.standard_normal((2, 5, 3))
    kp = np.zeros(5)
    ref = rr.attention(_pad(q, 0.0), _pad(k, 1.0), v, k_positions=kp)
    out = rr.attention(_pad(q, shift * np.sqrt(8)), _pad(k, 1.0), v, k_positions=kp)
    np.testing.assert_allclose(out, ref, atol=1e-12 * max(1.0, shift))   # shift rounds the scores by ~ulp(c)


def _argmax_attention(q, k, v, qp, kp):
    """The limit of softmax(t * s) as t -> inf: all weight on the largest score (scores computed with the
    dense matrices at unit scale, independently of rope_ref.rope_attention)."""
    d = q.shape[-1]
    qr = np.einsum("mij,mj->mi", rr.rotation_matrix(qp, d), q)
    kr = np.einsum("nij,nj->ni", rr.rotation_matrix(kp, d), k)
    s = qr @ kr.T
    top = np.sort(s, axis=-1)
    assert np.all(top[:, -1] - top[:, -2] > 1e-6 * np.abs(top[:, -1])), "near-tie: pick another seed"
    return v[np.argmax(s, axis=-1)]


@pytest.mark.parametrize("scale", [1e200, 1e150, 1e100])
def test_huge_inputs_give_the_argmax(scale, rng):
    q, k, v = rng.standard_normal((6, 8)), rng.standard_normal((7, 8)), rng.standard_normal((7, 3))
    qp, kp = np.arange(6.0) + 3, np.arange(7.0)
    out = rr.attention(q * scale, k * scale, v, q_positions=qp, k_positions=kp)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, _argmax_attention(q, k, v, qp, kp), atol=1e-12)


def test_huge_tied_keys_share_the_weight():
    """Two identical keys at the same position tie exactly: the limit gives each half the weight (no inf*0)."""
    q = np.array([[1.0, 0.0, 0.0, 0.0]]) * 1e200
    k = np.array([[1.0, 0, 0, 0], [1.0, 0, 0, 0], [-1.0, 0, 0, 0]]) * 1e200
    v = np.array([[2.0], [4.0], [100.0]])
    out = rr.attention(q, k, v, q_positions=[0], k_positions=[0, 0, 0])
    np.testing.assert_allclose(out, [[3.0]], atol=1e-15)


def test_huge_causal_inputs_ignore_the_future(rng):
    q, k, v = rng.standard_normal((5, 8)) * 1e200, rng.standard_normal((5, 8)) * 1e200, rng.standard_normal((5, 2))
    out = rr.attention(q, k, v, causal=True)
    np.testing.assert_allclose(out[0], v[0], atol=1e-15)          # position 0 sees only key 0
    assert np.all(np.isfinite(out))


def test_tiny_inputs_give_the_mean_of_v(rng):
    """Scores ~1e-400 underflow to 0 or subnormals: softmax is uniform, the output is the mean of v."""
    q, k, v = rng.standard_normal((3, 8)) * 1e-200, rng.standard_normal((4, 8)) * 1e-200, rng.standard_normal((4, 2))
    np.testing.assert_allclose(rr.attention(q, k, v), np.tile(v.mean(0), (3, 1)), atol=1e-15)


def test_moderate_inputs_unchanged_by_the_scaling(rng):
    """The power-of-two scaling is exact: at ordinary magnitudes the result equals the plain formula."""
    q, k, v = rng.standard_normal((4, 6, 16)) * 30, rng.standard_normal((4, 9, 16)) * 30, rng.standard_normal((4, 9, 5))
    qr, kr = rr.rotate(q), rr.rotate(k)
    s = qr @ np.swapaxes(kr, -1, -2) / 4.0
    w = np.exp(s - s.max(-1, keepdims=True))
    np.testing.assert_allclose(rr.attention(q, k, v), (w / w.sum(-1, keepdims=True)) @ v, atol=1e-12)


# ---- linear attention -------------------------------------------------------------------------------

@pytest.mark.parametrize("causal", [False, True])
def test_linear_attention_with_very_negative_q_and_k(causal, rng):
    """For x <= 0, phi(x - 800) = e^-800 phi(x): the factor underflows to 0 in float64 but cancels in eq 19,
    so q - 800, k - 800 give exactly the answer for q, k (<= 0), computed by the plain loop."""
    q, k = -rng.uniform(0, 3, (6, 8)), -rng.uniform(0, 3, (6, 8))
    v = rng.standard_normal((6, 2))
    out = rr.linear_attention(q - 800, k - 800, v, causal=causal)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, linear_attention_loop(q, k, v, causal), atol=1e-12)
    # the case: every q, k = -800 -> every phi equal -> same as q = k = 0
    flat = rr.linear_attention(np.full((6, 8), -800.0), np.full((6, 8), -800.0), v, causal=causal)
    np.testing.assert_allclose(flat, linear_attention_loop(np.zeros((6, 8)), np.zeros((6, 8)), v, causal), atol=1e-12)


def test_linear_attention_with_huge_q_and_k(rng):
    """phi(1e300) = 1e300 for every entry: proportional to phi(0) = 1, so the answer is that of q = k = 0."""
    v = rng.standard_normal((5, 3))
    out = rr.linear_attention(np.full((5, 8), 1e300), np.full((5, 8), 1e300), v, causal=True)
    np.testing.assert_allclose(out, linear_attention_loop(np.zeros((5, 8)), np.zeros((5, 8)), v, True), atol=1e-12)


def test_linear_attention_normalises_each_causal_prefix(rng):
    """Key 0 far below the others (phi(k_0) / max phi = e^-1000 = 0 in float64): query 0 sees key 0 alone, so its
    answer is v_0 exactly; later queries see key 0 with weight ~e^-1000 next to the others.  (This raised before.)"""
    k = rng.uniform(-3, 0, (5, 8))
    q, v = rng.uniform(-3, 0, (5, 8)), rng.standard_normal((5, 2))
    far = k.copy()
    far[0] -= 1000.0                                 # phi(x - 1000) = e^-1000 phi(x) for x <= 0
    out = rr.linear_attention(q, far, v, causal=True)
    np.testing.assert_allclose(out[0], v[0], atol=1e-12)
    rest = linear_attention_loop(q[1:], k[1:], v[1:], True, positions=np.arange(1, 5))
    np.testing.assert_allclose(out[1:], rest, atol=1e-12)


def test_linear_attention_raises_when_no_feature_of_q_meets_one_of_k():
    q, k = np.array([[0.0, -2000.0]]), np.array([[-2000.0, 0.0]])   # phi(q).phi(k) = 2e^-2000: 0 however scaled
    with pytest.raises(ValueError):
        rr.linear_attention(q, k, np.ones((1, 2)), causal=True)
    with pytest.raises(ValueError):                  # the dense form computes plainly and refuses too
        rr.linear_attention_dense(np.full((4, 8), -800.0), np.full((4, 8), -800.0), np.ones((4, 2)))


def test_elu_plus_one_takes_array_likes():
    np.testing.assert_allclose(rr.elu_plus_one([1.0, -2.0, 0]), [2.0, np.exp(-2.0), 1.0], rtol=1e-15)
    assert rr.elu_plus_one(3).dtype == np.float64


# ---- precision: warned on every call, with Python's own warnings --------------------------------------------

def _precision_warnings(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [w for w in caught if issubclass(w.category, rr.RopeRefPrecisionWarning)]


FORMS = [rr.rotate, rr.rotate_elementwise, rr.rotate_dense, rr.rotate_complex]


@pytest.mark.parametrize("fn", FORMS)
def test_angles_float64_rounds_by_more_than_1e_6_rad_warn_on_every_call(fn):
    """Issue 38: the angle warning came once per process; it must come on every call."""
    x = np.ones((3, 4))
    for _ in range(3):
        assert len(_precision_warnings(lambda: fn(x, np.full(3, 1e15)))) == 1
    assert _precision_warnings(lambda: rr.rotation_matrix(1e15, 4))
    assert _precision_warnings(lambda: rr.rotation_angles([1e15], [1.0]))


def test_no_warning_below_the_limit_and_the_limit_follows_the_largest_frequency():
    below = np.nextafter(2.0 ** 34, 0)
    assert np.spacing(below) / 2 <= 1e-6 < np.spacing(2.0 ** 34) / 2           # 2^34: where the rounding passes 1e-6
    assert not _precision_warnings(lambda: rr.rotate(np.ones((2, 4)), [below, -below]))
    assert not _precision_warnings(lambda: rr.rotate(np.ones((2, 4)), [1e20, 1e20], inv_freq=[1e-11, 1e-12]))
    assert _precision_warnings(lambda: rr.rotate(np.ones((1, 4)), [1e9], inv_freq=[100.0, 1.0]))   # 1e11 rad


TINY = [1e-20]                                                      # angles far below 2^34: no angle warning


@pytest.mark.parametrize("fn", [
    lambda x, p: rr.rotate(x, p, inv_freq=TINY), lambda x, p: rr.rotate_elementwise(x, p, inv_freq=TINY),
    lambda x, p: rr.rotate_dense(x, p, inv_freq=TINY), lambda x, p: rr.rotate(x, p[None], inv_freq=[TINY]),
    lambda x, p: rr.rotation_matrix(p, 2, inv_freq=TINY), lambda x, p: rr.partial_sums(p, 2, inv_freq=TINY)])
def test_integer_positions_float64_cannot_hold_warn_on_every_call(fn):
    """Two distinct int64 positions beyond 2^53 that give identical rows are never silent."""
    pos = np.array([2**60, 2**60 + 1], dtype=np.int64)
    x = np.ones((2, 2))
    for _ in range(2):
        assert len(_precision_warnings(lambda: fn(x, pos))) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = rr.rotate(x, pos, inv_freq=[1e-20])
    np.testing.assert_array_equal(out[0], out[1])                  # why it warns: the rows are identical
    assert not _precision_warnings(lambda: rr.rotate(x, np.array([2**53, 2**53 - 1]), inv_freq=[1e-20]))


# ---- the numbers README "Precision" states -------------------------------------------------------------

@pytest.mark.slow
def test_readme_precision_numbers():
    """README: identities hold to ~1e-12 at moderate positions and ~1e-10 at 10^6 (float64 rounding of m*theta).
    The angle error is bounded by half an ulp of the largest angle (theta_0 = 1) and comes close to it."""
    for position, lo, hi in [(1e3, 1e-14, 1e-12), (1e6, 1e-11, 1e-9)]:
        r = checks.precision_at(position)
        half_ulp = np.spacing(position + 31) / 2
        assert half_ulp / 4 <= r.angle_error <= half_ulp
        assert lo <= r.matrix_error <= hi
        assert lo <= r.score_error <= 10 * hi
    assert checks.precision_at(0).matrix_error < 1e-14


# ---- property: any finite position either works (finite result, warned iff beyond the limit) or raises ----

@settings(max_examples=30, deadline=None)
@given(exp_m=st.floats(-3, 300), exp_f=st.floats(-300, 10), sign=st.sampled_from([1.0, -1.0]),
       fn=st.sampled_from([rr.rotate, rr.rotate_elementwise, rr.rotate_dense]))
@example(exp_m=10.2, exp_f=0.0, sign=1.0, fn=rr.rotate)           # 1.6e10 < 2^34: no warning
@example(exp_m=10.3, exp_f=0.0, sign=-1.0, fn=rr.rotate)          # 2.0e10 > 2^34: warning
@example(exp_m=10.3, exp_f=-5.0, sign=1.0, fn=rr.rotate_dense)    # theta_0 = 1: warning
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
