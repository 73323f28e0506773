"""Every public function of the teaching layer refuses a bad argument with a TypeError or ValueError that names it,
takes read-only inputs, and returns new arrays (one representative bad value per function; wording not pinned)."""

import re

import numpy as np
import pytest

from rope_ref.kernel_check.spec import RopeSpec
from rope_ref.teaching import (base_bound, context_extension, example_kernels, kernel_plot, precision, quantities,
    spectrum, vision_rope)

Q8, K8 = np.random.default_rng(5).standard_normal((2, 8))
SPEC = RopeSpec(is_rope=True, inv_freq=np.ones(4), offset=0.0, rows=8)

CASES = [  # (call, the argument its error must name)
    (lambda: quantities.score(Q8, K8[:6], 1, 2), "q"), (lambda: quantities.score(Q8, K8, "a", 2), "m"),
    (lambda: quantities.score(Q8, K8, 1, np.nan), "n"), (lambda: quantities.score_vs_distance(Q8, K8, "1"), "distance"),
    (lambda: quantities.score(Q8 * 1e200, K8 * 1e200, 1, 2), "q"),
    (lambda: precision.angles_in_dtype([1.0], np.ones(4), "int8"), "dtype"),
    (lambda: precision.angles_in_dtype([np.nan], np.ones(4), np.float32), "positions"),
    (lambda: precision.angle_errors([1.0], d=7), "d"),
    (lambda: precision.rotate_with_angle_dtype(np.ones((4, 7)), np.arange(4)), "x"),
    (lambda: context_extension.frequency_ratios(d=7), "d"), (lambda: context_extension.angles_reached(base=-1), "base"),
    (lambda: spectrum.scheme_frequencies("nosuch"), "scheme"),
    (lambda: spectrum.offset_attention(1, pair=40), "pair"),
    (lambda: spectrum.semantic_match(np.arange(3), band="mid"), "band"),
    (lambda: base_bound.supported_context(-1), "base"), (lambda: vision_rope.relative_score_map(None, K8, 3), "q"),
    (lambda: vision_rope.fig_position_ids([("nosuch", 3)]), "segments"),
    (lambda: kernel_plot.phase_errors(None, np.ones(4)), "spec"),
    (lambda: kernel_plot.phase_errors(SPEC, np.ones(3)), "inv_freq"),
    (lambda: kernel_plot.kernel_vs_expected(SPEC, np.ones(4), title=3), "title"),
    (lambda: example_kernels.replayed_llama_rotary(cast="float16"), "cast"),
]


@pytest.mark.parametrize("call,name", CASES, ids=[f"{i}-{name}" for i, (_, name) in enumerate(CASES)])
def test_public_teaching_functions_name_a_bad_argument(call, name):
    with pytest.raises((TypeError, ValueError)) as info:
        call()
    assert re.search(rf"\b{re.escape(name)}\b", str(info.value)), info.value


def test_quantities_take_read_only_inputs_and_return_new_arrays():
    q, k, m = (np.array(a) for a in (Q8, K8, np.arange(3.0)))
    for a in (q, k, m):
        a.setflags(write=False)
    for result in (quantities.score(q, k, m, 2.0), quantities.score_vs_distance(q, k, m)):
        assert result.flags.writeable and not any(np.shares_memory(result, a) for a in (q, k, m))
    np.testing.assert_array_equal(q, Q8)
