"""identify and assert_rope_matches on diffusers' rotary modules, recorded (tests/data/diffusers_rope.npz) with one
axis swept: each pair's cos/sin looked up in its axis's sweep (Mochi's: solved), applied as diffusers does."""

import json
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import rope_ref as rr
from rope_ref.kernel_check import RopeMismatch

DATA = Path(__file__).parent / "data"
META = json.loads((DATA / "diffusers_rope.json").read_text())
with np.load(DATA / "diffusers_rope.npz") as _z:
    REC = {k: _z[k] for k in _z.files}
SWEEP = REC["flux/sweep_cos"].shape[1]


def axial(dims, base):
    """(sum(dims)/2, len(dims)): axis a turns its dims[a]/2 pairs by base^(-2k/dims[a]) (eq 15 per axis)."""
    matrix = np.zeros((sum(dims) // 2, len(dims)))
    start = 0
    for a, dim in enumerate(dims):
        matrix[start:start + dim // 2, a] = base ** (-np.arange(0, dim, 2) / dim)
        start += dim // 2
    return matrix


#: case -> (head_dim, rotary_start, the expected matrix, the expected shift of each axis, axis bases)
EXPECTED = {
    "flux": (128, 0, axial((16, 56, 56), 1e4), (0, 0, 0), (1e4,) * 3),
    "flux2": (128, 0, axial((32, 32, 32, 32), 2000.0), (0, 0, 0, 0), (2000.0,) * 4),
    "hunyuan_video": (128, 0, axial((16, 56, 56), 256.0), (0, 0, 0), (256.0,) * 3),
    "wan": (128, 0, axial((128 - 4 * 21, 42, 42), 1e4), (0, 0, 0), (1e4,) * 3),    # h = w = 2 floor(d/6), t the rest
    "cogvideox": (64, 0, axial((64 // 4, 64 // 8 * 3, 64 // 8 * 3), 1e4), (0, 0, 0), (1e4,) * 3),
    # Qwen-Image's scale_rope: a latent of 48 rows has ids -24..23 (-(48 - 48 // 2) on), columns alike
    "qwen_image": (128, 0, axial((16, 56, 56), 1e4), (0, -24, -24), (1e4,) * 3),
}
SWEPT = sorted(EXPECTED)


def axis_of_pairs(case):
    """The axis whose sweep moves each pair (each moves in one at most; one that moves in none reads axis 0)."""
    cos = REC[f"{case}/sweep_cos"]
    moves = np.any(cos != cos[:, :1], axis=1)                     # (axes, pairs)
    assert np.all(moves.sum(axis=0) <= 1), case
    return np.argmax(moves, axis=0)


def rotate_pairs(x, cos, sin, start=0, dtype=np.float32):
    """diffusers' apply_rotary_emb(use_real_unbind_dim=-1) on features start.., in float32, cast back to dtype."""
    x = np.asarray(x).astype(dtype).astype(np.float32)
    out = x.copy()
    x0, x1 = x[:, start::2], x[:, start + 1::2]
    out[:, start::2] = x0 * cos - x1 * sin
    out[:, start + 1::2] = x1 * cos + x0 * sin
    return out.astype(dtype)


def replayed(case, start=0, dtype=np.float32):
    """fn(x, positions) of the recorded module: pair j's cos/sin read in its axis's sweep at that axis's id."""
    cos, sin, axis = REC[f"{case}/sweep_cos"], REC[f"{case}/sweep_sin"], axis_of_pairs(case)
    pair = np.arange(cos.shape[2])

    def fn(x, p):
        ids = np.asarray(p)[axis].T                                 # (seq, pairs): each pair's own axis
        return rotate_pairs(x, cos[axis, ids, pair], sin[axis, ids, pair], start, dtype)
    return fn


@pytest.mark.slow
@pytest.mark.parametrize("case", SWEPT)
def test_identify_names_the_axes_bases_and_shift_and_the_published_settings_match(case):
    head_dim, start, want, shift, bases = EXPECTED[case]
    spec = rr.identify(replayed(case), head_dim, axes=want.shape[1], max_position=SWEEP - 1)
    assert spec.is_rope, spec
    sections = tuple(int(n) for n in (want != 0).sum(axis=0))
    assert (spec.form, spec.pairing, spec.rotary_start, spec.sections) == ("axial", "interleaved", start, sections)
    assert spec.axis_bases == bases, spec
    assert (spec.position_shift or (0,) * want.shape[1]) == shift, spec
    assert spec.angle_precision in ("float64", "float32"), spec
    extra = {"position_shift": shift} if any(shift) else {}
    rr.assert_rope_matches(replayed(case), head_dim, axes=want.shape[1], inv_freq=want, pairing="interleaved",
                           max_position=SWEEP - 1, **extra)             # passing: F measured in want's shape


def solved(case):
    """(F, angle at ids 0) of recorded angles = pos^T F^T + c: least squares, rows by largest id, turns predicted."""
    P = REC[f"{case}/pos"]
    phi = np.arctan2(REC[f"{case}/sin"], REC[f"{case}/cos"]).astype(np.float64)
    design = np.vstack([P, np.ones(P.shape[1])]).T                  # (rows, axes + 1)
    order = np.argsort(np.abs(P).max(axis=0), kind="stable")
    fit = np.zeros((design.shape[1], phi.shape[1]))
    for k in range(P.shape[0] + 2, len(order) + 1):
        rows = order[:k]
        unwrapped = phi[rows] + 2 * np.pi * np.round((design[rows] @ fit - phi[rows]) / (2 * np.pi))
        fit = np.linalg.lstsq(design[rows], unwrapped, rcond=None)[0]
    return fit[:-1].T, fit[-1]


def mochi_kernel():
    F, at_zero = solved("mochi")

    def fn(x, p):                      # in float32, as MochiRoPE._create_rope
        ang = np.asarray(p, np.float32).T @ F.T.astype(np.float32) + at_zero.astype(np.float32)
        return rotate_pairs(x, np.cos(ang), np.sin(ang))
    return fn


@pytest.mark.slow
def test_mochi_centred_scaled_learned_frequencies_are_named():
    """MochiRoPE: token (f, r, c) of a 5 x 6 latent at (f, s (r - 2), s (c - 2.5)), s = sqrt(192^2 / 30): dense F."""
    scale = np.sqrt(192 * 192 / (5 * 6))
    want = REC["mochi/pos_frequencies"][:, 0, :].T.astype(np.float64) * [1.0, scale, scale]
    spec = rr.identify(mochi_kernel(), 128, axes=3)
    assert spec.is_rope and spec.form == "mixed", spec
    np.testing.assert_allclose(spec.position_shift, (0.0, -2.0, -2.5), atol=1e-3)
    # the replay's frequencies are solved from float32 angles over 3 frames: known to 1e-3 relative
    rr.assert_rope_matches(mochi_kernel(), 128, axes=3, inv_freq=want, pairing="interleaved", rtol=1e-3,
                           position_shift=(0.0, -2.0, -2.5))
    with pytest.raises(RopeMismatch) as info:
        rr.assert_rope_matches(mochi_kernel(), 128, axes=3, inv_freq=want, rtol=1e-3, position_shift=(0, -2, -3))
    assert info.value.defects == ["ids shifted or centred"]


@pytest.mark.slow
def test_ltx_video_aliased_normalised_coordinates_are_named_not_called_nonlinear():
    """LTXVideoRotaryPosEmbed turns pair k by theta^(k/20) pi/2 (2 i scale / base - 1): up to 490 rad per latent step,
    so its float32 angles are not linear in integer ids to float32 rounding: never reported as float32-exact."""
    spec = rr.identify(replayed("ltx_video", 2), 128, axes=3, max_position=SWEEP - 1)
    assert not spec.is_rope or spec.angle_precision not in ("float64", "float32"), spec


@pytest.mark.slow
@pytest.mark.parametrize("case", ["flux", "flux2"])
def test_flux_in_bfloat16_is_named_a_16bit_output_not_low_precision_angles(case):
    """A bfloat16 pipeline casts the float32 result to bfloat16: the output is rounded, the angles are not."""
    fn = replayed(case, dtype=ml_dtypes.bfloat16)
    head_dim, _, want, _, _ = EXPECTED[case]
    spec = rr.assert_rope_matches(fn, head_dim, axes=want.shape[1], inv_freq=want, max_position=SWEEP - 1)
    assert spec.angle_precision.startswith("float32 (cos/sin or output rounded"), spec


@pytest.mark.slow
def test_qwen_image_without_the_expected_shift_is_named():
    with pytest.raises(RopeMismatch) as info:
        rr.assert_rope_matches(replayed("qwen_image"), 128, axes=3, inv_freq=EXPECTED["qwen_image"][2],
                               max_position=SWEEP - 1)
    assert info.value.defects == ["ids shifted or centred"] and "h-24, w-24" in info.value.problems[0]
