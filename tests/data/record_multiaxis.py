"""Record multi-axis RoPE from the real libraries (not needed to run the tests).

Run where torch, transformers and timm are installed, with this checkout on PYTHONPATH:
    PYTHONPATH=. python tests/data/record_multiaxis.py
No downloads: every module is built from a small config with random init.  It writes

* ``multiaxis_rope_index.json``: transformers' ``get_rope_index`` of Qwen2-VL, Qwen2.5-VL and
  Qwen3-VL (the ``<Model>Model`` methods, called on a stand-in that carries only the config) for
  several sequences of text, image and video tokens, each with the segment list
  ``rope_ref.multiaxis.mrope_position_ids`` takes for it, the ``(3, seq)`` ids and
  ``mrope_position_deltas``;
* ``multiaxis_modules.npz`` (float32; keys ``<case>/<name>``) and ``multiaxis_modules.json``
  (each case's settings): for transformers' ``Qwen2VLRotaryEmbedding``,
  ``Qwen2_5_VLRotaryEmbedding`` and ``Qwen3VLTextRotaryEmbedding`` (head_dim 128, their published
  ``mrope_section``) the position ids ``pos`` ``(3, seq)``, the module's ``cos``/``sin``
  ``(seq, head_dim)`` and the rotated query ``out`` ``(heads, seq, head_dim)`` of a seeded ``q``
  through the family's ``apply_rotary_pos_emb``; for timm's ``RotaryEmbeddingCat``
  (``in_pixels=False``; 'ij' and 'xy' grids, both pairings) and ``RotaryEmbeddingMixed`` (its
  learned ``freqs``) the embedding ``sin``/``cos`` ``(H*W, dim)`` and the rotated ``out`` of a seeded
  ``x`` through ``apply_rot_embed_cat``.

Under transformers < 5.3 (whose ``get_rope_index`` takes token ids with vision-start markers and
resumes text at the largest id + 1) it records only the index cases that API can express (every
image or video after a text segment whose last token is the vision-start marker; whole seconds per
grid, which 5.2 truncates to integers) into ``multiaxis_rope_index_v<major>.<minor>.json``, e.g.
    pip install --target /tmp/tf52 --no-deps transformers==5.2.0   (plus tokenizers 0.22, huggingface-hub 1.x)
    PYTHONPATH=/tmp/tf52:. python tests/data/record_multiaxis.py

tests/test_multiaxis.py replays all of them with numpy alone.
"""

import json
from pathlib import Path

import numpy as np
import timm
import torch
import transformers
from timm.layers import pos_embed_sincos as timm_rope
from transformers.models.qwen2_5_vl import modeling_qwen2_5_vl as m25
from transformers.models.qwen2_vl import modeling_qwen2_vl as m2
from transformers.models.qwen3_vl import modeling_qwen3_vl as m3

HERE = Path(__file__).parent
TYPE = {"text": 0, "image": 1, "video": 2}

# (model, case name, segments as rope_ref.multiaxis.mrope_position_ids takes them, vision settings)
INDEX_CASES = [
    ("qwen2_vl", "text-image-text", [["text", 3], ["image", [1, 4, 6]], ["text", 4]], {}),
    ("qwen2_vl", "image-first-two-images", [["image", [1, 8, 4]], ["text", 2], ["image", [1, 2, 2]], ["text", 1]], {}),
    ("qwen2_vl", "long-video", [["text", 2], ["video", [4, 4, 4]], ["text", 3]], {}),
    ("qwen2_vl", "merge-1", [["text", 1], ["image", [1, 3, 2]], ["text", 2]], {"spatial_merge_size": 1}),
    ("qwen2_5_vl", "video-2s", [["text", 2], ["video", [3, 4, 6], 1.0], ["text", 3]], {"tokens_per_second": 2}),
    ("qwen2_5_vl", "video-fractional-image", [["text", 1], ["video", [4, 2, 2], 0.5], ["image", [1, 4, 4]],
                                              ["text", 2]], {"tokens_per_second": 3}),
    ("qwen2_5_vl", "video-default-seconds", [["text", 1], ["video", [2, 2, 4]], ["text", 1]], {"tokens_per_second": 2}),
    ("qwen2_5_vl", "two-videos", [["video", [2, 2, 2], 2.0], ["text", 1], ["video", [3, 2, 2], 0.25],
                                  ["text", 2]], {"tokens_per_second": 4}),
    ("qwen3_vl", "frames-with-timestamps", [["text", 2], ["video", [1, 4, 4]], ["text", 3], ["video", [1, 4, 4]],
                                            ["text", 3], ["video", [1, 4, 4]], ["text", 2]], {}),
    ("qwen3_vl", "image-text", [["text", 1], ["image", [1, 6, 2]], ["text", 2]], {}),
]


