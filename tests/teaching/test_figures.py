"""Figures regenerate byte-identically and match the committed ones."""

from pathlib import Path

import pytest

from rope_ref.teaching.figures import FIGURES, write_all

FIG_DIR = Path(__file__).resolve().parents[2] / "figures"
REQUIRED = ["fig2_long_term_decay", "relative_identity_heatmaps", "rotation_illustration", "precision_angle_errors"]


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory):
    out = tmp_path_factory.mktemp("figs")
    return out, write_all(out)


@pytest.mark.slow            # regenerates every figure (about 10 s in all)
def test_required_figures_are_produced(regenerated):
    out, paths = regenerated
    names = {p.name for p in paths}
    for name in REQUIRED:
        assert f"{name}.png" in names and f"{name}.svg" in names
    assert len(paths) == 2 * len(FIGURES)


@pytest.mark.slow            # regenerates every figure (about 10 s in all)
def test_committed_figures_match_regeneration(regenerated):
    out, paths = regenerated
    stale = [p.name for p in paths if not (FIG_DIR / p.name).exists()
             or (FIG_DIR / p.name).read_bytes() != p.read_bytes()]
    assert not stale, f"committed figures differ from regenerated ones (run `python -m rope_ref figures`): {stale}"


@pytest.mark.slow            # regenerates every figure (about 10 s in all)
def test_two_runs_are_byte_identical(regenerated, tmp_path):
    out, paths = regenerated
    again = write_all(tmp_path, names=["fig2_long_term_decay", "relative_identity_heatmaps", "precision_angle_errors",
                                       "context_extension_frequency_ratios", "decay_bound_vs_actual", "aliasing",
                                       "turning_dimensions", "mrope_layout"])
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


@pytest.mark.slow            # regenerates every figure (about 10 s in all)
def test_no_text_is_smaller_than_10_points(every_figure):
    from matplotlib.text import Text
    for name, fig in every_figure.items():
        for t in fig.findobj(Text):
            if t.get_text().strip():
                assert t.get_fontsize() >= 10, f"{name}: {t.get_text()!r} is {t.get_fontsize()} pt"


@pytest.mark.slow            # regenerates every figure (about 10 s in all)
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


@pytest.mark.slow            # regenerates every figure (about 10 s in all)
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


@pytest.mark.slow
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


# --- words never sit on the data (figure_layout.layout_faults) --------------------------------------------------------

def _styled(make):
    import matplotlib
    from rope_ref.teaching.style import RC
    with matplotlib.rc_context(matplotlib.rcParamsDefault), matplotlib.rc_context(RC):
        fig = make()
        fig.canvas.draw()
        return fig


@pytest.mark.slow            # draws every figure (about 10 s in all)
@pytest.mark.parametrize("name", FIGURES)
def test_no_figure_puts_words_on_its_data(name):
    from figure_layout import layout_faults
    assert layout_faults(_styled(FIGURES[name])) == []


@pytest.mark.slow
@pytest.mark.parametrize("name", ["DecayView", "RotationsView", "ScalingView"])
def test_no_view_puts_words_on_its_data(name):
    import rope_ref.teaching.views as views
    from figure_layout import layout_faults
    assert layout_faults(getattr(views, name)().static_figure()) == []


def _line_figure(**legend):
    import numpy as np
    from rope_ref.teaching.style import new_figure
    fig = new_figure(6, 3)
    ax = fig.subplots()
    x = np.linspace(0, 10, 200)
    ax.plot(x, x, label="rising")
    ax.plot(x, 10 - x, label="falling")
    ax.set(xlim=(0, 10), ylim=(0, 10))
    if legend:
        ax.legend(**legend)
    return fig, ax


@pytest.mark.slow
def test_layout_faults_sees_a_legend_on_a_line_and_text_on_a_line():
    from figure_layout import layout_faults
    fig, ax = _line_figure()
    assert layout_faults(fig) == []                                  # two crossing lines, no words: clean
    fig, ax = _line_figure(loc="upper right")                        # the rising line ends under the legend
    assert any("legend covers the line 'rising'" in f for f in layout_faults(fig))
    fig, ax = _line_figure(loc="upper center")                       # between the lines' ends: clean
    assert layout_faults(fig) == []
    fig, ax = _line_figure()
    ax.text(4.5, 5, "on the crossing")
    assert any("text 'on the crossing' covers the line" in f for f in layout_faults(fig))
    fig, ax = _line_figure()
    ax.annotate("clear of both", xy=(5, 5), xytext=(3.5, 9), arrowprops=dict(arrowstyle="->"))
    assert layout_faults(fig) == []                                  # the arrow may cross; the words do not
    fig, ax = _line_figure()
    ax.set_title("a title far too long for a figure six inches wide " * 3)
    assert any("runs off the figure" in f for f in layout_faults(fig))
    fig, ax = _line_figure()
    ax.text(1, 8.5, "one")
    ax.text(1.2, 8.6, "two")
    assert any("overlaps text 'two'" in f for f in layout_faults(fig))


