"""What notebook 04 computes in its own cells (attention with RoPE, the KV cache, eq 19's weights), run on this file's
inputs and checked against independent paths (dense rotation matrices, rope_ref's dense forms); the attention-pattern
figure; the rotation view's angle."""

import math

import numpy as np
import pytest

import rope_ref as rr
from rope_ref.teaching import figures, quantities
from rope_ref.teaching.views import RotationsView, ScalingView

from notebook_cells import run_cells


@pytest.fixture
def qkv():
    rng = np.random.default_rng(5)
    return tuple(rng.standard_normal((2, 3, 12, 8)) for _ in range(3))


class CountingRotations:
    """rope_ref as a notebook sees it, except that ``rotate`` records a copy of every result it returns."""

    def __init__(self):
        self.results = []

    def __getattr__(self, name):
        return getattr(rr, name)

    def rotate(self, *args, **kwargs):
        out = rr.rotate(*args, **kwargs)
        self.results.append(out.copy())
        return out


def notebook_04(cell_id, q, k, v=None, **more):
    """Run notebook 04's cell on q, k, v of shape (..., N, d) (d and N taken from them)."""
    namespace = {"np": np, "rr": more.pop("rr", rr), "q": q, "k": k, "v": v, "N": q.shape[-2], "d": q.shape[-1]}
    return run_cells("04_attention", cell_id, namespace=namespace | more)


def test_kv_cache_rotates_each_key_once_and_matches_full_attention(qkv):
    q, k, v = qkv
    counting = CountingRotations()
    dense = rr.attention_dense(q, k, v, np.arange(12), np.arange(12), causal=True)
    cache = notebook_04("cell-10", q, k, v, rr=counting, out=dense)
    # stored keys never change after they are stored, and each is R_t k_t (dense matrix, independent path)
    keys_when_rotated = counting.results[0::2]
    for t in range(12):
        np.testing.assert_array_equal(keys_when_rotated[t], cache["keys"][t])
        np.testing.assert_allclose(cache["keys"][t], k[..., t, :] @ rr.rotation_matrix(float(t), 8).T, atol=1e-12)
    # each step rotates exactly two vectors (one key, one query), whatever the cache length
    assert len(counting.results) == 24 and all(r.shape == (2, 3, 8) for r in counting.results)
    np.testing.assert_allclose(cache["incremental"], dense, atol=1e-12)


def test_attention_with_rope_reproduces_attention_and_sees_positions(qkv):
    q, k, v = qkv
    notebook = notebook_04("cell-04", q, k, v)
    w = notebook["weights"]
    np.testing.assert_allclose(w @ v, rr.attention_dense(q, k, v, np.arange(12), np.arange(12), causal=True),
                               atol=1e-12)
    np.testing.assert_allclose(w.sum(-1), 1.0)
    assert np.all(np.triu(w[0, 0], 1) == 0)
    # same content everywhere (the attention-pattern figure): no positions -> uniform rows; RoPE -> the diagonal
    flat, peaked = (ax.images[0].get_array() for ax in figures.fig_attention_pattern(n=10).axes[:2])
    np.testing.assert_allclose(flat[9], np.full(10, 0.1))
    assert np.argmax(peaked[9]) == 9 and peaked[9, 9] > 0.1


def test_linear_attention_weights_match_eq19_and_are_not_probabilities(qkv):
    q, k, v = qkv
    w = notebook_04("cell-14", q, k)["w_lin"]
    np.testing.assert_allclose(w @ v, rr.linear_attention_dense(q, k, v), atol=1e-12)
    big = notebook_04("cell-14", *quantities.random_qk(16, seed=0, n=64))["w_lin"]
    assert big.min() < 0 and np.abs(big.sum(-1) - 1).max() > 0.1


@pytest.mark.slow
def test_rotation_view_angle_is_the_measured_angle_and_both_panels_use_m_minus_n():
    for m, n, i in [(3, 7, 0), (10, 4, 2), (0, 25, 5)]:
        v = RotationsView(m=m, n=n, i=i, d=16)
        q, k = quantities.random_qk(16, 0)
        zq = complex(*(rr.rotation_matrix(m, 16) @ q)[2 * i:2 * i + 2])
        zk = complex(*(rr.rotation_matrix(n, 16) @ k)[2 * i:2 * i + 2])
        assert rr.wrap_angle(v.angle) == pytest.approx(float(np.angle(zq / zk)), abs=1e-12)
        x, y = v.marker.get_data()
        assert x[0] == m - n and y[0] == pytest.approx((rr.rotation_matrix(m, 16) @ q)
                                                       @ (rr.rotation_matrix(n, 16) @ k))
        cx, cy = v.curve.get_data()
        j = int(np.argmin(np.abs(cx - (m - n))))
        assert cy[j] == pytest.approx(y[0])
        assert "m - n" in v.ax_score.get_xlabel() and "m-n" in v.angle_text.get_text()


@pytest.mark.slow
def test_scaling_view_shows_angles_per_pair_at_the_extended_length():
    v = ScalingView(factor=4.0)
    x, y = v.angle_lines["default"].get_data()
    np.testing.assert_allclose(y, 4 * 4096 * rr.frequencies(128) / (2 * np.pi))
    v.update(factor=16.0)
    _, y = v.angle_lines["linear"].get_data()
    np.testing.assert_allclose(y, 4096 * rr.frequencies(128) / (2 * np.pi))
    assert "16 L = 65536" in v.angle_title.get_text()


def _t5_reference(r: int, num_buckets: int, max_distance: int) -> int:
    """T5's causal bucket from the paper: exact below num_buckets // 2, then log-spaced up to max_distance."""
    exact = num_buckets // 2
    if r < exact:
        return r
    return min(exact + int(math.log(r / exact) / math.log(max_distance / exact) * (num_buckets - exact)),
               num_buckets - 1)


@pytest.mark.parametrize("num_buckets,max_distance", [(32, 128), (2, 3), (8, 5), (33, 17), (32, 1000)])
def test_t5_bucket_is_t5s_formula(num_buckets, max_distance):
    r = np.array([*range(0, 300), 10 ** 6, 2 ** 40, 10 ** 15])
    want = [_t5_reference(int(v), num_buckets, max_distance) for v in r]
    t5_bucket = run_cells("00_why_positions", "cell-09", namespace={"np": np, "rr": rr})["t5_bucket"]   # notebook 00's
    np.testing.assert_array_equal(t5_bucket(r, num_buckets, max_distance), want)
