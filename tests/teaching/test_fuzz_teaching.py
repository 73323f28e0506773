"""The teaching layer's input contract (moved from tests/test_fuzz_inputs.py, which keeps the oracle's):
quantities, views and widgets name bad input, take read-only inputs and return new arrays.

Where a value is compared, the reference is ``pairwise_reference`` in tests/kernels.py (a plain loop over
pairs with math.cos/math.sin), not rope_ref's own code.
"""

import math

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
    (lambda: quantities.score_map(Q8, K8, 3), ValueError, ["positions", "1-D", "()"]),
    (lambda: quantities.score_map(QN, QN, [1, 2]), ValueError, ["q", "(d,)", "(3, 8)"]),
    (lambda: quantities.sinusoidal_score_map(Q8, K8[:6], [1, 2]), ValueError, ["q", "k", "(6,)"]),
    (lambda: quantities.sinusoidal_score_map(Q8, K8, [[1, 2]]), ValueError, ["positions", "1-D", "(1, 2)"]),
    (lambda: quantities.sinusoidal_score(Q8, K8[:6], 1, 2), ValueError, ["q", "k", "(6,)"]),
    (lambda: quantities.diagonal_spread([1, 2, 3]), ValueError, ["S", "2-D", "(3,)"]),
    (lambda: quantities.diagonal_spread(np.zeros((0, 0))), ValueError, ["S", "non-empty"]),
    (lambda: quantities.diagonal_spread([[np.nan]]), ValueError, ["S", "finite"]),
    (lambda: quantities.score_vs_distance(Q8, K8, "1"), TypeError, ["n", "'1'"]),
    (lambda: quantities.mean_abs_score([1.0], d=8, n_samples=0), ValueError, ["n_samples", "0"]),
    (lambda: quantities.mean_abs_score([1.0], d=8, same_vector="no"), TypeError, ["same_vector", "'no'", "True or False"]),
    (lambda: quantities.pair_polar([1.0]), ValueError, ["x2", "(2,)", "(1,)"]),
    (lambda: quantities.pair_polar([1.0, 2.0, 3.0]), ValueError, ["x2", "(2,)", "(3,)"]),
    (lambda: quantities.pair_polar([1j, 2]), TypeError, ["x2", "complex"]),
    (lambda: quantities.form_errors("abc", d=8), TypeError, ["positions", "'abc'"]),
    (lambda: quantities.form_errors([1.0], d=8, seed=-1), TypeError, ["seed", "-1"]),
    (lambda: quantities.clock_angles("a"), TypeError, ["position", "'a'"]),
    (lambda: quantities.clock_angles([1, 2]), ValueError, ["position", "scalar", "(2,)"]),
    (lambda: quantities.code_distance(1.0, d=8, pairs=[4]), ValueError, ["pairs", "[0, d/2 = 4)", "[4]"]),
    (lambda: quantities.code_distance(1.0, d=8, pairs=[-1]), ValueError, ["pairs", "[-1]"]),
    (lambda: quantities.code_distance(1.0, d=8, pairs=[1.5]), ValueError, ["pairs", "integers", "float64"]),
    (lambda: quantities.code_distance("a"), TypeError, ["m", "'a'"]),
    (lambda: quantities.code_distance(1.0, d="8"), TypeError, ["d", "'8'"]),
    (lambda: quantities.radial_scaled(np.ones((2, 4)), [0, 1.5], -2.0), ValueError, ["a", "positive", "-2.0"]),
    (lambda: quantities.radial_scaled(np.ones((2, 4)), [0, 1], "2"), TypeError, ["a", "'2'"]),
    (lambda: quantities.radial_scaled(np.ones((2, 4)), [0, 1000], 10.0), ValueError, ["a=10", "1000", "overflow"]),
    (lambda: quantities.radial_scaled(np.ones((2, 4)), [0, 1, 2], 2.0), ValueError, ["positions", "(3,)", "(2,)"]),
    (lambda: quantities.abel_terms(Q8[:6], K8, 1.0), ValueError, ["q", "k", "(6,)", "(8,)"]),
    (lambda: quantities.abel_terms(QN, QN, 1.0), ValueError, ["q", "(d,)", "(3, 8)"]),
    (lambda: quantities.abel_terms(Q8, K8, [1.0, 2.0]), ValueError, ["distance", "scalar"]),
    (lambda: quantities.abel_terms(Q8 + 1j, K8, 1.0), TypeError, ["q", "complex"]),
    (lambda: quantities.attention_weights(Q8, K8), ValueError, ["q", "(..., N, d)", "(8,)"]),
    (lambda: quantities.attention_weights(QN, QN[:2]), ValueError, ["q", "k", "(3, 8)", "(2, 8)"]),
    (lambda: quantities.attention_weights(QN, QN, [0, 1]), ValueError, ["positions", "(2,)", "(3,)"]),
    (lambda: quantities.attention_weights(QN, QN, rope="no"), TypeError, ["rope", "'no'"]),
    (lambda: quantities.attention_weights(QN, QN, causal="False"), TypeError, ["causal", "'False'"]),
    (lambda: quantities.attention_weights(QN * 1e200, QN * 1e200), ValueError, ["scores", "overflow", "attention"]),
    (lambda: quantities.attention_weights(np.ones((0, 8)), np.ones((0, 8))), ValueError, ["N >= 1", "(0, 8)"]),
    (lambda: quantities.attention_weights(QN + 1j, QN), TypeError, ["q", "complex"]),
    (lambda: quantities.linear_attention_weights(np.full((3, 8), -800.0), np.full((3, 8), -800.0)), ValueError,
     ["linear_attention_weights", "under-", "linear_attention"]),
    (lambda: quantities.linear_attention_weights(Q8, K8), ValueError, ["q", "(..., N, d)"]),
    (lambda: quantities.KVCache().attend(Q8, 0), ValueError, ["empty", "append"]),
    (lambda: quantities.KVCache(base=-1), ValueError, ["base", "-1"]),
    (lambda: quantities.KVCache().append(Q8, np.ones(3), "a"), TypeError, ["position", "'a'"]),
    (lambda: quantities.KVCache().append(Q8, np.ones((2, 3)), 0), ValueError, ["v", "(8,)", "(2, 3)"]),
    # sizes checked before allocating, vectors named (these were numpy's own errors or a MemoryError)
    (lambda: quantities.random_qk(2 ** 40), ValueError, ["d", "16 TiB", "max_bytes"]),
    (lambda: _vision_rope().grid_qk(d=2 ** 40), ValueError, ["d", "max_bytes"]),
    (lambda: _vision_rope().relative_score_map(Q8, K8, 2 ** 40), ValueError, ["radius", "rotated keys", "max_bytes"]),
    (lambda: _vision_rope().relative_score_map(None, K8, 3), TypeError, ["q", "None"]),
    (lambda: _vision_rope().relative_score_map(Q8, [1.0, 2.0], 3), ValueError, ["q and k", "(8,)", "(2,)"]),
    (lambda: _vision_rope().grid_scores(Q8, K8, 2 ** 20, 2 ** 20), ValueError, ["height * width", "max_bytes"]),
    (lambda: _vision_rope().grid_scores("x", K8, 4, 4), TypeError, ["q", "'x'"]),
    (lambda: _vision_rope().relative_spread(Q8, K8, None, 4), TypeError, ["height", "None"]),
    (lambda: _vision_rope().relative_spread(Q8, K8, 2 ** 40, 4), ValueError, ["height * width", "max_bytes"]),
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


