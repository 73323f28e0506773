"""What each transformers family does with RoPE, as data (``FAMILIES[model_type] -> Family``, read off transformers v5
and checked by tests/data/audit_families.py), and each diffusers transformer's axial RoPE (``DIFFUSERS_FAMILIES``)."""

from collections.abc import Callable, Mapping
from dataclasses import dataclass


def _alpha_is_static_ntk(rope, rope_type) -> str:
    """HunYuan's compute_ntk_alpha_rope_parameters: "dynamic" with alpha is static NTK, base * alpha^(d/(d-2))."""
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
        raise ValueError(f"phimoe: rope_ref reads longrope with short_mscale == long_mscale only, got {mscales}")
    rope.update(long_factor=rope.get("short_factor"), attention_factor=mscales[0])
    return rope_type


@dataclass(frozen=True)
class Family:
    """How one ``model_type`` applies RoPE, and the defaults its config class fills in.  ``pairing``: "half" =
    rotate_half (x_i, x_{i+d/2}); "interleaved" = rotate_every_two / complex multiplication of (x_2i, x_2i+1)."""

    pairing: str = "half"
    rope_theta: float = 10000.0        # the config class's default rope_theta
    partial_rotary_factor: float = 1.0
    head_dim: int | None = None        # the config class's default head_dim, when the config has none
    rope: Mapping | None = None        # its default rope section, when the config has none (its rope_theta wins)
    rope_defaults: Mapping | None = None   # rope_type -> keys its config class adds to such a section lacking them
    layers: Mapping | None = None      # v4 layout with one RoPE per layer type: type -> (theta key, default, scaled?)
    head_keys: tuple = ("head_dim",)   # keys giving the features per head, first present wins; () = hidden / heads
    rotary_key: str | None = None      # a key giving the number of rotated features (GPT-J's rotary_dim)
    rotary_default: int | None = None  # ... and its default when the config lacks the key (GPT-J: 64)
    fixed_theta: float | None = None   # a base the modeling code hard-codes (GPT-J, CodeGen: 10^4)
    interleave: str | None = None      # MLA: interleaved pairs out in half layout if rope_interleave ("flag") or always
    needs: tuple = ()                  # (key, value, default): RoPE only when the key (default if null) == value
    quirk: Callable | None = None      # (section, rope_type) -> the method it computes (HunYuan's alpha, PhiMoE)
    keys: tuple = ()                   # section keys only its quirk reads (refused in other families)
    query_keys: tuple = ()             # top-level keys that scale queries, not angles (Llama 4's temperature)
    max_pos_keys: tuple = ("max_position_embeddings", "n_positions")   # the context length, first present wins
    mrope: tuple | None = None         # M-RoPE its module applies: (default mrope_section, MROPE_LAYOUTS' layout)
    mrope_order: tuple = (0, 1, 2)     # the entries of its mrope_section that count temporal, height, width pairs
    unsupported: str | None = None     # why rope_ref refuses this family (its RoPE is one it does not model)
    layer_heads: Mapping | None = None  # layer type -> (key, default) of a head size that differs by layer type
    parts: Mapping | None = None       # layer_type -> (head key, default, pairing, output_pairing): DSA indexers
    clockwise: bool = False            # its rotate_half is cat(x2, -x1): every pair turns by -theta_j m (NanoChat)


def _per_layer(**sections) -> dict:
    """Default RoPE sections by layer type: layer_type=rope_theta, (rope_theta, partial_rotary_factor) or a dict."""
    shorthand = ("rope_theta", "partial_rotary_factor")
    return {layer_type: {"rope_type": "default", **(keys if isinstance(keys, dict) else
                                                     dict(zip(shorthand, keys if isinstance(keys, tuple) else [keys])))}
            for layer_type, keys in sections.items()}


