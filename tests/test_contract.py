"""dtypes, no mutation, and every bad input named in the core issue."""

import re

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


# ---- issue 22: sizes and the last unclear inputs (each case failed before its fix) ------------------------

from numpy.lib.stride_tricks import as_strided  # noqa: E402

from rope_ref import _validate  # noqa: E402

GIB = 1024 ** 3
SIZES = [  # each raised numpy's raw "Unable to allocate", or allocated silently, before the check
    (lambda: rr.frequencies(2**40), "d", 2**39 * 8),
    (lambda: rr.rotation_matrix(np.arange(4096), 4096), "positions", 4096 ** 3 * 8),
    (lambda: rr.rotation_matrix(1, 2**15), "positions", 2**30 * 8),            # 8 GiB, silently
    (lambda: rr.rotate_dense(np.zeros((64, 8192))), "positions", 64 * 8192 ** 2 * 8),
    (lambda: rr.rotation_angles(np.zeros(2048), np.ones(2**18)), "positions", 2**29 * 8),
    (lambda: rr.sinusoidal(np.zeros(2**13), 2**16), "positions", 2**29 * 8),
    (lambda: rr.sinusoidal_shift_matrix(1.0, 2**15), "d", 2**30 * 8),
    (lambda: rr.decay_bound(np.zeros(2**13), 2**16), "distance", 2**28 * 16),
    (lambda: rr.attention(*[np.broadcast_to(0.0, (2**17, 2))] * 3), "q, k", 2**34 * 8),
    (lambda: rr.linear_attention(*[np.broadcast_to(0.0, (2**16, 256))] * 3), "k, v", 2**32 * 8),
]


@pytest.mark.parametrize("call,name,nbytes", SIZES, ids=[str(i) for i in range(len(SIZES))])
def test_sizes_are_checked_before_allocating(call, name, nbytes):
    with pytest.raises(ValueError) as info:
        call()
    msg = str(info.value)
    assert msg.startswith(name + ":"), msg
    for w in (f"({nbytes} bytes)", "above the limit of 2 GiB", f"max_bytes={nbytes}"):
        assert w in msg, msg
    with pytest.raises(ValueError, match=f"above the limit of 1 KiB"), rr.size_limit(max_bytes=1024):
        call()                                               # size_limit moves the limit (down here: no allocation)


def test_max_bytes_raises_the_limit():
    with rr.size_limit(max_bytes=64 * 64 * 8):
        assert rr.rotation_matrix(0.5, 64).shape == (64, 64)
    with pytest.raises(ValueError, match=r"positions: 1 float64 matrices of 64 x 64 would take 32 KiB"):
        with rr.size_limit(max_bytes=64 * 64 * 8 - 1):
            rr.rotation_matrix(0.5, 64)
    with pytest.raises(TypeError, match="max_bytes must be None or a number of bytes"):
        with rr.size_limit(max_bytes="1e9"):
            rr.frequencies(8)


def _self_overlapping(shape):
    a = np.zeros(shape[-1])
    return as_strided(a, shape, (0, a.strides[0]))          # every row is the same memory, writeable


@pytest.mark.parametrize("fn", [rr.rotate, rr.rotate_elementwise, rr.rotate_dense])
def test_an_out_that_overlaps_itself_is_refused(fn):
    x = np.random.default_rng(0).standard_normal((4, 6))
    for out in (_self_overlapping((4, 6)), as_strided(np.zeros(30), (4, 6), (24, 8))):   # stride 0; rows overlap
        with pytest.raises(ValueError, match=r"out must not overlap itself: its strides \("):
            fn(x, out=out)
    for out in (np.zeros((4, 6), order="F"), np.zeros((4, 12))[:, ::2], np.zeros((4, 6))[::-1],
                as_strided(np.zeros(24), (4, 6), (8, 32))):                                 # no overlap: accepted
        np.testing.assert_allclose(fn(x, out=out), rr.rotate_elementwise(x), atol=1e-12)


@pytest.mark.parametrize("call,fn,kw", [
    (lambda: rr.rotate(X, None, 10000.0), "rotate", "base"),
    (lambda: rr.rotate_elementwise(X, None, 10.0, "half"), "rotate_elementwise", "base, pairing are"),
    (lambda: rr.rotate_dense(X, None, 10.0), "rotate_dense", "base"),
    (lambda: rr.rotate_complex(X, None, 10.0), "rotate_complex", "base"),
    (lambda: rr.attention(QKV, QKV, QKV, None), "attention", "q_positions"),
    (lambda: rr.linear_attention(QKV, QKV, QKV, None), "linear_attention", "positions"),
    (lambda: rr.partial_sums(1.0, 8, 10.0, None), "partial_sums", "inv_freq"),
])
def test_keyword_only_arguments_are_named(call, fn, kw):
    with pytest.raises(TypeError) as info:
        call()
    msg = str(info.value)
    assert msg.startswith(f"{fn}() takes ") and f"{kw}" in msg and "keyword-only" in msg, msg


