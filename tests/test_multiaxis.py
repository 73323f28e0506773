"""Multi-axis RoPE builders (rope_ref.multiaxis): hand-derived cases, bad input, and the recordings of transformers',
timm's and diffusers' own modules (tests/data/multiaxis_*, diffusers_rope.*, made by the record_*.py scripts)."""

import json
from pathlib import Path

import numpy as np
import pytest

import rope_ref as rr

DATA = Path(__file__).parent / "data"


def _axes(F):
    """Which column holds each pair's frequency (exactly one non-zero per row)."""
    assert np.all((F != 0).sum(axis=1) == 1)
    return np.nonzero(F)[1].tolist()


def test_mrope_layouts_by_hand():
    F = rr.mrope_frequencies(128, [16, 24, 24], base=1e6)          # Qwen2-VL: contiguous blocks in theta order
    assert F.shape == (64, 3) and _axes(F) == [0] * 16 + [1] * 24 + [2] * 24
    np.testing.assert_allclose(F.sum(axis=1), 1e6 ** (-np.arange(64) * 2 / 128), rtol=1e-15)
    F = rr.mrope_frequencies(128, [24, 20, 20], base=5e6, interleaved=True)   # Qwen3-VL: t, h, w; t the leftover
    assert _axes(F) == [0, 1, 2] * 20 + [0, 0, 0, 0]
    np.testing.assert_allclose(rr.mrope_frequencies(8, [2, 1, 1], base=1e4),
                               [[1, 0, 0], [0.1, 0, 0], [0, 0.01, 0], [0, 0, 0.001]], rtol=1e-14)
    np.testing.assert_allclose(rr.mrope_frequencies(8, [2, 1, 1], base=1e4, interleaved=True),
                               [[1, 0, 0], [0, 0.1, 0], [0, 0, 0.01], [0.001, 0, 0]], rtol=1e-14)
    assert _axes(rr.mrope_frequencies(8, [4, 0, 0], interleaved=True)) == [0, 0, 0, 0]
    assert _axes(rr.mrope_frequencies(8, [1, 0, 3])) == [0, 2, 2, 2]
    F = rr.mrope_frequencies(16, [2, 3, 3], interleaved="hw_alternating")     # ERNIE-4.5-VL, VideoRoPE
    assert _axes(F) == [1, 2, 1, 2, 1, 2, 0, 0]
    for sections, layout in (([8, 12, 12], False), ([12, 10, 10], True), ([12, 10, 10], "hw_alternating")):
        F = rr.mrope_frequencies(64, np.array(sections), interleaved=layout)  # text (t = h = w): 1-D RoPE
        np.testing.assert_array_equal(F.sum(axis=1), rr.frequencies(64))


