"""What each transformers family does with RoPE, as data: ``FAMILIES[model_type] -> Family``.

Read off transformers v5 (``models/<family>/modeling_<family>.py`` for the pairing and the attention,
``configuration_<family>.py`` for the defaults) and checked against the families' own rotary modules by
tests/data/audit_families.py (its last run: tests/data/audit_families.txt).  ``from_hf_config``
(rope_ref/hf_config.py) is the one reader of this table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

__all__ = ["Family", "FAMILIES", "SectionQuirk", "SECTION_QUIRK_KEYS"]


@dataclass(frozen=True)
class SectionQuirk:
    """A family that reads its rope section its own way: ``rewrite(section, rope_type) -> rope_type`` turns the
    section (a dict, edited in place) into the registry method (rope_ref.scaling) the family computes; ``keys``
    are section keys only this family reads (refused in any other family's section, naming ``owner``)."""

    owner: str
    rewrite: Callable
    keys: tuple = ()


def _alpha_is_static_ntk(rope, rope_type) -> str:
    """HunYuan: "dynamic" with a fixed alpha is static NTK, base * alpha^(d/(d-2)) at every length
    (transformers' compute_ntk_alpha_rope_parameters)."""
    alpha = rope.pop("alpha", None)
    if alpha and rope_type == "dynamic":
        rope["factor"] = alpha
        return "ntk"
    return rope_type


def _phimoe_longrope(rope, rope_type) -> str:
    """transformers' PhiMoE computes its frequencies without the current length (so always with short_factor)
    and scales cos and sin by short_mscale or long_mscale (by length): one RopeConfig when they are equal."""
    if rope_type == "default":
        return rope_type
    mscales = rope.get("short_mscale"), rope.get("long_mscale")
    if rope_type != "longrope" or None in mscales or mscales[0] != mscales[1]:
        raise ValueError(f"config has model_type='phimoe' with rope_type={rope_type!r}, short_mscale={mscales[0]} "
                         f"and long_mscale={mscales[1]}: rope_ref models PhiMoE's longrope only with "
                         "short_mscale == long_mscale (transformers' PhiMoE fails without them)")
    rope.update(long_factor=rope.get("short_factor"), attention_factor=mscales[0])
    return rope_type


def _yarn_without_mscale(rope, rope_type) -> str:
    """DeepSeek-V4: its config class sets attention_factor 1.0 on a yarn section (the reference code does not scale
    cos and sin by YaRN's mscale)."""
    if rope_type == "yarn":
        rope.setdefault("attention_factor", 1.0)
    return rope_type


_HUNYUAN_ALPHA = SectionQuirk("HunYuan", _alpha_is_static_ntk, keys=("alpha",))
_PHIMOE_MSCALE = SectionQuirk("PhiMoE", _phimoe_longrope)
_V4_YARN = SectionQuirk("DeepSeek-V4", _yarn_without_mscale)


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
    interleave_always: bool = False    # MLA whose attention calls apply_rotary_pos_emb_interleave whatever
                                       # rope_interleave says (DeepSeek-V3.2, GLM-5, LongCat-Flash, ...)
    needs: tuple = ()                  # (key, value): RoPE only when config[key] == value
    refuses: tuple = ()                # (key, why): no RoPE when config[key] is true
    quirk: SectionQuirk | None = None  # reads its rope section its own way (HunYuan's alpha, PhiMoE's mscale)
    query_keys: tuple = ()             # top-level keys that scale queries, not angles (Llama 4's temperature)
    max_pos_keys: tuple = ("max_position_embeddings", "n_positions")   # the context length, first present wins
    mrope: tuple | None = None         # M-RoPE its text module always applies: (default mrope_section, layout: True =
                                       # interleaved, False = blocks, or a name of rope_ref.multiaxis.MROPE_LAYOUTS)
    mrope_order: tuple = (0, 1, 2)     # the entries of its mrope_section that count temporal, height, width pairs
    unsupported: str | None = None     # why rope_ref refuses this family (its RoPE is one it does not model)
    layer_heads: Mapping | None = None  # layer type -> (key, default) of a head size that differs by layer type
                                        # (Gemma 4: full-attention heads are global_head_dim wide)
    parts: Mapping | None = None       # layer_type -> (head key, default, pairing, output_pairing) of another
                                       # attention that rotates the first qk_rope_head_dim features of its own heads
                                       # with the same cos/sin (DeepSeek-V3.2's DSA indexer: rotate_half pairs)
    clockwise: bool = False            # its rotate_half is cat(x2, -x1): every pair turns by -theta_j m (NanoChat)


_MROPE_QWEN2 = ((16, 24, 24), False)     # Qwen2VLRotaryEmbedding: freq.split(mrope_section), blocks in theta order
_MROPE_QWEN3 = ((24, 20, 20), True)      # Qwen3VLTextRotaryEmbedding: apply_interleaved_mrope
_MROPE_QWEN35 = ((11, 11, 10), True)     # Qwen3_5TextRotaryEmbedding: interleaved, partial_rotary_factor 0.25
_MROPE_GLM4V = ((8, 12, 12), False)      # Glm4vTextRotaryEmbedding: blocks, over the rotated half
_MROPE_ERNIE = ((22, 22, 20), "hw_alternating")   # Ernie4_5_VLMoeTextRotaryEmbedding: [h, w, t] in the config
# DSA indexers: layer_type -> (head key, default, pairing, output_pairing); DeepSeek-V3.2's calls apply_rotary_pos_emb
# (rotate_half), GLM-5's (glm_moe_dsa, transformers 5.24) apply_rotary_pos_emb_interleave like its main attention
_DSA_INDEXER = {"indexer": ("index_head_dim", 128, "half", None)}
_GLM5_INDEXER = {"indexer": ("index_head_dim", 128, "interleaved", "half")}
_GEMMA3_LAYERS = {"full_attention": ("rope_theta", 1e6, True),
                  "sliding_attention": ("rope_local_base_freq", 1e4, False)}
_MLA = dict(head_keys=("qk_rope_head_dim",), head_dim=64)           # the rotated part of each query head
_SINUSOIDAL = dict(rotary_key="rotary_dim", rotary_default=64, fixed_theta=10000.0)   # create_sinusoidal_positions
_LLAMA4_TEMPERATURE = ("attn_temperature_tuning", "floor_scale", "attn_scale")

#: The families whose attention applies rotate_half RoPE to the whole head with the generic defaults (rope_theta
#: 10000; head_dim, else hidden_size / num_attention_heads): Family("half").
_ROTATE_HALF_WHOLE_HEAD = (
    "arcee", "aria_text", "chameleon", "deepseek_ocr2_encoder", "deepseek_ocr2_text", "diffllama", "doge", "dots1",
    "esmc", "eurobert", "falcon_h1", "gradium_phonon_tts", "granite", "granite4_vision_text", "granite_docling_text",
    "granite_swa", "granitemoe", "granitemoe_swa", "granitemoeshared", "hyperclovax", "idefics", "jais2",
    "kyutai_speech_to_text", "lasr_encoder", "llama", "mimi", "mimi_decoder", "mimi_encoder", "ministral", "mistral",
    "moshi", "nemotron3_diarization_audio", "neucodec", "olmo", "olmo2", "olmo_hybrid", "olmoe", "phi3",
    "phi4_multimodal", "pocket_tts", "pocket_tts_audio_tokenizer", "pocket_tts_audio_tokenizer_decoder",
    "pocket_tts_audio_tokenizer_encoder", "qwen2", "qwen2_moe", "qwen3_moe", "qwen3_omni_moe_talker_text", "starcoder2",
    "unlimited_ocr_text", "voxtral_realtime_encoder", "voxtral_realtime_text", "xcodec2",
)

#: model_type -> Family.  Comments: NoPE layers = the family applies this RoPE on some layers only.
FAMILIES = {
    **dict.fromkeys(_ROTATE_HALF_WHOLE_HEAD, Family("half")),
    "mixtral": Family("half", rope_theta=1e6),
    "qwen3": Family("half", head_dim=128),
    "qwen3_next": Family("half", partial_rotary_factor=0.25, head_dim=256),
    "gemma": Family("half", head_dim=256),
    "gemma2": Family("half", head_dim=256),
    "gemma3_text": Family("half", head_dim=256, layers=_GEMMA3_LAYERS),    # one RoPE per layer type
    "vaultgemma": Family("half", head_dim=256),
    "gpt_neox": Family("half", partial_rotary_factor=0.25),   # rotary_pct, rotary_emb_base in old configs
    "gpt_neox_japanese": Family("half"),                      # rotary_pct, rotary_emb_base in old configs
    "phi": Family("half", partial_rotary_factor=0.5),
    "stablelm": Family("half", partial_rotary_factor=0.25),
    "falcon": Family("half", head_keys=(), refuses=(("alibi", "that model uses ALiBi, not RoPE"),)),
    "olmo3": Family("half", rope_theta=500000.0),             # one RoPE per layer type (rope_parameters)
    "flex_olmo": Family("half", rope_theta=500000.0),
    "persimmon": Family("half", partial_rotary_factor=0.5),
    "granitemoehybrid": Family("half", needs=(("position_embedding_type", "rope"),)),
    "nemotron": Family("half", partial_rotary_factor=0.5),
    "exaone4": Family("half"),                                # NoPE layers: full attention, with sliding_window
    "smollm3": Family("half", rope_theta=2e6),                # NoPE layers: no_rope_layers (0 = NoPE)
    "gpt_oss": Family("half", rope_theta=150000.0, head_dim=64,
                      rope={"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                            "truncate": False, "original_max_position_embeddings": 4096}),
    "apertus": Family("half", rope_theta=12e6,
                      rope={"rope_type": "llama3", "rope_theta": 12e6, "factor": 8.0,
                            "original_max_position_embeddings": 8192, "low_freq_factor": 1.0, "high_freq_factor": 4.0}),
    "bitnet": Family("half", rope_theta=500000.0),
    "seed_oss": Family("half", head_dim=128),
    "solar_open": Family("half", rope_theta=1e6, head_dim=128),
    "hunyuan_v1_dense": Family("half", quirk=_HUNYUAN_ALPHA),
    "hunyuan_v1_moe": Family("half", quirk=_HUNYUAN_ALPHA),
    "phimoe": Family("half", rope_theta=1e6, quirk=_PHIMOE_MSCALE),
    "minimax_m2": Family("half", rope_theta=5e6, head_dim=128, rotary_key="rotary_dim"),   # rotary_dim in its configs
    "lfm2": Family("half", rope_theta=1e6),
    "lfm2_moe": Family("half", rope_theta=1e6),
    "cwm": Family("half", rope_theta=1e6, head_dim=128,
                  rope={"rope_type": "llama3", "rope_theta": 1e6, "factor": 16.0, "high_freq_factor": 4.0,
                        "low_freq_factor": 1.0, "original_max_position_embeddings": 8192}),
    "exaone_moe": Family("half"),                             # NoPE layers: full attention, with sliding_window
    "afmoe": Family("half", head_dim=128),                    # NoPE layers: full attention
    "gptj": Family("interleaved", **_SINUSOIDAL),
    "codegen": Family("interleaved", **_SINUSOIDAL),
    "cohere": Family("interleaved", rope_theta=500000.0),
    "cohere2": Family("interleaved"),                         # NoPE layers: full attention
    "helium": Family("interleaved", rope_theta=100000.0, head_dim=128),
    "ernie4_5": Family("interleaved", rope_theta=500000.0, head_dim=128),
    "ernie4_5_moe": Family("interleaved", rope_theta=500000.0),
    "glm": Family("interleaved", partial_rotary_factor=0.5, head_dim=128),
    "glm4": Family("interleaved", partial_rotary_factor=0.5, head_dim=128),
    "glm4_moe": Family("half", partial_rotary_factor=0.5),    # GLM-4.5: rotate_half, unlike glm and glm4
    "llama4_text": Family("interleaved", rope_theta=500000.0, head_dim=128,   # NoPE layers: no_rope_layers (0 = NoPE)
                          query_keys=_LLAMA4_TEMPERATURE),
    "deepseek_v2": Family("interleaved", **_MLA),             # output stays interleaved (complex freqs_cis)
    "deepseek_v3": Family("interleaved", interleave_flag=True, **_MLA),
    # MLA families with DeepSeek-V3's attention (apply_rotary_pos_emb_interleave when rope_interleave):
    "kimi_k2": Family("interleaved", interleave_flag=True, **_MLA),   # Kimi-K2's config.json (DeepSeek-V3 remote code)
    "glm4_moe_lite": Family("interleaved", interleave_flag=True, **_MLA),   # GLM-4.7-Flash
    "axk1": Family("interleaved", interleave_flag=True, **_MLA),
    "youtu": Family("interleaved", interleave_flag=True, **_MLA),
    "mistral4": Family("interleaved", interleave_flag=True, **_MLA,         # llama_4_scaling_beta: queries
                       rope={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 128.0,
                             "original_max_position_embeddings": 8192, "beta_fast": 32.0, "beta_slow": 1.0,
                             "mscale_all_dim": 1.0, "mscale": 1.0, "llama_4_scaling_beta": 0.1}),
    # MLA whose main attention always uses apply_rotary_pos_emb_interleave (their DSA indexers rotate rotate_half
    # pairs of the indexer's own heads: layer_type="indexer" where parts= says so)
    "axk2": Family("interleaved", interleave_flag=True, interleave_always=True, **_MLA),
    "deepseek_v32": Family("interleaved", interleave_flag=True, interleave_always=True, **_MLA, parts=_DSA_INDEXER),
    "glm_moe_dsa": Family("interleaved", interleave_flag=True, interleave_always=True, **_MLA, parts=_GLM5_INDEXER),
    "bailing_hybrid": Family("interleaved", rope_theta=6e6, interleave_flag=True, interleave_always=True, **_MLA,
                             max_pos_keys=("model_max_length",)),      # its attribute_map's name in config.json
    "dots3_note_text": Family("interleaved", interleave_flag=True, interleave_always=True, **_MLA,
                              rope={"sliding_attention": {"rope_type": "default", "rope_theta": 50000.0},
                                    "indexed_attention": {"rope_type": "default", "rope_theta": 80000000.0}}),
    "longcat_flash": Family("interleaved", rope_theta=1e7, interleave_flag=True, interleave_always=True, **_MLA),
    "mistral_large4_text": Family("interleaved", interleave_flag=True, interleave_always=True, **_MLA,
                                  rope={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 2048.0,
                                        "original_max_position_embeddings": 512, "beta_fast": 32.0, "beta_slow": 1.0,
                                        "attention_factor": 1.0}),
    # MLA with rotate_half pairs written back in place
    "hy_v4": Family("half", **_MLA),
    "minicpm3": Family("half", head_keys=("qk_rope_head_dim",), head_dim=32),
    # Ministral 3: YaRN whose llama_4_scaling_beta scales the queries (get_llama_4_attn_scale), not the angles
    "ministral3": Family("half", rope_theta=1e6, head_dim=128,
                         rope={"rope_type": "yarn", "rope_theta": 1e6, "factor": 16.0,
                               "original_max_position_embeddings": 16384, "beta_fast": 32.0, "beta_slow": 1.0,
                               "mscale_all_dim": 1.0, "mscale": 1.0, "llama_4_scaling_beta": 0.1}),
    # Read from each config class's defaults and checked against the family's rotary module and apply
    # function by tests/data/audit_families.py (transformers 5.24.0); "[layer types]" = one RoPE per layer type.
    'apertus1p5_text': Family('half', rope_theta=12000000.0,
                              rope={'rope_type': 'llama3', 'rope_theta': 12000000.0, 'factor': 8.0,
                                    'original_max_position_embeddings': 8192, 'low_freq_factor': 1.0,
                                    'high_freq_factor': 4.0}),
    'dory': Family('half', head_dim=256,
                   rope={'full_attention': {'rope_type': 'default', 'rope_theta': 10000000.0},
                         'sliding_attention': {'rope_type': 'default', 'rope_theta': 10000.0}}),
    'lara_mini': Family('half', head_dim=128),
    'bamba': Family('half', partial_rotary_factor=0.5),
    'beam': Family('half', head_dim=128, rope={'sliding_attention': {'rope_type': 'default', 'rope_theta': 10000.0}}),
    'blt_global_transformer': Family('interleaved', rope_theta=500000.0),
    'blt_local_decoder': Family('interleaved', rope_theta=500000.0),
    'blt_local_encoder': Family('interleaved', rope_theta=500000.0),
    'blt_patcher': Family('interleaved'),
    'cohere2_moe': Family('interleaved', head_dim=128),
    'csm': Family('half', rope_theta=500000.0),
    'csm_depth_decoder_model': Family('half', rope_theta=500000.0),
    'dia_decoder': Family('half', head_dim=128),
    'dia_encoder': Family('half', head_dim=128),
    'dots3_note_audio_encoder': Family('half', partial_rotary_factor=0.5),
    'emu3_text_model': Family('half', rope_theta=1000000.0),
    'ernie4_5_vl_moe_text': Family('interleaved', rope_theta=500000.0, mrope=_MROPE_ERNIE, mrope_order=(2, 0, 1)),
    'esm': Family('half', needs=(('position_embedding_type', 'rotary'),)),   # default 'absolute': no RoPE
    'evolla': Family('half', rope_theta=500000.0),
    'flint': Family('half', head_dim=128),
    'glm_ocr_text': Family('interleaved', mrope=_MROPE_GLM4V),
    'glmasr_encoder': Family('half', partial_rotary_factor=0.5),
    'gte': Family('half', rope_theta=160000.0),
    'higgs_audio_v2': Family('half', rope_theta=500000.0, head_dim=128,
                             rope={'factor': 32.0, 'rope_theta': 500000.0, 'high_freq_factor': 0.5,
                                   'low_freq_factor': 0.125, 'original_max_position_embeddings': 1024,
                                   'rope_type': 'llama3'}),
    'hrm_text': Family('half', head_dim=128),
    'hy_v3': Family('half', rope_theta=11158840.0, head_dim=128),
    'jina_embeddings_v3': Family('half', rope_theta=20000.0),
    'kolibri1': Family('half', head_dim=128),
    'laguna': Family('half', head_dim=128,
                     rope={'full_attention': {'rope_type': 'default', 'rope_theta': 500000.0,
                                              'partial_rotary_factor': 0.5},
                           'sliding_attention': {'rope_type': 'default', 'rope_theta': 10000.0,
                                                 'partial_rotary_factor': 1.0}}),
    'lfm3': Family('half', head_dim=128,
                   rope={'sliding_attention': {'rope_type': 'default', 'rope_theta': 10000.0},
                         'full_attention': {'rope_type': 'proportional', 'rope_theta': 1000000.0,
                                            'partial_rotary_factor': 0.5}}),
    'mellum': Family('half', head_dim=128,
                     rope={'full_attention': {'rope_type': 'default', 'rope_theta': 500000.0},
                           'sliding_attention': {'rope_type': 'default', 'rope_theta': 10000.0}}),
    'mimo_v2_flash': Family('half', head_dim=192,
                            rope={'full_attention': {'rope_type': 'default', 'rope_theta': 5000000.0,
                                                     'partial_rotary_factor': 0.334},
                                  'sliding_attention': {'rope_type': 'default', 'rope_theta': 10000.0,
                                                        'partial_rotary_factor': 0.334}}),
    'minimax': Family('half', rope_theta=1000000.0),
    'minimax_m3_vl_text': Family('half', rope_theta=5000000.0, head_dim=128),   # its module ignores rotary_dim (64)
    'mllama_text_model': Family('half', rope_theta=500000.0),
    'modernbert': Family('half',
                         rope={'sliding_attention': {'rope_type': 'default', 'rope_theta': 10000.0},
                               'full_attention': {'rope_type': 'default', 'rope_theta': 160000.0}}),
    'modernbert-decoder': Family('half',
                                 rope={'sliding_attention': {'rope_type': 'default', 'rope_theta': 10000.0},
                                       'full_attention': {'rope_type': 'default', 'rope_theta': 160000.0}}),
    'molmo2_text': Family('half', head_dim=128),
    'moonshine_streaming': Family('interleaved', partial_rotary_factor=0.8),
    'muse_glimmer_assistant': Family('half', rope_theta=500000.0, head_dim=128),
    'muse_glimmer_text': Family('half', head_dim=128),
    'muse_spark_text': Family('half', rope_theta=500000.0),
    'nemotron3_5_transcribe_asr_audio': Family('half', partial_rotary_factor=0.5),
    'nemotron3_5_transcribe_word_timestamp': Family('half', partial_rotary_factor=0.5),
    'neomme': Family('half',
                     rope={'sliding_attention': {'rope_type': 'default', 'rope_theta': 10000.0,
                                                 'partial_rotary_factor': 1.0},
                           'full_attention': {'rope_type': 'default', 'rope_theta': 1000000.0,
                                              'partial_rotary_factor': 0.25}}),
    'nomic_bert': Family('half', rope_theta=1000.0),
    'openai_privacy_filter': Family('interleaved', rope_theta=150000.0,
                                    rope={'rope_type': 'yarn', 'factor': 32.0, 'beta_fast': 32.0, 'beta_slow': 1.0,
                                          'truncate': False, 'original_max_position_embeddings': 4096,
                                          'rope_theta': 150000.0}),
    'paddleocr_vl_text': Family('half', rope_theta=500000.0, head_dim=128, mrope=_MROPE_QWEN2),
    'pe_audio_encoder': Family('interleaved', rope_theta=20000.0, head_dim=128),
    'pe_audio_video_encoder': Family('interleaved', rope_theta=20000.0, head_dim=128),
    'pe_video_encoder': Family('interleaved', rope_theta=20000.0, head_dim=128),
    'qwen2_5_omni_talker': Family('half', rope_theta=1000000.0, head_dim=128, mrope=_MROPE_QWEN2),
    'qwen2_5_omni_text': Family('half', rope_theta=1000000.0, mrope=_MROPE_QWEN2),
    'qwen2_5_vl_text': Family('half', rope_theta=1000000.0, mrope=_MROPE_QWEN2),
    'qwen2_vl_text': Family('half', rope_theta=1000000.0, mrope=_MROPE_QWEN2),
    'qwen3_5_moe_text': Family('half', partial_rotary_factor=0.25, head_dim=256, mrope=_MROPE_QWEN35),
    'qwen3_5_text': Family('half', partial_rotary_factor=0.25, head_dim=256, mrope=_MROPE_QWEN35),
    'qwen3_omni_moe_talker_code_predictor': Family('half', head_dim=128),
    'qwen3_vl_moe_text': Family('half', rope_theta=500000.0, mrope=_MROPE_QWEN3),
    'qwen3_vl_text': Family('half', rope_theta=500000.0, head_dim=128, mrope=_MROPE_QWEN3),
    'qwen4_exp_text': Family('half', head_dim=256, mrope=_MROPE_QWEN35),
    'recurrent_gemma': Family('half', partial_rotary_factor=0.5),
    'step3p5': Family('half', head_dim=128, rope={'full_attention': {'rope_type': 'default', 'rope_theta': 10000.0}}),
    't5_gemma_module': Family('half', head_dim=256),
    't5gemma2_decoder': Family('half', head_dim=256,
                               rope={'sliding_attention': {'rope_type': 'default', 'rope_theta': 10000.0},
                                     'full_attention': {'rope_type': 'default', 'rope_theta': 1000000.0}}),
    't5gemma2_text': Family('half', head_dim=256,
                            rope={'sliding_attention': {'rope_type': 'default', 'rope_theta': 10000.0},
                                  'full_attention': {'rope_type': 'default', 'rope_theta': 1000000.0}}),
    'timesfm2_5': Family('half', head_dim=80),
    'ultrabert': Family('half',
                        rope={'sliding_attention': {'rope_type': 'default', 'rope_theta': 10000.0},
                              'full_attention': {'rope_type': 'default', 'rope_theta': 2560000.0}}),
    'zaya': Family('half', head_dim=128,
                   rope={'hybrid': {'rope_type': 'default', 'rope_theta': 5000000.0, 'partial_rotary_factor': 0.5},
                         'hybrid_sliding': {'rope_type': 'default', 'rope_theta': 10000.0,
                                            'partial_rotary_factor': 0.5}}),
    # M-RoPE families whose published config.json is flat (v4 rope_scaling type "mrope"), and GLM-4V's text model
    "qwen2_vl": Family("half", rope_theta=1e6, mrope=_MROPE_QWEN2),
    "qwen2_5_vl": Family("half", rope_theta=1e6, mrope=_MROPE_QWEN2),
    "glm4v_text": Family("interleaved", mrope=_MROPE_GLM4V),   # rotate_half_llm pairs; GLM-4.1V sets partial 0.5
    "glm4v_moe_text": Family("half", partial_rotary_factor=0.5, mrope=_MROPE_GLM4V),
    # DeepSeek-V4: interleaved pairs on the trailing qk_rope_head_dim (64) of each 512-wide head (head_dim here is
    # that rotated part, as for MLA); layer_type "main" (rope_theta) or "compress" (compress_rope_theta, yarn)
    "deepseek_v4": Family("interleaved", **_MLA, quirk=_V4_YARN,
                          layers={"main": ("rope_theta", 1e4, False),
                                  "compress": ("compress_rope_theta", 160000.0, True)}),
    "gemma3n_text": Family("half", head_dim=256, layers=_GEMMA3_LAYERS),    # one RoPE per layer type
    "nanochat": Family("half", clockwise=True),
    "hunyuan_vl_text": Family("half", unsupported=(
        "transformers' HunYuanVLRotaryEmbedding splits cat(freqs, freqs) into chunks of 2*s per mrope_section entry "
        "(Tencent's code repeats the section list instead), so a feature and its rotate_half partner can take their "
        "angles from different axes: on image tokens its cos/sin map is not a rotation, and rope_ref models none")),
    # Gemma 4: sliding layers default RoPE over head_dim, full-attention layers proportional RoPE over
    # global_head_dim (transformers' per_layer_config) -- one RoPE per layer type
    "gemma4_text": Family("half", head_dim=256, layer_heads={"full_attention": ("global_head_dim", 512)},
                          rope={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                                "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                                   "rope_theta": 1000000.0}}),
}

#: Section keys that only one family's quirk reads -> the family that reads them.
SECTION_QUIRK_KEYS = {key: family.quirk.owner for family in FAMILIES.values() if family.quirk
                      for key in family.quirk.keys}
