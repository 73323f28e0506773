"""from_hf_config on real modules' configs (tests/data/families.*) against each module's recorded output or cos/sin
tables; expected values from the recordings or the modules' formulas, never from rope_ref."""

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

import rope_ref as rr

DATA = Path(__file__).parent / "data"
META = json.loads((DATA / "families.json").read_text())["cases"]
with np.load(DATA / "families.npz") as _z:
    REC = {k: _z[k] for k in _z.files}
EPS32 = float(np.finfo(np.float32).eps)


def read(case):
    return rr.from_hf_config(META[case]["config"], layer_type=META[case]["layer_type"])


def row_tolerance(pos, q):
    """float32 angles: per row, a few ulps of the largest angle times the row's largest feature."""
    return 8 * EPS32 * (1 + np.abs(pos).max(axis=0))[:, None] * np.abs(q).max(axis=1, keepdims=True) + 1e-6


# ---- the recorded modules --------------------------------------------------------------------------------------

OUTPUT_CASES = sorted(case for case in META if f"{case}/out" in REC)


@pytest.mark.parametrize("case", OUTPUT_CASES)
def test_from_hf_config_rotates_as_the_real_module(case):
    cfg = read(case)
    pos, q, out = REC[f"{case}/pos"], REC[f"{case}/q"].astype(np.float64), REC[f"{case}/out"]
    width = cfg.head_dim
    if q.shape[1] > width:             # DeepSeek-V4: a 512-wide head whose trailing 64 features rotate
        np.testing.assert_array_equal(out[:, :-width], q[:, :-width])
    got = cfg.rotate(q[:, -width:], pos if cfg.axes else pos[0])
    if cfg.output_pairing == "half":   # interleaved pairs in, written back in half layout
        got = np.concatenate([rr.to_half(got[:, :cfg.rotary_dim]), got[:, cfg.rotary_dim:]], axis=1)
    err = np.abs(got - out[:, -width:])
    assert np.all(err <= row_tolerance(pos, q)), f"{case}: max error {err.max():.3g}"


@pytest.mark.parametrize("case", sorted(case for case in META if META[case]["config"].get("_class_name")))
def test_diffusers_tables_are_the_config_frequencies(case):
    """cos/sin of each pair (Qwen-Image's complex table: one column per pair; the others repeat each column)."""
    cfg = read(case)
    cos, sin, pos = REC[f"{case}/cos"], REC[f"{case}/sin"], REC[f"{case}/pos"]
    if cos.shape[1] == cfg.rotary_dim:
        assert np.array_equal(cos[:, 0::2], cos[:, 1::2]) and np.array_equal(sin[:, 0::2], sin[:, 1::2])
        cos, sin = cos[:, 0::2], sin[:, 0::2]
    angles = pos.T @ cfg.inv_freq().T                                  # (seq, pairs)
    tol = 8 * EPS32 * (1 + np.abs(angles)) + 1e-6
    assert np.all(np.abs(np.cos(angles) - cos) <= tol) and np.all(np.abs(np.sin(angles) - sin) <= tol), case


def test_diffusers_classes_defaults_are_their_init_defaults():
    for case, meta in META.items():
        if "init_defaults" not in meta:
            continue
        name = meta["config"]["_class_name"]
        bare = rr.from_hf_config({"_class_name": name, "use_rotary_positional_embeddings": True})
        given = rr.from_hf_config({"_class_name": name, **meta["init_defaults"], "use_rotary_positional_embeddings":
                                   True})
        assert bare == given, case
        if "[" not in case:            # the recorded instance kept the defaults
            assert bare == read(case), case
    flux = read("FluxTransformer2DModel")
    assert (flux.axes, flux.axial_sections, flux.base, flux.pairing) == (3, (8, 28, 28), 10000.0, "interleaved")
    assert read("WanTransformer3DModel[96]").axial_sections == (16, 16, 16)   # 96 - 4*16 = 32 = 2*16
    assert read("CogVideoXTransformer3DModel").axial_sections == (8, 12, 12)  # 64/4, 64/8*3, 64/8*3 features


