"""The benchmark script runs and reports its ratios; it asserts no timings (those live in its printed table)."""

import numpy as np

import bench


def test_rounds_interleave_and_ratios_are_per_round():
    calls = []
    t = bench.rounds({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, 3)
    assert calls == ["a", "b"] * 4                       # one warm-up, then 3 interleaved rounds
    assert all(len(v) == 3 for v in t.values())
    t = {"floor": np.array([1.0, 2.0, 4.0]), "x": np.array([3.0, 2.0, 8.0]), "y": np.array([1.0, 1.0, 4.0])}
    assert bench.ratio(t, "x", "floor") == (2.0, 2.0)         # fastest rounds 2 / 1; per-round ratios 3, 1, 2
    assert bench.ratio(t, "x", "floor", "y") == (1.0, 1.0)    # floor: the sum, 1 + 1 fastest; per round 1.5, 2/3, 1
    assert bench.verdict((2.1, 1.0), 2.0).endswith("MISSED)")
    assert bench.verdict((1.9, 3.0), 2.0).endswith("met)")


def test_the_bare_lines_are_eq_34():
    import rope_ref
    x = np.random.default_rng(0).standard_normal((4, 8))
    for pairing in ("interleaved", "half"):
        np.testing.assert_allclose(bench.bare_eq34(x, pairing), rope_ref.rotate(x, pairing=pairing), atol=1e-12)


def test_quick_run_prints_every_ratio(capsys):
    assert bench.main(["--quick"]) == 0
    out = capsys.readouterr().out
    for row in ("rotate interleaved (2, 64, 16) float32 / x.copy()", "rotate half, rotary_dim d/4 / full",
                "rotate interleaved, rotary_dim d/4 / (x.copy() + rotate interleaved of the d/4 slice)",
                "rotate_elementwise half (4, 8) / bare NumPy eq 34"):
        assert row in out, row
