"""A model's RoPE from its Hugging Face ``config.json``: ``from_hf_config(config) -> RopeConfig``.

``RopeConfig`` holds what the model's rotary embedding does -- features per head,
rotated features, pairing, base, context-extension method and its parameters,
attention factor -- and ``RopeConfig.rotate`` applies it as the model does.  The
pairing, defaults and key names of each family were read from transformers v5
(``models/<family>/modeling_<family>.py`` and ``configuration_<family>.py``); the
recorded outputs of those modules in tests/data check them.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from . import _validate as val
from .forms import rotate
from .scaling import CONFIG_KEYS, OPTIONAL, REQUIRED, ROPE_TYPES, scaled_inv_freq


@dataclass(frozen=True)
class _Family:
    pairing: str | None            # None: read from the config (DeepSeek-V3's rope_interleave)
    rope_theta: float = 10000.0    # the config class's default
    partial_rotary_factor: float = 1.0
    head_dim: int | None = None    # the config class's default head_dim, when the config has none
    rope: Mapping | None = None    # the config class's default rope section, used when the config has none
                                   # (with its rope_theta, if it has one, over a top-level rope_theta)
    layers: Mapping | None = None  # one RoPE per layer type: layer type -> (theta key, default theta, scaled?)


_GEMMA3_LAYERS = {"full_attention": ("rope_theta", 1e6, True), "sliding_attention": ("rope_local_base_freq", 1e4, False)}

#: model_type -> pairing and defaults, as transformers v5 implements each family:
#: "half" = rotate_half (x_i, x_{i+d/2}); "interleaved" = rotate_every_two / repeat_interleave / complex
#: multiplication of (x_2i, x_2i+1).  Families marked "NoPE layers" apply this RoPE on some layers only.
FAMILIES = {
    "llama": _Family("half"),
    "mistral": _Family("half"),
    "ministral": _Family("half"),
    "mixtral": _Family("half", rope_theta=1e6),
    "qwen2": _Family("half"),
    "qwen2_moe": _Family("half"),
    "qwen3": _Family("half", head_dim=128),
    "qwen3_moe": _Family("half"),
    "qwen3_next": _Family("half", partial_rotary_factor=0.25, head_dim=256),
    "gemma": _Family("half", head_dim=256),
    "gemma2": _Family("half", head_dim=256),
    "gemma3_text": _Family("half", head_dim=256, layers=_GEMMA3_LAYERS),   # one RoPE per layer type
    "vaultgemma": _Family("half", head_dim=256),
    "gpt_neox": _Family("half", partial_rotary_factor=0.25),   # rotary_pct, rotary_emb_base in old configs
    "gpt_neox_japanese": _Family("half"),                      # rotary_pct, rotary_emb_base in old configs
    "phi": _Family("half", partial_rotary_factor=0.5),
    "phi3": _Family("half"),
    "stablelm": _Family("half", partial_rotary_factor=0.25),
    "falcon": _Family("half"),
    "olmo": _Family("half"),
    "olmo2": _Family("half"),
    "olmo3": _Family("half", rope_theta=500000.0),             # one RoPE per layer type (rope_parameters)
    "olmoe": _Family("half"),
    "flex_olmo": _Family("half", rope_theta=500000.0),
    "persimmon": _Family("half", partial_rotary_factor=0.5),
    "starcoder2": _Family("half"),
    "granite": _Family("half"),
    "granitemoe": _Family("half"),
    "granitemoeshared": _Family("half"),
    "granitemoehybrid": _Family("half"),                       # RoPE only with position_embedding_type "rope"
    "nemotron": _Family("half", partial_rotary_factor=0.5),
    "exaone4": _Family("half"),                                # NoPE layers: full attention, with sliding_window
    "smollm3": _Family("half", rope_theta=2e6),                # NoPE layers: no_rope_layers (0 = NoPE)
    "gpt_oss": _Family("half", rope_theta=150000.0, head_dim=64,
                       rope={"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                             "truncate": False, "original_max_position_embeddings": 4096}),
    "apertus": _Family("half", rope_theta=12e6,
                       rope={"rope_type": "llama3", "rope_theta": 12e6, "factor": 8.0, "original_max_position_embeddings": 8192,
                             "low_freq_factor": 1.0, "high_freq_factor": 4.0}),
    "arcee": _Family("half"),
    "bitnet": _Family("half", rope_theta=500000.0),
    "dots1": _Family("half"),
    "seed_oss": _Family("half", head_dim=128),
    "solar_open": _Family("half", rope_theta=1e6, head_dim=128),
    "hunyuan_v1_dense": _Family("half"),                       # "dynamic" with alpha is static NTK (ntk, factor=alpha)
    "hunyuan_v1_moe": _Family("half"),
    "phimoe": _Family("half", rope_theta=1e6),
    "minimax_m2": _Family("half", rope_theta=5e6, head_dim=128),   # rotary_dim / head_dim in released configs
    "lfm2": _Family("half", rope_theta=1e6),
    "lfm2_moe": _Family("half", rope_theta=1e6),
    "falcon_h1": _Family("half"),
    "cwm": _Family("half", rope_theta=1e6, head_dim=128,
                   rope={"rope_type": "llama3", "rope_theta": 1e6, "factor": 16.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                         "original_max_position_embeddings": 8192}),
    "jais2": _Family("half"),
    "hyperclovax": _Family("half"),
    "diffllama": _Family("half"),
    "doge": _Family("half"),
    "exaone_moe": _Family("half"),                             # NoPE layers: full attention, with sliding_window
    "afmoe": _Family("half", head_dim=128),                    # NoPE layers: full attention
    "gptj": _Family("interleaved"),                            # rotary_dim (default 64), base fixed at 10^4
    "codegen": _Family("interleaved"),                         # as gptj
    "cohere": _Family("interleaved", rope_theta=500000.0),
    "cohere2": _Family("interleaved"),                         # NoPE layers: full attention
    "helium": _Family("interleaved", rope_theta=100000.0, head_dim=128),
    "ernie4_5": _Family("interleaved", rope_theta=500000.0, head_dim=128),
    "ernie4_5_moe": _Family("interleaved", rope_theta=500000.0),
    "glm": _Family("interleaved", partial_rotary_factor=0.5, head_dim=128),
    "glm4": _Family("interleaved", partial_rotary_factor=0.5, head_dim=128),
    "glm4_moe": _Family("half", partial_rotary_factor=0.5),      # GLM-4.5: rotate_half, unlike glm and glm4
    "llama4_text": _Family("interleaved", rope_theta=500000.0, head_dim=128),  # NoPE layers: no_rope_layers (0 = NoPE)
    "deepseek_v2": _Family("interleaved"),                     # qk_rope_head_dim; output stays interleaved
    "deepseek_v3": _Family(None),                              # rope_interleave (default True)
}
_SINUSOIDAL = ("gptj", "codegen")     # create_sinusoidal_positions: rotary_dim, base 10^4
_ROPE_HEAD = ("deepseek_v2", "deepseek_v3")   # head_dim is qk_rope_head_dim (default 64)
_RENAMED_TYPES = {"su": "longrope"}   # Phi-3's first name for LongRoPE


@dataclass(frozen=True)
class RopeConfig:
    """A model's rotary embedding, as :func:`from_hf_config` reads it from the model's config."""

    model_type: str | None
    head_dim: int            # features per head
    rotary_dim: int          # rotated features (the first rotary_dim of each head), even
    pairing: str             # "half" or "interleaved"
    base: float              # rope_theta
    rope_type: str           # one of rope_ref.ROPE_TYPES
    params: Mapping = field(default_factory=dict)   # scaling parameters, as scaled_inv_freq names them
    attention_factor: float = 1.0                    # multiplies cos and sin (yarn, longrope)
    output_pairing: str | None = None                # None: each pair written back in place; "half":
    # DeepSeek-V3 (rope_interleave) rotates interleaved pairs and writes them in half layout, so the
    # model's output is rope_ref.to_half(cfg.rotate(x)); assert_rope_matches(config=...) expects that

    @val.suggest_keywords
    def inv_freq(self, seq_len=None) -> np.ndarray:
        """Per-pair frequencies ``(rotary_dim/2,)`` float64 at the current length ``seq_len``."""
        return scaled_inv_freq(self.rotary_dim, self.base, rope_type=self.rope_type, seq_len=seq_len,
                               **self.params)[0]

    @val.suggest_keywords
    def rotate(self, x, positions=None, seq_len=None) -> np.ndarray:
        """RoPE as the model applies it: ``x`` ``(..., seq, head_dim)`` -> same shape and dtype.

        ``positions`` broadcastable to ``x.shape[:-1]`` (default ``arange(seq)``).  The
        first ``rotary_dim`` features are rotated (RoFormer eq 34) and multiplied by the
        attention factor; the rest pass through.  ``seq_len`` (dynamic, longrope) defaults to
        ``max(positions) + 1``, the length transformers uses.
        """
        x = val.check_x(x)
        if x.shape[-1] != self.head_dim:
            raise ValueError(f"x.shape[-1] must be head_dim={self.head_dim}, got {x.shape[-1]}")
        pos = val.check_positions(positions, x.shape[:-1])
        if seq_len is None and self.rope_type in ("dynamic", "longrope"):
            seq_len = int(np.max(pos, initial=0)) + 1
        freqs, att = scaled_inv_freq(self.rotary_dim, self.base, rope_type=self.rope_type, seq_len=seq_len,
                                     **self.params)
        y = rotate(x, pos, pairing=self.pairing, rotary_dim=self.rotary_dim, inv_freq=freqs)
        if att != 1.0:
            with np.errstate(over="ignore"):                 # reported below as a ValueError
                y[..., :self.rotary_dim] *= np.asarray(att, dtype=y.dtype)
            val.check_no_overflow(y, x, expected=f"x times the attention factor {att:.5g} to stay within "
                                  f"{np.dtype(y.dtype).name}")
        return y


@val.suggest_keywords
def from_hf_config(config, *, pairing=None, layer_type=None) -> RopeConfig:
    """Read a model's RoPE from its Hugging Face config: a dict, or the path of a ``config.json``.

    Reads the transformers v5 layout (``rope_parameters``) and the v4 one
    (``rope_theta`` plus ``rope_scaling`` with ``rope_type`` or ``type``); ``head_dim``, or
    ``hidden_size / num_attention_heads`` (``n_embd / n_head`` for GPT-J and CodeGen); the rotated
    part from ``partial_rotary_factor``, ``rotary_pct`` (GPT-NeoX) or ``rotary_dim``
    (GPT-J, CodeGen); the pairing from ``model_type`` (see :data:`FAMILIES`; ``pairing=``
    overrides it, and lets an unknown ``model_type`` through with generic defaults).
    Defaults a config leaves out are those of the family's transformers v5 config class
    (including its default rope section: yarn for gpt_oss, llama3 for apertus and cwm; MiniMax-M2's
    ``rotary_dim`` is its partial_rotary_factor times head_dim).

    Families (transformers v5 ``model_type``), rotate_half pairs (x_i, x_{i+d/2}): llama, mistral,
    ministral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, qwen3_next, gemma, gemma2, gemma3_text,
    vaultgemma, gpt_neox, gpt_neox_japanese, phi, phi3, phimoe, stablelm, falcon, olmo, olmo2, olmo3,
    olmoe, flex_olmo, persimmon, starcoder2, granite, granitemoe, granitemoeshared, granitemoehybrid
    (with ``position_embedding_type`` "rope"), nemotron, exaone4,
    smollm3, gpt_oss, apertus, arcee, bitnet, dots1, seed_oss, solar_open, hunyuan_v1_dense,
    hunyuan_v1_moe, glm4_moe, minimax_m2, lfm2, lfm2_moe, falcon_h1, cwm, jais2, hyperclovax,
    diffllama, doge, exaone_moe, afmoe; interleaved pairs (x_2i, x_2i+1): gptj, codegen, cohere, cohere2,
    helium, ernie4_5, ernie4_5_moe, glm, glm4, llama4_text, deepseek_v2; deepseek_v3 by its flag.
    A multimodal config with a ``text_config`` (mistral3, llava, gemma3, llama4, ...) is read
    from that text_config.  Refused with a ValueError saying why: multimodal RoPE
    (``mrope_section``), an unknown ``model_type`` without ``pairing=``, and scaling a family
    applies differently (e.g. PhiMoE's other than longrope).

    ``layer_type``: a config with one RoPE per layer type (gemma3_text: ``full_attention`` with
    ``rope_theta`` and ``rope_scaling``, ``sliding_attention`` with ``rope_local_base_freq``; or any
    v5 config whose ``rope_parameters`` is keyed by layer type, e.g. olmo3) needs it, and it
    chooses that RoPE; elsewhere it is an error.  Some families apply RoPE on some layers only
    (NoPE layers: cohere2 and afmoe, and exaone4 and exaone_moe with a sliding window, rotate only
    in their sliding-window layers, llama4 and smollm3 only where ``no_rope_layers`` is 1);
    ``rotate`` is what the rotating layers do.

    DeepSeek-V3 rotates only its ``qk_rope_head_dim`` (64) features, the last ones of each
    query head, so ``head_dim`` here is that part (as for DeepSeek-V2, which writes its output
    interleaved).  With ``rope_interleave`` (its default) DeepSeek-V3 rotates interleaved pairs
    and writes the result in half layout: ``rope_ref.to_half(cfg.rotate(x))`` is the model's output.
    HunYuan's ``"dynamic"`` with ``alpha`` is static NTK (``rope_type`` ``"ntk"``, factor alpha).
    """
    cfg = _load(config)
    model_type = cfg.get("model_type")
    if model_type is not None and not isinstance(model_type, str):
        raise TypeError(f"config['model_type'] must be a string (e.g. 'llama'), got {model_type!r} of type "
                        f"{type(model_type).__name__}")
    if model_type not in FAMILIES and isinstance(cfg.get("text_config"), Mapping) \
            and not any(cfg.get(k) for k in ("rope_parameters", "rope_scaling", "rope_theta")):
        # a multimodal wrapper (mistral3, llava, gemma3, ...): the language model is its text_config
        return from_hf_config(cfg["text_config"], pairing=pairing, layer_type=layer_type)
    _refuse_mrope(cfg)
    if pairing is not None:
        pairing = val.check_pairing(pairing)
    family = FAMILIES.get(model_type)
    if family is None:
        if pairing is None:
            what = "has no 'model_type'" if model_type is None else f"has model_type={model_type!r}, not a known family"
            raise ValueError(f"config {what}; known model_type values: {sorted(FAMILIES)}"
                             f"{val.closest_name(model_type, FAMILIES) if model_type else ''}. "
                             "Pass pairing='half' or 'interleaved' to read it anyway")
        family = _Family(pairing)
    if model_type == "falcon" and cfg.get("alibi"):
        raise ValueError("config has model_type='falcon' with alibi=True: that model uses ALiBi, not RoPE")
    if model_type == "granitemoehybrid" and cfg.get("position_embedding_type") != "rope":
        raise ValueError(f"config has model_type='granitemoehybrid' with position_embedding_type="
                         f"{cfg.get('position_embedding_type')!r}: that model applies no RoPE (only 'rope' does)")

    head_dim = _head_dim(cfg, model_type, family)
    rope = _rope_section(cfg, layer_type, family)
    old_name = rope.pop("type", None)
    rope_type = rope.pop("rope_type", None) or old_name or "default"
    rope_type = _RENAMED_TYPES.get(rope_type, rope_type)
    if rope_type not in ROPE_TYPES or rope_type == "ntk":    # transformers has no "ntk" rope_type
        raise ValueError(f"config rope_type={rope_type!r} is not supported; supported: "
                         f"{[t for t in ROPE_TYPES if t != 'ntk']}")
    alpha = rope.pop("alpha", None)
    if alpha is not None and model_type not in ("hunyuan_v1_dense", "hunyuan_v1_moe"):
        raise ValueError(f"config rope section has key 'alpha', which only HunYuan's RoPE uses; this config has "
                         f"model_type={model_type!r}")
    if alpha and rope_type == "dynamic":   # HunYuan: a fixed alpha makes it static NTK, base * alpha^(d/(d-2))
        rope_type, rope["factor"] = "ntk", alpha
    if model_type == "phimoe" and rope_type != "default":
        # transformers' PhiMoE computes its frequencies without the current length (so always with short_factor)
        # and scales cos and sin by short_mscale or long_mscale (by length): one RopeConfig when they are equal.
        mscales = rope.get("short_mscale"), rope.get("long_mscale")
        if rope_type != "longrope" or None in mscales or mscales[0] != mscales[1]:
            raise ValueError(f"config has model_type='phimoe' with rope_type={rope_type!r}, short_mscale={mscales[0]} "
                             f"and long_mscale={mscales[1]}: rope_ref models PhiMoE's longrope only with "
                             "short_mscale == long_mscale (transformers' PhiMoE fails without them)")
        rope.update(long_factor=rope.get("short_factor"), attention_factor=mscales[0])
    base = rope.pop("rope_theta", None)
    if base is None:
        base = cfg.get("rope_theta", cfg.get("rotary_emb_base", family.rope_theta))
    if model_type in _SINUSOIDAL:
        base = 10000.0    # create_sinusoidal_positions hard-codes it
    base = val.check_base(base, "rope_theta")

    rotary_dim = _rotary_dim(cfg, rope.pop("partial_rotary_factor", None), model_type, family, head_dim)
    output_pairing = None
    if pairing is None and family.pairing is None:       # deepseek_v3: by its rope_interleave flag
        pairing = _deepseek_pairing(cfg)
        if pairing == "interleaved":
            output_pairing = "half"      # apply_rotary_pos_emb_interleave: interleaved in, half layout out
    pairing = pairing or family.pairing

    # transformers v5 (standardize_rope_params): the training length of llama3/yarn/longrope is a
    # top-level original_max_position_embeddings when there is one (Phi-3), else the rope section's,
    # else max_position_embeddings.
    max_pos = cfg.get("max_position_embeddings", cfg.get("n_positions"))
    if rope_type in ("llama3", "yarn", "longrope"):
        if cfg.get("original_max_position_embeddings") is not None:
            rope["original_max_position_embeddings"] = cfg["original_max_position_embeddings"]
        elif rope.get("original_max_position_embeddings") is None and max_pos is not None:
            rope["original_max_position_embeddings"] = max_pos
    if max_pos is not None:
        rope["max_position_embeddings"] = max_pos
    used = {k for req in REQUIRED[rope_type] for k in req.split(" | ")} | set(OPTIONAL[rope_type])
    params = {k: _plain(v) for k, v in rope.items() if k in used and v is not None}
    _, attention_factor = scaled_inv_freq(rotary_dim, base, rope_type=rope_type, **params)   # validates
    return RopeConfig(model_type=model_type, head_dim=head_dim, rotary_dim=rotary_dim, pairing=pairing,
                      base=base, rope_type=rope_type, params=MappingProxyType(params),
                      attention_factor=float(attention_factor), output_pairing=output_pairing)


def _load(config) -> dict:
    if isinstance(config, (str, os.PathLike)):
        path = os.fspath(config)
        if not os.path.isfile(path):
            raise ValueError(f"config: no file at {path!r}; pass a config.json path or a dict")
        try:
            with open(path, encoding="utf-8") as f:
                config = json.load(f)
        except json.JSONDecodeError as err:
            raise ValueError(f"config: {path!r} is not valid JSON ({err})") from None
        if not isinstance(config, Mapping):
            raise ValueError(f"config: {path!r} holds a JSON {type(config).__name__}, expected an object")
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a dict or the path of a config.json, got {type(config).__name__}")
    return dict(config)


def _positive_int(cfg, key, why):
    if cfg.get(key) is None:
        raise ValueError(f"config is missing {key!r} ({why})")
    return val.check_positive_int(cfg[key], f"config[{key!r}]")


def _head_dim(cfg, model_type, family) -> int:
    if model_type in _ROPE_HEAD:
        return val.check_positive_int(cfg.get("qk_rope_head_dim", 64), "config['qk_rope_head_dim']")
    if cfg.get("head_dim") is not None and model_type != "falcon":   # Falcon's head_dim is always derived
        return val.check_positive_int(cfg["head_dim"], "config['head_dim']")
    if family.head_dim is not None:
        return family.head_dim
    hidden_key = "n_embd" if "n_embd" in cfg and "hidden_size" not in cfg else "hidden_size"
    heads_key = "n_head" if "n_head" in cfg and "num_attention_heads" not in cfg else "num_attention_heads"
    why = "head_dim is hidden_size / num_attention_heads when the config has no head_dim"
    hidden, heads = _positive_int(cfg, hidden_key, why), _positive_int(cfg, heads_key, why)
    if hidden % heads:
        raise ValueError(f"config: {hidden_key}={hidden} is not divisible by {heads_key}={heads}")
    return hidden // heads


def _rope_section(cfg, layer_type, family) -> dict:
    """The v5 ``rope_parameters`` or the v4 ``rope_scaling`` (may be null), checked key by key;
    for a family with one RoPE per layer type (gemma3, olmo3, ...), the one of ``layer_type``."""
    key = "rope_parameters" if cfg.get("rope_parameters") is not None else "rope_scaling"
    rope = cfg.get(key)
    if rope is None and family.rope is not None:
        rope = dict(family.rope)
    rope = rope or {}
    if not isinstance(rope, Mapping):
        raise TypeError(f"config[{key!r}] must be an object (dict) or null, got {type(rope).__name__}")
    nested = sorted(k for k, v in rope.items() if isinstance(v, Mapping))
    if family.layers is not None and not nested:       # v4 layout of gemma3: rope_local_base_freq, ...
        nested = sorted(family.layers)
        rope = {lt: dict(rope if scaled else {}, rope_theta=cfg.get(k, theta))
                for lt, (k, theta, scaled) in family.layers.items()}
    if nested:
        if layer_type not in nested:
            given = "no layer_type" if layer_type is None else f"layer_type={layer_type!r}"
            raise ValueError(f"config holds one RoPE per layer type ({nested}), so the layers of this model do not "
                             f"share one RoPE; got {given}. Pass layer_type= one of {nested} to read the RoPE of "
                             "those layers (config['layer_types'] says which layers are which)")
        rope = rope[layer_type]
    elif layer_type is not None:
        raise ValueError(f"layer_type={layer_type!r} was given, but the config has one RoPE for every layer; "
                         "layer_type is only for configs with one RoPE per layer type")
    for k in rope:
        if k not in CONFIG_KEYS and k not in ("rope_type", "alpha"):
            raise ValueError(f"config[{key!r}] has key {k!r}, which rope_ref does not model"
                             f"{val.closest_name(k, CONFIG_KEYS)}; known keys: {sorted(CONFIG_KEYS + ('rope_type',))}")
    return dict(rope)


def _refuse_mrope(cfg):
    for key in ("rope_parameters", "rope_scaling"):
        rope = cfg.get(key)
        if isinstance(rope, Mapping) and ("mrope_section" in rope or rope.get("type") == "mrope"
                                          or rope.get("rope_type") == "mrope"):
            kind = rope.get("rope_type", rope.get("type"))
            raise ValueError(f"config[{key!r}] (rope_type={kind!r}, mrope_section={rope.get('mrope_section')}) is "
                             "multimodal RoPE, Qwen2-VL style: it rotates sections of each head by different position "
                             "ids (time, height, width), which one RopeConfig over positions does not model")


def _rotary_dim(cfg, section_factor, model_type, family, head_dim) -> int:
    if model_type in _SINUSOIDAL:
        r = cfg.get("rotary_dim", 64)
        return head_dim if r is None else val.check_rotary_dim(r, head_dim)
    factor = section_factor
    for key in ("partial_rotary_factor", "rotary_pct"):
        if factor is None:
            factor = cfg.get(key)
    if factor is None and model_type == "minimax_m2" and cfg.get("rotary_dim") is not None:
        factor = val.check_positive_int(cfg["rotary_dim"], "config['rotary_dim']") / head_dim
    if factor is None:
        factor = family.partial_rotary_factor
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0 < factor <= 1:
        raise ValueError(f"config partial_rotary_factor must be a number in (0, 1], got {factor!r}")
    r = int(head_dim * factor)     # as transformers: int(head_dim * partial_rotary_factor)
    if r < 2 or r % 2:
        raise ValueError(f"config: head_dim {head_dim} * partial_rotary_factor {factor} = {r} rotated features; "
                         "expected an even number >= 2")
    return r


def _deepseek_pairing(cfg) -> str:
    flag = cfg.get("rope_interleave", True)
    return "interleaved" if val.check_bool(flag, "config['rope_interleave']") else "half"


def _plain(v):
    """Lists of factors become tuples, so the frozen RopeConfig holds no mutable parameter."""
    return tuple(v) if isinstance(v, list) else v
