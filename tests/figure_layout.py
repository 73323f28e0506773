"""The figures' layout check, shared by the tests: :func:`layout_faults` lists each text, annotation or legend that
covers a plotted line, overlaps another, or runs off the figure."""

import numpy as np
from matplotlib.figure import Figure
from matplotlib.path import Path
from matplotlib.text import Text
from matplotlib.transforms import Bbox


def _data_paths(ax):
    """Each visible data line of ``ax`` (not axhline/axvline) in pixels: (label, pieces, markers only?, clipped?)."""
    out = []
    for line in ax.lines:
        if not line.get_visible() or not all(line.get_transform().contains_branch_seperately(ax.transData)):
            continue
        xy = line.get_transform().transform(np.asarray(line.get_xydata(), float))
        finite = np.isfinite(xy).all(axis=1)
        breaks = np.flatnonzero(np.diff(finite.astype(np.int8)) != 0) + 1        # a line has a gap at a NaN
        pieces = [p for p in np.split(xy, breaks) if len(p) and np.isfinite(p).all()]
        out.append((line.get_label(), pieces, line.get_linestyle() in ("None", "none", "", " "), line.get_clip_on()))
    return out


def _blockers(ax, renderer):
    """(description, display Bbox) of the words inside ``ax``: texts, annotations (no arrows), its legend."""
    out = [(f"text {t.get_text()!r}", Text.get_window_extent(t, renderer)) for t in ax.texts
           if t.get_visible() and t.get_text().strip()]
    for child in ax.get_children():
        if isinstance(child, Text) and child not in ax.texts and child.get_visible() and child.get_text().strip() \
                and child not in (ax.title, ax._left_title, ax._right_title) \
                and ax.bbox.overlaps(child.get_window_extent(renderer)):
            out.append((f"text {child.get_text()!r}", child.get_window_extent(renderer)))
    legend = ax.get_legend()
    if legend is not None and legend.get_visible():
        out.append(("legend", legend.get_window_extent(renderer)))
    return out


def layout_faults(fig: Figure, pad_px: float = 1.0) -> list[str]:
    """Where words sit on the data: each text, annotation or legend inside an axes (and each figure legend) whose
    box, shrunk by ``pad_px`` display pixels, a plotted line of that axes crosses (with its clipping) or a marker
    lies in; two such boxes in one axes that overlap; a text that runs off the figure.  Empty when clean."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    words = [fig._suptitle, *fig.texts, *(t for leg in fig.legends for t in leg.get_texts())]
    for ax in fig.axes:
        legend = ax.get_legend()
        words += [ax.title, ax._left_title, ax._right_title, ax.xaxis.label, ax.yaxis.label, *ax.texts,
                  *(legend.get_texts() if legend is not None else [])]
    faults = [f"text {t.get_text()!r} runs off the figure" for t in words
              if t is not None and t.get_visible() and t.get_text().strip()
              and not all(fig.bbox.contains(*corner) for corner in Text.get_window_extent(t, renderer).corners())]
    fig_legends = [("figure legend", leg.get_window_extent(renderer)) for leg in fig.legends if leg.get_visible()]
    for n, ax in enumerate(ax for ax in fig.axes if ax.get_visible()):
        name = ax.get_title() or f"axes {n}"
        blockers = _blockers(ax, renderer)
        for what, box in blockers + fig_legends:
            inner = Bbox.from_extents(box.x0 + pad_px, box.y0 + pad_px, box.x1 - pad_px, box.y1 - pad_px)
            for label, pieces, markers_only, clipped in _data_paths(ax):
                region = Bbox.intersection(inner, ax.bbox) if clipped else inner
                if region is None or region.width <= 0 or region.height <= 0:
                    continue
                if any(region.count_contains(xy) if markers_only or len(xy) == 1
                       else Path(xy).intersects_bbox(region, filled=False) for xy in pieces):
                    faults.append(f"{name}: {what} covers the line {label!r}")
        for i, (what_a, a) in enumerate(blockers):
            for what_b, b in blockers[i + 1:]:
                both = Bbox.intersection(a, b)
                if both is not None and both.width > pad_px and both.height > pad_px:
                    faults.append(f"{name}: {what_a} overlaps {what_b}")
    return faults
