"""Multi-axis RoPE builders (rope_ref.multiaxis): hand-derived cases, bad input, and the recordings
of transformers' and timm's own modules (tests/data/multiaxis_*, made by tests/data/record_multiaxis.py)."""

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rope_ref as rr
from rope_ref import _fast, checks


# ---- mrope_frequencies: hand-derived layouts ------------------------------------------------------

def _axes(F):
    """Which column holds each pair's frequency (exactly one non-zero per row)."""
    assert np.all((F != 0).sum(axis=1) == 1)
    return np.nonzero(F)[1].tolist()


def test_qwen2_vl_sections_are_contiguous_blocks_in_theta_order():
    # mrope_section [16, 24, 24] over head_dim 128: pairs 0-15 temporal, 16-39 height, 40-63 width.
    F = rr.mrope_frequencies(128, [16, 24, 24], base=1e6)
    assert F.shape == (64, 3) and F.dtype == np.float64
    assert _axes(F) == [0] * 16 + [1] * 24 + [2] * 24
    theta = 1e6 ** (-np.arange(64) * 2 / 128)                       # eq 15, written out again
    np.testing.assert_allclose(F.sum(axis=1), theta, rtol=1e-15)


def test_qwen3_vl_interleaves_t_h_w_and_temporal_takes_the_leftover_pairs():
    # mrope_section [24, 20, 20]: 20 rounds of (t, h, w) cover pairs 0..59, pairs 60..63 are temporal.
    F = rr.mrope_frequencies(128, [24, 20, 20], base=5e6, interleaved=True)
    assert _axes(F) == [0, 1, 2] * 20 + [0, 0, 0, 0]
    assert [int((F[:, a] != 0).sum()) for a in range(3)] == [24, 20, 20]


def test_small_cases_by_hand():
    # base 1e4 over rotary_dim 8: theta_j = 1e4^(-2j/8) = 10^(-j).
    F = rr.mrope_frequencies(8, [2, 1, 1], base=1e4)
    expected = np.array([[1, 0, 0], [0.1, 0, 0], [0, 0.01, 0], [0, 0, 0.001]])
    np.testing.assert_allclose(F, expected, rtol=1e-14)
    Fi = rr.mrope_frequencies(8, [2, 1, 1], base=1e4, interleaved=True)
    np.testing.assert_allclose(Fi, [[1, 0, 0], [0, 0.1, 0], [0, 0, 0.01], [0.001, 0, 0]], rtol=1e-14)
    # An empty section is allowed: [4, 0, 0] is 1-D RoPE on the temporal axis.
    assert _axes(rr.mrope_frequencies(8, [4, 0, 0], interleaved=True)) == [0, 0, 0, 0]
    assert _axes(rr.mrope_frequencies(8, [1, 0, 3])) == [0, 2, 2, 2]


def test_text_positions_reduce_to_one_dimensional_frequencies():
    # With p_t = p_h = p_w = m every pair turns by theta_j * m: the row sums are the 1-D frequencies.
    for sections, inter in (([8, 12, 12], False), ([12, 10, 10], True)):
        F = rr.mrope_frequencies(64, sections, base=10000.0, interleaved=inter)
        np.testing.assert_array_equal(F.sum(axis=1), rr.frequencies(64, 10000.0))


@pytest.mark.parametrize("args, kwargs, exc, words", [
    ((128, [16, 24, 23]), {}, ValueError, "sum to rotary_dim/2 = 64"),
    ((128, [16, 24]), {}, ValueError, "3 entries"),
    ((128, [16, -8, 56]), {}, ValueError, "sections[1]"),
    ((128, [16.0, 24, 24]), {}, TypeError, "sections[0]"),
    ((128, [True, 31, 32]), {}, TypeError, "sections[0]"),
    ((128, "16,24,24"), {}, TypeError, "sections must be a list"),
    ((128, 64), {}, TypeError, "sections must be a list"),
    ((127, [16, 24, 24]), {}, ValueError, "rotary_dim"),
    ((0, [0, 0, 0]), {}, ValueError, "rotary_dim"),
    ((128, [16, 24, 24]), {"base": -1.0}, ValueError, "base"),
    ((128, [16, 24, 24]), {"interleaved": "yes"}, TypeError, "interleaved"),
    ((128, [4, 30, 30]), {"interleaved": True}, ValueError, "cannot be interleaved"),
    ((128, [16, 24, 24]), {"interleave": True}, TypeError, "did you mean 'interleaved'"),
])
def test_bad_arguments_are_named(args, kwargs, exc, words):
    with pytest.raises(exc) as err:
        rr.mrope_frequencies(*args, **kwargs)
    assert words in str(err.value)


