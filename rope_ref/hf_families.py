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
    interleave_always: bool = False    # MLA whose attention calls apply_rotary_pos_emb_interleave whatever
                                       # rope_interleave says (DeepSeek-V3.2, GLM-5, LongCat-Flash, ...)
    needs: tuple = ()                  # (key, value): RoPE only when config[key] == value
    refuses: tuple = ()                # (key, why): no RoPE when config[key] is true
    alpha_is_ntk: bool = False         # HunYuan: "dynamic" with a fixed alpha is static NTK (factor alpha)
    mscale_longrope: bool = False      # PhiMoE: longrope, short factors at every length, cos/sin * mscale
    query_keys: tuple = ()             # top-level keys that scale queries, not angles (Llama 4's temperature)
    max_pos_keys: tuple = ("max_position_embeddings", "n_positions")   # the context length, first present wins
    mrope: tuple | None = None         # M-RoPE its text module always applies: (default mrope_section, interleaved?)
    unsupported: str | None = None     # why rope_ref refuses this family (its RoPE is one it does not model)
    layer_heads: Mapping | None = None  # layer type -> (key, default) of a head size that differs by layer type
                                        # (Gemma 4: full-attention heads are global_head_dim wide)


F = Family
_MROPE_QWEN2 = ((16, 24, 24), False)     # Qwen2VLRotaryEmbedding: freq.split(mrope_section), blocks in theta order
_MROPE_QWEN3 = ((24, 20, 20), True)      # Qwen3VLTextRotaryEmbedding: apply_interleaved_mrope
_MROPE_QWEN35 = ((11, 11, 10), True)     # Qwen3_5TextRotaryEmbedding: interleaved, partial_rotary_factor 0.25
_MROPE_GLM4V = ((8, 12, 12), False)      # Glm4vTextRotaryEmbedding: blocks, over the rotated half
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
    "axk1": F("interleaved", interleave_flag=True, **_MLA),
    "youtu": F("interleaved", interleave_flag=True, **_MLA),
    "mistral4": F("interleaved", interleave_flag=True, **_MLA,         # llama_4_scaling_beta: queries
                  rope={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 128.0, "original_max_position_embeddings": 8192,
                        "beta_fast": 32.0, "beta_slow": 1.0, "mscale_all_dim": 1.0, "mscale": 1.0,
                        "llama_4_scaling_beta": 0.1}),
    # MLA whose main attention always uses apply_rotary_pos_emb_interleave (their DSA indexers rotate rotate_half
    # pairs of the indexer's own heads: not modelled here)
    "axk2": F("interleaved", interleave_flag=True, interleave_always=True, **_MLA),
    "deepseek_v32": F("interleaved", interleave_flag=True, interleave_always=True, **_MLA),
    "glm_moe_dsa": F("interleaved", interleave_flag=True, interleave_always=True, **_MLA),
    "bailing_hybrid": F("interleaved", rope_theta=6e6, interleave_flag=True, interleave_always=True, **_MLA,
                        max_pos_keys=("model_max_length",)),      # its attribute_map's name in config.json
    "dots3_note_text": F("interleaved", interleave_flag=True, interleave_always=True, **_MLA,
                         rope={"sliding_attention": {"rope_type": "default", "rope_theta": 50000.0},
                               "indexed_attention": {"rope_type": "default", "rope_theta": 80000000.0}}),
    "longcat_flash": F("interleaved", rope_theta=1e7, interleave_flag=True, interleave_always=True, **_MLA),
    "mistral_large4_text": F("interleaved", interleave_flag=True, interleave_always=True, **_MLA,
                             rope={"rope_type": "yarn", "rope_theta": 10000.0, "factor": 2048.0,
                                   "original_max_position_embeddings": 512, "beta_fast": 32.0, "beta_slow": 1.0,
                                   "attention_factor": 1.0}),
    # MLA with rotate_half pairs written back in place
    "hy_v4": F("half", **_MLA),
    "minicpm3": F("half", head_keys=("qk_rope_head_dim",), head_dim=32),
    # Ministral 3: YaRN whose llama_4_scaling_beta scales the queries (get_llama_4_attn_scale), not the angles
    "ministral3": F("half", rope_theta=1e6, head_dim=128,
                    rope={"rope_type": "yarn", "rope_theta": 1e6, "factor": 16.0,
                          "original_max_position_embeddings": 16384, "beta_fast": 32.0, "beta_slow": 1.0,
                          "mscale_all_dim": 1.0, "mscale": 1.0, "llama_4_scaling_beta": 0.1}),
    # Read from each config class's defaults and checked against the family's rotary module and apply
    # function by tests/data/audit_families.py (transformers 5.24.0); "[layer types]" = one RoPE per layer type.
    'apertus1p5_text': F('half', rope_theta=12000000.0,
                         rope={
                               'rope_type': 'llama3',
                               'rope_theta': 12000000.0,
                               'factor': 8.0,
                               'original_max_position_embeddings': 8192,
                               'low_freq_factor': 1.0,
                               'high_freq_factor': 4.0}),
    'dory': F('half', head_dim=256,
              rope={
                    'full_attention': {'rope_type': 'default', 'rope_theta': 10000000.0},
                    'sliding_attention': {'rope_type': 'default', 'rope_theta': 10000.0}}),
    'lara_mini': F('half', head_dim=128),
    'aria_text': F('half'),
    'bamba': F('half', partial_rotary_factor=0.5),
    'beam': F('half', head_dim=128, rope={'sliding_attention': {'rope_type': 'default', 'rope_theta': 10000.0}}),
    'blt_global_transformer': F('interleaved', rope_theta=500000.0),
    'blt_local_decoder': F('interleaved', rope_theta=500000.0),
    'blt_local_encoder': F('interleaved', rope_theta=500000.0),
    'blt_patcher': F('interleaved'),
    'chameleon': F('half'),
    'cohere2_moe': F('interleaved', head_dim=128),
    'csm': F('half', rope_theta=500000.0),
    'csm_depth_decoder_model': F('half', rope_theta=500000.0),
    'deepseek_ocr2_encoder': F('half'),
    'deepseek_ocr2_text': F('half'),
    'dia_decoder': F('half', head_dim=128),
    'dia_encoder': F('half', head_dim=128),
    'dots3_note_audio_encoder': F('half', partial_rotary_factor=0.5),
    'emu3_text_model': F('half', rope_theta=1000000.0),
    'ernie4_5_vl_moe_text': F('interleaved', rope_theta=500000.0, unsupported=(
        "ERNIE-4.5-VL's text module applies M-RoPE in its own layout (height and width interleaved over the first "
        "mrope_section[0] + [1] pairs, temporal last), which rope_ref does not model")),
    'esm': F('half', needs=(('position_embedding_type', 'rotary'),)),   # default 'absolute': no RoPE
    'esmc': F('half'),
    'eurobert': F('half'),
    'evolla': F('half', rope_theta=500000.0),
    'flint': F('half', head_dim=128),
    'glm_ocr_text': F('interleaved', mrope=_MROPE_GLM4V),
    'glmasr_encoder': F('half', partial_rotary_factor=0.5),
    'gradium_phonon_tts': F('half'),
    'granite4_vision_text': F('half'),
    'granite_docling_text': F('half'),
    'granite_swa': F('half'),
    'granitemoe_swa': F('half'),
    'gte': F('half', rope_theta=160000.0),
    'higgs_audio_v2': F('half', rope_theta=500000.0, head_dim=128,
                        rope={
                              'factor': 32.0,
                              'rope_theta': 500000.0,
                              'high_freq_factor': 0.5,
                              'low_freq_factor': 0.125,
                              'original_max_position_embeddings': 1024,
                              'rope_type': 'llama3'}),
    'hrm_text': F('half', head_dim=128),
    'hy_v3': F('half', rope_theta=11158840.0, head_dim=128),
    'idefics': F('half'),
    'jina_embeddings_v3': F('half', rope_theta=20000.0),
    'kolibri1': F('half', head_dim=128),
    'kyutai_speech_to_text': F('half'),
    'laguna': F('half', head_dim=128,
                rope={
                      'full_attention': {'rope_type': 'default', 'rope_theta': 500000.0, 'partial_rotary_factor': 0.5},
                      'sliding_attention': {'rope_type': 'default', 'rope_theta': 10000.0, 'partial_rotary_factor': 1.0}}),
    'lasr_encoder': F('half'),
    'lfm3': F('half', head_dim=128,
              rope={
                    'sliding_attention': {'rope_type': 'default', 'rope_theta': 10000.0},
                    'full_attention': {'rope_type': 'proportional', 'rope_theta': 1000000.0, 'partial_rotary_factor': 0.5}}),
    'mellum': F('half', head_dim=128,
                rope={
                      'full_attention': {'rope_type': 'default', 'rope_theta': 500000.0},
                      'sliding_attention': {'rope_type': 'default', 'rope_theta': 10000.0}}),
    'mimi': F('half'),
    'mimi_decoder': F('half'),
    'mimi_encoder': F('half'),
    'mimo_v2_flash': F('half', head_dim=192,
                       rope={
                             'full_attention': {'rope_type': 'default', 'rope_theta': 5000000.0, 'partial_rotary_factor': 0.334},
                             'sliding_attention': {'rope_type': 'default', 'rope_theta': 10000.0, 'partial_rotary_factor': 0.334}}),
    'minimax': F('half', rope_theta=1000000.0),
    'minimax_m3_vl_text': F('half', rope_theta=5000000.0, head_dim=128),   # its module ignores rotary_dim (64)
    'mllama_text_model': F('half', rope_theta=500000.0),
    'modernbert': F('half',
                    rope={
                          'sliding_attention': {'rope_type': 'default', 'rope_theta': 10000.0},
                          'full_attention': {'rope_type': 'default', 'rope_theta': 160000.0}}),
    'modernbert-decoder': F('half',
                            rope={
                                  'sliding_attention': {'rope_type': 'default', 'rope_theta': 10000.0},
                                  'full_attention': {'rope_type': 'default', 'rope_theta': 160000.0}}),
    'molmo2_text': F('half', head_dim=128),
    'moonshine_streaming': F('interleaved', partial_rotary_factor=0.8),
    'moshi': F('half'),
    'muse_glimmer_assistant': F('half', rope_theta=500000.0, head_dim=128),
    'muse_glimmer_text': F('half', head_dim=128),
    'muse_spark_text': F('half', rope_theta=500000.0),
    'nemotron3_5_transcribe_asr_audio': F('half', partial_rotary_factor=0.5),
    'nemotron3_5_transcribe_word_timestamp': F('half', partial_rotary_factor=0.5),
    'nemotron3_diarization_audio': F('half'),
    'neomme': F('half',
                rope={
                      'sliding_attention': {'rope_type': 'default', 'rope_theta': 10000.0, 'partial_rotary_factor': 1.0},
                      'full_attention': {'rope_type': 'default', 'rope_theta': 1000000.0, 'partial_rotary_factor': 0.25}}),
    'neucodec': F('half'),
    'nomic_bert': F('half', rope_theta=1000.0),
    'olmo_hybrid': F('half'),
    'openai_privacy_filter': F('interleaved', rope_theta=150000.0,
                               rope={
                                     'rope_type': 'yarn',
                                     'factor': 32.0,
                                     'beta_fast': 32.0,
                                     'beta_slow': 1.0,
                                     'truncate': False,
                                     'original_max_position_embeddings': 4096,
                                     'rope_theta': 150000.0}),
    'paddleocr_vl_text': F('half', rope_theta=500000.0, head_dim=128, mrope=_MROPE_QWEN2),
    'pe_audio_encoder': F('interleaved', rope_theta=20000.0, head_dim=128),
    'pe_audio_video_encoder': F('interleaved', rope_theta=20000.0, head_dim=128),
    'pe_video_encoder': F('interleaved', rope_theta=20000.0, head_dim=128),
    'phi4_multimodal': F('half'),
    'pocket_tts': F('half'),
    'pocket_tts_audio_tokenizer': F('half'),
    'pocket_tts_audio_tokenizer_decoder': F('half'),
    'pocket_tts_audio_tokenizer_encoder': F('half'),
    'qwen2_5_omni_talker': F('half', rope_theta=1000000.0, head_dim=128, mrope=_MROPE_QWEN2),
    'qwen2_5_omni_text': F('half', rope_theta=1000000.0, mrope=_MROPE_QWEN2),
    'qwen2_5_vl_text': F('half', rope_theta=1000000.0, mrope=_MROPE_QWEN2),
    'qwen2_vl_text': F('half', rope_theta=1000000.0, mrope=_MROPE_QWEN2),
    'qwen3_5_moe_text': F('half', partial_rotary_factor=0.25, head_dim=256, mrope=_MROPE_QWEN35),
    'qwen3_5_text': F('half', partial_rotary_factor=0.25, head_dim=256, mrope=_MROPE_QWEN35),
    'qwen3_omni_moe_talker_code_predictor': F('half', head_dim=128),
    'qwen3_omni_moe_talker_text': F('half'),
    'qwen3_vl_moe_text': F('half', rope_theta=500000.0, mrope=_MROPE_QWEN3),
    'qwen3_vl_text': F('half', rope_theta=500000.0, head_dim=128, mrope=_MROPE_QWEN3),
    'qwen4_exp_text': F('half', head_dim=256, mrope=_MROPE_QWEN35),
    'recurrent_gemma': F('half', partial_rotary_factor=0.5),
    'step3p5': F('half', head_dim=128, rope={'full_attention': {'rope_type': 'default', 'rope_theta': 10000.0}}),
    't5_gemma_module': F('half', head_dim=256),
    't5gemma2_decoder': F('half', head_dim=256,
                          rope={
                                'sliding_attention': {'rope_type': 'default', 'rope_theta': 10000.0},
                                'full_attention': {'rope_type': 'default', 'rope_theta': 1000000.0}}),
    't5gemma2_text': F('half', head_dim=256,
                       rope={
                             'sliding_attention': {'rope_type': 'default', 'rope_theta': 10000.0},
                             'full_attention': {'rope_type': 'default', 'rope_theta': 1000000.0}}),
    'timesfm2_5': F('half', head_dim=80),
    'ultrabert': F('half',
                   rope={
                         'sliding_attention': {'rope_type': 'default', 'rope_theta': 10000.0},
                         'full_attention': {'rope_type': 'default', 'rope_theta': 2560000.0}}),
    'unlimited_ocr_text': F('half'),
    'voxtral_realtime_encoder': F('half'),
    'voxtral_realtime_text': F('half'),
    'xcodec2': F('half'),
    'zaya': F('half', head_dim=128,
              rope={
                    'hybrid': {'rope_type': 'default', 'rope_theta': 5000000.0, 'partial_rotary_factor': 0.5},
                    'hybrid_sliding': {'rope_type': 'default', 'rope_theta': 10000.0, 'partial_rotary_factor': 0.5}}),
    # M-RoPE families whose published config.json is flat (v4 rope_scaling type "mrope"), and GLM-4V's text model
    "qwen2_vl": F("half", rope_theta=1e6, mrope=_MROPE_QWEN2),
    "qwen2_5_vl": F("half", rope_theta=1e6, mrope=_MROPE_QWEN2),
    "glm4v_text": F("interleaved", mrope=_MROPE_GLM4V),   # rotate_half_llm pairs; GLM-4.1V sets partial 0.5
    "glm4v_moe_text": F("half", partial_rotary_factor=0.5, mrope=_MROPE_GLM4V),
    # Gemma 4: sliding layers default RoPE over head_dim, full-attention layers proportional RoPE over
    # global_head_dim (transformers' per_layer_config) -- one RoPE per layer type
    "gemma4_text": F("half", head_dim=256, layer_heads={"full_attention": ("global_head_dim", 512)},
                     rope={"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                           "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                              "rope_theta": 1000000.0}}),
}
