"""from_hf_config on malformed configs (issue: configs read safely): each is refused with a ValueError or TypeError
naming the key, or, for an odd but valid value, read into a RopeConfig that rotates to finite numbers.  Never a raw
error (RecursionError, OverflowError, "unhashable type", "truth value of an array"), never a silent wrong answer.

The catalogue is generated: every key a small config of each kind holds (rope_ref reads all of them) set to each
bad value, plus the cases the issue names one by one.
"""

import copy
import json
import warnings

import numpy as np
import pytest

import rope_ref as rr


def _nested(depth, leaf):
    for _ in range(depth):
        leaf = [leaf]
    return leaf


#: configs whose every key rope_ref reads (one per way of writing RoPE; thirteen)
BASES = {
    "llama": {"model_type": "llama", "hidden_size": 256, "num_attention_heads": 4, "rope_theta": 1e4,
              "max_position_embeddings": 4096},
    "yarn": {"model_type": "llama", "head_dim": 64, "rope_theta": 1e4, "rope_scaling": {
        "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 4096, "beta_fast": 32.0,
        "beta_slow": 1.0}},
    "llama3": {"model_type": "llama", "head_dim": 64, "rope_parameters": {
        "rope_type": "llama3", "rope_theta": 5e5, "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192}},
    "longrope": {"model_type": "phi3", "head_dim": 8, "max_position_embeddings": 8192,
                 "original_max_position_embeddings": 4096,
                 "rope_scaling": {"type": "longrope", "short_factor": [1, 1, 1, 1], "long_factor": [2, 2, 2, 2]}},
    "dynamic": {"model_type": "llama", "head_dim": 64, "max_position_embeddings": 2048,
                "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}},
    "partial": {"model_type": "phi", "hidden_size": 256, "num_attention_heads": 4, "partial_rotary_factor": 0.5},
    "gptj": {"model_type": "gptj", "n_embd": 256, "n_head": 4, "rotary_dim": 32, "rope_theta": 1e4},   # theta fixed
    "rotary count": {"model_type": "minimax_m2", "head_dim": 128, "rotary_dim": 64},
    "neox": {"model_type": "gpt_neox", "hidden_size": 256, "num_attention_heads": 4, "rotary_pct": 0.25,
             "rotary_emb_base": 10000},
    "per_layer": {"model_type": "gemma3_text", "head_dim": 64, "rope_parameters": {
        "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6},
        "sliding_attention": {"rope_type": "default", "rope_theta": 1e4}}},
    "mrope": {"model_type": "qwen2_vl", "head_dim": 128, "rope_theta": 1e6,
              "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}},
    "mla": {"model_type": "deepseek_v3", "qk_rope_head_dim": 64, "rope_theta": 1e4, "rope_interleave": True,
            "partial_rotary_factor": 1.0,
            "rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096, "mscale": 1.0,
                             "mscale_all_dim": 1.0, "beta_fast": 32, "beta_slow": 1}},
    "wrapper": {"model_type": "llava", "text_config": {"model_type": "llama", "head_dim": 64, "rope_theta": 1e4}},
}

#: bad values a key may hold because rope_ref does not read it there: a wrapper's own model_type names the wrapper
UNREAD = {("wrapper", ("model_type",)): {"str", "number as string"}}

#: values no key rope_ref reads accepts
REFUSED = {"str": "x", "number as string": "10000", "nan": float("nan"), "inf": float("inf"), "-inf": float("-inf"),
           "list": [1, 2], "object": {"a": 1}, "bytes": b"ab", "python object": object(), "array": np.arange(3),
           "40 deep": _nested(40, 1)}
#: odd values that some keys accept (a null is "not given", 1.5 may be a factor...): refused or read, never raw
ODD = {"null": None, "true": True, "-1": -1, "0": 0, "1.5": 1.5, "1e308": 1e308, "1e-300": 1e-300, "2**70": 2 ** 70,
       "np.int64": np.int64(64), "np.float64": np.float64(2.0), "[]": [], "{}": {}}


def _paths(config, prefix=()):
    for key, value in config.items():
        yield prefix + (key,)
        if isinstance(value, dict):
            yield from _paths(value, prefix + (key,))


def _with(base, path, value):
    config = copy.deepcopy(BASES[base])
    inner = config
    for key in path[:-1]:
        inner = inner[key]
    inner[path[-1]] = value
    return config


CASES = [(base, path) for base in BASES for path in _paths(BASES[base])]


def _named(message, path):
    """The message names the key (or, for a key inside a section, the section), with config."""
    return "config" in message and any(repr(key) in message or f"{key}=" in message or f"{key} " in message
                                       for key in path)


def _layer_type(base, path=()):
    """The layer type whose RoPE a per-layer config is read for: the one whose section holds the key."""
    return ("sliding_attention" if "sliding_attention" in path else "full_attention") if base == "per_layer" else None


def test_the_bases_are_read():
    for base in BASES:
        assert rr.from_hf_config(BASES[base], layer_type=_layer_type(base)).rotary_dim > 0


@pytest.mark.parametrize("base,path", CASES, ids=[f"{b}:{'.'.join(p)}" for b, p in CASES])
def test_malformed_values_are_refused_naming_the_key(base, path):
    for what, value in REFUSED.items():
        if what in UNREAD.get((base, path), ()):
            continue
        with pytest.raises((ValueError, TypeError)) as info:
            rr.from_hf_config(_with(base, path, value), layer_type=_layer_type(base, path))
        assert _named(str(info.value), path), (what, str(info.value))


@pytest.mark.parametrize("base,path", CASES, ids=[f"{b}:{'.'.join(p)}" for b, p in CASES])
def test_odd_values_are_refused_or_read(base, path):
    for what, value in ODD.items():
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                cfg = rr.from_hf_config(_with(base, path, value), layer_type=_layer_type(base, path))
        except (ValueError, TypeError) as err:
            assert "config" in str(err), (what, str(err))
            continue
        pos = None if cfg.axes is None else np.zeros((3, 2), int)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", rr.RopeRefPrecisionWarning)      # rope_theta 1e-300: huge angles
            assert np.all(np.isfinite(cfg.rotate(np.ones((2, cfg.head_dim)), pos))), what


# ---- the cases the issue names ----------------------------------------------------------------------------

GEMMA3 = BASES["per_layer"]
ISSUE = [
    ("a rope_theta no layer reads", dict(GEMMA3, rope_theta=5.0), {"layer_type": "full_attention"},
     ValueError, ["config['rope_theta']=5.0", "every section", "no layer would read it"]),
    ("a section's rope_theta beside another", dict(BASES["yarn"], rope_theta=5e5,
                                                  rope_scaling=dict(BASES["yarn"]["rope_scaling"], rope_theta=1e4)),
     {}, ValueError, ["config['rope_theta']=500000.0", "disagrees", "rope_scaling"]),
    ("a layer entry that is not a section",
     dict(GEMMA3, rope_parameters=dict(GEMMA3["rope_parameters"], sliding_attention=5)),
     {"layer_type": "full_attention"}, ValueError, ["['sliding_attention']", "must be a section", "got 5"]),
    ("type and rope_type disagree",
     dict(BASES["yarn"], rope_scaling=dict(BASES["yarn"]["rope_scaling"], type="linear")), {}, ValueError,
     ["rope_type='yarn'", "type='linear'", "disagree"]),
    ("an MLA share that is NaN", {"model_type": "deepseek_v3", "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
                                  "partial_rotary_factor": float("nan")}, {}, ValueError,
     ["config partial_rotary_factor must be a number in (0, 1], got nan"]),
    ("an MLA share that is infinite", {"model_type": "deepseek_v3", "qk_rope_head_dim": 64, "qk_nope_head_dim": 128,
                                       "partial_rotary_factor": float("inf")}, {}, ValueError,
     ["config partial_rotary_factor must be a number in (0, 1], got inf"]),
    ("layer_type a list", GEMMA3, {"layer_type": ["full_attention"]}, TypeError, ["layer_type", "list"]),
    ("head_dim 2**62", {"model_type": "llama", "head_dim": 2 ** 62}, {}, ValueError,
     ["config's head_dim", "above the limit"]),
    ("hidden_size / heads 2**62", {"model_type": "llama", "hidden_size": 2 ** 63, "num_attention_heads": 2}, {},
     ValueError, ["config's head_dim", "2305843009213693952 float64 frequencies", "above the limit"]),
    ("yarn trained on 1 position", dict(BASES["yarn"], rope_scaling=dict(BASES["yarn"]["rope_scaling"],
                                                                         original_max_position_embeddings=1)),
     {}, ValueError, ["original_max_position_embeddings=1", "backwards", "2 pi beta_slow = 6.283"]),
    ("M-RoPE sections assumed", {"model_type": "qwen2_vl", "head_dim": 16, "rope_scaling": {"type": "mrope"}}, {},
     ValueError, ["with the family's default mrope_section [16, 24, 24], as the config has none", "sum"]),
    ("a wrapper's own rope section, empty", dict(BASES["wrapper"], rope_scaling=[]), {}, ValueError,
     ["config has model_type='llava'"]),      # read as the wrapper's own RoPE, not skipped for its text_config
    ("a config containing itself deep inside", None, {}, ValueError, ["config['rope_scaling']['a']", "cycle"]),
]
_cyclic = {"model_type": "llama", "head_dim": 64, "rope_scaling": {"rope_type": "default"}}
_cyclic["rope_scaling"]["a"] = _cyclic["rope_scaling"]
ISSUE[-1] = ISSUE[-1][:1] + (_cyclic,) + ISSUE[-1][2:]


@pytest.mark.parametrize("what,config,kw,exc,words", ISSUE, ids=[case[0] for case in ISSUE])
def test_the_issues_cases_are_named(what, config, kw, exc, words):
    with pytest.raises(exc) as info:
        rr.from_hf_config(config, **kw)
    assert all(w in str(info.value) for w in words), str(info.value)


def test_what_was_assumed_is_said():
    """A config without M-RoPE sections (or without a rope section at all) is read with its family's defaults, as
    transformers reads it; the RopeConfig says so in ``assumed`` (an error after it, in its message, above)."""
    qwen = rr.from_hf_config({"model_type": "qwen2_vl", "head_dim": 128, "rope_scaling": {"type": "mrope"}})
    assert qwen.mrope_section == (16, 24, 24)
    assert qwen.assumed == ("the family's default mrope_section [16, 24, 24]",)
    gpt_oss = rr.from_hf_config({"model_type": "gpt_oss", "head_dim": 64})
    assert gpt_oss.rope_type == "yarn" and gpt_oss.assumed == ("the family's default rope section",)
    assert rr.from_hf_config(BASES["mrope"]).assumed == ()


def test_mrope_and_type_mrope_beside_rope_type_are_read():
    """v4 Qwen2-VL configs write type 'mrope' (transformers later adds rope_type 'default' beside it): one section."""
    both = {"model_type": "qwen2_vl", "head_dim": 128, "rope_scaling": {"type": "mrope", "rope_type": "default",
                                                                      "mrope_section": [16, 24, 24]}}
    assert rr.from_hf_config(dict(both, rope_theta=1e6)) == rr.from_hf_config(BASES["mrope"])


# ---- files ------------------------------------------------------------------------------------------------

LLAMA = {"model_type": "llama", "head_dim": 64, "rope_theta": 1e4}
FILES = [
    ("UTF-16", json.dumps(LLAMA).encode("utf-16"), ["config", "not valid JSON", "UTF-8 text", "'utf-8' codec"]),
    ("nested 200,000 deep", b'{"a": ' + b"[" * 200_000 + b"]" * 200_000 + b"}",
     ["config", "not valid JSON", "nesting", "maximum recursion depth"]),
    ("a 5000-digit integer", b'{"model_type": "llama", "head_dim": ' + b"9" * 5000 + b"}", ["config", "5000 digits"]),
    ("a key twice", b'{"model_type": "llama", "head_dim": 64, "rope_theta": 1e4, "rope_theta": 5e5}',
     ["config", "'rope_theta' appears twice", "10000.0 and 500000.0"]),
    ("nested 40 deep", json.dumps(dict(LLAMA, extra=_nested(40, 1))).encode(), ["config['extra']", "deeper than 32"]),
    ("not JSON", b"{not json", ["config", "not valid JSON"]),
    ("empty", b"", ["config", "not valid JSON"]),
]


@pytest.mark.parametrize("what,content,words", FILES, ids=[f[0] for f in FILES])
def test_unreadable_files_are_named(tmp_path, what, content, words):
    path = tmp_path / "config.json"
    path.write_bytes(content)
    with pytest.raises(ValueError) as info:
        rr.from_hf_config(path)
    assert all(w in str(info.value) for w in words), str(info.value)


def test_the_file_size_is_checked_before_reading(tmp_path, monkeypatch):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA))
    with rr.size_limit(10):
        with pytest.raises(ValueError, match=r"^config: reading .* would take \d+ bytes, above the limit of 10 bytes"):
            rr.from_hf_config(path)
    monkeypatch.setattr("os.path.getsize", lambda p: 2 * 1024 ** 3 + 1)        # a 2 GiB file, without writing one
    monkeypatch.setattr("builtins.open", lambda *a, **k: pytest.fail("the file was opened"))
    with pytest.raises(ValueError, match="above the limit of 2 GiB"):
        rr.from_hf_config(path)
