"""Record transformers' LlamaRotaryEmbedding and apply_rotary_pos_emb for notebooks 06 and 07 (not needed to run the
tests).

Run where torch and transformers are installed:
    python tests/data/record_llama_rotary.py
No downloads: the module is built from Llama 3 8B's published config.json (shipped in rope_ref/teaching/data; random
init plays no part in RoPE).  It writes ``rope_ref/teaching/data/llama3_rotary.npz`` (package data: notebook 07 replays
it in an installed copy; keys below) and ``tests/data/llama3_rotary.json`` (versions, the calls made):

* ``inv_freq`` ``(64,)`` float32: the module's ``inv_freq`` buffer as built; ``inv_freq_bf16``: the same buffer
  after ``module.to(torch.bfloat16)`` (read back as float32);
* ``cos_half``, ``sin_half`` ``(ROWS, 64)`` float32: ``module(q, position_ids)`` for float32 ``q`` at position ids
  0..ROWS-1, first half of the columns (the module returns cat(freqs, freqs): the script checks the halves are
  equal); ``cos_bf16``, ``sin_bf16`` ``(4, 64)``: the same at ids ``BF16_IDS`` from the module after
  ``.to(torch.bfloat16)``, still called with float32 ``q`` (so only the buffer was cast);
* in the json, ``rotary_buffers``: the dtypes of a tiny LlamaForCausalLM's rotary buffers after
  ``from_pretrained(..., dtype=torch.bfloat16)`` and after ``model.to(torch.bfloat16)``;
* ``q``, ``k`` ``(2, 2, 8, 128)`` float32 (seeded, (batch, heads, seq, head_dim)), ``position_ids`` ``(2, 8)``
  (row 0 at 0.., row 1 at 200..), and ``q_out``, ``k_out``: ``apply_rotary_pos_emb(q, k, cos, sin)`` with the
  module's cos and sin at those ids -- what notebook 07's replay must reproduce.
"""

import json
import tempfile
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers.models.llama import modeling_llama

HERE = Path(__file__).parent
CONFIG = HERE.parents[1] / "rope_ref" / "teaching" / "data" / "meta-llama-3-8b.json"
ROWS = 256
BF16_IDS = [1, 10, 100, 255]


def main():
    raw = json.loads(CONFIG.read_text())
    config = transformers.AutoConfig.for_model(**{k: v for k, v in raw.items() if k != "transformers_version"})
    module = modeling_llama.LlamaRotaryEmbedding(config=config)
    arrays = {"inv_freq": module.inv_freq.detach().clone().float().numpy()}
    ids = torch.arange(ROWS)[None]
    probe = torch.zeros(1, 1, ROWS, 128, dtype=torch.float32)
    cos, sin = module(probe, ids)
    for name, table in [("cos", cos[0].numpy()), ("sin", sin[0].numpy())]:
        assert np.array_equal(table[:, :64], table[:, 64:])
        arrays[f"{name}_half"] = table[:, :64]
    rng = np.random.default_rng(2026)
    q, k = (rng.standard_normal((2, 2, 8, 128)).astype(np.float32) for _ in range(2))
    position_ids = np.stack([np.arange(8), 200 + np.arange(8)])
    cos_ids, sin_ids = module(torch.from_numpy(q), torch.from_numpy(position_ids))
    q_out, k_out = modeling_llama.apply_rotary_pos_emb(torch.from_numpy(q), torch.from_numpy(k), cos_ids, sin_ids)
    arrays.update(q=q, k=k, position_ids=position_ids, q_out=q_out.numpy(), k_out=k_out.numpy())
    module.to(torch.bfloat16)                                        # what model.to(torch.bfloat16) does to it
    assert module.inv_freq.dtype == torch.bfloat16
    arrays["inv_freq_bf16"] = module.inv_freq.float().numpy()
    cos, sin = module(probe[:, :, :len(BF16_IDS)], torch.tensor([BF16_IDS]))
    arrays["cos_bf16"], arrays["sin_bf16"] = cos[0, :, :64].numpy(), sin[0, :, :64].numpy()
    np.savez_compressed(CONFIG.parent / "llama3_rotary.npz", **arrays)
    buffers = {}                                                     # the rotary buffers' dtypes in a whole model
    tiny = transformers.LlamaConfig(hidden_size=64, num_attention_heads=2, num_hidden_layers=1, intermediate_size=64,
                                    vocab_size=32)
    model = transformers.LlamaForCausalLM(tiny)
    with tempfile.TemporaryDirectory() as folder:
        model.save_pretrained(folder)
        loaded = transformers.LlamaForCausalLM.from_pretrained(folder, dtype=torch.bfloat16)
    for call, whole in [("from_pretrained(dtype=torch.bfloat16)", loaded), ("model.to(torch.bfloat16)",
                                                                          model.to(torch.bfloat16))]:
        buffers[call] = {name: str(buffer.dtype) for name, buffer in whole.model.rotary_emb.named_buffers()}
    meta = {"transformers": transformers.__version__, "torch": torch.__version__, "config": CONFIG.name,
            "module": "transformers.models.llama.modeling_llama.LlamaRotaryEmbedding",
            "apply": "transformers.models.llama.modeling_llama.apply_rotary_pos_emb", "rows": ROWS,
            "bf16_ids": BF16_IDS,
            "bf16": "module.to(torch.bfloat16), then called with float32 q", "rotary_buffers": buffers}
    (HERE / "llama3_rotary.json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    main()