def test_sections_as_a_numpy_array_or_tuple_are_accepted_and_not_modified():
    s = np.array([16, 24, 24])
    F = rr.mrope_frequencies(128, s)
    np.testing.assert_array_equal(F, rr.mrope_frequencies(128, (16, 24, 24)))
    assert s.tolist() == [16, 24, 24]


# ---- the general form, written plainly for the tests ----------------------------------------------

def _angles(F, P):
    """sum_a F[j, a] * p_a: F (n, A), P (A, ..., seq) -> (..., seq, n), float64."""
    return np.moveaxis(np.tensordot(np.asarray(P, dtype=np.float64), F, axes=([0], [1])), -1, -1)


def _rotate_plain(x, F, P, pairing):
    """Each pair (a, b) -> (a cos - b sin, a sin + b cos) by its multi-axis angle; float64."""
    x = np.asarray(x, dtype=np.float64)
    ang = _angles(F, P)
    n = F.shape[0]
    if pairing == "interleaved":
        a, b = x[..., 0:2 * n:2], x[..., 1:2 * n:2]
    else:
        a, b = x[..., :n], x[..., n:2 * n]
    ra, rb = a * np.cos(ang) - b * np.sin(ang), a * np.sin(ang) + b * np.cos(ang)
    out = x.copy()
    if pairing == "interleaved":
        out[..., 0:2 * n:2], out[..., 1:2 * n:2] = ra, rb
    else:
        out[..., :n], out[..., n:2 * n] = ra, rb
    return out


def test_plain_general_form_reduces_to_one_axis_rope():
    # A = 1 with F = theta[:, None] is the 1-D RoPE of rope_ref (the helper above is independent of it).
    x = np.random.default_rng(0).standard_normal((5, 16))
    pos = np.array([0, 3, 7, 100, 2.5])
    F = rr.frequencies(16)[:, None]
    for pairing in ("interleaved", "half"):
        np.testing.assert_allclose(_rotate_plain(x, F, pos[None], pairing),
                                   rr.rotate_elementwise(x, pos, pairing=pairing), atol=1e-12)


# ---- replays of the recordings --------------------------------------------------------------------

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module")
def rope_index():
    return json.loads((DATA / "multiaxis_rope_index.json").read_text())


@pytest.fixture(scope="module")
def modules():
    with np.load(DATA / "multiaxis_modules.npz") as z:
        arrays = {k: z[k] for k in z.files}
    return arrays, json.loads((DATA / "multiaxis_modules.json").read_text())


def _segments(case):
    return [tuple(s) for s in case["segments"]]


def _ids(case, mode):
    return rr.mrope_position_ids(_segments(case), spatial_merge_size=case["spatial_merge_size"],
                                 tokens_per_second=case["tokens_per_second"], text_after_vision=mode)


def test_rope_index_recordings_cover_the_three_models(rope_index):
    assert rope_index["transformers"] == "5.24.0"
    assert {c["model"] for c in rope_index["cases"]} == {"qwen2_vl", "qwen2_5_vl", "qwen3_vl"}
    assert len(rope_index["cases"]) == 10


def test_position_ids_equal_get_rope_index_of_transformers_5_24(rope_index):
    # text_after_vision="spatial" is transformers >= 5.3's rule: every recorded case, exactly.
    for case in rope_index["cases"]:
        ids = _ids(case, "spatial")
        assert ids.dtype == np.int64
        np.testing.assert_array_equal(ids, case["position_ids"], err_msg=case["name"])
        assert ids.max() + 1 - ids.shape[1] == case["mrope_position_deltas"], case["name"]


def test_max_plus_one_agrees_with_transformers_wherever_the_rules_coincide(rope_index):
    # The rules differ only after a vision segment whose temporal ids outrun max(h, w)/merge.
    agree = {"text-image-text", "image-first-two-images", "merge-1", "frames-with-timestamps", "image-text"}
    for case in rope_index["cases"]:
        same = np.array_equal(_ids(case, "max+1"), case["position_ids"])
        assert same == (case["name"] in agree), case["name"]


def test_max_plus_one_equals_get_rope_index_of_transformers_5_2():
    # transformers up to 5.2 (token ids with vision-start markers) resumed at the largest id + 1: the
    # default rule, exactly, on every case that API can express -- including those where 5.24 differs.
    old = json.loads((DATA / "multiaxis_rope_index_v5.2.json").read_text())
    assert old["transformers"] == "5.2.0"
    names = {c["name"] for c in old["cases"]}
    assert {"long-video", "video-2s", "video-default-seconds"} <= names and len(names) == 7
    for case in old["cases"]:
        np.testing.assert_array_equal(_ids(case, "max+1"), case["position_ids"], err_msg=case["name"])


