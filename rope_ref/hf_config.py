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
from .core import rotate
from .scaling import CONFIG_KEYS, OPTIONAL, REQUIRED, ROPE_TYPES, scaled_inv_freq


@dataclass(frozen=True)
class _Family:
    pairing: str | None            # None: read from the config (DeepSeek-V3's rope_interleave)
    rope_theta: float = 10000.0    # the config class's default
    partial_rotary_factor: float = 1.0
    head_dim: int | None = None    # the config class's default head_dim, when the config has none


#: model_type -> pairing and defaults, as transformers v5 implements each family:
#: "half" = rotate_half (x_i, x_{i+d/2}); "interleaved" = rotate_every_two / repeat_interleave (x_2i, x_2i+1).
FAMILIES = {
    "llama": _Family("half"),
    "mistral": _Family("half"),
    "mixtral": _Family("half", rope_theta=1e6),
    "qwen2": _Family("half"),
    "qwen3": _Family("half", head_dim=128),
    "gemma": _Family("half", head_dim=256),
    "gemma2": _Family("half", head_dim=256),
    "gpt_neox": _Family("half", partial_rotary_factor=0.25),   # rotary_pct, rotary_emb_base in old configs
    "phi": _Family("half", partial_rotary_factor=0.5),
    "phi3": _Family("half"),
    "stablelm": _Family("half", partial_rotary_factor=0.25),
    "falcon": _Family("half"),
    "olmo": _Family("half"),
    "persimmon": _Family("half", partial_rotary_factor=0.5),
    "starcoder2": _Family("half"),
    "gptj": _Family("interleaved"),                            # rotary_dim (default 64), base fixed at 10^4
    "cohere": _Family("interleaved", rope_theta=500000.0),
    "glm": _Family("interleaved", partial_rotary_factor=0.5, head_dim=128),
    "deepseek_v3": _Family(None),                              # rope_interleave (default True)
}
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

    def inv_freq(self, seq_len=None) -> np.ndarray:
        """Per-pair frequencies ``(rotary_dim/2,)`` float64 at the current length ``seq_len``."""
        return scaled_inv_freq(self.rotary_dim, self.base, rope_type=self.rope_type, seq_len=seq_len,
                               **self.params)[0]

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
            y[..., :self.rotary_dim] *= np.asarray(att, dtype=y.dtype)
        return y


def from_hf_config(config, *, pairing=None) -> RopeConfig:
    """Read a model's RoPE from its Hugging Face config: a dict, or the path of a ``config.json``.

    Reads the transformers v5 layout (``rope_parameters``) and the v4 one
    (``rope_theta`` plus ``rope_scaling`` with ``rope_type`` or ``type``); ``head_dim``, or
    ``hidden_size / num_attention_heads`` (``n_embd / n_head`` for GPT-J); the rotated
    part from ``partial_rotary_factor``, ``rotary_pct`` (GPT-NeoX) or ``rotary_dim``
    (GPT-J); the pairing from ``model_type`` (see :data:`FAMILIES`; ``pairing=``
    overrides it, and lets an unknown ``model_type`` through with generic defaults).
    Defaults a config leaves out are those of the family's transformers v5 config class.

    DeepSeek-V3 rotates only its ``qk_rope_head_dim`` (64) features, the last ones of each
    query head, so ``head_dim`` here is that part.  With ``rope_interleave`` (its default)
    the model rotates interleaved pairs and writes the result in half layout:
    ``rope_ref.to_half(cfg.rotate(x))`` is the model's output.
    """
    cfg = _load(config)
    model_type = cfg.get("model_type")
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

    head_dim = _head_dim(cfg, model_type, family)
    rope = _rope_section(cfg)
    old_name = rope.pop("type", None)
    rope_type = rope.pop("rope_type", None) or old_name or "default"
    rope_type = _RENAMED_TYPES.get(rope_type, rope_type)
    if rope_type not in ROPE_TYPES or rope_type == "ntk":
        raise ValueError(f"config rope_type={rope_type!r} is not supported; supported: "
                         f"{[t for t in ROPE_TYPES if t != 'ntk']}")
    base = rope.pop("rope_theta", None)
    if base is None:
        base = cfg.get("rope_theta", cfg.get("rotary_emb_base", family.rope_theta))
    if model_type == "gptj":
        base = 10000.0    # create_sinusoidal_positions hard-codes it
    base = val.check_base(base, "rope_theta")

    rotary_dim = _rotary_dim(cfg, rope.pop("partial_rotary_factor", None), model_type, family, head_dim)
    pairing = pairing or family.pairing or _deepseek_pairing(cfg)

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
                      attention_factor=float(attention_factor))


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
    if model_type == "deepseek_v3":
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


def _rope_section(cfg) -> dict:
    """The v5 ``rope_parameters`` or the v4 ``rope_scaling`` (may be null), checked key by key."""
    key = "rope_parameters" if cfg.get("rope_parameters") is not None else "rope_scaling"
    rope = cfg.get(key) or {}
    if not isinstance(rope, Mapping):
        raise TypeError(f"config[{key!r}] must be an object (dict) or null, got {type(rope).__name__}")
    if any(isinstance(v, Mapping) for v in rope.values()):
        raise ValueError(f"config[{key!r}] holds one RoPE per layer type ({sorted(rope)}); "
                         f"pass a config with one of them as {key!r}")
    for k in rope:
        if k not in CONFIG_KEYS and k != "rope_type":
            raise ValueError(f"config[{key!r}] has key {k!r}, which rope_ref does not model"
                             f"{val.closest_name(k, CONFIG_KEYS)}; known keys: {sorted(CONFIG_KEYS + ('rope_type',))}")
    return dict(rope)


def _rotary_dim(cfg, section_factor, model_type, family, head_dim) -> int:
    if model_type == "gptj":
        r = cfg.get("rotary_dim", 64)
        return head_dim if r is None else val.check_rotary_dim(r, head_dim)
    factor = section_factor
    for key in ("partial_rotary_factor", "rotary_pct"):
        if factor is None:
            factor = cfg.get(key)
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
