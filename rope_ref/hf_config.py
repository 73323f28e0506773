"""A model's RoPE from its Hugging Face ``config.json``: ``from_hf_config(config) -> RopeConfig``."""

import reprlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from ._config_file import load_config
from ._validate import (as_given, check_base, check_bool, check_choice, check_fraction, check_length, check_no_overflow,
                        check_pairing, check_positions, check_positive_real, check_rotary_dim, check_x)
from .forms import rotate
from .hf_families import DIFFUSERS_FAMILIES, FAMILIES, Family
from .multiaxis import axial_frequencies, mrope_frequencies
from .scaling import SCALING_METHODS, config_keys, scaled_inv_freq


_SECTIONS = ("rope_parameters", "rope_scaling")   # v5, v4
#: Rope-section keys scaling the queries (attention temperature), not the angles: kept in RopeConfig.query_scaling.
QUERY_SCALING_KEYS = ("llama_4_scaling_beta",)
#: Sizes of the heads or of their rotated part, written in ways rope_ref does not read: refused for unknown families.
_OTHER_HEAD_KEYS = ("qk_nope_head_dim", "kv_channels", "attention_head_dim", "head_size", "d_head", "attn_config")
_OTHER_ROTARY_KEYS = ("rotary_emb_fraction", "rotary_emb_dim", "rope_dim", "rotary_percentage", "rotary_percent",
                      "rope_pct")


@dataclass(frozen=True)
class RopeConfig:
    """A model's rotary embedding, as :func:`from_hf_config` reads it; ``rotate`` applies it as the model does."""

    model_type: str | None
    head_dim: int            # features per head
    rotary_dim: int          # rotated features (the first rotary_dim of each head), even
    pairing: str             # "half" or "interleaved"
    base: float              # rope_theta
    rope_type: str           # one of rope_ref.ROPE_TYPES
    params: Mapping = field(default_factory=dict)   # scaling parameters, as scaled_inv_freq names them
    attention_factor: float = 1.0                    # multiplies cos and sin (yarn, longrope)
    output_pairing: str | None = None                # "half": the model writes rope_ref.to_half(cfg.rotate(x))
    query_scaling: Mapping = field(default_factory=dict)   # keys scaling the queries, not the angles: not applied
    mrope_section: tuple | None = None               # M-RoPE: pairs per axis (temporal, height, width)
    mrope_interleaved: bool | str = False            # M-RoPE layout: True, False (blocks) or a MROPE_LAYOUTS name
    axial_sections: tuple | None = None              # axial RoPE (diffusion transformers): pairs per axis
    clockwise: bool = False                          # NanoChat: every pair turns by -theta_j m (sin's sign flipped)

    @property
    def axes(self) -> int | None:
        """Position axes: 3 for M-RoPE (temporal, height, width), ``A`` for axial RoPE, None for 1-D RoPE."""
        sections = self.mrope_section if self.axial_sections is None else self.axial_sections
        return None if sections is None else len(sections)

    def inv_freq(self, seq_len=None) -> np.ndarray:
        """Per-pair frequencies at the current length ``seq_len``, float64: ``(rotary_dim/2,)``; for M-RoPE and axial
        RoPE ``(rotary_dim/2, axes)``, pair j turning by sum_a F[j, a] p_a (``rope_ref.mrope_frequencies``,
        ``rope_ref.axial_frequencies``).  Negative when ``clockwise``."""
        freqs, _ = scaled_inv_freq(self.rotary_dim, self.base, rope_type=self.rope_type, seq_len=seq_len, **self.params)
        if self.mrope_section is not None:
            sections = mrope_frequencies(self.rotary_dim, self.mrope_section, interleaved=self.mrope_interleaved)
            freqs = (sections != 0) * freqs[:, None]      # pair j's frequency in the column of its axis
        if self.axial_sections is not None:
            freqs = axial_frequencies(self.rotary_dim, base=self.base, sections=self.axial_sections)
        return -freqs if self.clockwise else freqs

    def rotate(self, x, positions=None, seq_len=None) -> np.ndarray:
        """RoPE as the model applies it: ``x`` ``(..., seq, head_dim)`` -> same shape and dtype.

        ``positions`` broadcastable to ``x.shape[:-1]`` (default ``arange(seq)``); for M-RoPE and axial RoPE
        ``(axes, ..., seq)``: transformers' ``position_ids`` (default: text, every axis ``arange(seq)``), or Flux's
        ``img_ids`` transposed.  The first ``rotary_dim`` features are rotated (RoFormer eq 34) and multiplied by the
        attention factor; the rest pass through.  ``seq_len`` (dynamic, longrope) defaults to ``max(positions) + 1``.
        """
        a = check_x(x)
        if a.shape[-1] != self.head_dim:
            raise ValueError(f"x.shape[-1] must be head_dim={self.head_dim}, got {a.shape[-1]}")
        if positions is None and self.axes:
            positions = np.broadcast_to(np.arange(a.shape[-2]) if a.ndim > 1 else 0, (self.axes,) + a.shape[-2:-1])
        pos = check_positions(positions, a.shape[:-1], axes=self.axes)
        if seq_len is None and SCALING_METHODS[self.rope_type].uses_seq_len:
            seq_len = int(np.max(pos, initial=0)) + 1
        y = rotate(a, pos, pairing=self.pairing, rotary_dim=self.rotary_dim, inv_freq=self.inv_freq(seq_len))
        with np.errstate(over="ignore"):                 # reported below as a ValueError
            y[..., :self.rotary_dim] *= np.asarray(self.attention_factor, dtype=y.dtype)
        return as_given(check_no_overflow(y, a, expected=f"x times the attention factor {self.attention_factor:.5g} "
                                          f"within {np.dtype(y.dtype).name}"), x)


