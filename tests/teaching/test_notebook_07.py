"""Notebook 07: its structure (objectives, the exercise convention of HELPERS/lecture plan: task, student
cell with a checker, a collapsed "#### Solution" with hidden cells), the checker with right and wrong
answers, and every fact its prose states, checked independently of the notebook's own output."""

import inspect
import io
import json
import math
import re
import tomllib
from contextlib import redirect_stdout
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import rope_ref as rr
from rope_ref.teaching import example_kernels
from rope_ref.teaching import exercises_extensions
from rope_ref.teaching.kernel_plot import kernel_vs_expected

from notebook_cells import cells, prose, run_cells, src, tags

ROOT = Path(__file__).resolve().parents[2]
NB = ROOT / "notebooks" / "07_check_your_rope.ipynb"
CELLS = cells(NB.stem)
TEXT = prose(NB.stem)


def test_learning_objectives_at_the_top():
    found = [c for c in CELLS[:4]
             if c["cell_type"] == "markdown" and src(c).lstrip().startswith("## Learning objectives")]
    assert found and sum(ln.startswith("* ") for ln in src(found[0]).splitlines()) >= 3


def exercise():
    """(task index, student index, heading index, [solution indices], index after the solution)."""
    task = next(i for i, c in enumerate(CELLS) if "exercise" in tags(c))
    student, heading = task + 1, task + 2
    k = heading + 1
    while k < len(CELLS) and "solution" in tags(CELLS[k]):
        k += 1
    return task, student, heading, list(range(heading + 1, k)), k


def test_the_exercise_follows_the_convention():
    task, student, heading, solution, after = exercise()
    assert CELLS[task]["cell_type"] == "markdown" and src(CELLS[task]).startswith("### Exercise")
    s = CELLS[student]
    assert s["cell_type"] == "code" and "exercise" in tags(s)
    kinds = '"pairing", "base", "offset", "direction", "scale", "precision"'
    want = [f"answer = None      # one of {kinds}", "exercises_extensions.check_planted_bug(answer);"]
    assert src(s).splitlines() == want
    h = CELLS[heading]
    assert src(h).strip() == "#### Solution" and h["metadata"].get("heading_collapsed") is True
    assert h["metadata"].get("jp-MarkdownHeadingCollapsed") is True      # what JupyterLab 4 folds by
    assert "solution" in tags(h)
    assert solution and all(CELLS[k]["metadata"].get("jupyter") == {"source_hidden": True, "outputs_hidden": True}
                            for k in solution)
    last_code = [src(CELLS[k]) for k in solution if CELLS[k]["cell_type"] == "code"][-1]
    assert re.search(r"^assert exercises_extensions\.check_planted_bug\(answer\)$", last_code, re.M)
    assert after == len(CELLS) or re.match(r"#{1,4} ", src(CELLS[after]))   # the collapsed heading hides only it


def run_checker(answer):
    out = io.StringIO()
    with redirect_stdout(out):
        ok = exercises_extensions.check_planted_bug(answer)
    return ok, out.getvalue()


@pytest.mark.parametrize("answer,ok,start", [
    (None, False, "Not answered yet"), ("offset", True, "Correct: offset: row 0 is rotated as position 1"),
    (" Offset", True, "Correct:"), ("base", False, "Not yet: not the base"),
    ("pairing", False, "Not yet: not the pairing"),
    ("direction", False, "Not yet: not the direction"), ("scale", False, "Not yet: not the scale"),
    ("precision", False, "Not yet: not the precision"), ("position", False, "Not yet: answer should be one of"),
    (1, False, "Not yet: answer should be one of"), (float("nan"), False, "Not yet: answer should be one of"),
    (True, False, "Not yet:")])
def test_the_checker_with_right_and_wrong_answers(answer, ok, start):
    got, printed = run_checker(answer)
    assert got is ok and printed.startswith(start) and printed.count("\n") == 1


