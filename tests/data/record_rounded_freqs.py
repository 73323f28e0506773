"""Record transformers' LlamaRotaryEmbedding after ``model.to(torch.bfloat16)`` / ``.to(torch.float16)`` (not needed
to run the tests).

Run where torch and transformers are installed:
    python tests/data/record_rounded_freqs.py
``.to(dtype)`` casts a module's floating buffers, ``inv_freq`` among them (transformers #25681, #29496); the
module's forward then computes ``position_ids.float() * inv_freq.float()``, so the angles are float32 but the
frequencies are the dtype's.  For each case below the module is built from a small LlamaConfig (no download;
random init plays no part in RoPE), cast, and called at positions offset .. offset + ROWS - 1.  It writes
``rounded_freqs.npz`` (keys ``<case>/<offset>/<name>``):

* ``cos``, ``sin`` ``(ROWS, head_dim / 2)``: the module's tables, one column per pair (the module repeats each
  column twice, ``cat(freqs, freqs)``, which the script checks), float32 (the values of x's dtype);
* ``q`` ``(4, head_dim)`` (seeded) and ``out``: q in x's dtype at the first 4 positions, rotated by transformers'
  own ``apply_rotary_pos_emb`` (so a replay of the tables can be checked against it);

and ``rounded_freqs.json``: versions, and per case the config, the dtype the module was cast to, x's dtype and
the module's ``inv_freq`` buffer after the cast.  tests/test_identify_rounded.py replays the tables with numpy.
"""

import json
from pathlib import Path

import numpy as np
import torch
import transformers
from transformers.models.llama import modeling_llama

HERE = Path(__file__).parent
ROWS, OFFSETS = 256, (0, 3000)
LLAMA31 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
           "original_max_position_embeddings": 8192}
#: case -> (rope_parameters, the dtype the module is cast to, x's dtype)
CASES = {
    "llama-bf16": ({"rope_type": "default"}, torch.bfloat16, torch.float32),
    "llama-fp16": ({"rope_type": "default"}, torch.float16, torch.float32),
    "llama3.1-bf16": (LLAMA31, torch.bfloat16, torch.float32),
    "llama-bf16-model": ({"rope_type": "default"}, torch.bfloat16, torch.bfloat16),     # x in bfloat16 too
}


def record(params, module_dtype, x_dtype):
    config = transformers.LlamaConfig(hidden_size=256, num_attention_heads=4, head_dim=64,
                                      max_position_embeddings=131072,
                                      rope_parameters=dict(params, rope_theta=500000.0))
    module = modeling_llama.LlamaRotaryEmbedding(config=config).to(module_dtype)
    q = torch.from_numpy(np.random.default_rng(2468).standard_normal((1, 1, 4, 64)).astype(np.float32)).to(x_dtype)
    arrays = {}
    for offset in OFFSETS:
        positions = torch.arange(offset, offset + ROWS)[None]
        cos, sin = module(torch.zeros(1, ROWS, 64, dtype=x_dtype), positions)
        cos, sin = cos[0].float().numpy(), sin[0].float().numpy()
        assert np.array_equal(cos[:, :32], cos[:, 32:]) and np.array_equal(sin[:, :32], sin[:, 32:])
        c4, s4 = module(q[0], positions[:, :4])
        out, _ = modeling_llama.apply_rotary_pos_emb(q, q, c4, s4)
        arrays.update({f"{offset}/cos": cos[:, :32], f"{offset}/sin": sin[:, :32],
                       f"{offset}/q": q[0, 0].float().numpy(), f"{offset}/out": out[0, 0].float().numpy()})
    meta = {"rope_parameters": params, "rope_theta": 500000.0, "head_dim": 64, "module_dtype": str(module_dtype),
            "x_dtype": str(x_dtype), "inv_freq": module.inv_freq.float().tolist()}
    return arrays, meta


def main():
    arrays, meta = {}, {"transformers": transformers.__version__, "torch": torch.__version__, "rows": ROWS,
                        "offsets": list(OFFSETS), "cases": {}}
    for name, (params, module_dtype, x_dtype) in CASES.items():
        case_arrays, meta["cases"][name] = record(params, module_dtype, x_dtype)
        arrays.update({f"{name}/{key}": value for key, value in case_arrays.items()})
    np.savez_compressed(HERE / "rounded_freqs.npz", **arrays)
    (HERE / "rounded_freqs.json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    main()
