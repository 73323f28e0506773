"""Every number a slider view shows equals what the neighbouring cells print for the same state.

Notebooks 02, 03 and 05 are executed (nbclient); each view's readout is the text/plain of its output (the numbers
the view also draws: the score beside the red dot, the bound, the ratios), and the cells around it print the same
quantities for the same state.  Each pair of numbers is compared at the precision printed.
"""

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.slow
NB_DIR = Path(__file__).resolve().parents[2] / "notebooks"


def executed(name):
    nb = nbformat.read(NB_DIR / f"{name}.ipynb", 4)
    NotebookClient(nb, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(NB_DIR)}}).execute()
    return nb


def outputs(cell, mime="text/plain"):
    out = []
    for o in cell.get("outputs", []):
        if o.output_type == "stream":
            out.append(o.text)
        elif mime in o.get("data", {}):
            out.append(o.data[mime])
    return "".join(out)


def widget_readout(nb, call):
    cells = [c for c in nb.cells if c.cell_type == "code" and call in c.source]
    assert len(cells) == 1, call
    return outputs(cells[0]), nb.cells.index(cells[0])


@pytest.fixture(scope="module")
def nb02():
    return executed("02_rotations")


def test_rotations_view_score_equals_the_cell_below(nb02):
    readout, at = widget_readout(nb02, "rotations_widget(")
    view = re.search(r"m = (\d+), n = (\d+),.*q_m \. k_n = ([-+]?\d+\.\d+)", readout)
    assert view, readout
    printed = "".join(outputs(c) for c in nb02.cells[at + 1:at + 4] if c.cell_type == "code")
    same = re.search(rf"m =\s*{view[1]}, n =\s*{view[2]},.*q_m\.k_n = ([-+]?\d+\.\d+)", printed)
    assert same, printed
    assert float(same[1]) == float(view[3]), f"the view shows {view[3]}, the cell prints {same[1]}"
    shifted = re.findall(r"m =\s*(\d+), n =\s*(\d+), m - n =\s*(-?\d+): q_m\.k_n = ([-+]?\d+\.\d+)", printed)
    assert any(int(m) != int(view[1]) and float(s) == float(view[3]) for m, n, _, s in shifted), \
        "shifting both positions keeps the number the view shows"


def test_rotations_view_draws_the_number_of_its_readout():
    from rope_ref.teaching.widgets import rotations_widget
    w = rotations_widget(m=3, n=7, i=0, base=10000.0, d=16)
    shown = w.view.score_text.get_text().replace("\N{MINUS SIGN}", "-").split("= ")[-1]
    assert f"q_m . k_n = {shown}" in w.readout.value and shown == "1.6182"


def test_decay_view_numbers_equal_the_cells(tmp_path):
    nb = executed("03_long_term_decay")
    readout, at = widget_readout(nb, "decay_widget(")
    view = re.search(r"d = 128, base = 10000: bound at 0 = ([\d.]+), at 256 = ([\d.]+), mean over \[128, 256\] = "
                     r"([\d.]+)", readout)
    assert view, readout
    printed = "".join(outputs(c) for c in nb.cells[:at] if c.cell_type == "code")
    at0 = re.search(r"bound at 0: ([\d.]+)", printed)
    far = re.search(r"at 256: ([\d.]+);  mean over 128..256: ([\d.]+)", printed)
    assert at0 and far, printed
    assert float(at0[1]) == float(view[1])
    assert (far[1], far[2]) == (view[2], view[3])


def test_scaling_view_ratios_equal_the_cell_above():
    nb = executed("05_context_extension")
    readout, at = widget_readout(nb, "scaling_widget(")
    view = dict(re.findall(r"(\w+) ([\d.]+)(?:,|;)", readout.split("slowest pair scaled by")[1]))
    printed = "".join(outputs(c) for c in nb.cells[:at] if c.cell_type == "code")
    rows = dict(re.findall(r"^(\w+)\s+fastest pair x[\d.]+, slowest pair x([\d.]+)", printed, re.M))
    assert set(rows) == {"linear", "ntk", "dynamic", "yarn", "llama3"} and set(rows) <= set(view), (rows, view)
    for name, value in rows.items():
        assert float(view[name]) == pytest.approx(float(value), rel=5e-3), name     # printed to 3 significant digits


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
