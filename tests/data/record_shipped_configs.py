"""Record how Hugging Face transformers reads the model configs rope_ref ships as package data
(rope_ref/teaching/data/*.json, read by notebooks 07 and 08), for tests/teaching/test_notebook_08.py.

Run where transformers is installed (no torch needed, nothing downloaded):
    python tests/data/record_shipped_configs.py
Writes tests/data/shipped_configs_transformers.json: for each file, transformers' rope_parameters (per layer type
where the model has several), head_dim and max_position_embeddings of the text model, after its config class has
filled in its defaults.
"""

import json
from pathlib import Path

import transformers
from transformers import CONFIG_MAPPING

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "rope_ref" / "teaching" / "data"
OUT = Path(__file__).resolve().parent / "shipped_configs_transformers.json"


def read(path):
    raw = json.loads(path.read_text())
    cfg = CONFIG_MAPPING[raw["model_type"]](**{k: v for k, v in raw.items() if k != "model_type"})
    text = getattr(cfg, "text_config", None) or cfg
    head_dim = getattr(text, "head_dim", None) or text.hidden_size // text.num_attention_heads
    return {"rope_parameters": text.rope_parameters, "head_dim": head_dim,
            "max_position_embeddings": text.max_position_embeddings}


def main():
    record = {"transformers": transformers.__version__,
              "configs": {p.stem: read(p) for p in sorted(SHIPPED.glob("*.json"))}}
    OUT.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT} ({len(record['configs'])} configs, transformers {transformers.__version__})")


if __name__ == "__main__":
    main()