def test_deepseek_v4_published_layout_reads_as_the_module():
    """V4 checkpoints' legacy keys give the same RoPE per layer type as the module built from the v5 config."""
    rope = META["deepseek_v4[main]"]["config"]["rope_parameters"]["compress"]
    flat = {"model_type": "deepseek_v4", "head_dim": 512, "qk_rope_head_dim": 64, "rope_theta": 10000.0,
            "compress_rope_theta": 160000.0, "max_position_embeddings": 1048576,
            "rope_scaling": {k: rope[k] for k in ("rope_type", "factor", "original_max_position_embeddings",
                                                  "beta_fast", "beta_slow")}}
    for layer_type in ("main", "compress"):
        case = f"deepseek_v4[{layer_type}]"
        cfg = rr.from_hf_config(flat, layer_type=layer_type)
        q, pos = REC[f"{case}/q"].astype(np.float64), REC[f"{case}/pos"][0]
        err = np.abs(cfg.rotate(q[:, -64:], pos) - REC[f"{case}/out"][:, -64:])
        assert np.all(err <= row_tolerance(pos[None], q)), (layer_type, err.max())
    assert rr.from_hf_config(flat, layer_type="compress").attention_factor == 1.0   # no YaRN mscale on cos/sin
    del flat["compress_rope_theta"]                               # the config class's default, as recorded
    assert rr.from_hf_config(flat, layer_type="compress").base == rope["rope_theta"] == 160000.0
    flat["rope_scaling"] = {"rope_type": "longrope", "short_factor": [1] * 32, "long_factor": [2] * 32,
                            "original_max_position_embeddings": 4096}     # only YaRN's factor is set to 1
    assert rr.from_hf_config(flat, layer_type="compress").attention_factor > 1.0


def test_dsa_indexer_is_a_layer_type_of_the_main_config():
    indexer, main = read("deepseek_v32[indexer]"), rr.from_hf_config(META["deepseek_v32[indexer]"]["config"])
    assert (indexer.pairing, indexer.output_pairing, indexer.head_dim) == ("half", None, 128)
    assert (main.pairing, main.output_pairing, main.head_dim) == ("interleaved", "half", 64)
    assert dataclasses.replace(indexer, pairing=main.pairing, output_pairing="half", head_dim=64) == main


def test_hunyuan_vl_xdrope_is_refused_because_its_map_is_no_rotation():
    """Feature k and its partner k + d/2 take angles a, b from different axes: determinant cos(a - b), not 1."""
    cos, sin, pos = (REC[f"hunyuan_vl_text/{k}"] for k in ("cos", "sin", "pos"))
    half = cos.shape[1] // 2
    det = cos[:, :half] * cos[:, half:] + sin[:, :half] * sin[:, half:]
    same = np.all(pos == pos[0], axis=0)
    np.testing.assert_allclose(det[same], 1.0, atol=1e-5)
    assert np.abs(det[~same] - 1).max() > 0.4
    for config in (META["hunyuan_vl_text"]["config"], {"model_type": "hunyuan_vl",
                                                       "text_config": META["hunyuan_vl_text"]["config"]}):
        with pytest.raises(ValueError, match="model_type"):
            rr.from_hf_config(config)


def test_nanochat_turns_clockwise_as_its_module():
    """NanoChat's rotate_half is cat(x2, -x1): every pair turns by -theta_j m; without the direction, a mirror."""
    cfg, q, pos = read("nanochat"), REC["nanochat/q"].astype(np.float64), REC["nanochat/pos"][0]
    assert cfg.clockwise and np.all(cfg.inv_freq() < 0)
    assert np.abs(dataclasses.replace(cfg, clockwise=False).rotate(q, pos) - REC["nanochat/out"]).max() > 0.1


