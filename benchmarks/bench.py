"""Benchmark of rope_ref.rotate: ``python benchmarks/bench.py [--rounds N] [--quick]``.

Every figure is a ratio to a floor measured in the same run on the same arrays, in interleaved rounds (each
round runs every contender once, in the same order); a ratio is the median over rounds of (contender / floor in
that round), printed with its [min, max] spread.  NumPy runs these ufuncs on one thread; rope_ref starts none.

* large: float32 q of shape (32, 4096, 128), positions 0..4095, against ``x.copy()`` (target <= 2x, both
  pairings, the cos/sin table of the previous call kept);
* small: one call on a (4, 8) input against the bare NumPy lines of eq 34 a user writes (frequencies, angles,
  cos, sin, x*cos + rotate_half(x)*sin), for rotate and rotate_elementwise (target <= 5x);
* partial: rotary_dim = d/4 against the full rotation (it should cost about a quarter, plus the copy of the rest).

No test asserts these numbers (benchmarks/test_bench.py runs a tiny version).
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from rope_ref import rotate, rotate_elementwise

LARGE = (32, 4096, 128)
SMALL = (4, 8)
TARGETS = {"large": 2.0, "small": 5.0}


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


def ratio(times: dict, name: str, floor: str) -> tuple:
    """(median, min, max) over rounds of times[name] / times[floor]."""
    r = times[name] / times[floor]
    return float(np.median(r)), float(r.min()), float(r.max())


def verdict(r: tuple, target: float | None) -> str:
    """The ratio with its spread, and whether its median meets ``target``."""
    text = f"{r[0]:.2f}x [{r[1]:.2f}-{r[2]:.2f}]"
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
    """Rows (what, ratio) of rotate on a large float32 array against x.copy()."""
    x = np.random.default_rng(0).standard_normal(shape, dtype=np.float32)
    c = {"x.copy()": x.copy,
         "rotate interleaved": lambda: rotate(x),
         "rotate half": lambda: rotate(x, pairing="half"),
         "rotate half, rotary_dim d/4": lambda: rotate(x, pairing="half", rotary_dim=shape[-1] // 4),
         "rotate interleaved, rotary_dim d/4": lambda: rotate(x, rotary_dim=shape[-1] // 4)}
    t = rounds(c, n_rounds)
    rows = [(f"{name} {shape} float32 / x.copy()", verdict(ratio(t, name, "x.copy()"), TARGETS["large"]))
            for name in ("rotate interleaved", "rotate half")]
    for p in ("interleaved", "half"):
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
    args.add_argument("--rounds", type=int, default=15)
    args.add_argument("--quick", action="store_true", help="tiny shapes and 3 rounds (a smoke test)")
    opts = args.parse_args(argv)
    n = 3 if opts.quick else opts.rounds
    rows = large(n, (2, 64, 16) if opts.quick else LARGE) + small(n, repeat=5 if opts.quick else 200)
    print(f"rope_ref.rotate ratios, {n} rounds; numpy {np.__version__}, {platform.machine()} {platform.processor()}")
    width = max(len(what) for what, _ in rows)
    for what, result in rows:
        print(f"{what:<{width}}  {result}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
