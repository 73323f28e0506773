"""Softmax and linear attention with RoPE (eqs 16-19) and the KV cache (their stability on extreme finite input:
test_stability.py; inputs untouched: test_no_aliasing.py)."""

import numpy as np
import pytest

import rope_ref as rr


def softmax_attention_loop(q, k, v, qpos, kpos, causal):
    """Direct definition for one head, one query at a time, via the dense rotation matrices."""
    d = q.shape[-1]
    out = np.zeros((q.shape[0], v.shape[-1]))
    for i in range(q.shape[0]):
        qm = rr.rotation_matrix(qpos[i], d) @ q[i]
        s = np.array([qm @ (rr.rotation_matrix(kpos[j], d) @ k[j]) for j in range(k.shape[0])]) / np.sqrt(d)
        if causal:
            s = np.where(kpos <= qpos[i], s, -np.inf)
        w = np.exp(s - s.max())
        out[i] = (w / w.sum()) @ v
    return out


def linear_attention_loop(q, k, v, causal):
    """Eq 19 term by term, with phi = elu + 1 and dense rotation matrices."""
    n, d = q.shape
    phi = lambda x: np.where(x > 0, x + 1, np.exp(np.minimum(x, 0)))  # noqa: E731
    out = np.zeros((n, v.shape[-1]))
    for m in range(n):
        num, den = np.zeros(v.shape[-1]), 0.0
        for j in range(m + 1 if causal else n):
            num += (rr.rotation_matrix(m, d) @ phi(q[m])) @ (rr.rotation_matrix(j, d) @ phi(k[j])) * v[j]
            den += phi(q[m]) @ phi(k[j])
        out[m] = num / den
    return out


@pytest.mark.parametrize("causal", [False, True])
def test_softmax_attention_matches_definition(causal, rng):
    q, k, v = rng.standard_normal((6, 8)), rng.standard_normal((6, 8)), rng.standard_normal((6, 3))
    pos = np.arange(6) * 3.0
    want = softmax_attention_loop(q, k, v, pos, pos, causal)
    np.testing.assert_allclose(rr.attention(q, k, v, q_positions=pos, k_positions=pos, causal=causal), want, atol=1e-12)
    np.testing.assert_allclose(rr.attention_dense(q, k, v, pos, pos, causal=causal), want, atol=1e-12)
    # values are not rotated: with q = 0 every score is 0, the output is the plain mean of the values
    np.testing.assert_allclose(rr.attention(0 * q, k, v), np.tile(v.mean(axis=0), (6, 1)), atol=1e-15)


@pytest.mark.parametrize("pairing", ["interleaved", "half"])
def test_shift_invariance(pairing, rng):
    q, k, v = (rng.standard_normal((2, 3, 10, 16)) for _ in range(3))
    out = rr.attention(q, k, v, causal=True, pairing=pairing)
    shifted = rr.attention(q, k, v, q_positions=np.arange(10) + 12345, k_positions=np.arange(10) + 12345,
                           causal=True, pairing=pairing)
    np.testing.assert_allclose(shifted, out, atol=1e-10)
    moved = rr.attention(q, k, v, q_positions=np.arange(10) + 3, pairing=pairing)      # queries alone: it changes
    assert np.abs(moved - rr.attention(q, k, v, pairing=pairing)).max() > 1e-3


def test_kv_cache_decoding_equals_full(rng):
    q, k, v = (rng.standard_normal((2, 4, 24, 16)) for _ in range(3))
    full = rr.attention(q, k, v, causal=True)
    for t in range(24):               # one token at a time: the query at position t attends the cache of keys 0..t
        step = rr.attention(q[..., t:t + 1, :], k[..., :t + 1, :], v[..., :t + 1, :], q_positions=[t], causal=True)
        np.testing.assert_allclose(step[..., 0, :], full[..., t, :], atol=1e-12)
    block = rr.attention(q[..., 20:, :], k, v, q_positions=np.arange(20, 24), causal=True)
    np.testing.assert_allclose(block, full[..., 20:, :], atol=1e-12)