def test_gemma3n_published_v4_layout_reads_as_the_module():
    published = {"model_type": "gemma3n", "text_config": {      # Gemma 3n's config.json keys (v4 layout)
        "model_type": "gemma3n_text", "head_dim": 64, "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
        "rope_scaling": None}}
    for layer_type in ("full_attention", "sliding_attention"):
        case = f"gemma3n_text[{layer_type}]"
        q, pos = REC[f"{case}/q"].astype(np.float64), REC[f"{case}/pos"]
        got = rr.from_hf_config(published, layer_type=layer_type).rotate(q, pos[0])
        assert np.all(np.abs(got - REC[f"{case}/out"]) <= row_tolerance(pos, q)), layer_type


def test_identify_names_the_hw_alternating_layout():
    """ERNIE-4.5-VL: even pairs of the first s_h + s_w on height, odd ones on width, the rest temporal."""
    theta = 500000.0 ** (-np.arange(0, 32, 2) / 32)
    hw = 12

    def ernie_kernel(x, positions):
        t, h, w = positions
        angles = np.concatenate([(h[..., None] * theta[:hw:2, None].T)[..., :, None],
                                 (w[..., None] * theta[1:hw:2, None].T)[..., :, None]], axis=-1)
        angles = np.concatenate([angles.reshape(*angles.shape[:-2], hw), t[..., None] * theta[hw:]], axis=-1)
        cos, sin = np.cos(angles), np.sin(angles)
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return np.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], axis=-1).reshape(x.shape)

    spec = rr.identify(ernie_kernel, 32, axes=3)
    assert (spec.form, spec.mrope_layout, spec.sections) == ("M-RoPE", "hw_alternating", (4, 6, 6))


# ---- DeepSeek-V4's compressed KV entries (record_deepseek_v4.py) ------------------------------------------------

V4 = json.loads((DATA / "deepseek_v4_compressed.json").read_text())
with np.load(DATA / "deepseek_v4_compressed.npz") as _z:
    V4_REC = {k: _z[k] for k in _z.files}


@pytest.mark.parametrize("case", sorted(V4["cases"]))
def test_deepseek_v4_compressed_keys_rotate_at_their_window_start(case):
    """Entry w rotates at w * compress_rate with the "compress" RoPE; one position later or the "main" theta is
    beyond float32 rounding, so an off-by-one or the wrong theta fails."""
    meta, rec = V4["cases"][case], {k.split("/")[1]: v for k, v in V4_REC.items() if k.startswith(case + "/")}
    rate, tokens = V4["config"]["compress_rates"][meta["layer_type"]], sum(meta["calls"])
    positions = rr.deepseek_v4_compressed_positions(tokens, rate)
    np.testing.assert_array_equal(positions, rec["key_positions"])
    assert all(rr.deepseek_v4_compressed_positions(n, 10**30).size == 0 for n in (tokens, 2**63 - 1))   # none complete
    assert meta["rotary_layer_types"] == ["compress"]
    pre, out = rec["pre"].astype(np.float64), rec["out"]
    np.testing.assert_array_equal(out[:, :-64], rec["pre"][:, :-64])           # the 448 nope features pass through

    def within(layer_type, pos):
        got = rr.from_hf_config(V4["config"], layer_type=layer_type).rotate(pre[:, -64:], pos)
        return np.all(np.abs(got - out[:, -64:]) <= row_tolerance(pos[None], pre))
    assert within("compress", positions)
    assert not within("compress", positions + 1) and not within("compress", positions + rate - 1)
    assert not within("main", positions)
    if "indexer_key_positions" in rec:     # CSA's indexer: its keys at the same positions, its queries at the tokens'
        np.testing.assert_array_equal(rec["indexer_key_positions"], positions)
        np.testing.assert_array_equal(rec["indexer_query_positions"], np.arange(tokens))
    if "visible" in rec:                   # query t sees entry w once tokens w*rate .. (w+1)*rate - 1 are in
        np.testing.assert_array_equal(rec["visible"], positions[None] + rate - 1 <= np.arange(tokens)[:, None])
