"""Sliders drive the views headlessly: the readout and the image change, the artists are reused."""

import numpy as np
import pytest

from rope_ref.teaching.views import DecayView, RotationsView
from rope_ref.teaching.widgets import decay_widget, rotations_widget, scaling_widget


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


# --- issue 24: what the sliders show ----------------------------------------------------------------------------------

@pytest.mark.slow
def test_both_plus_turns_both_arrows_and_keeps_the_score():
    w = rotations_widget(m=3, n=7)
    before, qm_before = w.view.value, w.view.qm.get_data()[0][1]
    png = w.image.value
    w.controls["shift"].value = 20
    assert w.view.params["shift"] == 20 and "m = 3 + 20, n = 7 + 20" in w.readout.value
    assert abs(w.view.value - before) < 1e-10, "moving both positions changed the score"
    assert w.view.qm.get_data()[0][1] != qm_before and w.image.value != png, "the arrows did not turn"
    from rope_ref.teaching import quantities
    q, k = quantities.random_qk(16, seed=0)
    assert w.view.value == pytest.approx(float((rr_rotate(q, 23) @ rr_rotate(k, 27))), abs=1e-12)


def rr_rotate(x, m):
    import rope_ref as rr
    return rr.rotation_matrix(float(m), x.shape[-1]) @ x          # dense matrix: an independent path


def test_rotation_view_shows_the_total_angle_and_unit_arrows():
    v = RotationsView(m=3, n=7, i=0, d=16)
    import cmath
    from rope_ref.teaching import quantities
    q, k = quantities.random_qk(16, seed=0)
    total = cmath.phase(complex(q[0], q[1])) - cmath.phase(complex(k[0], k[1])) + (3 - 7) * 1.0
    assert f"= {total:+.2f} rad".replace("-", "\N{MINUS SIGN}") in v.angle_values.get_text()
    x, y = v.qm.get_data()                                     # q's pair 0 is short (0.18): drawn at full length
    assert np.hypot(x[1], y[1]) == pytest.approx(1.0)
    assert "|q_{0}| = 0.18" in v.plane_title.get_text()


@pytest.mark.slow
def test_decay_base_slider_reaches_the_exercise_base_and_the_paper_panel_follows_d():
    w = decay_widget(d=128, base=5e5)
    assert w.view.params["base"] == 5e5
    from rope_ref import decay_bound
    for d, base in [(128, 1e4), (64, 1e4), (512, 5e5)]:
        w.controls["d"].value, w.controls["base"].value = d, base
        r = np.linspace(0, 256, 1025)
        y = decay_bound(r[r >= 5], d, base)
        assert w.view.axes[0].get_ylim() == pytest.approx((0.95 * y.min(), 1.05 * y.max()))
    w.controls["d"].value, w.controls["base"].value = 128, 1e4
    lo, hi = w.view.axes[0].get_ylim()
    assert 5.5 < lo < 6.5 and 21.5 < hi < 22.5, "Figure 2's own view is y 6 to 22"
    with pytest.raises(ValueError, match="slider's values"):
        decay_widget(base=3e5)


@pytest.mark.slow
def test_scaling_view_moves_with_d_base_and_l_and_shows_the_squeeze():
    from rope_ref.teaching.widgets import scaling_widget
    w = scaling_widget(factor=8.0)
    _, gap = w.view.gap_lines["linear"].get_data()
    np.testing.assert_allclose(gap, 10000.0 ** (-np.arange(0, 128, 2) / 128) / 8)     # theta_i / s
    png = w.image.value
    for name, value in [("d", 64), ("base", 5e5), ("train_len", 8192)]:
        w.controls[name].value = value
        assert w.view.params[name] == value and w.image.value != png
        png = w.image.value
    x, train = w.view.train_line.get_data()
    assert len(x) == 32
    np.testing.assert_allclose(train * 2 * np.pi, 8192 * 5e5 ** (-np.arange(0, 64, 2) / 64))


@pytest.mark.parametrize("make,error", [
    (lambda: RotationsView(max_distance=-1), ValueError), (lambda: RotationsView(max_distance=0), ValueError),
    (lambda: RotationsView(max_distance=2.5), TypeError), (lambda: RotationsView(d=7), ValueError),
    (lambda: RotationsView(i=8), ValueError), (lambda: DecayView(n_points=10 ** 9), ValueError),
    (lambda: DecayView(d=0), ValueError), (lambda: DecayView(base="x"), TypeError),
])
def test_bad_constructor_values_are_clear_errors(make, error):
    with pytest.raises(error, match=r"max_distance|d must|i must|n_points|base must"):
        make()


