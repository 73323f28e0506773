"""identify(fn, d, axes=A) and assert_rope_matches(..., axes=A) on NumPy kernels written after transformers' Qwen2-VL /
Qwen3-VL and timm's axial and mixed 2-D RoPE: the frequency matrix measured (expected matrices from the published
formulas), and every catalogued multi-axis defect named."""

import doctest

import numpy as np
import pytest

import rope_ref as rr
from rope_ref.kernel_check import AXES_DEFECTS, RopeMismatch, assertions

from kernels import rotate_every_two as rot_interleaved
from kernels import rotate_half


def qwen2vl_kernel(section=(16, 24, 24), head_dim=128, base=1e6, dtype=np.float64, axes_order=(0, 1, 2),
                   sign=(1, 1, 1), shift=0):
    """transformers' Qwen2-VL: cos/sin split by mrope_section * 2, chunk i from axis i % 3, rotate_half pairing."""
    inv_freq = (1.0 / base ** (np.arange(0, head_dim, 2, dtype=np.int64).astype(dtype) / dtype(head_dim))).astype(dtype)

    def fn(x, positions):
        pos = positions[list(axes_order)].astype(dtype) * np.array(sign, dtype)[:, None] + dtype(shift)
        freqs = pos[:, :, None] * inv_freq                               # (3, seq, head_dim/2)
        emb = np.concatenate([freqs, freqs], axis=-1)
        split = np.cumsum(list(section) * 2)[:-1]                         # chunk i of cos and sin from axis i % 3
        cos, sin = (np.concatenate([m[i % 3] for i, m in enumerate(np.split(t, split, axis=-1))], axis=-1)
                    for t in (np.cos(emb), np.sin(emb)))
        x = x.astype(dtype)
        return x * cos + rotate_half(x) * sin
    return fn


def qwen3vl_kernel(section=(24, 20, 20), head_dim=128, base=5e6, dtype=np.float64, pairing="half"):
    """transformers' Qwen3-VL apply_interleaved_mrope: axis dim = 1, 2 overwrites the t freqs at dim:section*3:3."""
    inv_freq = (1.0 / base ** (np.arange(0, head_dim, 2).astype(dtype) / dtype(head_dim))).astype(dtype)

    def fn(x, positions):
        freqs = positions.astype(dtype)[:, :, None] * inv_freq           # (3, seq, head_dim/2)
        freqs_t = freqs[0].copy()
        for dim, offset in enumerate((1, 2), start=1):
            idx = slice(offset, section[dim] * 3, 3)
            freqs_t[..., idx] = freqs[dim, ..., idx]
        x, half = x.astype(dtype), pairing == "half"
        emb = np.concatenate([freqs_t, freqs_t], axis=-1) if half else np.repeat(freqs_t, 2, axis=-1)
        return x * np.cos(emb) + (rotate_half if half else rot_interleaved)(x) * np.sin(emb)
    return fn


def timm_axial_kernel(dim=64, temperature=10000.0, dtype=np.float64, half=False):
    """timm's build_rotary_pos_embed (in_pixels=False): dim // 4 bands per axis, [h bands, w bands], interleaved."""
    nb = dim // 4
    bands = (1.0 / temperature ** (np.arange(nb).astype(dtype) / dtype(nb))).astype(dtype)

    def fn(x, positions):
        pos = positions.T.astype(dtype)[:, :, None] * bands              # (seq, 2, nb)
        flat = pos.reshape(len(pos), -1)
        x = x.astype(dtype)                                              # half: timm's _rope_layout(rotate_half=True)
        ang = np.concatenate([flat, flat], axis=-1) if half else np.repeat(flat, 2, axis=-1)
        return x * np.cos(ang) + (rotate_half if half else rot_interleaved)(x) * np.sin(ang)
    return fn


