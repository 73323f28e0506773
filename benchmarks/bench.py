"""Benchmark of rope_ref.rotate: ``python benchmarks/bench.py [--rounds N] [--quick]``.

Every figure is a ratio to a floor measured in the same run on the same arrays, in interleaved rounds (each
round runs every contender once, in the same order).  A ratio is the fastest round of the contender over the
fastest round of the floor (the minimum of the repeats: the machine may be shared), printed with the median of
the per-round ratios beside it.  One thread: NumPy runs these ufuncs on one, rope_ref starts none, and the
BLAS/OpenMP pools are set to one before NumPy is imported.

* large: float32 q of shape (32, 4096, 128), positions 0..4095, against ``x.copy()`` (target <= 2x, both
  pairings, the cos/sin table of the previous call kept);
* partial: rotary_dim = d/4 against ``x.copy()`` plus the full rotation of a contiguous (32, 4096, 32) array
  (target <= 1.3x: a partial rotation costs the copy of x and the rotation of the part it turns);
* small: one call on a (4, 8) input against the bare NumPy lines of eq 34 a user writes (frequencies, angles,
  cos, sin, x*cos + rotate_half(x)*sin), for rotate and rotate_elementwise (target <= 5x).

No test asserts these numbers (benchmarks/test_bench.py runs a tiny version).
"""

from __future__ import annotations

import argparse
import os
import platform
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

from rope_ref import rotate, rotate_elementwise  # noqa: E402

LARGE = (32, 4096, 128)
SMALL = (4, 8)
TARGETS = {"large": 2.0, "partial": 1.3, "small": 5.0}


def rounds(contenders: dict, n_rounds: int, repeat: int = 1) -> dict:
    """Seconds per call: ``{name: array of n_rounds}``, contenders interleaved within each round, each timed
    over ``repeat`` calls."""
    for fn in contenders.values():                      # warm-up: first touch of buffers, the kept table
        fn()
    times = {name: [] for name in contenders}
    for _ in range(n_rounds):
        for name, fn in contenders.items():
            t0 = time.perf_counter()
            for _ in range(repeat):
                fn()
            times[name].append((time.perf_counter() - t0) / repeat)
    return {name: np.array(t) for name, t in times.items()}


def ratio(times: dict, name: str, *floors: str) -> tuple:
    """(fastest round of ``name`` / fastest round of the floor, median over rounds of the per-round ratio); the
    floor is the sum of ``floors``."""
    floor = sum(times[f] for f in floors)
    return float(times[name].min() / sum(times[f].min() for f in floors)), float(np.median(times[name] / floor))


def verdict(r: tuple, target: float | None) -> str:
    """The ratio (fastest rounds) with the median per-round ratio, and whether the first meets ``target``."""
    text = f"{r[0]:.2f}x (median {r[1]:.2f}x)"
    if target is None:
        return text
    return f"{text}  (<= {target:g}x: {'met' if r[0] <= target else 'MISSED'})"


def bare_eq34(x: np.ndarray, pairing: str, base: float = 10000.0) -> np.ndarray:
    """Eq 34 as a user writes it in NumPy, nothing precomputed: x * cos + rotate_half(x) * sin."""
    d = x.shape[-1]
    inv_freq = base ** (-np.arange(0, d, 2) / d)
    angles = np.outer(np.arange(x.shape[-2]), inv_freq)
    if pairing == "half":
        angles = np.concatenate([angles, angles], -1)
        turned = np.concatenate([-x[..., d // 2:], x[..., :d // 2]], -1)
    else:
        angles = np.repeat(angles, 2, -1)
        turned = np.stack([-x[..., 1::2], x[..., 0::2]], -1).reshape(x.shape)
    return x * np.cos(angles) + turned * np.sin(angles)


def large(n_rounds: int, shape=LARGE) -> list:
    """Rows (what, ratio) of rotate on a large float32 array against x.copy(), full and partial (rotary_dim d/4)."""
    x = np.random.default_rng(0).standard_normal(shape, dtype=np.float32)
    quarter = np.ascontiguousarray(x[..., :shape[-1] // 4])
    c = {"x.copy()": x.copy}
    for p in ("interleaved", "half"):
        c[f"rotate {p}"] = lambda p=p: rotate(x, pairing=p)
        c[f"rotate {p}, rotary_dim d/4"] = lambda p=p: rotate(x, pairing=p, rotary_dim=shape[-1] // 4)
        c[f"rotate {p} of the d/4 slice"] = lambda p=p: rotate(quarter, pairing=p)
    t = rounds(c, n_rounds)
    rows = [(f"x.copy() {shape} float32, fastest round (the floor)", f"{t['x.copy()'].min() * 1e3:.3g} ms")]
    rows += [(f"rotate {p} {shape} float32 / x.copy()", verdict(ratio(t, f"rotate {p}", "x.copy()"), TARGETS["large"]))
             for p in ("interleaved", "half")]
    for p in ("interleaved", "half"):
        rows.append((f"rotate {p}, rotary_dim d/4 / (x.copy() + rotate {p} of the d/4 slice)",
                     verdict(ratio(t, f"rotate {p}, rotary_dim d/4", "x.copy()", f"rotate {p} of the d/4 slice"),
                             TARGETS["partial"])))
        rows.append((f"rotate {p}, rotary_dim d/4 / full", verdict(ratio(t, f"rotate {p}, rotary_dim d/4",
                                                                         f"rotate {p}"), None)))
    return rows


def small(n_rounds: int, shape=SMALL, repeat: int = 200) -> list:
    """Rows (what, ratio) of one call of rotate and rotate_elementwise on a small input against bare eq 34."""
    x = np.random.default_rng(0).standard_normal(shape)
    c = {}
    for p in ("interleaved", "half"):
        c[f"bare {p}"] = lambda p=p: bare_eq34(x, p)
        c[f"rotate {p}"] = lambda p=p: rotate(x, pairing=p)
        c[f"rotate_elementwise {p}"] = lambda p=p: rotate_elementwise(x, pairing=p)
    t = rounds(c, n_rounds, repeat)
    return [(f"{name} {p} {shape} / bare NumPy eq 34", verdict(ratio(t, f"{name} {p}", f"bare {p}"), TARGETS["small"]))
            for p in ("interleaved", "half") for name in ("rotate", "rotate_elementwise")]


def main(argv=None) -> int:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--rounds", type=int, default=30)
    args.add_argument("--quick", action="store_true", help="tiny shapes and 3 rounds (a smoke test)")
    opts = args.parse_args(argv)
    n = 3 if opts.quick else opts.rounds
    rows = large(n, (2, 64, 16) if opts.quick else LARGE) + small(n, repeat=5 if opts.quick else 200)
    machine = f"{platform.machine()} {platform.processor()}"
    print(f"rope_ref.rotate ratios, fastest of {n} rounds; numpy {np.__version__}, {machine}")
    width = max(len(what) for what, _ in rows)
    for what, result in rows:
        print(f"{what:<{width}}  {result}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
