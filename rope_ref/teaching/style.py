"""One figure style for every figure and interactive view, and byte-stable rendering.

* PNGs at :data:`DPI` (150): the files in figures/.  The views' slider images (also the course
  site's) at :data:`VIEW_DPI` (100): the widget shows 1 inch as 100 CSS pixels, so each image
  pixel is one CSS pixel (sharp on a standard display), and a slider step draws, encodes and
  sends 2.25 times fewer pixels than at 150.
* No text below :data:`MIN_FONT_PT` (10 pt), legends included, so a figure stays readable when
  projected.  A :class:`StyledFigure` raises smaller sizes to the minimum each time it is drawn,
  whatever size the code that built it asked for.
* Math in labels is matplotlib mathtext (``r"$\\theta_i$"``), in DejaVu Sans like the text.
* Byte-identical output run to run: a fixed SVG hash salt, and no dates or software versions in
  the metadata (:data:`RC`, :data:`METADATA`).

Figures are built without pyplot (a :class:`~matplotlib.figure.Figure` with its own Agg canvas),
so they render the same under any backend and leave no global state behind.
"""

from __future__ import annotations

import io

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Circle
from matplotlib.text import Text

DPI = 150
VIEW_DPI = 100
MIN_FONT_PT = 10

#: matplotlib's defaults plus these, for every saved figure (``write_all`` applies them).
RC = {"svg.hashsalt": "rope_ref", "svg.fonttype": "path", "figure.dpi": DPI, "savefig.dpi": DPI,
      "font.size": 11, "legend.fontsize": MIN_FONT_PT, "xtick.labelsize": MIN_FONT_PT,
      "ytick.labelsize": MIN_FONT_PT, "mathtext.fontset": "dejavusans"}
METADATA = {"png": {"Software": None}, "svg": {"Date": None, "Creator": None}}


class StyledFigure(Figure):
    """A Figure that applies the style when drawn: no text below :data:`MIN_FONT_PT`."""

    def draw(self, renderer):
        for text in self.findobj(Text):
            if text.get_fontsize() < MIN_FONT_PT:
                text.set_fontsize(MIN_FONT_PT)
        super().draw(renderer)


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
