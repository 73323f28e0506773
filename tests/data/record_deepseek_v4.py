"""Record where DeepSeek-V4's compressors rotate their compressed KV entries (not needed to run the tests).

Run where torch and transformers are installed:
    python tests/data/record_deepseek_v4.py
No downloads: transformers' ``DeepseekV4HCACompressor`` and ``DeepseekV4CSACompressor`` (with its Lightning
Indexer) are built from a small config (compress rates 8 and 4) with seeded random weights and run on a random
sequence, once without a cache (37 tokens) and in three calls with the model's cache layers (13 + 11 + 6 tokens).
Writes ``deepseek_v4_compressed.npz`` (keys ``<case>/<name>``) and ``deepseek_v4_compressed.json`` (versions; per
case the layer type, the call lengths, the ``layer_type`` each rotary call used; the config's ``to_dict()``):

* ``key_positions`` ``(entries,)``: the position ids the compressor passed to its rotary module for its entries;
* ``pre`` ``(entries, 512)`` float32: the compressed entries before RoPE (its ``kv_norm`` output), and ``out``: the
  entries the compressor returned (the cache's running list), RoPE on the trailing 64 features;
* ``visible`` ``(37, entries)`` (no-cache case only): where the returned block bias lets query t see entry w;
* CSA only: ``indexer_key_positions`` and ``indexer_query_positions``, the ids of the indexer's rotary calls.
"""

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch
import transformers
from transformers.models.deepseek_v4 import modeling_deepseek_v4 as v4

HERE = Path(__file__).parent
YARN = {"rope_type": "yarn", "factor": 16.0, "original_max_position_embeddings": 4096, "beta_fast": 32.0,
        "beta_slow": 1.0}
CONFIG = dict(hidden_size=256, num_attention_heads=4, rope_parameters=YARN, q_lora_rank=32, index_n_heads=2,
              index_topk=16, compress_rates={"compressed_sparse_attention": 4, "heavily_compressed_attention": 8})
LAYERS = {"heavily_compressed_attention": (v4.DeepseekV4HCACompressor, v4.DeepseekV4HCACache),
          "compressed_sparse_attention": (v4.DeepseekV4CSACompressor, v4.DeepseekV4CSACache)}
CALLS = {"nocache": (37,), "cached": (13, 11, 6)}


def logging_rotary(module, log):
    """Wrap module.rotary_emb so each call's position ids and layer_type are kept."""
    forward = module.rotary_emb.forward

    def logged(x, position_ids, layer_type=None):
        log.append((position_ids[0].tolist(), layer_type))
        return forward(x, position_ids, layer_type)
    module.rotary_emb.forward = logged


def record(config, layer_type, calls):
    torch.manual_seed(1357)
    compressor_cls, cache_cls = LAYERS[layer_type]
    compressor = compressor_cls(config)
    for p in compressor.parameters():
        torch.nn.init.normal_(p, std=0.5)
    keys, queries, pre = [], [], []
    logging_rotary(compressor, keys)
    if hasattr(compressor, "indexer"):
        logging_rotary(compressor.indexer, queries)
    compressor.kv_norm.register_forward_hook(lambda module, args, output: pre.append(output[0]))
    cache = SimpleNamespace(layers=[cache_cls(config)]) if len(calls) > 1 else None
    start = 0
    for n in calls:
        hidden = torch.randn(1, n, config.hidden_size)
        q_residual = torch.randn(1, n, config.q_lora_rank)
        ids = torch.arange(start, start + n)[None]
        with torch.no_grad():
            out, bias = compressor(hidden, q_residual, ids, cache, 0)
        start += n
    arrays = {"key_positions": sum((p for p, _ in keys), []), "pre": torch.cat(pre).numpy(), "out": out[0, 0].numpy()}
    if cache is None:
        arrays["visible"] = torch.isfinite(bias[0, 0]).numpy()
    if queries:   # the indexer rotates its compressed keys, then its queries, on every call
        arrays["indexer_key_positions"] = sum((p for p, _ in queries[0::2]), [])
        arrays["indexer_query_positions"] = sum((p for p, _ in queries[1::2]), [])
    used = sorted({t for _, t in keys + queries})
    meta = {"layer_type": layer_type, "calls": list(calls), "rotary_layer_types": used}
    return arrays, meta


def main():
    config = transformers.DeepseekV4Config(**CONFIG)
    arrays, cases = {}, {}
    for layer_type in LAYERS:
        for how, calls in CALLS.items():
            case = f"{layer_type}[{how}]"
            a, cases[case] = record(config, layer_type, calls)
            arrays.update({f"{case}/{k}": np.asarray(v) for k, v in a.items()})
    np.savez_compressed(HERE / "deepseek_v4_compressed.npz", **arrays)
    (HERE / "deepseek_v4_compressed.json").write_text(json.dumps(
        {"transformers": transformers.__version__, "torch": torch.__version__, "config": config.to_dict(),
         "cases": cases}, indent=1, default=str) + "\n")


if __name__ == "__main__":
    main()