@pytest.mark.slow
@pytest.mark.parametrize("plant", ["ratios text back above the turn line", "precision legend inside a panel",
                                   "bound-vs-actual legend upper right", "aliasing note at (12, 0.2)"])
def test_layout_faults_sees_the_old_figures_faults(plant):
    """The faults seen on a projector, planted back into today's figures: each is reported."""
    from rope_ref.teaching import figures
    from figure_layout import layout_faults
    if plant.startswith("ratios"):
        fig = _styled(figures.fig_frequency_ratios)
        note = [t for ax in fig.axes for t in ax.texts if t.get_text().startswith("dotted: one full turn")]
        assert len(note) == 1
        note[0].set(text="above: a full turn, every angle seen", x=1, y=1.3)
        assert any("text 'above: a full turn" in f for f in layout_faults(fig))
    elif plant.startswith("precision"):
        fig = _styled(figures.fig_precision)
        fig.legends.clear()
        for name in ["float16", "bfloat16", "float32"]:                    # the old legend: three entries
            fig.axes[1].plot([], [], label=name)
        fig.axes[1].legend(loc="upper right", title="angles in")
        assert any("legend covers the line" in f for f in layout_faults(fig))
    elif plant.startswith("bound"):
        fig = _styled(figures.fig_decay_vs_actual)
        fig.legends.clear()
        fig.axes[0].legend(loc="upper right")
        assert any("legend covers the line 'mean $|q" in f for f in layout_faults(fig))
    else:
        fig = _styled(figures.fig_aliasing)
        note = fig.axes[0].texts[0]
        note.set_position((12, 0.2))
        assert any("almost back at" in f and "covers the line" in f for f in layout_faults(fig))


def test_clock_hands_are_labelled_as_the_prose_says():
    from rope_ref.teaching.figures import fig_clock_hands
    fig = fig_clock_hands(d=16)
    labels = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    assert labels == [f"hand {i}" for i in range(8)]


def test_precision_figure_plots_the_largest_error_so_far():
    # Recomputed without rope_ref: float32 angles of pair i are fl(fl(m) * fl(theta_i)); the plotted value at m
    # is the largest |error| over the pairs and over every sampled position up to m.
    import numpy as np
    from rope_ref.teaching.figures import fig_precision
    fig = fig_precision()
    (x16, _), (xb, _), (x32, y32) = [line.get_data() for line in fig.axes[0].get_lines()[:3]]
    assert x16.max() <= 65504 < xb.max() == x32.max() == 1e6
    theta = 10000.0 ** (-np.arange(0, 128, 2) / 128)
    err = np.abs((np.float32(1) * x32.astype(np.float32)[:, None] * theta.astype(np.float32)).astype(np.float64)
                 - x32[:, None] * theta).max(axis=1)
    np.testing.assert_allclose(y32, np.maximum.accumulate(err), rtol=1e-12)
    assert np.all(np.diff(y32) >= 0)


# --- one colour-blind-safe palette (issue 31) ----------------------------------------------------------------------

#: Colour maps a figure may use: perceptually uniform, or diverging blue-red (no red-green).
SAFE_COLORMAPS = {"viridis", "cividis", "RdBu", "RdBu_r"}


def _every_view():
    from rope_ref.teaching.spectrum import OffsetAttentionView, SemanticMatchView
    from rope_ref.teaching.views import DecayView, RotationsView, ScalingView
    from rope_ref.teaching.vision_rope import GridScoreView
    return {view.__name__: view for view in (DecayView, RotationsView, ScalingView, OffsetAttentionView,
                                             SemanticMatchView, GridScoreView)}


