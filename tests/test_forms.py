"""The forms of RoPE (eqs 12, 14, 34, the fast path) agree with each other and with a per-pair loop written here,
and the properties the paper states hold."""

import itertools
import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import rope_ref as rr
from kernels import llama, neox


def test_frequencies_and_basis_vectors_by_hand():
    np.testing.assert_allclose(rr.frequencies(4), [1.0, 0.01], rtol=1e-15)      # theta_i = base^(-2i/d), 0-indexed
    np.testing.assert_allclose(rr.frequencies(8, base=16.0), [1.0, 0.5, 0.25, 0.125], rtol=1e-15)
    one_indexed = [10000.0 ** (-2 * (i - 1) / 128) for i in range(1, 65)]        # eq 15 as printed: the same set
    np.testing.assert_allclose(rr.frequencies(128), one_indexed, rtol=1e-14)
    m, e = 2.5, np.eye(4)                          # e_0 -> (cos m, sin m, 0, 0); e_3 -> (0, 0, -sin(m/100), cos(m/100))
    out = rr.rotate(e, np.full(4, m))
    np.testing.assert_allclose(out[0], [np.cos(m), np.sin(m), 0, 0], atol=1e-15)
    np.testing.assert_allclose(out[3], [0, 0, -np.sin(m / 100), np.cos(m / 100)], atol=1e-15)
    np.testing.assert_allclose(rr.rotate(e, np.full(4, m), pairing="half")[0], [np.cos(m), 0, np.sin(m), 0], atol=1e-15)


@pytest.mark.parametrize("d", [2, 6, 64])
def test_rotation_matrix_blocks_and_group_properties(d, rng):
    R = rr.rotation_matrix(3.0, d, base=100.0)
    for i, t in enumerate(100.0 ** (-np.arange(0, d, 2) / d)):
        block = [[np.cos(3 * t), -np.sin(3 * t)], [np.sin(3 * t), np.cos(3 * t)]]
        np.testing.assert_allclose(R[2 * i:2 * i + 2, 2 * i:2 * i + 2], block, atol=1e-15)
        R[2 * i:2 * i + 2, 2 * i:2 * i + 2] = 0
    assert not R.any() and rr.rotation_matrix(np.zeros((2, 3)), d).shape == (2, 3, d, d)
    np.testing.assert_array_equal(rr.rotation_matrix(1.0, d + 4, rotary_dim=d)[d:, d:], np.eye(4))
    a, b = rng.uniform(-1e4, 1e4, size=2)
    Ra, Rb = rr.rotation_matrix(a, d), rr.rotation_matrix(b, d)
    np.testing.assert_allclose(Ra.T @ Ra, np.eye(d), atol=1e-14)                   # orthogonal
    np.testing.assert_allclose(Ra.T @ Rb, rr.rotation_matrix(b - a, d), atol=1e-9)  # R_m^T R_n = R_{n-m}
    np.testing.assert_allclose(Ra @ Rb, rr.rotation_matrix(a + b, d), atol=1e-9)
    np.testing.assert_allclose(np.linalg.det(Ra), 1.0, atol=1e-12)                 # a rotation, not a reflection


@pytest.mark.parametrize("d", [2, 6, 8, 32, 96, 256])
@pytest.mark.parametrize("kind", ["integer", "fractional", "large"])
def test_all_forms_agree(d, kind, rng):
    x = rng.standard_normal((2, 17, d))
    pos = {"integer": np.arange(17), "fractional": rng.uniform(-50, 50, 17),
           "large": rng.uniform(0, 1e6, (2, 17))}[kind]
    for base in (10000.0, 500_000.0):
        ref = rr.rotate_dense(x, pos, base=base)
        forms = {"elementwise": rr.rotate_elementwise(x, pos, base=base), "fast": rr.rotate(x, pos, base=base),
                 "complex": rr.rotate_complex(x, pos, base=base),
                 "half": rr.to_interleaved(rr.rotate(rr.to_half(x), pos, base=base, pairing="half"))}
        if pos.ndim == 1:                          # Meta Llama's and HF's (NeoX) forms: row r at pos[r]
            forms |= {"llama": llama(x, pos - np.arange(17), base=base),
                      "neox": rr.to_interleaved(neox(rr.to_half(x), pos - np.arange(17), base=base))}
        for name, out in forms.items():
            np.testing.assert_allclose(out, ref, rtol=0, atol=1e-12, err_msg=name)


