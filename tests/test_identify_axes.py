"""identify_axes: the frequency matrix of multi-axis RoPE kernels (M-RoPE, axial 2-D, RoPE-Mixed, 1-D).

Every kernel here is plain NumPy written after the library it imitates (transformers' Qwen2-VL / Qwen3-VL
rotary code, timm's axial and mixed 2-D RoPE), and every expected frequency matrix is built here from the
published formulas, not by rope_ref.
"""

import doctest

import ml_dtypes
import numpy as np
import pytest

import rope_ref as rr
from rope_ref import multiaxis
from rope_ref.kernel_check import analyse, assertions, axes_compare, axes_probe
from rope_ref.kernel_check import spec as spec_module
from rope_ref.kernel_check.axes_compare import assert_axes_match, compare_axes
from rope_ref.kernel_check.axes_probe import identify_axes, min_rows
from rope_ref.kernel_check.spec import AxesSpec
from rope_ref.multiaxis import blocks_assignment, interleaved_assignment


# ---- kernels ---------------------------------------------------------------------------------------

def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


rotate_half_fn = rotate_half


def rot_interleaved(x):
    """timm's rot(): [x0 x1 x2 x3] -> [-x1 x0 -x3 x2]."""
    return np.stack([-x[..., 1::2], x[..., ::2]], axis=-1).reshape(x.shape)


def qwen2vl_kernel(section=(16, 24, 24), head_dim=128, base=1e6, dtype=np.float64, axes_order=(0, 1, 2),
                   sign=(1, 1, 1), shift=0):
    """transformers' Qwen2-VL: inv_freq over the head, freqs per axis, cos/sin split by mrope_section * 2
    and chunk i taken from axis i % 3 (apply_multimodal_rotary_pos_emb), rotate_half pairing."""
    inv_freq = (1.0 / base ** (np.arange(0, head_dim, 2, dtype=np.int64).astype(dtype) / dtype(head_dim))).astype(dtype)

    def fn(x, positions):
        pos = positions[list(axes_order)].astype(dtype) * np.array(sign, dtype)[:, None] + dtype(shift)
        freqs = pos[:, :, None] * inv_freq                               # (3, seq, head_dim/2)
        emb = np.concatenate([freqs, freqs], axis=-1)
        cos, sin = np.cos(emb), np.sin(emb)
        split = np.cumsum(list(section) * 2)[:-1]
        cos = np.concatenate([m[i % 3] for i, m in enumerate(np.split(cos, split, axis=-1))], axis=-1)
        sin = np.concatenate([m[i % 3] for i, m in enumerate(np.split(sin, split, axis=-1))], axis=-1)
        x = x.astype(dtype)
        return x * cos + rotate_half(x) * sin
    return fn


def qwen3vl_kernel(section=(24, 20, 20), head_dim=128, base=5e6, dtype=np.float64, pairing="half"):
    """transformers' Qwen3-VL apply_interleaved_mrope: start from the t freqs and overwrite, for axis
    dim = 1, 2, the slice offset:section[dim]*3:3 with that axis's freqs."""
    inv_freq = (1.0 / base ** (np.arange(0, head_dim, 2).astype(dtype) / dtype(head_dim))).astype(dtype)

    def fn(x, positions):
        freqs = positions.astype(dtype)[:, :, None] * inv_freq           # (3, seq, head_dim/2)
        freqs_t = freqs[0].copy()
        for dim, offset in enumerate((1, 2), start=1):
            idx = slice(offset, section[dim] * 3, 3)
            freqs_t[..., idx] = freqs[dim, ..., idx]
        x = x.astype(dtype)
        if pairing == "half":
            emb = np.concatenate([freqs_t, freqs_t], axis=-1)
            return x * np.cos(emb) + rotate_half(x) * np.sin(emb)
        emb = np.repeat(freqs_t, 2, axis=-1)
        return x * np.cos(emb) + rot_interleaved(x) * np.sin(emb)
    return fn


def timm_axial_kernel(dim=64, temperature=10000.0, dtype=np.float64, rotate_half=False):
    """timm's build_rotary_pos_embed (in_pixels=False): dim // 4 bands 1 / temperature^(k / bands) per axis,
    angles (seq, 2 axes, bands) flattened to [h bands, w bands], repeat_interleave(2): interleaved pairs."""
    nb = dim // 4
    bands = (1.0 / temperature ** (np.arange(nb).astype(dtype) / dtype(nb))).astype(dtype)

    def fn(x, positions):
        pos = positions.T.astype(dtype)[:, :, None] * bands              # (seq, 2, nb)
        flat = pos.reshape(len(pos), -1)
        x = x.astype(dtype)
        if rotate_half:                                                  # timm's _rope_layout(rotate_half=True)
            ang = np.concatenate([flat, flat], axis=-1)
            return x * np.cos(ang) + rotate_half_fn(x) * np.sin(ang)
        ang = np.repeat(flat, 2, axis=-1)
        return x * np.cos(ang) + rot_interleaved(x) * np.sin(ang)
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

