"""Regenerate every figure the README and notebooks show, byte-identically run to run.

``python -m rope_ref figures [--out DIR]`` calls :func:`write_all`.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

from . import plots, scaling_plots

#: name -> function returning a Figure.  Each is written as NAME.png and NAME.svg.
FIGURES = {
    "fig2_long_term_decay": plots.fig2_long_term_decay,
    "decay_bound_vs_actual": plots.fig_decay_vs_actual,
    "three_forms_agreement": plots.fig_three_forms,
    "relative_identity_heatmaps": plots.fig_relative_heatmaps,
    "rotation_illustration": plots.fig_rotation,
    "wavelengths_vs_training_length": scaling_plots.fig_wavelengths,
    "context_extension_frequency_ratios": scaling_plots.fig_frequency_ratios,
    "scores_beyond_training": scaling_plots.fig_scores_beyond_training,
    "precision_angle_errors": scaling_plots.fig_precision,
}

#: Fixed settings: matplotlib's defaults plus a fixed SVG hash salt and no metadata dates.
RC = {"svg.hashsalt": "rope_ref", "svg.fonttype": "path", "figure.dpi": 100, "savefig.dpi": 100}
METADATA = {"png": {"Software": None}, "svg": {"Date": None, "Creator": None}}


def write_all(out_dir: Path | str, names=None) -> list[Path]:
    """Write NAME.png and NAME.svg for every figure (or the given ``names``) into ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    with matplotlib.rc_context(matplotlib.rcParamsDefault), matplotlib.rc_context(RC):
        for name in names or FIGURES:
            fig = FIGURES[name]()
            for fmt in ("png", "svg"):
                path = out_dir / f"{name}.{fmt}"
                fig.savefig(path, format=fmt, metadata=METADATA[fmt])
                written.append(path)
    return written
