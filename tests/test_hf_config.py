"""from_hf_config against outputs recorded from transformers, torchtune and rotary-embedding-torch
(tests/data/record_reference.py), the families' reading rules, and malformed configs refused naming the key."""

import copy
import dataclasses
import json
import math
from pathlib import Path

import numpy as np
import pytest

import rope_ref as rr

#: A NumPy warning from rope_ref is a contract violation (e.g. 0/0 on proportional RoPE's unrotated pairs).
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")

DATA = Path(__file__).parent / "data"
CONFIGS = DATA / "configs"
META = json.loads((DATA / "rope_outputs.json").read_text())
REC = np.load(DATA / "rope_outputs.npz")
CASES = {c["name"]: c for c in META["cases"]}
ULP = 2.0 ** -24


def config_file(stem):
    path = CONFIGS / f"{stem}.json"
    return path if path.exists() else CONFIGS / "families" / f"{stem}.json"


def config_of(case):
    return rr.from_hf_config(CONFIGS / case["config"], pairing=case["pairing"], layer_type=case.get("layer_type"))


def float32_tolerance(positions, theta_max, x):
    """Per row: float32 angles err <= 4 ulp * (m theta_max + 1) rad, times |x|_max sqrt 2, plus 4 ulp of |x|_max."""
    size = np.abs(x).max(axis=-1, keepdims=True)
    return 4 * ULP * (np.asarray(positions, float)[:, None] * theta_max + 1) * size * math.sqrt(2) + 4 * ULP * size


#: The scaling method each recorded transformers config names, as transformers v5 reads it (the others: "default").
#: HunYuan's "dynamic" with alpha is static NTK; GptOssConfig's and ApertusConfig's default sections are yarn, llama3.
SCALED = {"llama3": ("llama-3.1-8b", "v5-exaone4-llama3", "v5-apertus", "v5-llama4-text", "v5-llama4-scout",
                     "v5-mllama-text-llama3"),
          "yarn": ("qwen2.5-7b-instruct-yarn", "deepseek-v3", "v5-qwen3-moe-yarn", "v5-gpt-oss", "v5-deepseek-v2",
                   "v5-kimi-k2", "v5-ministral3"),
          "longrope": ("phi-3.5-mini-instruct", "v5-phimoe-longrope"), "ntk": ("v5-hunyuan-alpha",),
          "linear": ("v5-gemma3-text[full_attention]",), "proportional": ("v5-gemma4-text[full_attention]",)}


@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("offset", META["offsets"])
def test_rotate_equals_the_real_library(name, offset):
    case, r = CASES[name], np.arange(META["rows"])
    cfg = config_of(case)
    if case["library"] == "transformers":
        assert cfg.rope_type == next((rope_type for rope_type, names in SCALED.items() if name in names), "default")
    q = np.random.default_rng(META["seed"]).standard_normal((META["rows"], cfg.head_dim)).astype(np.float32)
    # M-RoPE cases were recorded at (t, h, w) = offset + (r, 2r + 1, 3r + 2) (record_reference.py: mrope_positions)
    mrope = case.get("positions") == "mrope"
    pos = np.stack([offset + r, offset + 2 * r + 1, offset + 3 * r + 2]) if mrope else offset + r
    got = cfg.rotate(q.astype(np.float64), pos)
    got = rr.to_half(got) if cfg.output_pairing == "half" else got      # DeepSeek-V3 writes its pairs in half layout
    row_pos = pos.max(axis=0) if pos.ndim == 2 else pos
    tol = float32_tolerance(row_pos, cfg.inv_freq(int(pos.max()) + 1).max(), q) * max(cfg.attention_factor, 1.0)
    err = np.abs(got - REC[f"{name}/{offset}/out"])
    assert np.all(err <= tol), (name, offset, err.max(), tol.max())


def replay_kernel(name, offset, cfg):
    """The recorded float32 cos/sin of rows offset.. applied in float32 as a black box; more rows are refused."""
    cos, sin = REC[f"{name}/{offset}/cos"], REC[f"{name}/{offset}/sin"]
    expand = (lambda t: np.concatenate([t, t], axis=-1)) if cfg.pairing == "half" else (lambda t: np.repeat(t, 2, -1))
    cos, sin, r, rows = expand(cos), expand(sin), cfg.rotary_dim, len(cos)

    def fn(x):
        x = np.asarray(x, dtype=np.float32)
        if x.shape[-2] > rows:
            raise ValueError(f"the replayed kernel has {rows} recorded rows, asked for {x.shape[-2]}")
        rot = x[..., :r] * cos[:x.shape[-2]] + rr.rotate_half(x[..., :r], cfg.pairing) * sin[:x.shape[-2]]
        rot = rr.to_half(rot) if cfg.output_pairing == "half" else rot
        return np.concatenate([rot, x[..., r:]], axis=-1)
    return fn


