"""The benchmark script runs and reports; it asserts no timings (those live in its table)."""

import numpy as np

import bench


def test_peak_memory_measures_allocations():
    # An array of n float64 allocates n*8 bytes: the measured multiple of that size is ~1.
    m = bench.peak_extra_memory(lambda: np.ones(1_000_000), 8_000_000)
    assert 0.99 < m < 1.1
    m2 = bench.peak_extra_memory(lambda: np.ones(1_000_000) + np.ones(1_000_000), 8_000_000)
    assert m2 > 1.9      # a temporary shows up


def test_slider_steps_cover_every_view():
    steps = bench.slider_steps(repeats=2)
    assert {"rotations: m", "decay (Fig 2): d", "context extension: factor"} <= set(steps)
    assert all(t > 0 for t in steps.values())


def test_table_format_and_verdicts():
    rows = [("floor", 0.01, 1.0, ""), ("x", 0.05, float("nan"), bench._target(0.05, 0.06)),
            ("y", 0.07, float("nan"), bench._target(0.07, 0.06))]
    table = bench.format_rows(rows)
    assert "met" in table and "MISSED by 17%" in table and "50.0 ms" in table