_MROPE_QWEN2 = ((16, 24, 24), False)     # Qwen2VLRotaryEmbedding: freq.split(mrope_section), blocks in theta order
_MROPE_QWEN3 = ((24, 20, 20), True)      # Qwen3VLTextRotaryEmbedding: apply_interleaved_mrope
_MROPE_QWEN35 = ((11, 11, 10), True)     # Qwen3_5TextRotaryEmbedding: interleaved, partial_rotary_factor 0.25
_MROPE_GLM4V = ((8, 12, 12), False)      # Glm4vTextRotaryEmbedding: blocks, over the rotated half
_MROPE_ERNIE = ((22, 22, 20), "hw_alternating")   # Ernie4_5_VLMoeTextRotaryEmbedding: [h, w, t] in the config
_MLA = dict(pairing="interleaved", head_keys=("qk_rope_head_dim",), head_dim=64)   # the rotated part of each head
_MLA_HALF_OUT = dict(_MLA, interleave="always")    # interleaved pairs in, half layout out, whatever rope_interleave
_SINUSOIDAL = dict(rotary_key="rotary_dim", rotary_default=64, fixed_theta=10000.0)   # create_sinusoidal_positions
_GPT_OSS_YARN = {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0, "truncate": False,
                 "original_max_position_embeddings": 4096}
_LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
           "original_max_position_embeddings": 8192}
_MISTRAL_YARN = {"rope_type": "yarn", "beta_fast": 32.0, "beta_slow": 1.0, "mscale_all_dim": 1.0, "mscale": 1.0,
                 "llama_4_scaling_beta": 0.1}    # llama_4_scaling_beta scales the queries (get_llama_4_attn_scale)

