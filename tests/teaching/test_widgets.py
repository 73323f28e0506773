"""Sliders drive the views headlessly: the readout and the image change, the artists are reused."""

import numpy as np
import pytest

from rope_ref.teaching.views import DecayView, RotationsView
from rope_ref.teaching.widgets import decay_widget, rotations_widget


@pytest.mark.parametrize("make,name,new", [
    (rotations_widget, "m", 11), (rotations_widget, "n", 30), (rotations_widget, "i", 3),
    (rotations_widget, "base", 100.0), (rotations_widget, "d", 32),
    (decay_widget, "d", 64), (decay_widget, "base", 1e5),
])
def test_slider_changes_image_and_readout(make, name, new):
    w = make()
    fig, artists = w.view.fig, list(w.view.fig.axes[0].lines)
    png, text = w.image.value, w.readout.value
    w.controls[name].value = new
    assert w.view.params[name] == new
    assert w.image.value != png, "image did not change"
    assert w.image.value[:8] == b"\x89PNG\r\n\x1a\n"
    if name != "i":
        assert w.readout.value != text, "readout did not change"
    assert w.view.fig is fig and list(fig.axes[0].lines) == artists, "a new figure/artists were made"


def test_moving_m_and_n_together_keeps_the_score():
    w = rotations_widget(m=3, n=7)
    before = w.view.value
    w.controls["m"].value = 23
    w.controls["n"].value = 27
    assert abs(w.view.value - before) < 1e-10
    w.controls["n"].value = 28
    assert abs(w.view.value - before) > 1e-4


def test_rotation_view_draws_the_rotated_pair():
    v = RotationsView(m=0, n=0, i=0, d=4)
    x0, y0 = v.qm.get_data()
    v.update(m=np.pi / 2)       # pair 0 (theta_0 = 1) turns by 90 degrees
    x1, y1 = v.qm.get_data()
    np.testing.assert_allclose([x1[1], y1[1]], [-y0[1], x0[1]], atol=1e-12)


def test_decay_view_matches_decay_bound():
    from rope_ref import decay_bound
    v = DecayView(d=64, base=500.0)
    x, y = v.lines[1].get_data()
    np.testing.assert_allclose(y, decay_bound(x, 64, 500.0))
    with pytest.raises(TypeError, match="unknown parameter"):
        v.update(dd=3)


def test_scaling_slider_changes_frequencies():
    from rope_ref.scaling import scaled_inv_freq
    from rope_ref.teaching.widgets import scaling_widget
    from rope_ref import frequencies
    w = scaling_widget(factor=8.0)
    png = w.image.value
    w.controls["factor"].value = 4.0
    assert w.image.value != png and "factor 4" in w.readout.value
    x, y = w.view.ratio_lines["linear"].get_data()
    np.testing.assert_allclose(y, 0.25)
    _, y = w.view.ratio_lines["llama3"].get_data()
    f, _ = scaled_inv_freq(128, rope_type="llama3", factor=4.0, low_freq_factor=1.0, high_freq_factor=4.0,
                           original_max_position_embeddings=4096)
    np.testing.assert_allclose(y, f / frequencies(128))


def test_blitted_step_equals_a_full_redraw():
    # A step that only moves dynamic artists (blitting) must give the same picture as a fresh view.
    from PIL import Image
    import io
    a = RotationsView(m=3, n=7)
    a.to_png()
    a.update(m=12)
    b = RotationsView(m=12, n=7)
    pa = np.asarray(Image.open(io.BytesIO(a.to_png())))
    pb = np.asarray(Image.open(io.BytesIO(b.to_png())))
    assert pa.shape == pb.shape
    assert np.mean(pa != pb) < 1e-3, "blitted frame differs from a full redraw"


def test_pair_slider_follows_d_and_never_clamps_silently():
    w = rotations_widget(i=7, d=16)
    assert w.controls["i"].max == 7
    w.controls["d"].value = 4                    # only pairs 0 and 1 exist now
    assert w.controls["i"].max == 1 and w.controls["i"].value == 1
    assert w.view.params["i"] == 1 and "pair 1 of 2" in w.readout.value
    w.controls["d"].value = 64
    assert w.controls["i"].max == 31
    w.controls["i"].value = 30
    assert w.view.params["i"] == 30 and "pair 30 of 32" in w.readout.value
