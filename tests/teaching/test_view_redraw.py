"""A slider step draws what a full redraw draws (moved from tests/test_fast.py: it tests the teaching layer)."""

import io

import numpy as np
import pytest
from PIL import Image

from rope_ref.teaching import views


@pytest.mark.slow
@pytest.mark.parametrize("view_name,steps", [
    ("RotationsView", [{"m": 5}, {"d": 32}, {"base": 100.0}, {"m": 9, "n": 2}]),
    ("DecayView", [{"d": 64}, {"base": 500.0}, {"d": 256}]),
    ("ScalingView", [{"factor": 3.0}]),
])
def test_view_steps_draw_what_a_full_redraw_draws(view_name, steps):
    """Blitting and redrawing only the axes a step moves are speed-ups: the PNG a step sends equals
    a full redraw of the figure (canvas.draw, then the animated artists) in the same state."""
    view = getattr(views, view_name)()
    view.to_png()
    for params in steps:
        view.update(**params)
        shown = np.asarray(Image.open(io.BytesIO(view.to_png())).convert("RGB"))
        canvas = view.fig.canvas                      # the same figure (its layout is frozen), all drawn
        canvas.draw()
        for artist in view.dynamic:
            view.fig.draw_artist(artist)
        np.testing.assert_array_equal(shown, np.asarray(canvas.buffer_rgba())[..., :3], err_msg=str(params))
