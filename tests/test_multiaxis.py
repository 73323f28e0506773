"""Multi-axis RoPE builders (rope_ref.multiaxis): hand-derived cases, bad input, and the recordings
of transformers' and timm's own modules (tests/data/multiaxis_*, made by tests/data/record_multiaxis.py)."""

import numpy as np
import pytest

import rope_ref as rr
from rope_ref import multiaxis as ma


# ---- mrope_frequencies: hand-derived layouts ------------------------------------------------------

def _axes(F):
    """Which column holds each pair's frequency (exactly one non-zero per row)."""
    assert np.all((F != 0).sum(axis=1) == 1)
    return np.nonzero(F)[1].tolist()


def test_qwen2_vl_sections_are_contiguous_blocks_in_theta_order():
    # mrope_section [16, 24, 24] over head_dim 128: pairs 0-15 temporal, 16-39 height, 40-63 width.
    F = rr.mrope_frequencies(128, [16, 24, 24], base=1e6)
    assert F.shape == (64, 3) and F.dtype == np.float64
    assert _axes(F) == [0] * 16 + [1] * 24 + [2] * 24
    theta = 1e6 ** (-np.arange(64) * 2 / 128)                       # eq 15, written out again
    np.testing.assert_allclose(F.sum(axis=1), theta, rtol=1e-15)


def test_qwen3_vl_interleaves_t_h_w_and_temporal_takes_the_leftover_pairs():
    # mrope_section [24, 20, 20]: 20 rounds of (t, h, w) cover pairs 0..59, pairs 60..63 are temporal.
    F = rr.mrope_frequencies(128, [24, 20, 20], base=5e6, interleaved=True)
    assert _axes(F) == [0, 1, 2] * 20 + [0, 0, 0, 0]
    assert [int((F[:, a] != 0).sum()) for a in range(3)] == [24, 20, 20]


def test_small_cases_by_hand():
    # base 1e4 over rotary_dim 8: theta_j = 1e4^(-2j/8) = 10^(-j).
    F = rr.mrope_frequencies(8, [2, 1, 1], base=1e4)
    expected = np.array([[1, 0, 0], [0.1, 0, 0], [0, 0.01, 0], [0, 0, 0.001]])
    np.testing.assert_allclose(F, expected, rtol=1e-14)
    Fi = rr.mrope_frequencies(8, [2, 1, 1], base=1e4, interleaved=True)
    np.testing.assert_allclose(Fi, [[1, 0, 0], [0, 0.1, 0], [0, 0, 0.01], [0.001, 0, 0]], rtol=1e-14)
    # An empty section is allowed: [4, 0, 0] is 1-D RoPE on the temporal axis.
    assert _axes(rr.mrope_frequencies(8, [4, 0, 0], interleaved=True)) == [0, 0, 0, 0]
    assert _axes(rr.mrope_frequencies(8, [1, 0, 3])) == [0, 2, 2, 2]


def test_text_positions_reduce_to_one_dimensional_frequencies():
    # With p_t = p_h = p_w = m every pair turns by theta_j * m: the row sums are the 1-D frequencies.
    for sections, inter in (([8, 12, 12], False), ([12, 10, 10], True)):
        F = rr.mrope_frequencies(64, sections, base=10000.0, interleaved=inter)
        np.testing.assert_array_equal(F.sum(axis=1), rr.frequencies(64, 10000.0))


@pytest.mark.parametrize("args, kwargs, exc, words", [
    ((128, [16, 24, 23]), {}, ValueError, "sum to rotary_dim/2 = 64"),
    ((128, [16, 24]), {}, ValueError, "3 entries"),
    ((128, [16, -8, 56]), {}, ValueError, "sections[1]"),
    ((128, [16.0, 24, 24]), {}, TypeError, "sections[0]"),
    ((128, [True, 31, 32]), {}, TypeError, "sections[0]"),
    ((128, "16,24,24"), {}, TypeError, "sections must be a list"),
    ((128, 64), {}, TypeError, "sections must be a list"),
    ((127, [16, 24, 24]), {}, ValueError, "rotary_dim"),
    ((0, [0, 0, 0]), {}, ValueError, "rotary_dim"),
    ((128, [16, 24, 24]), {"base": -1.0}, ValueError, "base"),
    ((128, [16, 24, 24]), {"interleaved": "yes"}, TypeError, "interleaved"),
    ((128, [4, 30, 30]), {"interleaved": True}, ValueError, "cannot be interleaved"),
    ((128, [16, 24, 24]), {"interleave": True}, TypeError, "did you mean 'interleaved'"),
])
def test_bad_arguments_are_named(args, kwargs, exc, words):
    with pytest.raises(exc) as err:
        rr.mrope_frequencies(*args, **kwargs)
    assert words in str(err.value)


def test_sections_as_a_numpy_array_or_tuple_are_accepted_and_not_modified():
    s = np.array([16, 24, 24])
    F = rr.mrope_frequencies(128, s)
    np.testing.assert_array_equal(F, rr.mrope_frequencies(128, (16, 24, 24)))
    assert s.tolist() == [16, 24, 24]
