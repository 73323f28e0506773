"""Notebook 09 (RoPE beyond one axis): its structure, its exercise, and every number its prose states,
each checked here independently of the notebook's own output."""

import json
import re
from pathlib import Path

import numpy as np
import pytest

import rope_ref as rr
from rope_ref.teaching import exercises_extensions
from rope_ref.teaching import vision_rope, widgets

from notebook_cells import cells, prose, run_cells, src, tags

NB = Path(__file__).resolve().parents[2] / "notebooks" / "09_multi_axis.ipynb"
CELLS = cells(NB.stem)
TEXT = prose(NB.stem)
SOLUTION_TEXT = prose(NB.stem, solutions=True)


def _say(*fragments):
    for f in fragments:
        assert f in TEXT, f"the notebook no longer says {f!r}"


# ---- structure ---------------------------------------------------------------------------------------

def test_learning_objectives_at_the_top():
    found = [c for c in CELLS[:3] if c["cell_type"] == "markdown" and src(c).lstrip().startswith("## Learning objectives")]
    assert found and sum(ln.startswith("* ") for ln in src(found[0]).splitlines()) >= 3


def _exercises():
    """(task, student, heading, solution cells) for each exercise, in order."""
    out = []
    for i, c in enumerate(CELLS):
        if c["cell_type"] == "markdown" and "exercise" in tags(c):
            j = i + 3
            while j < len(CELLS) and "solution" in tags(CELLS[j]):
                j += 1
            out.append((c, CELLS[i + 1], CELLS[i + 2], CELLS[i + 3:j]))
    return out


CHECKERS = ["check_same_score_patch", "check_text_after_image"]
ANSWERS = [("(15, 8)", "15"), ("10", "10")]          # what the question must not say


def test_each_exercise_follows_the_convention():
    exercises_found = _exercises()
    assert len(exercises_found) == len(CHECKERS)
    for (task, student, heading, solution), checker, (answer, token) in zip(exercises_found, CHECKERS, ANSWERS):
        assert student["cell_type"] == "code" and "exercise" in tags(student)
        assert "answer = None" in src(student) and f"exercises_extensions.{checker}(answer)" in src(student)
        assert heading["cell_type"] == "markdown" and src(heading).strip() == "#### Solution"
        assert heading["metadata"].get("heading_collapsed") is True and "solution" in tags(heading)
        assert heading["metadata"].get("jp-MarkdownHeadingCollapsed") is True      # what JupyterLab 4 folds by
        assert solution and all(c["metadata"]["jupyter"] == {"source_hidden": True, "outputs_hidden": True}
                                for c in solution)
        assert f"{checker}(answer)" in src(solution[-1]).splitlines()[-1]
        # the question and the heading give nothing away
        asked = src(task).replace("6 \\times 10", "").replace("(1, 6, 10)", "") + src(heading) + src(student)
        assert answer not in asked and token not in asked, checker


def test_the_solutions_run_and_check_themselves(capsys):
    for (_, _, _, solution), right in zip(_exercises(), [(15, 8), 10]):
        namespace = {"np": np, "rr": rr, "exercises_extensions": exercises_extensions}
        for c in solution:
            if c["cell_type"] == "code":
                exec(compile(src(c), "solution", "exec"), namespace)      # its asserts must hold
        assert namespace["answer"] == right
        assert capsys.readouterr().out.rstrip().splitlines()[-1].startswith("Correct: ")


def test_the_notebook_uses_no_hub_data_and_no_test_data():
    code = "\n".join(src(c) for c in CELLS if c["cell_type"] == "code")
    assert "tests/data" not in code and "from_pretrained" not in code


# ---- the exercise's checker --------------------------------------------------------------------------

