"""ipywidgets sliders over the views (:mod:`rope_ref.teaching.views`, ``spectrum``, ``vision_rope``): each function
returns a box of sliders, a readout and the view's PNG, keeping ``.view``, ``.controls``, ``.image``, ``.readout``."""

import ast
import base64
import inspect
import re
from functools import partial

import ipywidgets as W
from traitlets import TraitError

from .spectrum import OffsetAttentionView, SemanticMatchView
from .style import VIEW_DPI
from .views import DecayView, RotationsView, ScalingView
from .vision_rope import GRID, GridScoreView


class SliderApp(W.VBox):
    """The sliders' box; without a live kernel it shows the view's image and its readout as text."""

    def _repr_mimebundle_(self, **kwargs):
        data = super()._repr_mimebundle_(**kwargs)
        data["image/png"] = base64.b64encode(self.image.value).decode("ascii")
        data["text/plain"] = self.readout.value
        return data


def _widget(cls, *links, **sliders):
    """The slider function of ``cls``, named after it: its parameters (``draw``'s) -> a :class:`SliderApp` of the
    view at those values under ``sliders`` (parameter -> a function making its slider), each slider at its value (one
    it cannot show: a ValueError naming it); each of ``links`` (source, target, rule) keeps the target slider's max at
    rule(source's value).  Moving a slider updates the view in place."""
    signature = inspect.signature(partial(cls.draw, None)).replace(return_annotation=SliderApp)   # no self

    def widget(*args, **kwargs) -> SliderApp:
        view = cls(*args, **kwargs)                 # an unknown name, or a value the view refuses, raises here
        controls = {name: new() for name, new in sliders.items()}
        for name, value in view.params.items():
            try:
                controls[name].value = value
            except TraitError as exc:               # a type or an option the slider does not take
                raise ValueError(f"{name}: {exc}") from None
            if controls[name].value != value:       # clamped to the slider's range
                raise ValueError(f"{name}: expected a value within the slider's range, got {value!r}")
        for source, target, rule in links:          # a rule the view keeps too: no value it takes is clamped
            W.dlink((controls[source], "value"), (controls[target], "max"), rule)
        width_px = round(view.fig.get_figwidth() * VIEW_DPI)   # 1 inch = 100 CSS px: one image pixel per CSS pixel
        image = W.Image(value=view.to_png(), format="png", layout=W.Layout(width=f"{width_px}px", max_width="100%"))
        readout = W.HTML(value=view.readout, style={"font_size": "17px"})   # JupyterLab's 13 px: too small in a room

        def on_change(_change=None):
            params = {name: w.value for name, w in controls.items()}
            if all(view.params[name] == value for name, value in params.items()):
                return                      # one slider moving another (d clamps the pair): drawn once
            view.update(**params)
            image.value = view.to_png()
            readout.value = view.readout

        for w in controls.values():
            w.observe(on_change, names="value")
        box = SliderApp([W.HBox(list(controls.values()), layout=W.Layout(flex_flow="row wrap")), readout, image])
        box.view, box.controls, box.image, box.readout = view, controls, image, readout
        return box
    widget.__signature__ = signature
    widget.__name__ = widget.__qualname__ = re.sub(r"(?<=.)([A-Z])", r"_\1", cls.__name__[:-4]).lower() + "_widget"
    widget.__doc__ = f"Sliders for {', '.join(sliders)} over :class:`{cls.__name__}`, starting at the values given."
    return widget


def _slider(description, lo, hi, step=1, kind=W.IntSlider, **settings):
    return partial(kind, min=lo, max=hi, step=step, description=description, **settings)


def _options(description, values, label="{:g}".format):
    return partial(W.SelectionSlider, options=[(label(v), v) for v in values], description=description)


#: Round bases, the paper's 10^4, Llama 3's 5*10^5 and Qwen's 10^6 among them.
BASES = _options("base", (10.0, 100.0, 500.0, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 5e6, 1e7))