def test_positions_default_broadcast_partial_rotary_and_inv_freq(rng):
    x = rng.standard_normal((2, 9, 8))
    np.testing.assert_array_equal(rr.rotate(x), rr.rotate(x, np.arange(9)))
    np.testing.assert_array_equal(rr.rotate(x), rr.rotate(x, np.broadcast_to(np.arange(9), (2, 9))))
    v = rng.standard_normal(8)
    np.testing.assert_array_equal(rr.rotate(v), v)                    # a single vector: position 0
    out = rr.rotate(x, pairing="half", rotary_dim=4)                  # frequencies for d = rotary_dim (NeoX, HF)
    np.testing.assert_array_equal(out[..., 4:], x[..., 4:])
    np.testing.assert_allclose(out[..., :4], rr.rotate(x[..., :4], pairing="half"), atol=1e-15)
    np.testing.assert_array_equal(rr.rotate(x, inv_freq=rr.frequencies(8, 77.0)), rr.rotate(x, base=77.0))
    np.testing.assert_allclose(rr.rotate(x, inv_freq=rr.frequencies(8) / 2), rr.rotate(x, np.arange(9) / 2),
                               atol=1e-15)                            # frequencies halved == positions halved


def test_permutations_and_permuted_weights(rng):
    x = rng.standard_normal((3, 10))
    np.testing.assert_array_equal(rr.to_interleaved(rr.to_half(x)), x)
    np.testing.assert_array_equal(rr.to_half(np.arange(6.0)), [0, 2, 4, 1, 3, 5])
    n_heads, head_dim, d_in = 4, 16, 24
    w, xs = rng.standard_normal((n_heads * head_dim, d_in)), rng.standard_normal((7, d_in))
    q_inter = (xs @ w.T).reshape(7, n_heads, head_dim).transpose(1, 0, 2)
    q_half = (xs @ rr.permute_qk_weights(w, n_heads).T).reshape(7, n_heads, head_dim).transpose(1, 0, 2)
    np.testing.assert_array_equal(q_half, rr.to_half(q_inter))
    s_inter = rr.rotate(q_inter) @ np.swapaxes(rr.rotate(q_inter), -1, -2)
    s_half = rr.rotate(q_half, pairing="half") @ np.swapaxes(rr.rotate(q_half, pairing="half"), -1, -2)
    np.testing.assert_allclose(s_half, s_inter, atol=1e-10)          # the same attention scores


finite = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
vectors = st.integers(1, 48).flatmap(lambda h: st.tuples(*[arrays(np.float64, 2 * h, elements=st.floats(-10, 10))] * 2))


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(qk=vectors, m=finite, n=finite, shift=finite, base=st.floats(2.0, 1e6),
       pairing=st.sampled_from(["interleaved", "half"]))
def test_relative_position_identity(qk, m, n, shift, base, pairing):
    """Eq 11/16: <f_q(q, m), f_k(k, n)> = <q, R_{n-m} k>, unchanged when m and n move together."""
    q, k = qk
    def dot(a, b):
        return rr.rotate(q, a, base=base, pairing=pairing) @ rr.rotate(k, b, base=base, pairing=pairing)
    scale = (1 + np.linalg.norm(q) * np.linalg.norm(k)) * 1e-10 * (1 + abs(m) + abs(n) + abs(shift))
    g = q @ rr.rotate(k, n - m, base=base, pairing=pairing)
    assert abs(dot(m, n) - g) <= scale and abs(dot(m + shift, n + shift) - g) <= scale


def test_worked_examples_of_the_lecture_notes_and_an_explainer():
    f = np.array([0.1])                            # explainer: x = [1, 0], theta = 0.1, positions 1 and 3
    p1, p3 = rr.rotate(np.array([1.0, 0.0]), 1, inv_freq=f), rr.rotate(np.array([1.0, 0.0]), 3, inv_freq=f)
    np.testing.assert_allclose([p1, p3], [[0.995, 0.100], [0.955, 0.296]], atol=5e-4)
    np.testing.assert_allclose(p1 @ p3, np.cos(0.2), rtol=1e-14)
    q, k, t1, t2 = np.array([1.5410, -0.2934]), np.array([-2.1788, 0.5684]), 1.4314, 1.9864   # notes section 2.1.1
    q_t1, k_t2 = rr.rotate(q, t1), rr.rotate(k, t2)
    np.testing.assert_allclose([q_t1, k_t2], [[0.5047, 1.4853], [0.3597, -2.2228]], atol=2e-4)
    np.testing.assert_allclose(q_t1 @ k_t2, -3.1199, atol=5e-4)
    zq, zk = rr.rotate_complex(q, t1).view(complex)[0], rr.rotate_complex(k, t2).view(complex)[0]
    np.testing.assert_allclose(zq * np.conj(zk), -3.1199 + 1.6562j, atol=5e-4)    # Lemma C.1, eq 23
    u, th = np.array([0.3, -1.7]), 0.77            # section 2.2: R u = cos(th) u + sin(th) (-u2, u1)
    np.testing.assert_allclose(rr.rotate(u, th), np.cos(th) * u + np.sin(th) * np.array([-u[1], u[0]]), atol=1e-15)