ONE_AXIS = sorted(n for n in CASES if CASES[n].get("positions") != "mrope")
#: slowest pair turning ~1e-6 rad over 64 rows (no method can be named), two methods giving the same frequencies,
#: and an offset many others fit (proportional RoPE's few turning pairs): see test_identify_*.py for their notes.
UNNAMED = {"v5-mistral3", "v5-ministral", "v5-apertus", "v5-kimi-k2", "v5-llama4-scout"}
OFFSET_UNDETERMINED = {("v5-gemma4-text[full_attention]", 5000)}


@pytest.mark.slow
@pytest.mark.parametrize("name", ONE_AXIS)
@pytest.mark.parametrize("offset", META["offsets"])
def test_the_checker_recovers_the_real_kernel(name, offset):
    cfg = config_of(CASES[name])
    kernel, rows = replay_kernel(name, offset, cfg), len(REC[f"{name}/{offset}/cos"])
    spec = rr.identify(kernel, cfg.head_dim, base_hint=cfg.base if cfg.rope_type == "longrope" else None,
                       max_rows=rows)
    assert spec.is_rope and (spec.pairing, spec.rotary_dim) == (cfg.pairing, cfg.rotary_dim), spec
    ntk = cfg.rope_type == "ntk"       # static NTK is plain RoPE with base * factor^(d/(d-2))
    base = cfg.base * cfg.params["factor"] ** (cfg.rotary_dim / (cfg.rotary_dim - 2)) if ntk else cfg.base
    assert math.isclose(spec.base, base, rel_tol=1e-4), spec
    if name not in UNNAMED:
        assert spec.rope_type == ("default" if ntk else cfg.rope_type), spec
    if (name, offset) in OFFSET_UNDETERMINED:        # the offset it reports is one of many; never a defect's name
        assert any("ambiguous" in note for note in spec.notes), spec
        with pytest.raises(AssertionError) as info:
            rr.assert_rope_matches(kernel, config=cfg, offset=None, max_rows=rows)
        assert info.value.defects == [], info.value
        rr.assert_rope_matches(kernel, config=cfg, offset=offset, max_rows=rows)
        return
    assert abs(spec.offset - offset) < 0.5, spec
    rr.assert_rope_matches(kernel, config=cfg, offset=offset, max_rows=rows)


# ---- reading configs --------------------------------------------------------------------------------------

@pytest.mark.parametrize("model_type", sorted(META["family_defaults"]))
def test_defaults_come_from_the_family(model_type):
    """Only hidden_size 4096 and 64 heads: the rest as the family's v5 config class fills it in (recorded)."""
    cfg = rr.from_hf_config({"model_type": model_type, "hidden_size": 4096, "num_attention_heads": 64})
    want = META["family_defaults"][model_type]
    assert {"head_dim": cfg.head_dim, "rotary_dim": cfg.rotary_dim, "base": cfg.base, "rope_type": cfg.rope_type} == \
        dict(want, rope_type=want.get("rope_type", "default"))


