"""Notebook 07's hidden subject, ``mystery_rope`` (the other kernels it checks are written out in its cells), the
model config.json files shipped in rope_ref/teaching/data, and a replay of transformers' Llama rotary module (its
recorded cos/sin and ``inv_freq``) for notebook 07's wrapper and notebook 06's bfloat16 cast."""

import json
from importlib import resources

import numpy as np

from .._validate import check_choice


def config(name: str) -> dict:
    """A model config.json shipped in rope_ref/teaching/data, as a dict: ``config("qwen2.5-7b-instruct-yarn")``."""
    data = resources.files(__package__) / "data"
    name = check_choice(name, "name", sorted(f.name[:-5] for f in data.iterdir() if f.name.endswith(".json")))
    return json.loads((data / f"{name}.json").read_text(encoding="utf-8"))


def mystery_rope(x, base=10000.0):
    """Meant to be Llama's (interleaved pairs, base 10^4, row r at position r), but one thing is wrong: find it."""
    seq, d = x.shape
    freqs = 1.0 / base ** (np.arange(0, d, 2) / d)
    cis = np.exp(1j * np.outer(np.arange(1, seq + 1), freqs))
    z = (x[:, 0::2] + 1j * x[:, 1::2]) * cis
    return np.stack([z.real, z.imag], axis=-1).reshape(seq, d)


def replayed_llama_rotary(cast=None):
    """transformers 5.24.0's ``LlamaRotaryEmbedding`` for Llama 3 8B, replayed from its recording (ids 0..255):
    ``rotary(x, position_ids) -> (cos, sin)``, each ``(batch, seq, 128)`` in ``x``'s dtype.  ``cast="bfloat16"``: the
    module after ``.to(torch.bfloat16)``, its bfloat16 ``inv_freq`` times the positions in float32, then cos and sin."""
    if cast is not None:
        check_choice(cast, "cast", ("bfloat16",), "None (as built) or the cast recorded, ")
    recorded = llama_recording()
    angles = np.outer(np.arange(len(recorded["cos_half"]), dtype=np.float32), recorded["inv_freq_bf16"])   # cast's
    halves = (recorded["cos_half"], recorded["sin_half"]) if cast is None else (np.cos(angles), np.sin(angles))
    cos, sin = (np.concatenate([half] * 2, axis=-1) for half in halves)
    return lambda x, position_ids: (cos[position_ids].astype(x.dtype), sin[position_ids].astype(x.dtype))


def llama_recording() -> dict:
    """That module's recording, arrays by name: its float32 ``inv_freq`` ``(64,)`` as built and after
    ``.to(torch.bfloat16)`` (``inv_freq_bf16``), ``cos_half`` and ``sin_half`` ``(256, 64)`` for ids 0..255."""
    with (resources.files(__package__) / "data" / "llama3_rotary.npz").open("rb") as file, np.load(file) as recorded:
        return dict(recorded)