def test_partial_sums_by_hand_and_the_decay_bound_of_figure_2(rng):
    """d=4: S_1 = e^{ir}, S_2 = e^{ir} + e^{0.01ir}; Figure 2 (d=128): past its peak in 6..22, decaying."""
    S = rr.partial_sums(3.0, 4)
    np.testing.assert_allclose(S, [np.exp(3j), np.exp(3j) + np.exp(0.03j)], atol=1e-15)
    np.testing.assert_allclose(rr.decay_bound(3.0, 4), (abs(S[0]) + abs(S[1])) / 2, atol=1e-15)
    scaled = rr.partial_sums([3.0], 4, inv_freq=[2.0, 0.5])
    np.testing.assert_allclose(scaled, [[np.exp(6j), np.exp(6j) + np.exp(1.5j)]], atol=1e-15)
    assert [rr.decay_bound(0, d) for d in (2, 16, 256)] == [(d / 2 + 1) / 2 for d in (2, 16, 256)]
    r = np.linspace(0, 256, 25601)
    y = rr.decay_bound(r, 128)
    assert y.shape == r.shape and y[0] == 32.5
    assert 6.0 < y[r >= 5].min() and y[r >= 5].max() < 22.0
    windows = [y[(r >= a) & (r < a + 32)].mean() for a in range(0, 256, 32)]
    assert all(w < windows[0] for w in windows[1:]) and windows[-1] < windows[1]
    np.testing.assert_allclose(rr.decay_bound(-r[1:].reshape(100, 256)), y[1:].reshape(100, 256), atol=1e-12)
    h = rng.standard_normal(32).view(complex) * np.conj(rng.standard_normal(32).view(complex))   # eq 37 bounds the sum
    for r in rng.uniform(0, 300, 50):                # |sum_i h_i e^{i r theta_i}| <= max_i |h_{i+1} - h_i| sum_j |S_j|
        lhs = abs(np.sum(h * np.exp(1j * r * rr.frequencies(32))))
        assert lhs <= np.max(np.abs(np.diff(np.append(h, 0)))) * rr.decay_bound(r, 32) * 16 + 1e-12


def test_sinusoidal_layout_and_shift_matrix(rng):
    t = rng.uniform(0, 500, 20)
    E = rr.sinusoidal(t, 8)
    np.testing.assert_allclose(E[:, [0, 1, 7]], np.stack([np.sin(t), np.cos(t), np.cos(t * 1e4 ** -0.75)], -1),
                               atol=1e-15)
    for k in [1, 7.5, 300]:
        B = rr.sinusoidal_shift_matrix(k, 8)
        np.testing.assert_allclose(rr.sinusoidal(t + k, 8), E @ B.T, atol=1e-11)  # B_k independent of t
        np.testing.assert_allclose(B.T @ B, np.eye(8), atol=1e-14)
    q, k = rng.standard_normal(8), rng.standard_normal(8)                   # the additive embedding is not relative
    assert abs((q + E[0]) @ (k + E[1]) - (q + rr.sinusoidal(t[0] + 100, 8)) @ (k + rr.sinusoidal(t[1] + 100, 8))) > 1e-3


GENERAL_FORMS = [rr.rotate, rr.rotate_elementwise, rr.rotate_dense]


def _general_reference(x, positions, F, pairing, r):
    """Pair j of x[idx] turns by sum_a F[j, a] * positions[a][idx]: one element at a time with math.cos/sin."""
    x, F = np.asarray(x, dtype=np.float64), np.asarray(F, dtype=np.float64).reshape(len(F), -1)
    pos = [np.broadcast_to(np.asarray(p, dtype=np.float64), x.shape[:-1]) for p in positions]
    out, h = x.copy(), r // 2
    for idx in itertools.product(*(range(n) for n in x.shape[:-1])):
        for j in range(h):
            angle = sum(float(F[j, a]) * float(pos[a][idx]) for a in range(F.shape[1]))
            ia, ib = (2 * j, 2 * j + 1) if pairing == "interleaved" else (j, j + h)
            c, s, u, v = math.cos(angle), math.sin(angle), x[idx + (ia,)], x[idx + (ib,)]
            out[idx + (ia,)], out[idx + (ib,)] = u * c - v * s, u * s + v * c
    return out