def test_the_solution_runs_and_checks_itself():
    _, _, _, solution, _ = exercise()
    namespace = {"np": np, "rr": rr, "example_kernels": example_kernels, "exercises_extensions": exercises_extensions,
                 "spec": rr.identify(example_kernels.mystery_rope, 128)}
    for k in solution:
        if CELLS[k]["cell_type"] == "code":
            exec(compile(src(CELLS[k]), "solution", "exec"), namespace)      # its assert must hold
    assert namespace["answer"] == "offset"


def test_the_bug_is_what_the_solution_says():
    """Independent of identify: mystery_rope is Llama's RoPE with row r at position r + 1."""
    x = np.random.default_rng(0).standard_normal((9, 16))
    np.testing.assert_allclose(example_kernels.mystery_rope(x), rr.rotate(x, np.arange(1, 10)), atol=1e-12)
    np.testing.assert_allclose(example_kernels.llama_style_rope(x), rr.rotate(x), atol=1e-12)
    _, _, _, solution, _ = exercise()
    assert "row 0 as position 1" in src(CELLS[solution[0]])


def test_the_question_does_not_give_the_answer_away():
    # issue 31: a hunt for an unnamed bug.  The signature is Llama's and the docstring names no bug; the cells up to
    # the student cell draw the picture but print no source, check or spec of the kernel, and list every kind of bug
    # alike, without saying which one it is.
    assert inspect.signature(example_kernels.mystery_rope) == inspect.signature(example_kernels.llama_style_rope)
    doc = example_kernels.mystery_rope.__doc__
    assert not any(w in doc for w in ("offset", "position 1", "arange(1"))
    _, student, _, _, _ = exercise()
    start = next(k for k, c in enumerate(CELLS) if "## Hunt the planted bug" in src(c))
    asked = CELLS[start:student + 1]
    code = "\n".join(src(c) for c in asked if c["cell_type"] == "code")
    assert "getsource" not in code and "assert_rope_matches(" not in code.split("#")[0]
    assert "print(spec" not in code.replace("# your measurements: print(spec)", "") and "summary()" not in code
    question = "\n".join(src(c) for c in asked)
    assert not any(w in question for w in ("off by one", "position 1", "theta_0 = 1", "arange(1"))
    for kind in exercises_extensions.BUG_KINDS:
        assert f'"{kind}"' in question, kind


def test_no_tool_internals_in_the_prose():
    for word in ("offset resolution", "16777216", "ambiguous", "tolerance", "SIGMAS", "phase_error"):
        assert word not in TEXT


def test_stated_facts():
    x = np.random.default_rng(2).standard_normal((8, 128))
    # "Both rotate all 128 features with base 10000, starting at position 0; they pair the features differently."
    assert "Both rotate all 128 features with base 10000, starting at position 0" in TEXT
    np.testing.assert_allclose(example_kernels.neox_style_rope(x), rr.rotate(x, pairing="half"), atol=1e-12)
    np.testing.assert_allclose(example_kernels.llama_style_rope(x), rr.rotate(x, pairing="interleaved"), atol=1e-12)
    cfg = rr.from_hf_config(example_kernels.config("qwen2.5-7b-instruct-yarn"))
    assert "all 128 features" in TEXT and cfg.head_dim == cfg.rotary_dim == 128
    assert "half-split pairs" in TEXT and cfg.pairing == "half"
    assert "base $10^6$" in TEXT and cfg.base == 1e6
    assert "YaRN factor 4" in TEXT and cfg.rope_type == "yarn" and cfg.params["factor"] == 4.0
    assert r"$0.1 \ln 4 + 1 \approx 1.139$" in TEXT
    assert math.isclose(cfg.attention_factor, 0.1 * math.log(4) + 1) and round(cfg.attention_factor, 3) == 1.139