def test_same_score_checker_right_and_wrong_answers(capsys):
    # By hand: the offset (7 - 2, 1 - 3) = (5, -2) from (10, 10) is (15, 8).  Scores in plain numpy below.
    q, k = exercises_extensions.same_score_qk()
    assert not np.allclose(q, k)
    theta = 100.0 ** (-np.arange(16) / 16)

    def plain_score(qxy, kxy):
        ang = np.concatenate([theta * (kxy[0] - qxy[0]), theta * (kxy[1] - qxy[1])])
        a, b = k[0::2], k[1::2]
        return q[0::2] @ (a * np.cos(ang) - b * np.sin(ang)) + q[1::2] @ (a * np.sin(ang) + b * np.cos(ang))

    assert abs(plain_score((2, 3), (7, 1)) - plain_score((10, 10), (15, 8))) < 1e-12
    assert abs(plain_score((2, 3), (7, 1)) - plain_score((10, 10), (5, 12))) > 0.1      # the reverse differs
    assert exercises_extensions.check_same_score_patch(None) is False
    assert capsys.readouterr().out.startswith("Not answered yet")
    assert exercises_extensions.check_same_score_patch((15, 8)) is True
    assert exercises_extensions.check_same_score_patch([15, 8]) is True
    for wrong, words in [((5, -2), "offset between"), ((5, 12), "reversed"), ((8, 15), "swapped"),
                         ((7, 1), "what stays the same"), ((15.0, 8), "two integers"), (15, "two integers"),
                         ((True, 8), "two integers")]:
        capsys.readouterr()
        assert exercises_extensions.check_same_score_patch(wrong) is False, wrong
        out = capsys.readouterr().out
        assert out.startswith("Not yet: ") and words in out and "(15, 8)" not in out, (wrong, out)


def test_checker_right_and_wrong_answers(capsys):
    # By hand: the image starts at 5; 6 x 10 patches merged 2 x 2 are 3 x 5 tokens, rows 5..7, columns 5..9.
    assert exercises_extensions.check_text_after_image(None) is False
    assert capsys.readouterr().out.startswith("Not answered yet")
    assert exercises_extensions.check_text_after_image(10) is True
    assert exercises_extensions.check_text_after_image((10, 10, 10)) is True
    assert exercises_extensions.check_text_after_image(np.int64(10)) is True
    for wrong, words in [(20, "1-D RoPE"), (15, "spatial merge"), (9, "largest id"), (8, "columns"),
                         (11, "largest id the image uses"), ((10, 8, 10), "same id"), ("10", "integer"),
                         (True, "integer"), (10.0, "integer")]:
        capsys.readouterr()
        assert exercises_extensions.check_text_after_image(wrong) is False, wrong
        out = capsys.readouterr().out
        assert out.startswith("Not yet: ") and words in out, (wrong, out)
        assert "10" not in out.replace("6 x 10", "").replace(str(wrong), ""), out   # never the right value


# ---- every number the prose states -------------------------------------------------------------------

def test_axial_layout_sentence():
    _say("first half of the pairs to $x$ and the second half to $y$", "base 100", "`RotaryEmbeddingCat`")
    F = rr.axial_frequencies(64, base=100.0)
    assert F.shape == (32, 2)
    np.testing.assert_allclose(F[:16, 0], 100.0 ** (-np.arange(16) / 16), rtol=1e-14)    # base^(-k/(d/4))
    np.testing.assert_allclose(F[16:, 1], 100.0 ** (-np.arange(16) / 16), rtol=1e-14)
    assert not F[16:, 0].any() and not F[:16, 1].any()


def test_relative_in_both_axes_on_every_pair_of_patches():
    _say("$196^2 = 38416$ pairs", "below $10^{-13}$")
    q, k = vision_rope.grid_qk()
    notebook = run_cells("09_multi_axis", "c02", "c08")                # the notebook's own scores and spread
    assert q.shape == (64,) and np.array_equal(q, k)
    assert 196 ** 2 == 38416 == notebook["scores"].size
    assert notebook["spread"] < 1e-13
    # independently: pair j of the x half turns by theta_j * dx, of the y half by theta_j * dy (plain numpy).
    theta = 100.0 ** (-np.arange(16) / 16)
    for (x1, y1), (x2, y2) in [((0, 0), (5, 3)), ((7, 9), (12, 12)), ((13, 2), (0, 13))]:
        ang = np.concatenate([theta * (x2 - x1), theta * (y2 - y1)])
        a, b = k[0::2], k[1::2]
        expected = q[0::2] @ (a * np.cos(ang) - b * np.sin(ang)) + q[1::2] @ (a * np.sin(ang) + b * np.cos(ang))
        i, j = 14 * y1 + x1, 14 * y2 + x2
        assert abs(notebook["scores"][i, j] - expected) < 1e-11


