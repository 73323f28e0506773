"""Every public function of the teaching layer refuses a bad argument with a TypeError or ValueError that names it,
takes read-only inputs, and returns new arrays (one representative bad value per function; wording not pinned)."""

import re

import numpy as np
import pytest

from rope_ref.teaching import example_kernels, precision, quantities, spectrum, views, vision_rope

Q8, K8 = np.random.default_rng(5).standard_normal((2, 8))

T, V = TypeError, ValueError
CASES = [  # (call, the exception, the argument its message must name)
    (lambda: quantities.score(Q8, K8[:6], 1, 2), V, "q"), (lambda: quantities.score(Q8, K8, "a", 2), T, "m"),
    (lambda: quantities.score(Q8, K8, 1, np.nan), V, "n"),
    (lambda: quantities.score(Q8 * 1e200, K8 * 1e200, 1, 2), V, "q"),
    (lambda: quantities.score(np.ones((3, 4)), np.ones((2, 4)), 0, 1), V, "q"),
    (lambda: quantities.random_qk(3), V, "d"), (lambda: quantities.random_qk(2.5), T, "d"),
    (lambda: quantities.random_qk(4, seed=-1), V, "seed"), (lambda: quantities.random_qk(4, n=0), V, "n"),
    (lambda: precision.angles_in_dtype([1.0], np.ones(4), "int8"), T, "dtype"),
    (lambda: precision.angles_in_dtype([1.0], np.ones(4), "foo"), T, "dtype"),
    (lambda: precision.angles_in_dtype([np.nan], np.ones(4), np.float32), V, "positions"),
    (lambda: precision.angles_in_dtype([1.0], [np.nan, 1.0], np.float32), V, "freqs"),
    (lambda: precision.angles_in_dtype([1.0], "abc", np.float32), T, "freqs"),
    (lambda: precision.angle_errors([1.0], d=7), V, "d"),
    (lambda: precision.rotate_with_angle_dtype(np.ones((4, 7)), np.arange(4)), V, "x"),
    (lambda: precision.score_error_by_dtype(Q8, K8, [1, 2], distance=[1, 2, 3]), V, "distance"),
    (lambda: precision.score_error_by_dtype(np.ones((2, 8)), K8, [1, 2]), V, "q"),
    (lambda: views.frequency_ratios(d=7), V, "d"),
    (lambda: views.frequency_ratios(base=-1), V, "base"), (lambda: views.method_configs(train_len="8"), T, "train_len"),
    (lambda: views.method_configs(factor=0.5), V, "factor"), (lambda: views.method_configs(factor="8"), T, "factor"),
    (lambda: views.method_configs(train_len=0), V, "train_len"),
    (lambda: views.frequency_ratios(factor=np.inf), V, "factor"),
    (lambda: views.frequency_ratios(factor=1e308), V, "factor"),
    (lambda: spectrum.scheme_frequencies("nosuch"), V, "scheme"),
    (lambda: spectrum.scheme_frequencies("partial", 8, fraction=1.5), V, "fraction"),
    (lambda: spectrum.offset_attention(1, pair=40), V, "pair"),
    (lambda: spectrum.offset_attention(1, 0, n_keys=0), V, "n_keys"),
    (lambda: spectrum.offset_attention(1, 0, width=0), V, "width"),
    (lambda: spectrum.offset_attention(1, 0, scale=-1), V, "scale"),
    (lambda: spectrum.offset_attention(1, 0, d=7), V, "d"), (lambda: spectrum.offset_attention("a", 0), T, "offset"),
    (lambda: spectrum.semantic_match(np.arange(3), band="mid"), V, "band"),
    (lambda: spectrum.semantic_match(np.arange(3), width=100), V, "width"),
    (lambda: spectrum.semantic_match(np.arange(3), seed=-1), V, "seed"),
    (lambda: spectrum.semantic_match(np.arange(3), d=7), V, "d"), (lambda: spectrum.supported_context(-1), V, "base"),
    (lambda: spectrum.supported_context(1e4, limit=-5), V, "limit"),
    (lambda: spectrum.supported_context(1e4, limit=2.5), T, "limit"),
    (lambda: spectrum.fig_turning_dimensions(d=-2), V, "d"),
    (lambda: spectrum.supported_context(1e4, inv_freq=[np.nan, 1.0]), V, "inv_freq"),
    (lambda: vision_rope.relative_score_map(None, K8, 3), T, "q"),
    (lambda: vision_rope.relative_score_map(Q8, K8, 2.5), T, "radius"),
    (lambda: vision_rope.relative_score_map(Q8, K8, -2), V, "radius"),
    (lambda: vision_rope.relative_score_map(np.ones((2, 8)), K8, 1), V, "q"),
    (lambda: vision_rope.relative_score_map(np.ones(6), np.ones(6), 1), V, "q"),
    (lambda: example_kernels.replayed_llama_rotary(cast="float16"), V, "cast"),
    (lambda: example_kernels.replayed_llama_rotary(cast=np.zeros(2)), T, "cast"),
    (lambda: example_kernels.config("nope"), V, "name"), (lambda: example_kernels.config("../../x"), V, "name"),
]


@pytest.mark.parametrize("call,error,name", CASES, ids=[f"{i}-{name}" for i, (_, _, name) in enumerate(CASES)])
def test_public_teaching_functions_name_a_bad_argument(call, error, name):
    with pytest.raises(error) as info:
        call()
    assert re.search(rf"\b{re.escape(name)}\b", str(info.value)), info.value


def test_quantities_take_read_only_inputs_and_return_new_arrays():
    q, k, m = (np.array(a) for a in (Q8, K8, np.arange(3.0)))
    for a in (q, k, m):
        a.setflags(write=False)
    for result in (quantities.score(q, k, m, 2.0), quantities.score(q, k, 0.0, m)):
        assert result.flags.writeable and not any(np.shares_memory(result, a) for a in (q, k, m))
    np.testing.assert_array_equal(q, Q8)


def test_relative_score_map_is_float64_row_dy_column_dx_as_at_absolute_patches():
    q, k = Q8.astype(np.float16), K8.astype(np.float16)
    result, q64, k64 = vision_rope.relative_score_map(q, k, 2), q.astype(np.float64), k.astype(np.float64)
    assert result.dtype == np.float64 and result.shape == (5, 5)
    np.testing.assert_allclose(result[[2, 0], [2, 3]], [q64 @ k64, vision_rope._axial_score(q64, k64, (3, 4), (4, 2))])