def test_max_plus_one_after_a_long_video_by_hand(rope_index):
    # Qwen2-VL, 2 text tokens, a 4-frame video of 4x4 patches (2x2 tokens per frame), 3 text tokens.
    # Video ids start at 2: t = 2..5, h, w = 2..3.  The largest id is 5, so the text resumes at 6.
    case = next(c for c in rope_index["cases"] if c["name"] == "long-video")
    ids = _ids(case, "max+1")
    np.testing.assert_array_equal(ids[:, -3:], [[6, 7, 8]] * 3)
    np.testing.assert_array_equal(ids[:, :-3], np.asarray(case["position_ids"])[:, :-3])   # video as recorded
    # transformers 5.24 resumes at 2 + max(4, 4)/2 = 4, inside the video's temporal range 2..5:
    np.testing.assert_array_equal(np.asarray(case["position_ids"])[:, -3:], [[4, 5, 6]] * 3)


def test_qwen2_5_vl_temporal_scale_by_hand(rope_index):
    # video (4, 2, 2) at 0.5 s per grid and 3 tokens per second: interval 1.5, temporal ids
    # floor(0, 1.5, 3, 4.5) = 0, 1, 3, 4 after the one text token: 1, 2, 4, 5.  One token per frame.
    case = next(c for c in rope_index["cases"] if c["name"] == "video-fractional-image")
    ids = _ids(case, "max+1")
    np.testing.assert_array_equal(ids[0, 1:5], [1, 2, 4, 5])
    np.testing.assert_array_equal(ids[1:, 1:5], [[1] * 4] * 2)
    # the image (1, 4, 4) -> 2x2 tokens starts at max + 1 = 6; text after it at 6 + 2 = 8.
    np.testing.assert_array_equal(ids[:, 5:], [[6, 6, 6, 6, 8, 9], [6, 6, 7, 7, 8, 9], [6, 7, 6, 7, 8, 9]])
    np.testing.assert_array_equal(np.asarray(case["position_ids"])[0, 1:5], [1, 2, 4, 5])


def _check_cos_sin(cos, sin, ang, rel=5e-7, atol=2e-6):
    """float32 tables against float64 angles: float32 angles are off by up to ~|angle| * 2^-22."""
    tol = rel * np.abs(ang) + atol
    assert np.all(np.abs(cos - np.cos(ang)) <= tol) and np.all(np.abs(sin - np.sin(ang)) <= tol)


QWEN = {"qwen2_vl": ([16, 24, 24], 1e6, False), "qwen2_5_vl": ([16, 24, 24], 1e6, False),
        "qwen3_vl": ([24, 20, 20], 5e6, True)}


@pytest.mark.parametrize("case", sorted(QWEN))
def test_qwen_rotary_modules_replay(modules, case):
    arrays, meta = modules
    sections, base, interleaved = QWEN[case]
    assert meta["transformers"] == "5.24.0"
    assert meta["cases"][case]["rope_parameters"]["mrope_section"] == sections
    F = rr.mrope_frequencies(128, sections, base=base, interleaved=interleaved)
    P = arrays[f"{case}/pos"].astype(np.float64)
    ang = _angles(F, P)                                                   # (seq, 64)
    cos, sin = arrays[f"{case}/cos"], arrays[f"{case}/sin"]                # (seq, 128): [c, c] (rotate_half)
    np.testing.assert_array_equal(cos[:, :64], cos[:, 64:])
    _check_cos_sin(cos[:, :64], sin[:, :64], ang)
    out = _rotate_plain(arrays[f"{case}/q"], F, P, "half")                # (heads, seq, 128)
    tol = 5e-7 * np.abs(np.concatenate([ang, ang], -1)) + 2e-6                # per feature, as for cos/sin
    assert np.all(np.abs(out - arrays[f"{case}/out"]) <= 4 * tol * (1 + np.abs(arrays[f"{case}/q"])))
    # The recording tells the layouts apart: the other layout, or other sections, do not replay.
    wrong = rr.mrope_frequencies(128, [24, 20, 20], base=base, interleaved=not interleaved)
    assert np.max(np.abs(np.cos(_angles(wrong, P)) - cos[:, :64])) > 0.1


def test_qwen2_vl_with_sections_split_wrongly_does_not_replay(modules):
    arrays, _ = modules
    P = arrays["qwen2_vl/pos"].astype(np.float64)
    for sections in ([24, 20, 20], [16, 20, 28], [24, 24, 16]):
        F = rr.mrope_frequencies(128, sections, base=1e6)
        assert np.max(np.abs(np.cos(_angles(F, P)) - arrays["qwen2_vl/cos"][:, :64])) > 0.1, sections


TIMM = {  # case: (F, positions, pairing) by the documented correspondence
    "timm_cat_xy_base100": (lambda: rr.axial_frequencies(32, base=100.0), lambda: rr.grid_positions(3, 5, indexing="xy"),
                            "interleaved"),
    "timm_cat_ij_half": (lambda: rr.axial_frequencies(32), lambda: rr.grid_positions(4, 3), "half"),
    "timm_cat_ij_interleaved": (lambda: rr.axial_frequencies(24), lambda: rr.grid_positions(6, 7), "interleaved"),
}