def test_raster_order_puts_the_end_of_a_row_next_to_the_start_of_the_next():
    _say("patch 13, the end of row 0, and patch 14, the start of row 1, are one step apart",
         "13 columns apart")
    P = rr.grid_positions(14, 14, indexing="xy")
    assert P[:, 13].tolist() == [13, 0] and P[:, 14].tolist() == [0, 1]
    q, k = vision_rope.grid_qk()
    one_d = [q @ rr.rotate(k, float(n - m)) for m, n in ((13, 14), (0, 1))]       # 1-D: depends on n - m
    assert abs(one_d[0] - one_d[1]) < 1e-12
    scores = run_cells("09_multi_axis", "c02", "c08")["scores"]
    assert abs(scores[13, 14] - scores[0, 1]) > 1.0


@pytest.mark.slow
def test_the_grid_view_keeps_the_score_when_the_query_moves():
    _say("move the query and the marker stays put, and so does the score", "$k = q$", "peaks at offset 0")
    view = vision_rope.GridScoreView(qx=3, qy=4, dx=2, dy=-1)
    first = view.value
    assert abs(first - view.map_value) < 1e-12
    view.update(qx=10, qy=1)
    assert abs(view.value - first) < 1e-12 and view.marker.get_xdata()[0] == 2
    S = view.score_map
    assert np.unravel_index(np.argmax(S), S.shape) == (13, 13)      # peak at offset (0, 0)
    with pytest.raises(ValueError, match="qx"):
        view.update(qx=14)
    assert view.params["qx"] == 10                                   # a refused value leaves the view as it was
    with pytest.raises(TypeError, match="dy"):
        view.update(dy=1.5)


@pytest.mark.slow
def test_the_grid_widget_shows_its_picture_without_a_kernel():
    box = widgets.grid_score_widget(qx=0, qy=0, dx=1, dy=1)
    assert "image/png" in box._repr_mimebundle_()
    box.controls["qx"].value = 5
    assert box.view.params["qx"] == 5 and "query patch (5, 0)" in box.readout.value
    with pytest.raises(ValueError):
        widgets.grid_score_widget(dx=20)


def test_mrope_sentences():
    _say("`[16, 24, 24]` in contiguous blocks for Qwen2-VL and Qwen2.5-VL", "`[24, 20, 20]` interleaved",
         "temporal axis gets the 16 fastest pairs, height the next 24 and\nwidth the 24 slowest",
         "by only $1.8\\times10^{-4}$ rad", "width's fastest pair is pair 2, with $\\theta_2 = 0.62$",
         "Temporal\ngets the 4 leftover pairs at the slow end (60..63)")
    bands = run_cells("09_multi_axis", "c02", "c19")["bands"]
    q2, q3 = bands["Qwen2-VL"], bands["Qwen3-VL"]
    assert q2["temporal"]["pairs"] == list(range(16)) and q2["height"]["pairs"] == list(range(16, 40))
    assert q2["width"]["pairs"] == list(range(40, 64))
    assert f"{1e6 ** (-80 / 128):.1e}" == "1.8e-04" == f"{q2['width']['fastest']:.1e}"      # theta_40, base 1e6
    assert q3["width"]["pairs"][0] == 2 and f"{5e6 ** (-4 / 128):.2f}" == "0.62" == f"{q3['width']['fastest']:.2f}"
    assert q3["temporal"]["pairs"][-4:] == [60, 61, 62, 63] and q3["temporal"]["pairs"][-5] == 57