def test_the_picture_of_the_planted_bug_shows_flat_lines_at_theta_p():
    """The exercise's reading: phase error of pair p is theta_p * 1 at every row (independent of identify:
    the measured angles are those of the kernel's definition, rows at 1 + r)."""
    spec = rr.identify(example_kernels.mystery_rope, 128)
    fig = kernel_vs_expected(spec, rr.frequencies(128), 0)
    right = fig.axes[1]
    for p, line in enumerate(right.get_lines()[:3]):
        np.testing.assert_allclose(line.get_ydata(), 10000.0 ** (-2 * p / 128), atol=1e-9)


def test_the_ported_kernel_misses_exactly_the_attention_factor():
    cfg = rr.from_hf_config(example_kernels.config("qwen2.5-7b-instruct-yarn"))
    x = np.random.default_rng(1).standard_normal((16, 128))
    ported = example_kernels.hf_style_rope(x, cfg.inv_freq())
    fixed = example_kernels.hf_style_rope(x, cfg.inv_freq(), cfg.attention_factor)
    want = cfg.rotate(x)
    # float32 angles for positions < 16: |error| <= 4 * 2^-24 * 16 rad per unit of |x|.
    tol = 4 * 2.0 ** -24 * 16 * np.abs(x).max() * cfg.attention_factor * 2
    assert np.abs(fixed - want).max() < tol
    np.testing.assert_allclose(ported * cfg.attention_factor, want, atol=tol)


def test_the_backward_kernels_are_what_the_prose_says():
    """llama_style_rope_backward is the vjp: x . vjp(x, g) = fn(x) . g for the linear fn (its transpose);
    fused_backward applies the forward rotation instead."""
    rng = np.random.default_rng(3)
    x, g = rng.standard_normal((2, 12, 16))
    fn = example_kernels.llama_style_rope
    assert math.isclose(np.sum(x * example_kernels.llama_style_rope_backward(x, g)), np.sum(fn(x) * g), rel_tol=1e-12)
    np.testing.assert_allclose(example_kernels.fused_backward(x, g), fn(g), atol=1e-12)
    assert not math.isclose(np.sum(x * example_kernels.fused_backward(x, g)), np.sum(fn(x) * g), rel_tol=1e-3)


def test_shipped_configs_are_package_data_equal_to_the_test_copies():
    # issue 19: example_kernels read tests/data, which an installed copy does not have
    assert "tests" not in inspect.getsource(example_kernels).split("def neox_style_rope")[0].replace(
        "tests/data/configs", "")
    for name in example_kernels.CONFIGS:
        copy = ROOT / "tests" / "data" / "configs" / f"{name}.json"
        if copy.exists():
            assert example_kernels.config(name) == json.loads(copy.read_text())
    shipped = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert {"data/*.json", "data/*.npz"} <= set(shipped["rope_ref.teaching"])
    with pytest.raises(ValueError, match="qwen2.5-7b-instruct-yarn"):
        example_kernels.config("qwen")


def test_used_configs_are_the_shipped_ones():
    used = set(re.findall(r'example_kernels\.config\("([^"]+)"\)', "\n".join(src(c) for c in CELLS)))
    assert used and used <= set(example_kernels.CONFIGS)


# --- the wrapper for a real kernel, run on a replay of transformers' module (issue 31, section 5) ---------------------

RECORDING = ROOT / "rope_ref" / "teaching" / "data" / "llama3_rotary.npz"


