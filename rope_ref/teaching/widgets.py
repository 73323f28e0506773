"""ipywidgets front-ends for the views in :mod:`rope_ref.teaching.views`.

Each function returns a ``VBox`` of sliders, a text readout and an ``Image``
that shows the view's figure as PNG.  A slider change calls ``view.update``
(existing artists change, no new figure) and refreshes the image; the box
keeps ``.view``, ``.controls``, ``.image`` and ``.readout`` for tests.
"""

from __future__ import annotations

import base64
import numbers

import ipywidgets as W

from .style import VIEW_DPI
from .views import DecayView, RotationsView, ScalingView, View


class SliderApp(W.VBox):
    """The sliders' box; it also carries its current image as ``image/png``, so a page rendered
    without a live kernel (the course site, a notebook viewer) shows the plot instead of nothing."""

    def _repr_mimebundle_(self, **kwargs):
        data = super()._repr_mimebundle_(**kwargs)
        if data is not None:
            data["image/png"] = base64.b64encode(self.image.value).decode("ascii")
        return data


def slider_app(view: View, controls: dict) -> W.VBox:
    """Wire ``controls`` (name -> widget) to ``view``; return the assembled box."""
    width_px = round(view.fig.get_figwidth() * VIEW_DPI)   # 1 inch = 100 CSS px: one image pixel per CSS pixel
    image = W.Image(value=view.to_png(), format="png", layout=W.Layout(width=f"{width_px}px", max_width="100%"))
    readout = W.HTML(value=view.readout())

    def on_change(_change=None):
        view.update(**{name: w.value for name, w in controls.items()})
        image.value = view.to_png()
        readout.value = view.readout()

    for w in controls.values():
        w.observe(on_change, names="value")
    box = SliderApp([W.HBox(list(controls.values()), layout=W.Layout(flex_flow="row wrap")), readout, image])
    box.view, box.controls, box.image, box.readout = view, controls, image, readout
    return box


def _int(name, lo, hi, step=1):
    return W.IntSlider(min=lo, max=hi, step=step, description=name, continuous_update=True)


def _log(name, lo_exp, hi_exp):
    return W.FloatLogSlider(base=10, min=lo_exp, max=hi_exp, step=0.25, description=name)


#: The bases a base slider offers: round values, the paper's 10^4, Llama 3's 5*10^5 and Qwen's 10^6 among them.
BASES = (10.0, 100.0, 500.0, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 5e6, 1e7)


def _bases(name):
    return W.SelectionSlider(options=[(f"{b:g}", b) for b in BASES], description=name, continuous_update=True)


def _set(name: str, slider, value):
    """Put ``value`` on ``slider`` if its range can show it, else a TypeError/ValueError: a slider clamps what it
    cannot show (m=100 on a 0..64 slider shows 64), and then the slider and the picture would disagree."""
    if isinstance(slider, W.SelectionSlider):
        options = [v for _, v in slider.options]
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"{name} must be one of {[f'{v:g}' for v in options]} (the slider's values), got {value!r}")
        if value not in options:
            raise ValueError(f"{name} must be one of {[f'{v:g}' for v in options]} (the slider's values), got {value!r}")
        slider.value = options[options.index(value)]
        return slider.value
    integer = isinstance(slider, W.IntSlider)
    lo, hi = (slider.base ** slider.min, slider.base ** slider.max) if isinstance(slider, W.FloatLogSlider) \
        else (slider.min, slider.max)
    kind = "an integer" if integer else "a real number"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral if integer else numbers.Real):
        raise TypeError(f"{name} must be {kind} in [{lo:g}, {hi:g}] (the slider's range), got {value!r}")
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be {kind} in [{lo:g}, {hi:g}] (the slider's range), got {value!r}")
    slider.value = value
    return value


def rotations_widget(m: int = 3, n: int = 7, i: int = 0, base: float = 10000.0, d: int = 16,
                     shift: int = 0) -> W.VBox:
    """Sliders for positions m, n, "both +" (a shift added to m and n together), pair index i, base and d over
    :class:`RotationsView`."""
    controls = {"m": _int("m", 0, 64), "n": _int("n", 0, 64), "shift": _int("both +", 0, 200),
                "i": None, "base": _bases("base"), "d": _int("d", 2, 128, 2)}
    d = _set("d", controls["d"], d)
    controls["i"] = _int("pair i", 0, d // 2 - 1)
    m, n, shift, i, base = (_set(k, controls[k], v) for k, v in (("m", m), ("n", n), ("shift", shift), ("i", i),
                                                                 ("base", base)))
    view = RotationsView(m=m, n=n, i=i, base=base, d=d, shift=shift)

    def follow_d(change):
        # The pair slider runs over 0..d/2-1; lowering its max moves a larger value down in sight.
        controls["i"].max = change["new"] // 2 - 1

    controls["d"].observe(follow_d, names="value")     # registered first: runs before the view updates
    return slider_app(view, controls)


def decay_widget(d: int = 128, base: float = 10000.0) -> W.VBox:
    """Sliders for d and base over :class:`DecayView` (Figure 2)."""
    controls = {"d": _int("d", 8, 512, 8), "base": _bases("base")}
    d, base = _set("d", controls["d"], d), _set("base", controls["base"], base)
    return slider_app(DecayView(d=d, base=base), controls)


def scaling_widget(factor: float = 8.0) -> W.VBox:
    """A slider for the context-extension factor over :class:`ScalingView`."""
    controls = {"factor": W.FloatSlider(min=1.0, max=32.0, step=1.0, description="factor")}
    return slider_app(ScalingView(factor=_set("factor", controls["factor"], factor)), controls)
