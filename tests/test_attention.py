"""Softmax and linear attention with RoPE (eqs 16-19)."""

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


@pytest.mark.parametrize("causal", [False, True])
def test_softmax_attention_matches_definition(causal, rng):
    q, k, v = rng.standard_normal((6, 8)), rng.standard_normal((6, 8)), rng.standard_normal((6, 3))
    pos = np.arange(6) * 3.0
    out = rr.attention(q, k, v, q_positions=pos, k_positions=pos, causal=causal)
    np.testing.assert_allclose(out, softmax_attention_loop(q, k, v, pos, pos, causal), atol=1e-12)


def test_values_are_not_rotated(rng):
    # With q = 0 every score is 0, so the output is the plain mean of the *unrotated* values.
    q, k, v = np.zeros((4, 8)), rng.standard_normal((4, 8)), rng.standard_normal((4, 8))
    np.testing.assert_allclose(rr.attention(q, k, v), np.tile(v.mean(axis=0), (4, 1)), atol=1e-15)


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("pairing", ["interleaved", "half"])
def test_shift_invariance(causal, pairing, rng):
    q, k, v = (rng.standard_normal((2, 3, 10, 16)) for _ in range(3))
    out = rr.attention(q, k, v, causal=causal, pairing=pairing)
    shift = 12345
    shifted = rr.attention(q, k, v, q_positions=np.arange(10) + shift, k_positions=np.arange(10) + shift,
                           causal=causal, pairing=pairing)
    np.testing.assert_allclose(shifted, out, atol=1e-10)
    # ...while shifting only the queries does change the output (the test can fail).
    moved = rr.attention(q, k, v, q_positions=np.arange(10) + 3, causal=False, pairing=pairing)
    assert np.abs(moved - rr.attention(q, k, v, pairing=pairing)).max() > 1e-3


def test_incremental_decoding_equals_full(rng):
    B, H, N, d = 2, 4, 24, 16
    q, k, v = (rng.standard_normal((B, H, N, d)) for _ in range(3))
    full = rr.attention(q, k, v, causal=True)
    # One token at a time: the query at position t attends the cache of keys 0..t.
    for t in range(N):
        step = rr.attention(q[..., t:t + 1, :], k[..., :t + 1, :], v[..., :t + 1, :],
                            q_positions=[t], causal=True)
        np.testing.assert_allclose(step[..., 0, :], full[..., t, :], atol=1e-12)
    # A block of new queries at an offset against the whole cache.
    block = rr.attention(q[..., 20:, :], k, v, q_positions=np.arange(20, N), causal=True)
    np.testing.assert_allclose(block, full[..., 20:, :], atol=1e-12)


def linear_attention_loop(q, k, v, causal, positions=None):
    """Eq 19 term by term, with phi = elu + 1 and dense rotation matrices (query/key i at ``positions[i]``)."""
    N, d = q.shape
    p = np.arange(N) if positions is None else positions
    phi = lambda x: np.where(x > 0, x + 1, np.exp(np.minimum(x, 0)))  # noqa: E731  (no overflow warning)
    out = np.zeros((N, v.shape[-1]))
    for m in range(N):
        num, den = np.zeros(v.shape[-1]), 0.0
        for n in range(m + 1 if causal else N):
            num += (rr.rotation_matrix(p[m], d) @ phi(q[m])) @ (rr.rotation_matrix(p[n], d) @ phi(k[n])) * v[n]
            den += phi(q[m]) @ phi(k[n])
        out[m] = num / den
    return out


@pytest.mark.parametrize("causal", [False, True])
def test_linear_attention_matches_eq19(causal, rng):
    """(The per-prefix normalised sums, used when a causal prefix underflows, are checked here too.)"""
    q, k, v = rng.standard_normal((12, 8)), rng.standard_normal((12, 8)), rng.standard_normal((12, 5))
    np.testing.assert_allclose(rr.linear_attention(q, k, v, causal=causal),
                               linear_attention_loop(q, k, v, causal), atol=1e-12)
    batched = rr.linear_attention(np.stack([q, q]), np.stack([k, k]), np.stack([v, v]), causal=causal)
    np.testing.assert_allclose(batched[1], linear_attention_loop(q, k, v, causal), atol=1e-12)