def test_text_is_one_dimensional_rope_bit_for_bit():
    _say("bit for bit", "$p_t = p_h = p_w = m$")
    x = np.random.default_rng(0).standard_normal((50, 128))
    m = np.arange(50.0)
    for sections, inter in (([16, 24, 24], False), ([24, 20, 20], True)):
        F = rr.mrope_frequencies(128, sections, base=1e6, interleaved=inter)
        text = rr.rotate(x, np.stack([m, m, m]), inv_freq=F, pairing="half")
        assert np.array_equal(text, rr.rotate(x, m, base=1e6, pairing="half"))


def test_position_ids_around_an_image_sentences():
    _say("$8\\times12$ patches is $4\\times6 = 24$ tokens", "The image's ids run from 3 to 8",
         "resumes at 9, not at\n$3 + 24 = 27$")
    ids = rr.mrope_position_ids([("text", 3), ("image", (1, 8, 12)), ("text", 4)], spatial_merge_size=2)
    assert ids.shape == (3, 3 + 24 + 4)
    image = ids[:, 3:27]
    assert image.min() == 3 and image.max() == 8 and set(image[1].tolist()) == {3, 4, 5, 6}
    np.testing.assert_array_equal(ids[:, 27], [9, 9, 9])


def test_video_sentences():
    _say("temporal ids $s, s+2, s+4, s+6$", "resumes at\n$s + \\max(h, w)/2$ instead", "(checked on 5.24)")
    video = [("text", 2), ("video", (4, 4, 4), 1.0), ("text", 2)]
    ids = rr.mrope_position_ids(video, tokens_per_second=2)
    assert sorted(set(ids[0, 2:-2].tolist())) == [2, 4, 6, 8]                    # s = 2
    np.testing.assert_array_equal(ids[:, -2], [9, 9, 9])
    spatial = rr.mrope_position_ids(video, tokens_per_second=2, text_after_vision="spatial")
    np.testing.assert_array_equal(spatial[:, -2], [2 + 4 // 2] * 3)
    recorded = json.loads((Path(__file__).resolve().parents[1] / "data" / "multiaxis_rope_index.json").read_text())
    assert recorded["transformers"] == "5.24.0"


def test_exercise_solution_sentences():
    for f in ("$3 \\times 5$ tokens", "rows get ids $5..7$, columns $5..9$", "resumes at **10**", "give 20",
              "$5 + 10 = 15$"):
        assert f in SOLUTION_TEXT, f
    ids = rr.mrope_position_ids([("text", 5), ("image", (1, 6, 10)), ("text", 3)])
    assert ids[1, 5:20].min() == 5 and ids[1, 5:20].max() == 7 and ids[2, 5:20].max() == 9
    assert ids[0, 20] == 10


def test_every_number_in_the_prose_is_one_a_test_checks():
    # The numbers the prose states, listed; a new number in the prose needs a test above and an entry here.
    numbers = set(re.findall(r"(?<![\w.])\d+(?:\.\d+)?", TEXT))
    known = {"9", "1", "2", "0", "15", "34", "16", "3", "4", "2024", "2403.13298", "100", "14", "196", "38416", "13",
             "10", "2409.12191", "24", "20", "6", "1.8", "62", "60", "63", "5", "8", "12", "27", "5.3", "5.24",
             "128", "0.62", "64", "02", "7",           # "02": EVA-02
             "10000", "5.2", "35569", "45381"}         # timm's base, and the rule's sources: the tests at the end
    assert numbers <= known, sorted(numbers - known)


def test_the_figures_draw_what_they_claim():
    fig = vision_rope.fig_mrope_layout()
    rows = np.asarray(fig.axes[0].images[0].get_array())
    np.testing.assert_array_equal(rows[0], [0] * 16 + [1] * 24 + [2] * 24)               # Qwen2-VL, by hand
    np.testing.assert_array_equal(rows[1], [0, 1, 2] * 20 + [0] * 4)                     # Qwen3-VL, by hand
    segments = [("text", 3), ("image", (1, 8, 12)), ("text", 4)]
    fig = vision_rope.fig_position_ids(segments)
    lines = fig.axes[0].get_lines()
    ids = rr.mrope_position_ids(segments)
    for a in range(3):
        np.testing.assert_array_equal(lines[a].get_ydata(), ids[a])


# ---- issue 31: timm's RotaryEmbeddingCat and which rule of position ids to use -----------------------

DATA = Path(__file__).resolve().parents[1] / "data"


def test_timm_sentence_against_timms_recorded_module():
    """timm 1.0.31's RotaryEmbeddingCat (recorded by tests/data/record_multiaxis.py), 'ij' grid, interleaved, base
    10000: the first quarter of the sin columns (its first half of pairs) changes along the rows (y) and not along the
    columns, the second along the columns (x); interleaved: each column twice in place."""
    meta = json.loads((DATA / "multiaxis_modules.json").read_text())
    case = meta["cases"]["timm_cat_ij_interleaved"]
    assert meta["timm"] == "1.0.31" and case["kwargs"]["grid_indexing"] == "ij" and case["pairing"] == "interleaved"
    assert case["kwargs"]["temperature"] == 10000.0 and case["kwargs"]["in_pixels"] is False
    with np.load(DATA / "multiaxis_modules.npz") as z:
        sin = z["timm_cat_ij_interleaved/sin"].reshape(-1, 24)              # (h * w, dim) for the 6 x 7 grid
    h, w = case["grid"]
    assert sin.shape[0] == h * w
    np.testing.assert_array_equal(sin[:, 0::2], sin[:, 1::2])                # interleaved: pairs (2i, 2i + 1)
    grid = sin[:, 0::2].reshape(h, w, 12)
    first, second = grid[..., :6], grid[..., 6:]
    assert np.ptp(first, axis=1).max() == 0 and np.ptp(first, axis=0).max() > 0.1      # first half: rows (y) only
    assert np.ptp(second, axis=0).max() == 0 and np.ptp(second, axis=1).max() > 0.1    # second half: columns (x)
    np.testing.assert_allclose(first[1, 0], np.sin(10000.0 ** (-np.arange(6) / 6)), atol=1e-6)   # row 1, base 1e4
    _say("first half of the pairs turns with $y$", "base (`temperature`) 10000",
         "interleaved pairs", "`grid_indexing='ij'`", "`in_pixels=False`")
    assert "This is timm's" not in TEXT


def test_which_rule_of_position_ids_to_use():
    """max + 1 is the rule to use; transformers >= 5.3 is reported as a bug (#45381) and its recorded deltas put
    generation at max + 1 in every recorded case."""
    t = " ".join(TEXT.split())
    for shown in ["the rule Qwen trained with", "transformers PR #35569", "kept up to version 5.2",
                  "reported as a bug (transformers issue #45381)", "generation continues at max + 1",
                  "**Use max + 1**, the default"]:
        assert shown in t, shown
    old = json.loads((DATA / "multiaxis_rope_index_v5.2.json").read_text())
    assert old["transformers"] == "5.2.0"
    for case in old["cases"]:                        # 5.2: text after vision at max + 1, as rr.mrope_position_ids
        segments = [tuple(tuple(x) if isinstance(x, list) else x for x in seg) for seg in case["segments"]]
        rate = {"tokens_per_second": case["tokens_per_second"]} if case["tokens_per_second"] else {}
        ids = rr.mrope_position_ids(segments, spatial_merge_size=case["spatial_merge_size"], **rate)
        np.testing.assert_array_equal(ids, case["position_ids"], err_msg=case["name"])
    recorded = json.loads((DATA / "multiaxis_rope_index.json").read_text())
    assert recorded["transformers"] == "5.24.0"
    for case in recorded["cases"]:
        ids = np.array(case["position_ids"])
        assert case["mrope_position_deltas"] == ids.max() + 1 - ids.shape[-1], case["name"]
    # and the 5.24 prefill differs from max + 1 after a video: the change the bug report is about
    video = next(c for c in recorded["cases"] if c["name"] == "video-2s")
    ids = np.array(video["position_ids"])
    assert ids[0, -3] < ids[:, :-3].max() + 1
