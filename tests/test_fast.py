"""The fast path (rope_ref._fast behind rotate) against the plain form of eq 34 (rotate_elementwise: float64
cos/sin, no table, no blocks, no complex numbers), and its table of the last positions."""

import ml_dtypes
import numpy as np
import pytest

import rope_ref as rr
from rope_ref import _fast

BF16 = np.dtype(ml_dtypes.bfloat16)
LAYOUTS = [  # (x shape, positions shape or None for the default arange(seq))
    ((16,), ()), ((16,), None), ((7, 16), None), ((5, 7, 16), None), ((3, 5, 7, 16), (3, 1, 7)),
    ((3, 5, 7, 16), (3, 5, 7)), ((3, 5, 7, 16), (3, 5, 1)), ((40, 1, 16), (40, 1)), ((5, 8, 1, 16), (5, 1, 1)),
    ((2, 1, 3, 1, 16), (1, 1, 3, 1)),
]

#: a few units in the last place of the dtype (the two forms round differently); bfloat16: 2e-2
TOLERANCE = {np.float64: 1e-12, np.float32: 4e-6, np.float16: 2e-3}


def assert_matches_plain(x, positions, **kw):
    """rotate == rotate_elementwise, features past rotary_dim x's bit for bit, a new array like x, x untouched."""
    before = x.copy()
    want = rr.rotate_elementwise(x, positions, **kw).astype(np.float64)
    got = rr.rotate(x, positions, **kw)
    assert got.shape == x.shape and got.dtype == x.dtype and not np.shares_memory(got, x)
    r = kw.get("rotary_dim") or x.shape[-1]
    np.testing.assert_array_equal(got[..., r:], x[..., r:])
    tol = TOLERANCE.get(x.dtype.type, 2e-2) * max(1.0, float(np.abs(x.astype(np.float64)).max()))
    np.testing.assert_allclose(got.astype(np.float64), want, atol=tol, rtol=0)
    np.testing.assert_array_equal(x, before)


@pytest.fixture(params=[None, 48], ids=["default-blocks", "tiny-blocks"])
def blocks(request, monkeypatch):              # tiny blocks: every test crosses many block boundaries
    if request.param:
        monkeypatch.setattr(_fast, "BLOCK_ELEMENTS", request.param)


@pytest.mark.parametrize("pairing", ["interleaved", "half"])
@pytest.mark.parametrize("shape,pshape", LAYOUTS)
def test_every_leading_shape_matches_the_plain_form(blocks, shape, pshape, pairing):
    rng = np.random.default_rng(len(shape) * 7 + shape[0])
    pos = None if pshape is None else rng.uniform(-1e6, 1e6, pshape)       # positions up to a million
    for dtype in (np.float64, np.float32, np.float16, BF16):
        x = rng.standard_normal(shape).astype(dtype)
        for kw in ({}, {"rotary_dim": 6}, {"inv_freq": rng.uniform(0, 1, 8)}):
            assert_matches_plain(x, pos, pairing=pairing, **kw)


@pytest.mark.parametrize("pairing", ["interleaved", "half"])
def test_strided_and_reversed_inputs(blocks, pairing):
    base = np.random.default_rng(1).standard_normal((4, 9, 32))
    for x in (base[:, ::2, :16], base[..., ::-1], base.transpose(1, 0, 2), np.asfortranarray(base),
              base.astype(np.float32)[:, :, 1:17]):
        assert_matches_plain(x, None, pairing=pairing)
        assert_matches_plain(x, None, pairing=pairing, rotary_dim=4)


def test_the_kept_table_never_confuses_positions_frequencies_dtypes_or_pairings():
    """Large enough to be kept: each change of positions, frequencies, dtype or pairing gets its own angles."""
    x = np.random.default_rng(2).standard_normal((2, 300, 32))
    pos = np.arange(300.0)
    calls = [dict(), dict(positions=pos + 1), dict(base=500.0), dict(pairing="half"), dict(rotary_dim=16),
             dict(inv_freq=rr.frequencies(32) / 3), dict(positions=pos[::-1].copy()), dict()]
    for kw in calls:
        for dtype in (np.float64, np.float32):
            kw = dict(kw)
            positions = kw.pop("positions", None)
            assert_matches_plain(x.astype(dtype), positions, **kw)
            assert_matches_plain(x.astype(dtype), positions, **kw)       # the second call reads the kept table


def test_a_planted_bug_is_caught(monkeypatch):
    real = _fast._rotate_block
    monkeypatch.setattr(_fast, "_rotate_block", lambda xb, ob, tabs, pairing, tmp: real(
        xb, ob, [np.conj(t) if np.iscomplexobj(t) else -t for t in tabs], pairing, tmp))
    with pytest.raises(AssertionError):
        assert_matches_plain(np.ones((3, 8)), [0.5, 1.0, 2.0])


@pytest.mark.parametrize("pairing", ["interleaved", "half"])
def test_narrow_dtypes_are_the_float32_result_rounded_once(blocks, pairing):
    """float16/bfloat16 run in float32 and are rounded once at the end: bit for bit the float32 result cast."""
    rng = np.random.default_rng(12)
    big = rng.standard_normal((5, 40, 64)) * 30
    big[0, 0, :4] = [0.0, -0.0, 1e-6, -3e-7]                     # zeros and float16 subnormals
    for dtype in (np.float16, BF16):
        for x in [big.astype(dtype), big.astype(dtype)[:, ::3, :32], big.astype(dtype).transpose(1, 0, 2)]:
            for kw in [{}, {"rotary_dim": 16}]:
                pos = rng.uniform(0, 5000, x.shape[-2])
                want = rr.rotate(x.astype(np.float32), pos, pairing=pairing, **kw).astype(dtype)
                got = rr.rotate(x, pos, pairing=pairing, **kw)
                np.testing.assert_array_equal(got.view(np.uint16), want.view(np.uint16), err_msg=f"{dtype} {kw}")


@pytest.mark.parametrize("pairing", ["interleaved", "half"])
def test_every_finite_float16_value_turned_by_zero_is_itself_and_inf_passes_through(pairing):
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    finite = bits[(bits & 0x7C00) != 0x7C00].view(np.float16)            # 63,488 values
    x = np.stack([finite, np.zeros_like(finite)], axis=-1)               # pairs (v, 0), one per row
    np.testing.assert_array_equal(rr.rotate(x, np.zeros(len(x)), pairing=pairing), x)
    x[7, 0] = np.inf
    got = rr.rotate(x, np.zeros(len(x)), pairing=pairing)
    assert got[7, 0] == np.inf and np.array_equal(np.delete(got, 7, 0), np.delete(x, 7, 0))


@pytest.mark.parametrize("pairing", ["interleaved", "half"])
def test_a_bfloat16_pair_beyond_bfloat16_but_within_float32_is_refused_as_by_the_plain_form(pairing):
    """Issue 38 bug 2: rotate returned inf here (float32 raised no flag; the rounding to bfloat16 overflowed)."""
    a = 181 * 2.0 ** 120                       # a bfloat16 value; a * sqrt(2) = 3.4025e38: above bfloat16's largest
    x = np.zeros((2, 4))                       # (3.3895e38), below float32's (3.4028e38)
    x[1, [0, 1 if pairing == "interleaved" else 2]] = a
    x = x.astype(BF16)
    for form in (rr.rotate, rr.rotate_elementwise):
        with pytest.raises(ValueError, match="x"):
            form(x, [0, 1], pairing=pairing, inv_freq=[np.pi / 4, 0])
