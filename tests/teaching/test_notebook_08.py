"""Notebook 08 (what the frequencies are for): every number its prose states, recomputed here without
rope_ref.teaching.spectrum and base_bound (plain NumPy from the formulas), its exercise and checker, its pictures' layout."""

from pathlib import Path

import numpy as np
import pytest

from rope_ref.teaching import base_bound, spectrum, widgets
from rope_ref.teaching.exercises_extensions import check_supported_context

import notebook_cells
from frequency_formulas import first_negative_B, thetas

ROOT = Path(__file__).resolve().parents[2]
NB = ROOT / "notebooks" / "08_what_frequencies_do.ipynb"


def cells():
    return notebook_cells.cells(NB.stem)


def text():
    return notebook_cells.prose(NB.stem, solutions=None)


# --- the papers are named with their arXiv numbers ---------------------------------------------------------------------

def test_papers_are_cited_with_arxiv_numbers():
    t = text()
    assert "Round and Round We Go! What makes Rotary Positional Encodings useful?" in t and "arXiv:2410.06205" in t
    assert "Base of RoPE Bounds Context Length" in t and "arXiv:2405.14591" in t
    for model in ["GPT-NeoX", "Phi", "GLM", "Qwen3.5", "Llama 4", "SmolLM3", "Gemma 4"]:
        assert model in t, model
    # the papers' measurements, quoted (not recomputable without the models): typed from Barbero et al. §5-6
    for shown in ["Figures 5–6", "4.4414 with $p = 0.75$ against 4.4627"]:
        assert shown in t, shown


# --- which features turn --------------------------------------------------------------------------------------------------