class _Holder:
    """What get_rope_index reads from ``self``: the config and get_vision_position_ids."""

    def __init__(self, model_cls, config):
        self.config = config
        if hasattr(model_cls, "get_vision_position_ids"):          # transformers >= 5.3
            self.get_vision_position_ids = model_cls.get_vision_position_ids.__get__(self)
        self.get_rope_index = model_cls.get_rope_index.__get__(self)


def rope_index_case(model, segments, settings):
    merge = settings.get("spatial_merge_size", 2)
    if model == "qwen2_vl":
        config = transformers.Qwen2VLConfig(vision_config={"spatial_merge_size": merge})
        holder = _Holder(m2.Qwen2VLModel, config)
    elif model == "qwen2_5_vl":
        config = transformers.Qwen2_5_VLConfig(vision_config={"spatial_merge_size": merge,
                                                              "tokens_per_second": settings["tokens_per_second"]})
        holder = _Holder(m25.Qwen2_5_VLModel, config)
    else:
        config = transformers.Qwen3VLConfig(vision_config={"spatial_merge_size": merge})
        holder = _Holder(m3.Qwen3VLModel, config)
    types, images, videos, seconds = [], [], [], []
    for seg in segments:
        if seg[0] == "text":
            types += [0] * seg[1]
            continue
        t, h, w = seg[1]
        types += [TYPE[seg[0]]] * (t * h * w // merge ** 2)
        (images if seg[0] == "image" else videos).append([t, h, w])
        if seg[0] == "video" and len(seg) == 3:
            seconds.append(seg[2])
    if model == "qwen3_vl":      # its get_rope_index splits each video into frames; give it the frames merged back
        videos = [[sum(v[0] for v in videos), *videos[0][1:]]] if videos else []
    kwargs = {}
    if images:
        kwargs["image_grid_thw"] = torch.tensor(images)
    if videos:
        kwargs["video_grid_thw"] = torch.tensor(videos)
    if seconds:
        assert len(seconds) == len(videos), "give seconds for every video or for none"
        kwargs["second_per_grid_ts"] = torch.tensor(seconds, dtype=torch.float32)
    seq = len(types)
    ids, deltas = holder.get_rope_index(torch.zeros(1, seq, dtype=torch.long),
                                        torch.tensor([types], dtype=torch.int32), **kwargs)
    return ids[:, 0].tolist(), int(deltas[0, 0])


IMAGE_TOKEN, VIDEO_TOKEN, VISION_START, FILLER = 151655, 151656, 151652, 100


def old_api_can_express(segments):
    """transformers < 5.3 finds an image or video by the vision-start marker just before it."""
    prev = None
    for seg in segments:
        if seg[0] != "text" and (prev is None or prev[0] != "text"):
            return False
        if seg[0] == "video" and len(seg) == 3 and seg[2] != int(seg[2]):
            return False
        prev = seg
    return True


def rope_index_case_old_api(model, segments, settings):
    """get_rope_index(input_ids, image_grid_thw, video_grid_thw, second_per_grid_ts) of transformers < 5.3."""
    merge = settings.get("spatial_merge_size", 2)
    ids, images, videos, seconds = [], [], [], []
    for seg in segments:
        if seg[0] == "text":
            ids += [FILLER] * seg[1]
            continue
        ids[-1] = VISION_START
        t, h, w = seg[1]
        ids += [IMAGE_TOKEN if seg[0] == "image" else VIDEO_TOKEN] * (t * h * w // merge ** 2)
        (images if seg[0] == "image" else videos).append([t, h, w])
        if seg[0] == "video" and len(seg) == 3:
            seconds.append(seg[2])
    tokens = {"image_token_id": IMAGE_TOKEN, "video_token_id": VIDEO_TOKEN, "vision_start_token_id": VISION_START}
    if model == "qwen2_vl":
        holder = _Holder(m2.Qwen2VLModel, transformers.Qwen2VLConfig(vision_config={"spatial_merge_size": merge}, **tokens))
    elif model == "qwen2_5_vl":
        holder = _Holder(m25.Qwen2_5_VLModel, transformers.Qwen2_5_VLConfig(
            vision_config={"spatial_merge_size": merge, "tokens_per_second": settings["tokens_per_second"]}, **tokens))
    else:
        holder = _Holder(m3.Qwen3VLModel, transformers.Qwen3VLConfig(vision_config={"spatial_merge_size": merge}, **tokens))
        videos = [[sum(v[0] for v in videos), *videos[0][1:]]] if videos else []
    kwargs = {"image_grid_thw": torch.tensor(images) if images else None,
              "video_grid_thw": torch.tensor(videos) if videos else None}
    if seconds:
        kwargs["second_per_grid_ts"] = torch.tensor(seconds, dtype=torch.float32)
    out, deltas = holder.get_rope_index(torch.tensor([ids]), **kwargs)
    return out[:, 0].tolist(), int(deltas[0, 0])


def old_api():
    major, minor = (int(v) for v in transformers.__version__.split(".")[:2])
    return (major, minor) < (5, 3)


def record_rope_index():
    cases = []
    for model, name, segments, settings in INDEX_CASES:
        if old_api() and not old_api_can_express(segments):
            continue
        ids, delta = (rope_index_case_old_api if old_api() else rope_index_case)(model, segments, settings)
        cases.append({"model": model, "name": name, "segments": segments,
                      "spatial_merge_size": settings.get("spatial_merge_size", 2),
                      "tokens_per_second": settings.get("tokens_per_second"),
                      "position_ids": ids, "mrope_position_deltas": delta})
    out = {"transformers": transformers.__version__, "torch": torch.__version__,
           "what": "transformers' get_rope_index, (3, seq) position ids of one sequence", "cases": cases}
    stem = "multiaxis_rope_index" + (f"_v{'.'.join(transformers.__version__.split('.')[:2])}" if old_api() else "")
    (HERE / f"{stem}.json").write_text(json.dumps(out, indent=1) + "\n")


# ---- rotary modules ------------------------------------------------------------------------------

QWEN_MODULES = [
    # case, text config class, rotary module, apply module, rope_parameters
    ("qwen2_vl", transformers.Qwen2VLTextConfig, m2.Qwen2VLRotaryEmbedding, m2,
     {"rope_type": "default", "rope_theta": 1e6, "mrope_section": [16, 24, 24]}),
    ("qwen2_5_vl", transformers.Qwen2_5_VLTextConfig, m25.Qwen2_5_VLRotaryEmbedding, m25,
     {"rope_type": "default", "rope_theta": 1e6, "mrope_section": [16, 24, 24]}),
    ("qwen3_vl", transformers.Qwen3VLTextConfig, m3.Qwen3VLTextRotaryEmbedding, m3,
     {"rope_type": "default", "rope_theta": 5e6, "mrope_section": [24, 20, 20], "mrope_interleaved": True}),
]
# a prompt with an image, a video (scaled time) and text after both, as (3, seq) ids; plus large ids
POSITIONS = np.array(
    [[0, 1, 2, 2, 2, 2, 2, 2, 5, 6, 7, 7, 7, 7, 57, 57, 57, 57, 107, 108, 4000, 70000],
     [0, 1, 2, 2, 2, 3, 3, 3, 5, 6, 7, 7, 8, 8, 7, 7, 8, 8, 108, 109, 4001, 70000],
     [0, 1, 2, 3, 4, 2, 3, 4, 5, 6, 7, 8, 7, 8, 7, 8, 7, 8, 109, 110, 3000, 70000]])
HEADS, HEAD_DIM = 2, 128


def record_qwen_modules(arrays, meta):
    q = np.random.default_rng(1234).standard_normal((1, HEADS, POSITIONS.shape[1], HEAD_DIM)).astype(np.float32)
    for case, config_cls, rotary_cls, modeling, rope in QWEN_MODULES:
        config = config_cls(hidden_size=HEADS * HEAD_DIM, num_attention_heads=HEADS, num_key_value_heads=HEADS,
                            head_dim=HEAD_DIM, rope_parameters=dict(rope))
        module = rotary_cls(config)
        pos = torch.tensor(POSITIONS)[:, None, :]                         # (3, batch 1, seq)
        x = torch.from_numpy(q)
        cos, sin = module(x, pos)
        out, _ = modeling.apply_rotary_pos_emb(x, x, cos, sin)
        arrays[f"{case}/pos"] = POSITIONS.astype(np.float32)
        arrays[f"{case}/q"] = q[0]
        arrays[f"{case}/cos"] = cos[0].numpy()
        arrays[f"{case}/sin"] = sin[0].numpy()
        arrays[f"{case}/out"] = out[0].numpy()
        meta[case] = {"library": "transformers", "module": rotary_cls.__name__,
                      "apply": f"{modeling.__name__}.apply_rotary_pos_emb", "head_dim": HEAD_DIM,
                      "rope_parameters": rope, "pairing": "half"}


TIMM_CASES = [
    # case, constructor kwargs, grid (H, W)
    ("timm_cat_xy_base100", {"dim": 32, "in_pixels": False, "temperature": 100.0, "grid_indexing": "xy"}, (3, 5)),
    ("timm_cat_ij_half", {"dim": 32, "in_pixels": False, "temperature": 10000.0, "grid_indexing": "ij",
                          "rotate_half": True}, (4, 3)),
    ("timm_cat_ij_interleaved", {"dim": 24, "in_pixels": False, "temperature": 10000.0, "grid_indexing": "ij"}, (6, 7)),
]


def record_timm(arrays, meta):
    torch.manual_seed(0)
    for case, kwargs, (h, w) in TIMM_CASES:
        rope = timm_rope.RotaryEmbeddingCat(**kwargs)
        emb = rope.get_embed((h, w))                                            # (H*W, 2*dim): sin | cos
        x = torch.from_numpy(np.random.default_rng(7).standard_normal((1, h * w, kwargs["dim"])).astype(np.float32))
        out = timm_rope.apply_rot_embed_cat(x, emb, half=kwargs.get("rotate_half", False))
        sin, cos = emb.chunk(2, -1)
        arrays[f"{case}/sin"], arrays[f"{case}/cos"] = sin.numpy(), cos.numpy()
        arrays[f"{case}/x"], arrays[f"{case}/out"] = x[0].numpy(), out[0].numpy()
        meta[case] = {"library": "timm", "module": "RotaryEmbeddingCat", "kwargs": kwargs, "grid": [h, w],
                      "pairing": "half" if kwargs.get("rotate_half") else "interleaved"}
    # RoPE-Mixed: learned (2, depth, heads, head_dim/2) frequencies, a dense F per block and head.
    dim, depth, heads, (h, w) = 32, 2, 2, (3, 4)
    rope = timm_rope.RotaryEmbeddingMixed(dim=dim, depth=depth, num_heads=heads, temperature=10.0)
    emb = rope.get_embed((h, w))                                                # (depth, heads, H*W, 2*head_dim)
    x = torch.from_numpy(np.random.default_rng(8).standard_normal((1, heads, h * w, dim // heads)).astype(np.float32))
    out = timm_rope.apply_rot_embed_cat(x, emb[1])                              # block 1
    sin, cos = emb.chunk(2, -1)
    arrays["timm_mixed/freqs"] = rope.freqs.detach().numpy()
    arrays["timm_mixed/sin"], arrays["timm_mixed/cos"] = sin.detach().numpy(), cos.detach().numpy()
    arrays["timm_mixed/x"], arrays["timm_mixed/out_block1"] = x[0].numpy(), out[0].detach().numpy()
    meta["timm_mixed"] = {"library": "timm", "module": "RotaryEmbeddingMixed", "dim": dim, "depth": depth,
                          "num_heads": heads, "temperature": 10.0, "grid": [h, w], "grid_indexing": "xy",
                          "pairing": "interleaved"}


def main():
    record_rope_index()
    if old_api():
        return
    arrays, meta = {}, {}
    record_qwen_modules(arrays, meta)
    record_timm(arrays, meta)
    np.savez_compressed(HERE / "multiaxis_modules.npz", **{k: np.asarray(v, dtype=np.float32) for k, v in arrays.items()})
    (HERE / "multiaxis_modules.json").write_text(json.dumps(
        {"transformers": transformers.__version__, "timm": timm.__version__, "torch": torch.__version__,
         "cases": meta}, indent=1) + "\n")


if __name__ == "__main__":
    main()