def test_the_replay_reproduces_the_recorded_transformers_module():
    """The replay (recorded cos/sin + apply_rotary_pos_emb in NumPy) gives exactly what transformers 5.24's
    apply_rotary_pos_emb returned on the recorded (batch, heads, seq, d) q and k at the recorded position_ids."""
    meta = json.loads((ROOT / "tests" / "data" / "llama3_rotary.json").read_text())
    assert meta["transformers"] == "5.24.0" and meta["module"].endswith("modeling_llama.LlamaRotaryEmbedding")
    rec = np.load(RECORDING)
    rotary = example_kernels.replayed_llama_rotary()
    q_out, k_out = example_kernels.apply_rotary_pos_emb(rec["q"], rec["k"], *rotary(rec["q"], rec["position_ids"]))
    assert q_out.dtype == np.float32 and q_out.shape == (2, 2, 8, 128)
    np.testing.assert_array_equal(q_out, rec["q_out"])
    np.testing.assert_array_equal(k_out, rec["k_out"])
    # the recorded table is Llama 3's RoPE: rotate_half pairs, base 500000, float32 angles (independent formula)
    inv_freq = 500000.0 ** (-np.arange(0, 128, 2) / 128)
    np.testing.assert_allclose(rec["cos_half"], np.cos(np.outer(np.arange(256), inv_freq)), atol=256 * 2.0 ** -23)
    with pytest.raises(IndexError):
        rotary(rec["q"], np.array([[256]]))                    # only ids 0..255 were recorded


def test_the_wrapper_cell_checks_the_replay_and_the_prose_shows_the_torch_lines():
    cell = next(c for c in CELLS if src(c).startswith("# a REPLAY of transformers' LlamaRotaryEmbedding"))
    namespace = {"np": np, "rr": rr, "example_kernels": example_kernels, "functools": __import__("functools")}
    out = io.StringIO()
    with redirect_stdout(out):
        exec(compile(src(cell), "wrapper", "exec"), namespace)
    assert out.getvalue().count("base 500000, row 0 at position 0, default") == 1
    assert "row 0 at position 100" in out.getvalue()
    fn = namespace["fn"]
    x = np.random.default_rng(5).standard_normal((20, 128))
    inv_freq = 500000.0 ** (-np.arange(0, 128, 2) / 128)      # rotate_half pairs (i, i + 64), row r at 30 + r
    angle = np.outer(30 + np.arange(20), inv_freq)
    want = np.concatenate([x[:, :64] * np.cos(angle) - x[:, 64:] * np.sin(angle),
                           x[:, 64:] * np.cos(angle) + x[:, :64] * np.sin(angle)], axis=1)
    np.testing.assert_allclose(fn(x, offset=30), want, atol=1e-4)
    with pytest.raises(IndexError):
        fn(np.zeros((257, 128)))
    for shown in ["(batch, heads, seq, d)", "position_ids", "returns **both** $q$ and $k$", "max_rows=256",
                  "**replay**", "torch.as_tensor(x, dtype=torch.float32)[None, None]", "LlamaRotaryEmbedding",
                  "tests/data/record_llama_rotary.py"]:
        assert shown in TEXT, shown


# --- two real bugs planted in the replayed kernel (issue 31 section 5, issue 30 items 1 and 2) ------------------------

def flat(text):
    """Prose with its line breaks read as spaces, as a reader reads it."""
    return " ".join(text.split())


def run_replay_cells(*ids):
    """The wrapper cell, then the cells ``ids``, in one namespace; (namespace, what the given cells printed)."""
    namespace = {"np": np, "rr": rr, "example_kernels": example_kernels, "functools": __import__("functools")}
    with redirect_stdout(io.StringIO()):
        run_cells(NB.stem, "nb07-22b", namespace=namespace)
    out = io.StringIO()
    with redirect_stdout(out):
        run_cells(NB.stem, *ids, namespace=namespace)
    return namespace, out.getvalue()


def rotate_half_pairs(x, positions, inv_freq):
    """transformers' rotate_half RoPE written out: pairs (i, i + d/2), row r turned by positions[r] * inv_freq."""
    angle = np.outer(positions, inv_freq)
    half = x.shape[1] // 2
    return np.concatenate([x[:, :half] * np.cos(angle) - x[:, half:] * np.sin(angle),
                           x[:, half:] * np.cos(angle) + x[:, :half] * np.sin(angle)], axis=1)


LLAMA3_INV_FREQ = 500000.0 ** (-np.arange(0, 128, 2) / 128)                  # Llama 3 8B: rope_theta 500000, d 128


