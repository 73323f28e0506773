"""Notebook 08 (what the frequencies are for): every number its prose states, recomputed here in plain NumPy, its
exercise's checker, and no answer above the exercise."""

import numpy as np
import pytest

import rope_ref as rr
from rope_ref.teaching import example_kernels
from rope_ref.teaching.exercises import check_supported_context

import notebook_cells
from frequency_formulas import first_negative_B, thetas

NAME = "08_what_frequencies_do"
TEXT = notebook_cells.text(NAME)


def supported(base, d=128):
    """L_theta (Men et al. eq 10): the last m before B_m = sum_i cos(m theta_i) first turns negative."""
    return first_negative_B(base, d, limit=60_000) - 1


def test_positional_head_and_semantic_channel_numbers():
    r = np.arange(48)
    weights = []
    for first in [0, 3, 8, 16]:
        scores = 4.0 * np.cos(np.outer(r - 1, thetas(64, 1e4)[first:first + 4])).sum(1)
        weights.append(np.exp(scores - scores.max())[1] / np.exp(scores - scores.max()).sum())
    assert [f"{w:.3f}" for w in weights] == ["0.944", "0.492", "0.170", "0.027"] and f"{1 / 48:.3f}" == "0.021"
    c = np.random.default_rng(0).standard_normal((8, 2))
    share = (c ** 2).sum(1) / (c ** 2).sum()
    distances = np.array([4096, 32768])
    fast, slow = (np.cos(np.outer(distances, thetas(128, 1e4)[band])) @ share for band in (slice(0, 8), slice(56, 64)))
    assert f"{slow[0]:.2f} {fast[0]:.2f} {slow[1]:.2f}" == "0.78 0.21 0.04"
    assert f"{1e6 ** (-30 / 128):.4f}" == "0.0392" and f"{1e6 ** (-30 / 32):.3g}" == "2.37e-06"
    for shown in ["0.944 of its attention on the previous token; from pair 3 on 0.492, from pair 8 on 0.170, from pair "
                  "16 on 0.027", "NoPE's $1/48 = 0.021$", "the slowest pairs still score 0.78, the fastest 0.21",
                  "(0.04)", "0.0392 rad per position", "$2.37\\cdot10^{-6}$"]:
        assert shown in TEXT, shown


@pytest.mark.slow
def test_supported_contexts_and_no_answer_above_the_exercise():
    assert (supported(1e4), supported(1e6), supported(1e4, d=256)) == (1706, 27114, 2652)
    assert "only up to distance 1,706; base $10^6$ up to 27,114" in TEXT and "base $10^4$ supports 2,652" in TEXT
    right = supported(5e5)
    assert right == 18437 and "18,437" in TEXT                  # stated, after the exercise
    cells = notebook_cells.cells(NAME)
    exercise = next(i for i, c in enumerate(cells) if "exercise" in notebook_cells.tags(c))
    above = "\n".join(notebook_cells.src(c) for c in cells[:exercise])
    assert "18,437" not in above and "18437" not in above and "5e5" not in above.split("for base in")[-1][:40]


@pytest.mark.slow
def test_checker_names_the_likeliest_slips_without_the_answer(capsys):
    assert check_supported_context(18437) and capsys.readouterr().out.startswith("Correct")
    first_tried = np.cos(np.outer(np.arange(4000), thetas(128, 5e5))).sum(1)     # cell 15's range, base 5e5
    slips = {int(np.argmax(first_tried < 0)) - 1: "argmax", 1706: "default base", 18438: "first distance where"}
    assert -1 in slips
    for answer, said in [*slips.items(), (18436, "Not yet"), (30000, "Not yet"), (2.5, "integer")]:
        assert not check_supported_context(answer)
        out = capsys.readouterr().out
        assert said in out and "18,437" not in out.replace("up to 18,437:", ""), (answer, out)


@pytest.mark.slow
def test_real_models_against_the_bound():
    nb, found = notebook_cells.run_cells(NAME, "c08-02", "c08-24"), {}
    for name, model in nb["MODELS"].items():          # the last m before B_m < 0, at the model's (scaled) frequencies
        cfg = rr.from_hf_config(example_kernels.config(model["config"]), layer_type=model.get("layer_type"))
        found[name] = next(m + int(np.argmax(negative)) - 1 for m in range(0, 1 << 18, 8192)
                           if (negative := np.cos(np.outer(np.arange(m, m + 8192.0), cfg.inv_freq())).sum(1) < 0).any())
    points = nb["points"]
    assert found == {name: p["supported"] for name, p in points.items()} and len(found) == 7
    stated = {"Llama 3 8B": (8192, 18437), "Gemma 3 27B (global layers)": (131072, 216915),
              "Llama 3.1 8B": (131072, 85132), "Qwen2.5 7B": (131072, 66233)}
    assert {name: (points[name]["context"], found[name]) for name in stated} == stated
    assert [name for name in found if found[name] >= points[name]["context"]] == list(stated)[:2]
    for shown in ["Five of the seven models sit **above**", "Two sit below it: Llama 3 (8,192 positions at base "
                  "500,000, which supports 18,437) and Gemma 3, whose global layers run at 128k", "up to 216,915",
                  "llama3 frequencies reach 85,132 and Qwen2.5's YaRN frequencies 66,233, both short of 131,072"]:
        assert shown in TEXT, shown