@pytest.mark.parametrize("raw", [bytearray(b"\x00\x01\x02\x03"), b"\x00\x01\x02\x03", memoryview(b"\x00\x01\x02\x03"),
                                 memoryview(bytearray(4))])
@pytest.mark.parametrize("where", ["x", "positions", "inv_freq"])
def test_raw_bytes_are_not_read_as_numbers(raw, where):
    args = {"x": ([raw], {}), "positions": ([np.zeros((4, 2)), raw], {}), "inv_freq": ([np.zeros((4, 8))], {"inv_freq": raw})}
    a, kw = args[where]
    for fn in (rr.rotate, rr.rotate_elementwise, rr.rotate_dense):
        with pytest.raises(TypeError, match=rf"^{where} must be .* got {type(raw).__name__} \(raw bytes are not read"):
            fn(*a, **kw)


def test_a_memoryview_of_numbers_is_still_numbers():
    np.testing.assert_array_equal(rr.rotate(np.ones((1, 2)), memoryview(np.array([0.0]))), [[1.0, 1.0]])


def test_positions_beyond_2_53_warn_on_every_call():
    x = np.ones((2, 4))
    big = np.array([2**53, 2**53 + 1], dtype=np.int64)                # equal as float64: equal rows
    for _ in range(3):
        with pytest.warns(rr.RopeRefPrecisionWarning, match=r"positions: integers beyond 2\^53"):
            out = rr.rotate(x, big, inv_freq=[1e-16, 1e-17])             # angles ~0.9: no angle warning
        assert np.array_equal(out[0], out[1])                            # the collapse the warning names


def test_attention_with_huge_finite_q_and_k_is_the_argmax_limit():
    rng = np.random.default_rng(8)
    q, k, v = rng.standard_normal((5, 8)), rng.standard_normal((6, 8)), rng.standard_normal((6, 3))
    scores = rr.rotate(q) @ rr.rotate(k).T                              # the softmax of s * scores -> one-hot
    want = v[np.argmax(scores, axis=-1)]
    np.testing.assert_allclose(rr.attention(q * 1e200, k * 1e200, v), want, atol=1e-12)


def test_linear_attention_with_phi_underflowing_is_exact():
    rng = np.random.default_rng(9)
    q, k, v = rng.standard_normal((5, 8)), rng.standard_normal((5, 8)), rng.standard_normal((5, 3))
    # phi(x) = e^x for x <= 0, so phi(x - 800) = e^-800 phi(x): underflows to 0 in float64, yet cancels exactly.
    qn, kn = -np.abs(q), -np.abs(k)
    np.testing.assert_allclose(rr.linear_attention(qn - 800.0, kn - 800.0, v), rr.linear_attention_dense(qn, kn, v),
                               rtol=1e-10)


@pytest.mark.parametrize("kind", ["requires_grad", "bfloat16"])
def test_torch_tensors_numpy_cannot_read_get_a_clear_answer(kind):
    torch = pytest.importorskip("torch")          # CI has no torch: skipped there; run with /work/venv-rec
    t = torch.ones(2, 4, requires_grad=True) if kind == "requires_grad" else torch.ones(2, 4, dtype=torch.bfloat16)
    fix = ".detach().numpy()" if kind == "requires_grad" else ".float().numpy()"
    calls = {"x": [lambda: rr.rotate(t), lambda: rr.rotate_elementwise(t), lambda: rr.rotate_dense(t),
                   lambda: rr.rotate_complex(t), lambda: rr.rotate_half(t), lambda: rr.to_half(t),
                   lambda: rr.elu_plus_one(t)],
             "q": [lambda: rr.attention(t, t, t), lambda: rr.linear_attention(t, t, t)],
             "positions": [lambda: rr.rotate(np.ones((2, 4)), t[:, 0]), lambda: rr.rotation_matrix(t[0], 4)],
             "inv_freq": [lambda: rr.rotate(np.ones((2, 4)), inv_freq=t[0, :2])]}
    for name, fns in calls.items():
        for call in fns:
            with pytest.raises(TypeError, match=rf"^{name} is a torch tensor .* pass {name}{re.escape(fix)}"):
                call()
    plain = torch.arange(8.0).reshape(2, 4)       # a plain CPU tensor is read as the array it is
    np.testing.assert_array_equal(rr.rotate(plain), rr.rotate(plain.numpy()))
