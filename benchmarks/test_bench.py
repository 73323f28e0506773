"""The benchmark script runs and reports; it asserts no timings (those live in its printed tables)."""

import sys

import numpy as np

import bench


def test_peak_memory_measures_allocations():
    # An array of n float64 allocates n*8 bytes: the measured multiple of that size is ~1.
    m = bench.peak_extra_memory(lambda: np.ones(1_000_000), 8_000_000)
    assert 0.99 < m < 1.1
    m2 = bench.peak_extra_memory(lambda: np.ones(1_000_000) + np.ones(1_000_000), 8_000_000)
    assert m2 > 1.9      # a temporary shows up


def test_rounds_interleave_and_ratios_are_per_round():
    calls = []
    t = bench.rounds({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, 3)
    assert calls == ["a", "b"] * 4                       # one warm-up, then 3 interleaved rounds
    assert all(len(v) == 3 for v in t.values())
    t = {"floor": np.array([1.0, 2.0, 4.0]), "x": np.array([3.0, 2.0, 8.0])}
    assert bench.ratio(t, "x", "floor") == (2.0, 1.0, 3.0)   # per-round ratios 3, 1, 2
    assert bench.verdict((1.3, 1.0, 2.0), 1.25) == "<= 1.25x: MISSED (1.30x)"
    assert bench.verdict((1.2, 1.0, 2.0), 1.25) == "<= 1.25x: met"


def test_peers_skip_cleanly_when_missing(monkeypatch):
    for mod in ("torch", "numexpr", "jax", "transformers"):
        monkeypatch.setitem(sys.modules, mod, None)         # import raises ImportError
    q = np.ones((1, 4, 8), np.float32)
    got = bench.peers(q, q, np.arange(4.0))
    assert got["JAX"] is None and got["numexpr"] is None and got["torch (transformers, Meta-Llama complex)"] is None
    a, b = got["naive NumPy (half)"]()                   # the NumPy peer always runs, and is right
    import rope_ref
    np.testing.assert_allclose(a, rope_ref.rotate(q, pairing="half"), atol=1e-6)


def test_quick_run_prints_every_table(capsys):
    assert bench.main(["--quick", "--no-peers"]) == 0
    out = capsys.readouterr().out
    for heading in ("x np.copyto", "narrow dtypes", "leading shapes", "slider steps", "rotate_complex",
                    "rotations: m", "decay (Fig 2): d", "context extension: factor", "(256, 1, d), per-row positions"):
        assert heading in out, heading


def test_cast_round_trip_is_the_identity_on_every_block():
    # float16 -> float32 -> float16 is exact, so the floor must hand back x bit for bit, partial last block too.
    import ml_dtypes
    bits = np.arange(65536, dtype=np.uint16)
    for dt, exponent in ((np.float16, 0x7C00), (ml_dtypes.bfloat16, 0x7F80)):
        x = bits[(bits & exponent) != exponent].view(dt)   # every finite value
        x = x[:7 * 9000].reshape(-1, 7)
        got = bench.cast_round_trip(x, block=999)          # the last block is partial
        assert got.shape == x.shape and got.dtype == x.dtype and not np.shares_memory(got, x)
        np.testing.assert_array_equal(got.view(np.uint16), x.view(np.uint16))
