"""The teaching layer's input contract (moved from tests/test_fuzz_inputs.py, which keeps the oracle's):
quantities, views and widgets name bad input, take read-only inputs and return new arrays.

Where a value is compared, the reference is ``pairwise_reference`` in tests/kernels.py (a plain loop over
pairs with math.cos/math.sin), not rope_ref's own code.
"""

import importlib
import inspect
import re

import numpy as np
import pytest

from kernels import pairwise_reference as _reference

pytestmark = pytest.mark.filterwarnings("error")

quantities = pytest.importorskip("rope_ref.teaching.quantities")   # needs the teaching extra (matplotlib)
Q8, K8 = np.random.default_rng(5).standard_normal((2, 8))
QN = np.random.default_rng(6).standard_normal((3, 8))

QUANTITY_CATALOGUE = [
    # (call, exception, words the message must contain)
    (lambda: quantities.random_qk(7), ValueError, ["d", "even", "7"]),
    (lambda: quantities.random_qk(8, seed=-1), TypeError, ["seed", "-1"]),
    (lambda: quantities.random_qk(8, n=0), ValueError, ["n", "positive", "0"]),
    (lambda: quantities.score(Q8.tolist(), K8[:6], 1, 2), ValueError, ["q", "k", "(8,)", "(6,)"]),
    (lambda: quantities.score(3.0, K8, 1, 2), ValueError, ["q", "0-d"]),
    (lambda: quantities.score(Q8, K8, "a", 2), TypeError, ["m", "'a'"]),
    (lambda: quantities.score(Q8, K8, 1j, 2), TypeError, ["m", "complex"]),
    (lambda: quantities.score(Q8, K8, 1, np.nan), ValueError, ["n", "finite"]),
    (lambda: quantities.score(Q8, K8, True, 2), TypeError, ["m", "bool"]),
    (lambda: quantities.score(Q8, K8, [1, 2], [1, 2, 3]), ValueError, ["m (2,)", "n (3,)"]),
    (lambda: quantities.score(Q8 * 1e200, K8 * 1e200, 1, 2), ValueError, ["score", "overflow"]),
    (lambda: quantities.score_vs_distance(Q8, K8, "1"), TypeError, ["n", "'1'"]),
    # sizes checked before allocating, vectors named (these were numpy's own errors or a MemoryError)
    (lambda: quantities.random_qk(2 ** 40), ValueError, ["d", "16 TiB", "max_bytes"]),
    (lambda: _vision_rope().grid_qk(d=2 ** 40), ValueError, ["d", "max_bytes"]),
    (lambda: _vision_rope().relative_score_map(Q8, K8, 2 ** 40), ValueError, ["radius", "rotated keys", "max_bytes"]),
    (lambda: _vision_rope().relative_score_map(None, K8, 3), TypeError, ["q", "None"]),
    (lambda: _vision_rope().relative_score_map(Q8, [1.0, 2.0], 3), ValueError, ["q and k", "(8,)", "(2,)"]),
    (lambda: _precision().format_errors([1.0], 10 ** 30), ValueError, ["digits", "at most 17"]),
]


def _vision_rope():
    from rope_ref.teaching import vision_rope
    return vision_rope


def _precision():
    from rope_ref.teaching import precision
    return precision


@pytest.mark.parametrize("call,exc,words", QUANTITY_CATALOGUE, ids=[str(i) for i in range(len(QUANTITY_CATALOGUE))])
def test_teaching_quantities_name_bad_input(call, exc, words):
    with pytest.raises(exc) as info:
        call()
    for w in words:
        assert w in str(info.value), f"{w!r} not in {type(info.value).__name__}: {info.value}"


def test_quantities_take_array_likes_and_broadcast_q_against_positions():
    # q as a list, q with a leading axis against scalar positions: q_m . k_n by an independent loop
    got = quantities.score(QN.tolist(), K8, 4, 1.5)
    want = [_reference(q, 4.0) @ _reference(K8, 1.5) for q in QN]
    np.testing.assert_allclose(got, want, rtol=1e-12)


