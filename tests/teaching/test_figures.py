"""Figures regenerate byte-identically and match the committed ones."""

from pathlib import Path

import pytest

from rope_ref.teaching.figures import FIGURES, write_all

FIG_DIR = Path(__file__).resolve().parents[2] / "figures"
REQUIRED = ["fig2_long_term_decay", "three_forms_agreement", "relative_identity_heatmaps", "rotation_illustration"]


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory):
    out = tmp_path_factory.mktemp("figs")
    return out, write_all(out)


def test_required_figures_are_produced(regenerated):
    out, paths = regenerated
    names = {p.name for p in paths}
    for name in REQUIRED:
        assert f"{name}.png" in names and f"{name}.svg" in names
    assert len(paths) == 2 * len(FIGURES)


def test_committed_figures_match_regeneration(regenerated):
    out, paths = regenerated
    stale = [p.name for p in paths if not (FIG_DIR / p.name).exists()
             or (FIG_DIR / p.name).read_bytes() != p.read_bytes()]
    assert not stale, f"committed figures differ from regenerated ones (run `python -m rope_ref figures`): {stale}"


def test_two_runs_are_byte_identical(regenerated, tmp_path):
    out, paths = regenerated
    again = write_all(tmp_path, names=["fig2_long_term_decay", "relative_identity_heatmaps"])
    for p in again:
        assert p.read_bytes() == (out / p.name).read_bytes(), p.name
    svg = (tmp_path / "fig2_long_term_decay.svg").read_text()
    assert "<dc:date>" not in svg


def test_figure2_has_the_papers_axis():
    from rope_ref.teaching.figures import FIG2_PAPER_YLIM, fig2_long_term_decay
    fig = fig2_long_term_decay()
    paper, full = fig.axes[0], fig.axes[1]
    assert paper.get_ylim() == FIG2_PAPER_YLIM
    assert full.get_ylim()[1] >= 32.5
    x, y = paper.lines[0].get_data()
    assert x[0] == 0 and x[-1] == 256 and len(x) == 25601 and y[0] == 32.5


def _all_views():
    from rope_ref.teaching.views import DecayView, RotationsView, ScalingView
    return {"DecayView": DecayView().static_figure(), "RotationsView": RotationsView().static_figure(),
            "ScalingView": ScalingView().static_figure()}


@pytest.fixture(scope="module")
def every_figure():
    import matplotlib
    from rope_ref.teaching.figures import RC
    with matplotlib.rc_context(matplotlib.rcParamsDefault), matplotlib.rc_context(RC):
        figs = {name: make() for name, make in FIGURES.items()} | _all_views()
        for fig in figs.values():
            fig.canvas.draw()
        yield figs


def test_no_text_is_smaller_than_10_points(every_figure):
    from matplotlib.text import Text
    for name, fig in every_figure.items():
        for t in fig.findobj(Text):
            if t.get_text().strip():
                assert t.get_fontsize() >= 10, f"{name}: {t.get_text()!r} is {t.get_fontsize()} pt"


def test_math_in_labels_is_mathtext(every_figure):
    # "theta_i", "k_{m+16}" or "10000^(-2i/d)" in plain text is unreadable on a slide: math goes in $...$.
    import re
    from matplotlib.text import Text
    for name, fig in every_figure.items():
        for t in fig.findobj(Text):
            s = t.get_text()
            assert s.count("$") % 2 == 0, f"{name}: unbalanced $ in {s!r}"
            plain = re.sub(r"\$[^$]*\$", "", s)
            for bad in ["theta", "_{", "^(", "_i", "q_m", "k_n", "sum_", "sum |"]:
                assert bad not in plain, f"{name}: {bad!r} outside mathtext in {s!r}"
