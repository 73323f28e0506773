"""Sliders drive the views headlessly: each step changes the frame in place as a full redraw of the same figure would,
what they show is recomputed here, a viewer without a kernel gets the image and the readout, and a value a slider
cannot show (or a view refuses) is refused by name, leaving the view as it was."""

import base64
import io

import numpy as np
import pytest
from PIL import Image

import rope_ref as rr
from rope_ref.teaching import quantities
from rope_ref.teaching.views import DecayView, RotationsView
from rope_ref.teaching.widgets import (decay_widget, grid_score_widget, offset_attention_widget, rotations_widget,
    scaling_widget, semantic_match_widget)

#: Each slider view as its notebook calls it, and a value its view refuses.
NOTEBOOK_CALLS = {"rotations": (lambda: rotations_widget(m=3, n=7, i=0, base=10000.0, d=16), {"i": 99}),
                  "decay": (lambda: decay_widget(d=128, base=10000.0), {"d": 3}),
                  "scaling": (lambda: scaling_widget(factor=8.0), {"factor": 0.5}),
                  "grid": (lambda: grid_score_widget(qx=3, qy=4, dx=2, dy=-1), {"qx": 14}),
                  "offset": (lambda: offset_attention_widget(pair=0, offset=1, scale=16.0), {"offset": 48}),
                  "semantic": (lambda: semantic_match_widget(base=10000.0, max_distance=4096), {"max_distance": 0})}


@pytest.mark.slow
@pytest.mark.parametrize("name", NOTEBOOK_CALLS)
def test_every_slider_steps_its_view_in_place_as_a_full_redraw_would_and_a_viewer_without_kernel_sees_it(name):
    make, bad = NOTEBOOK_CALLS[name]
    w = make()
    data = w._repr_mimebundle_()                              # SliderApp's own: a dict
    assert base64.b64decode(data["image/png"]) == w.image.value and data["text/plain"] == w.readout.value
    view, text, fig, n_artists = w.view, w.readout.value, w.view.fig, len(w.view.fig.findobj())
    for control in w.controls.values():
        png = w.image.value
        values = [v for _, v in control.options] if hasattr(control, "options") else [control.min, control.max]
        control.value = values[-1] if control.value != values[-1] else values[0]
        assert w.image.value != png, control.description
        fig.canvas.draw()                                       # the same figure, everything drawn afresh
        for artist in view.dynamic:
            fig.draw_artist(artist)
        shown = np.asarray(Image.open(io.BytesIO(w.image.value)).convert("RGB"))
        np.testing.assert_array_equal(shown, np.asarray(fig.canvas.buffer_rgba())[..., :3],
                                      err_msg=control.description)   # nothing a step moves is left in the cache
    assert w.readout.value != text and int(w.readout.style.font_size.removesuffix("px")) >= 16
    assert view.fig is fig and len(fig.findobj()) <= n_artists + 50, "a step made a new figure"
    state, frame = dict(view.params), w.image.value
    with pytest.raises((TypeError, ValueError), match=next(iter(bad))):
        view.update(**bad)
    assert view.params == state and view.to_png() == frame, "a refused value leaves the view as it was"
    with pytest.raises(TypeError, match="unknown"):
        view.update(no_such_parameter=1)


@pytest.mark.slow
def test_rotations_shift_keeps_the_score_and_the_pair_slider_and_the_curve_follow_d():
    w = rotations_widget(m=3, n=7, i=7, d=16)
    before = w.view.value
    w.controls["shift"].value = 20
    q, k = quantities.random_qk(16, seed=0)
    assert w.view.value == pytest.approx(before, abs=1e-10)
    assert w.view.value == pytest.approx(float(rr.rotation_matrix(23.0, 16) @ q @ (rr.rotation_matrix(27.0, 16) @ k)))
    assert "m = 3 + 20, n = 7 + 20" in w.readout.value
    w.controls["d"].value = 4                                   # only pairs 0 and 1 exist now
    assert w.controls["i"].max == 1 and w.view.params["i"] == 1 and "pair 1 of 2" in w.readout.value
    assert np.allclose(w.view.curve.get_ydata(), quantities.score(*quantities.random_qk(4), 0, -w.view.r))


@pytest.mark.slow
def test_rotations_view_draws_the_rotated_pair_its_angle_and_the_number_of_its_readout():
    v = RotationsView(m=0, n=0, i=0, d=4)
    x0, y0 = v.qm.get_data()
    v.update(m=np.pi / 2)                                       # pair 0 (theta_0 = 1) turns by 90 degrees
    x1, y1 = v.qm.get_data()
    np.testing.assert_allclose([x1[1], y1[1]], [-y0[1], x0[1]], atol=1e-12)
    v = RotationsView(m=3, n=7, i=0, d=16)
    q, k = quantities.random_qk(16, seed=0)
    total = np.angle(q[0] + 1j * q[1]) - np.angle(k[0] + 1j * k[1]) - 4.0
    assert f"= {total:+.2f} rad".replace("-", "\N{MINUS SIGN}") in v.angle_values.get_text()
    shown = v.score_text.get_text().replace("\N{MINUS SIGN}", "-").split("= ")[-1]
    assert f"q_m . k_n = {shown}" in v.readout and shown == "1.6182"


@pytest.mark.slow
def test_decay_view_is_decay_bound_and_follows_d_and_base():
    v = DecayView(d=64, base=500.0)
    x, y = v.lines[1].get_data()
    np.testing.assert_allclose(y, rr.decay_bound(x, 64, 500.0))
    v.update(d=128, base=1e4)
    lo, hi = v.axes[0].get_ylim()
    assert 5.5 < lo < 6.5 and 21.5 < hi < 22.5, "Figure 2's own view is y 6 to 22"


@pytest.mark.slow
def test_scaling_view_draws_each_method_and_training():
    w = scaling_widget(factor=4.0)
    np.testing.assert_allclose(w.view.ratio_lines["linear"].get_data()[1], 0.25)
    f, _ = rr.scaled_inv_freq(128, rope_type="llama3", factor=4.0, low_freq_factor=1.0, high_freq_factor=4.0,
                           original_max_position_embeddings=4096)
    np.testing.assert_allclose(w.view.ratio_lines["llama3"].get_data()[1], f / rr.frequencies(128))
    w.controls["d"].value, w.controls["base"].value, w.controls["train_len"].value = 64, 5e5, 8192
    x, train = w.view.train_line.get_data()
    np.testing.assert_allclose(train * 2 * np.pi, 8192 * 5e5 ** (-np.arange(0, 64, 2) / 64))
    assert x[0] == 0 and x[-1] < 1


@pytest.mark.parametrize("make,name", [(lambda: decay_widget(base=3e5), "base"), (lambda: decay_widget(d=9), "d"),
                                       (lambda: rotations_widget(m=1.5), "m"), (lambda: grid_score_widget(qx=20), "qx"),
                                       (lambda: scaling_widget(factor=99), "factor"),
                                       (lambda: rotations_widget(base=np.array([1e4, 1e5])), "base")])
def test_widgets_refuse_what_their_sliders_cannot_show(make, name):
    with pytest.raises((TypeError, ValueError), match=name):
        make()