@pytest.mark.slow
def test_a_refused_view_update_leaves_the_view_as_it_was():
    views = pytest.importorskip("rope_ref.teaching.views")
    view = views.DecayView(d=16, n_points=65)
    before, png = dict(view.params), view.to_png()
    for bad in (dict(d=7), dict(base="x"), dict(base=-1.0)):
        with pytest.raises((TypeError, ValueError)) as info:
            view.update(**bad)
        assert str(info.value).startswith(next(iter(bad)))      # names what was refused, not an earlier value
        assert view.params == before and view.to_png() == png
    view.update(d=32)                                            # and still steps normally
    assert view.params["d"] == 32 and view.y[0] == pytest.approx((32 / 2 + 1) / 2)


@pytest.mark.parametrize("make,exc,words", [
    (lambda w: w.rotations_widget(m=100), ValueError, ["m", "[0, 64]", "100"]),
    (lambda w: w.rotations_widget(n=-1), ValueError, ["n", "[0, 64]", "-1"]),
    (lambda w: w.rotations_widget(m=2.5), TypeError, ["m", "integer", "2.5"]),
    (lambda w: w.rotations_widget(i=8), ValueError, ["i", "[0, 7]", "8"]),
    (lambda w: w.rotations_widget(d=200), ValueError, ["d", "[2, 128]", "200"]),
    (lambda w: w.rotations_widget(base=1e9), ValueError, ["base", "1e+06", "1000000000.0"]),
    (lambda w: w.decay_widget(d=4), ValueError, ["d", "[8, 512]", "4"]),
    (lambda w: w.decay_widget(base=True), TypeError, ["base", "True"]),
    (lambda w: w.scaling_widget(factor=64), ValueError, ["factor", "[1, 32]", "64"]),
    (lambda w: w.scaling_widget(factor="2"), TypeError, ["factor", "'2'"]),
])
def test_widgets_refuse_what_their_sliders_cannot_show(make, exc, words):
    # an ipywidgets slider clamps an out-of-range value: the slider would show 64 while the picture shows m=100
    widgets = pytest.importorskip("rope_ref.teaching.widgets")
    with pytest.raises(exc) as info:
        make(widgets)
    assert str(info.value).startswith(words[0]) and all(w in str(info.value) for w in words), info.value


@pytest.mark.parametrize("make,exc,words", [
    (lambda v: v.RotationsView(i=2.5), TypeError, ["i", "integer", "2.5"]),
    (lambda v: v.RotationsView(i="3"), TypeError, ["i", "'3'"]),
    (lambda v: v.RotationsView(m="a"), TypeError, ["m", "'a'"]),
    (lambda v: v.RotationsView(n=np.nan), ValueError, ["n", "finite"]),
    (lambda v: v.ScalingView(factor="2"), TypeError, ["factor", "'2'"]),
    (lambda v: v.ScalingView(factor=np.nan), ValueError, ["factor", "nan"]),
    (lambda v: v.DecayView(n_points=1), ValueError, ["n_points", "2", "1"]),
    (lambda v: v.DecayView(n_points=2.5), TypeError, ["n_points", "2.5"]),
])
def test_view_constructors_name_bad_values(make, exc, words):
    # these were taken as int(2.5) = pair 2, float('2'), an empty curve, or named 'positions' instead of m
    views = pytest.importorskip("rope_ref.teaching.views")
    with pytest.raises(exc) as info:
        make(views)
    assert str(info.value).startswith(words[0]) and all(w in str(info.value) for w in words), info.value


def _readonly(a):
    a = np.array(a)
    a.setflags(write=False)
    return a


QUANTITY_CALLS = {   # name -> (function, read-only inputs); a write into an input raises, a view of one is caught below
    "score": (lambda q, k, m: quantities.score(q, k, m, 2.0), (QN, K8, np.arange(3.0))),
    "score_vs_distance": (quantities.score_vs_distance, (Q8, K8, np.arange(3.0))),
}


@pytest.mark.parametrize("name", sorted(QUANTITY_CALLS))
def test_quantities_take_read_only_inputs_and_return_new_arrays(name):
    fn, inputs = QUANTITY_CALLS[name]
    inputs = [_readonly(a) for a in inputs]
    before = [a.copy() for a in inputs]
    result = fn(*inputs)
    results = result.values() if isinstance(result, dict) else result if isinstance(result, tuple) else [result]
    for r in results:
        if isinstance(r, np.ndarray):
            assert r.flags.writeable and not any(np.shares_memory(r, a) for a in inputs), name
    for a, b in zip(inputs, before):
        np.testing.assert_array_equal(a, b)


