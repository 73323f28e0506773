"""Regenerate hf_rope_reference.json from Hugging Face transformers (not needed to run the tests).

Run in an environment with torch and transformers installed:
    python tests/data/make_hf_reference.py
The JSON records the library's own inv_freq and attention_factor for each configuration, so that
tests/test_scaling.py can compare rope_ref.scaled_inv_freq with them without installing torch.
"""

import json
import math
from pathlib import Path

import transformers
from transformers import LlamaConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

CASES = [
    # (label, head_dim, max_position_embeddings, rope_parameters, seq_len)
    ("linear_x4", 128, 4096, {"rope_type": "linear", "rope_theta": 10000.0, "factor": 4.0}, None),
    ("dynamic_at_train_len", 128, 4096, {"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 2.0}, None),
    ("dynamic_at_16k", 128, 4096, {"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 2.0}, 16384),
    ("yarn_x16", 128, 65536, {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 16.0,
                              "original_max_position_embeddings": 4096}, None),
    ("yarn_betas", 64, 32768, {"rope_type": "yarn", "rope_theta": 500000.0, "factor": 8.0, "beta_fast": 16.0,
                               "beta_slow": 2.0, "original_max_position_embeddings": 4096}, None),
    ("yarn_deepseek_mscale", 64, 163840, {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0,
                                          "mscale": 1.0, "mscale_all_dim": 1.0,
                                          "original_max_position_embeddings": 4096}, None),
    ("yarn_mscale_0707", 64, 163840, {"rope_type": "yarn", "rope_theta": 10000.0, "factor": 40.0,
                                      "mscale": 0.707, "mscale_all_dim": 1.0,
                                      "original_max_position_embeddings": 4096}, None),
    ("llama3_1", 128, 131072, {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0,
                               "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                               "original_max_position_embeddings": 8192}, None),
    ("llama3_2", 64, 131072, {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0,
                              "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                              "original_max_position_embeddings": 8192}, None),
]
LONG = [1.0 + 0.25 * i for i in range(48)]
SHORT = [1.0 + 0.01 * i for i in range(48)]
for label, seq in [("longrope_short", None), ("longrope_long", 8192)]:
    CASES.append((label, 96, 131072, {"rope_type": "longrope", "rope_theta": 10000.0, "short_factor": SHORT,
                                      "long_factor": LONG, "original_max_position_embeddings": 4096,
                                      "factor": 32.0}, seq))


def main():
    out = {"transformers": transformers.__version__, "cases": []}
    for label, head_dim, max_pos, params, seq_len in CASES:
        cfg = LlamaConfig(hidden_size=head_dim * 4, num_attention_heads=4, head_dim=head_dim,
                          max_position_embeddings=max_pos, rope_parameters=dict(params))
        inv, att = ROPE_INIT_FUNCTIONS[params["rope_type"]](cfg, "cpu", seq_len)
        out["cases"].append({"label": label, "d": head_dim, "max_position_embeddings": max_pos,
                             "rope_parameters": params, "seq_len": seq_len,
                             "inv_freq": [float(v) for v in inv], "attention_factor": float(att)})
        assert all(math.isfinite(v) for v in inv)
    path = Path(__file__).with_name("hf_rope_reference.json")
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {path} ({len(out['cases'])} cases, transformers {transformers.__version__})")


if __name__ == "__main__":
    main()
