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


def _png_dpi(data: bytes) -> float:
    """Resolution from the PNG's pHYs chunk (pixels per metre -> dots per inch); 0 if there is none."""
    import struct
    pos = 8
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"pHYs":
            x_ppm, y_ppm, unit = struct.unpack(">IIB", data[pos + 8:pos + 17])
            assert unit == 1 and x_ppm == y_ppm     # metres, square pixels
            return x_ppm * 0.0254
        pos += 12 + length
    return 0.0


def _texts_and_legends(fig):
    from matplotlib.legend import Legend
    from matplotlib.text import Text
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    return texts, fig.findobj(Legend)


def test_every_figure_is_in_the_style(regenerated):
    """150 dpi or more, read back from each PNG; no visible text and no legend under 10 pt."""
    out, _ = regenerated
    for name, make in FIGURES.items():
        assert _png_dpi((out / f"{name}.png").read_bytes()) >= 149.9, name
        fig = make()
        fig.canvas.draw()
        texts, legends = _texts_and_legends(fig)
        assert texts, name
        small = [(t.get_text(), t.get_fontsize()) for t in texts if t.get_fontsize() < 10]
        assert not small, f"{name}: text under 10 pt: {small}"
        assert all(leg.get_texts()[0].get_fontsize() >= 10 for leg in legends), name


@pytest.mark.parametrize("make", ["DecayView", "RotationsView", "ScalingView"])
def test_every_view_is_in_the_style(make):
    """A view's slider image is shown pixel for pixel (its width is the widget's CSS width, 100 px per
    inch of figure: nothing is rescaled on a standard display), and has no text under 10 pt."""
    import io

    from PIL import Image

    import rope_ref.teaching.views as views
    from rope_ref.teaching.widgets import slider_app
    view = getattr(views, make)()
    width_px = Image.open(io.BytesIO(view.to_png())).size[0]
    assert width_px / view.fig.get_figwidth() >= 99.9, (width_px, view.fig.get_figwidth())
    assert slider_app(view, {}).image.layout.width == f"{width_px}px"
    texts, legends = _texts_and_legends(view.fig)
    assert texts and not [(t.get_text(), t.get_fontsize()) for t in texts if t.get_fontsize() < 10]
    assert all(leg.get_texts()[0].get_fontsize() >= 10 for leg in legends)
