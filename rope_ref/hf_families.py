"""What each transformers family does with RoPE, as data: ``FAMILIES[model_type] -> Family``.

Read off transformers v5 (``models/<family>/modeling_<family>.py`` for the pairing and the attention,
``configuration_<family>.py`` for the defaults) and checked against the families' own rotary modules by
tests/data/audit_families.py (its last run: tests/data/audit_families.txt).  ``from_hf_config``
(rope_ref/hf_config.py) is the one reader of this table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Family", "FAMILIES"]


@dataclass(frozen=True)
class Family:
    """How one ``model_type`` applies RoPE, and the defaults its config class fills in.

    ``pairing``: "half" = rotate_half (x_i, x_{i+d/2}); "interleaved" = rotate_every_two /
    repeat_interleave / complex multiplication of (x_2i, x_2i+1).
    """

    pairing: str
    rope_theta: float = 10000.0        # the config class's default rope_theta
    partial_rotary_factor: float = 1.0
    head_dim: int | None = None        # the config class's default head_dim, when the config has none
    rope: Mapping | None = None        # the config class's default rope section, used when the config has none
                                       # (with its rope_theta, if it has one, over a top-level rope_theta)
    layers: Mapping | None = None      # v4 layout with one RoPE per layer type: type -> (theta key, default, scaled?)
    head_keys: tuple = ("head_dim",)   # config keys giving the features per head, first present wins;
                                       # () = always hidden_size / num_attention_heads (Falcon)
    rotary_key: str | None = None      # a key giving the number of rotated features (GPT-J's rotary_dim)
    rotary_default: int | None = None  # ... and its default when the config lacks the key (GPT-J: 64)
    fixed_theta: float | None = None   # a base the modeling code hard-codes (GPT-J, CodeGen: 10^4)
    interleave_flag: bool | None = None  # MLA: rope_interleave's default; True = interleaved pairs written
                                         # back in half layout (apply_rotary_pos_emb_interleave)
    needs: tuple = ()                  # (key, value): RoPE only when config[key] == value
    refuses: tuple = ()                # (key, why): no RoPE when config[key] is true
    alpha_is_ntk: bool = False         # HunYuan: "dynamic" with a fixed alpha is static NTK (factor alpha)
    mscale_longrope: bool = False      # PhiMoE: longrope, short factors at every length, cos/sin * mscale
    query_keys: tuple = ()             # top-level keys that scale queries, not angles (Llama 4's temperature)


F = Family
_GEMMA3_LAYERS = {"full_attention": ("rope_theta", 1e6, True), "sliding_attention": ("rope_local_base_freq", 1e4, False)}
_MLA = dict(head_keys=("qk_rope_head_dim",), head_dim=64)           # the rotated part of each query head
_SINUSOIDAL = dict(rotary_key="rotary_dim", rotary_default=64, fixed_theta=10000.0)   # create_sinusoidal_positions
_LLAMA4_TEMPERATURE = ("attn_temperature_tuning", "floor_scale", "attn_scale")

#: model_type -> Family.  Comments: NoPE layers = the family applies this RoPE on some layers only.
FAMILIES = {
    "llama": F("half"),
    "mistral": F("half"),
    "ministral": F("half"),
    "mixtral": F("half", rope_theta=1e6),
    "qwen2": F("half"),
    "qwen2_moe": F("half"),
    "qwen3": F("half", head_dim=128),
    "qwen3_moe": F("half"),
    "qwen3_next": F("half", partial_rotary_factor=0.25, head_dim=256),
    "gemma": F("half", head_dim=256),
    "gemma2": F("half", head_dim=256),
    "gemma3_text": F("half", head_dim=256, layers=_GEMMA3_LAYERS),    # one RoPE per layer type
    "vaultgemma": F("half", head_dim=256),
    "gpt_neox": F("half", partial_rotary_factor=0.25),   # rotary_pct, rotary_emb_base in old configs
    "gpt_neox_japanese": F("half"),                      # rotary_pct, rotary_emb_base in old configs
    "phi": F("half", partial_rotary_factor=0.5),
    "phi3": F("half"),
    "stablelm": F("half", partial_rotary_factor=0.25),
    "falcon": F("half", head_keys=(), refuses=(("alibi", "that model uses ALiBi, not RoPE"),)),
    "olmo": F("half"),
    "olmo2": F("half"),
    "olmo3": F("half", rope_theta=500000.0),             # one RoPE per layer type (rope_parameters)
    "olmoe": F("half"),
    "flex_olmo": F("half", rope_theta=500000.0),
    "persimmon": F("half", partial_rotary_factor=0.5),
    "starcoder2": F("half"),
    "granite": F("half"),
    "granitemoe": F("half"),
    "granitemoeshared": F("half"),
    "granitemoehybrid": F("half", needs=(("position_embedding_type", "rope"),)),
    "nemotron": F("half", partial_rotary_factor=0.5),
    "exaone4": F("half"),                                # NoPE layers: full attention, with sliding_window
    "smollm3": F("half", rope_theta=2e6),                # NoPE layers: no_rope_layers (0 = NoPE)
    "gpt_oss": F("half", rope_theta=150000.0, head_dim=64,
                 rope={"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                       "truncate": False, "original_max_position_embeddings": 4096}),
    "apertus": F("half", rope_theta=12e6,
                 rope={"rope_type": "llama3", "rope_theta": 12e6, "factor": 8.0, "original_max_position_embeddings": 8192,
                       "low_freq_factor": 1.0, "high_freq_factor": 4.0}),
    "arcee": F("half"),
    "bitnet": F("half", rope_theta=500000.0),
    "dots1": F("half"),
    "seed_oss": F("half", head_dim=128),
    "solar_open": F("half", rope_theta=1e6, head_dim=128),
    "hunyuan_v1_dense": F("half", alpha_is_ntk=True),
    "hunyuan_v1_moe": F("half", alpha_is_ntk=True),
    "phimoe": F("half", rope_theta=1e6, mscale_longrope=True),
    "minimax_m2": F("half", rope_theta=5e6, head_dim=128, rotary_key="rotary_dim"),   # rotary_dim in released configs
    "lfm2": F("half", rope_theta=1e6),
    "lfm2_moe": F("half", rope_theta=1e6),
    "falcon_h1": F("half"),
    "cwm": F("half", rope_theta=1e6, head_dim=128,
             rope={"rope_type": "llama3", "rope_theta": 1e6, "factor": 16.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                   "original_max_position_embeddings": 8192}),
    "jais2": F("half"),
    "hyperclovax": F("half"),
    "diffllama": F("half"),
    "doge": F("half"),
    "exaone_moe": F("half"),                             # NoPE layers: full attention, with sliding_window
    "afmoe": F("half", head_dim=128),                    # NoPE layers: full attention
    "gptj": F("interleaved", **_SINUSOIDAL),
    "codegen": F("interleaved", **_SINUSOIDAL),
    "cohere": F("interleaved", rope_theta=500000.0),
    "cohere2": F("interleaved"),                         # NoPE layers: full attention
    "helium": F("interleaved", rope_theta=100000.0, head_dim=128),
    "ernie4_5": F("interleaved", rope_theta=500000.0, head_dim=128),
    "ernie4_5_moe": F("interleaved", rope_theta=500000.0),
    "glm": F("interleaved", partial_rotary_factor=0.5, head_dim=128),
    "glm4": F("interleaved", partial_rotary_factor=0.5, head_dim=128),
    "glm4_moe": F("half", partial_rotary_factor=0.5),    # GLM-4.5: rotate_half, unlike glm and glm4
    "llama4_text": F("interleaved", rope_theta=500000.0, head_dim=128,   # NoPE layers: no_rope_layers (0 = NoPE)
                     query_keys=_LLAMA4_TEMPERATURE),
    "deepseek_v2": F("interleaved", **_MLA),             # output stays interleaved (complex freqs_cis)
    "deepseek_v3": F("interleaved", interleave_flag=True, **_MLA),
    # MLA families with DeepSeek-V3's attention (apply_rotary_pos_emb_interleave when rope_interleave):
    "kimi_k2": F("interleaved", interleave_flag=True, **_MLA),   # Kimi-K2's config.json (DeepSeek-V3 remote code)
    "glm4_moe_lite": F("interleaved", interleave_flag=True, **_MLA),   # GLM-4.7-Flash
    # Ministral 3: YaRN whose llama_4_scaling_beta scales the queries (get_llama_4_attn_scale), not the angles
    "ministral3": F("half", rope_theta=1e6, head_dim=128,
                    rope={"rope_type": "yarn", "rope_theta": 1e6, "factor": 16.0,
                          "original_max_position_embeddings": 16384, "beta_fast": 32.0, "beta_slow": 1.0,
                          "mscale_all_dim": 1.0, "mscale": 1.0, "llama_4_scaling_beta": 0.1}),
}
