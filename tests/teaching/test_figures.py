"""Figures regenerate byte-identically and match the committed ones; each figure and view is in the style (no text
under 10 pt, math in mathtext, only the palette's colours, greys and safe colour maps, no words on the data); the
numbers some figures draw are recomputed here."""

import io
import re
from pathlib import Path

import matplotlib
import numpy as np
import pytest
from figure_layout import layout_faults
from matplotlib.cm import ScalarMappable
from matplotlib.colors import ListedColormap, to_rgb
from matplotlib.text import Text
from PIL import Image

from rope_ref.teaching.figures import (FIG2_PAPER_YLIM, FIGURES, fig2_long_term_decay, fig_attention_pattern,
    fig_clock_hands, fig_precision, write_all)
from rope_ref.teaching.spectrum import OffsetAttentionView, SemanticMatchView
from rope_ref.teaching.style import PALETTE, RC
from rope_ref.teaching.views import DecayView, RotationsView, ScalingView
from rope_ref.teaching.vision_rope import GridScoreView

FIG_DIR = Path(__file__).resolve().parents[2] / "figures"
VIEWS = {v.__name__: v for v in (DecayView, RotationsView, ScalingView, OffsetAttentionView, SemanticMatchView,
                                 GridScoreView)}
SAFE_COLORMAPS = {"viridis", "cividis", "RdBu", "RdBu_r"}


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory):
    out = tmp_path_factory.mktemp("figs")
    return out, write_all(out)


@pytest.mark.slow            # regenerates every figure
def test_committed_figures_match_regeneration_and_a_second_run(regenerated, tmp_path):
    out, paths = regenerated
    assert sorted(p.name for p in paths) == sorted(f"{n}.{x}" for n in FIGURES for x in ("png", "svg"))
    stale = [p.name for p in paths
             if not (FIG_DIR / p.name).exists() or (FIG_DIR / p.name).read_bytes() != p.read_bytes()]
    assert not stale, f"committed figures differ from regenerated ones (run `python -m rope_ref figures`): {stale}"
    for p in write_all(tmp_path, names=["fig2_long_term_decay", "context_extension_frequency_ratios", "aliasing"]):
        assert p.read_bytes() == (out / p.name).read_bytes(), p.name


def test_unknown_figure_names_are_refused_before_anything_is_written(tmp_path):
    with pytest.raises(ValueError, match="names"):
        write_all(tmp_path / "out", names=["aliasing", "nosuch"])
    assert not (tmp_path / "out").exists()
    assert [p.name for p in write_all(tmp_path, names="aliasing")] == ["aliasing.png", "aliasing.svg"]


@pytest.mark.parametrize("out_dir, error", [(None, TypeError), ("taken.txt", ValueError), ("old", ValueError)])
def test_a_bad_out_dir_is_refused_before_anything_is_drawn_or_written(tmp_path, monkeypatch, out_dir, error):
    # before: None was a raw TypeError after drawing, a file a FileExistsError, a folder at old/aliasing.svg an
    # IsADirectoryError after old/aliasing.png was written
    monkeypatch.setitem(FIGURES, "aliasing", lambda: pytest.fail("drawn before out_dir was checked"))
    (tmp_path / "taken.txt").write_text("x")
    (tmp_path / "old" / "aliasing.svg").mkdir(parents=True)
    with pytest.raises(error, match="^out_dir "):
        write_all(out_dir and tmp_path / out_dir, names=["aliasing"])
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["aliasing.svg", "old", "taken.txt"]


def _drawn_colours(fig) -> set:
    """Every RGB the renderer strokes, fills or writes with (alpha 0 left out) while the figure is drawn."""
    renderer = fig.canvas.get_renderer()
    seen = set()

    def keep(rgba):
        for colour in np.atleast_2d(np.asarray(rgba, float)):
            if len(colour) < 4 or colour[3] > 0:
                seen.add(tuple(np.round(colour[:3], 3)))

    drawers = [("draw_path", (2,)), ("draw_markers", (4,)), ("draw_text", ()), ("draw_path_collection", (5, 6))]
    for name, faces in drawers:
        def recording(gc, *args, original=getattr(renderer, name), faces=faces, **kwargs):
            keep(gc.get_rgb())
            for index in faces:
                if len(args) > index and args[index] is not None and len(args[index]):
                    keep(args[index])
            return original(gc, *args, **kwargs)
        setattr(renderer, name, recording)
    fig.draw(renderer)
    return seen


def _style_faults(fig) -> list:
    """Text under 10 pt or with math outside $...$, colours off the palette (greys aside), unsafe colour maps."""
    faults = []
    for t in fig.findobj(Text):
        s = t.get_text()
        if s.strip() and t.get_visible() and t.get_fontsize() < 10:
            faults.append(f"{s!r} is {t.get_fontsize()} pt")
        plain = re.sub(r"\$[^$]*\$", "", s)
        faults += [f"{bad!r} outside mathtext in {s!r}"
                   for bad in ["theta", "_{", "^(", "_i", "q_m", "sum_"] if bad in plain]
    palette = np.array([to_rgb(c) for c in PALETTE])
    faults += [f"colour {c}" for c in _drawn_colours(fig)
               if np.ptp(c) > 0.01 and np.abs(palette - c).max(1).min() > 0.01]
    for mappable in fig.findobj(lambda a: isinstance(a, ScalarMappable) and a.get_array() is not None):
        cmap = mappable.get_cmap()
        listed = isinstance(cmap, ListedColormap) and all(np.abs(palette - c[:3]).max(1).min() <= 0.01
                                                           for c in cmap(np.arange(cmap.N)))
        if not listed and cmap.name not in SAFE_COLORMAPS:
            faults.append(cmap.name)
    return faults


