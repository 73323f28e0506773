"""kernel_plot: a measured kernel drawn against an expectation; phase errors derived here by hand."""

from types import SimpleNamespace

import numpy as np
import pytest

import rope_ref as rr
from rope_ref.teaching.kernel_plot import kernel_vs_expected, phase_errors
from rope_ref.teaching.style import MIN_FONT_PT


def spec_like(inv_freq, offset, rows=6):
    return SimpleNamespace(inv_freq=np.asarray(inv_freq, float), offset=offset, rows=rows)


def test_a_shift_is_flat_a_wrong_frequency_grows_and_errors_wrap_to_a_half_turn():
    theta = np.array([1.0, 0.1])
    pos, err = phase_errors(spec_like(theta, 2.0), theta, 0.0)
    np.testing.assert_array_equal(pos, np.arange(6.0))
    np.testing.assert_allclose(err, np.tile([2.0, 0.2], (6, 1)), atol=1e-12)          # (0 + r + 2) theta - (r) theta
    pos, err = phase_errors(spec_like(1.01 * theta, 5.0), theta, 5.0)
    np.testing.assert_allclose(err, 0.01 * np.outer(5 + np.arange(6), theta), atol=1e-12)
    _, err = phase_errors(spec_like([1.0], 4.0), [1.0], 0.0)                           # 4 rad = 4 - 2 pi
    np.testing.assert_allclose(err, 4.0 - 2 * np.pi, atol=1e-12)


@pytest.mark.slow
def test_the_figure_draws_both_panels_in_the_style():
    spec = rr.identify(lambda x: rr.rotate(x, np.arange(len(x)) + 3.0), 16)
    fig = kernel_vs_expected(spec, rr.frequencies(16), 0, title="t")
    left, right = fig.axes
    np.testing.assert_allclose(left.get_lines()[1].get_ydata(), np.abs(spec.inv_freq))
    np.testing.assert_allclose(right.get_lines()[0].get_ydata(), 3.0, atol=1e-6)      # pair 0: theta_0 * 3
    assert min(t.get_fontsize() for t in fig.findobj(lambda o: hasattr(o, "get_fontsize"))) >= MIN_FONT_PT