CASES = [  # (x shape, positions shape, A, rotary_dim)
    ((5, 8), (1, 5), 1, None), ((5, 8), (2, 5), 2, None),
    ((2, 3, 5, 12), (3, 1, 1, 5), 3, None),          # M-RoPE layout: one row of ids per axis, broadcast over heads
    ((2, 3, 5, 12), (3, 2, 1, 5), 3, 8),             # per-batch positions, partial rotary
    ((3, 4, 10), (2, 3, 4), 2, None), ((6, 4), (3, 6), 3, 2),
]


@pytest.mark.parametrize("fn", GENERAL_FORMS)
@pytest.mark.parametrize("pairing", ["interleaved", "half"])
@pytest.mark.parametrize("xs,ps,A,r", CASES)
def test_the_general_form_against_a_per_element_loop(fn, pairing, xs, ps, A, r):
    rng = np.random.default_rng(len(xs) * 10 + A)
    rot = xs[-1] if r is None else r
    x, pos = rng.standard_normal(xs), rng.uniform(-50, 50, ps).round(2)
    F = rng.standard_normal((rot // 2, A)) * rng.choice([1.0, 0.1, 0.001], (rot // 2, A))   # dense: RoPE-Mixed
    for dtype, tol in [(np.float64, 1e-12), (np.float32, 1e-5), (np.float16, 2e-2), (ml_dtypes.bfloat16, 1e-1)]:
        got = fn(x.astype(dtype), pos, pairing=pairing, rotary_dim=r, inv_freq=F)
        assert got.dtype == dtype
        np.testing.assert_allclose(got.astype(np.float64), _general_reference(x.astype(dtype), pos, F, pairing, rot),
                                   rtol=0, atol=tol * max(1.0, np.abs(x).max()))
        if A == 1:                                   # one axis: 1-D inv_freq, positions without the axis, bit for bit
            assert np.array_equal(got, fn(x.astype(dtype), pos[0], pairing=pairing, rotary_dim=r, inv_freq=F[:, 0]))


@pytest.mark.parametrize("fn", GENERAL_FORMS)
def test_the_score_depends_on_F_times_the_difference_only(fn):
    rng = np.random.default_rng(11)
    q, k, F = rng.standard_normal(8), rng.standard_normal(8), rng.standard_normal((4, 3))

    def score(pm, pn, F=F, q=q, k=k):
        return float(np.prod(fn(np.stack([q, k]), np.stack([pm, pn], axis=1), inv_freq=F), axis=0).sum())

    pm, pn, shift = rng.uniform(-20, 20, 3), rng.uniform(-20, 20, 3), rng.uniform(-1000, 1000, 3)
    assert score(pm + shift, pn + shift) == pytest.approx(score(pm, pn), abs=1e-9)
    assert score(pm - pn, np.zeros(3)) == pytest.approx(score(pm, pn), abs=1e-9)
    F2 = np.array([[1.0, 2.0]])                          # a 1 x 2 F has a null direction: (2, 0) and (0, 1) agree
    s1, s2 = score([2.0, 0.0], [0.0, 0.0], F2, q[:2], k[:2]), score([5.0, 3.0], [5.0, 2.0], F2, q[:2], k[:2])
    assert s1 == pytest.approx(s2, abs=1e-12) and s1 != pytest.approx(float(q[:2] @ k[:2]), abs=1e-3)


@pytest.mark.parametrize("pairing", ["interleaved", "half"])
def test_angles_per_position_and_pair_are_the_positions_angles(pairing):
    """Issue 40: rotate(x, angles=...) turns pair j by angles[..., j], as the positions giving those angles do."""
    rng = np.random.default_rng(40)
    x, pos = rng.standard_normal((2, 7, 16)), rng.uniform(0, 5000, (2, 7))
    for r in (16, 8):
        angles = np.multiply.outer(pos, rr.frequencies(r))
        want = rr.rotate_elementwise(x, pos, pairing=pairing, rotary_dim=r)
        for form in (rr.rotate, rr.rotate_elementwise):
            np.testing.assert_allclose(form(x, angles=angles, pairing=pairing), want, rtol=0, atol=1e-12)
    table = rng.uniform(-10, 10, (7, 8))                      # random angles shared by the batch: pair j, table[s, j]
    np.testing.assert_allclose(rr.rotate(x, angles=table, pairing=pairing),
                               _general_reference(x, table.T, np.eye(8), pairing, 16), rtol=0, atol=1e-12)


