"""Notebook 07: its structure (objectives, the exercise convention of HELPERS/lecture plan: task, student
cell with a checker, a collapsed "#### Solution" with hidden cells), the checker with right and wrong
answers, and every fact its prose states, checked independently of the notebook's own output."""

import inspect
import io
import json
import math
import re
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest

import rope_ref as rr
from rope_ref.teaching import example_kernels, exercises_kernels
from rope_ref.teaching.kernel_plot import kernel_vs_expected

from notebook_cells import cells, prose, src, tags

ROOT = Path(__file__).resolve().parents[2]
NB = ROOT / "notebooks" / "07_check_your_rope.ipynb"
CELLS = cells(NB.stem)
TEXT = prose(NB.stem)


def test_learning_objectives_at_the_top():
    found = [c for c in CELLS[:4] if c["cell_type"] == "markdown" and src(c).lstrip().startswith("## Learning objectives")]
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
    want = [f"answer = None      # one of {kinds}", "exercises_kernels.check_planted_bug(answer);"]
    assert src(s).splitlines() == want
    h = CELLS[heading]
    assert src(h).strip() == "#### Solution" and h["metadata"].get("heading_collapsed") is True
    assert h["metadata"].get("jp-MarkdownHeadingCollapsed") is True      # what JupyterLab 4 folds by
    assert "solution" in tags(h)
    assert solution and all(CELLS[k]["metadata"].get("jupyter") == {"source_hidden": True, "outputs_hidden": True}
                            for k in solution)
    last_code = [src(CELLS[k]) for k in solution if CELLS[k]["cell_type"] == "code"][-1]
    assert re.search(r"^assert exercises_kernels\.check_planted_bug\(answer\)$", last_code, re.M)
    assert after == len(CELLS) or re.match(r"#{1,4} ", src(CELLS[after]))   # the collapsed heading hides only it


def run_checker(answer):
    out = io.StringIO()
    with redirect_stdout(out):
        ok = exercises_kernels.check_planted_bug(answer)
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
    namespace = {"np": np, "rr": rr, "example_kernels": example_kernels, "exercises_kernels": exercises_kernels,
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
    for kind in exercises_kernels.BUG_KINDS:
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
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'package-data = {"rope_ref.teaching" = ["data/*.json", "data/*.npz"]}' in pyproject
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
