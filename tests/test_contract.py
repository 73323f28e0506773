"""dtypes, no mutation, and every bad input named in the core issue."""

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


def _readonly(a):
    a = np.array(a)
    a.setflags(write=False)
    return a


def test_inputs_are_not_modified(rng):
    x = _readonly(rng.standard_normal((2, 6, 8)))
    pos = _readonly(np.arange(6.0))
    before = x.copy()
    for fn in [rr.rotate, rr.rotate_dense, rr.rotate_complex]:
        fn(x, pos)
    rr.rotate(x, pos, pairing="half", rotary_dim=4, inv_freq=_readonly(rr.frequencies(4)))
    rr.to_half(x), rr.to_interleaved(x), rr.permute_qk_weights(_readonly(rng.standard_normal((16, 3))), 2)
    q, k, v = (_readonly(rng.standard_normal((2, 6, 8))) for _ in range(3))
    rr.attention(q, k, v, q_positions=pos, k_positions=pos, causal=True)
    rr.linear_attention(q, k, v, positions=pos, causal=True)
    rr.decay_bound(pos), rr.partial_sums(pos, 8), rr.sinusoidal(pos, 8), rr.rotation_matrix(pos, 8)
    np.testing.assert_array_equal(x, before)
    np.testing.assert_array_equal(pos, np.arange(6.0))


def test_output_is_a_new_array(rng):
    x = rng.standard_normal((4, 8))
    out = rr.rotate(x, np.zeros(4))
    np.testing.assert_array_equal(out, x)
    assert not np.shares_memory(out, x)


X = np.zeros((2, 5, 8))
QKV = np.zeros((2, 5, 8))

BAD_INPUTS = [
    # (call, exception, words the message must contain)
    (lambda: rr.frequencies(7), ValueError, ["d", "even"]),
    (lambda: rr.frequencies(0), ValueError, ["d", "positive"]),
    (lambda: rr.frequencies(-4), ValueError, ["d", "positive"]),
    (lambda: rr.frequencies(4.0), TypeError, ["d", "integer"]),
    (lambda: rr.rotation_matrix(1.0, 5), ValueError, ["d", "even"]),
    (lambda: rr.rotate(np.zeros((2, 5))), ValueError, ["x.shape[-1]", "even"]),
    (lambda: rr.rotate(X, rotary_dim=3), ValueError, ["rotary_dim", "even"]),
    (lambda: rr.rotate(X, rotary_dim=0), ValueError, ["rotary_dim"]),
    (lambda: rr.rotate(X, rotary_dim=-2), ValueError, ["rotary_dim"]),
    (lambda: rr.rotate(X, rotary_dim=10), ValueError, ["rotary_dim", "d=8"]),
    (lambda: rr.rotate(X, np.array([0, 1, np.nan, 3, 4])), ValueError, ["positions", "finite"]),
    (lambda: rr.rotate(X, np.array([0, 1, np.inf, 3, 4])), ValueError, ["positions", "finite"]),
    (lambda: rr.rotate(X, np.arange(5) + 1j), TypeError, ["positions", "complex"]),
    (lambda: rr.rotate(X, ["a", "b", "c", "d", "e"]), TypeError, ["positions"]),
    (lambda: rr.rotate(X, np.arange(6)), ValueError, ["positions", "(6,)", "(2, 5)"]),
    (lambda: rr.rotate(X, np.zeros((3, 5))), ValueError, ["positions", "(3, 5)", "(2, 5)"]),
    (lambda: rr.rotate(X, base=0.0), ValueError, ["base", "positive"]),
    (lambda: rr.rotate(X, base=-10.0), ValueError, ["base", "positive"]),
    (lambda: rr.rotate(X, base=np.inf), ValueError, ["base", "finite"]),
    (lambda: rr.rotate(X, base=np.nan), ValueError, ["base", "finite"]),
    (lambda: rr.rotate(X, base="10000"), TypeError, ["base"]),
    (lambda: rr.rotate(X, inv_freq=np.ones(3)), ValueError, ["inv_freq", "(4,)", "(3,)"]),
    (lambda: rr.rotate(X, rotary_dim=4, inv_freq=np.ones(4)), ValueError, ["inv_freq", "(2,)"]),
    (lambda: rr.rotate(X, pairing="neox"), ValueError, ["pairing", "interleaved", "half"]),
    (lambda: rr.rotate(X.astype(complex)), TypeError, ["x", "complex"]),
    (lambda: rr.rotate(X.astype(object)), TypeError, ["x", "object"]),
    (lambda: rr.rotate("not an array"), TypeError, ["x", "string"]),
    (lambda: rr.rotate(np.array(["ab", "cd"])), TypeError, ["x"]),
    (lambda: rr.rotate(np.float64(3.0)), ValueError, ["x", "0-d"]),
    (lambda: rr.rotate_dense(X, base=-1.0), ValueError, ["base"]),
    (lambda: rr.rotate_complex(X, np.arange(7)), ValueError, ["positions", "(7,)"]),
    (lambda: rr.sinusoidal([1.0], 3), ValueError, ["d", "even"]),
    (lambda: rr.decay_bound([np.nan]), ValueError, ["distance", "finite"]),
    (lambda: rr.partial_sums([1j], 8), TypeError, ["distance", "complex"]),
    (lambda: rr.permute_qk_weights(np.zeros((10, 3)), 4), ValueError, ["n_heads", "10"]),
    (lambda: rr.permute_qk_weights(np.zeros(10), 2), ValueError, ["w", "2-D"]),
    (lambda: rr.attention(QKV, QKV[:, :, :4], QKV), ValueError, ["q", "k", "d"]),
    (lambda: rr.attention(QKV, QKV, QKV[:, :4]), ValueError, ["k", "v", "positions"]),
    (lambda: rr.attention(QKV, QKV, np.zeros((3, 5, 8))), ValueError, ["leading"]),
    (lambda: rr.attention(QKV, QKV, QKV, k_positions=np.arange(4)), ValueError, ["k_positions", "(4,)"]),
    (lambda: rr.attention(QKV, QKV, QKV, pairing="x"), ValueError, ["pairing"]),
    (lambda: rr.linear_attention(QKV, QKV[:, :3], QKV[:, :3]), ValueError, ["same length"]),
    (lambda: rr.linear_attention(QKV, QKV, QKV.astype(complex)), TypeError, ["v", "complex"]),
]


