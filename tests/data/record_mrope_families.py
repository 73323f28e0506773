"""Record the M-RoPE families' rotary modules at position ids that move each axis alone (not needed to run the tests).

Run where torch and transformers are installed, with this checkout on PYTHONPATH:
    PYTHONPATH=. python tests/data/record_mrope_families.py
No downloads: each module is built from its small config in configs/families (random init plays no part in
RoPE).  For v5-qwen2-vl, v5-qwen3-vl-text, v5-glm4v-text and v5-qwen3-5-text (partial rotary, interleaved
axes, GLM-4V's interleaved pairs) it writes ``mrope_families.npz`` (float32; keys ``<config>/<name>``):

* ``pos`` ``(3, 22)``: the (t, h, w) ids, the same as multiaxis_modules' (record_multiaxis.py: POSITIONS) --
  each axis moved alone by one from some rows, all three together, far ids up to 70000;
* ``cos``, ``sin`` ``(22, rotary_dim)``: the module's tables as the family's apply function receives them;
* ``q`` ``(22, head_dim)`` (seeded) and ``out``: q rotated by the family's own ``apply_rotary_pos_emb``;

and ``mrope_families.json``: versions, and per config its model_type, head_dim, rotary_dim and the layout of
the tables' columns (``"cat"``: cat(freqs, freqs), rotate_half; ``"repeat_interleave"``: each column twice in
place, pairs (2i, 2i + 1)).  tests/test_identify_axes_recorded.py replays them with numpy alone.
"""

import importlib
import json
from pathlib import Path

import numpy as np
import torch
import transformers

HERE = Path(__file__).parent
CONFIGS = ("v5-qwen2-vl", "v5-qwen3-vl-text", "v5-glm4v-text", "v5-qwen3-5-text")
POSITIONS = np.array(                                          # as record_multiaxis.py's POSITIONS
    [[0, 1, 2, 2, 2, 2, 2, 2, 5, 6, 7, 7, 7, 7, 57, 57, 57, 57, 107, 108, 4000, 70000],
     [0, 1, 2, 2, 2, 3, 3, 3, 5, 6, 7, 7, 8, 8, 7, 7, 8, 8, 108, 109, 4001, 70000],
     [0, 1, 2, 3, 4, 2, 3, 4, 5, 6, 7, 8, 7, 8, 7, 8, 7, 8, 109, 110, 3000, 70000]])


def record(name):
    cfg = json.loads((HERE / "configs" / "families" / f"{name}.json").read_text())
    config = transformers.AutoConfig.for_model(**cfg)
    if getattr(config, "text_config", None) is not None:        # a multimodal wrapper: its language model
        config = config.text_config
    modeling = importlib.import_module(type(config).__module__.replace(".configuration_", ".modeling_"))
    rotary_cls = next(getattr(modeling, n) for n in dir(modeling) if n.endswith("RotaryEmbedding")
                      and "Vision" not in n)
    module = rotary_cls(config=config)
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    q = np.random.default_rng(4321).standard_normal((1, 1, POSITIONS.shape[1], head_dim)).astype(np.float32)
    x = torch.from_numpy(q)
    cos, sin = module(x, torch.from_numpy(POSITIONS)[:, None])          # (3, batch 1, seq) ids
    out, _ = modeling.apply_rotary_pos_emb(x, x, cos, sin)              # the apply handles the partial split
    c = cos[0].numpy()
    layout = "cat" if np.array_equal(c[:, : c.shape[1] // 2], c[:, c.shape[1] // 2:]) else "repeat_interleave"
    if layout == "repeat_interleave":
        assert np.array_equal(c[:, 0::2], c[:, 1::2]), name
    arrays = {"pos": POSITIONS, "cos": c, "sin": sin[0].numpy(), "q": q[0, 0], "out": out[0, 0].numpy()}
    meta = {"model_type": config.model_type, "head_dim": head_dim, "rotary_dim": int(c.shape[1]), "columns": layout,
            "module": rotary_cls.__name__, "apply": f"{modeling.__name__}.apply_rotary_pos_emb"}
    return arrays, meta


def main():
    arrays, meta = {}, {}
    for name in CONFIGS:
        a, meta[name] = record(name)
        arrays.update({f"{name}/{k}": np.asarray(v, dtype=np.float32) for k, v in a.items()})
    np.savez_compressed(HERE / "mrope_families.npz", **arrays)
    (HERE / "mrope_families.json").write_text(json.dumps(
        {"transformers": transformers.__version__, "torch": torch.__version__, "configs": meta}, indent=1) + "\n")


if __name__ == "__main__":
    main()
