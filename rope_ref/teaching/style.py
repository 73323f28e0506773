"""One style for every figure and view: no text below :data:`MIN_FONT_PT`, Okabe and Ito's colour-blind-safe
:data:`PALETTE`, greys, ``viridis`` and ``RdBu_r``; figures built without pyplot and saved byte-stably (:data:`RC`)."""

from contextlib import contextmanager

import matplotlib
from cycler import cycler
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Circle

DPI = 150
VIEW_DPI = 100
MIN_FONT_PT = 10

#: Okabe & Ito, "Color Universal Design" (2008); the yellow last: faint on white.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#F0E442")
CYCLE = cycler(color=PALETTE)

#: matplotlib's defaults plus these, for every saved figure (``write_all`` applies them).
RC = {"axes.prop_cycle": CYCLE, "svg.hashsalt": "rope_ref", "svg.fonttype": "path", "figure.dpi": DPI,
      "savefig.dpi": DPI, "font.size": 11, "legend.fontsize": MIN_FONT_PT, "xtick.labelsize": MIN_FONT_PT,
      "ytick.labelsize": MIN_FONT_PT, "mathtext.fontset": "dejavusans"}
METADATA = {"png": {"Software": None}, "svg": {"Date": None, "Creator": None}}


class StyledFigure(Figure):
    """A Figure whose axes cycle through :data:`PALETTE`, whose ``"CN"`` colours are the palette's when drawn
    (whole or one artist at a time)."""

    def add_subplot(self, *args, **kwargs):
        ax = super().add_subplot(*args, **kwargs)
        ax.set_prop_cycle(CYCLE)
        return ax

    def draw(self, renderer):
        with palette():
            super().draw(renderer)

    def draw_artist(self, a):
        with palette():
            super().draw_artist(a)


@contextmanager
def palette():
    """Inside, ``"CN"`` colours name :data:`PALETTE`'s (one rcParam set without validation: cheap per artist)."""
    previous = matplotlib.rcParams["axes.prop_cycle"]
    matplotlib.rcParams._set("axes.prop_cycle", CYCLE)
    try:
        yield
    finally:
        matplotlib.rcParams._set("axes.prop_cycle", previous)


def new_axes(width: float, height: float, *grid, dpi: int = DPI, gridlines: bool = True, **subplots_kw):
    """(fig, axes): a pyplot-free figure in the style with an Agg canvas (it renders the same under any backend) and
    its ``subplots(*grid, **subplots_kw)``, with light grid lines if asked."""
    fig = StyledFigure(figsize=(width, height), dpi=dpi, layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(*grid, **subplots_kw)
    for ax in fig.axes if gridlines else ():
        ax.grid(alpha=0.3)
    return fig, axes


def unit_circle():
    """The unit circle as a light outline, for drawing pairs as points of the plane."""
    return Circle((0, 0), 1.0, fill=False, color="0.7", lw=0.8)