# the pair slider runs over 0..d/2-1 (a lower max moves the value down)
rotations_widget = _widget(RotationsView, ("d", "i", lambda d: d // 2 - 1), m=_slider("m", 0, 64),
                           n=_slider("n", 0, 64), shift=_slider("both +", 0, 200), i=_slider("pair i", 0, 63),
                           base=BASES, d=_slider("d", 2, 128, 2))
decay_widget = _widget(DecayView, d=_slider("d", 8, 512, 8), base=BASES)
scaling_widget = _widget(ScalingView, factor=_slider("factor", 1.0, 32.0, 1.0, W.FloatSlider),
                         d=_slider("d", 16, 256, 16), base=BASES,
                         train_len=_options("L train", [2 ** k for k in range(10, 16)], str))
grid_score_widget = _widget(GridScoreView, qx=_slider("query x", 0, GRID - 1), qy=_slider("query y", 0, GRID - 1),
                            dx=_slider("Δx", 1 - GRID, GRID - 1), dy=_slider("Δy", 1 - GRID, GRID - 1))
offset_attention_widget = _widget(
    OffsetAttentionView, pair=_slider("first pair", 0, OffsetAttentionView.d // 2 - OffsetAttentionView.width),
    offset=_slider("offset", 0, OffsetAttentionView.n_keys - 1), scale=_slider("|u|²", 1.0, 30.0, 1.0, W.FloatSlider))
semantic_match_widget = _widget(SemanticMatchView, base=_slider("base", 3, 7, 0.25, W.FloatLogSlider, base=10),
                                max_distance=_slider("distance", 64, 32768, 64))


# ---- slider views without a script (the course site): radio buttons over frames, the page's style shows one -----

#: A slider view's static form (:func:`static_sliders`), put in its output by :func:`with_sliders`.
SLIDERS = "text/x-rope-ref-sliders"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _widget_call(source: str):
    """A code cell's call of a ``*_widget`` function of :mod:`.widgets` as ``(function, args, kwargs)``, if every
    argument is a literal; else None."""
    try:
        call = next(node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call) and (name := getattr(
            node.func, "id", getattr(node.func, "attr", ""))).endswith("_widget") and callable(globals().get(name)))
        return (globals()[name], [ast.literal_eval(a) for a in call.args],
                {k.arg: ast.literal_eval(k.value) for k in call.keywords})
    except (SyntaxError, StopIteration, ValueError):     # no such call, or an argument computed in the notebook
        return None


def static_sliders(box, key: str) -> dict:
    """The slider view ``box`` (a ``*_widget`` function's) for a page that runs no script (the site's template draws
    it as radio buttons): ``frames``, each (base64 PNG, readout), the view with one control at one of five values
    spread over its range (both ends among them) and the others at their start (the widget's own code draws them;
    frame 0: all at their start), ``rows``, per control (description, [(a value's label, its frame)]), and ``key``,
    unique in the page."""
    frames, rows = [(box.image.value, box.readout.value)], []
    for control in box.controls.values():
        start, labels, names = control.value, [], {v: t for t, v in getattr(control, "options", ())}
        values = list(names) or [control.min + k * control.step
                                 for k in range(round((control.max - control.min) / control.step) + 1)]
        values = [control.base ** v for v in values] if hasattr(control, "base") else values     # FloatLogSlider
        for value in sorted({values[round(k * (len(values) - 1) / 4)] for k in range(5)} | {start}):
            if value != start:
                control.value = value                       # the widget's observer updates its view and image
                frames.append((box.image.value, box.readout.value))
            labels.append((names.get(value, f"{value:g}"), len(frames) - 1 if value != start else 0))   # start: 0
        control.value = start
        rows.append((control.description, labels))
    return {"key": key, "rows": rows, "frames": [(base64.b64encode(png).decode(), text) for png, text in frames]}


def with_sliders(nb, resources):
    """An nbconvert preprocessor: each slider view's output in ``nb`` (the exporter's copy) holds its
    :func:`static_sliders` (under :data:`SLIDERS`), keyed by ``resources["stem"]`` and the cell."""
    for k, cell in enumerate(nb.cells):
        call = _widget_call(cell.source) if cell.cell_type == "code" else None
        views = [out for out in cell.get("outputs", []) if WIDGET_VIEW in out.get("data", {})]
        if call and views:
            function, args, kwargs = call
            views[-1].data[SLIDERS] = static_sliders(function(*args, **kwargs), f"s{resources['stem']}-{k}")
    return nb, resources