@pytest.mark.slow            # draws one figure or view each, a second or more
@pytest.mark.parametrize("name", [*FIGURES, *VIEWS])
def test_every_figure_and_view_is_in_the_style_with_no_words_on_its_data(name):
    with matplotlib.rc_context(matplotlib.rcParamsDefault):           # as a notebook shows it
        fig = FIGURES[name]() if name in FIGURES else VIEWS[name]().fig
        assert _style_faults(fig) == [], name
    if name in VIEWS:
        fig = VIEWS[name]().static_figure()
    else:
        with matplotlib.rc_context(matplotlib.rcParamsDefault), matplotlib.rc_context(RC):
            fig = FIGURES[name]()
            fig.canvas.draw()
    assert layout_faults(fig) == [], name


def test_figure2_has_the_papers_axis():
    paper, full = fig2_long_term_decay().axes
    assert paper.get_ylim() == FIG2_PAPER_YLIM and full.get_ylim()[1] >= 32.5
    x, y = paper.lines[0].get_data()
    assert x[0] == 0 and x[-1] == 256 and len(x) == 25601 and y[0] == 32.5


def test_precision_figure_plots_the_largest_error_so_far():
    # float32 angles of pair i are fl(fl(m) * fl(theta_i)); the plotted value at m is the largest |error| over the
    # pairs and over every sampled position up to m
    (x16, _), (xb, _), (x32, y32) = [line.get_data() for line in fig_precision().axes[0].get_lines()[:3]]
    assert x16.max() <= 65504 < xb.max() == x32.max() == 1e6
    theta = 10000.0 ** (-np.arange(0, 128, 2) / 128)
    err = np.abs((x32.astype(np.float32)[:, None] * theta.astype(np.float32)).astype(np.float64)
                 - x32[:, None] * theta).max(axis=1)
    np.testing.assert_allclose(y32, np.maximum.accumulate(err), rtol=1e-12)


@pytest.mark.slow
def test_clock_hands_are_labelled_and_never_lie_on_one_another():
    fig = fig_clock_hands(d=16)
    assert [t.get_text() for leg in fig.legends for t in leg.get_texts()] == [f"hand {i}" for i in range(8)]
    for ax in fig.axes:
        hands = [line for line in ax.lines if line.get_linestyle() == "-"]
        points = [np.linspace(*np.array(line.get_xydata())[[0, -1]], 50) for line in hands]
        assert len(hands) == 8 and all(np.linalg.norm(points[i][:, None] - points[j][None], axis=-1).min() > 0.01
                                       for i in range(8) for j in range(i)), ax.get_title()


def test_attention_colour_scale_holds_every_weight():
    # issue 39: the colour bar capped at 0.5, so rows 0-1 (weights 1 and above 0.5) saturated
    for ax in fig_attention_pattern().axes[:2]:
        image = ax.images[0]
        weights = np.ma.masked_invalid(image.get_array()).compressed()
        assert image.norm.vmin <= weights.min() and weights.max() <= image.norm.vmax, ax.get_title()


@pytest.mark.slow
def test_scaling_view_keeps_each_method_apart_and_linear_visible_above_thick_black_training():
    # issue 31: same-looking lines, legends over them, linear (training's angles) hidden under training's line;
    # issue 39: on a projector orange and vermillion looked alike, and "the thick black line" was a pale grey band
    view = ScalingView(factor=8.0)
    lines = list(view.angle_lines.values())
    colours = [to_rgb(line.get_color()) for line in lines]
    assert len(set(colours)) == len(lines) and to_rgb(PALETTE[3]) not in colours      # no vermillion beside orange
    assert len({(line.get_marker(), str(line.get_linestyle())) for line in lines}) == len(lines)
    assert min(line.get_linewidth() for line in lines) >= 2
    assert to_rgb(view.train_line.get_color()) == (0, 0, 0) and view.train_line.get_linewidth() >= 4
    assert all(ax.get_legend() is None for ax in view.fig.axes) and len(view.fig.legends) == 1
    for ax in view.fig.axes:
        looks = [(line.get_marker(), line.get_linewidth()) for line in ax.lines if len(line.get_xdata()) > 2]
        assert len(looks) >= 5 and len(set(looks)) == len(looks), (ax.get_title(), looks)

    def frame():
        return np.asarray(Image.open(io.BytesIO(view.to_png())).convert("RGB"))
    linear, shown = view.angle_lines["linear"], frame()
    assert linear.get_zorder() > view.train_line.get_zorder()          # on top in the saved figure, and in the view:
    linear.set_visible(False)                                           # hiding it changes a band along its path
    xy = linear.get_transform().transform(np.column_stack(linear.get_data()))
    assert np.any(frame() != shown, axis=-1).sum() > 3 * np.hypot(*np.diff(xy, axis=0).T).sum()