@pytest.mark.parametrize("call,exc,words", BAD_INPUTS, ids=[str(i) for i in range(len(BAD_INPUTS))])
def test_bad_input_is_named(call, exc, words):
    with pytest.raises(exc) as info:
        call()
    msg = str(info.value)
    for w in words:
        assert w in msg, f"{w!r} not in message {msg!r}"


@pytest.mark.parametrize("pairing", ["interleaved", "half"])
def test_out_buffer(pairing, rng):
    x = rng.standard_normal((3, 9, 16)).astype(np.float32)
    buf = np.full_like(x, np.nan)
    res = rr.rotate(x, pairing=pairing, rotary_dim=8, out=buf)
    assert res is buf
    np.testing.assert_array_equal(buf, rr.rotate(x, pairing=pairing, rotary_dim=8))
    with pytest.raises(ValueError, match="overlap"):
        rr.rotate(x, out=x)
    with pytest.raises(ValueError, match="shape"):
        rr.rotate(x, out=np.empty((3, 9, 16)))
    with pytest.raises(TypeError, match="out"):
        rr.rotate(x, out=[1, 2])


@pytest.mark.parametrize("pairing", ["interleaved", "half"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_non_contiguous_and_large_inputs_take_the_blocked_path(pairing, dtype, rng):
    # Fortran-ordered input, more rows than one block: same numbers as the dense matrix form.
    x = rng.standard_normal((3000, 16))
    pos = np.arange(3000) * 0.37
    dense = rr.rotate_dense(x, pos)
    if pairing == "half":
        x, dense = rr.to_half(x), rr.to_half(dense)
    xf = np.asfortranarray(x.astype(dtype))
    assert not xf.flags.c_contiguous
    out = rr.rotate(xf, pos, pairing=pairing)
    np.testing.assert_allclose(out, dense, atol=1e-12 if dtype == np.float64 else 1e-5)
