"""The three forms of RoPE (eqs 12, 14, 34) and both pairings agree."""

import numpy as np
import pytest

import rope_ref as rr

DS = [2, 4, 6, 8, 10, 32, 64, 96, 128, 256]


def test_inv_freq_values_by_hand():
    # theta_i = base^(-2i/d), 0-indexed: d=4 -> [1, 10000^(-1/2)] = [1, 0.01]
    np.testing.assert_allclose(rr.inv_freq(4), [1.0, 0.01], rtol=1e-15)
    np.testing.assert_allclose(rr.inv_freq(8, base=16.0), [1.0, 0.5, 0.25, 0.125], rtol=1e-15)
    f = rr.inv_freq(128)
    assert f.shape == (64,)
    np.testing.assert_allclose(f[-1], 10000.0 ** (-126 / 128), rtol=1e-14)


def test_rotate_basis_vectors_by_hand():
    # e_0 at position m -> (cos m, sin m, 0, 0); e_3 -> (0, 0, -sin(m/100), cos(m/100)).
    m = 2.5
    e = np.eye(4)
    out = rr.rotate(e, np.full(4, m))
    np.testing.assert_allclose(out[0], [np.cos(m), np.sin(m), 0, 0], atol=1e-15)
    np.testing.assert_allclose(out[3], [0, 0, -np.sin(m / 100), np.cos(m / 100)], atol=1e-15)
    # Half pairing pairs (0, 2) and (1, 3): e_0 -> (cos m, 0, sin m, 0).
    out_h = rr.rotate(e, np.full(4, m), pairing="half")
    np.testing.assert_allclose(out_h[0], [np.cos(m), 0, np.sin(m), 0], atol=1e-15)


def test_rotation_matrix_structure():
    R = rr.rotation_matrix(3.0, 6, base=100.0)
    th = 100.0 ** (-np.arange(0, 6, 2) / 6)
    for i, t in enumerate(th):
        block = R[2 * i:2 * i + 2, 2 * i:2 * i + 2]
        np.testing.assert_allclose(block, [[np.cos(3 * t), -np.sin(3 * t)], [np.sin(3 * t), np.cos(3 * t)]], atol=1e-15)
    off = R.copy()
    for i in range(3):
        off[2 * i:2 * i + 2, 2 * i:2 * i + 2] = 0
    assert not off.any()
    np.testing.assert_array_equal(rr.rotation_matrix(0.0, 10), np.eye(10))
    assert rr.rotation_matrix(np.zeros((2, 3)), 4).shape == (2, 3, 4, 4)


def _all_forms(x, pos, base=10000.0):
    ref = rr.rotate_dense(x, pos, base=base)
    forms = {
        "elementwise": rr.rotate(x, pos, base=base),
        "complex": rr.rotate_complex(x, pos, base=base),
        "half via permutation": rr.to_interleaved(rr.rotate(rr.to_half(x), pos, base=base, pairing="half")),
    }
    return ref, forms


@pytest.mark.parametrize("d", DS)
@pytest.mark.parametrize("kind", ["integer", "fractional", "large"])
def test_all_forms_agree(d, kind, rng):
    x = rng.standard_normal((2, 17, d))
    pos = {
        "integer": np.arange(17),
        "fractional": rng.uniform(-50, 50, size=17),
        "large": rng.uniform(0, 1e6, size=(2, 17)),
    }[kind]
    ref, forms = _all_forms(x, pos)
    for name, out in forms.items():
        np.testing.assert_allclose(out, ref, rtol=0, atol=1e-12, err_msg=name)


def test_forms_agree_at_one_million_with_other_base(rng):
    x = rng.standard_normal((5, 64))
    pos = np.array([0, 1, 999_999, 1_000_000, 123_456.75])
    ref, forms = _all_forms(x, pos, base=500_000.0)
    for name, out in forms.items():
        np.testing.assert_allclose(out, ref, rtol=0, atol=1e-12, err_msg=name)


def test_default_positions_are_arange_along_seq(rng):
    x = rng.standard_normal((3, 2, 9, 8))
    np.testing.assert_array_equal(rr.rotate(x), rr.rotate(x, np.arange(9)))
    np.testing.assert_array_equal(rr.rotate(x), rr.rotate(x, np.broadcast_to(np.arange(9), (3, 2, 9))))
    # A single vector (d,) defaults to position 0: unchanged.
    v = rng.standard_normal(8)
    np.testing.assert_allclose(rr.rotate(v), v, atol=0)