@pytest.mark.parametrize("case", sorted(TIMM))
def test_timm_axial_rope_replays(modules, case):
    arrays, meta = modules
    assert meta["timm"] == "1.0.31"
    F, P, pairing = TIMM[case][0](), TIMM[case][1](), TIMM[case][2]
    assert meta["cases"][case]["pairing"] == pairing
    ang = _angles(F, P)
    cos, sin = arrays[f"{case}/cos"], arrays[f"{case}/sin"]
    n = F.shape[0]
    per_pair = (lambda a: a[:, 0::2]) if pairing == "interleaved" else (lambda a: a[:, :n])
    _check_cos_sin(per_pair(cos), per_pair(sin), ang)
    out = _rotate_plain(arrays[f"{case}/x"], F, P, pairing)
    np.testing.assert_allclose(out, arrays[f"{case}/out"], atol=2e-5)
    # The other grid order does not replay (the grids are not square): the axis order is checked.
    other = rr.grid_positions(*meta["cases"][case]["grid"],
                              indexing="ij" if meta["cases"][case]["kwargs"]["grid_indexing"] == "xy" else "xy")
    assert np.max(np.abs(np.cos(_angles(F, other)) - per_pair(cos))) > 0.1


def test_timm_rope_mixed_is_the_general_form_with_a_dense_learned_matrix(modules):
    # RoPE-Mixed (Heo et al. 2024): pair j turns by fx_j * x + fy_j * y -- F = freqs[:, block, head].T.
    arrays, meta = modules
    freqs = arrays["timm_mixed/freqs"].astype(np.float64)              # (2, depth, heads, head_dim/2)
    h, w = meta["cases"]["timm_mixed"]["grid"]
    P = rr.grid_positions(h, w, indexing="xy")                          # (x, y)
    for block in range(freqs.shape[1]):
        for head in range(freqs.shape[2]):
            F = freqs[:, block, head].T                                 # (head_dim/2, 2), dense
            assert np.all(F != 0)
            ang = _angles(F, P)
            _check_cos_sin(arrays["timm_mixed/cos"][block, head][:, 0::2],
                           arrays["timm_mixed/sin"][block, head][:, 0::2], ang, rel=1e-6)
    x = arrays["timm_mixed/x"]                                          # (heads, H*W, head_dim)
    out = np.stack([_rotate_plain(x[hd], freqs[:, 1, hd].T, P, "interleaved") for hd in range(x.shape[0])])
    np.testing.assert_allclose(out, arrays["timm_mixed/out_block1"], atol=2e-5)


# ---- axial_frequencies, grid_positions, mrope_position_ids: by hand and bad input -----------------

def test_axial_frequencies_by_hand():
    # rotary_dim 16, 2 axes: 4 pairs per axis with base^(-k/4); base 1e4 gives 1, 0.1, 0.01, 0.001.
    F = rr.axial_frequencies(16, base=1e4)
    col = [1, 0.1, 0.01, 0.001]
    np.testing.assert_allclose(F, np.array([col + [0] * 4, [0] * 4 + col]).T, rtol=1e-14)
    # 3 axes over 12 features: 2 pairs each, base^(-k/2) = 1, 0.01 for base 1e4.
    F3 = rr.axial_frequencies(12, base=1e4, axes=3)
    np.testing.assert_allclose(F3, [[1, 0, 0], [0.01, 0, 0], [0, 1, 0], [0, 0.01, 0], [0, 0, 1], [0, 0, 0.01]],
                               rtol=1e-14)
    # axes=1 is 1-D RoPE.
    np.testing.assert_array_equal(rr.axial_frequencies(16, axes=1)[:, 0], rr.frequencies(16))