def from_hf_config(config, *, pairing=None, layer_type=None) -> RopeConfig:
    """Read a model's RoPE from its Hugging Face config (transformers v5 or v4, or diffusers): a dict, a config
    object with ``to_dict()`` (transformers' PretrainedConfig), or the path of a config.json.

    ``pairing=`` overrides the family's pairing and lets an unknown ``model_type`` through with generic defaults.
    ``layer_type`` chooses the RoPE of a config with one per layer type (gemma3_text, olmo3, ...) or of another
    attention (``"indexer"``: DSA indexers).  docs/model_configs.md describes each case and what is refused.
    """
    if layer_type is not None and not isinstance(layer_type, str):
        raise TypeError(f"layer_type must be None or a string such as 'full_attention', got {reprlib.repr(layer_type)}")
    pairing = None if pairing is None else check_pairing(pairing)
    cfg = load_config(config)
    if "_class_name" in cfg:                                 # a diffusers transformer's config.json
        return _diffusers_rope_config(cfg, pairing, layer_type)
    cfg, path = _text_model_config(cfg)
    model_type = cfg.get("model_type")
    family = _family(cfg, model_type, pairing, path)
    part = (family.parts or {}).get(layer_type)          # another attention's RoPE (DSA indexer)
    layer_type = None if part else layer_type
    head_dim = _head_dim(cfg, family, layer_type)
    where, rope, base = _rope_section(cfg, layer_type, family)
    mrope_section, mrope_interleaved = _mrope(rope, family, where, model_type in FAMILIES)
    query_scaling = {k: rope.pop(k) for k in QUERY_SCALING_KEYS if k in rope}
    query_scaling.update({k: cfg[k] for k in family.query_keys if k in cfg})
    rope_type = _rope_type(rope, family, where)
    rope = {**(family.rope_defaults or {}).get(rope_type, {}), **rope}
    rotary_dim = _rotary_dim(cfg, rope, rope_type, family, head_dim)
    output_pairing = None
    if pairing is None and family.interleave:        # MLA: interleaved pairs in, half layout out, if rope_interleave
        flag = family.interleave == "always" or check_bool(cfg.get("rope_interleave", True), "rope_interleave")
        pairing, output_pairing = ("interleaved", "half") if flag else ("half", None)
    pairing = pairing or family.pairing
    if part:
        head_key, default_head, pairing, output_pairing = part
        head_dim = check_length(cfg.get(head_key, default_head), f"config[{head_key!r}]")
    # transformers v5 (standardize_rope_params): the training length (of the methods reading one) is a top-level
    # original_max_position_embeddings (Phi-3), else the rope section's, else max_position_embeddings
    top = {k: check_length(cfg[k], f"config[{k!r}]")
           for k in family.max_pos_keys + ("original_max_position_embeddings",) if cfg.get(k) is not None}
    max_pos = next((top[k] for k in family.max_pos_keys if k in top), None)
    train = top.get("original_max_position_embeddings", rope.get("original_max_position_embeddings"))
    rope["original_max_position_embeddings"] = max_pos if train is None else train
    if max_pos is not None:
        rope["max_position_embeddings"] = max_pos
    params = SCALING_METHODS[rope_type].params_of(rope)
    try:                                                 # scaled_inv_freq checks the method's keys
        _, attention_factor = scaled_inv_freq(rotary_dim, rope_theta=base, rope_type=rope_type, **params)
        if mrope_section is not None:
            mrope_frequencies(rotary_dim, mrope_section, interleaved=mrope_interleaved)
    except (ValueError, TypeError) as err:
        raise type(err)(f"{where}, with rope_theta {base!r}: {err}") from None
    return RopeConfig(model_type=model_type, head_dim=head_dim, rotary_dim=rotary_dim, base=float(base),
                      rope_type=rope_type, params=MappingProxyType(params), attention_factor=float(attention_factor),
                      pairing=pairing, output_pairing=output_pairing, query_scaling=MappingProxyType(query_scaling),
                      mrope_section=mrope_section, mrope_interleaved=mrope_interleaved, clockwise=family.clockwise)


