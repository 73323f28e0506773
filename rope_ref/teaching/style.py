"""One figure style for every figure and interactive view, and byte-stable rendering.

Figures are built without pyplot (a :class:`~matplotlib.figure.Figure` with its own Agg canvas),
so they render the same under any backend and leave no global state behind.
"""

from __future__ import annotations

import io

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Circle

#: Fixed settings: matplotlib's defaults plus a fixed SVG hash salt and no metadata dates.
RC = {"svg.hashsalt": "rope_ref", "svg.fonttype": "path", "figure.dpi": 100, "savefig.dpi": 100}
METADATA = {"png": {"Software": None}, "svg": {"Date": None, "Creator": None}}


def new_figure(width: float = 9.0, height: float = 3.6, dpi: int = 80) -> Figure:
    """A pyplot-free Figure with an Agg canvas (renders the same under any backend)."""
    fig = Figure(figsize=(width, height), dpi=dpi, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def figure_png(fig: Figure) -> bytes:
    """PNG bytes of a figure, without the software/date metadata that makes files differ."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    return buf.getvalue()


def unit_circle():
    """The unit circle as a light outline, for drawing pairs as points of the plane."""
    return Circle((0, 0), 1.0, fill=False, color="0.7", lw=0.8)
