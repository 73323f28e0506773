"""Every slider view steps in place: a step changes the frame, draws what a full redraw of the same figure draws
(nothing a step moves is left in the cached image), and a refused value leaves the view as it was."""

import io

import numpy as np
import pytest
from PIL import Image

from rope_ref.teaching.spectrum import OffsetAttentionView, SemanticMatchView
from rope_ref.teaching.views import DecayView, RotationsView, ScalingView
from rope_ref.teaching.vision_rope import GridScoreView

STEPS = [(RotationsView, [{"m": 5}, {"d": 32}, {"base": 100.0}, {"i": 3, "shift": 20}], {"i": 99}),
         (DecayView, [{"d": 64}, {"base": 500.0}, {"d": 256}], {"d": 3}),
         (ScalingView, [{"factor": 3.0}, {"d": 32}, {"base": 5e5, "train_len": 8192}], {"factor": 0.5}),
         (OffsetAttentionView, [{"pair": 3}, {"offset": 7}, {"scale": 2.0}], {"pair": 40}),
         (SemanticMatchView, [{"base": 1e5}, {"max_distance": 32768}], {"max_distance": 0}),
         (GridScoreView, [{"qx": 10}, {"dy": 4}], {"qx": 14})]


def _rgb(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


@pytest.mark.slow
@pytest.mark.parametrize("make,steps,bad", STEPS, ids=[s[0].__name__ for s in STEPS])
def test_a_step_changes_the_frame_in_place_as_a_full_redraw_would(make, steps, bad):
    view = make()
    fig, artists = view.fig, list(view.fig.findobj())
    frame = _rgb(view.to_png())
    for params in steps:
        view.update(**params)
        shown = _rgb(view.to_png())
        assert np.any(shown != frame), params
        frame = shown
        view.fig.canvas.draw()                                  # the same figure, everything drawn afresh
        for artist in (*view.layered, *view.dynamic):
            view.fig.draw_artist(artist)
        np.testing.assert_array_equal(shown, np.asarray(view.fig.canvas.buffer_rgba())[..., :3], err_msg=str(params))
    assert view.fig is fig and len(view.fig.findobj()) <= len(artists) + 50, "a step made a new figure"
    state = dict(view.params)
    with pytest.raises((TypeError, ValueError), match=next(iter(bad))):
        view.update(**bad)
    assert view.params == state and np.array_equal(_rgb(view.to_png()), frame)
    with pytest.raises(TypeError, match="unknown"):
        view.update(no_such_parameter=1)