def test_causal_attention_with_no_visible_key_is_an_error(rng):
    q, k, v = (rng.standard_normal((3, 4)) for _ in range(3))
    with pytest.raises(ValueError, match="no key at or before"):
        rr.attention(q, k, v, q_positions=[0, 1, 2], k_positions=[5, 6, 7], causal=True)


@pytest.mark.parametrize("shape", [(9, 6), (2, 3, 7, 4)])
def test_per_prefix_normalisation_is_eq19(shape, rng):
    """The fallback for underflowing causal prefixes, called directly on ordinary q, k: the same as eq 19."""
    from rope_ref import rope_attention as att
    q, k, v = rng.standard_normal(shape), rng.standard_normal(shape), rng.standard_normal(shape[:-1] + (3,))
    lq, lk = att._log_phi(q), att._log_phi(k)
    fq = np.exp(lq - lq.max(axis=-1, keepdims=True))
    pos = np.arange(shape[-2], dtype=float)
    num, den = att._causal_sums_per_prefix(rr.rotate(fq, pos), fq, lk, pos, v, 10000.0)
    want = rr.linear_attention_dense(q, k, v, causal=True)
    np.testing.assert_allclose(num / den[..., None], want, atol=1e-12)



def test_softmax_is_the_row_normalised_exponential():
    # exp(0) : exp(log 3) = 1 : 3, so the weights are 1/4 and 3/4; a masked (-inf) score gets weight 0
    w = rr.softmax(np.array([[0.0, np.log(3.0), -np.inf]]))
    np.testing.assert_allclose(w, [[0.25, 0.75, 0.0]], rtol=1e-15)
    # a shift of every score leaves the weights alone, even a shift that would overflow exp
    np.testing.assert_allclose(rr.softmax(np.array([1000.0, 1000.0 + np.log(3.0)])), [0.25, 0.75], rtol=1e-12)
    with pytest.raises(ValueError, match="scores"):
        rr.softmax([np.nan, 1.0])
    with pytest.raises(ValueError, match="at least one finite score"):
        rr.softmax([-np.inf, -np.inf])


def test_softmax_scale_multiplies_the_scores_without_forming_them():
    s = np.array([[0.0, np.log(3.0), -np.inf]])
    # scale 2: weights exp(0) : exp(2 log 3) = 1 : 9
    np.testing.assert_allclose(rr.softmax(s, scale=2.0), [[0.1, 0.9, 0.0]], rtol=1e-14)
    # scale inf: all weight on the largest score; scale 0: the mean over the unmasked scores
    np.testing.assert_array_equal(rr.softmax(s, scale=np.inf), [[0.0, 1.0, 0.0]])
    np.testing.assert_array_equal(rr.softmax(s, scale=0.0), [[0.5, 0.5, 0.0]])
    # a scale whose product with the scores would overflow: the scores 1e300 apart still give the argmax
    np.testing.assert_array_equal(rr.softmax(np.array([0.0, 1e300]), scale=1e300), [0.0, 1.0])
    with pytest.raises(ValueError, match="scale"):
        rr.softmax(s, scale=-1.0)
    with pytest.raises(TypeError, match="scale"):
        rr.softmax(s, scale="2")


def test_attention_near_the_float64_limit_is_still_the_argmax():
    """|q|, |k| >= 2^1023: a scale of 2^1024 would be inf and turn every score into 0 (uniform weights)."""
    q, k, v = np.array([[1e308, 0.0]]), np.array([[1e308, 0.0], [-1e308, 0.0]]), np.array([[1.0], [2.0]])
    np.testing.assert_array_equal(rr.attention(q, k, v, q_positions=[0], k_positions=[0, 0]), [[1.0]])