def _drawn_colours(fig, artists=None) -> set:
    """Every RGB the renderer strokes, fills or writes with (alpha 0 left out) while the figure is drawn, or
    while ``artists`` are drawn one by one (``fig.draw_artist``, as a view's step draws them)."""
    import numpy as np
    renderer = fig.canvas.get_renderer()
    seen, originals = set(), {}

    def keep(rgba):
        for colour in np.atleast_2d(np.asarray(rgba, float)):
            if len(colour) < 4 or colour[3] > 0:
                seen.add(tuple(np.round(colour[:3], 3)))

    def record(name, faces):
        original = originals[name] = getattr(renderer, name)

        def recording(gc, *args, **kwargs):
            keep(gc.get_rgb())
            for index in faces:
                if len(args) > index and args[index] is not None and len(args[index]):
                    keep(args[index])
            return original(gc, *args, **kwargs)
        setattr(renderer, name, recording)

    for name, faces in [("draw_path", (2,)), ("draw_markers", (4,)), ("draw_text", ()),
                        ("draw_path_collection", (5, 6))]:
        record(name, faces)
    try:
        if artists is None:
            fig.draw(renderer)
        for artist in artists or ():
            fig.draw_artist(artist)
    finally:
        for name, original in originals.items():
            setattr(renderer, name, original)
    return seen


def _off_palette(fig, artists=None) -> list:
    """Colours that are neither grey nor within 0.01 of a palette colour, and colour maps outside the safe ones."""
    import numpy as np
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import ListedColormap, to_rgb
    from rope_ref.teaching.style import PALETTE
    palette = np.array([to_rgb(c) for c in PALETTE])
    wrong = [c for c in _drawn_colours(fig, artists)
             if np.ptp(c) > 0.01 and np.abs(palette - c).max(axis=1).min() > 0.01]
    for mappable in fig.findobj(lambda a: isinstance(a, ScalarMappable) and a.get_array() is not None):
        cmap = mappable.get_cmap()
        listed = isinstance(cmap, ListedColormap) and cmap.N <= len(PALETTE)
        colours = np.asarray(cmap(np.arange(cmap.N)))[:, :3] if listed else None
        if listed and all(np.abs(palette - c).max(axis=1).min() <= 0.01 for c in colours):
            continue
        if cmap.name not in SAFE_COLORMAPS:
            wrong.append(cmap.name)
    return wrong


@pytest.mark.slow            # draws every figure (about 10 s in all)
@pytest.mark.parametrize("name", FIGURES)
def test_every_figure_draws_in_the_palette_as_a_notebook_shows_it(name):
    """Built and drawn under matplotlib's defaults, as in a notebook: every colour is the palette's or a grey."""
    import matplotlib
    with matplotlib.rc_context(matplotlib.rcParamsDefault):
        fig = FIGURES[name]()
        assert _off_palette(fig) == [], name


@pytest.mark.slow
@pytest.mark.parametrize("name", ["DecayView", "RotationsView", "ScalingView", "OffsetAttentionView",
                                  "SemanticMatchView", "GridScoreView"])
def test_every_view_draws_in_the_palette_step_by_step(name):
    """A view's full drawing and its blitted step (each artist drawn alone) both use the palette."""
    import matplotlib
    with matplotlib.rc_context(matplotlib.rcParamsDefault):
        view = _every_view()[name]()
        assert _off_palette(view.fig) == [], name
        view.to_png()
        assert _off_palette(view.fig, view.dynamic) == [], name


def test_the_palette_check_sees_matplotlibs_red_and_green():
    import matplotlib
    from rope_ref.teaching.style import new_figure
    with matplotlib.rc_context(matplotlib.rcParamsDefault):
        fig = new_figure(4, 3)
        ax = fig.subplots()
        ax.plot([0, 1], [0, 1], color="tab:red")
        ax.plot([0, 1], [1, 0], color="tab:green")
        ax.imshow([[0, 1]], cmap="RdYlGn")
        assert len(_off_palette(fig)) == 3
        fig = new_figure(4, 3)
        fig.subplots().plot([0, 1], [0, 1], color="C3")             # "C3" is the palette's vermillion here
        assert _off_palette(fig) == []


def test_clock_hands_never_lie_on_one_another():
    # issue 31: the slow hands, all near angle 0, were drawn on top of one another from the centre
    import numpy as np
    from rope_ref.teaching.figures import fig_clock_hands
    fig = fig_clock_hands(d=16)
    for ax in fig.axes:
        hands = [line for line in ax.lines if line.get_linestyle() == "-"]
        assert len(hands) == 8, ax.get_title()
        points = [np.linspace(*np.array(line.get_xydata())[[0, -1]], 50) for line in hands]
        for i in range(len(points)):
            for j in range(i):
                gap = np.linalg.norm(points[i][:, None] - points[j][None], axis=-1).min()
                assert gap > 0.01, f"{ax.get_title()}: hands {j} and {i} touch"