#: model_type -> Family; families with the same defaults share a row.  "[layer types]": one RoPE per layer type.
FAMILIES = {
    **dict.fromkeys((  # rotate_half on the whole head, generic defaults (rope_theta 10000; head_dim or hidden / heads)
        "arcee", "aria_text", "chameleon", "deepseek_ocr2_encoder", "deepseek_ocr2_text", "diffllama", "doge", "dots1",
        "esmc", "eurobert", "exaone4", "exaone_moe", "falcon_h1", "gpt_neox_japanese", "gradium_phonon_tts", "granite",
        "granite4_vision_text", "granite_docling_text", "granite_swa", "granitemoe", "granitemoe_swa",
        "granitemoeshared", "hyperclovax", "idefics", "jais2", "kyutai_speech_to_text", "lasr_encoder", "llama", "mimi",
        "mimi_decoder", "mimi_encoder", "ministral", "mistral", "moshi", "nemotron3_diarization_audio", "neucodec",
        "olmo", "olmo2", "olmo_hybrid", "olmoe", "phi3", "phi4_multimodal", "pocket_tts", "pocket_tts_audio_tokenizer",
        "pocket_tts_audio_tokenizer_decoder", "pocket_tts_audio_tokenizer_encoder", "qwen2", "qwen2_moe", "qwen3_moe",
        "qwen3_omni_moe_talker_text", "starcoder2", "unlimited_ocr_text", "voxtral_realtime_encoder",
        "voxtral_realtime_text", "xcodec2"), Family()),
    **dict.fromkeys(("mixtral", "lfm2", "lfm2_moe", "emu3_text_model", "minimax"), Family(rope_theta=1e6)),
    **dict.fromkeys(("olmo3", "flex_olmo", "bitnet", "csm", "csm_depth_decoder_model", "evolla", "mllama_text_model",
                     "muse_spark_text"), Family(rope_theta=500000.0)),
    **dict.fromkeys(("qwen3", "seed_oss", "afmoe", "lara_mini", "dia_decoder", "dia_encoder", "flint", "hrm_text",
                     "kolibri1", "kolibri1_1", "molmo2_text", "muse_glimmer_text",
                     "qwen3_omni_moe_talker_code_predictor"), Family(head_dim=128)),
    **dict.fromkeys(("gemma", "gemma2", "vaultgemma", "t5_gemma_module"), Family(head_dim=256)),
    **dict.fromkeys(("phi", "persimmon", "nemotron", "bamba", "dots3_note_audio_encoder", "glmasr_encoder",
                     "nemotron3_5_transcribe_asr_audio", "nemotron3_5_transcribe_word_timestamp", "recurrent_gemma",
                     "glm4_moe"), Family(partial_rotary_factor=0.5)),    # glm4_moe (GLM-4.5): rotate_half, unlike glm
    **dict.fromkeys(("gpt_neox", "stablelm"), Family(partial_rotary_factor=0.25)),   # gpt_neox: rotary_pct in old ones
    **dict.fromkeys(("gemma3_text", "gemma3n_text"), Family(head_dim=256, layers={    # [layer types]
        "full_attention": ("rope_theta", 1e6, True), "sliding_attention": ("rope_local_base_freq", 1e4, False)})),
    **dict.fromkeys(("cohere", "ernie4_5_moe", "blt_global_transformer", "blt_local_decoder", "blt_local_encoder"),
                    Family("interleaved", rope_theta=500000.0)),
    **dict.fromkeys(("cohere2", "blt_patcher"), Family("interleaved")),
    **dict.fromkeys(("glm", "glm4"), Family("interleaved", partial_rotary_factor=0.5, head_dim=128)),
    **dict.fromkeys(("pe_audio_encoder", "pe_audio_video_encoder", "pe_video_encoder"),
                    Family("interleaved", rope_theta=20000.0, head_dim=128)),
    "qwen3_next": Family(partial_rotary_factor=0.25, head_dim=256),
    "falcon": Family(head_keys=(), needs=(("alibi", False, False),)),        # alibi: ALiBi, not RoPE
    "granitemoehybrid": Family(needs=(("position_embedding_type", "rope", None),)),
    "esm": Family(needs=(("position_embedding_type", "rotary", "absolute"),)),
    "smollm3": Family(rope_theta=2e6),
    "solar_open": Family(rope_theta=1e6, head_dim=128),
    "muse_glimmer_assistant": Family(rope_theta=500000.0, head_dim=128),
    "minimax_m2": Family(rope_theta=5e6, head_dim=128, rotary_key="rotary_dim"),   # rotary_dim in its configs
    **dict.fromkeys(("minimax_m3_vl_text", "minicpm5_moe"), Family(rope_theta=5e6, head_dim=128)),  # rotary_dim unused
    "hy_v3": Family(rope_theta=11158840.0, head_dim=128),
    "jina_embeddings_v3": Family(rope_theta=20000.0),
    "gte": Family(rope_theta=160000.0),
    "nomic_bert": Family(rope_theta=1000.0),
    "timesfm2_5": Family(head_dim=80),
    **dict.fromkeys(("hunyuan_v1_dense", "hunyuan_v1_moe"), Family(quirk=_alpha_is_static_ntk, keys=("alpha",))),
    "phimoe": Family(rope_theta=1e6, quirk=_phimoe_longrope),
    "nanochat": Family(clockwise=True),
    "gpt_oss": Family(rope_theta=150000.0, head_dim=64, rope=_GPT_OSS_YARN),
    "openai_privacy_filter": Family("interleaved", rope_theta=150000.0, rope=dict(_GPT_OSS_YARN, rope_theta=150000.0)),
    **dict.fromkeys(("apertus", "apertus1p5_text"), Family(rope_theta=12e6, rope=dict(_LLAMA3, rope_theta=12e6))),
    "cwm": Family(rope_theta=1e6, head_dim=128, rope=dict(_LLAMA3, rope_theta=1e6, factor=16.0)),
    "higgs_audio_v2": Family(rope_theta=500000.0, head_dim=128, rope=dict(_LLAMA3, rope_theta=500000.0, factor=32.0,
        low_freq_factor=0.125, high_freq_factor=0.5, original_max_position_embeddings=1024)),
    "ministral3": Family(rope_theta=1e6, head_dim=128, rope=dict(_MISTRAL_YARN, rope_theta=1e6, factor=16.0,
                                                                   original_max_position_embeddings=16384)),
    **dict.fromkeys(("gptj", "codegen"), Family("interleaved", **_SINUSOIDAL)),
    "helium": Family("interleaved", rope_theta=100000.0, head_dim=128),
    "ernie4_5": Family("interleaved", rope_theta=500000.0, head_dim=128),
    "cohere2_moe": Family("interleaved", head_dim=128),
    "moonshine_streaming": Family("interleaved", partial_rotary_factor=0.8),
    "llama4_text": Family("interleaved", rope_theta=500000.0, head_dim=128,
                          query_keys=("attn_temperature_tuning", "floor_scale", "attn_scale")),
    # MLA: deepseek_v2's output stays interleaved (complex freqs_cis); DeepSeek-V3's attention and its kin call
    # apply_rotary_pos_emb_interleave when rope_interleave, the rest always (their DSA indexers: parts=)
    "deepseek_v2": Family(**_MLA),
    **dict.fromkeys(("deepseek_v3", "kimi_k2", "glm4_moe_lite", "axk1", "youtu"), Family(interleave="flag", **_MLA)),
    "mistral4": Family(interleave="flag", **_MLA, rope=dict(_MISTRAL_YARN, rope_theta=10000.0, factor=128.0,
                                                            original_max_position_embeddings=8192)),
    **dict.fromkeys(("axk2", "hy_v4"), Family(**_MLA_HALF_OUT)),     # hy_v4: rotate_half in transformers 5.24
    "hy_v4_vl_text": Family(**_MLA_HALF_OUT, mrope=((12, 10, 10), True)),    # Qwen3-VL's interleaved M-RoPE layout
    "deepseek_v32": Family(**_MLA_HALF_OUT, parts={"indexer": ("index_head_dim", 128, "half", None)}),  # indexer: half
    # glm_moe_dsa's indexer, transformers 5.24: interleaved in, half out
    "glm_moe_dsa": Family(**_MLA_HALF_OUT, parts={"indexer": ("index_head_dim", 128, "interleaved", "half")}),
    "bailing_hybrid": Family(**_MLA_HALF_OUT, rope_theta=6e6, max_pos_keys=("model_max_length",)),   # attribute_map
    "dots3_note_text": Family(**_MLA_HALF_OUT, rope=_per_layer(sliding_attention=50000.0, indexed_attention=8e7)),
    "longcat_flash": Family(**_MLA_HALF_OUT, rope_theta=1e7),
    "mistral_large4_text": Family(**_MLA_HALF_OUT, rope=dict(rope_type="yarn", rope_theta=10000.0, factor=2048.0,
        original_max_position_embeddings=512, beta_fast=32.0, beta_slow=1.0, attention_factor=1.0)),
    "minicpm3": Family(head_keys=("qk_rope_head_dim",), head_dim=32),
    # DeepSeek-V4: interleaved pairs on the trailing qk_rope_head_dim (64) of each 512-wide head (head_dim here is
    # that rotated part, as for MLA); layer_type "main" (rope_theta) or "compress" (compress_rope_theta, yarn)
    "deepseek_v4": Family(**_MLA, rope_defaults={"yarn": {"attention_factor": 1.0}}, layers={   # no mscale
        "main": ("rope_theta", 1e4, False), "compress": ("compress_rope_theta", 160000.0, True)}),
    "dory": Family(head_dim=256, rope=_per_layer(full_attention=1e7, sliding_attention=1e4)),   # [layer types]
    "beam": Family(head_dim=128, rope=_per_layer(sliding_attention=1e4)),
    "ergo": Family("interleaved", rope_theta=1e6, head_keys=(), rope=_per_layer(sliding_attention=1e6)),   # full: NoPE
    "step3p5": Family(head_dim=128, rope=_per_layer(full_attention=1e4)),
    "mellum": Family(head_dim=128, rope=_per_layer(full_attention=500000.0, sliding_attention=1e4)),
    "ultrabert": Family(rope=_per_layer(sliding_attention=1e4, full_attention=2560000.0)),
    **dict.fromkeys(("modernbert", "modernbert-decoder"),
                    Family(rope=_per_layer(sliding_attention=1e4, full_attention=160000.0))),
    **dict.fromkeys(("t5gemma2_decoder", "t5gemma2_text"),
                    Family(head_dim=256, rope=_per_layer(sliding_attention=1e4, full_attention=1e6))),
    "laguna": Family(head_dim=128, rope=_per_layer(full_attention=(500000.0, 0.5), sliding_attention=(1e4, 1.0))),
    "neomme": Family(rope=_per_layer(sliding_attention=(1e4, 1.0), full_attention=(1e6, 0.25))),
    "mimo_v2_flash": Family(head_dim=192, rope=_per_layer(full_attention=(5e6, 0.334), sliding_attention=(1e4, 0.334))),
    "zaya": Family(head_dim=128, rope=_per_layer(hybrid=(5e6, 0.5), hybrid_sliding=(1e4, 0.5))),
    "lfm3": Family(head_dim=128, rope=_per_layer(sliding_attention=1e4, full_attention=dict(
        rope_type="proportional", rope_theta=1e6, partial_rotary_factor=0.5))),
    # Gemma 4: sliding layers default RoPE over head_dim, full-attention layers proportional RoPE over global_head_dim
    "gemma4_text": Family(head_dim=256, layer_heads={"full_attention": ("global_head_dim", 512)},
                          rope=_per_layer(sliding_attention=1e4, full_attention=dict(
                              rope_type="proportional", partial_rotary_factor=0.25, rope_theta=1e6))),
    **dict.fromkeys(("qwen2_vl", "qwen2_5_vl", "qwen2_vl_text", "qwen2_5_vl_text", "qwen2_5_omni_text"),  # M-RoPE
                    Family(rope_theta=1e6, mrope=_MROPE_QWEN2)),
    "qwen2_5_omni_talker": Family(rope_theta=1e6, head_dim=128, mrope=_MROPE_QWEN2),
    "paddleocr_vl_text": Family(rope_theta=500000.0, head_dim=128, mrope=_MROPE_QWEN2),
    "qwen3_vl_moe_text": Family(rope_theta=500000.0, mrope=_MROPE_QWEN3),
    "qwen3_vl_text": Family(rope_theta=500000.0, head_dim=128, mrope=_MROPE_QWEN3),
    **dict.fromkeys(("qwen3_5_text", "qwen3_5_moe_text"), Family(partial_rotary_factor=0.25, head_dim=256,
                                                                 mrope=_MROPE_QWEN35)),
    "qwen4_exp_text": Family(head_dim=256, mrope=_MROPE_QWEN35),
    **dict.fromkeys(("glm4v_text", "glm_ocr_text"), Family("interleaved", mrope=_MROPE_GLM4V)),   # rotate_half_llm
    "glm4v_moe_text": Family(partial_rotary_factor=0.5, mrope=_MROPE_GLM4V),
    "ernie4_5_vl_moe_text": Family("interleaved", rope_theta=500000.0, mrope=_MROPE_ERNIE, mrope_order=(2, 0, 1)),
    "hunyuan_vl_text": Family(unsupported=(
        "transformers' HunYuanVLRotaryEmbedding splits cat(freqs, freqs) into chunks of 2*s per mrope_section entry: "
        "on image tokens a feature and its rotate_half partner take angles from different axes, not a rotation")),
}

