"""One figure style for every figure and interactive view, and byte-stable rendering.

* PNGs at :data:`DPI` (150): the files in figures/.  The views' slider images (also the course
  site's) at :data:`VIEW_DPI` (100): the widget shows 1 inch as 100 CSS pixels, so each image
  pixel is one CSS pixel (sharp on a standard display), and a slider step draws, encodes and
  sends 2.25 times fewer pixels than at 150.
* No text below :data:`MIN_FONT_PT` (10 pt), legends included, so a figure stays readable when
  projected.  A :class:`StyledFigure` raises smaller sizes to the minimum each time it is drawn,
  whatever size the code that built it asked for.
* Colours from one colour-blind-safe palette, Okabe and Ito's (:data:`PALETTE`): every axes cycles through
  it, and ``"C0"``, ``"C1"``, ... name its colours wherever a :class:`StyledFigure` is drawn (a notebook's
  default rcParams included); greys for the rest, ``viridis`` and ``RdBu_r`` for images.
* Math in labels is matplotlib mathtext (``r"$\\theta_i$"``), in DejaVu Sans like the text.
* Byte-identical output run to run: a fixed SVG hash salt, and no dates or software versions in
  the metadata (:data:`RC`, :data:`METADATA`).

Figures are built without pyplot (a :class:`~matplotlib.figure.Figure` with its own Agg canvas),
so they render the same under any backend and leave no global state behind.
"""

from __future__ import annotations

import io
from contextlib import contextmanager

import matplotlib
from cycler import cycler
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Circle
from matplotlib.text import Text

DPI = 150
VIEW_DPI = 100
MIN_FONT_PT = 10

#: Okabe & Ito, "Color Universal Design" (2008): told apart with any of the common colour-vision deficiencies.
#: Blue, orange, bluish green, vermillion, reddish purple, sky blue, black, yellow (the yellow last: faint on white).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#F0E442")
PALETTE_RC = {"axes.prop_cycle": cycler(color=PALETTE)}

#: matplotlib's defaults plus these, for every saved figure (``write_all`` applies them).
RC = {**PALETTE_RC, "svg.hashsalt": "rope_ref", "svg.fonttype": "path", "figure.dpi": DPI, "savefig.dpi": DPI,
      "font.size": 11, "legend.fontsize": MIN_FONT_PT, "xtick.labelsize": MIN_FONT_PT,
      "ytick.labelsize": MIN_FONT_PT, "mathtext.fontset": "dejavusans"}
METADATA = {"png": {"Software": None}, "svg": {"Date": None, "Creator": None}}


class StyledFigure(Figure):
    """A Figure in the style: its axes cycle through :data:`PALETTE`, ``"CN"`` colours are the palette's when it
    is drawn (whole, or one artist at a time as a view's step draws), and no text is below :data:`MIN_FONT_PT`."""

    def add_subplot(self, *args, **kwargs):
        ax = super().add_subplot(*args, **kwargs)
        ax.set_prop_cycle(PALETTE_RC["axes.prop_cycle"])
        return ax

    def draw(self, renderer):
        for text in self.findobj(Text):
            if text.get_fontsize() < MIN_FONT_PT:
                text.set_fontsize(MIN_FONT_PT)
        with _palette():
            super().draw(renderer)

    def draw_artist(self, a):
        with _palette():
            super().draw_artist(a)


@contextmanager
def _palette():
    """``"CN"`` colours name :data:`PALETTE`'s while inside (one rcParam swapped: a view's step draws each of
    its artists inside, so no copy of every rcParam as ``rc_context`` makes)."""
    previous = matplotlib.rcParams["axes.prop_cycle"]
    matplotlib.rcParams["axes.prop_cycle"] = PALETTE_RC["axes.prop_cycle"]
    try:
        yield
    finally:
        matplotlib.rcParams["axes.prop_cycle"] = previous


def new_figure(width: float = 9.0, height: float = 3.6, dpi: int = DPI) -> Figure:
    """A pyplot-free figure with an Agg canvas (renders the same under any backend), in the style."""
    fig = StyledFigure(figsize=(width, height), dpi=dpi, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def figure_png(fig: Figure, dpi: int = DPI) -> bytes:
    """PNG bytes of a figure at ``dpi`` (default :data:`DPI`), without the metadata that makes files differ."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata=METADATA["png"])
    return buf.getvalue()


def unit_circle():
    """The unit circle as a light outline, for drawing pairs as points of the plane."""
    return Circle((0, 0), 1.0, fill=False, color="0.7", lw=0.8)