@pytest.mark.parametrize("causal", [False, True])
def test_linear_attention_matches_eq19(causal, rng):
    q, k, v = rng.standard_normal((8, 6)), rng.standard_normal((8, 6)), rng.standard_normal((8, 5))
    want = linear_attention_loop(q, k, v, causal)
    np.testing.assert_allclose(rr.linear_attention(q, k, v, causal=causal), want, atol=1e-12)
    np.testing.assert_allclose(rr.linear_attention_dense(q, k, v, causal=causal), want, atol=1e-12)
    batched = rr.linear_attention(np.stack([q, -q]), np.stack([k, k]), np.stack([v, v]), causal=causal)
    np.testing.assert_allclose(batched[0], want, atol=1e-12)
    np.testing.assert_allclose(batched[1], linear_attention_loop(-q, k, v, causal), atol=1e-12)


def test_softmax_values_and_scale():
    s = np.array([[0.0, np.log(3.0), -np.inf]])
    np.testing.assert_allclose(rr.softmax(s), [[0.25, 0.75, 0.0]], rtol=1e-15)        # masked: weight 0
    np.testing.assert_allclose(rr.softmax(np.array([1000.0, 1000.0 + np.log(3.0)])), [0.25, 0.75], rtol=1e-12)
    np.testing.assert_allclose(rr.softmax(s, scale=2.0), [[0.1, 0.9, 0.0]], rtol=1e-14)
    np.testing.assert_array_equal(rr.softmax(s, scale=np.inf), [[0.0, 1.0, 0.0]])     # the argmax
    np.testing.assert_array_equal(rr.softmax(s, scale=0.0), [[0.5, 0.5, 0.0]])        # the mean over the unmasked
    np.testing.assert_array_equal(rr.softmax(np.array([0.0, 1e300]), scale=1e300), [0.0, 1.0])
    np.testing.assert_allclose(rr.softmax([-1e308, 1e308], scale=1e-308), np.array([1, np.e ** 2]) / (1 + np.e ** 2))
    np.testing.assert_array_equal(rr.elu_plus_one([-800.0, 0.0, 1.5]), [0.0, 1.0, 2.5])
    np.testing.assert_array_equal(rr.elu_plus_one(np.array([127, -1], np.int8)), [128.0, np.exp(-1.0)])  # no wrap
    assert rr.softmax(np.zeros((2, 0))).shape == (2, 0) and rr.rotate_qkv(np.ones((0, 3, 2, 8))).shape == (0, 3, 2, 8)


def test_attention_on_q_k_near_the_float64_limit_is_the_argmax(rng):
    """s_q s_k / sqrt(d) overflows to inf: the softmax takes the argmax (1e100, 1e200: test_stability.py)."""
    q, k, v = rng.standard_normal((5, 8)), rng.standard_normal((6, 8)), rng.standard_normal((6, 3))
    want = v[np.argmax(rr.rotate(q) @ rr.rotate(k).T, axis=-1)]        # softmax(c s) -> one-hot as c -> inf
    np.testing.assert_allclose(rr.attention(q * 1e307, k * 1e307, v), want, atol=1e-12)
    edge = rr.attention(np.array([[1.7e308, 1.7e308]]), np.array([[1.7e308, 1.7e308], [-1.7e308, 0.0]]),
                        np.array([[1.0], [2.0]]), q_positions=[0], k_positions=[0, 0])
    np.testing.assert_array_equal(edge, [[1.0]])


def test_result_dtypes(rng):
    q, k, v = (rng.standard_normal((4, 8)).astype(np.float32) for _ in range(3))
    assert (rr.attention(q, k, v).dtype, rr.attention(q, k, v.astype(np.float64)).dtype) == (np.float32, np.float64)
    assert rr.linear_attention(q, k, v, causal=True).dtype == np.float64