@pytest.mark.slow
def test_bad_scaling_values_are_clear_errors():
    from rope_ref.teaching.views import ScalingView
    for kw, match in [({"factor": 0.5}, "factor"), ({"d": 2}, "d must"), ({"train_len": 0}, "train_len"),
                      ({"base": 0.0}, "base")]:
        with pytest.raises(ValueError, match=match):
            ScalingView(**kw)


def _grid_widget():
    from rope_ref.teaching.widgets import grid_score_widget
    return grid_score_widget(qx=3, qy=4, dx=2, dy=-1)       # as notebook 09 calls it


def _offset_widget():
    from rope_ref.teaching.widgets import offset_attention_widget
    return offset_attention_widget(pair=0, offset=1, scale=16.0)   # as notebook 08 calls it


def _semantic_widget():
    from rope_ref.teaching.widgets import semantic_match_widget
    return semantic_match_widget(base=10000.0, max_distance=4096)   # as notebook 08 calls it


@pytest.mark.slow
@pytest.mark.parametrize("make,n", [(rotations_widget, 4), (decay_widget, 4), (_grid_widget, 3), (_offset_widget, 4),
                                    (_semantic_widget, 4)])
def test_static_fallback_is_a_strip_of_captioned_frames(make, n):
    import base64
    import io
    from PIL import Image
    w = make()
    start = dict(w.view.params)
    data = w._repr_mimebundle_()
    data = data[0] if isinstance(data, tuple) else data
    strip = Image.open(io.BytesIO(base64.b64decode(data["image/png"])))
    one = Image.open(io.BytesIO(w.image.value))
    assert strip.width == one.width and strip.height == n * (one.height + 40), "n frames with a caption band each"
    assert w.view.params == start, "the view is back where it started"
    assert data["text/plain"] == w.readout.value
    frames = np.asarray(strip.convert("RGB"))
    tiles = [frames[j * (one.height + 40) + 40:(j + 1) * (one.height + 40)] for j in range(n)]
    assert all(np.any(tiles[0] != t) for t in tiles[1:]), "every frame shows another state"


@pytest.mark.slow
@pytest.mark.parametrize("steps", [[{"d": 64}], [{"factor": 3.0}, {"d": 256}, {"base": 5e5, "train_len": 8192}]])
def test_scaling_view_steps_draw_what_a_full_redraw_draws(steps):
    """A d step relays out the three x-axes on a cached image; the picture equals a full redraw."""
    import io
    from PIL import Image
    from rope_ref.teaching.views import ScalingView
    view = ScalingView()
    view.to_png()
    for params in steps:
        view.update(**params)
        shown = np.asarray(Image.open(io.BytesIO(view.to_png())).convert("RGB"))
        canvas = view.fig.canvas
        canvas.draw()
        for artist in view.dynamic:
            view.fig.draw_artist(artist)
        np.testing.assert_array_equal(shown, np.asarray(canvas.buffer_rgba())[..., :3], err_msg=str(params))


@pytest.mark.slow
def test_only_the_widgets_module_needs_ipywidgets():
    # the figures, the views and every notebook module but widgets import without ipywidgets
    import subprocess
    import sys
    code = ("import sys\n"
            "import rope_ref.teaching.figures, rope_ref.teaching.spectrum, rope_ref.teaching.vision_rope\n"
            "import rope_ref.teaching.base_bound, rope_ref.teaching.precision, rope_ref.teaching.views\n"
            "import rope_ref.teaching.exercises_extensions\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'ipywidgets'))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
@pytest.mark.parametrize("make", [scaling_widget, rotations_widget, decay_widget])
def test_every_readout_of_the_strip_is_whole_and_readable(make):
    # issue 31: frame 3's readout of the scaling view ran off the strip's right edge, in 8.5-point type
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text
    from rope_ref.teaching.widgets import frames_figure
    w = make()
    fig = frames_figure(w.view, w.frames)
    renderer = FigureCanvasAgg(fig).get_renderer()
    texts = [t for t in fig.findobj(Text) if t.get_text()]
    for t in texts:
        box = t.get_window_extent(renderer)
        assert t.get_fontsize() >= 10 and box.x0 >= 0 and box.x1 <= fig.bbox.width, (t.get_text(), box)
    shown = " ".join(t.get_text() for t in texts)
    for caption, params in w.frames:
        w.view.update(**params)
        assert w.view.readout() in shown, caption


def test_the_live_readout_is_large():
    w = rotations_widget()
    assert int(w.readout.style.font_size.removesuffix("px")) >= 16