# ---- every public function of the teaching layer, every parameter, bad values (issue 32) ---------------------------

FUZZED = ("quantities", "spectrum", "base_bound", "vision_rope", "precision", "context_extension", "real_model",
          "kernel_plot")
NOT_FUZZED = {  # name -> why a generic fuzz leaves it out (each is covered where named)
    "SmolLM2": "loads the real model (seconds per call): tests/teaching/test_real_model.py",
    "copy_task": "takes the model", "copy_accuracy": "takes the model", "queries_keys": "takes the model",
    "mean_loss": "takes the model", "fig_real_attention_maps": "runs the model", "gguf_path": "takes no argument",
    "model_points": "takes no argument", "fig_base_bound": "draws 10 s per call from model_points()",
    "rms_norm": "the model's own layer, given the model's arrays",
}
def _spec():
    from rope_ref.kernel_check.spec import RopeSpec
    return RopeSpec(is_rope=True, inv_freq=np.ones(4), offset=0.0, rows=8)


VALID = {"base": 10000.0, "x": Q8, "q": Q8, "k": K8, "m": 1.0, "n": 2.0, "distance": np.arange(5), "radius": 2,
         "positions": np.arange(4.0), "freqs": np.ones(4), "dtype": np.float32, "values": [1.0], "d": 8, "pair": 0,
         "offset": 3.0, "distances": np.arange(5.0), "attention": np.ones((1, 1, 4, 4)), "length": 2, "pairs": [0],
         "rope": lambda x, positions: x, "segments": [("text", 3)],
         "curves": {"ones": np.ones(5), "gaussian": np.zeros(5)}, "inv_freq": np.ones(4)}
VALID_FOR = {"real_decay": dict(q=QN, k=QN), "pair_norms": dict(x=np.ones((1, 1, 2, 4))),
             "rotate_with_angle_dtype": dict(x=np.ones((4, 8))), "supported_context": dict(limit=4096),
             "phase_errors": dict(spec=_spec()), "kernel_vs_expected": dict(spec=_spec())}
TAKEN_BY_DESIGN = {("format_errors", "values", "nan"): "spells out inf and nan (float16's overflow)",
                   ("kernel_vs_expected", "title", "string"): "a title"}
BAD = {"object": object(), "None": None, "nan": float("nan"), "string": "x", "huge": 2 ** 62, "negative": -1}


def _fuzz_cases():
    for module_name in FUZZED:
        module = importlib.import_module(f"rope_ref.teaching.{module_name}")
        for name, fn in sorted(vars(module).items()):
            if (name.startswith("_") or name in NOT_FUZZED or getattr(fn, "__module__", None) != module.__name__
                    or not (inspect.isfunction(fn) or inspect.isclass(fn))):
                continue
            for param in inspect.signature(fn).parameters:
                for label in BAD:
                    yield pytest.param(fn, param, label, id=f"{module_name}.{name}-{param}-{label}")


@pytest.mark.parametrize("fn,param,label", list(_fuzz_cases()))
def test_every_public_teaching_function_names_bad_input(fn, param, label):
    """Each parameter in turn gets a wrong type, None, NaN, a string, a huge or a negative size: the answer is a
    TypeError/ValueError naming that parameter, or (None, huge, negative, where they are valid) a result -- never
    a raw error (AttributeError, ZeroDivisionError, a NumPy warning), a message naming an internal variable, or a
    NaN or a string taken silently.  Before: 'NoneType' object has no attribute 'items', SVD did not converge, ..."""
    import warnings
    import matplotlib.pyplot as plt
    from rope_ref import RopeRefPrecisionWarning
    warnings.simplefilter("ignore", RopeRefPrecisionWarning)        # huge positions: warned, by design
    signature = inspect.signature(fn)
    args = {name: VALID.get(name) for name, p in signature.parameters.items() if p.default is inspect.Parameter.empty}
    args.update(VALID_FOR.get(fn.__name__, {}))
    try:
        fn(**{**args, param: BAD[label]})
    except (TypeError, ValueError) as exc:
        assert re.search(rf"\b{re.escape(param)}\b", str(exc)), f"{type(exc).__name__} not naming {param}: {exc}"
        return
    finally:
        plt.close("all")
    assert label in ("None", "huge", "negative") or (fn.__name__, param, label) in TAKEN_BY_DESIGN, \
        f"{param}={label} was taken silently"
