"""The forms of RoPE (eqs 12, 14, 34, and the fast path) agree, and the properties the paper states hold."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import rope_ref as rr
from kernels import llama_complex, neox_rotate_half

DS = [2, 4, 6, 8, 10, 32, 64, 96, 128, 256]


def test_inv_freq_values_by_hand():
    # theta_i = base^(-2i/d), 0-indexed: d=4 -> [1, 10000^(-1/2)] = [1, 0.01]
    np.testing.assert_allclose(rr.frequencies(4), [1.0, 0.01], rtol=1e-15)
    np.testing.assert_allclose(rr.frequencies(8, base=16.0), [1.0, 0.5, 0.25, 0.125], rtol=1e-15)
    f = rr.frequencies(128)
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
        "plain elementwise": rr.rotate_elementwise(x, pos, base=base),
        "fast": rr.rotate(x, pos, base=base),
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


@pytest.mark.parametrize("d", [8, 64, 128])
def test_matches_public_reference_forms(d, rng):
    x = rng.standard_normal((3, 20, d))
    pos = np.arange(20) + 5
    np.testing.assert_allclose(rr.rotate(x, pos, pairing="half"), neox_rotate_half(x, pos), atol=1e-12)
    np.testing.assert_allclose(rr.rotate(x, pos), llama_complex(x, pos), atol=1e-12)


def test_inv_freq_override_equals_base(rng):
    x = rng.standard_normal((6, 16))
    np.testing.assert_allclose(rr.rotate(x, inv_freq=rr.frequencies(16, 77.0)), rr.rotate(x, base=77.0), atol=0)
    # Frequencies halved == positions halved (position interpolation).
    np.testing.assert_allclose(rr.rotate(x, inv_freq=rr.frequencies(16) / 2), rr.rotate(x, np.arange(6) / 2), atol=1e-15)


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


# ---- identities the paper states --------------------------------------------------------------

finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)


@st.composite
def qk_case(draw):
    d = 2 * draw(st.integers(1, 48))
    vec = arrays(np.float64, d, elements=st.floats(-10, 10, allow_nan=False, allow_infinity=False))
    return d, draw(vec), draw(vec)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(case=qk_case(), m=finite, n=finite, shift=finite, base=st.floats(2.0, 1e6),
       pairing=st.sampled_from(["interleaved", "half"]))
def test_relative_position_identity(case, m, n, shift, base, pairing):
    """Eq 11/16: <f_q(q, m), f_k(k, n)> = <q, R_{n-m} k> -- unchanged when m and n move together."""
    d, q, k = case
    def dot(a, b):
        return rr.rotate(q, a, base=base, pairing=pairing) @ rr.rotate(k, b, base=base, pairing=pairing)
    scale = (1 + np.linalg.norm(q) * np.linalg.norm(k)) * 1e-10 * (1 + abs(m) + abs(n) + abs(shift))
    g = q @ rr.rotate(k, n - m, base=base, pairing=pairing)
    assert abs(dot(m, n) - g) <= scale
    assert abs(dot(m + shift, n + shift) - g) <= scale


def test_relative_identity_would_fail_for_additive_embedding(rng):
    """The sinusoidal (additive) embedding does not have the property: the test above can discriminate."""
    q, k = rng.standard_normal(16), rng.standard_normal(16)
    def dot(m, n):
        return (q + rr.sinusoidal(m, 16)) @ (k + rr.sinusoidal(n, 16))
    assert abs(dot(3, 7) - dot(103, 107)) > 1e-3


@pytest.mark.parametrize("d", [2, 8, 64])
def test_rotation_matrix_group_properties(d, rng):
    a, b = rng.uniform(-1e4, 1e4, size=2)
    Ra, Rb = rr.rotation_matrix(a, d), rr.rotation_matrix(b, d)
    np.testing.assert_allclose(Ra.T @ Ra, np.eye(d), atol=1e-14)                   # orthogonal
    np.testing.assert_allclose(Ra.T @ Rb, rr.rotation_matrix(b - a, d), atol=1e-9)  # R_m^T R_n = R_{n-m}
    np.testing.assert_allclose(Ra @ Rb, rr.rotation_matrix(a + b, d), atol=1e-9)    # R_a R_b = R_{a+b}
    np.testing.assert_allclose(np.linalg.det(Ra), 1.0, atol=1e-12)                 # a rotation, not a reflection
    x = rng.standard_normal((50, d))
    np.testing.assert_allclose(np.linalg.norm(rr.rotate(x, rng.uniform(0, 1e5, 50)), axis=-1),
                               np.linalg.norm(x, axis=-1), rtol=1e-13)


# ---- worked numbers from the lecture notes and explainers --------------------------------------------------------

def test_explainer_small_example():
    """An explainer's worked example: x=[1,0], theta=0.1: positions 1 and 3 give [0.995, 0.100], [0.955, 0.296]; dot = cos 0.2."""
    x = np.array([1.0, 0.0])
    f = np.array([0.1])
    p1, p3 = rr.rotate(x, 1, inv_freq=f), rr.rotate(x, 3, inv_freq=f)
    np.testing.assert_allclose(p1, [0.995, 0.100], atol=5e-4)
    np.testing.assert_allclose(p3, [0.955, 0.296], atol=5e-4)
    np.testing.assert_allclose(p1 @ p3, np.cos(0.2), rtol=1e-14)