def theta(head_dim, base):
    return base ** (-np.arange(0, head_dim, 2) / head_dim)


def qwen2vl_matrix(section=(16, 24, 24), head_dim=128, base=1e6):
    th = theta(head_dim, base)
    F = np.zeros((head_dim // 2, 3))
    F[:section[0], 0] = th[:section[0]]
    F[section[0]:section[0] + section[1], 1] = th[section[0]:section[0] + section[1]]
    F[section[0] + section[1]:, 2] = th[section[0] + section[1]:]
    return F


def qwen3vl_matrix(section=(24, 20, 20), head_dim=128, base=5e6):
    th = theta(head_dim, base)
    F = np.zeros((head_dim // 2, 3))
    for j in range(head_dim // 2):
        if j % 3 == 1 and j < 3 * section[1]:
            F[j, 1] = th[j]
        elif j % 3 == 2 and j < 3 * section[2]:
            F[j, 2] = th[j]
        else:
            F[j, 0] = th[j]
    return F


def axial_matrix(dim=64, temperature=10000.0):
    nb = dim // 4
    bands = 1.0 / temperature ** (np.arange(nb) / nb)
    F = np.zeros((2 * nb, 2))
    F[:nb, 0] = bands
    F[nb:, 1] = bands
    return F


def rel_err(found, want):
    """Largest relative error on the non-zero entries; the zero entries must be exactly zero."""
    want = np.asarray(want)
    assert np.all(found[want == 0] == 0), found[want == 0]
    return float(np.max(np.abs(found[want != 0] / want[want != 0] - 1)))


# ---- the kernel classes ----------------------------------------------------------------------------

def test_qwen2vl_blocks_are_measured_to_float64():
    spec = identify_axes(qwen2vl_kernel(), 128, 3)
    assert spec.is_rope, spec.reason
    assert (spec.form, spec.pairing, spec.rotary_dim, spec.sections, spec.mrope_layout) == (
        "M-RoPE", "half", 128, (16, 24, 24), "blocks")
    assert spec.base == 1e6 and spec.angle_precision == "float64"
    assert rel_err(spec.inv_freq, qwen2vl_matrix()) < 1e-13
    assert spec.axis_of_pair.tolist() == [0] * 16 + [1] * 24 + [2] * 24
    assert "sections t/h/w = 16/24/24 pairs, layout blocks" in str(spec)


def test_a_layout_is_one_entry_of_mrope_layouts(monkeypatch):
    # axes in reverse order (w, h, then t): a layout no model uses, registered for this test only
    def reverse(sections):
        return np.repeat(np.arange(len(sections))[::-1], sections[::-1])
    monkeypatch.setitem(multiaxis.MROPE_LAYOUTS, "reversed", (reverse, "w, h, t blocks"))
    freqs = np.zeros((32, 3))
    freqs[np.arange(32), [2] * 12 + [1] * 12 + [0] * 8] = 10000.0 ** (-np.arange(32) / 32)   # written out by hand
    spec = identify_axes(lambda x, p: rr.rotate(x, p, inv_freq=freqs, pairing="half"), 64, 3)
    assert (spec.form, spec.sections, spec.mrope_layout) == ("M-RoPE", (8, 12, 12), "reversed")
    assert "layout reversed (w, h, t blocks)" in str(spec)


def test_qwen3vl_interleaved_is_named():
    spec = identify_axes(qwen3vl_kernel(), 128, 3)
    assert (spec.form, spec.sections, spec.mrope_layout, spec.base) == ("M-RoPE", (24, 20, 20), "interleaved", 5e6)
    assert rel_err(spec.inv_freq, qwen3vl_matrix()) < 1e-13
    assert spec.axis_of_pair[:7].tolist() == [0, 1, 2, 0, 1, 2, 0] and spec.axis_of_pair[60:].tolist() == [0] * 4


def test_round_robin_interleaving_is_qwen3_style():
    """timm's RotaryEmbeddingMRope (GenLIP) strides t, h, w over all 36 pairs of head_dim 72: Qwen3-VL's
    interleaving with sections [12, 12, 12]."""
    spec = identify_axes(qwen3vl_kernel(section=(12, 12, 12), head_dim=72, base=10000.0), 72, 3)
    assert (spec.sections, spec.mrope_layout) == ((12, 12, 12), "interleaved")
    assert spec.axis_of_pair.tolist() == [0, 1, 2] * 12


def test_interleaved_pairing_m_rope():
    spec = identify_axes(qwen3vl_kernel(pairing="interleaved"), 128, 3)
    assert (spec.pairing, spec.mrope_layout) == ("interleaved", "interleaved")
    assert spec.pairs[:2] == [(0, 1), (2, 3)]
    assert rel_err(spec.inv_freq, qwen3vl_matrix()) < 1e-13


@pytest.mark.parametrize("kernel, want, sections, layout", [
    (qwen2vl_kernel(dtype=np.float32), qwen2vl_matrix(), (16, 24, 24), "blocks"),
    (qwen3vl_kernel(dtype=np.float32), qwen3vl_matrix(), (24, 20, 20), "interleaved")])
def test_float32_kernels(kernel, want, sections, layout):
    spec = identify_axes(kernel, 128, 3)
    assert spec.is_rope, spec.reason
    assert (spec.angle_precision, spec.sections, spec.mrope_layout) == ("float32", sections, layout)
    assert rel_err(spec.inv_freq, want) < 2e-6          # float32 inv_freq (one rounding) and float32 angles
    assert compare_axes(spec, want, pairing="half", rotary_dim=128) == []


def test_timm_axial_vit_is_a_general_matrix_not_m_rope():
    spec = identify_axes(timm_axial_kernel(), 64, 2)
    assert (spec.form, spec.pairing, spec.sections, spec.mrope_layout) == ("axial", "interleaved", (16, 16), None)
    assert spec.axis_bases == (10000.0, 10000.0)
    assert rel_err(spec.inv_freq, axial_matrix()) < 1e-13
    assert spec.angle_precision == "float64" and "precision" not in " ".join(spec.notes)


def test_timm_axial_half_layout():
    spec = identify_axes(timm_axial_kernel(rotate_half=True), 64, 2)
    assert (spec.form, spec.pairing, spec.sections, spec.pairs[0]) == ("axial", "half", (16, 16), (0, 32))
    assert rel_err(spec.inv_freq, axial_matrix()) < 1e-13
    assert compare_axes(spec, axial_matrix(), pairing="interleaved") == [
        "pairing: expected interleaved, found half (pairs (0, 32), (1, 33), (2, 34), ...)"]


def test_rope_mixed_dense_matrix():
    fx, fy = mixed_frequencies()
    spec = identify_axes(rope_mixed_kernel(), 64, 2, axis_names=("x", "y"))
    assert (spec.form, spec.sections, spec.mrope_layout, spec.axis_of_pair) == ("mixed", None, None, None)
    assert np.abs(spec.inv_freq - np.stack([fx, fy], axis=1)).max() < 1e-14
    assert "inv_freq (pairs x axes x/y)" in str(spec)


def test_one_axis_rope():
    spec = identify_axes(rope_1d_kernel(), 64, 1)
    assert (spec.form, spec.pairing, spec.base, spec.sections, spec.mrope_layout) == (
        "1-D", "interleaved", 10000.0, (32,), None)
    assert rel_err(spec.inv_freq[:, 0], theta(64, 10000.0)) < 1e-13


def test_partial_rotary_m_rope():
    spec = identify_axes(partial_mrope_kernel(), 64, 3)
    assert (spec.rotary_dim, spec.rotary_start, spec.pairing, spec.sections, spec.mrope_layout) == (
        32, 0, "half", (4, 6, 6), "blocks")
    assert rel_err(spec.inv_freq, qwen2vl_matrix((4, 6, 6), 32, 10000.0)) < 1e-13
    assert_axes_match(partial_mrope_kernel(), 64, 3, sections=[4, 6, 6], base=10000.0, rotary_dim=32, pairing="half")


def test_float32_rope_mixed():
    fx, fy = mixed_frequencies()

    def fn(x, p):          # timm computes the angles and sin/cos in float32
        f32 = np.float32
        ang = np.repeat(p[0][:, None].astype(f32) * fx.astype(f32) + p[1][:, None].astype(f32) * fy.astype(f32), 2, -1)
        x = x.astype(f32)
        return x * np.cos(ang) + rot_interleaved(x) * np.sin(ang)
    spec = identify_axes(fn, 64, 2)
    assert (spec.form, spec.angle_precision) == ("mixed", "float32")
    assert rel_err(spec.inv_freq, np.stack([fx, fy], axis=1)) < 1e-6
    assert compare_axes(spec, np.stack([fx, fy], axis=1)) == []


def test_bfloat16_output_kernel():
    def fn(x, p):
        return qwen2vl_kernel(dtype=np.float32)(x, p).astype(ml_dtypes.bfloat16)
    spec = identify_axes(fn, 128, 3)
    assert spec.is_rope, spec.reason
    assert (spec.sections, spec.mrope_layout, spec.base) == ((16, 24, 24), "blocks", 1e6)
    assert rel_err(spec.inv_freq, qwen2vl_matrix()) < 1e-2
    # as for 1-D kernels, a 16-bit output is named (not "compute angles in float32") unless phase_atol= accepts it
    problems = compare_axes(spec, qwen2vl_matrix())
    assert len(problems) == 1 and problems[0].startswith(
        "angle precision: angles behave like float32 (cos/sin or output rounded to 16 bits)"), problems
    assert compare_axes(spec, qwen2vl_matrix(), phase_atol=0.01) == []
    assert "> phase_atol=0.0001" in compare_axes(spec, qwen2vl_matrix(), phase_atol=1e-4)[0]


def test_bfloat16_result_handed_back_as_float32():
    """torch's bfloat16 has no numpy dtype: wrappers return q.float(). The norm errors reveal the rounding."""
    def fn(x, p):
        return qwen3vl_kernel(dtype=np.float32)(x, p).astype(ml_dtypes.bfloat16).astype(np.float32)
    spec = identify_axes(fn, 128, 3)
    assert spec.is_rope, spec.reason
    assert spec.angle_precision == "float32 (cos/sin or output rounded to 16 bits)"
    assert (spec.sections, spec.mrope_layout, spec.base) == ((24, 20, 20), "interleaved", 5e6)
    assert compare_axes(spec, qwen3vl_matrix(), phase_atol=0.01) == []
    assert compare_axes(spec, qwen3vl_matrix()) == [
        f"angle precision: angles behave like float32 (cos/sin or output rounded to 16 bits) (errors up to "
        f"{spec.phase_error:.2g} rad); pass phase_atol= to accept that precision"]
    assert "layout: kernel's axes are interleaved" in compare_axes(spec, qwen2vl_matrix((24, 20, 20), base=5e6),
                                                                   phase_atol=0.01)[0]


def test_rotary_start_and_norm_scale_named():
    inner = qwen2vl_kernel((4, 6, 6), head_dim=32, base=10000.0)

    def fn(x, p):             # M-RoPE on features 32..63, scaled by 0.5
        out = x.copy()
        out[:, 32:] = 0.5 * inner(x[:, 32:], p)
        return out
    msg = mismatch(fn, 64, 3, sections=[4, 6, 6], base=10000.0, rotary_dim=32, norm_scale=1.0)
    assert "rotary_start: expected rotated features from 0, found 32..63" in msg
    assert "norm_scale: expected 1, found 0.5" in msg and "sections:" not in msg and "frequencies" not in msg
    assert_axes_match(fn, 64, 3, sections=[4, 6, 6], base=10000.0, rotary_dim=32, rotary_start=32, norm_scale=0.5)


def test_float16_kernel_reported_at_its_precision():
    def fn(x, p):
        return qwen2vl_kernel(dtype=np.float32)(x, p).astype(np.float16)
    spec = identify_axes(fn, 128, 3)
    assert spec.is_rope, spec.reason
    # float32 angles, the output rounded to float16: named as the 1-D probe names it (its norm errors show it)
    assert (spec.sections, spec.mrope_layout, spec.angle_precision) == ((16, 24, 24), "blocks",
                                                                        "float32 (cos/sin or output rounded to 16 bits)")
    assert rel_err(spec.inv_freq, qwen2vl_matrix()) < 1e-3


# ---- the probe's calls -----------------------------------------------------------------------------

def test_calls_and_positions():
    seen = []

    def fn(x, p):
        seen.append((x.shape, x.dtype, p.shape, p.dtype, p.copy()))
        return qwen2vl_kernel()(x, p)
    spec = identify_axes(fn, 128, 3, seq=64, max_position=1000)
    assert spec.calls == len(seen) == 128 + 5
    assert {s[:4] for s in seen} == {((64, 128), np.dtype(np.float64), (3, 64), np.dtype(np.int64))}
    P = seen[0][4]
    assert all(np.array_equal(s[4], P) for s in seen)
    assert np.array_equal(spec.positions, P)
    assert P.min() == 0 and P.max() == 1000 and np.all(P[:, 0] == 0)
    # each axis alone at 1, 2, 3, ... from the base row
    for a in range(3):
        alone = P[:, (P[a] > 0) & (P.sum(0) == P[a])][a]
        assert alone[:3].tolist() == [1, 2, 3]


def test_fn_cannot_change_the_probe_inputs():
    def fn(x, p):
        out = qwen2vl_kernel()(x, p)
        x[:] = 0
        p[:] = 7
        return out
    spec = identify_axes(fn, 128, 3)
    assert spec.sections == (16, 24, 24) and spec.positions[:, 0].tolist() == [0, 0, 0]


# ---- planted kernel bugs, each named ---------------------------------------------------------------

def mismatch(fn, d, axes, **expected):
    """The problems listed by assert_axes_match (without the spec it appends)."""
    with pytest.raises(AssertionError) as info:
        assert_axes_match(fn, d, axes, **expected)
    msg = str(info.value)
    assert msg.startswith("multi-axis RoPE mismatch:\n") and "\nidentified: " in msg
    return msg.split("\nidentified: ")[0]


def test_swapped_sections_named():
    msg = mismatch(qwen2vl_kernel(section=(24, 24, 16)), 128, 3, sections=[16, 24, 24], base=1e6)
    assert "sections: kernel gives t/h/w 24/24/16 pairs, expected 16/24/24" in msg


def test_qwen3_sections_named():
    msg = mismatch(qwen3vl_kernel(section=(32, 16, 16)), 128, 3, sections=[24, 20, 20], layout="interleaved",
                   base=5e6)
    assert "sections: kernel gives t/h/w 32/16/16 pairs, expected 24/20/20" in msg
    assert "layout" not in msg


def test_h_and_w_swapped_named():
    msg = mismatch(qwen2vl_kernel(axes_order=(0, 2, 1)), 128, 3, sections=[16, 24, 24], base=1e6)
    assert "sections:" not in msg
    assert ("layout: kernel's axes are neither blocks nor interleaved (t 0..15, w 16..39, h 40..63), expected "
            "blocks") in msg


def test_wrong_layout_named():
    msg = mismatch(qwen3vl_kernel(), 128, 3, sections=[24, 20, 20], layout="blocks", base=5e6)
    assert "layout: kernel's axes are interleaved" in msg and "expected blocks" in msg
    assert "sections:" not in msg
    msg = mismatch(qwen2vl_kernel(section=(24, 20, 20)), 128, 3, sections=[24, 20, 20], layout="interleaved",
                   base=1e6)
    assert "layout: kernel's axes are blocks" in msg and "expected interleaved" in msg


def test_wrong_pairing_named():
    msg = mismatch(qwen3vl_kernel(pairing="interleaved"), 128, 3, sections=[24, 20, 20], layout="interleaved",
                   base=5e6, pairing="half")
    assert "pairing: expected half, found interleaved" in msg
    assert "frequencies" not in msg and "layout" not in msg


def test_one_axis_sign_flipped_named():
    msg = mismatch(qwen2vl_kernel(sign=(1, -1, 1)), 128, 3, sections=[16, 24, 24], base=1e6)
    assert "axis h: every frequency has the opposite sign" in msg
    assert "axis t" not in msg and "axis w" not in msg and "frequencies:" not in msg


def test_wrong_base_named():
    msg = mismatch(qwen2vl_kernel(base=10000.0), 128, 3, sections=[16, 24, 24], base=1e6)
    assert "frequencies: pair 1 along t expected" in msg and "sections" not in msg


def test_shifted_positions_named():
    msg = mismatch(qwen2vl_kernel(shift=1), 128, 3, sections=[16, 24, 24], base=1e6)
    assert "rotation at position 0: expected none, found pairs turned by up to 1 rad with every axis at 0 (fn shifts " \
           "the positions by t+1, h+1, w+1)" in msg
    assert "frequencies" not in msg


def test_one_axis_shift_named():
    inner = qwen2vl_kernel()
    spec = identify_axes(lambda x, p: inner(x, p + np.array([[0], [0], [-7]])), 128, 3)
    assert spec.position_shift == (0.0, 0.0, -7.0)
    assert "fn shifts the positions by w-7" in spec.notes[-1]
    assert spec.sections == (16, 24, 24) and rel_err(spec.inv_freq, qwen2vl_matrix()) < 1e-12


def test_axial_expected_as_m_rope_named():
    F = np.zeros((32, 2))
    F[:16, 0] = theta(64, 10000.0)[:16]
    F[16:, 1] = theta(64, 10000.0)[16:]
    msg = mismatch(timm_axial_kernel(), 64, 2, inv_freq=F)
    assert "form: expected M-RoPE, found axial" in msg
    assert "frequencies (whichever axis turns each pair)" not in msg    # same axis per pair: entry by entry
    assert "frequencies: pair 1 along h expected 0.749894, found 0.562341" in msg    # 1e4^(-2/64) vs 1e4^(-1/16)


def test_dense_matrix_expected_as_m_rope_named():
    F = np.zeros((32, 2))
    F[:16, 0] = 1.0 / 10.0 ** (np.arange(0, 64, 4) / 64)
    F[16:, 1] = F[:16, 0]
    msg = mismatch(rope_mixed_kernel(), 64, 2, inv_freq=F)
    assert "axes: expected each pair to turn with one axis" in msg and "found mixed" in msg


def test_dense_matrix_matches_and_a_wrong_entry_is_named():
    fx, fy = mixed_frequencies()
    F = np.stack([fx, fy], axis=1)
    assert_axes_match(rope_mixed_kernel(), 64, 2, inv_freq=F, pairing="interleaved")
    F[5, 1] *= 1.001
    msg = mismatch(rope_mixed_kernel(), 64, 2, inv_freq=F)
    assert "frequencies: pair 5 along w expected" in msg and "1 of 64 entries differ" in msg


@pytest.mark.slow
def test_clamped_positions_are_not_linear():
    """A cos/sin table of 512 rows read with the position clipped: angles stop growing past 511."""
    inner = qwen2vl_kernel()

    def fn(x, p):
        return inner(x, np.minimum(p, 511))
    spec = identify_axes(fn, 128, 3)
    assert not spec.is_rope
    assert spec.reason.startswith("not a rotation linear in positions: along ")
    assert int(spec.reason.split(" = ")[1].split(",")[0]) > 511       # where the clipping starts to show
    assert "low precision" not in spec.reason and "compute angles" not in spec.reason
    with pytest.raises(AssertionError, match="not a rotation linear in positions"):
        assert_axes_match(fn, 128, 3, sections=[16, 24, 24], base=1e6)


def test_angles_that_do_not_add_up_across_axes():
    """Each axis alone is linear, but t and h interact (angle + 1e-3 * theta * t * h)."""
    F = qwen2vl_matrix()

    def fn(x, p):
        p = p.astype(float)
        ang = p.T @ F.T + 1e-3 * np.outer(p[0] * p[1], F.max(axis=1))
        emb = np.concatenate([ang, ang], axis=-1)
        return x * np.cos(emb) + rotate_half(x) * np.sin(emb)
    spec = identify_axes(fn, 128, 3)
    assert not spec.is_rope
    assert spec.reason.startswith("not a rotation linear in positions: the angles are linear along each axis alone "
                                  "but do not add up across axes")


def test_quadratic_angles_are_not_linear():
    th = theta(64, 10000.0)

    def fn(x, p):
        t = p[0].astype(float)
        ang = np.repeat(np.outer(t + 1e-4 * t**2, th), 2, axis=-1)
        return x * np.cos(ang) + rot_interleaved(x) * np.sin(ang)
    spec = identify_axes(fn, 64, 1)
    assert not spec.is_rope and spec.reason.startswith("not a rotation linear in positions: along p")


@pytest.mark.slow
def test_ignored_axis_is_noted():
    inner = qwen2vl_kernel()

    def fn(x, p):
        p = p.copy()
        p[2] = p[1]               # w read from h: w's pairs turn with h
        return inner(x, p)
    spec = identify_axes(fn, 128, 3)
    assert spec.sections == (16, 48, 0) and spec.form == "M-RoPE"
    assert any("no pair turns with w" in n for n in spec.notes)
    msg = mismatch(fn, 128, 3, sections=[16, 24, 24], base=1e6)
    assert "sections: kernel gives t/h/w 16/48/0 pairs, expected 16/24/24" in msg


def test_not_rotations():
    def bias(x, p):
        return qwen2vl_kernel()(x, p) + 1.0

    def reflect(x, p):
        y = qwen2vl_kernel()(x, p)
        y[:, 64:] *= -1
        return y
    assert "fn(0, positions) is not 0" in identify_axes(bias, 128, 3).reason
    assert "is not a (scaled) rotation" in identify_axes(reflect, 128, 3).reason
    assert "ignores the positions" in identify_axes(lambda x, p: x, 8, 2).reason


# ---- bad input and bad fn output ----------------------------------------------------------------------

def test_bad_arguments():
    k = qwen2vl_kernel()
    with pytest.raises(TypeError, match="fn must be callable"):
        identify_axes(None, 128, 3)
    with pytest.raises(ValueError, match="d must be a positive even integer, got 7"):
        identify_axes(k, 7, 3)
    with pytest.raises(TypeError, match="axes must be a positive integer, got 3.0"):
        identify_axes(k, 128, 3.0)
    with pytest.raises(ValueError, match="axes must be at most 16"):
        identify_axes(k, 128, 17)
    with pytest.raises(ValueError, match=f"seq must be >= {min_rows(3)} rows for 3 axes"):
        identify_axes(k, 128, 3, seq=min_rows(3) - 1)
    with pytest.raises(ValueError, match="max_position must be >= 3"):
        identify_axes(k, 128, 3, max_position=2)
    with pytest.raises(ValueError, match=r"max_position must be .*2\*\*53.*, got 10000"):     # was numpy's OverflowError
        identify_axes(k, 128, 3, max_position=10**400)
    with pytest.raises(ValueError, match="axis_names must hold 3 distinct names"):
        identify_axes(k, 128, 3, axis_names=("t", "h"))


def test_sizes_checked_before_calling_fn():
    calls = []
    with pytest.raises(ValueError, match=r"seq=64 and d=8192 need seq x d x d float64 \(the matrix of every row\): "
                                         r"32 GiB, above max_bytes=1073741824"):
        identify_axes(lambda x, p: calls.append(1), 8192, 3)
    # the same limit as 1-D probing, and max_bytes= moves it (32 x 128 x 128 x 8 bytes = 4 MiB)
    with pytest.raises(ValueError, match=r"4 MiB, above max_bytes=1000000"):
        rr.identify(lambda x, p: calls.append(1), 128, axes=3, seq=32, max_bytes=10**6)
    assert calls == []


@pytest.mark.parametrize("out, err, match", [
    (lambda x, p: x[:-1], ValueError,
     r"fn must map x of shape \(seq, d\) = \(64, 8\) to the same shape, got \(63, 8\)"),
    (lambda x, p: x[None], ValueError, r"got \(1, 64, 8\).*drop its batch and head axes"),
    (lambda x, p: x * np.nan, ValueError, "fn returned non-finite values"),
    (lambda x, p: x.astype(complex), TypeError, "fn must return a real numeric array \\(numpy, torch, jax, a list\\), "
                                                "got ndarray of dtype complex128"),
    (lambda x, p: "rotated", TypeError, "fn must return a real numeric array"),
])
def test_bad_fn_output(out, err, match):
    with pytest.raises(err, match=match):
        identify_axes(out, 8, 2)


def test_fn_raising_is_reported_as_fn_raised():
    def fn(x, p):
        raise RuntimeError("cuda out of memory")
    with pytest.raises(RuntimeError, match="cuda out of memory") as info:
        identify_axes(fn, 8, 2)
    assert any(n.startswith("(fn raised this when rope_ref identify_axes called it with random input a: x of shape "
                            "(64, 8), positions of shape (2, 64)") for n in info.value.__notes__)


def test_one_argument_fn_is_told_the_calling_convention():
    with pytest.raises(TypeError) as info:
        identify_axes(lambda x: x, 8, 2)
    assert "identify_axes calls fn(x, positions)" in info.value.__notes__[0]


def test_stateful_fn_refused():
    state = [0]

    def fn(x, p):
        state[0] += 1
        return qwen2vl_kernel()(x, p + state[0])
    with pytest.raises(ValueError, match="fn must depend on x and positions alone"):
        identify_axes(fn, 128, 3)


@pytest.mark.parametrize("module", [axes_probe, spec_module, axes_compare, analyse, assertions],
                         ids=lambda m: m.__name__)
def test_docstring_examples_run(module):
    # identify(fn, d, axes=3) and assert_rope_matches(fn, d, axes=3, ...) in analyse / assertions
    result = doctest.testmod(module)
    assert result.failed == 0
    if module in (axes_probe, analyse, assertions):
        assert result.attempted >= 4


# ---- builders and comparisons --------------------------------------------------------------------------

def test_assignments_and_expected_sections():
    assert interleaved_assignment([24, 20, 20]).tolist() == np.argmax(qwen3vl_matrix() != 0, axis=1).tolist()
    assert blocks_assignment([16, 24, 24]).tolist() == np.argmax(qwen2vl_matrix() != 0, axis=1).tolist()
    assert blocks_assignment([2, 1, 3]).tolist() == [0, 0, 1, 2, 2, 2]
    k = qwen2vl_kernel()
    with pytest.raises(ValueError, match="sections must sum to rotary_dim/2 = 64"):
        assert_axes_match(k, 128, 3, sections=[16, 24, 20])
    with pytest.raises(ValueError, match="cannot be interleaved over rotary_dim/2 = 64 pairs"):
        assert_axes_match(k, 128, 3, sections=[16, 24, 24], layout="interleaved")
    with pytest.raises(ValueError, match="layout must be 'blocks' or 'interleaved', got 'interleave' \\(did you mean"):
        assert_axes_match(k, 128, 3, sections=[16, 24, 24], layout="interleave")
    with pytest.raises(ValueError, match="sections= describes M-RoPE's three axes"):
        assert_axes_match(timm_axial_kernel(), 64, 2, sections=[16, 16])


def test_compare_axes_arguments():
    spec = identify_axes(qwen2vl_kernel(), 128, 3)
    with pytest.raises(TypeError, match="spec must be an AxesSpec"):
        compare_axes("spec", qwen2vl_matrix())
    with pytest.raises(ValueError, match=r"inv_freq must have shape \(rotary_dim/2, axes=3\), got \(64, 2\)"):
        compare_axes(spec, np.zeros((64, 2)))
    assert compare_axes(spec, np.zeros((32, 3)))[0].startswith("frequencies: expected a (32, 3) matrix")
    assert compare_axes(spec, qwen2vl_matrix(), rotary_dim=64) == ["rotary_dim: expected 64, found 128"]
    assert compare_axes(AxesSpec(is_rope=False, reason="x"), qwen2vl_matrix()) == ["not a rotary embedding: x"]
    with pytest.raises(TypeError, match="pass either inv_freq= or sections="):
        assert_axes_match(qwen2vl_kernel(), 128, 3, inv_freq=qwen2vl_matrix(), sections=[16, 24, 24])


# ---- cross-check with rope_ref.multiaxis (the builders) and rope_ref.rotate (the general form) -------------------

@pytest.mark.slow
@pytest.mark.parametrize("build, kernel, A, sections, layout", [
    (lambda: multiaxis.mrope_frequencies(128, [16, 24, 24], base=1e6), qwen2vl_kernel(), 3, (16, 24, 24), "blocks"),
    (lambda: multiaxis.mrope_frequencies(128, [24, 20, 20], base=5e6, interleaved=True), qwen3vl_kernel(), 3,
     (24, 20, 20), "interleaved"),
    (lambda: multiaxis.axial_frequencies(64), timm_axial_kernel(), 2, (16, 16), None),
])
def test_probe_recovers_the_multiaxis_builders(build, kernel, A, sections, layout):
    """The probe on a transformers/timm-style kernel gives rope_ref.multiaxis's matrix (to rounding), and on
    rope_ref.rotate fed that matrix gives the matrix back: three independent descriptions agree."""
    F = build()
    pairing = "interleaved" if A == 2 else "half"
    for fn in (kernel, lambda x, p: rr.rotate(x, p, inv_freq=F, pairing=pairing)):
        spec = identify_axes(fn, 2 * len(F), A)
        assert (spec.sections, spec.mrope_layout, spec.pairing) == (sections, layout, pairing)
        assert rel_err(spec.inv_freq, F) < 1e-13
        assert compare_axes(spec, F, pairing=pairing, rotary_dim=2 * len(F)) == []


# ---- the hook: rr.identify(fn, d, axes=A) and rr.assert_rope_matches(fn, ..., axes=A / config=) ----------------

@pytest.mark.parametrize("probe", ["1-D", "axes"])
@pytest.mark.parametrize("seed, err", [(-1, ValueError), (1.5, TypeError), (True, TypeError)])
def test_both_probes_check_seed_alike(probe, seed, err):
    kernel = qwen2vl_kernel()
    with pytest.raises(err, match="seed must be None or a non-negative integer"):
        if probe == "axes":
            rr.identify(kernel, 128, axes=3, seed=seed)
        else:
            rr.identify(lambda x: x, 16, seed=seed)


def test_seed_none_draws_fresh_inputs_for_both_probes():
    assert rr.identify(qwen2vl_kernel(), 128, axes=3, seed=None).sections == (16, 24, 24)


def test_identify_with_axes_is_the_multi_axis_probe():
    spec = rr.identify(qwen3vl_kernel(), 128, axes=3, max_position=1000, axis_names=("T", "H", "W"))
    assert isinstance(spec, rr.AxesSpec) and spec.axis_names == ("T", "H", "W")
    assert (spec.sections, spec.mrope_layout, spec.inv_freq.shape) == ((24, 20, 20), "interleaved", (64, 3))
    assert int(spec.positions.max()) == 1000
    assert rel_err(spec.inv_freq, qwen3vl_matrix()) < 1e-9


@pytest.mark.parametrize("kwargs, words", [
    (dict(axes=3, base_hint=1e4), "base_hint= and max_rows= are for 1-D probing"),
    (dict(axes=3, max_rows=100), "base_hint= and max_rows= are for 1-D probing"),
    (dict(max_position=100), "max_position= and axis_names= are for multi-axis probing"),
    (dict(axis_names=("t", "h", "w")), "max_position= and axis_names= are for multi-axis probing"),
])
def test_identify_options_of_the_other_probe_are_named(kwargs, words):
    with pytest.raises(TypeError, match=words):
        rr.identify(qwen2vl_kernel(), 128, **kwargs)


@pytest.mark.slow
def test_assert_rope_matches_with_axes_checks_directly():
    spec = rr.assert_rope_matches(qwen2vl_kernel(), 128, axes=3, sections=[16, 24, 24], base=1e6, pairing="half")
    assert spec.sections == (16, 24, 24)
    rr.assert_rope_matches(timm_axial_kernel(), 64, axes=2, inv_freq=axial_matrix())
    with pytest.raises(AssertionError) as info:
        rr.assert_rope_matches(qwen3vl_kernel(), 128, axes=3, sections=[24, 20, 20], layout="blocks", base=5e6)
    assert info.value.problems[0].startswith("layout: kernel's axes are interleaved")
    with pytest.raises(TypeError, match="unexpected keyword.*'offset'"):
        rr.assert_rope_matches(qwen2vl_kernel(), 128, axes=3, offset=0)
    with pytest.raises(TypeError, match="max_rows= is for 1-D kernels"):
        rr.assert_rope_matches(qwen2vl_kernel(), 128, axes=3, max_rows=64)
    with pytest.raises(AssertionError, match="^not a rotary embedding: fn\\(0, positions\\) is not 0"):
        rr.assert_rope_matches(lambda x, p: x + 1, 8, axes=2)


@pytest.mark.slow
def test_config_and_axes_must_agree():
    mrope = {"model_type": "qwen2_vl", "hidden_size": 512, "num_attention_heads": 4,
             "rope_parameters": {"rope_type": "default", "rope_theta": 1e6, "mrope_section": [16, 24, 24]}}
    with pytest.raises(ValueError, match="axes=2 disagrees with config, whose RoPE has 3 position axes"):
        rr.assert_rope_matches(qwen2vl_kernel(), config=mrope, axes=2)
    llama = {"model_type": "llama", "hidden_size": 512, "num_attention_heads": 4, "rope_theta": 1e4}
    with pytest.raises(ValueError, match="axes=3 with a config whose RoPE has one position per row"):
        rr.assert_rope_matches(qwen2vl_kernel(), config=llama, axes=3)
    with pytest.raises(ValueError, match="config is multi-axis RoPE .* backward passes are checked for 1-D"):
        rr.assert_rope_grad_matches(lambda x, g: g, config=mrope)
    # explicit keywords win over the config: the kernel's own sections pass with them
    rr.assert_rope_matches(qwen2vl_kernel(section=(24, 20, 20)), config=mrope, sections=[24, 20, 20], base=1e6)
    with pytest.raises(AssertionError, match="pairing: expected interleaved, found half"):
        rr.assert_rope_matches(qwen2vl_kernel(), config=mrope, pairing="interleaved")
