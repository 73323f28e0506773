"""Notebook 11 (RoPE inside a real model): every number its prose states, recomputed here from the model's logits and
attention weights with plain NumPy (not with the helpers of rope_ref.teaching.real_model), and its exercise."""

import functools

import ml_dtypes
import numpy as np
import pytest

import rope_ref as rr
from rope_ref.teaching import exercises_extensions as ex
from rope_ref.teaching import real_model as rm
from rope_ref.teaching.precision import rotate_with_angle_dtype

import notebook_cells

NAME = "11_rope_inside_a_real_model"
LENGTH = 40
pytestmark = pytest.mark.slow      # each test needs the model (loaded once per process, 15-30 s)


def text(solutions=None):
    """The notebook's prose (all of it, or only the solutions), whitespace collapsed to single spaces."""
    return " ".join(notebook_cells.prose(NAME, solutions=solutions).split())


@pytest.fixture(scope="module")
def model():
    return rm.load_smollm2()


@pytest.fixture(scope="module")
def copy_ids(model):
    half = np.random.default_rng(0).integers(17, 49152, LENGTH)     # 40 random ordinary tokens (ids 0-16: control)
    ids = np.concatenate([half, half])
    np.testing.assert_array_equal(ids, rm.copy_task(model, LENGTH, 0))
    return ids


def accuracy(model, ids, **kwargs):
    """Top-1 hits on the 39 predictable tokens of the second copy, from the logits."""
    predicted = model.forward(ids, **kwargs).argmax(axis=-1)
    return np.mean(predicted[LENGTH:2 * LENGTH - 1] == ids[LENGTH + 1:])


def rope_without(pairs, x, positions, *, base):
    out = rr.rotate(x, positions, base=base)
    for i in pairs:
        out[..., 2 * i:2 * i + 2] = 0.0
    return out


@pytest.fixture(scope="module")
def attention(model, copy_ids):
    return model.attention(copy_ids)


def best_heads(weights):
    """(layer, head, score) of the best previous-token head and of the best induction head, by loops."""
    layers, heads, seq, _ = weights.shape
    previous = np.array([[np.mean(np.diagonal(weights[l, h], offset=-1)) for h in range(heads)] for l in range(layers)])
    induction = np.array([[np.mean([weights[l, h, t, t - LENGTH + 1] for t in range(LENGTH, seq)]) for h in range(heads)]
                          for l in range(layers)])
    return previous, induction


def test_intro_states_the_models_settings(model):
    t = text()
    assert "30 layers, 9 query heads sharing 3 key/value heads, head dimension 64, RoPE base $10^5$" in t
    assert (model.layers, model.heads, model.kv_heads, model.head_dim, model.base) == (30, 9, 3, 64, 1e5)
    assert "540 MB of float32" in t
    nbytes = model.embedding.nbytes + sum(w.nbytes for block in model.blocks for w in block.values())
    assert round(nbytes / 1e6, -1) == 540
    shown = next(code for code in map(notebook_cells.src, notebook_cells.cells(NAME))
                 if code.startswith("# the forward pass"))
    lines = [ln for ln in shown.split("\nprompt = ")[0].splitlines()[1:] if ln.strip()]   # the pass, as written
    assert "about 40 lines of NumPy" in t and 20 <= len(lines) <= 40


def test_eq11_shift_leaves_the_logits_unchanged(model):
    ids = model.tokenize("Rotary position embedding encodes the position of a token by rotating its query and key "
                         "vectors. Each pair of features turns by an angle proportional to the position, so the score "
                         "between two tokens depends only on how far apart they are. Models such as Llama, Mistral and "
                         "SmolLM use it in every layer.")
    logits = model.forward(ids)
    change = np.abs(model.forward(ids, positions=np.arange(len(ids)) + 3000) - logits).max()
    assert 1e-6 < change < 1e-3 and round(float(np.abs(logits).max())) == 37
    assert "order of $10^{-4}$ (below $10^{-3}$)" in text() and "logits up to about 37" in text()
    half = functools.partial(rr.rotate, base=model.base, pairing="half")
    b4 = functools.partial(rr.rotate, base=1e4)
    losses = []
    for rope in [None, b4, half]:
        logits = model.forward(ids, rope=rope)[:-1].astype(np.float64)
        log_probabilities = logits - logits.max(-1, keepdims=True)
        log_probabilities -= np.log(np.exp(log_probabilities).sum(-1, keepdims=True))
        losses.append(-np.mean(log_probabilities[np.arange(len(ids) - 1), ids[1:]]))
    assert "4.57 nats with the model's RoPE, 4.74 with base $10^4$, 5.45 with the half pairing" in text()
    assert [f"{x:.2f}" for x in losses] == ["4.57", "4.74", "5.45"]