def test_scheme_frequencies_against_the_definitions():
    d, base = 128, 1e6
    th = thetas(d, base)
    np.testing.assert_allclose(spectrum.scheme_frequencies("rope", d, base), th, rtol=1e-12)
    part = spectrum.scheme_frequencies("partial", d, base, 0.25)                    # r = 32: base^(-2j/32), j < 16
    np.testing.assert_allclose(part[:16], base ** (-np.arange(0, 32, 2) / 32), rtol=1e-12)
    assert np.all(part[16:] == 0)
    prop = spectrum.scheme_frequencies("proportional", d, base, 0.25)               # base^(-2j/128), j < 16
    np.testing.assert_allclose(prop[:16], th[:16], rtol=1e-12)
    assert np.all(prop[16:] == 0) and np.array_equal(prop, spectrum.scheme_frequencies("p-rope", d, base, 0.25))
    assert np.all(spectrum.scheme_frequencies("nope", d, base) == 0)
    # how many pairs p-RoPE turns: Barbero et al.'s pseudocode, rope_angles = int(rope_percentage * head_dim // 2)
    for p, dd in [(0.3, 64), (0.75, 64), (0.1, 128), (0.55, 96), (1.0, 16)]:
        k = int(p * dd // 2)
        got = spectrum.scheme_frequencies("p-rope", dd, base, p)
        assert np.count_nonzero(got) == k and np.array_equal(got[:k], thetas(dd, base)[:k]), (p, dd)
    # the layout: rotate_half pairs j with j + r/2 inside the rotated part; interleaved 2j with 2j+1
    half = spectrum.dimension_frequencies("partial", d, base, 0.25, "half")
    assert np.array_equal(half[:16], half[16:32]) and np.all(half[32:] == 0)
    inter = spectrum.dimension_frequencies("partial", d, base, 0.5, "interleaved")
    assert np.array_equal(inter[0:64:2], inter[1:64:2]) and np.all(inter[64:] == 0)
    p = spectrum.dimension_frequencies("proportional", d, base, 0.25, "half")
    assert np.all(p[:16] > 0) and np.all(p[16:64] == 0) and np.all(p[64:80] > 0) and np.all(p[80:] == 0)
    # the prose's numbers
    t = text()
    assert f"{th[15]:.4f}" == "0.0392" and round(2 * np.pi / th[15]) == 160
    assert "0.0392 rad per position" in t and "every 160 positions" in t
    slowest_partial = base ** (-30 / 32)
    assert f"{slowest_partial:.2e}" == "2.37e-06" and "$2.37\\cdot10^{-6}$" in t


@pytest.mark.parametrize("call, match", [
    (lambda: spectrum.scheme_frequencies("alibi"), "scheme must be one of"),
    (lambda: spectrum.scheme_frequencies("partial", fraction=1.5), r"fraction must be a real number in \[0, 1\]"),
    (lambda: spectrum.scheme_frequencies("rope", d=7), "d must be a positive even integer"),
    (lambda: spectrum.dimension_frequencies(pairing="zigzag"), "pairing must be"),
    (lambda: spectrum.offset_attention(1, 62, d=64), "pair must be an integer in 0..d/2-width"),
    (lambda: spectrum.offset_attention(1, 0, scale=-5.0), r"scale must be \|u\|\^2 >= 0"),
    # sizes and work checked before any is done; seeds named (issue 23's review: these were numpy's own errors,
    # a MemoryError, or a scan that never ended)
    (lambda: spectrum.dimension_frequencies(d=2 ** 40), "d: d = 1099511627776 float64 features would take 8 TiB"),
    (lambda: spectrum.offset_attention(1, 0, n_keys=2 ** 40), "n_keys: 1099511627776 keys"),
    (lambda: base_bound.supported_context(1e4, limit=10 ** 30), "limit must be at most 16,777,216"),
    (lambda: spectrum.semantic_match([0.0], "middle"), "band must be 'high' or 'low'"),
    (lambda: spectrum.semantic_match([0.0], "low", 16, width=9), "width must be at most d/2"),
])
def test_bad_arguments_are_named(call, match):
    with pytest.raises((TypeError, ValueError), match=match):
        call()


# --- Barbero et al.: the positional head ------------------------------------------------------------------------------

def offset_weights_by_formula(offset, first, n_keys=48, scale=16.0, d=64, width=4, rotated=None):
    """q_m . k_n = (scale/width) sum_j cos((r - offset) theta_j) over the rotated pairs (r = m - n), + scale/width
    per unrotated pair; softmax over r = 0..n_keys-1."""
    th = thetas(d)[first:first + width]
    rot = np.ones(width, bool) if rotated is None else rotated[first:first + width]
    r = np.arange(n_keys)[:, None]
    s = (scale / width) * np.where(rot, np.cos((r - offset) * th), 1.0).sum(axis=1)
    w = np.exp(s - s.max())
    return w / w.sum()


def test_positional_head_numbers():
    t = text()
    expected = {0: "0.944", 3: "0.492", 8: "0.170", 16: "0.027"}
    for first, shown in expected.items():
        w = offset_weights_by_formula(1, first)
        assert f"{w[1]:.3f}" == shown and shown in t
        np.testing.assert_allclose(spectrum.offset_attention(1, first, 48, 16.0, 64), w, rtol=1e-10)
        # p-RoPE (p = 3/4 of 32 pairs: 24 turn) keeps these pairs: the same head
        np.testing.assert_allclose(spectrum.offset_attention(1, first, 48, 16.0, 64, scheme="p-rope"), w, rtol=1e-10)
    # NoPE: every key scores |u|^2, attention is uniform whatever the offset
    np.testing.assert_allclose(spectrum.offset_attention(1, 0, 48, 16.0, 64, scheme="nope"), np.full(48, 1 / 48))
    assert f"{1 / 48:.3f}" == "0.021" and "$1/48 = 0.021$" in t
    # p-RoPE on the slowest quarter (pairs 28..31 of 32 do not turn): uniform too
    rotated = np.arange(32) < 24
    np.testing.assert_allclose(spectrum.offset_attention(1, 28, 48, 16.0, 64, scheme="p-rope"),
                               offset_weights_by_formula(1, 28, rotated=rotated), rtol=1e-10)
    np.testing.assert_allclose(spectrum.offset_attention(1, 28, 48, 16.0, 64, scheme="p-rope"), np.full(48, 1 / 48))
    # sharper with higher frequency: the weight on the offset falls as the first pair rises
    w = [offset_weights_by_formula(1, f)[1] for f in range(0, 29)]
    assert w[0] > 0.9 and w[-1] < 0.025 and np.all(np.diff(w[:17]) < 0.02)


def test_the_notebooks_own_positional_head():
    """The notebook's cell c08-12, run: its weights for every first pair and scheme against the formula above."""
    weights = notebook_cells.run_cells(NB.stem, "c08-02", "c08-12")["weights"]
    rotated = {"rope": None, "p-rope": np.arange(32) < 24, "nope": np.zeros(32, bool)}
    for first in [0, 3, 8, 16, 28]:
        for scheme, turning in rotated.items():
            np.testing.assert_allclose(weights[first, scheme], offset_weights_by_formula(1, first, rotated=turning),
                                       rtol=1e-10)


# --- Barbero et al.: the semantic channel -----------------------------------------------------------------------------

def semantic_by_formula(r, band, base=1e4, d=128, width=8, seed=0, rotated=True):
    pairs = np.arange(width) if band == "high" else np.arange(d // 2 - width, d // 2)
    vals = np.random.default_rng(seed).standard_normal((width, 2))
    a = (vals ** 2).sum(axis=1)
    a = a / a.sum()                                                # |c_i|^2 per pair, summing to 1
    th = thetas(d, base)[pairs] if rotated else np.zeros(width)
    return (a[None, :] * np.cos(np.asarray(r, float)[:, None] * th[None, :])).sum(axis=1)


def test_semantic_channel_numbers():
    r = np.array([0, 100, 1000, 4096, 32768])
    for band in ["high", "low"]:
        np.testing.assert_allclose(spectrum.semantic_match(r, band), semantic_by_formula(r, band), atol=1e-12)
    np.testing.assert_allclose(spectrum.semantic_match(r, "low", scheme="p-rope"), 1.0, atol=1e-12)
    hi, lo = semantic_by_formula(r, "high"), semantic_by_formula(r, "low")
    t = text()
    assert f"{lo[3]:.2f}" == "0.78" and f"{hi[3]:.2f}" == "0.21" and f"{lo[4]:.2f}" == "0.04"
    assert "slowest pairs still score 0.78, the fastest 0.21" in t and "(0.04)" in t
    assert spectrum.distractor_level(8) == 0.25 and "\\pm 1/\\sqrt{16} = \\pm 0.25" in t
    # a random unit key against a unit query on 16 features: standard deviation 1/4 (checked by sampling)
    rng = np.random.default_rng(1)
    q, k = rng.standard_normal((2, 20000, 16))
    s = (q / np.linalg.norm(q, axis=1, keepdims=True) * k / np.linalg.norm(k, axis=1, keepdims=True)).sum(axis=1)
    assert abs(s.std() - 0.25) < 0.01


# --- Men et al.: the bound --------------------------------------------------------------------------------------------

def test_the_notebooks_own_semantic_channel():
    """The notebook's cell c08-18, run: its last scores (the slowest pairs under p-RoPE) and its share of |c|^2 per
    pair against semantic_by_formula."""
    nb = notebook_cells.run_cells(NB.stem, "c08-02", "c08-18")
    np.testing.assert_allclose(nb["scores"], semantic_by_formula(nb["r"], "low", rotated=False), atol=1e-12)
    for band in ["high", "low"]:
        pairs = slice(0, 8) if band == "high" else slice(56, 64)
        np.testing.assert_allclose(np.cos(np.outer(nb["r"], thetas(128)[pairs])) @ nb["share"],
                                   semantic_by_formula(nb["r"], band), atol=1e-12)


def test_similarity_margin_is_theorem_1s_sum():
    """The notebook's own B_m (its cell c08-21), against the sum written out and against Theorem 1 by sampling."""
    similarity_margin = notebook_cells.run_cells(NB.stem, "c08-02", "c08-21")["similarity_margin"]
    m = np.array([0.0, 1.0, 17.5, 1000.0])
    np.testing.assert_allclose(similarity_margin(m, 128, 1e4), np.cos(m[:, None] * thetas(128)).sum(axis=1),
                               atol=1e-10)
    # Theorem 1 by sampling: q ~ N(0, s^2 I), k* = q + eps; E[q.R_m k*] - E[q.R_m k] = 2 s^2 B_m ... with k
    # independent of q the second term is 0, and E[q.R_m q] = s^2 * 2 * sum_i cos(m theta_i)
    rng = np.random.default_rng(0)
    q = rng.standard_normal((20000, 16))
    import rope_ref as rr
    for dist in [0.0, 3.0, 40.0]:
        est = (rr.rotate(q, np.full(20000, dist)) * q).sum(axis=1).mean()
        assert est == pytest.approx(2 * similarity_margin([dist], 16)[0], abs=0.15)


@pytest.mark.slow
@pytest.mark.parametrize("base", [1e3, 1e4, 5e5, 1e6])
def test_supported_context_is_the_last_distance_before_B_turns_negative(base):
    assert base_bound.supported_context(base, 128) == first_negative_B(base) - 1


@pytest.mark.slow
def test_supported_context_numbers_in_the_prose():
    t = text()
    for shown in ["Theorem 1 (eq 9)", "(eq 10)", "(eq 11)"]:
        assert shown in t, shown
    for base, shown in [(1e4, "1,706"), (5e5, "18,437"), (1e6, "27,114")]:
        assert f"{first_negative_B(base) - 1:,}" == shown and shown in t


@pytest.mark.slow
def test_model_points_are_what_transformers_reads_from_the_shipped_configs():
    """Each model's base, head_dim and context against transformers 5.24.0's reading of the same shipped file
    (tests/data/record_shipped_configs.py), and the shipped copies of test configs are those files unchanged."""
    import json
    recorded = json.loads((ROOT / "tests" / "data" / "shipped_configs_transformers.json").read_text())["configs"]
    shipped = sorted(p.stem for p in (ROOT / "rope_ref" / "teaching" / "data").glob("*.json"))
    assert sorted(recorded) == shipped and {e["config"] for e in base_bound.MODELS.values()} <= set(shipped)
    pts = base_bound.model_points()
    assert list(pts) == list(base_bound.MODELS)
    for name, entry in base_bound.MODELS.items():
        rec = recorded[entry["config"]]
        rope = rec["rope_parameters"].get(entry.get("layer_type"), rec["rope_parameters"])
        p = pts[name]
        assert (p["base"], p["head_dim"]) == (rope["rope_theta"], rec["head_dim"]), name
        ctx = rec["max_position_embeddings"]
        if p["scaled_from"] == ctx:                       # the config states the length before its yarn section
            ctx = int(rope["factor"] * ctx)
        assert p["context"] == ctx, name
        test_copy = ROOT / "tests" / "data" / "configs" / f"{entry['config']}.json"
        if test_copy.exists():
            assert json.loads(test_copy.read_text()) == base_bound._shipped_config(entry["config"]), name
    # typed from the models' cards: the points the figure draws
    assert {n: (p["base"], p["context"]) for n, p in pts.items()} == {
        "Llama 2 7B": (1e4, 4096), "Llama 3 8B": (5e5, 8192), "Llama 3.1 8B": (5e5, 131072),
        "Mistral 7B v0.1": (1e4, 32768), "Qwen2.5 7B": (1e6, 131072), "Gemma 7B": (1e4, 8192),
        "Gemma 3 27B (global layers)": (1e6, 131072)}


def scaled_thetas(name):
    """The frequencies each scaled model runs at, written out here from the scaling methods' definitions (not
    rope_ref): Gemma 3's linear x8, Llama 3.1's llama3 (factor 8, low/high_freq_factor 1/4, 8192) and Qwen2.5's YaRN
    (factor 4, original 32768, beta_fast 32, beta_slow 1, the correction dims floored/ceiled)."""
    if name == "Gemma 3 27B (global layers)":
        return thetas(128, 1e6) / 8
    if name == "Llama 3.1 8B":
        th = thetas(128, 5e5)
        wavelen = 2 * np.pi / th
        smooth = (8192 / wavelen - 1) / (4 - 1)
        mid = (1 - smooth) * th / 8 + smooth * th
        return np.where(wavelen < 8192 / 4, th, np.where(wavelen > 8192, th / 8, mid))
    th = thetas(128, 1e6)                                           # Qwen2.5 7B, YaRN
    dim = lambda rotations: 128 * np.log(32768 / (rotations * 2 * np.pi)) / (2 * np.log(1e6))   # noqa: E731
    low, high = max(np.floor(dim(32)), 0), min(np.ceil(dim(1)), 127)
    ramp = np.clip((np.arange(64) - low) / (high - low), 0, 1)
    return th / 4 * ramp + th * (1 - ramp)


def last_nonnegative(inv_freq, limit):
    m = np.arange(limit + 1, dtype=float)
    negative = np.flatnonzero(np.cos(m[:, None] * inv_freq[None, :]).sum(axis=1) < 0)
    return int(negative[0]) - 1


@pytest.mark.slow            # B_m at 220,000 distances for three models: seconds
def test_real_models_at_the_frequencies_they_run_at_and_the_prose_verdict():
    """issue 31: each model is judged at its scaled frequencies (Gemma 3 about 216,915, Llama 3.1 85,132, Qwen2.5
    66,233, recomputed here); Llama 3 and Gemma 3 are below the line, the five others above."""
    pts = base_bound.model_points()
    assert pts["Llama 3.1 8B"]["base"] == 500000.0 and pts["Llama 3.1 8B"]["context"] == 131072
    assert pts["Qwen2.5 7B"]["context"] == 4 * 32768 and pts["Qwen2.5 7B"]["scaled_from"] == 32768
    assert pts["Gemma 7B"]["head_dim"] == 256 and pts["Mistral 7B v0.1"]["base"] == 10000.0
    want = {}
    for name, p in pts.items():
        assert p["source"], name
        if p["scaled_from"]:
            want[name] = last_nonnegative(scaled_thetas(name), 220_000)
        else:
            want[name] = first_negative_B(p["base"], p["head_dim"], 140_000) - 1
        assert p["supported"] == want[name], name
    assert {n: want[n] for n in ("Gemma 3 27B (global layers)", "Llama 3.1 8B", "Qwen2.5 7B")} == {
        "Gemma 3 27B (global layers)": 216915, "Llama 3.1 8B": 85132, "Qwen2.5 7B": 66233}
    below = [name for name, p in pts.items() if want[name] >= p["context"]]
    assert below == ["Llama 3 8B", "Gemma 3 27B (global layers)"]
    t = " ".join(text().split())
    assert "Almost every model" not in t and "Five of the seven models sit **above** the line" in t
    for shown in ["Llama 3 (8,192 positions at base 500,000, which supports 18,437)", "linear scaling ×8",
                  "up to 216,915", "Llama 3.1's llama3 frequencies reach 85,132", "YaRN frequencies 66,233",
                  "short of 131,072"]:
        assert shown in t, shown


@pytest.mark.slow
def test_the_figure_marks_what_scaled_frequencies_support():
    pts = base_bound.model_points()
    fig = base_bound.fig_base_bound(pts, bases=10.0 ** np.arange(3, 6.41, 0.1))
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert "Gemma 3 27B (global layers): 131,072, linear 216,915" in labels
    assert "Qwen2.5 7B: 131,072, yarn 66,233 (above)" in labels and "Llama 3 8B: 8,192" in labels
    bars = [(ln.get_xdata()[0], ln.get_ydata()[0]) for ln in fig.axes[0].get_lines() if ln.get_marker() == "_"]
    assert sorted(bars) == sorted([(5e5, 85132), (1e6, 66233), (1e6, 216915)])


def test_configs_are_described_as_what_they_are():
    """issue 31: Mistral's shipped file is a 5-key excerpt without sliding_window, and 32,768 is a config value."""
    data = ROOT / "rope_ref" / "teaching" / "data"
    import json
    keys = {name: json.loads((data / f"{name}.json").read_text()) for name in
            ["mistral-7b-v0.1", "llama-3.1-8b", "qwen2.5-7b-instruct-yarn", "gemma-7b"]}
    assert len(keys["mistral-7b-v0.1"]) == 5 and "sliding_window" not in keys["mistral-7b-v0.1"]
    assert all(len(k) <= 6 and "architectures" not in k for k in keys.values())
    for full in ["llama-2-7b-hf", "meta-llama-3-8b", "gemma-3-27b-pt"]:
        assert "architectures" in json.loads((data / f"{full}.json").read_text()), full
    t = " ".join(text().split())
    assert "published config.json files" not in t
    for shown in ["except Mistral 7B's, Llama 3.1's, Qwen2.5's and Gemma 7B's, which are excerpts",
                  "Mistral 7B's config says 32,768",
                  "sliding window of 4,096 (`sliding_window` in its published config"]:
        assert shown in t, shown


def test_barbero_claims_stated_as_the_paper_states_them():
    t = " ".join(text().split())
    assert "they *suspect* carry semantic information" in t and "which we suspect are used to carry semantic" in t
    assert "the **lowest** carry *semantic* channels" not in t and "NoPE cannot build those positional heads" not in t
    assert "a single attention head without positional encoding cannot build a diagonal head on the sequence" in t
    assert "Haviv et al. 2022, arXiv:2203.16634" in t
    assert "rebuttal on OpenReview (ICLR 2025)" in t
    assert "NoPE cannot build such a head" not in t


def test_qwen35_and_gemma4_cited_to_their_configs():
    """The citations are transformers 5.24's config classes; the audit of those classes (tests/data/audit_families.txt,
    recorded from transformers 5.24.0) and the families configs written from them agree."""
    import json
    t = " ".join(text().split())
    assert "`partial_rotary_factor` 0.25, the default of transformers 5.24's `Qwen3_5TextConfig`" in t
    assert "transformers 5.24's `Gemma4TextConfig` gives its full-attention layers `rope_type` \"proportional\"" in t
    fams = ROOT / "tests" / "data" / "configs" / "families"
    assert json.loads((fams / "v5-qwen3-5-text.json").read_text())["rope_parameters"]["partial_rotary_factor"] == 0.25
    full = json.loads((fams / "v5-gemma4-text.json").read_text())["rope_parameters"]["full_attention"]
    assert full == {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1000000.0}
    audit = (ROOT / "tests" / "data" / "audit_families.txt").read_text()
    assert "gemma4_text [full_attention]" in audit and "base=1e+06 proportional" in audit
    code = "\n".join(notebook_cells.src(c) for c in cells() if c["cell_type"] == "code")
    assert "spectrum.fig_turning_dimensions()" in code


# --- the exercise ---------------------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_checker_with_right_wrong_and_missing_answers(capsys):
    right = first_negative_B(5e5) - 1
    assert check_supported_context(None) is False and capsys.readouterr().out.startswith("Not answered yet")
    assert check_supported_context(right) is True and capsys.readouterr().out.startswith("Correct: ")
    assert check_supported_context(right + 1) is False
    assert "first distance where B_m < 0" in capsys.readouterr().out
    assert check_supported_context(8192) is False and capsys.readouterr().out.startswith("Not yet: ")
    assert check_supported_context(10 ** 6) is False and "already negative" in capsys.readouterr().out
    assert check_supported_context(18437.0) is False and "a whole number" in capsys.readouterr().out
    assert check_supported_context(-1) is False and "0 or more" in capsys.readouterr().out
    assert spectrum.distractor_level(10 ** 30) == pytest.approx(1 / np.sqrt(2e30))          # a huge int is a number


def test_exercise_follows_the_course_convention():
    cs = cells()
    tags = [c["metadata"].get("tags", []) for c in cs]
    ex = [i for i, t in enumerate(tags) if "exercise" in t]
    assert [cs[i]["cell_type"] for i in ex] == ["markdown", "code"]
    student = "".join(cs[ex[1]]["source"])
    assert "answer = None" in student and "check_supported_context(answer" in student
    heading = cs[ex[1] + 1]
    assert heading["cell_type"] == "markdown" and heading["metadata"].get("heading_collapsed") is True
    assert "".join(heading["source"]).strip() == "#### Solution"
    assert heading["metadata"].get("jp-MarkdownHeadingCollapsed") is True     # what JupyterLab 4 folds by
    sol = [c for c in cs[ex[1] + 2:] if "solution" in c["metadata"].get("tags", [])]
    assert sol and all(c["metadata"]["jupyter"] == {"source_hidden": True, "outputs_hidden": True} for c in sol)
    assert "".join(sol[-1]["source"]).strip().splitlines()[-1].startswith(
        "assert exercises_extensions.check_supported_context(answer")


# --- pictures ------------------------------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("make", ["turning", "bound", "OffsetAttentionView", "SemanticMatchView", "fig_decay_experiment"])
def test_pictures_put_no_words_on_their_data(make):
    from figure_layout import layout_faults
    if make == "turning":
        fig = spectrum.fig_turning_dimensions()
    elif make == "bound":
        fig = base_bound.fig_base_bound(base_bound.model_points(), bases=10.0 ** np.arange(3, 6.41, 0.1))
    elif make == "fig_decay_experiment":                     # the curves notebook 10 computes and draws
        r = np.arange(0, 5001, 10)
        decay_experiment = notebook_cells.run_cells("10_the_papers_numbers", "c10-02", "b08fig2b")["decay_experiment"]
        curves = decay_experiment(r, n_samples=64)
        fig = spectrum.fig_decay_experiment(r, curves, d=256, n_samples=64)
    else:
        fig = getattr(spectrum, make)().static_figure()
    assert layout_faults(fig) == []


@pytest.mark.slow
def test_static_frames_show_what_the_sliders_show():
    """The views' strips of frames (what a reader without a kernel sees): the first-pair slider at 0, 3, 8, 16 with
    the head's weights of the formula; the base slider at 10^4 (out to 32768), 10^5, 10^6."""
    w = widgets.offset_attention_widget(pair=0, offset=1, scale=16.0)         # as notebook 08 calls it
    assert [params.get("pair", 0) for _, params in w.frames] == [0, 3, 8, 16]
    view = spectrum.OffsetAttentionView(pair=0, offset=1, scale=16.0)
    for caption, params in w.frames:
        view.update(**params)
        first = view.params["pair"]
        assert f"first pair {first}" in caption
        np.testing.assert_allclose(view.weights["rope"], offset_weights_by_formula(1, first), rtol=1e-10)
    s = widgets.semantic_match_widget(base=10000.0, max_distance=4096)
    view = spectrum.SemanticMatchView(base=10000.0, max_distance=4096)
    states = []
    for caption, params in s.frames:
        view.update(**params)
        states.append((view.params["base"], view.params["max_distance"]))
        np.testing.assert_allclose(view.scores[("low", "rope")],
                                   semantic_by_formula(view.r, "low", view.params["base"]), atol=1e-12)
    assert states == [(1e4, 4096), (1e4, 32768), (1e5, 32768), (1e6, 32768)]
    code = "\n".join("".join(c["source"]) for c in cells() if c["cell_type"] == "code")
    assert "widgets.offset_attention_widget(pair=0, offset=1, scale=16.0)" in code
    assert "widgets.semantic_match_widget(base=10000.0, max_distance=4096)" in code


@pytest.mark.slow
def test_views_update_and_report():
    v = spectrum.OffsetAttentionView()
    png = v.to_png()
    v.update(pair=16)
    assert v.to_png() != png and "RoPE 0.027" in v.readout()
    with pytest.raises(TypeError, match="unknown parameter"):
        v.update(offest=2)
    with pytest.raises(ValueError, match="pair must be"):
        v.update(pair=40)
    assert v.params["pair"] == 16                       # a refused value leaves the view as it was
    s = spectrum.SemanticMatchView()
    s.update(base=1e6)
    assert "slowest pairs +1.00" in s.readout() or "slowest pairs +0.99" in s.readout()


def test_partial_fractions_named_in_the_prose_are_the_configs():
    import rope_ref as rr
    configs = ROOT / "tests" / "data" / "configs"
    for name, fraction, shown in [("gpt-neox-20b.json", 0.25, "GPT-NeoX 1/4"), ("phi-2.json", 0.4, "Phi-2 0.4"),
                                  ("glm-4-9b-chat-hf.json", 0.5, "GLM-4 1/2")]:
        cfg = rr.from_hf_config(configs / name)
        assert cfg.rotary_dim == fraction * cfg.head_dim, name
        assert shown in text(), shown


@pytest.mark.slow
def test_gemma_7b_verdict_uses_its_own_head_dim():
    assert first_negative_B(1e4, d=256) - 1 == 2652
    assert "Gemma 7B's is 256, for which base $10^4$ supports 2,652 positions" in text()