def mixed_frequencies(head_dim=64, temperature=10.0, seed=3):
    """timm's init_random_2d_freqs for one head: magnitudes 1 / temperature^(k / head_dim), k = 0, 4, 8, ...;
    fx = [m cos a, m cos(a + pi/2)], fy = [m sin a, m sin(a + pi/2)] with a random angle a."""
    mag = 1.0 / temperature ** (np.arange(0, head_dim, 4) / head_dim)
    a = np.random.default_rng(seed).uniform(0, 2 * np.pi)
    fx = np.concatenate([mag * np.cos(a), mag * np.cos(a + np.pi / 2)])
    fy = np.concatenate([mag * np.sin(a), mag * np.sin(a + np.pi / 2)])
    return fx, fy


def rope_mixed_kernel(head_dim=64, seed=3):
    """timm's get_mixed_freqs: angles t_x fx + t_y fy, interleaved layout (positions: x then y)."""
    fx, fy = mixed_frequencies(head_dim, seed=seed)

    def fn(x, positions):
        combined = positions[0][:, None] * fx + positions[1][:, None] * fy
        ang = np.repeat(combined, 2, axis=-1)
        return x * np.cos(ang) + rot_interleaved(x) * np.sin(ang)
    return fn


def rope_1d_kernel(d=64, base=10000.0, rotary_dim=None):
    """RoFormer eq 34 with interleaved pairs, positions (1, seq); features past rotary_dim pass through."""
    r = rotary_dim or d
    theta = base ** (-np.arange(0, r, 2) / r)

    def fn(x, positions):
        ang = np.repeat(positions[0][:, None] * theta, 2, axis=-1)
        out = x.copy()
        out[:, :r] = x[:, :r] * np.cos(ang) + rot_interleaved(x[:, :r]) * np.sin(ang)
        return out
    return fn


def partial_mrope_kernel(d=64, rotary_dim=32, section=(4, 6, 6), base=10000.0):
    """M-RoPE on the leading rotary_dim features (half pairing within them), the rest passed through."""
    inner = qwen2vl_kernel(section, head_dim=rotary_dim, base=base)

    def fn(x, positions):
        out = x.copy()
        out[:, :rotary_dim] = inner(x[:, :rotary_dim], positions)
        return out
    return fn


# ---- expected matrices, from the published formulas ----------------------------------------------------