def test_kv_cache_refuses_mismatched_steps_and_keeps_its_own_copy_of_v():
    cache = quantities.KVCache()
    v = np.ones(3)
    cache.append(Q8, v, 2)
    v[0] = 99.0                                       # the caller reuses its buffer
    np.testing.assert_array_equal(cache.values[0], np.ones(3))
    with pytest.raises(ValueError, match=r"stored.*k \(8,\).*v \(3,\).*v \(4,\)"):
        cache.append(K8, np.ones(4), 3)
    with pytest.raises(ValueError, match=r"q must have the stored keys' shape \(8,\), got \(4,\)"):
        cache.attend(np.ones(4), 3)
    with pytest.raises(ValueError, match="position must be at or after .* got 1 < 2"):
        cache.attend(Q8, 1)
    assert cache.rotations == 1                       # refused calls rotate nothing
    # the one step that is allowed: weight 1 on the one key, so the output is v
    np.testing.assert_allclose(cache.attend(Q8, 2), np.ones(3), rtol=1e-15)


def test_quantities_take_array_likes_and_broadcast_q_against_positions():
    # q as a list, q with a leading axis against scalar positions: q_m . k_n by an independent loop
    got = quantities.score(QN.tolist(), K8, 4, 1.5)
    want = [_reference(q, 4.0) @ _reference(K8, 1.5) for q in QN]
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert quantities.code_distance(6, 8, pairs=[]) == 0.0     # no pair chosen: nothing moves
    np.testing.assert_allclose(quantities.code_distance(6, 8, pairs=np.array([0], np.int8)), 2 * abs(math.sin(3)),
                               rtol=1e-12)


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
    "score_map": (lambda q, k, p: quantities.score_map(q, k, p), (Q8, K8, np.arange(4.0))),
    "sinusoidal_score_map": (lambda q, k, p: quantities.sinusoidal_score_map(q, k, p), (Q8, K8, np.arange(4.0))),
    "sinusoidal_score": (lambda q, k, m: quantities.sinusoidal_score(q, k, m, 1.0), (Q8, K8, np.arange(3.0))),
    "diagonal_spread": (quantities.diagonal_spread, (np.eye(3),)),
    "score_vs_distance": (quantities.score_vs_distance, (Q8, K8, np.arange(3.0))),
    "mean_abs_score": (lambda r: quantities.mean_abs_score(r, 8, n_samples=4), (np.arange(3.0),)),
    "pair_polar": (quantities.pair_polar, (Q8[:2],)),
    "form_errors": (lambda p: quantities.form_errors(p, 8), (np.arange(3.0),)),
    "code_distance": (lambda m, pairs: quantities.code_distance(m, 8, pairs=pairs), (np.arange(3.0), np.array([0, 2]))),
    "radial_scaled": (lambda x, p: quantities.radial_scaled(x, p, 1.05), (QN, np.arange(3.0))),
    "abel_terms": (lambda q, k: quantities.abel_terms(q, k, 3.0), (Q8, K8)),
    "attention_weights": (lambda q, k, p: quantities.attention_weights(q, k, p), (QN, QN * 0.5, np.arange(3.0))),
    "linear_attention_weights": (lambda q, k, p: quantities.linear_attention_weights(q, k, p), (QN, QN * 0.5, np.arange(3.0))),
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


def test_kv_cache_keeps_its_own_copies_and_returns_new_arrays():
    k, v, q = _readonly(K8), _readonly(np.arange(3.0)), _readonly(Q8)
    cache = quantities.KVCache()
    cache.append(k, v, 0)
    out = cache.attend(q, 1)
    for stored in (cache.keys[0], cache.values[0], out):
        assert not any(np.shares_memory(stored, a) for a in (k, v, q))
    np.testing.assert_allclose(out, np.arange(3.0), rtol=1e-15)    # one key: weight 1
