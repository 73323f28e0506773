"""Fuzzing the input contract: odd layouts and dtypes, extreme values, every warning an error; results against
tests/kernels.py's per-pair loop (eq 13)."""

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rope_ref as rr
from kernels import pairwise_reference as _reference

pytestmark = pytest.mark.filterwarnings("error")

FORMS = {"rotate": rr.rotate, "rotate_elementwise": rr.rotate_elementwise, "rotate_dense": rr.rotate_dense,
         "rotate_complex": rr.rotate_complex}

BIG = {np.float32: 3e38, np.float64: 1.7e308, np.float16: 60000.0, ml_dtypes.bfloat16: 3e38}


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("pairing", ["interleaved", "half"])
@pytest.mark.parametrize("dtype", list(BIG), ids=lambda d: np.dtype(d).name)
def test_overflow_from_finite_x_is_a_value_error_naming_x_in_every_dtype(form, dtype, pairing):
    x = np.ones((256, 64), dtype)                  # many blocks of rotate's half pairing
    x[255, [0, 1, 32]] = BIG[dtype]                # a pair (either pairing) of norm sqrt(2) * BIG > the largest value
    kw = {} if form == "rotate_complex" else {"pairing": pairing}
    with pytest.raises(ValueError, match="^x"):
        FORMS[form](x, np.full(256, 0.7), **kw)


@pytest.mark.parametrize("form", list(FORMS))
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_x_passes_through_to_its_own_pair_only(form, bad):
    """Not finite input, so not an error (an overflow beside it included); no RuntimeWarning; other rows exact."""
    x = np.random.default_rng(0).standard_normal((3, 4, 8))
    x[1, 2, 5], x[0, 3, :2] = bad, 1.7e308
    out = FORMS[form](x, np.arange(4) * 0.5)
    good = np.ones(x.shape[:-1], bool)
    good[1, 2] = good[0, 3] = False
    want = _reference(np.where(good[..., None], x, 0), np.arange(4) * 0.5)
    np.testing.assert_allclose(out[good], want[good], atol=1e-12)
    assert not np.all(np.isfinite(out[1, 2, 4:6])) and not np.all(np.isfinite(out[0, 3, :2]))


@pytest.mark.parametrize("fn", ["attention", "linear_attention"])
def test_attention_overflow_names_the_argument_and_warns_nothing(fn):
    q = np.clip(np.random.default_rng(1).standard_normal((2, 5, 8)), -1, 1)
    v_huge = np.full((2, 5, 3), 1.7e308)
    v_huge[..., 0] = -1.7e308
    f = getattr(rr, fn)
    if fn == "attention":                         # convex weights: |out| <= max|v|, so huge v and huge q, k are fine
        np.testing.assert_allclose(f(q, q, v_huge), np.broadcast_to(v_huge[:, :1], (2, 5, 3)), rtol=1e-12)
        out = f(q * 1.7e308, q * 1.7e308, v_huge * 1e-300)
        assert np.all(np.isfinite(out)) and np.all(np.abs(out) <= np.abs(v_huge * 1e-300).max())
    else:                                         # eq 19's weights are not convex: the sums may overflow
        with pytest.raises(ValueError, match="v"):
            f(q, q, v_huge)
        assert np.all(np.isfinite(f(q * 1.7e308, q * 1.7e308, v_huge[..., 1:] * 1e-300)))


@st.composite
def strided_inputs(draw):
    """x of every layout numpy makes: C, Fortran, negative strides, a broadcast (0-stride) axis, a slice."""
    lead = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=2)))
    d = 2 * draw(st.integers(1, 5))
    base = np.random.default_rng(draw(st.integers(0, 2 ** 16))).standard_normal(lead + (2 * d,))
    readonly = base[..., :d].copy()
    readonly.setflags(write=False)
    x = draw(st.sampled_from([base[..., :d].copy(), np.asfortranarray(base[..., :d]), base[..., ::-1][..., :d],
                              np.broadcast_to(base[..., :1, :d], base.shape[:-1] + (d,)), base[..., ::2], readonly]))
    dtype = draw(st.sampled_from([np.float64, np.float32, ">f8", ">f4"]))
    seq = lead[-1]
    pos = draw(st.sampled_from([None, np.arange(seq) * 0.37, -np.arange(seq) * 3.0,
                                np.broadcast_to(np.float64(2.5), (seq,))]))
    return x.astype(dtype) if np.dtype(dtype) != x.dtype else x, pos