def test_the_bfloat16_replay_is_the_cast_module():
    """The recorded buffer after .to(torch.bfloat16) is the float32 one rounded to bfloat16 (ml_dtypes), and the
    replay's cos/sin agree with those recorded from the cast module (ids 1, 10, 100, 255) within one float32
    rounding."""
    rec = np.load(RECORDING)
    np.testing.assert_array_equal(rec["inv_freq_bf16"], rec["inv_freq"].astype(ml_dtypes.bfloat16).astype(np.float32))
    ids = json.loads((ROOT / "tests" / "data" / "llama3_rotary.json").read_text())["bf16_ids"]
    assert ids == [1, 10, 100, 255]
    cos, sin = example_kernels.replayed_llama_rotary(cast="bfloat16")(np.zeros(1, np.float32), np.array([ids]))
    np.testing.assert_allclose(cos[0, :, :64], rec["cos_bf16"], rtol=0, atol=2.0 ** -24)
    np.testing.assert_allclose(sin[0, :, 64:], rec["sin_bf16"], rtol=0, atol=2.0 ** -24)
    assert np.abs(cos[0, :, :64] - rec["cos_half"][ids]).max() > 0.1              # not the float32 module's table
    with pytest.raises(ValueError, match="cast"):
        example_kernels.replayed_llama_rotary(cast="float16")


@pytest.mark.slow
def test_the_bfloat16_cell_runs_the_cast_module_and_the_report_names_the_rounding():
    namespace, out = run_replay_cells("nb07-23b")
    assert "the expected frequencies rounded to bfloat16" in out and "62 of 64 pairs differ" in out, out
    assert "custom (closest default, frequencies rounded to bfloat16)" in out, out
    # fn now runs the cast module: Llama 3's frequencies rounded to bfloat16, angles in float32 (independent formula)
    x = np.random.default_rng(6).standard_normal((40, 128))
    rounded = LLAMA3_INV_FREQ.astype(ml_dtypes.bfloat16).astype(np.float64)
    rotated = namespace["fn"](x, offset=200)
    np.testing.assert_allclose(rotated, rotate_half_pairs(x, 200 + np.arange(40), rounded), atol=1e-4)
    assert np.abs(rotated - rotate_half_pairs(x, 200 + np.arange(40), LLAMA3_INV_FREQ)).max() > 0.1


def test_stated_facts_of_the_bfloat16_cast():
    text = flat(TEXT)
    llama3 = example_kernels.config("meta-llama-3-8b")
    assert llama3["rope_theta"] == 500000.0 and llama3["max_position_embeddings"] == 8192
    assert "Llama 3 8B's 8,192-token context" in text
    rounded = LLAMA3_INV_FREQ.astype(ml_dtypes.bfloat16).astype(np.float64)
    relative = np.abs(rounded / LLAMA3_INV_FREQ - 1)
    assert "pair 1's 0.814617 becomes 0.816406" in text
    assert (f"{LLAMA3_INV_FREQ[1]:.6f}", f"{rounded[1]:.6f}") == ("0.814617", "0.816406")
    assert ("Pair 0 ($\\theta_0 = 1$, which bfloat16 holds exactly) stays and pair 33 moves by only 4 parts in a "
            "million" in text)
    assert list(np.flatnonzero(relative == 0)) == [0] and round(relative[33] * 1e6) == 4
    assert "the other 62 move by up to 0.33% (pair 13)" in text
    others = np.delete(relative, [0, 33])
    assert len(others) == 62 and others.min() > 1e-5
    assert np.argmax(relative) == 13 and f"{relative.max():.2%}" == "0.33%"

    def angle_error(position):                              # wrapped to [-pi, pi], as a rotation sees it
        return np.abs(np.angle(np.exp(1j * position * (rounded - LLAMA3_INV_FREQ))))
    assert "pair 1 is 0.46 rad off at position 255" in text
    assert np.argmax(angle_error(255)) == 1 and f"{angle_error(255)[1]:.2f}" == "0.46"
    assert "at position 8191, the last of" in text and "10 pairs are more than 1 rad off, pair 8 by 2.9 rad" in text
    at_end = angle_error(8191)
    assert (at_end > 1).sum() == 10 and np.argmax(at_end) == 8 and f"{at_end[8]:.1f}" == "2.9" and at_end[8] < math.pi
    # the fix: from_pretrained(dtype=...) keeps the rotary buffers float32, model.to() casts them (the recording)
    buffers = json.loads((ROOT / "tests" / "data" / "llama3_rotary.json").read_text())["rotary_buffers"]
    assert buffers["from_pretrained(dtype=torch.bfloat16)"]["inv_freq"] == "torch.float32"
    assert buffers["model.to(torch.bfloat16)"]["inv_freq"] == "torch.bfloat16"
    for shown in ["model.to(torch.bfloat16)",
                  "`from_pretrained(..., dtype=torch.bfloat16)` leaves `inv_freq` in float32",
                  "model.model.rotary_emb = LlamaRotaryEmbedding(config=model.config)", "#25681", "#29496"]:
        assert shown in text, shown