def test_copy_table(model, copy_ids):
    positions = np.arange(2 * LENGTH) + 3000
    rows = {"the model's own (interleaved, base $10^5$)": accuracy(model, copy_ids),
            "the wrong pairing (half, as the HF checkpoint would need)":
                accuracy(model, copy_ids, rope=functools.partial(rr.rotate, base=1e5, pairing="half")),
            "the wrong base ($10^4$)": accuracy(model, copy_ids, rope=functools.partial(rr.rotate, base=1e4)),
            "every position + 3000": accuracy(model, copy_ids, positions=positions)}
    for dtype in ["float16", "bfloat16"]:
        rope = functools.partial(rotate_with_angle_dtype, base=1e5, dtype=dtype)
        rows[f"every position + 3000, angles and cos/sin in {dtype}"] = accuracy(model, copy_ids, positions=positions,
                                                                                rope=rope)
    for row, value in rows.items():
        assert f"| {row} | {value:.2f} |" in text(), row
    assert "A sequence of 40 random tokens" in text() and "on the 39 predictable tokens" in text()
    assert np.spacing(np.float16(3000)) == 2 and float(ml_dtypes.finfo(ml_dtypes.bfloat16).eps) * 2048 == 16
    assert "float16 keeps positions only to a multiple of 2 and bfloat16 to a multiple of 16" in text()


def test_a_short_prompt_survives_the_wrong_pairing(model):
    ids = model.tokenize("The capital of France is")
    half = functools.partial(rr.rotate, base=1e5, pairing="half")
    assert len(ids) == 5 and "five tokens are too few" in text()
    assert model.decode([model.forward(ids, rope=half)[-1].argmax()]) == " Paris" == model.decode(
        [model.forward(ids)[-1].argmax()])


def test_heads_found_by_score_and_pairs_removed(model, copy_ids, attention):
    previous, induction = best_heads(attention)
    p_layer, p_head = np.unravel_index(previous.argmax(), previous.shape)
    i_layer, i_head = np.unravel_index(induction.argmax(), induction.shape)
    assert previous.size == 270 and "every one of the 270 heads" in text()
    assert (f"layer {p_layer}, head {p_head} (previous-token score {previous.max():.2f}), and layer {i_layer}, "
            f"head {i_head} (induction score {induction.max():.2f})") in text()
    fast = best_heads(model.attention(copy_ids, rope=functools.partial(rope_without, range(8), base=1e5)))
    slow = best_heads(model.attention(copy_ids, rope=functools.partial(rope_without, range(24, 32), base=1e5)))
    stated = text()
    assert (f"its score falls from {previous.max():.2f} to {fast[0][p_layer, p_head]:.2f}); remove the 8 slowest "
            f"(24-31) instead and it stays ({slow[0][p_layer, p_head]:.2f})") in stated
    assert f"lost either way ({fast[1][i_layer, i_head]:.2f} and {slow[1][i_layer, i_head]:.2f})" in stated


def test_pair_norms_and_figure_2_with_real_vectors(model, copy_ids, attention):
    caught = []

    def catch(x, positions):
        caught.append(np.array(x))
        return rr.rotate(x, positions, base=1e5)

    model.attention(copy_ids, rope=catch)
    queries, keys = np.stack(caught[0::2]), np.stack(caught[1::2])
    norms = np.hypot(queries[..., 0::2], queries[..., 1::2]).mean(axis=(1, 2))       # (layers, pairs)
    ratio = norms[:, 24:].mean(axis=1) / norms[:, :8].mean(axis=1)
    stated = text()
    assert f"in {np.sum(ratio > 1)} of its 30 layers the 8 slowest pairs of q" in stated
    assert f"up to {ratio.max():.1f} times, and the largest pair is a slow one (pair {norms.argmax(1).min()} or slower)" \
        in stated
    previous, induction = best_heads(attention)
    thetas = 1e5 ** (-np.arange(32) / 32)
    distances = np.arange(257)
    for scores, check in [(previous, "previous"), (induction, "induction")]:
        layer, head = np.unravel_index(scores.argmax(), scores.shape)
        zq = queries[layer, head][:, 0::2] + 1j * queries[layer, head][:, 1::2]
        zk = keys[layer, head // 3][:, 0::2] + 1j * keys[layer, head // 3][:, 1::2]
        products = np.conj(zq)[:, None, :] * zk[None, :, :]                               # (queries, keys, pairs)
        decay = np.array([np.abs((products * np.exp(1j * r * thetas)).real.sum(-1)).mean() for r in distances])
        if check == "previous":
            spectrum = np.abs(np.fft.rfft(decay - decay.mean()))
            period = len(decay) / np.argmax(spectrum)
            assert 5.5 < period < 7 and decay[-1] > decay[0]
            assert "period of about 6 tokens" in text() and "is larger at distance 256 than at 0" in text()
        else:
            assert round(np.abs(decay / decay[0] - 1).max(), 1) == 0.2 and "by about 20% at most out to 256" in stated


def test_papers_are_cited():
    t = text()
    assert "arXiv:2410.06205" in t and "Jin et al. (2025" in t


def test_exercise_checker(model, copy_ids, capsys):
    assert ex.check_mystery_rope("B") and ex.check_mystery_rope(" b ")
    for wrong in ["A", "C", "D", float("nan"), 2, ["B"]]:
        assert not ex.check_mystery_rope(wrong)
    assert not ex.check_mystery_rope(None) and "Not answered yet" in capsys.readouterr().out
    own = accuracy(model, copy_ids)
    found = {letter: accuracy(model, copy_ids, rope=rope) for letter, rope in ex.MYSTERY_ROPES.items()}
    assert found["A"] == own == found["C"] and found["B"] < own / 2
    ids = model.tokenize("The capital of France is")
    np.testing.assert_array_equal(model.forward(ids, rope=ex.MYSTERY_ROPES["B"]), model.forward(ids))
    assert "keeps only 32 positions" in text(solutions=True) and "by 1000" in text()