def test_positions_broadcast_per_batch(rng):
    x = rng.standard_normal((2, 5, 8))
    pos = np.array([[0.0], [10.0]]) + np.arange(5)  # (2, 5): batch 1 starts at 10
    out = rr.rotate(x, pos)
    np.testing.assert_allclose(out[1], rr.rotate(x[1], np.arange(5) + 10.0), atol=1e-15)
    np.testing.assert_allclose(out, rr.rotate_dense(x, pos), atol=1e-12)


@pytest.mark.parametrize("pairing", ["interleaved", "half"])
def test_partial_rotary(pairing, rng):
    x = rng.standard_normal((4, 11, 32))
    out = rr.rotate(x, pairing=pairing, rotary_dim=8)
    np.testing.assert_array_equal(out[..., 8:], x[..., 8:])
    # The rotated part uses frequencies computed for d = rotary_dim (GPT-NeoX, HF partial_rotary_factor).
    np.testing.assert_allclose(out[..., :8], rr.rotate(x[..., :8], pairing=pairing), atol=1e-15)


def neox_rotate_half(x, pos, base=10000.0):
    """GPT-NeoX / HF transformers form, written from their source: x*cos + rotate_half(x)*sin."""
    d = x.shape[-1]
    inv = 1.0 / base ** (np.arange(0, d, 2) / d)
    freqs = np.outer(pos, inv)
    emb = np.concatenate([freqs, freqs], axis=-1)
    rot_half = np.concatenate([-x[..., d // 2:], x[..., :d // 2]], axis=-1)
    return x * np.cos(emb) + rot_half * np.sin(emb)


def llama_complex(x, pos, base=10000.0):
    """Meta Llama's form: view_as_complex of (..., d/2, 2) times polar(1, freqs)."""
    d = x.shape[-1]
    freqs = np.outer(pos, 1.0 / base ** (np.arange(0, d, 2)[: d // 2] / d))
    z = x.reshape(*x.shape[:-1], d // 2, 2)
    z = z[..., 0] + 1j * z[..., 1]
    out = z * np.exp(1j * freqs)
    return np.stack([out.real, out.imag], axis=-1).reshape(x.shape)


@pytest.mark.parametrize("d", [8, 64, 128])
def test_matches_public_reference_forms(d, rng):
    x = rng.standard_normal((3, 20, d))
    pos = np.arange(20) + 5
    np.testing.assert_allclose(rr.rotate(x, pos, pairing="half"), neox_rotate_half(x, pos), atol=1e-12)
    np.testing.assert_allclose(rr.rotate(x, pos), llama_complex(x, pos), atol=1e-12)


def test_inv_freq_override_equals_base(rng):
    x = rng.standard_normal((6, 16))
    np.testing.assert_allclose(rr.rotate(x, inv_freq=rr.inv_freq(16, 77.0)), rr.rotate(x, base=77.0), atol=0)
    # Frequencies halved == positions halved (position interpolation).
    np.testing.assert_allclose(rr.rotate(x, inv_freq=rr.inv_freq(16) / 2), rr.rotate(x, np.arange(6) / 2), atol=1e-15)


def test_permutations_are_inverse(rng):
    x = rng.standard_normal((3, 10))
    np.testing.assert_array_equal(rr.to_interleaved(rr.to_half(x)), x)
    np.testing.assert_array_equal(rr.to_half(np.arange(6.0)), [0, 2, 4, 1, 3, 5])


def test_permute_qk_weights_makes_half_checkpoint(rng):
    n_heads, head_dim, d_in = 4, 16, 24
    w = rng.standard_normal((n_heads * head_dim, d_in))
    xs = rng.standard_normal((7, d_in))
    q_inter = (xs @ w.T).reshape(7, n_heads, head_dim).transpose(1, 0, 2)  # (heads, seq, hd)
    q_half = (xs @ rr.permute_qk_weights(w, n_heads).T).reshape(7, n_heads, head_dim).transpose(1, 0, 2)
    # A half-split model run on the permuted weights computes the same attention scores.
    s_inter = rr.rotate(q_inter) @ np.swapaxes(rr.rotate(q_inter), -1, -2)
    s_half = rr.rotate(q_half, pairing="half") @ np.swapaxes(rr.rotate(q_half, pairing="half"), -1, -2)
    np.testing.assert_allclose(s_half, s_inter, atol=1e-10)
    np.testing.assert_array_equal(q_half, rr.to_half(q_inter))