@pytest.mark.slow
def test_the_clamped_cache_cell_and_its_stated_facts():
    namespace, out = run_replay_cells("nb07-24b")
    first, *rest = out.splitlines()
    assert first.endswith("base 500000, row 0 at position 0, default"), out          # from 0 the check passes
    assert rest[0] == ("table: the cos/sin table stops at position 255 and rows beyond it are clamped (see the note): "
                       "every position needs its own row"), out
    assert rest[1].startswith("(255.0, 'clamped') the cos/sin table stops at position 255 (row 55 here)"), out
    # independent of the checker: rows 0..63 from offset 0 are in the table; from 200, row 56 reaches position 256 and
    # every row from there gets position 255's rotation
    x = np.random.default_rng(7).standard_normal((64, 128))
    cached = namespace["cached"]
    np.testing.assert_allclose(cached(x), rotate_half_pairs(x, np.arange(64), LLAMA3_INV_FREQ), atol=1e-4)
    clamped = np.minimum(200 + np.arange(64), 255)
    np.testing.assert_allclose(cached(x, offset=200), rotate_half_pairs(x, clamped, LLAMA3_INV_FREQ), atol=1e-4)
    unclamped = rotate_half_pairs(x, 200 + np.arange(64), LLAMA3_INV_FREQ)
    assert np.abs(cached(x, offset=200) - unclamped)[56:].max(axis=1).min() > 0.1          # every row from 56 is off
    assert namespace["N"] == 256 and namespace["decode"].keywords == {"offset": 200}
    assert np.flatnonzero(200 + np.arange(64) > namespace["N"] - 1)[0] == 56        # the first row past the table
    text = flat(TEXT)
    for stated in ["($N = 256$)", "A check from position 0 passes: its 64 rows stay inside the table",
                   "the decode step after 200 cached tokens reaches position 256 at row 56",
                   "`cos[position_ids.clamp(max=N - 1)]`", "item 2"]:
        assert stated in text, stated


@pytest.mark.slow
def test_a_wrapped_cache_is_named_repeated_as_the_prose_says():
    assert 'A table that wraps around instead (`position_ids % N`) is named the same way, as "repeated"' in flat(TEXT)
    namespace, _ = run_replay_cells("nb07-24b")
    cos_cache, sin_cache, apply = namespace["cos_cache"], namespace["sin_cache"], example_kernels.apply_rotary_pos_emb

    def wrapped(x):
        q = np.asarray(x, dtype=np.float32)[None, None]
        index = (200 + np.arange(q.shape[2]))[None] % 256
        return apply(q, q, cos_cache[0, index], sin_cache[0, index])[0][0, 0]
    assert rr.identify(wrapped, 128).table_end == (255.0, "repeated")