def test_attention_factors_layouts_and_the_current_length():
    qwen = rr.from_hf_config(CONFIGS / "qwen2.5-7b-instruct-yarn.json")     # Phi-3.5's, DeepSeek-V3's: recorded above
    assert qwen.params["factor"] == 4.0 and math.isclose(qwen.attention_factor, 0.1 * math.log(4) + 1)
    v4 = json.loads((CONFIGS / "llama-3.1-8b.json").read_text())
    v5 = {k: v for k, v in v4.items() if k not in ("rope_scaling", "rope_theta")}
    v5["rope_parameters"] = dict(v4["rope_scaling"], rope_theta=v4["rope_theta"])
    legacy = dict(v4, rope_scaling={("type" if k == "rope_type" else k): v for k, v in v4["rope_scaling"].items()})
    both = dict(v5, rope_scaling={"type": "llama3", "factor": 8.0})        # a v5 config carrying an agreeing v4 copy
    assert rr.from_hf_config(v4) == rr.from_hf_config(v5) == rr.from_hf_config(legacy) == rr.from_hf_config(both)
    cfg = rr.from_hf_config({"model_type": "llama", "head_dim": 64, "max_position_embeddings": 2048,
                             "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}})
    x = np.random.default_rng(0).standard_normal((4, 80))
    pos = np.arange(4000, 4004)      # the current length 4004: base * (2 * 4004/2048 - 1)^(64/62)
    want = rr.rotate(x[:, :64], pos, pairing="half", base=10000.0 * (2 * 4004 / 2048 - 1) ** (64 / 62))
    np.testing.assert_allclose(cfg.rotate(x[:, :64], pos), want, atol=1e-12)
    cfg = rr.from_hf_config({"model_type": "phi", "hidden_size": 2560, "num_attention_heads": 32,
                             "partial_rotary_factor": 0.4, "rope_scaling": {"type": "yarn", "factor": 4.0},
                             "max_position_embeddings": 2048})
    y = cfg.rotate(x)                                # the factor scales the rotated part only
    np.testing.assert_array_equal(y[:, 32:], x[:, 32:])
    np.testing.assert_allclose(np.linalg.norm(y[:, :32], axis=-1),
                               cfg.attention_factor * np.linalg.norm(x[:, :32], axis=-1), rtol=1e-12)


def test_family_quirks():
    assert rr.from_hf_config({"model_type": "deepseek_v3", "rope_interleave": False}).pairing == "half"
    ds = rr.from_hf_config({"model_type": "deepseek_v3"})                 # interleaved in, half layout out
    assert (ds.pairing, ds.output_pairing) == ("interleaved", "half")
    assert rr.from_hf_config({"model_type": "deepseek_v3"}, pairing="interleaved").output_pairing is None
    assert rr.from_hf_config({"model_type": "deepseek_v2"}).output_pairing is None
    assert rr.from_hf_config({"model_type": "gptj", "n_embd": 4096, "n_head": 16, "rope_theta": 5e5}).base == 1e4
    assert rr.from_hf_config({"model_type": "gptj", "n_embd": 4096, "n_head": 16, "rotary_dim": None}).rotary_dim == 256
    falcon = {"model_type": "falcon", "hidden_size": 4544, "n_head": 71, "head_dim": 32}   # head_dim: not read
    for alibi in ({}, {"alibi": None}, {"alibi": False}):        # a missing or null alibi is False, as in transformers
        assert rr.from_hf_config(dict(falcon, **alibi)).head_dim == 64
    assert rr.from_hf_config({"model_type": "esm", "hidden_size": 256, "num_attention_heads": 4,
                              "position_embedding_type": "rotary"}).head_dim == 64
    got = {mt: rr.from_hf_config({"model_type": mt, "hidden_size": 4096, "num_attention_heads": 32, "rope_theta": 5e5})
           for mt in ("gpt_oss", "apertus", "cwm")}      # default sections: GptOss takes rope_theta, the others not
    assert {mt: (c.rope_type, c.base) for mt, c in got.items()} == \
        {"gpt_oss": ("yarn", 5e5), "apertus": ("llama3", 12e6), "cwm": ("llama3", 1e6)}
    assert got["gpt_oss"].params["truncate"] is False      # HunYuan's alpha and PhiMoE's longrope: recorded above


def test_mla_reads_the_rotated_part_and_query_scaling_keys_are_kept_not_applied():
    kimi = rr.from_hf_config(config_file("v5-kimi-k2"))
    assert (kimi.head_dim, kimi.rotary_dim, kimi.output_pairing) == (64, 64, "half")
    unknown = {"model_type": "my_mla", "hidden_size": 256, "num_attention_heads": 2, "qk_rope_head_dim": 32,
               "qk_nope_head_dim": 96}
    assert rr.from_hf_config(unknown, pairing="half").head_dim == 32
    m4 = {"model_type": "mistral4", "hidden_size": 256, "num_attention_heads": 4, "qk_rope_head_dim": 64,
          "qk_nope_head_dim": 64, "rope_parameters": {"rope_type": "default", "partial_rotary_factor": 0.5}}
    assert rr.from_hf_config(m4).rotary_dim == 64          # qk_rope's share of qk_nope + qk_rope
    with pytest.raises(ValueError, match="partial_rotary_factor"):
        rr.from_hf_config(dict(m4, rope_parameters={"rope_type": "default", "partial_rotary_factor": 0.3}))
    d = json.loads(config_file("v5-ministral3").read_text())
    cfg = rr.from_hf_config(d)
    assert dict(cfg.query_scaling) == {"llama_4_scaling_beta": 0.1}
    without = dict(d, rope_parameters={k: v for k, v in d["rope_parameters"].items() if k != "llama_4_scaling_beta"})
    x = np.random.default_rng(0).standard_normal((3, 64))
    np.testing.assert_array_equal(cfg.rotate(x), rr.from_hf_config(without).rotate(x))
    l4 = rr.from_hf_config({"model_type": "llama4_text", "head_dim": 64, "attn_temperature_tuning": True,
                            "floor_scale": 8192, "attn_scale": 0.1})
    assert dict(l4.query_scaling) == {"attn_temperature_tuning": True, "floor_scale": 8192, "attn_scale": 0.1}


def test_one_rope_per_layer_type():
    """Gemma 4's full attention (proportional over global_head_dim) leaves the pairs past its share as they are."""
    gemma4 = config_file("v5-gemma4-text")
    full = rr.from_hf_config(gemma4, layer_type="full_attention")
    assert (full.head_dim, full.rotary_dim, full.base, full.rope_type) == (128, 128, 1e6, "proportional")
    x = np.random.default_rng(1).standard_normal((5, 128))
    idle = np.r_[16:64, 80:128]                     # the pairs (i, i + 64) with i >= 16 stand still
    np.testing.assert_array_equal(full.rotate(x)[:, idle], x[:, idle])
    d = json.loads(gemma4.read_text())
    del d["global_head_dim"]
    assert rr.from_hf_config(d, layer_type="full_attention").head_dim == 512    # Gemma4TextConfig's default
    written = dict(d, per_layer_config={"01": {"head_dim": 128}})             # as Gemma4TextConfig.to_dict() writes
    assert rr.from_hf_config(written, layer_type="full_attention").head_dim == 128


def test_a_dict_an_object_with_to_dict_and_a_file_read_alike_untouched(tmp_path):
    """transformers' PretrainedConfig is duck-typed by its to_dict(); the input is not changed, the result frozen."""
    d = json.loads((CONFIGS / "phi-3.5-mini-instruct.json").read_text())
    before = copy.deepcopy(d)
    cfg = rr.from_hf_config(d)
    assert d == before
    config = type("Config", (), {"to_dict": lambda self: copy.deepcopy(d)})()
    assert rr.from_hf_config(config) == cfg == rr.from_hf_config(CONFIGS / "phi-3.5-mini-instruct.json")
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.base = 1.0
    with pytest.raises(TypeError):
        cfg.params["factor"] = 2.0
    with pytest.raises(TypeError, match="config"):
        rr.from_hf_config(type("NoDict", (), {"to_dict": lambda self: [1, 2]})())


def test_a_config_json_with_nan_is_read(tmp_path):
    """Python's json.dumps writes NaN (a config saved with a NaN field): it is a value, not a repeated key."""
    path = tmp_path / "config.json"
    path.write_text(json.dumps(dict(LLAMA, rope_theta=5e5, initializer_range=math.nan, extra={"b": [math.nan]})))
    assert rr.from_hf_config(path).base == 5e5          # refused by name where a number is read: bad_configs below


# ---- configs refused, naming the key -------------------------------------------------------------------------

LLAMA = {"model_type": "llama", "head_dim": 64}
LLAMA3 = dict(LLAMA, rope_theta=500000.0, rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                                         "high_freq_factor": 4.0})
GEMMA3 = {"model_type": "gemma3_text", "head_dim": 64, "rope_parameters": {
    "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
    "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}}
MROPE = {"model_type": "qwen2_vl", "head_dim": 128, "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}}
FULL = {"layer_type": "full_attention"}
CYCLE = {"model_type": "llava", "text_config": {"model_type": "llava_text"}}
CYCLE["text_config"]["text_config"] = CYCLE                    # a text_config that contains itself


@pytest.mark.parametrize("config, kw, exc, name", [
    ("/no/such/config.json", {}, ValueError, "config"),
    *[(content, {}, ValueError, "config") for content in (b"{not json", b"", json.dumps(LLAMA).encode("utf-16"),
                                                          b"[1, 2]", b"[" * 200_000 + b"]" * 200_000)],
    ([1, 2], {}, TypeError, "config"),
    *[(text.encode(), {}, ValueError, "rope_theta") for text in (      # NaN where a number is read; a key given twice
        json.dumps(dict(LLAMA, rope_theta=math.nan)), json.dumps(LLAMA)[:-1] + ', "rope_theta": 1, "rope_theta": 2}')],
    ({"model_type": "gpt2", "hidden_size": 768, "num_attention_heads": 12}, {}, ValueError, "model_type"),
    ({"model_type": "llama", "num_attention_heads": 12}, {}, TypeError, "hidden_size"),
    ({"model_type": "llama", "hidden_size": 770, "num_attention_heads": 12}, {}, ValueError, "hidden_size"),
    (LLAMA, {"pairing": "halves"}, ValueError, "pairing"),
    (LLAMA, {"layer_type": 3}, TypeError, "layer_type"),
    (dict(LLAMA, rope_scaling={"rope_type": "yarn", "factr": 4.0}), {}, ValueError, "factr"),
    (dict(LLAMA, rope_scaling={"rope_type": "linear"}), {}, ValueError, "factor"),
    (dict(LLAMA, rope_scaling={"rope_type": "ntk", "factor": 2.0}), {}, ValueError, "rope_type"),
    ({"model_type": "phi", "head_dim": 10, "partial_rotary_factor": 0.5}, {}, ValueError, "partial_rotary_factor"),
    ({"model_type": "falcon", "hidden_size": 4544, "n_head": 71, "alibi": True}, {}, ValueError, "alibi"),
    ({"model_type": "granitemoehybrid", "head_dim": 64}, {}, ValueError, "position_embedding_type"),
    (dict(LLAMA, rope_scaling={"rope_type": "dynamic", "factor": 2.0, "alpha": 10.0}), {}, ValueError, "alpha"),
    ({"model_type": "phimoe", "head_dim": 64, "rope_scaling": {"rope_type": "longrope", "short_factor": [1] * 32,
      "long_factor": [1] * 32, "short_mscale": 1.2, "long_mscale": 1.3}}, {}, ValueError, "mscale"),
    ({"model_type": "phi3", "head_dim": 8, "max_position_embeddings": 8192, "original_max_position_embeddings": 4096,
      "rope_scaling": {"type": "su", "short_factor": [1, 1], "long_factor": [1, 1, 1, 1]}}, {}, ValueError,
     "short_factor"),
    ({"model_type": "my_mla", "hidden_size": 256, "num_attention_heads": 4, "qk_nope_head_dim": 128},
     {"pairing": "half"}, ValueError, "qk_nope_head_dim"),       # pairing= never guesses a head size written otherwise
    ({"model_type": "nomic_like", "hidden_size": 768, "num_attention_heads": 12, "rotary_emb_fraction": 0.5},
     {"pairing": "half"}, ValueError, "rotary_emb_fraction"),
    (CYCLE, {}, ValueError, "text_config"),
    (dict(LLAMA3, rope_parameters={}), {}, ValueError, "rope_parameters"),
    ({"model_type": "qwen2", "head_dim": 64, "rope_parameters": {"rope_type": "default", "rope_theta": 1e6},
      "rope_scaling": {"type": "yarn", "factor": 4.0}}, {}, ValueError, "rope_scaling"),
    ({"model_type": "gpt_oss", "rope_theta": 1.0}, {}, ValueError, "rope_theta"),
    (dict(GEMMA3, rope_theta=5.0), FULL, ValueError, "rope_theta"),   # read by no layer
    (GEMMA3, {}, ValueError, "layer_type"),
    (LLAMA3, FULL, ValueError, "layer_type"),
    (dict(GEMMA3, rope_parameters=dict(GEMMA3["rope_parameters"], rope_theta=1e4)), FULL, ValueError, "rope_theta"),
    ({"model_type": "qwen2", "head_dim": 64, "rope_scaling": {"rope_type": "default", "mrope_section": [8, 12, 12]}},
     {}, ValueError, "mrope_section"),       # M-RoPE on a family whose attention applies 1-D RoPE
    (dict(MROPE, rope_scaling={"type": "mrope", "mrope_section": [16, 24, 20]}), {}, ValueError, "sections"),
    (dict(MROPE, rope_scaling={"type": "mrope", "mrope_section": [16, 24]}), {}, ValueError, "mrope_section"),
    (dict(MROPE, rope_scaling=dict(MROPE["rope_scaling"], mrope_interleaved=True)), {}, ValueError,
     "mrope_interleaved"),
    ({"model_type": "llama", "head_dim": 128, "rope_scaling": {"type": "mrope"}}, {}, ValueError, "mrope_section"),
    ({"model_type": "my_vlm", "head_dim": 64, "rope_parameters": {"mrope_interleaved": True}}, {"pairing": "half"},
     ValueError, "mrope_section"),
    (config_file("v5-qwen2-moe"), {"layer_type": "indexer"}, ValueError, "layer_type"),    # no DSA indexer
    ({"_class_name": "FluxTransformer3DModel"}, {}, ValueError, "_class_name"),
    ({"_class_name": "CogVideoXTransformer3DModel"}, {}, ValueError, "use_rotary_positional_embeddings"),
    ({"_class_name": "FluxTransformer2DModel", "axes_dims_rope": [16, 56, 48]}, {}, ValueError, "axes_dims_rope"),
    ({"_class_name": "FluxTransformer2DModel", "axes_dims_rope": [15, 57, 56]}, {}, ValueError, "axes_dims_rope"),
    ({"_class_name": "Flux2Transformer2DModel", "rope_theta": -1}, {}, ValueError, "rope_theta"),
    ({"_class_name": "FluxTransformer2DModel"}, FULL, ValueError, "layer_type"),
])
def test_bad_configs_are_refused_naming_the_key(tmp_path, config, kw, exc, name):
    if isinstance(config, bytes):            # the content of a config.json
        (tmp_path / "config.json").write_bytes(config)
        config = tmp_path / "config.json"
    with pytest.raises(exc, match=name):
        rr.from_hf_config(config, **kw)


@pytest.mark.parametrize("config, exc, key, absent", [
    (dict(LLAMA, max_position_embeddings=-5), ValueError, "config['max_position_embeddings']", "rope_scaling"),
    (dict(LLAMA3, max_position_embeddings=-5), ValueError, "config['max_position_embeddings']", "rope_scaling"),
    (dict(LLAMA3, original_max_position_embeddings=0), ValueError, "config['original_max_position_embeddings']",
     "rope_scaling"),
    (dict(LLAMA, rope_theta="10000"), TypeError, "config['rope_theta']", "rope_scaling"),
    (dict(LLAMA, rope_scaling={"rope_theta": "1e4"}), TypeError, "config['rope_scaling']['rope_theta']", None),
    (dict(LLAMA, head_dim=3), ValueError, "head_dim", "partial_rotary_factor"),
    (dict(LLAMA, head_dim=6, partial_rotary_factor=0.5), ValueError, "partial_rotary_factor", None),
])
def test_a_bad_value_is_named_where_the_config_has_it(config, exc, key, absent):
    with pytest.raises(exc) as err:
        rr.from_hf_config(config)
    assert key in str(err.value) and (absent is None or absent not in str(err.value))


#: one config per way of writing RoPE; every key in it is read, so each bad value below is refused naming that key
BASES = {
    "yarn": {"model_type": "llama", "head_dim": 64, "rope_theta": 1e4, "rope_scaling": {
        "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096, "beta_fast": 32.0}},
    "partial": {"model_type": "phi", "hidden_size": 256, "num_attention_heads": 4, "partial_rotary_factor": 0.5},
    "gptj": {"model_type": "gptj", "n_embd": 256, "n_head": 4, "rotary_dim": 32},
    "mrope": MROPE,
    "mla": {"model_type": "deepseek_v3", "qk_rope_head_dim": 64, "rope_interleave": True, "rope_scaling": {
        "type": "yarn", "factor": 40, "original_max_position_embeddings": 4096, "mscale": 1.0, "mscale_all_dim": 1.0}},
    "wrapper": {"model_type": "llava", "text_config": {"model_type": "llama", "head_dim": 64, "rope_theta": 1e4}},
}


def _paths(config, prefix=()):
    for key, value in config.items():
        if not (prefix == () and key == "model_type" and "text_config" in config):   # a wrapper's own name: unread
            yield prefix + (key,)
        if isinstance(value, dict):
            yield from _paths(value, prefix + (key,))


@pytest.mark.parametrize("base", sorted(BASES))
def test_malformed_values_are_refused_naming_the_key(base):
    assert rr.from_hf_config(BASES[base]).rotary_dim > 0
    for path in _paths(BASES[base]):
        for value in ("x", math.nan, -math.inf, [1, 2], {"a": 1}, b"ab", 10**400):
            config = copy.deepcopy(BASES[base])
            inner = config
            for key in path[:-1]:
                inner = inner[key]
            inner[path[-1]] = value
            with pytest.raises((ValueError, TypeError)) as info:
                rr.from_hf_config(config)
            assert any(repr(k) in str(info.value) or f"{k}=" in str(info.value) or f"{k} " in str(info.value)
                       for k in path), (path, value, str(info.value))


# ---- M-RoPE ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("case", ["qwen2_vl", "qwen2_5_vl", "qwen3_vl"])
def test_mrope_configs_replay_the_recorded_modules_at_image_positions(case):
    """Recorded at text, image and video ids; planted: h and w ids swapped, Qwen3-VL's axes read as blocks."""
    meta = json.loads((DATA / "multiaxis_modules.json").read_text())["cases"][case]
    cfg = rr.from_hf_config({"model_type": f"{case}_text", "head_dim": meta["head_dim"],
                             "rope_parameters": meta["rope_parameters"]})
    with np.load(DATA / "multiaxis_modules.npz") as z:
        q, pos, want = z[f"{case}/q"].astype(np.float64), z[f"{case}/pos"], z[f"{case}/out"]
    tol = float32_tolerance(pos.max(axis=0), cfg.inv_freq().max(), np.abs(q).max(axis=0)).max()
    assert np.abs(cfg.rotate(q, pos) - want).max() <= tol
    assert np.abs(cfg.rotate(q, pos[[0, 2, 1]]) - want).max() > 10 * tol
    if cfg.mrope_interleaved:
        assert np.abs(dataclasses.replace(cfg, mrope_interleaved=False).rotate(q, pos) - want).max() > 10 * tol


def test_mrope_is_read_as_written():
    qwen3 = {"model_type": "qwen3_vl", "text_config": {"model_type": "qwen3_vl_text", "head_dim": 128,
             "rope_parameters": {"rope_type": "default", "rope_theta": 5e6, "mrope_section": [24, 20, 20],
                                 "mrope_interleaved": True}}}
    cfg = rr.from_hf_config(qwen3)
    assert cfg.inv_freq().shape == (64, 3) and cfg.axes == 3 and cfg.mrope_interleaved
    x = np.random.default_rng(0).standard_normal((2, 6, 128))        # on text (t = h = w): 1-D RoPE
    np.testing.assert_allclose(cfg.rotate(x), rr.rotate(x, pairing="half", base=5e6), atol=1e-12)
    np.testing.assert_array_equal(cfg.rotate(x[0, 3]), x[0, 3])                 # one vector: at position 0
    text = {"model_type": "qwen2_5_vl_text", "head_dim": 128,
            "rope_parameters": {"rope_type": "default", "mrope_section": [16, 24, 24]}}
    v5 = rr.from_hf_config({"model_type": "qwen2_5_vl", "text_config": text})
    v4 = rr.from_hf_config({"model_type": "qwen2_vl", "hidden_size": 3584, "num_attention_heads": 28,
                            "rope_scaling": {"type": "mrope", "rope_type": "default", "mrope_section": [16, 24, 24]}})
    for c in (v5, v4):
        assert (c.rope_type, c.mrope_section, c.mrope_interleaved) == ("default", (16, 24, 24), False)
    bare = rr.from_hf_config({"model_type": "qwen2_vl", "head_dim": 128, "rope_scaling": {"type": "mrope"}})
    assert bare.mrope_section == (16, 24, 24)                      # the family's default sections
    q35 = rr.from_hf_config({"model_type": "qwen3_5_text", "hidden_size": 4096, "num_attention_heads": 16})
    assert (q35.head_dim, q35.rotary_dim, q35.mrope_section, q35.mrope_interleaved) == (256, 64, (11, 11, 10), True)
    generic = rr.from_hf_config({"model_type": "my_vlm", "head_dim": 64, "rope_parameters": {
        "rope_type": "default", "mrope_section": [12, 10, 10], "mrope_interleaved": True}}, pairing="half")
    assert generic.mrope_interleaved and generic.mrope_section == (12, 10, 10)