@settings(max_examples=25, deadline=None)
@given(case=strided_inputs(), data=st.data(), form=st.sampled_from(list(FORMS)))
def test_any_layout_pairing_rotary_dim_and_inv_freq_give_the_reference_and_leave_x_alone(case, data, form):
    x, pos = case
    d, kw = x.shape[-1], {}
    if form in ("rotate", "rotate_elementwise", "rotate_dense"):
        r = data.draw(st.sampled_from([None] + list(range(2, d + 1, 2))))
        n_pairs = (d if r is None else r) // 2
        kw = dict(pairing=data.draw(st.sampled_from(["interleaved", "half"])), rotary_dim=r,
                  base=data.draw(st.sampled_from([10000.0, 2, 1.5, 1e6])),
                  inv_freq=data.draw(st.one_of(st.none(), st.lists(st.floats(-3, 3), min_size=n_pairs,
                                                                    max_size=n_pairs))))
    out = FORMS[form](x, pos, **kw)
    assert out.flags.writeable and not np.shares_memory(out, x)
    assert out.shape == x.shape and out.dtype == np.dtype(x.dtype).newbyteorder("=")
    ref = _reference(x, np.arange(x.shape[-2]) if pos is None else pos, **kw)
    tol = 1e-12 if x.dtype.itemsize == 8 else 1e-5
    np.testing.assert_allclose(out.astype(np.float64), ref, atol=tol * max(1.0, np.abs(ref).max()))


POSITION_DTYPES = [np.int8, np.uint8, np.int16, np.uint32, np.int64, ">i4", np.float16, ml_dtypes.bfloat16, np.float32,
                   ">f8", np.float64]          # big-endian: the same numbers


@settings(max_examples=25, deadline=None)
@given(dtype=st.sampled_from(POSITION_DTYPES), seq=st.integers(1, 6), as_scalar=st.booleans(),
       form=st.sampled_from(list(FORMS)), seed=st.integers(0, 2 ** 16))
def test_positions_of_any_real_dtype_are_their_own_values(dtype, seq, as_scalar, form, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((2, seq, 6))
    raw = rng.integers(0, 100, seq) if np.dtype(dtype).kind in "iu" else rng.uniform(-50, 50, seq)
    pos = np.asarray(raw).astype(dtype)
    if as_scalar:                                  # a NumPy scalar of that dtype, or a 0-d array
        pos = pos[0] if seed % 2 else pos[:1].reshape(())
    exact = np.asarray(pos).astype(np.float64)     # the value the dtype holds, rounded or not
    np.testing.assert_allclose(FORMS[form](x, pos), _reference(x, exact), atol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, ml_dtypes.bfloat16])
def test_angles_are_computed_in_float64(dtype):
    """At position 10^6 + 1 a float32 angle m * 0.01 is off by ~6e-4 rad; float64 angles are not."""
    x = np.ones((1, 4), dtype=dtype)
    m = 1_000_001.0
    out = rr.rotate(x, [m]).astype(np.float64)
    a = m * np.array([1.0, 0.01])
    exact = np.stack([np.cos(a) - np.sin(a), np.cos(a) + np.sin(a)], axis=-1).ravel()
    eps = float(ml_dtypes.finfo(dtype).eps)
    np.testing.assert_allclose(out[0], exact, atol=4 * eps)


def test_big_endian_integers_are_promoted_to_float64_and_a_memoryview_of_numbers_is_numbers():
    assert rr.rotate(np.arange(8).astype(">i4")).dtype == np.float64
    np.testing.assert_array_equal(rr.rotate(np.ones((1, 2)), memoryview(np.array([0.0]))), [[1.0, 1.0]])
