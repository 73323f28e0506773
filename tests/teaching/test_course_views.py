"""What the slider views draw: the number of the readout, each method apart (the readouts against the notebooks'
printed cells are compared in test_notebooks_run.py, on the notebooks' one run)."""

from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
NB_DIR = Path(__file__).resolve().parents[2] / "notebooks"


def test_rotations_view_draws_the_number_of_its_readout():
    from rope_ref.teaching.widgets import rotations_widget
    w = rotations_widget(m=3, n=7, i=0, base=10000.0, d=16)
    shown = w.view.score_text.get_text().replace("\N{MINUS SIGN}", "-").split("= ")[-1]
    assert f"q_m . k_n = {shown}" in w.readout.value and shown == "1.6182"


def test_scaling_view_keeps_each_method_apart_and_linear_above_training():
    # issue 31: seven same-looking lines per panel, legends over them, and linear (which keeps training's angles)
    # hidden under training's thick line
    import io

    import numpy as np
    from matplotlib.colors import to_rgb
    from PIL import Image

    from rope_ref.teaching.style import PALETTE
    from rope_ref.teaching.views import ScalingView
    view = ScalingView(factor=8.0)
    assert all(ax.get_legend() is None for ax in view.fig.axes) and len(view.fig.legends) == 1
    for ax in view.fig.axes:
        curves = [line for line in ax.lines if len(line.get_xdata()) > 2]
        looks = [(line.get_marker(), line.get_linewidth()) for line in curves]
        assert len(curves) >= 5 and len(set(looks)) == len(looks), (ax.get_title(), looks)
    image = np.asarray(Image.open(io.BytesIO(view.to_png())).convert("RGB")).astype(float)
    linear = view.angle_lines["linear"]
    assert linear.get_zorder() > view.train_line.get_zorder()
    xy = linear.get_transform().transform(np.column_stack(linear.get_data()))
    path = np.concatenate([np.linspace(a, b, 10) for a, b in zip(xy[:-1], xy[1:])])
    blue = np.array(to_rgb(PALETTE[0])) * 255
    seen = 0
    for x, y in path:
        row, col = int(round(image.shape[0] - y)), int(round(x))
        patch = image[row - 2:row + 3, col - 2:col + 3].reshape(-1, 3)
        seen += bool(np.any(np.abs(patch - blue).max(axis=1) < 40))
    assert seen / len(path) > 0.6, f"linear is visible along {seen / len(path):.0%} of its path"
