"""float16 <-> float32 by blocks: rope_ref._f16 against NumPy's casts, ``python benchmarks/bench_f16.py [--rounds N] [--quick]``.

What ``rotate`` does on float16 input, without the rotation: walk a float16 array of shape (32, 4096, 128)
in blocks of 2**14 .. 2**17 elements, convert each block to float32 in a cache-resident buffer, and
convert a float32 block back into the float16 output.  Every figure is a ratio to float16 floors of the
whole array measured in the same run (``np.copyto`` into a preallocated array and ``x.copy()``), median
over interleaved rounds with its [min, max] spread (helpers from ``bench.py``).

* ``to float32``: block of x (float16, in memory) -> float32 buffer;
* ``from float32``: float32 buffer (one block of x's values, cached) -> block of the float16 output;
* ``round trip``: both, block by block (what rotate pays on top of the rotation itself).

Then the same at 2**16 for data that forces the fix-ups: 1% exact zeros, and x * 2**-12 (about 80% of
the values float16 subnormals).
"""

from __future__ import annotations

import argparse

import numpy as np

from bench import fmt_ratio, ratio, rounds, table
from rope_ref._f16 import from_float32, to_float32

SHAPE = (32, 4096, 128)


def contenders(x: np.ndarray, block: int) -> dict:
    """NumPy's casts and ours over ``x`` (float16) in blocks of ``block`` elements."""
    flat = x.reshape(-1)
    block = min(block, flat.size)
    assert flat.size % block == 0, "whole blocks only (every size here is a power of two)"
    out = np.empty_like(flat)
    buf = np.empty(block, np.float32)
    src = flat[:block].astype(np.float32)                # one block of x's values, float32, stays in cache
    work = np.empty((3, block), np.uint32)
    starts = range(0, flat.size, block)

    def np_to():
        for i in starts:
            np.copyto(buf, flat[i:i + block])

    def ours_to():
        for i in starts:
            to_float32(flat[i:i + block], buf)

    def np_from():
        for i in starts:
            np.copyto(out[i:i + block], src)

    def ours_from():
        for i in starts:
            from_float32(src, out[i:i + block], work)

    def np_trip():
        for i in starts:
            np.copyto(buf, flat[i:i + block])
            np.copyto(out[i:i + block], buf)

    def ours_trip():
        for i in starts:
            to_float32(flat[i:i + block], buf)
            from_float32(buf, out[i:i + block], work)

    return {"numpy to float32": np_to, "ours to float32": ours_to,
            "numpy from float32": np_from, "ours from float32": ours_from,
            "numpy round trip": np_trip, "ours round trip": ours_trip}


def measure(x: np.ndarray, blocks, n_rounds: int, label: str = "") -> list:
    o = np.empty_like(x)
    rows = []
    for block in blocks:
        c = {"np.copyto": lambda: np.copyto(o, x), "x.copy()": lambda: x.copy()} | contenders(x, block)
        t = rounds(c, n_rounds)
        for what in ("to float32", "from float32", "round trip"):
            mine, theirs = t[f"ours {what}"], t[f"numpy {what}"]
            speedup = np.median(theirs / mine)
            rows.append((f"2**{block.bit_length() - 1}{label}", what,
                         f"{np.median(mine) * 1e3:.1f} / {np.median(theirs) * 1e3:.1f} ms",
                         fmt_ratio(ratio(t, f"ours {what}", "x.copy()")), fmt_ratio(ratio(t, f"numpy {what}", "x.copy()")),
                         fmt_ratio(ratio(t, f"ours {what}", "np.copyto")),
                         f"{speedup:.2f}x " + ("faster" if speedup > 1 else "NOT faster: keep numpy's cast")))
        rows.append((f"2**{block.bit_length() - 1}{label}", "floors", f"copyto {np.median(t['np.copyto']) * 1e3:.2f} ms, "
                     f"x.copy() {np.median(t['x.copy()']) * 1e3:.2f} ms", "", "", "", ""))
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python benchmarks/bench_f16.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9, help="interleaved rounds per table (default 9)")
    parser.add_argument("--quick", action="store_true", help="small array, few rounds (a smoke run)")
    args = parser.parse_args(argv)
    shape, n_rounds = ((2, 256, 128), 2) if args.quick else (SHAPE, args.rounds)
    rng = np.random.default_rng(16)
    x = rng.standard_normal(shape, dtype=np.float32).astype(np.float16)
    zeros = x.copy()
    zeros.reshape(-1)[rng.random(x.size) < 0.01] = 0
    tiny = (x.astype(np.float32) * 2.0 ** -12).astype(np.float16)
    print(f"float16 x of shape {shape}; {np.mean(np.abs(tiny.astype(np.float32)) < 2.0 ** -14):.0%} of x * 2**-12 "
          f"is subnormal; {n_rounds} interleaved rounds, median [min-max] of per-round ratios\n")
    blocks = [1 << 14, 1 << 15, 1 << 16, 1 << 17]
    rows = measure(x, blocks, n_rounds)
    rows += measure(zeros, [1 << 16], n_rounds, ", 1% zeros")
    rows += measure(tiny, [1 << 16], n_rounds, ", x*2**-12")
    print(table(["block", "direction", "ours / numpy", "ours / x.copy()", "numpy / x.copy()", "ours / np.copyto",
                 "numpy time / ours"], rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
