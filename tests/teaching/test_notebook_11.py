"""Notebook 11: every number its prose states, recomputed from the model's logits and attention weights in plain
NumPy, the functions its cells define, and its exercise."""

import ast
import functools
from pathlib import Path

import numpy as np
import pytest

import rope_ref as rr
from rope_ref.teaching import exercises as ex
from rope_ref.teaching.precision import rotate_with_angle_dtype

import notebook_cells

NAME = "11_rope_inside_a_real_model"
TEXT = notebook_cells.text(NAME)
LENGTH = 40
THETA = 1e5 ** (-np.arange(32) / 32)                      # SmolLM2's theta_i, d = 64, base 10^5
pytestmark = pytest.mark.slow      # each test needs the model (loaded once per process, 5-30 s)


@pytest.fixture(scope="module")
def copy_ids():
    half = np.random.default_rng(0).integers(17, 49152, LENGTH)     # 40 random ordinary tokens (ids 0-16: control)
    return np.concatenate([half, half])


@pytest.fixture(scope="module")
def queries_keys(model, copy_ids):
    """Every layer's q and k before RoPE, caught on their way into the model's own rotation."""
    caught = []
    model.attention(copy_ids, rope=lambda x, positions: caught.append(np.array(x)) or rr.rotate(x, positions, base=1e5))
    return np.stack(caught[0::2]), np.stack(caught[1::2])


def defined(model) -> dict:
    """The functions notebook 11's code cells define, each ``def`` run alone (not the rest of its cell), on model."""
    namespace = {"np": np, "rr": rr, "functools": functools, "model": model}
    for cell in notebook_cells.cells(NAME):
        code = "\n".join(line for line in notebook_cells.src(cell).splitlines() if not line.startswith("%"))
        if cell["cell_type"] == "code":
            module = ast.parse(code)
            module.body = [node for node in module.body if isinstance(node, ast.FunctionDef)]
            exec(compile(module, f"{NAME}.ipynb:{cell['id']}", "exec"), namespace)
    return namespace


def accuracy(model, ids, **kwargs):
    """Top-1 hits on the 39 predictable tokens of the second copy, from the logits."""
    return np.mean(model.forward(ids, **kwargs).argmax(axis=-1)[LENGTH:-1] == ids[LENGTH + 1:])


def unturned(pairs, x, positions):
    """Interleaved RoPE, base 10^5, written out, with theta_i = 0 on ``pairs``."""
    theta = np.where(np.isin(np.arange(32), list(pairs)), 0.0, THETA)
    z = (x[..., 0::2] + 1j * x[..., 1::2]) * np.exp(1j * np.outer(positions, theta))
    return np.stack([z.real, z.imag], axis=-1).reshape(x.shape)


def head_scores(weights):
    """(previous-token, induction) score (layers, heads), as the prose defines them."""
    t, second = np.arange(1, 2 * LENGTH), np.arange(LENGTH, 2 * LENGTH)
    return weights[..., t, t - 1].mean(-1), weights[..., second, second - LENGTH + 1].mean(-1)


def test_intro_and_eq11_and_the_loss(model):
    assert "Q4_1 (4-bit) quantized; we dequantize them to float32" in TEXT and "540 MB of float32" in TEXT
    assert (model.layers, model.heads, model.kv_heads, model.head_dim, model.base) == (30, 9, 3, 64, 1e5)
    ids = model.tokenize(notebook_cells.run_cells(NAME, "nb11-07", namespace={"model": model, "np": np})["text"])
    assert len(ids) == 65 and "the 65-token paragraph above" in TEXT
    logits = model.forward(ids)
    change = np.abs(model.forward(ids, positions=np.arange(65) + 3000) - logits).max()
    assert 1e-6 < change < 1e-4 and round(float(np.abs(logits).max())) == 37
    assert "is below $10^{-4}$" in TEXT and "logits up to about 37" in TEXT
    losses = []
    for rope in [None, functools.partial(rr.rotate, base=1e4), functools.partial(rr.rotate, base=1e5, pairing="half")]:
        z = model.forward(ids, rope=rope)[:-1].astype(np.float64)
        z = z - z.max(-1, keepdims=True)
        losses.append(-np.mean(z[np.arange(64), ids[1:]] - np.log(np.exp(z).sum(-1))))
    assert f"{defined(model)['mean_loss'](ids):.2f}" == f"{losses[0]:.2f}"          # the notebook's mean_loss
    assert "4.57 nats with the model's RoPE, 4.74 with base $10^4$, 5.45 with the half pairing" in TEXT
    assert [f"{x:.2f}" for x in losses] == ["4.57", "4.74", "5.45"]


def test_copy_table(model, copy_ids):
    shifted = np.arange(2 * LENGTH) + 3000
    rows = [accuracy(model, copy_ids), accuracy(model, copy_ids, rope=functools.partial(rr.rotate, base=1e5,
                                                                                        pairing="half")),
            accuracy(model, copy_ids, rope=functools.partial(rr.rotate, base=1e4)),
            accuracy(model, copy_ids, positions=shifted)]
    rows += [accuracy(model, copy_ids, positions=shifted,
                      rope=functools.partial(rotate_with_angle_dtype, base=1e5, dtype=dtype))
             for dtype in ["float16", "bfloat16"]]
    names = ["the model's own (interleaved, base $10^5$)", "the wrong pairing (half, as the HF checkpoint would need)",
             "the wrong base ($10^4$)", "every position + 3000", "every position + 3000, angles and cos/sin in float16",
             "every position + 3000, angles and cos/sin in bfloat16"]
    for name, value in zip(names, rows):
        assert f"| {name} | {value:.2f} |" in TEXT, name
    assert defined(model)["copy_accuracy"](copy_ids, positions=shifted) == rows[3]     # the notebook's copy_accuracy