@dataclass(frozen=True)
class AxialFamily:
    """How one diffusers transformer class splits its heads into axes, and its ``__init__`` defaults."""

    head_dim: int = 128                 # the class's default attention_head_dim
    axes_key: str | None = None         # config key of the feature dims per axis (twice the pairs)
    axes_dims: tuple | Callable = ()    # their default; or, without a key, the module's split of head_dim
    theta: float = 10000.0              # the class's default theta, or the one its code fixes
    theta_key: str | None = None        # config key of theta; None: fixed by the code
    needs: str | None = None            # a flag that must be true for the model to apply RoPE


#: ``_class_name`` -> AxialFamily, read off diffusers 0.42.1: axis a's dim_a features turn at theta^(-2k/dim_a).
DIFFUSERS_FAMILIES = {
    "FluxTransformer2DModel": AxialFamily(axes_key="axes_dims_rope", axes_dims=(16, 56, 56)),
    "Flux2Transformer2DModel": AxialFamily(axes_key="axes_dims_rope", axes_dims=(32, 32, 32, 32), theta=2000.0,
                                           theta_key="rope_theta"),
    "HunyuanVideoTransformer3DModel": AxialFamily(axes_key="rope_axes_dim", axes_dims=(16, 56, 56), theta=256.0,
                                                  theta_key="rope_theta"),
    "QwenImageTransformer2DModel": AxialFamily(axes_key="axes_dims_rope", axes_dims=(16, 56, 56)),
    # WanRotaryPosEmbed: h = w = 2 floor(d/6) features, t the rest; get_3d_rotary_pos_embed: t = d/4, h = w = 3d/8
    "WanTransformer3DModel": AxialFamily(axes_dims=lambda d: (d - 4 * (d // 6), 2 * (d // 6), 2 * (d // 6))),
    "CogVideoXTransformer3DModel": AxialFamily(head_dim=64, axes_dims=lambda d: (d // 4, d // 8 * 3, d // 8 * 3),
                                               needs="use_rotary_positional_embeddings"),
}