def test_axial_frequencies_and_grid_positions_by_hand():
    col = [1, 0.1, 0.01, 0.001]                  # rotary_dim 16, 2 axes: 4 pairs each, base^(-k/4)
    np.testing.assert_allclose(rr.axial_frequencies(16, base=1e4), np.array([col + [0] * 4, [0] * 4 + col]).T,
                               rtol=1e-14)
    np.testing.assert_allclose(rr.axial_frequencies(12, base=1e4, axes=3),
                               [[1, 0, 0], [0.01, 0, 0], [0, 1, 0], [0, 0.01, 0], [0, 0, 1], [0, 0, 0.01]], rtol=1e-14)
    np.testing.assert_array_equal(rr.axial_frequencies(16, axes=1)[:, 0], rr.frequencies(16))
    freqs = 1.0 / (100.0 ** (np.arange(0, 64, 4)[:16] / 64))      # rope-vit's compute_axial_cis, theta 100
    F = rr.axial_frequencies(64, base=100.0)
    np.testing.assert_allclose(F[:16, 0], freqs, rtol=1e-14)
    np.testing.assert_allclose(F[16:, 1], freqs, rtol=1e-14)
    F = rr.axial_frequencies(128, sections=[8, 28, 28])             # Flux: feature dims 16, 56, 56
    for axis, (start, dim) in enumerate([(0, 16), (8, 56), (36, 56)]):
        np.testing.assert_allclose(F[start:start + dim // 2, axis], 1e4 ** (-np.arange(0, dim, 2) / dim), rtol=1e-15)
    assert np.count_nonzero(F) == 64
    np.testing.assert_array_equal(rr.axial_frequencies(128, base=2000.0, sections=[16] * 4),
                                  rr.axial_frequencies(128, base=2000.0, axes=4))
    np.testing.assert_array_equal(rr.grid_positions(2, 3, indexing="xy"), [[0, 1, 2, 0, 1, 2], [0, 0, 0, 1, 1, 1]])
    np.testing.assert_array_equal(rr.grid_positions(3, 1), [[0, 1, 2], [0, 0, 0]])


def _angles(F, P):
    """sum_a F[j, a] * p_a: F (n, A), P (A, ..., seq) -> (..., seq, n), float64."""
    return np.tensordot(np.asarray(P, dtype=np.float64), F, axes=([0], [1]))


def _rotate_plain(x, F, P, pairing):
    """Each pair (a, b) -> (a cos - b sin, a sin + b cos) by its multi-axis angle; float64 (independent of rope_ref)."""
    x, n, ang = np.array(x, dtype=np.float64), F.shape[0], _angles(F, P)
    ia, ib = (slice(0, 2 * n, 2), slice(1, 2 * n, 2)) if pairing == "interleaved" else (slice(0, n), slice(n, 2 * n))
    a, b = x[..., ia].copy(), x[..., ib].copy()
    x[..., ia], x[..., ib] = a * np.cos(ang) - b * np.sin(ang), a * np.sin(ang) + b * np.cos(ang)
    return x


@pytest.fixture(scope="module")
def modules():
    with np.load(DATA / "multiaxis_modules.npz") as z:
        arrays = {k: z[k] for k in z.files}
    return arrays, json.loads((DATA / "multiaxis_modules.json").read_text())


def _ids(case, mode):
    return rr.mrope_position_ids([tuple(s) for s in case["segments"]], spatial_merge_size=case["spatial_merge_size"],
                                 tokens_per_second=case["tokens_per_second"], text_after_vision=mode)


def test_position_ids_equal_get_rope_index_of_transformers():
    """"spatial" (transformers >= 5.3) and "max+1" (up to 5.2) differ only where temporal ids outrun max(h, w)."""
    agree = {"text-image-text", "image-first-two-images", "merge-1", "frames-with-timestamps", "image-text"}
    for case in json.loads((DATA / "multiaxis_rope_index.json").read_text())["cases"]:
        ids = _ids(case, "spatial")
        np.testing.assert_array_equal(ids, case["position_ids"], err_msg=case["name"])
        assert ids.dtype == np.int64 and ids.max() + 1 - ids.shape[1] == case["mrope_position_deltas"]
        assert np.array_equal(_ids(case, "max+1"), case["position_ids"]) == (case["name"] in agree), case["name"]
    old = json.loads((DATA / "multiaxis_rope_index_v5.2.json").read_text())
    assert old["transformers"] == "5.2.0" and len(old["cases"]) == 7
    for case in old["cases"]:
        np.testing.assert_array_equal(_ids(case, "max+1"), case["position_ids"], err_msg=case["name"])


QWEN = {"qwen2_vl": ([16, 24, 24], 1e6, False), "qwen2_5_vl": ([16, 24, 24], 1e6, False),
        "qwen3_vl": ([24, 20, 20], 5e6, True)}
TIMM = {  # case: (F, positions) by the documented correspondence
    "timm_cat_xy_base100": (lambda: rr.axial_frequencies(32, base=100.0),
                            lambda: rr.grid_positions(3, 5, indexing="xy")),
    "timm_cat_ij_half": (lambda: rr.axial_frequencies(32), lambda: rr.grid_positions(4, 3)),
    "timm_cat_ij_interleaved": (lambda: rr.axial_frequencies(24), lambda: rr.grid_positions(6, 7)),
}


def _recordings(arrays, meta):
    """(name, F, positions, pairing, cos, sin, x, out, the other layout's (F, positions) or None) per module."""
    for case, (sections, base, interleaved) in QWEN.items():
        assert meta["cases"][case]["rope_parameters"]["mrope_section"] == sections
        F, P = rr.mrope_frequencies(128, sections, base=base, interleaved=interleaved), arrays[f"{case}/pos"]
        wrong = rr.mrope_frequencies(128, [24, 20, 20], base=base, interleaved=not interleaved)
        yield case, F, P, "half", *(arrays[f"{case}/{k}"] for k in ("cos", "sin", "q", "out")), (wrong, P)
    for case, (F, P) in TIMM.items():
        info = meta["cases"][case]
        other = rr.grid_positions(*info["grid"], indexing="ij" if info["kwargs"]["grid_indexing"] == "xy" else "xy")
        yield (case, F(), P(), info["pairing"], *(arrays[f"{case}/{k}"] for k in ("cos", "sin", "x", "out")),
               (F(), other))
    # RoPE-Mixed (Heo et al. 2024): pair j turns by fx_j * x + fy_j * y, F = freqs[:, block, head].T (dense, learned).
    freqs, (h, w) = arrays["timm_mixed/freqs"].astype(np.float64), meta["cases"]["timm_mixed"]["grid"]
    for head in range(freqs.shape[2]):
        yield (f"timm_mixed head {head}", freqs[:, 1, head].T, rr.grid_positions(h, w, indexing="xy"), "interleaved",
               arrays["timm_mixed/cos"][1, head], arrays["timm_mixed/sin"][1, head], arrays["timm_mixed/x"][head],
               arrays["timm_mixed/out_block1"][head], None)
    # timm's RotaryEmbeddingMRope (GenLIP), mrope_section (8, 12, 12) over 36 pairs: the sections do not sum to 36,
    # temporal takes the 12 left, so it is Qwen3-VL's interleaving of [12, 12, 12] (the nominal [8, 12, 12] is refused).
    h, w = meta["cases"]["timm_mrope"]["grid"]
    P = np.concatenate([np.zeros((1, h * w)), rr.grid_positions(h, w)])            # (t = 0, row, column)
    yield ("timm_mrope", rr.mrope_frequencies(72, [12, 12, 12], interleaved=True), P, "half",
           *(arrays[f"timm_mrope/{k}"] for k in ("cos", "sin", "x", "out")), (rr.mrope_frequencies(72, [12] * 3), P))


def test_builders_give_every_recorded_modules_cos_sin_tables(modules):
    """cos/sin of sum_a F[j, a] p_a to float32 (~|angle| 2^-22); the other layout or grid order gives others."""
    for name, F, P, pairing, cos, sin, *_, wrong in _recordings(*modules):
        pick = slice(0, None, 2) if pairing == "interleaved" else slice(0, F.shape[0])
        ang = _angles(F, P)
        tol = 5e-7 * np.abs(ang) + 2e-6
        assert np.all(np.abs(cos[:, pick] - np.cos(ang)) <= tol) and np.all(np.abs(sin[:, pick] - np.sin(ang)) <= tol)
        assert wrong is None or np.max(np.abs(np.cos(_angles(*wrong)) - cos[:, pick])) > 0.1, name
    with pytest.raises(ValueError, match="sections"):
        rr.mrope_frequencies(72, [8, 12, 12], interleaved=True)


@pytest.mark.parametrize("form", ["rotate", "rotate_elementwise", "rotate_dense"])
def test_rope_ref_general_form_replays_every_recording(modules, form):
    for name, F, P, pairing, _, _, x, recorded, _ in _recordings(*modules):
        x64, P = x.astype(np.float64), P.astype(np.float64)
        ours = getattr(rr, form)(x64, P, inv_freq=F, pairing=pairing)
        np.testing.assert_allclose(ours, _rotate_plain(x64, F, P, pairing), atol=1e-12, err_msg=name)
        ang = np.abs(_angles(F, P))                              # float32 angles err by ~|angle| * 2^-22
        spread = np.repeat(ang, 2, -1) if pairing == "interleaved" else np.concatenate([ang, ang], -1)
        tol = (5e-7 * spread + 2e-6) * 4 * (1 + np.abs(x).max())
        assert np.all(np.abs(ours - recorded) <= tol), name


def test_mrope_position_ids_by_hand():
    np.testing.assert_array_equal(rr.mrope_position_ids([("text", 4)]), [[0, 1, 2, 3]] * 3)     # text: on all axes
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
    segs = [("text", 2), ["image", [1, 4, 4]], ("video", np.array([2, 2, 2]), 0.5)]      # inputs untouched
    before = repr(segs)
    rr.mrope_position_ids(segs, tokens_per_second=2)
    assert repr(segs) == before


@pytest.mark.parametrize("fn, args, kwargs, exc, name", [
    (rr.mrope_frequencies, (128, [16, 24, 23]), {}, ValueError, "sections"),
    (rr.mrope_frequencies, (128, [True, 31, 32]), {}, TypeError, "sections"),
    (rr.mrope_frequencies, (128, "16,24,24"), {}, TypeError, "sections"),
    (rr.mrope_frequencies, (128, {16, 24, 25}), {}, TypeError, "sections"),                   # a set: no order
    (rr.mrope_position_ids, (np.array(4),), {}, TypeError, "segments"),
    (rr.mrope_frequencies, (127, [16, 24, 24]), {}, ValueError, "rotary_dim"),
    (rr.mrope_frequencies, (128, [16, 24, 24]), {"base": -1.0}, ValueError, "base"),
    (rr.mrope_frequencies, (128, [16, 24, 24]), {"interleaved": "yes"}, TypeError, "interleaved"),
    (rr.mrope_frequencies, (128, [4, 30, 30]), {"interleaved": True}, ValueError, "sections"),
    (rr.mrope_frequencies, (128, [16, 24, 24]), {"interleave": True}, TypeError, "interleave"),
    (rr.axial_frequencies, (30,), {}, ValueError, "rotary_dim"),
    (rr.axial_frequencies, (32,), {"axes": 0}, ValueError, "axes"),
    (rr.axial_frequencies, (32,), {"axes": 2.0}, TypeError, "axes"),
    (rr.axial_frequencies, (128,), {"sections": [8, 28, 28], "axes": 2}, ValueError, "axes"),
    (rr.axial_frequencies, (128,), {"sections": []}, ValueError, "sections"),
    (rr.grid_positions, (0, 3), {}, ValueError, "height"),
    (rr.grid_positions, (2, 3.5), {}, TypeError, "width"),
    (rr.grid_positions, (2, 3), {"indexing": "yx"}, ValueError, "indexing"),
    (rr.mrope_position_ids, ([("text", 0)],), {}, ValueError, r"segments\[0\]"),
    (rr.mrope_position_ids, ([("text", 2.0)],), {}, TypeError, r"segments\[0\]"),
    (rr.mrope_position_ids, ([("txt", 2)],), {}, ValueError, r"segments\[0\]"),
    (rr.mrope_position_ids, ([("text", 2), ("image", (1, 3, 4))],), {}, ValueError, r"segments\[1\]"),
    (rr.mrope_position_ids, ([("image", (1, 4))],), {}, TypeError, r"segments\[0\]"),
    (rr.mrope_position_ids, ([("image", (1, 4, 4), 2.0)],), {}, TypeError, r"segments\[0\]"),
    (rr.mrope_position_ids, ([("video", (1, 4, 4), -2.0)],), {}, ValueError, r"segments\[0\]"),
    (rr.mrope_position_ids, ([],), {}, ValueError, "segments"),
    (rr.mrope_position_ids, ("text",), {}, TypeError, "segments"),
    (rr.mrope_position_ids, ([("text", 2)],), {"spatial_merge_size": 0}, ValueError, "spatial_merge_size"),
    (rr.mrope_position_ids, ([("text", 2)],), {"tokens_per_second": "2"}, TypeError, "tokens_per_second"),
    (rr.mrope_position_ids, ([("text", 2)],), {"text_after_vision": "max"}, ValueError, "text_after_vision"),
    (rr.mrope_position_ids, ([("video", (3, 2, 2), 1e200)],), {"tokens_per_second": 25}, ValueError,
     "tokens_per_second"),
    (rr.flux_position_ids, (-1, 2, 2), {}, ValueError, "text_tokens"),
    (rr.flux_position_ids, (1, 2, 2), {"frame": 2**63}, ValueError, "frame"),
    (rr.qwen_image_position_ids, (1, 2, 2.5), {}, TypeError, "width"),
    (rr.qwen_image_position_ids, (1, 2, 2), {"frames": True}, TypeError, "frames"),
    (rr.deepseek_v4_compressed_positions, (16, 0), {}, ValueError, "compress_rate"),
    (rr.deepseek_v4_compressed_positions, (16.0, 4), {}, TypeError, "seq_len"),
    (rr.deepseek_v4_compressed_positions, (2**63, 4), {}, ValueError, "seq_len"),
    *[(fn, args, {}, (MemoryError, ValueError), "too big|allocate|dimension") for fn, args in (   # numpy's, not empty
        (rr.deepseek_v4_compressed_positions, (2**63 - 1, 1)), (rr.mrope_position_ids, ([("text", 2**63 - 1)],)),
        (rr.qwen_image_position_ids, (2**63 - 1, 1, 1)))],
])
def test_bad_input_is_named(fn, args, kwargs, exc, name):
    with pytest.raises(exc, match=name):
        fn(*args, **kwargs)


with np.load(DATA / "diffusers_rope.npz") as _z:
    DIFFUSERS = {k: _z[k] for k in _z.files if "_ids/" in k or k.startswith("flux_pipeline/")}


def test_flux_position_ids_are_the_pipelines():
    ids = rr.flux_position_ids(4, 5, 6)
    assert ids.shape == (3, 4 + 30) and ids.dtype == np.int64
    assert not ids[:, :4].any()                                          # text_ids = zeros
    np.testing.assert_array_equal(ids[:, 4:], DIFFUSERS["flux_pipeline/image_ids"].T)
    kontext = rr.flux_position_ids(0, 5, 6, frame=1)                        # the reference image: first id 1
    assert np.all(kontext[0] == 1) and np.array_equal(kontext[1:], ids[1:, 4:])
    assert rr.flux_position_ids(1, 1, 1, frame=2**62 + 1)[0, 1] == 2**62 + 1             # exact, not through float64


def test_qwen_image_position_ids_reproduce_the_modules_tables():
    """QwenEmbedRope(scale_rope=True), (2, 5, 6) latent, 4 text tokens: rows and columns centred, text from 3."""
    ids = rr.qwen_image_position_ids(4, 5, 6, frames=2)
    assert ids.shape == (3, 4 + 60) and ids.dtype == np.int64
    image = ids[:, 4:]
    assert (image[1].min(), image[1].max(), image[2].min(), image[2].max()) == (-3, 1, -3, 2)
    assert np.array_equal(ids[:, :4], np.tile(3 + np.arange(4), (3, 1)))
    ang = ids.T @ rr.axial_frequencies(128, sections=[8, 28, 28]).T          # 16/56/56 features, as by hand above
    for part, rows in (("text", slice(0, 4)), ("image", slice(4, None))):
        np.testing.assert_allclose(np.cos(ang[rows]), DIFFUSERS[f"qwen_image_ids/{part}_cos"], atol=2e-6)
        np.testing.assert_allclose(np.sin(ang[rows]), DIFFUSERS[f"qwen_image_ids/{part}_sin"], atol=2e-6)