def test_lecture_notes_torch_example():
    """Stratos' lecture notes "Position Embedding", section 2.1.1 (a PyTorch session): d=2 (theta = 1), t1=1.4314, t2=1.9864; printed values to 4 decimals."""
    q, k = np.array([1.5410, -0.2934]), np.array([-2.1788, 0.5684])
    t1, t2 = 1.4314, 1.9864
    q_t1, k_t2 = rr.rotate(q, t1), rr.rotate(k, t2)
    np.testing.assert_allclose(q_t1, [0.5047, 1.4853], atol=2e-4)
    np.testing.assert_allclose(k_t2, [0.3597, -2.2228], atol=2e-4)
    np.testing.assert_allclose(q_t1 @ k_t2, -3.1199, atol=5e-4)
    np.testing.assert_allclose(rr.rotate_complex(q, t1), q_t1, atol=1e-15)
    # inner(z1, z2) = z1 * conj(z2) = -3.1199+1.6562j, = inner(zq, zk) * e^{i(t1-t2)} (Lemma C.1, eq 23)
    zq, zk = rr.rotate_complex(q, t1).view(complex)[0], rr.rotate_complex(k, t2).view(complex)[0]
    np.testing.assert_allclose(zq * np.conj(zk), -3.1199 + 1.6562j, atol=5e-4)
    z0 = q.view(complex)[0] * np.conj(k.view(complex)[0])
    np.testing.assert_allclose(z0 * np.exp(1j * (t1 - t2)), zq * np.conj(zk), atol=1e-14)


def test_lecture_notes_rotation_as_cos_plus_sin_form():
    """The lecture notes, section 2.2: R_theta u = cos(theta) u + sin(theta) (-u2, u1)."""
    u, th = np.array([0.3, -1.7]), 0.77
    np.testing.assert_allclose(rr.rotate(u, th), np.cos(th) * u + np.sin(th) * np.array([-u[1], u[0]]), atol=1e-15)


def test_lecture_notes_sigma_is_the_rope_frequency():
    """The lecture notes' eq 3 with beta = 0.0001 (not the 0.00001 typo of section 2.2) gives rope's theta."""
    M = 32
    sigma = 0.0001 ** (np.arange(M) / M)
    np.testing.assert_allclose(rr.frequencies(2 * M), sigma, rtol=1e-13)
    assert not np.allclose(rr.frequencies(2 * M), 0.00001 ** (np.arange(M) / M))


