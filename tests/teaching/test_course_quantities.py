"""The teaching quantities the course adds: KV cache, attention weights, eq 19 weights, the rotation view's angle."""

import numpy as np
import pytest

import rope_ref as rr
from rope_ref.teaching import quantities
from rope_ref.teaching.views import RotationsView, ScalingView


@pytest.fixture
def qkv():
    rng = np.random.default_rng(5)
    return tuple(rng.standard_normal((2, 3, 12, 8)) for _ in range(3))


def test_kv_cache_rotates_each_key_once_and_matches_full_attention(qkv, monkeypatch):
    q, k, v = qkv
    cache = quantities.KVCache()
    outs, snapshots = [], []
    for t in range(12):
        cache.append(k[..., t, :], v[..., t, :], position=t)
        outs.append(cache.attend(q[..., t, :], position=t))
        snapshots.append([key.copy() for key in cache.keys])
    # stored keys never change after they are stored, and each is R_t k_t (dense matrix, independent path)
    for t, snap in enumerate(snapshots):
        for j, key in enumerate(snap):
            np.testing.assert_array_equal(key, cache.keys[j])
    for t in range(12):
        np.testing.assert_allclose(cache.keys[t], k[..., t, :] @ rr.rotation_matrix(float(t), 8).T, atol=1e-12)
    assert cache.rotations == 24
    dense = rr.attention_dense(q, k, v, np.arange(12), np.arange(12), causal=True)
    np.testing.assert_allclose(np.stack(outs, axis=-2), dense, atol=1e-12)
    # one more step rotates exactly two vectors, whatever the cache length
    calls = []
    real_rotate = quantities.rotate
    monkeypatch.setattr(quantities, "rotate", lambda *a, **kw: calls.append(1) or real_rotate(*a, **kw))
    cache.append(k[..., 0, :], v[..., 0, :], position=12)
    cache.attend(q[..., 0, :], position=12)
    assert len(calls) == 2


def test_attention_weights_reproduce_attention_and_see_positions(qkv):
    q, k, v = qkv
    w = quantities.attention_weights(q, k)
    np.testing.assert_allclose(w @ v, rr.attention_dense(q, k, v, np.arange(12), np.arange(12), causal=True),
                               atol=1e-12)
    np.testing.assert_allclose(w.sum(-1), 1.0)
    assert np.all(np.triu(w[0, 0], 1) == 0)
    # same content everywhere: no positions -> uniform rows; RoPE -> the diagonal gets the most
    x = np.tile(np.random.default_rng(0).standard_normal(16), (10, 1))
    flat = quantities.attention_weights(x, x, rope=False)
    np.testing.assert_allclose(flat[9], np.full(10, 0.1))
    peaked = quantities.attention_weights(x * 2, x * 2)
    assert np.argmax(peaked[9]) == 9 and peaked[9, 9] > 0.1


def test_linear_attention_weights_match_eq19_and_are_not_probabilities(qkv):
    q, k, v = qkv
    w = quantities.linear_attention_weights(q, k)
    np.testing.assert_allclose(w @ v, rr.linear_attention_dense(q, k, v), atol=1e-12)
    big = quantities.linear_attention_weights(*quantities.random_qk(16, seed=0, n=64))
    assert big.min() < 0 and np.abs(big.sum(-1) - 1).max() > 0.1


def test_rotation_view_angle_is_the_measured_angle_and_both_panels_use_m_minus_n():
    for m, n, i in [(3, 7, 0), (10, 4, 2), (0, 25, 5)]:
        v = RotationsView(m=m, n=n, i=i, d=16)
        q, k = quantities.random_qk(16, 0)
        zq = complex(*(rr.rotation_matrix(m, 16) @ q)[2 * i:2 * i + 2])
        zk = complex(*(rr.rotation_matrix(n, 16) @ k)[2 * i:2 * i + 2])
        assert rr.wrap_angle(v.angle) == pytest.approx(float(np.angle(zq / zk)), abs=1e-12)
        x, y = v.marker.get_data()
        assert x[0] == m - n and y[0] == pytest.approx((rr.rotation_matrix(m, 16) @ v._vectors()[0])
                                                       @ (rr.rotation_matrix(n, 16) @ v._vectors()[1]))
        cx, cy = v.curve.get_data()
        j = int(np.argmin(np.abs(cx - (m - n))))
        assert cy[j] == pytest.approx(y[0])
        assert "m - n" in v.ax_score.get_xlabel() and "m-n" in v.angle_text.get_text()


def test_rotation_view_rejects_a_pair_index_beyond_d():
    with pytest.raises(ValueError, match="i must be a pair index 0..d/2-1 = 0..7"):
        RotationsView(i=8, d=16)
    v = RotationsView(i=7, d=16)
    with pytest.raises(ValueError, match="got 5"):
        v.update(i=5, d=8)


def test_scaling_view_shows_angles_per_pair_at_the_extended_length():
    v = ScalingView(factor=4.0)
    x, y = v.angle_lines["default"].get_data()
    np.testing.assert_allclose(y, 4 * 4096 * rr.frequencies(128) / (2 * np.pi))
    v.update(factor=16.0)
    _, y = v.angle_lines["linear"].get_data()
    np.testing.assert_allclose(y, 4096 * rr.frequencies(128) / (2 * np.pi))
    assert "16 L = 65536" in v.angle_title.get_text()
