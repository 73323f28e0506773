"""The figures' layout check, shared by the tests: no words on the data (moved from rope_ref.teaching.style,
where only tests used it).  :func:`layout_faults` lists each text, annotation or legend that covers a plotted line."""

import numpy as np
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.path import Path
from matplotlib.text import Text
from matplotlib.transforms import Bbox


def _data_paths(ax):
    """Every visible plotted line of ``ax`` in display coordinates: (label, (n, 2) pieces, markers only?)."""
    out = []
    for line in ax.get_children():
        if not isinstance(line, Line2D) or not line.get_visible() or line not in ax.lines:
            continue
        if not all(line.get_transform().contains_branch_seperately(ax.transData)):
            continue        # a rule across the axes (axhline, axvline): a reference, like a grid line
        xy = line.get_transform().transform(np.asarray(line.get_xydata(), float))
        if not len(xy):
            continue
        finite = np.isfinite(xy).all(axis=1)
        # split at non-finite points (a line has a gap there)
        breaks = np.flatnonzero(np.diff(finite.astype(np.int8)) != 0) + 1
        pieces = [p for p in np.split(xy, breaks) if len(p) and np.isfinite(p).all()]
        markers_only = line.get_linestyle() in ("None", "none", "", " ")
        out.append((line.get_label(), pieces, markers_only, line.get_clip_on()))
    return out


def _blockers(fig, ax, renderer):
    """Words drawn inside ``ax`` (texts, annotations, its legend) as (description, display Bbox)."""
    out = []
    for t in ax.texts:          # an annotation's own extent includes its arrow: the words' box is Text's
        if t.get_visible() and t.get_text().strip():
            out.append((f"text {t.get_text()!r}", Text.get_window_extent(t, renderer)))
    for child in ax.get_children():
        if isinstance(child, Text) and child not in ax.texts and child.get_visible() and child.get_text().strip() \
                and child is not ax.title and child not in (ax._left_title, ax._right_title):
            if ax.bbox.overlaps(child.get_window_extent(renderer)):
                out.append((f"text {child.get_text()!r}", child.get_window_extent(renderer)))
    legend = ax.get_legend()
    if legend is not None and legend.get_visible():
        out.append(("legend", legend.get_window_extent(renderer)))
    return out


def layout_faults(fig: Figure, pad_px: float = 1.0) -> list[str]:
    """Where words sit on the data: each text, annotation or legend inside an axes (and each figure legend)
    whose box, shrunk by ``pad_px`` display pixels, a plotted line of that axes crosses or a marker lies
    in; any two such boxes in one axes that overlap; and any text that runs off the figure.  Empty when
    the layout is clean.

    Lines are taken with their clipping (a line clipped to the axes counts only inside it).  Rules across
    the axes (``axhline``, ``axvline``) are references like grid lines, not data; so are images and
    filled areas.
    """
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    words = [fig._suptitle, *fig.texts, *(t for leg in fig.legends for t in leg.get_texts())]
    for ax in fig.axes:
        legend = ax.get_legend()
        words += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label, *ax.texts,
                  *(legend.get_texts() if legend is not None else [])]
    faults = []
    for t in words:
        if t is not None and t.get_visible() and t.get_text().strip():
            box = Text.get_window_extent(t, renderer)
            if not (fig.bbox.contains(*box.min) and fig.bbox.contains(*box.max)):
                faults.append(f"text {t.get_text()!r} runs off the figure")
    fig_legends = [("figure legend", leg.get_window_extent(renderer)) for leg in fig.legends if leg.get_visible()]
    for n, ax in enumerate(fig.axes):
        if not ax.get_visible():
            continue
        name = ax.get_title() or f"axes {n}"
        blockers = _blockers(fig, ax, renderer)
        for what, box in blockers + fig_legends:
            inner = Bbox.from_extents(box.x0 + pad_px, box.y0 + pad_px, box.x1 - pad_px, box.y1 - pad_px)
            for label, pieces, markers_only, clipped in _data_paths(ax):
                region = Bbox.intersection(inner, ax.bbox) if clipped else inner
                if region is None or region.width <= 0 or region.height <= 0:
                    continue
                for xy in pieces:
                    if markers_only or len(xy) == 1:
                        hit = bool(region.count_contains(xy))
                    else:
                        hit = Path(xy).intersects_bbox(region, filled=False)
                    if hit:
                        faults.append(f"{name}: {what} covers the line {label!r}")
                        break
        for i, (what_a, a) in enumerate(blockers):
            for what_b, b in blockers[i + 1:]:
                if Bbox.intersection(a, b) is not None and Bbox.intersection(a, b).width > pad_px \
                        and Bbox.intersection(a, b).height > pad_px:
                    faults.append(f"{name}: {what_a} overlaps {what_b}")
    return faults
