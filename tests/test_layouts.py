"""Issue 40 item 3 against a per-pair loop: layout= with cu_seqlens and offsets, the refusal of an ambiguous 4-D x,
rr.rotate_qkv (rope_ref.testing) on packed q/k/v (bad layout and packing arguments: tests/test_bad_inputs.py)."""

import numpy as np
import pytest

import rope_ref as rr
from kernels import pairwise_reference

CU = [0, 4, 4, 11]                  # three packed sequences of 4, 0 and 7 tokens


def _loop_positions(shape, layout, offsets):
    """Each token's position, read off the layout's letters one element at a time."""
    pos = np.zeros(shape[:-1])
    for idx in np.ndindex(*shape[:-1]):
        at = dict(zip(layout, idx))
        seq = max(i for i in range(len(CU) - 1) if CU[i] <= at["t"]) if layout == "thd" else at["b"]
        pos[idx] = (at["t"] - CU[seq] if layout == "thd" else at["s"]) + offsets[seq]
    return pos


@pytest.mark.parametrize("form", [rr.rotate, rr.rotate_elementwise])
@pytest.mark.parametrize("layout,shape", [("bshd", (3, 5, 2, 8)), ("bhsd", (3, 2, 5, 8)), ("sbhd", (5, 3, 2, 8)),
                                          ("thd", (11, 2, 8))])
@pytest.mark.parametrize("offsets", [None, 7, [7, 0, 30]])
def test_each_layout_with_offsets_matches_the_loop(form, layout, shape, offsets):
    x = np.random.default_rng(len(layout) + len(shape)).standard_normal(shape)
    packing = {"cu_seqlens": CU} if layout == "thd" else {}
    got = form(x, layout=layout, seqlen_offsets=offsets, pairing="half", **packing)
    pos = _loop_positions(shape, layout, np.broadcast_to(0 if offsets is None else offsets, (3,)))
    np.testing.assert_allclose(got, pairwise_reference(x, pos, pairing="half"), rtol=0, atol=1e-12)
    layout_pos = rr.layout_positions(shape, layout, seqlen_offsets=offsets, **packing)
    np.testing.assert_array_equal(np.broadcast_to(layout_pos, shape[:-1]), pos)


@pytest.mark.parametrize("form", [rr.rotate, rr.rotate_elementwise, rr.rotate_dense, rr.rotate_complex])
def test_an_ambiguous_4d_x_is_refused_naming_both_readings(form):
    x = np.ones((2, 3, 4, 8))
    with pytest.raises(ValueError, match="layout") as info:
        form(x)
    assert "bhsd" in str(info.value) and "bshd" in str(info.value)
    np.testing.assert_allclose(form(x, np.arange(4)), pairwise_reference(x, np.arange(4)), atol=1e-12)


QKV_CASES = [  # (qkv shape, keywords, the same as (tokens..., heads, d), heads rotated: q and k)
    ((2, 5, 3, 2, 8), {}, (2, 5, 6, 8), 4),                                 # flash-attention's (b, s, 3, h, d)
    ((2, 5, 6, 8), {"num_heads_q": 4}, (2, 5, 6, 8), 5),                    # 4 q heads, 1 k head, 1 v head
    ((5, 3 * 8), {"head_dim": 8}, (5, 3, 8), 3),                            # vLLM's q or k, (tokens, heads * d)
    ((5, 6 * 8), {"num_heads_q": 2, "head_dim": 8}, (5, 6, 8), 4),          # vLLM's packed qkv: 2 q, 2 k, 2 v
]


@pytest.mark.parametrize("shape,kw,heads_view,rotated", QKV_CASES)
@pytest.mark.parametrize("pairing", ["interleaved", "half"])
def test_rotate_qkv_rotates_q_and_k_and_leaves_v(shape, kw, heads_view, rotated, pairing):
    rng = np.random.default_rng(len(shape))
    qkv, pos = rng.standard_normal(shape).astype(np.float32), rng.integers(0, 1000, heads_view[:-2])
    got = rr.rotate_qkv(qkv, pos, pairing=pairing, **kw)
    assert got.shape == shape and got.dtype == qkv.dtype
    got, x = got.reshape(heads_view), qkv.reshape(heads_view).astype(np.float64)
    for h in range(heads_view[-2]):
        want = pairwise_reference(x[..., h, :], pos, pairing=pairing) if h < rotated else x[..., h, :]
        np.testing.assert_allclose(got[..., h, :], want, rtol=0, atol=2e-6 * (h < rotated))


def test_offsets_up_to_the_last_int64_and_unsigned_cu_seqlens_give_exact_positions():
    top = 2 ** 63 - 1
    got = rr.layout_positions((2, 3, 1, 8), "bshd", seqlen_offsets=np.array([top - 2, 5], np.uint64))[..., 0]
    assert got.tolist() == [[top - 2, top - 1, top], [5, 6, 7]]
    got = rr.layout_positions((5, 1, 8), "thd", cu_seqlens=np.array([0, 2, 5], np.uint32), seqlen_offsets=[top - 2, 1])
    assert got.ravel().tolist() == [top - 2, top - 1, 1, 2, 3]