def _diffusers_rope_config(cfg, pairing, layer_type) -> RopeConfig:
    """The axial RoPE (``RopeConfig.axial_sections``) of a diffusers transformer's config, one with ``_class_name``."""
    name = check_choice(cfg["_class_name"], "config['_class_name']", DIFFUSERS_FAMILIES)
    family = DIFFUSERS_FAMILIES[name]
    if layer_type is not None:
        raise ValueError(f"layer_type={layer_type!r} was given, but {name} has one RoPE for every layer")
    if family.needs and not cfg.get(family.needs):
        raise ValueError(f"config has {family.needs}={cfg.get(family.needs)!r}: {name} then applies no RoPE")
    head_dim = check_length(cfg.get("attention_head_dim", family.head_dim), "config['attention_head_dim']")
    dims = cfg.get(family.axes_key, family.axes_dims) if family.axes_key else family.axes_dims(head_dim)
    if not (isinstance(dims, (list, tuple)) and all(type(n) is int and n > 0 and n % 2 == 0 for n in dims)
            and sum(dims) == head_dim):
        raise ValueError(f"config[{family.axes_key or 'attention_head_dim'!r}]: expected positive even feature dims "
                         f"summing to attention_head_dim = {head_dim}, got {dims!r}")
    base = check_base(cfg.get(family.theta_key, family.theta), f"config[{family.theta_key or 'rope_theta'!r}]")
    return RopeConfig(model_type=name, head_dim=head_dim, rotary_dim=head_dim, pairing=pairing or "interleaved",
                      base=base, rope_type="default", axial_sections=tuple(n // 2 for n in dims))


def _text_model_config(cfg, path="config"):
    """(config, where it is): a multimodal wrapper (mistral3, llava, gemma3, ...) is read from its text_config."""
    for key, kind in (("model_type", str), ("text_config", Mapping), *((k, Mapping) for k in _SECTIONS)):
        if cfg.get(key) is not None and not isinstance(cfg[key], kind):
            raise ValueError(f"{path}[{key!r}] must be a {kind.__name__} or null, got {cfg[key]!r:.80}")
    if cfg.get("text_config") is None or any(cfg.get(k) not in (None, {}) for k in _SECTIONS + ("rope_theta",)):
        return cfg, path
    return _text_model_config(dict(cfg["text_config"]), path + "['text_config']")


def _family(cfg, model_type, pairing, path) -> Family:
    """The model_type's row of FAMILIES (with pairing=, generic defaults for an unknown one), checked to apply RoPE."""
    family = FAMILIES.get(model_type)
    if family is None and pairing is None:
        raise ValueError(f"{path}['model_type'] is {model_type!r}, not a known family; pass pairing= to read it anyway")
    if family is None:
        sized = cfg.get("head_dim") is not None or cfg.get("qk_rope_head_dim") is not None
        unread = [k for k in _OTHER_ROTARY_KEYS + (() if sized else _OTHER_HEAD_KEYS) if cfg.get(k) is not None]
        if unread:
            raise ValueError(f"config has {unread[0]!r}, which rope_ref does not read; give head_dim and rotary_dim")
        family = Family(pairing, rotary_key="rotary_dim")      # a rotary_dim count is read as such
    if family.unsupported:
        raise ValueError(f"config has model_type={model_type!r}: {family.unsupported}")
    for key, value, default in family.needs:            # a missing or null key: the config class's default
        given = default if cfg.get(key) is None else cfg[key]
        if given != value:
            raise ValueError(f"config has {key}={given!r}; {model_type} has RoPE only with {value!r}")
    return family


def _head_dim(cfg, family, layer_type) -> int:
    """Features per head, of layer_type's heads where they differ (Gemma 4); MLA: qk_rope_head_dim, the part rotated."""
    if layer_type in (family.layer_heads or {}):
        key, default = family.layer_heads[layer_type]
        types, per_layer = cfg.get("layer_types"), cfg.get("per_layer_config")
        if cfg.get(key) is None and isinstance(types, tuple) and isinstance(per_layer, Mapping):
            for idx, over in per_layer.items():     # Gemma4TextConfig.to_dict() writes it per layer
                if str(idx).isdigit() and int(idx) < len(types) and types[int(idx)] == layer_type \
                        and isinstance(over, Mapping) and over.get("head_dim") is not None:
                    return check_length(over["head_dim"], f"config['per_layer_config'][{idx!r}]['head_dim']")
        return check_length(default if cfg.get(key) is None else cfg[key], f"config[{key!r}]")
    for key in ("qk_rope_head_dim",) + family.head_keys:
        if cfg.get(key) is not None:
            return check_length(cfg[key], f"config[{key!r}]")
    if family.head_dim is not None:
        return family.head_dim
    keys = [k if k in cfg or alias not in cfg else alias for k, alias in (("hidden_size", "n_embd"),
                                                                         ("num_attention_heads", "n_head"))]
    hidden, heads = (check_length(cfg.get(k), f"config[{k!r}]") for k in keys)
    if hidden % heads:
        raise ValueError(f"config: {keys[0]}={hidden} is not divisible by {keys[1]}={heads}")
    return hidden // heads


def _rope_section(cfg, layer_type, family):
    """(where, section, rope_theta): v5 ``rope_parameters`` or v4 ``rope_scaling`` (agreeing), else the
    family's; ``layer_type``'s of one per layer type.  rope_theta: fixed_theta, else section's, top-level, family's."""
    v5, v4 = cfg.get("rope_parameters"), cfg.get("rope_scaling")
    named = {("rope_type" if k == "type" else k): v for k, v in (v4 or {}).items()}   # v4 may repeat v5's keys
    if v5 is not None and any(v5.get(k, v5.get("type") if k == "rope_type" else None) != v for k, v in named.items()):
        raise ValueError(f"config's rope_parameters {v5} and rope_scaling {v4} disagree; keep one of them")
    key = "rope_parameters" if v5 is not None else "rope_scaling"
    where, defaulted = f"config[{key!r}]", cfg.get(key) is None and family.rope is not None
    rope = dict(family.rope) if defaulted else cfg.get(key) or {}
    nested = sorted(k for k, v in rope.items() if isinstance(v, Mapping))
    strays = [k for k, v in rope.items() if nested and v is not None and not isinstance(v, Mapping)]
    if strays:                                         # one section per layer type: every entry a section (or null)
        raise ValueError(f"{where}[{strays[0]!r}] must be a section (an object) like {nested}, got {rope[strays[0]]!r}")
    top = next((k for k in ("rope_theta", "rotary_emb_base") if cfg.get(k) is not None), None)
    own = [section.get("rope_theta") for section in ([rope[k] for k in nested] or [rope])]
    if not defaulted and top and None not in own and all(theta != cfg[top] for theta in own):
        raise ValueError(f"config[{top!r}]={cfg[top]!r} disagrees with every rope_theta of {where} {own}; keep one")
    built = family.layers is not None and not nested
    if built:                                          # v4 layout of gemma3: rope_local_base_freq, ...
        nested = sorted(family.layers)
        rope = {lt: dict(rope if scaled else {}, rope_theta=cfg.get(k, theta))
                for lt, (k, theta, scaled) in family.layers.items()}
    if layer_type not in (nested or [None]):
        raise ValueError(f"layer_type={layer_type!r}, expected one of {nested or [None]} (the RoPEs the config holds)")
    if nested:
        rope, where = rope[layer_type], f"config[{key!r}][{layer_type!r}]"
    known = config_keys() | {"rope_type", "mrope_section", "mrope_interleaved", *QUERY_SCALING_KEYS, *family.keys}
    unknown = sorted(set(rope) - known)
    if unknown:
        raise ValueError(f"{where} has key {unknown[0]!r}, which rope_ref does not model for this model_type")
    rope = dict(rope)               # rope_theta: the section's, else top-level, else the family's; named where found
    section_key = f"config[{family.layers[layer_type][0]!r}]" if built else f"{where}['rope_theta']"
    found = [(rope.pop("rope_theta", None), section_key), (cfg.get(top), f"config[{top!r}]"),
             (family.rope_theta, "rope_theta")]
    base = check_positive_real(*next((v, name) for v, name in found if v is not None))   # rope_theta = 1: scaling warns
    where += " (the family's default rope section, as the config has none)" if defaulted else ""
    return where, rope, family.fixed_theta or base      # fixed_theta: the code ignores the config's


def _rope_type(rope, family, where) -> str:
    """The registry's name of the section's rope_type (v4: type), as the family's quirk rewrites the section."""
    names = {alias: name for name, method in SCALING_METHODS.items()
             for alias in ((name,) if method.config_names is None else method.config_names)}
    given = {key: rope.pop(key) for key in ("rope_type", "type") if rope.get(key) is not None}
    valid = all(isinstance(v, str) and v in names for v in given.values())
    if not valid or len({names[v] for v in given.values()}) > 1:
        raise ValueError(f"{where} has {given}; expected one rope_type of {sorted(names)}")
    rope_type = names[next(iter(given.values()), "default")]
    return family.quirk(rope, rope_type) if family.quirk else rope_type


def _rotary_dim(cfg, rope, rope_type, family, head_dim) -> int:
    """Rotated features per head: the whole head for a method that turns a share of it itself; all of MLA's
    qk_rope_head_dim; a count (GPT-J's rotary_dim); else int(head_dim * partial_rotary_factor), as transformers."""
    if SCALING_METHODS[rope_type].whole_head:   # frequencies over the whole head, the pairs past the share at 0
        return head_dim
    factor, key = rope.pop("partial_rotary_factor", None), "partial_rotary_factor"   # the section's, else top-level
    if factor is None:
        key = next((k for k in ("partial_rotary_factor", "rotary_pct") if cfg.get(k) is not None), key)
        factor = cfg.get(key)
    factor = None if factor is None else check_fraction(factor, key)
    if cfg.get("qk_rope_head_dim") is not None or "qk_rope_head_dim" in family.head_keys:
        nope = cfg.get("qk_nope_head_dim")              # Mistral 4: qk_nope + qk_rope; dots3: head_dim or qk_head_dim
        widths = [cfg.get("head_dim"), cfg.get("qk_head_dim"), nope + head_dim if isinstance(nope, int) else None]
        if factor not in (None, 1) and not any(isinstance(w, int) and int(w * factor) == head_dim for w in widths):
            raise ValueError(f"config {key}={factor!r} times no head width {widths} gives qk_rope_head_dim={head_dim}")
        return head_dim
    if family.rotary_default is not None or (factor is None and cfg.get(family.rotary_key) is not None):
        return check_rotary_dim(cfg.get(family.rotary_key, family.rotary_default), head_dim,   # GPT-J: None = all
                                f"config[{family.rotary_key!r}]")
    name = f"head_dim {head_dim}" + ("" if factor is None else f" times config {key} {factor!r}")
    factor = family.partial_rotary_factor if factor is None else factor
    return check_rotary_dim(int(head_dim * factor), head_dim, name)


def _mrope(rope, family, where, known):
    """(mrope_section, interleaved) of M-RoPE (v4 ``type: "mrope"``, or ``mrope_section`` beside any rope_type), or
    (None, False), taken out of the rope section; a family whose module applies M-RoPE gives defaults and layout."""
    section, flag = rope.pop("mrope_section", None), rope.pop("mrope_interleaved", None)
    marked = [rope.pop(k) for k in ("rope_type", "type") if rope.get(k) == "mrope"]   # v4: type "mrope"
    if family.mrope is None and (section is None and (marked or flag is not None) or section is not None and known):
        raise ValueError(f"{where}: mrope_section={section!r}; M-RoPE needs one and a model_type that applies it")
    if section is None and family.mrope is None:
        return None, False
    default_section, default_flag = family.mrope or (None, False)
    flag = default_flag if flag is None else check_bool(flag, f"{where}['mrope_interleaved']")
    if flag is not default_flag and family.mrope is not None:
        raise ValueError(f"{where} has mrope_interleaved={flag}; this model_type's module uses {default_flag!r}")
    section = default_section if section is None else section
    if not (isinstance(section, (list, tuple)) and len(section) == 3):       # entries: checked by mrope_frequencies
        raise ValueError(f"{where}['mrope_section'] must be 3 non-negative integers (t, h, w), got {section!r}")
    return tuple(section[i] for i in family.mrope_order), flag