def mrope_matrix(section, base, interleaved, head_dim=128):
    """F (64, 3): theta_j = base^(-2j/128) on the axis of pair j: blocks t, h, w (Qwen2-VL), or Qwen3-VL's
    interleaving (h takes pairs 1, 4, ... below 3 h, w takes 2, 5, ... below 3 w, t the rest)."""
    j = np.arange(head_dim // 2)
    axis = np.repeat([0, 1, 2], section)
    if interleaved:
        axis = np.where((j % 3 == 1) & (j < 3 * section[1]), 1, np.where((j % 3 == 2) & (j < 3 * section[2]), 2, 0))
    F = np.zeros((head_dim // 2, 3))
    F[j, axis] = base ** (-2 * j / head_dim)
    return F


def rel_err(found, want):
    """Largest relative error on the non-zero entries; the zero entries must be exactly zero."""
    want = np.asarray(want)
    assert np.all(found[want == 0] == 0), found[want == 0]
    return float(np.max(np.abs(found[want != 0] / want[want != 0] - 1)))


# ---- what identify measures ------------------------------------------------------------------------------

@pytest.mark.parametrize("kernel,want,sections,layout,pairing", [
    (qwen2vl_kernel(), mrope_matrix((16, 24, 24), 1e6, False), (16, 24, 24), "blocks", "half"),
    (qwen3vl_kernel(), mrope_matrix((24, 20, 20), 5e6, True), (24, 20, 20), "interleaved", "half"),
    (qwen3vl_kernel(pairing="interleaved"), mrope_matrix((24, 20, 20), 5e6, True), (24, 20, 20), "interleaved",
     "interleaved"),
    (qwen2vl_kernel(dtype=np.float32), mrope_matrix((16, 24, 24), 1e6, False), (16, 24, 24), "blocks", "half"),
], ids=["qwen2vl", "qwen3vl", "qwen3vl_interleaved_pairs", "qwen2vl_float32"])
@pytest.mark.slow
def test_m_rope_is_measured_and_named(kernel, want, sections, layout, pairing):
    s = rr.identify(kernel, 128, axes=3)
    assert (s.form, s.pairing, s.sections, s.mrope_layout) == ("M-RoPE", pairing, sections, layout), s
    assert s.base == (1e6 if layout == "blocks" else 5e6)
    assert rel_err(s.inv_freq, want) < (1e-5 if "float32" in str(s.angle_precision) else 1e-9)


@pytest.mark.slow
def test_axial_mixed_one_axis_and_partial_kernels():
    s = rr.identify(timm_axial_kernel(), 64, axes=2)
    assert (s.form, s.sections, s.pairing, s.axis_bases) == ("axial", (16, 16), "interleaved", (1e4, 1e4))
    assert rel_err(s.inv_freq, np.kron(np.eye(2), 1e4 ** -(np.arange(16) / 16)[:, None])) < 1e-9
    assert rr.identify(timm_axial_kernel(half=True), 64, axes=2).pairing == "half"
    s = rr.identify(rope_mixed_kernel(), 64, axes=2)
    fx, fy = mixed_frequencies()
    assert s.form == "mixed" and np.allclose(s.inv_freq, np.stack([fx, fy], axis=1), rtol=1e-9, atol=1e-12)
    s = rr.identify(rope_1d_kernel(rotary_dim=32), 64, axes=1)
    assert (s.form, s.rotary_dim, s.base) == ("1-D", 32, 1e4), s
    s = rr.identify(partial_mrope_kernel(), 64, axes=3)
    assert (s.form, s.rotary_dim, s.sections, s.rotary_start) == ("M-RoPE", 32, (4, 6, 6), 0), s


@pytest.mark.slow
def test_shifted_ids_are_measured():
    s = rr.identify(qwen2vl_kernel(shift=-20), 128, axes=3)
    assert s.rotated_at_zero and s.position_shift == (-20.0, -20.0, -20.0), s
    rr.assert_rope_matches(qwen2vl_kernel(shift=-20), 128, axes=3, sections=[16, 24, 24], base=1e6,
                           position_shift=(-20, -20, -20))


# ---- the catalogue, planted -------------------------------------------------------------------------------

#: defect name -> (planted kernel, expected keywords) against the Qwen2-VL expectation
QWEN2 = dict(sections=[16, 24, 24], layout="blocks", base=1e6, pairing="half")
AXES_PLANTS = {
    "M-RoPE layout swapped": (qwen3vl_kernel(section=(16, 24, 24), base=1e6), dict(QWEN2, sections=[22, 21, 21])),
    "M-RoPE sections swapped": (qwen2vl_kernel(section=(24, 20, 20)), QWEN2),
    "another base": (qwen2vl_kernel(base=1e4), QWEN2),
    "pairing swapped": (qwen3vl_kernel(section=(24, 20, 20), base=1e6, pairing="interleaved"),
                        dict(QWEN2, sections=[24, 20, 20], layout="interleaved")),
    "different rotary_dim": (partial_mrope_kernel(d=128, rotary_dim=64, section=(8, 12, 12), base=1e6),
                             dict(QWEN2, rotary_dim=128)),
    "ids shifted or centred": (qwen2vl_kernel(shift=-7), QWEN2),
    "axis direction reversed": (qwen2vl_kernel(sign=(1, -1, 1)), QWEN2),
}


@pytest.mark.parametrize("name", [pytest.param(d.name, marks=() if d.name == "M-RoPE layout swapped" else
                                               pytest.mark.slow) for d in AXES_DEFECTS])
def test_every_multi_axis_defect_planted_is_named(name):
    fn, expected = AXES_PLANTS[name]
    with pytest.raises(RopeMismatch) as info:
        rr.assert_rope_matches(fn, 128, axes=3, **expected)
    assert info.value.defects == [name], info.value.problems


@pytest.mark.slow
def test_the_correct_kernels_name_none_and_two_defects_are_named_together():
    rr.assert_rope_matches(qwen2vl_kernel(), 128, axes=3, **QWEN2)
    rr.assert_rope_matches(qwen3vl_kernel(), 128, axes=3, sections=[24, 20, 20], layout="interleaved", base=5e6)
    rr.assert_rope_matches(rope_mixed_kernel(), 64, axes=2, inv_freq=np.stack(mixed_frequencies(), axis=1))
    with pytest.raises(RopeMismatch) as info:
        rr.assert_rope_matches(qwen2vl_kernel(section=(24, 20, 20), base=1e4), 128, axes=3, **QWEN2)
    assert info.value.defects == ["M-RoPE sections swapped", "another base"]
    wrong = np.stack(mixed_frequencies(), axis=1) * np.r_[1.01, np.ones(31)][:, None]
    with pytest.raises(RopeMismatch, match="no known defect explains this"):
        rr.assert_rope_matches(rope_mixed_kernel(), 64, axes=2, inv_freq=wrong)
    with pytest.raises(RopeMismatch, match="norm: expected 2, found 1"):     # what differs, said when unexplained
        rr.assert_rope_matches(qwen2vl_kernel(), 128, axes=3, norm_scale=2.0, **QWEN2)


# ---- not RoPE, not linear, bad input ---------------------------------------------------------------------

@pytest.mark.parametrize("fn", [
    lambda x, p: qwen2vl_kernel()(x, np.minimum(p, 9)),                     # positions clamped
    lambda x, p: qwen2vl_kernel()(x, p.astype(float) ** 2 / 50),            # quadratic in the position
    lambda x, p: qwen2vl_kernel()(x, np.vstack([p[0] * p[1] % 7, p[1:]])),  # angles that do not add up
], ids=["clamped", "quadratic", "not_additive"])
@pytest.mark.slow
def test_angles_not_linear_in_the_positions_are_said_to_be_so(fn):
    s = rr.identify(fn, 128, axes=3)
    assert not s.is_rope and "not linear" in s.reason, s


def test_not_rotations_and_ignored_axes():
    assert not rr.identify(lambda x, p: x * 2.0, 16, axes=2).is_rope
    assert not rr.identify(lambda x, p: x + p[0][:, None], 16, axes=2).is_rope
    s = rr.identify(lambda x, p: rope_1d_kernel(16)(x, p[:1]), 16, axes=2)
    assert s.sections == (8, 0) and any("ignores" in n for n in s.notes), s


@pytest.mark.parametrize("kw,err,name", [(dict(axes=0), ValueError, "axes"), (dict(seq=4), ValueError, "seq"),
                                         (dict(max_position=2), ValueError, "max_position")])
def test_bad_arguments_are_refused_by_name(kw, err, name):
    with pytest.raises(err, match=name):
        rr.identify(qwen2vl_kernel(), 128, **{"axes": 3, **kw})


@pytest.mark.slow
def test_raising_kernels_and_bad_expectations():    # bad output: tests/test_identify.py (the same call)
    with pytest.raises(rr.kernel_check.KernelRaised, match="fn raised TypeError"):
        rr.assert_rope_matches(lambda x: x, 16, axes=2, inv_freq=np.ones((4, 2)))
    with pytest.raises(TypeError, match="inv_freq"):
        rr.assert_rope_matches(qwen2vl_kernel(), 128, axes=3, inv_freq=np.ones((64, 3)), sections=[16, 24, 24])


def test_the_docstring_example_runs():
    result = doctest.testmod(assertions)
    assert result.attempted and not result.failed
