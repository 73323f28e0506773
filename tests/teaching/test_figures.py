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