def test_heads_the_unturned_pairs_and_the_norms(model, copy_ids, queries_keys):
    previous, induction = head_scores(model.attention(copy_ids))
    p, i = np.unravel_index(previous.argmax(), previous.shape), np.unravel_index(induction.argmax(), induction.shape)
    assert (p, i) == ((16, 0), (18, 6)) and f"{previous[p]:.2f}" == "0.89" == f"{induction[i]:.2f}"
    assert "layer 16, head 0 (previous-token score 0.89), and layer 18, head 6 (induction score 0.89)" in TEXT
    fast = [functools.partial(unturned, range(8)), functools.partial(unturned, range(24, 32))]
    x = np.random.default_rng(0).standard_normal((9, 2 * LENGTH, 64))
    for pairs, rope in zip([range(8), range(24, 32)], fast):                    # the notebook's rope_without_turning
        np.testing.assert_allclose(defined(model)["rope_without_turning"](pairs)(x, np.arange(80)),
                                   rope(x, np.arange(80)), rtol=1e-9, atol=1e-12)
    (fp, fi), (sp, si) = (head_scores(model.attention(copy_ids, rope=rope)) for rope in fast)
    assert "its score falls from 0.89 to 0.03" in TEXT and f"{fp[p]:.2f}" == "0.03"
    assert "The induction head goes too (0.04)" in TEXT and f"{fi[i]:.2f}" == "0.04"
    assert "nothing changes (0.89 and 0.89)" in TEXT and f"{sp[p]:.2f} {si[i]:.2f}" == "0.89 0.89"
    assert accuracy(model, copy_ids, rope=fast[0]) == 0
    assert "at most 0.014 rad" in TEXT and f"{79 * THETA[24]:.3f}" == "0.014"
    for x, most in zip(queries_keys, ["3.7", "3.5"]):
        norms = np.hypot(x[..., 0::2], x[..., 1::2]).mean(axis=(1, 2))                 # (layers, pairs)
        ratio = norms[:, 24:].mean(axis=1) / norms[:, :8].mean(axis=1)
        assert (np.sum(ratio > 1), f"{ratio.max():.1f}", norms.argmax(1).min()) == (27, most, 22)
    assert "in 27 of its 30 layers" in TEXT and "up to 3.7 times for the queries, 3.5 for the keys" in TEXT
    assert "pair 22 or slower" in TEXT


def test_scores_against_distance_with_the_key_behind(model, queries_keys):
    queries, keys = (x.astype(np.float64) for x in queries_keys)
    real_decay = defined(model)["real_decay"]
    curves = []
    for layer, head in [(16, 0), (18, 6)]:
        zq = queries[layer, head][:, 0::2] + 1j * queries[layer, head][:, 1::2]
        zk = keys[layer, head // 3][:, 0::2] + 1j * keys[layer, head // 3][:, 1::2]
        products = np.conj(zq)[:, None, :] * zk[None, :, :]            # Re(conj(z_q) z_k e^{i(n - m) theta}), n = m - r
        decay = np.array([np.abs((products * np.exp(-1j * r * THETA)).real.sum(-1)).mean() for r in range(257)])
        np.testing.assert_allclose(real_decay(queries[layer, head], keys[layer, head // 3], range(257)), decay,
                                   rtol=1e-9)                                  # the notebook's real_decay
        curves.append(decay / decay[0])
    previous, induction = curves
    period = 257 / np.argmax(np.abs(np.fft.rfft(previous - previous.mean())))
    assert 5.5 < period < 7 and f"{previous[-1]:.1f}" == "13.5" and f"{induction[-1]:.2f}" == "0.95"
    assert f"{induction.min():.2f}" == "0.88" and induction.max() == 1.0
    assert "period of about 6 tokens" in TEXT and "at distance 256 it is 13.5 times its value at 0" in TEXT
    assert "5 % lower at 256, and at most about 12 % below its value at 0" in TEXT
    assert "RoFormer's Figure 2 (notebook 03) plots the eq 37 bound, which holds for any $q, k$" in TEXT


def test_the_exercise(model, copy_ids, capsys):
    found = {letter: accuracy(model, copy_ids, rope=rope) for letter, rope in ex.MYSTERY_ROPES.items()}
    bug = min(found, key=found.get)
    others = sorted(set(found) - {bug})
    assert found[bug] < found[others[0]] / 2 and found[others[0]] == found[others[1]] == accuracy(model, copy_ids)
    ids = model.tokenize("The capital of France is")
    np.testing.assert_array_equal(model.forward(ids, rope=ex.MYSTERY_ROPES[bug]), model.forward(ids))
    assert ex.check_mystery_rope(bug.lower()) and capsys.readouterr().out.startswith("Correct")
    for wrong in others:
        assert not ex.check_mystery_rope(wrong)
        said = capsys.readouterr().out
        assert said.startswith("Not yet") and not any(f"kernel {o}" in said for o in set("ABC") - {wrong})
        assert "32" not in said and "1000" not in said
    source = Path(ex.__file__).read_text()
    assert f'"{bug}": ' not in source and f"'{bug}': " not in source     # the answer is no readable constant