def test_heo_axial_frequencies_are_written_in_the_paper_form():
    # rope-vit's compute_axial_cis: 1 / theta^(arange(0, dim, 4)[:dim//4] / dim), theta = 100, x then y.
    dim = 64
    freqs = 1.0 / (100.0 ** (np.arange(0, dim, 4)[:dim // 4] / dim))
    F = rr.axial_frequencies(dim, base=100.0)
    np.testing.assert_allclose(F[:dim // 4, 0], freqs, rtol=1e-14)
    np.testing.assert_allclose(F[dim // 4:, 1], freqs, rtol=1e-14)


def test_grid_positions_by_hand():
    np.testing.assert_array_equal(rr.grid_positions(2, 3, indexing="xy"), [[0, 1, 2, 0, 1, 2], [0, 0, 0, 1, 1, 1]])
    P = rr.grid_positions(3, 1)
    assert P.shape == (2, 3) and P.dtype == np.float64
    np.testing.assert_array_equal(P, [[0, 1, 2], [0, 0, 0]])


def test_mrope_position_ids_by_hand():
    # text only: 1-D positions on all three axes.
    np.testing.assert_array_equal(rr.mrope_position_ids([("text", 4)]), [[0, 1, 2, 3]] * 3)
    # image first, merge 1: grid (1, 2, 2) -> 4 tokens (t, h, w) = (0,0,0) (0,0,1) (0,1,0) (0,1,1), then text at 2.
    ids = rr.mrope_position_ids([("image", (1, 2, 2)), ("text", 2)], spatial_merge_size=1)
    np.testing.assert_array_equal(ids, [[0, 0, 0, 0, 2, 3], [0, 0, 1, 1, 2, 3], [0, 1, 0, 1, 2, 3]])
    # video (2, 2, 2), merge 2: one token per frame at t = 0, 1 -> text resumes at 2 ("max+1").
    np.testing.assert_array_equal(rr.mrope_position_ids([("video", (2, 2, 2)), ("text", 1)]),
                                  [[0, 1, 2], [0, 0, 2], [0, 0, 2]])
    # ... and with 2 tokens per second at 1.5 s per grid: t = 0, 3 -> text at 4; "spatial" resumes at 0 + 1.
    np.testing.assert_array_equal(rr.mrope_position_ids([("video", (2, 2, 2), 1.5), ("text", 1)], tokens_per_second=2),
                                  [[0, 3, 4], [0, 0, 4], [0, 0, 4]])
    np.testing.assert_array_equal(rr.mrope_position_ids([("video", (2, 2, 2), 1.5), ("text", 1)], tokens_per_second=2,
                                                        text_after_vision="spatial"),
                                  [[0, 3, 1], [0, 0, 1], [0, 0, 1]])
    # images are never time-scaled (transformers #45325).
    np.testing.assert_array_equal(rr.mrope_position_ids([("image", (2, 2, 2))], tokens_per_second=25),
                                  [[0, 1], [0, 0], [0, 0]])


def test_segments_are_not_modified():
    segs = [("text", 2), ["image", [1, 4, 4]], ("video", np.array([2, 2, 2]), 0.5)]
    before = repr(segs)
    rr.mrope_position_ids(segs, tokens_per_second=2)
    assert repr(segs) == before


def _under_size_limit(fn, max_bytes):
    """``fn`` called inside ``with rr.size_limit(max_bytes):`` (the one size guard)."""
    def limited(*args, **kwargs):
        with rr.size_limit(max_bytes):
            return fn(*args, **kwargs)
    return limited


@pytest.mark.parametrize("fn, args, kwargs, exc, words", [
    (rr.axial_frequencies, (30,), {}, ValueError, "multiple of 2*axes = 4"),
    (rr.axial_frequencies, (32,), {"axes": 0}, ValueError, "axes"),
    (rr.axial_frequencies, (32,), {"axes": 2.0}, TypeError, "axes"),
    (rr.axial_frequencies, (32,), {"base": 0}, ValueError, "base"),
    (rr.axial_frequencies, (32,), {"layout": "x"}, TypeError, "unexpected keyword"),
    (rr.grid_positions, (0, 3), {}, ValueError, "height"),
    (rr.grid_positions, (10 ** 6, 10 ** 6), {}, ValueError, "above the limit"),
    (rr.axial_frequencies, (2 ** 40,), {}, ValueError, "above the limit"),
    (rr.mrope_frequencies, (2 ** 40, [2 ** 39, 0, 0]), {}, ValueError, "above the limit"),
    (_under_size_limit(rr.mrope_frequencies, 100), (128, [16, 24, 24]), {}, ValueError, "max_bytes="),
    (rr.grid_positions, (2, 3.5), {}, TypeError, "width"),
    (rr.grid_positions, (2, 3), {"indexing": "yx"}, ValueError, "indexing"),
    (rr.grid_positions, (2, 3), {"indexing": None}, TypeError, "indexing"),
    (rr.mrope_position_ids, ([("text", 0)],), {}, ValueError, "segments[0]"),
    (rr.mrope_position_ids, ([("text", 2.0)],), {}, TypeError, "segments[0]"),
    (rr.mrope_position_ids, ([("txt", 2)],), {}, ValueError, "did you mean 'text'"),
    (rr.mrope_position_ids, ([("text", 2), ("image", (1, 3, 4))],), {}, ValueError, "segments[1]"),
    (rr.mrope_position_ids, ([("image", (1, 4))],), {}, TypeError, "(t, h, w)"),
    (rr.mrope_position_ids, ([("image", (0, 4, 4))],), {}, ValueError, ">= 1"),
    (rr.mrope_position_ids, ([("image", (1, 4, 4), 2.0)],), {}, ValueError, "only videos"),
    (rr.mrope_position_ids, ([("video", (1, 4, 4), -2.0)],), {}, ValueError, "seconds_per_grid"),
    (rr.mrope_position_ids, ([],), {}, ValueError, "at least one"),
    (rr.mrope_position_ids, ("text",), {}, TypeError, "segments must be a list"),
    (rr.mrope_position_ids, ([5],), {}, TypeError, "segments[0]"),
    (rr.mrope_position_ids, ([("text", 2)],), {"spatial_merge_size": 0}, ValueError, "spatial_merge_size"),
    (rr.mrope_position_ids, ([("text", 2)],), {"tokens_per_second": "2"}, TypeError, "tokens_per_second"),
    (rr.mrope_position_ids, ([("text", 2)],), {"text_after_vision": "max"}, ValueError, "text_after_vision"),
    (rr.mrope_position_ids, ([("text", 2 ** 28)],), {}, ValueError, "above the limit"),
    (rr.mrope_position_ids, ([("image", (1, 2 ** 15, 2 ** 15))],), {"spatial_merge_size": 1}, ValueError,
     "above the limit"),
    (_under_size_limit(rr.mrope_position_ids, 1000), ([("text", 100)],), {}, ValueError, "max_bytes=4800"),
    (rr.mrope_position_ids, ([("video", (3, 2, 2), 1e30)],), {"tokens_per_second": 25}, ValueError, "below 2^40"),
    (rr.mrope_position_ids, ([("video", (3, 2, 2), 1e200)],), {"tokens_per_second": 25}, ValueError, "below 2^40"),
    (_under_size_limit(rr.mrope_position_ids, -1), ([("text", 100)],), {}, ValueError, "max_bytes"),
])
def test_bad_input_is_named(fn, args, kwargs, exc, words):
    with pytest.raises(exc) as err:
        fn(*args, **kwargs)
    assert words in str(err.value)


# ---- rope_ref's general form (rotate, rotate_elementwise, rotate_dense with inv_freq (r/2, A)) -----

def _recorded_rotations(arrays, meta):
    """(name, x, F, positions, pairing, recorded out) for every recorded module."""
    for case, (sections, base, interleaved) in QWEN.items():
        yield (case, arrays[f"{case}/q"], rr.mrope_frequencies(128, sections, base=base, interleaved=interleaved),
               arrays[f"{case}/pos"].astype(np.float64), "half", arrays[f"{case}/out"])
    for case, (F, P, pairing) in TIMM.items():
        yield case, arrays[f"{case}/x"], F(), P(), pairing, arrays[f"{case}/out"]
    freqs = arrays["timm_mixed/freqs"].astype(np.float64)
    h, w = meta["cases"]["timm_mixed"]["grid"]
    for head in range(freqs.shape[2]):
        yield (f"timm_mixed head {head}", arrays["timm_mixed/x"][head], freqs[:, 1, head].T,
               rr.grid_positions(h, w, indexing="xy"), "interleaved", arrays["timm_mixed/out_block1"][head])


@pytest.mark.parametrize("form", ["rotate", "rotate_elementwise", "rotate_dense"])
def test_rope_ref_general_form_replays_every_recording(modules, form):
    arrays, meta = modules
    fn = getattr(rr, form)
    for name, x, F, P, pairing, recorded in _recorded_rotations(arrays, meta):
        x64 = x.astype(np.float64)
        ours = fn(x64, P, inv_freq=F, pairing=pairing)
        np.testing.assert_allclose(ours, _rotate_plain(x64, F, P, pairing), atol=1e-12, err_msg=name)
        ang = np.abs(_angles(F, P))                              # float32 angles err by ~|angle| * 2^-22
        spread = np.repeat(ang, 2, -1) if pairing == "interleaved" else np.concatenate([ang, ang], -1)
        tol = (5e-7 * spread + 2e-6) * 4 * (1 + np.abs(x).max())
        assert np.all(np.abs(ours - recorded) <= tol), name


# ---- the identity table's multi-axis rows catch planted bugs --------------------------------------

ROWS = ("any F: q_m.k_n depends only on F(p_n-p_m)", "M-RoPE on text (t=h=w) == 1-D RoPE",
        "2-D grid: score depends on (dx, dy) only")


def _failed_rows():
    rr.clear_cache()
    table = checks.run_checks(d=32, seq=300)
    return {c.name for c in table if not c.ok}


@pytest.mark.slow
def test_multiaxis_rows_hold_on_a_small_case():
    table = {c.name: c for c in checks.run_checks(d=32, seq=300)}
    assert all(table[name].ok for name in ROWS)
    assert table["M-RoPE on text (t=h=w) == 1-D RoPE"].error <= 1e-15


def _patch_tables(monkeypatch, change):
    real = _fast.tables

    def planted(pos, freqs, work, pairing):
        if freqs.ndim == 2 and freqs.shape[1] > 1:
            pos, freqs = change(pos, freqs)
        return real(pos, freqs, work, pairing)
    monkeypatch.setattr(_fast, "tables", planted)


@pytest.mark.slow
def test_axes_swapped_in_the_fast_path_is_caught(monkeypatch):
    _patch_tables(monkeypatch, lambda pos, freqs: (pos[:, ::-1].copy(), freqs))
    failed = _failed_rows()
    assert {ROWS[0], ROWS[2]} <= failed
    assert ROWS[1] not in failed           # on text every axis holds the same position: no row can see it


@pytest.mark.slow
def test_axes_averaged_instead_of_summed_in_the_fast_path_is_caught(monkeypatch):
    _patch_tables(monkeypatch, lambda pos, freqs: (pos, freqs / freqs.shape[1]))
    assert {ROWS[1], ROWS[2]} <= _failed_rows()


@pytest.mark.slow
def test_relative_rotation_turning_the_wrong_way_in_the_dense_path_is_caught(monkeypatch):
    real = checks.rotate_dense
    monkeypatch.setattr(checks, "rotate_dense", lambda x, p, **kw: real(x, -np.asarray(p), **kw)
                        if np.ndim(kw.get("inv_freq")) == 2 else real(x, p, **kw))
    assert _failed_rows() == {ROWS[0]}


@pytest.mark.slow
def test_interleaving_that_drops_the_leftover_pairs_is_caught(monkeypatch):
    real = checks.mrope_frequencies

    def planted(rotary_dim, sections, **kw):
        F = real(rotary_dim, sections, **kw)
        if kw.get("interleaved"):
            F[3 * max(sections[1], sections[2]):] = 0            # temporal's leftover pairs forgotten
        return F
    monkeypatch.setattr(checks, "mrope_frequencies", planted)
    assert _failed_rows() == {ROWS[1]}


@pytest.mark.slow
def test_second_axis_with_a_shifted_spectrum_is_caught(monkeypatch):
    real = checks.axial_frequencies

    def planted(rotary_dim, **kw):
        F = real(rotary_dim, **kw)
        n = rotary_dim // 4
        F[n:-1, 1] = F[n + 1:, 1]                              # y's frequencies off by one pair
        return F
    monkeypatch.setattr(checks, "axial_frequencies", planted)
    assert _failed_rows() == {ROWS[2]}


def test_timm_image_mrope_is_the_interleaved_layout_of_its_effective_sections(modules):
    # timm's RotaryEmbeddingMRope (GenLIP) with mrope_section (8, 12, 12) over head_dim 72 (36 pairs) clips
    # nothing here, but its sections do not sum to 36: temporal takes the 12 remaining pairs.  So it is
    # Qwen3-VL's interleaving with sections [12, 12, 12] -- which rope_ref builds -- while the nominal
    # [8, 12, 12] is refused rather than silently read.
    arrays, meta = modules
    assert meta["cases"]["timm_mrope"]["mrope_section"] == [8, 12, 12]
    F = rr.mrope_frequencies(72, [12, 12, 12], interleaved=True)
    np.testing.assert_array_equal(np.argmax(F != 0, axis=1), arrays["timm_mrope/axis"].astype(int))
    h, w = meta["cases"]["timm_mrope"]["grid"]
    P = np.concatenate([np.zeros((1, h * w)), rr.grid_positions(h, w)])            # (t = 0, row, column)
    _check_cos_sin(arrays["timm_mrope/cos"][:, :36], arrays["timm_mrope/sin"][:, :36], _angles(F, P))
    out = rr.rotate(arrays["timm_mrope/x"].astype(np.float64), P, inv_freq=F, pairing="half")
    np.testing.assert_allclose(out, arrays["timm_mrope/out"], atol=2e-5)
    with pytest.raises(ValueError, match="sum to rotary_dim/2 = 36"):
        rr.mrope_frequencies(72, [8, 12, 12], interleaved=True)


# ---- mrope_position_ids against a token-by-token reading of the rule -----------------------------


def _ids_token_by_token(segments, merge, tps):
    """The published rule, one token at a time (Qwen2-VL section 2.1; Qwen2.5-VL's time scale)."""
    ids, nxt = [], 0
    for seg in segments:
        if seg[0] == "text":
            for i in range(seg[1]):
                ids.append((nxt + i,) * 3)
            nxt += seg[1]
            continue
        t, h, w = seg[1][0], seg[1][1] // merge, seg[1][2] // merge
        seconds = seg[2] if len(seg) == 3 else 1.0
        block = []
        for f in range(t):
            tt = int(np.float32(f) * np.float32(np.float32(seconds) * np.float32(tps))) \
                if seg[0] == "video" and tps is not None else f
            for r in range(h):
                for c in range(w):
                    block.append((nxt + tt, nxt + r, nxt + c))
        ids += block
        nxt = max(max(b) for b in block) + 1
    return np.array(ids, dtype=np.int64).T


_segment = st.one_of(
    st.tuples(st.just("text"), st.integers(1, 5)),
    st.tuples(st.just("image"), st.tuples(st.integers(1, 2), st.integers(1, 3).map(lambda v: 2 * v),
                                          st.integers(1, 3).map(lambda v: 2 * v))),
    st.tuples(st.just("video"), st.tuples(st.integers(1, 4), st.integers(1, 3).map(lambda v: 2 * v),
                                          st.integers(1, 3).map(lambda v: 2 * v)),
              st.sampled_from([0.25, 0.5, 1.0, 1.5, 2.0, 2 / 3])),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_segment, min_size=1, max_size=5), st.sampled_from([None, 1, 2, 25]))
def test_position_ids_follow_the_rule_token_by_token(segments, tps):
    ids = rr.mrope_position_ids(segments, spatial_merge_size=2, tokens_per_second=tps)
    np.testing.assert_array_equal(ids, _ids_token_by_token(segments, 2, tps))


# ---- diffusion transformers' position ids (tests/data/diffusers_rope.npz, record_diffusers_rope.py) ----------

from rope_ref.multiaxis import flux_position_ids, qwen_image_position_ids   # noqa: E402

with np.load(Path(__file__).parent / "data" / "diffusers_rope.npz") as _z:
    DIFFUSERS = {k: _z[k] for k in _z.files if "_ids/" in k or k.startswith("flux_pipeline/")}


def _axial_16_56_56():
    """Qwen-Image's and FLUX.1's matrix: axis a's own block of dims[a]/2 pairs, theta_k = 10^4^(-2k/dims[a])."""
    F, start = np.zeros((64, 3)), 0
    for a, dim in enumerate((16, 56, 56)):
        F[start:start + dim // 2, a] = 1e4 ** (-np.arange(0, dim, 2) / dim)
        start += dim // 2
    return F


def test_flux_position_ids_are_the_pipelines():
    ids = flux_position_ids(4, 5, 6)
    assert ids.shape == (3, 4 + 30) and ids.dtype == np.int64
    assert not ids[:, :4].any()                                          # text_ids = zeros
    np.testing.assert_array_equal(ids[:, 4:], DIFFUSERS["flux_pipeline/image_ids"].T)
    kontext = flux_position_ids(0, 5, 6, frame=1)                        # the reference image: first id 1
    assert np.all(kontext[0] == 1) and np.array_equal(kontext[1:], ids[1:, 4:])


def test_qwen_image_position_ids_reproduce_the_modules_tables():
    """QwenEmbedRope(scale_rope=True) of a (2, 5, 6) latent video and 4 text tokens: its tables are cos/sin of the
    ids times the 16/56/56 axial matrix, the rows and columns centred (-3..1, -3..2), text from max(5//2, 6//2)."""
    ids = qwen_image_position_ids(4, 5, 6, frames=2)
    assert ids.shape == (3, 4 + 60) and ids.dtype == np.int64
    image = ids[:, 4:]
    assert (image[1].min(), image[1].max(), image[2].min(), image[2].max()) == (-3, 1, -3, 2)
    assert np.array_equal(ids[:, :4], np.tile(3 + np.arange(4), (3, 1)))
    ang = ids.T @ _axial_16_56_56().T
    for part, rows in (("text", slice(0, 4)), ("image", slice(4, None))):
        np.testing.assert_allclose(np.cos(ang[rows]), DIFFUSERS[f"qwen_image_ids/{part}_cos"], atol=2e-6)
        np.testing.assert_allclose(np.sin(ang[rows]), DIFFUSERS[f"qwen_image_ids/{part}_sin"], atol=2e-6)


@pytest.mark.parametrize("fn, kwargs, exc, words", [
    (flux_position_ids, dict(text_tokens=-1, height=2, width=2), ValueError, "text_tokens must be a non-negative"),
    (flux_position_ids, dict(text_tokens=1, height=2, width=2, frame=-1), ValueError, "frame must be"),
    (qwen_image_position_ids, dict(text_tokens=1, height=0, width=2), ValueError, "height must be a positive"),
    (qwen_image_position_ids, dict(text_tokens=1, height=2, width=2.5), TypeError, "width must be a positive"),
    (qwen_image_position_ids, dict(text_tokens=1, height=2, width=2, frames=True), TypeError, "frames must be"),
])
def test_diffusion_position_ids_bad_input_is_named(fn, kwargs, exc, words):
    with pytest.raises(exc, match=words):
        fn(**kwargs)


def test_diffusion_position_ids_sizes_are_checked_first():
    with rr.size_limit(max_bytes=1000):
        with pytest.raises(ValueError, match=r"text_tokens, frames, height, width"):
            qwen_image_position_ids(0, 100, 100)