def test_eq15_one_indexed_theta_is_the_same_set():
    """Eq 15's theta_i = 10000^(-2(i-1)/d), i=1..d/2 equals rope_ref's 0-indexed base^(-2i/d), i=0..d/2-1."""
    d = 128
    one_indexed = np.array([10000.0 ** (-2 * (i - 1) / d) for i in range(1, d // 2 + 1)])
    np.testing.assert_allclose(rr.frequencies(d), one_indexed, rtol=1e-14)


# ---- long-term decay (section 3.4.3) -------------------------------------------------------------

@pytest.mark.parametrize("d", [2, 16, 128, 256])
def test_decay_bound_at_zero(d):
    assert rr.decay_bound(0, d) == (d / 2 + 1) / 2


def test_partial_sums_by_hand():
    # d=4, base=10000: theta = [1, 0.01]; S_1 = e^{ir}, S_2 = e^{ir} + e^{0.01ir}
    r = 3.0
    S = rr.partial_sums(r, 4)
    np.testing.assert_allclose(S, [np.exp(1j * r), np.exp(1j * r) + np.exp(0.01j * r)], atol=1e-15)
    np.testing.assert_allclose(rr.decay_bound(r, 4), (abs(S[0]) + abs(S[1])) / 2, atol=1e-15)


def test_decay_bound_matches_figure_2():
    """Figure 2: d=128; beyond the narrow peak the curve lies in the paper's y-range (~6 to 22) and decays."""
    r = np.linspace(0, 256, 25601)
    y = rr.decay_bound(r, 128)
    assert y.shape == r.shape
    assert y[0] == 32.5
    beyond = y[r >= 5]
    assert 6.0 < beyond.min() and beyond.max() < 22.0
    # Decays: each 32-wide window's mean is below the first window's, and the last is lowest of the first.
    windows = [y[(r >= a) & (r < a + 32)].mean() for a in range(0, 256, 32)]
    assert all(w < windows[0] for w in windows[1:])
    assert windows[-1] < windows[1] < windows[0]
    # Vectorized over any shape, symmetric in the sign of the distance.
    np.testing.assert_allclose(rr.decay_bound(-r[1:].reshape(100, 256)), y[1:].reshape(100, 256), atol=1e-12)


def test_decay_bound_bounds_the_real_sum(rng):
    """Eq 37: |sum_i h_i e^{i r theta_i}| <= max_i |h_{i+1} - h_i| * sum_j |S_j| (with h_{d/2} = 0)."""
    d = 32
    q, k = rng.standard_normal(d), rng.standard_normal(d)
    h = q.view(complex) * np.conj(k.view(complex))
    h_ext = np.append(h, 0)
    for r in rng.uniform(0, 300, 50):
        lhs = abs(np.sum(h * np.exp(1j * r * rr.frequencies(d))))
        rhs = np.max(np.abs(np.diff(h_ext))) * rr.decay_bound(r, d) * (d / 2)
        assert lhs <= rhs + 1e-12


# ---- sinusoidal embedding (Vaswani et al. 2017, section 3.5) ------------------------------------

def test_sinusoidal_layout_and_shift_matrix(rng):
    d = 8
    t = rng.uniform(0, 500, 20)
    E = rr.sinusoidal(t, d)
    np.testing.assert_allclose(E[:, 0], np.sin(t), atol=1e-15)
    np.testing.assert_allclose(E[:, 1], np.cos(t), atol=1e-15)
    np.testing.assert_allclose(E[:, 7], np.cos(t * 10000.0 ** (-6 / 8)), atol=1e-15)
    for k in [1, 7.5, 300]:
        B = rr.sinusoidal_shift_matrix(k, d)
        np.testing.assert_allclose(rr.sinusoidal(t + k, d), E @ B.T, atol=1e-11)  # B_k independent of t
        np.testing.assert_allclose(B.T @ B, np.eye(d), atol=1e-14)


# ---- the general (multi-axis) form: F of shape (rotary_dim/2, A), positions (A, ..., seq) ------------

import itertools  # noqa: E402
import math  # noqa: E402

from rope_ref import _fast  # noqa: E402

GENERAL_FORMS = [rr.rotate, rr.rotate_elementwise, rr.rotate_dense]


def _general_reference(x, positions, F, pairing, r):
    """Pair j of x[idx] turns by sum_a F[j, a] * positions[a][idx]: one element at a time with math.cos/sin.

    Written from the definition, sharing nothing with rope_ref: positions[a] is broadcast to
    x.shape[:-1] by NumPy only to index it."""
    x = np.asarray(x, dtype=np.float64)
    F = np.asarray(F, dtype=np.float64).reshape(len(F), -1)
    lead = x.shape[:-1]
    pos = [np.broadcast_to(np.asarray(p, dtype=np.float64), lead) for p in positions]
    out = x.copy()
    h = r // 2
    for idx in itertools.product(*(range(n) for n in lead)):
        for j in range(h):
            angle = sum(float(F[j, a]) * float(pos[a][idx]) for a in range(F.shape[1]))
            ia, ib = (2 * j, 2 * j + 1) if pairing == "interleaved" else (j, j + h)
            c, s = math.cos(angle), math.sin(angle)
            u, v = x[idx + (ia,)], x[idx + (ib,)]
            out[idx + (ia,)], out[idx + (ib,)] = u * c - v * s, u * s + v * c
    return out


CASES = [  # (x shape, positions shape, A, rotary_dim)
    ((5, 8), (1, 5), 1, None),
    ((5, 8), (2, 5), 2, None),
    ((2, 3, 5, 12), (3, 1, 1, 5), 3, None),          # M-RoPE layout: one row of ids per axis, broadcast over heads
    ((2, 3, 5, 12), (3, 2, 1, 5), 3, 8),             # per-batch positions, partial rotary
    ((4, 6, 10), (2, 6), 2, 6),
    ((3, 4, 10), (2, 3, 4), 2, None),                # one position per (batch, token)
    ((6, 4), (3, 6), 3, 2),
]


@pytest.mark.parametrize("fn", GENERAL_FORMS)
@pytest.mark.parametrize("pairing", ["interleaved", "half"])
@pytest.mark.parametrize("xs,ps,A,r", CASES)
def test_the_general_form_against_a_per_element_loop(fn, pairing, xs, ps, A, r):
    rng = np.random.default_rng(hash((xs, ps, A, r)) % 2**32)
    rot = xs[-1] if r is None else r
    x = rng.standard_normal(xs)
    pos = rng.uniform(-50, 50, ps).round(2)
    F = rng.standard_normal((rot // 2, A)) * rng.choice([1.0, 0.1, 0.001], (rot // 2, A))   # dense: RoPE-Mixed
    expected = _general_reference(x, pos, F, pairing, rot)
    got = fn(x, pos, pairing=pairing, rotary_dim=r, inv_freq=F)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)


@pytest.mark.parametrize("fn", GENERAL_FORMS)
def test_mrope_sections_by_hand(fn):
    """Qwen2-VL-style F: pair 0 follows t, pair 1 follows h, pair 2 follows w (theta 1, 0.1, 0.01)."""
    F = np.array([[1.0, 0, 0], [0, 0.1, 0], [0, 0, 0.01]])
    x = np.tile([1.0, 0.0], 3)[None, :]                          # every pair = (1, 0): the result is (cos, sin)
    t, h, w = 2.0, 30.0, 400.0
    out = fn(x, [[t], [h], [w]], inv_freq=F)
    angles = [t * 1.0, h * 0.1, w * 0.01]
    np.testing.assert_allclose(out[0], [f(a) for a in angles for f in (math.cos, math.sin)], atol=1e-14)


@pytest.mark.parametrize("fn", GENERAL_FORMS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("pairing", ["interleaved", "half"])
def test_one_axis_as_a_matrix_is_the_vector_bit_for_bit(fn, dtype, pairing):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 7, 12)).astype(dtype)
    pos = rng.uniform(0, 1000, 7)
    F = rr.frequencies(8, 500.0)
    vec = fn(x, pos, pairing=pairing, rotary_dim=8, inv_freq=F)
    mat = fn(x, pos[None], pairing=pairing, rotary_dim=8, inv_freq=F[:, None])
    assert vec.dtype == mat.dtype == dtype
    assert np.array_equal(vec, mat)
    assert np.array_equal(fn(x, pairing=pairing, inv_freq=rr.frequencies(12)[:, None]), fn(x, pairing=pairing))


@pytest.mark.parametrize("fn", GENERAL_FORMS)
def test_the_score_depends_on_F_times_the_difference_only(fn):
    """Relative identity of the general form: q_m . k_n depends on F (p_m - p_n) alone (any F)."""
    rng = np.random.default_rng(11)
    q, k = rng.standard_normal(8), rng.standard_normal(8)
    F = rng.standard_normal((4, 3))

    def score(pm, pn):
        both = fn(np.stack([q, k]), np.stack([pm, pn], axis=1), inv_freq=F)
        return float(both[0] @ both[1])

    pm, pn = rng.uniform(-20, 20, 3), rng.uniform(-20, 20, 3)
    shift = rng.uniform(-1000, 1000, 3)
    assert score(pm + shift, pn + shift) == pytest.approx(score(pm, pn), abs=1e-9)
    assert score(pm - pn, np.zeros(3)) == pytest.approx(score(pm, pn), abs=1e-9)
    # Two different differences with the same F (p_m - p_n): a 1 x 2 F has a null direction.
    F2 = np.array([[1.0, 2.0]])
    s1 = fn(np.stack([q[:2], k[:2]]), [[2.0, 0.0], [0.0, 0.0]], inv_freq=F2)          # F diff = 2
    s2 = fn(np.stack([q[:2], k[:2]]), [[5.0, 5.0], [3.0, 2.0]], inv_freq=F2)          # diff (0, 1): F diff = 2 again
    assert float(s1[0] @ s1[1]) == pytest.approx(float(s2[0] @ s2[1]), abs=1e-12)
    assert float(s1[0] @ s1[1]) != pytest.approx(float(q[:2] @ k[:2]), abs=1e-3)      # and it did turn


@pytest.mark.parametrize("fn", GENERAL_FORMS + [rr.rotation_matrix])
def test_positions_must_have_one_row_per_axis(fn):
    x, F = np.zeros((5, 8)), np.ones((4, 3))
    call = (lambda p: fn(p, 8, inv_freq=F)) if fn is rr.rotation_matrix else (lambda p: fn(x, p, inv_freq=F))
    bad = [lambda: call(np.zeros((2, 5)))]
    if fn is not rr.rotation_matrix:
        bad += [lambda: fn(x, inv_freq=F), lambda: fn(x, np.zeros((3, 4)), inv_freq=F)]
    for c in bad:
        with pytest.raises(ValueError, match="positions"):
            c()
    with pytest.raises(ValueError, match="inv_freq"):
        call_f = (lambda f: fn(np.zeros((3, 5)), 8, inv_freq=f)) if fn is rr.rotation_matrix else (
            lambda f: fn(x, np.zeros((3, 5)), inv_freq=f))
        call_f(np.ones((3, 3)))


def test_a_fast_path_that_drops_an_axis_is_caught(monkeypatch):
    """Planted: the fast path's tables use only the first axis of positions."""
    real = _fast.tables
    monkeypatch.setattr(_fast, "tables", lambda pos, freqs, *a: real(pos[:, :1], freqs[:, :1], *a))
    rng = np.random.default_rng(2)
    x, pos, F = rng.standard_normal((5, 8)), rng.uniform(0, 9, (2, 5)), rng.standard_normal((4, 2))
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(rr.rotate(x, pos, inv_freq=F), _general_reference(x, pos, F, "interleaved", 8),
                                   atol=1e-12)


@pytest.mark.parametrize("dtype,tol", [(np.float16, 4e-3), (np.float32, 2e-6), ("bfloat16", 3e-2)])
@pytest.mark.parametrize("pairing", ["interleaved", "half"])
def test_the_general_form_in_narrow_dtypes_matches_the_plain_form(dtype, tol, pairing):
    import ml_dtypes
    dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else dtype
    rng = np.random.default_rng(12)
    x = rng.standard_normal((2, 3, 9, 16)).astype(dtype)
    pos, F = rng.integers(0, 64, (3, 2, 1, 9)), rng.uniform(0, 1, (6, 3))
    got = rr.rotate(x, pos, pairing=pairing, rotary_dim=12, inv_freq=F)
    want = _general_reference(x.astype(np.float64), pos, F, pairing, 12)
    assert got.dtype == x.dtype
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=0, atol=tol * 4)
