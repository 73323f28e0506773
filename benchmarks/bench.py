"""Benchmark of rope_ref: ``python benchmarks/bench.py [--repeats N] [--skip-notebooks]`` from a checkout.

Measures, in one run and on the same arrays (float32 q, k of shape (32, 4096, 128)),
best of ``--repeats``:

* the memory floor: ``np.copyto`` of q and k into preallocated arrays;
* ``rotate`` in both pairings (allocating, and into an ``out=`` buffer), ``rotate_complex``,
  and ``rotate_dense`` on a smaller shape against that shape's own floor;
* a torch-CPU ``rotate_half`` on the same data, when torch is installed (optional);
* the peak extra memory of ``rotate`` (tracemalloc) as a multiple of the output size;
* ``decay_bound`` over 25,601 distances;
* the median time of one slider step for every interactive view (update + PNG);
* the wall time to execute every notebook headless, and of ``python -m rope_ref figures``.

It prints one table with each measurement's target.  No test asserts these numbers.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

from rope_ref import clear_cache, decay_bound, rotate, rotate_complex, rotate_dense
from rope_ref.teaching.quantities import FIG2_DISTANCES
from rope_ref.teaching.views import DecayView, RotationsView, ScalingView

ROOT = Path(__file__).resolve().parent.parent
SHAPE = (32, 4096, 128)
DENSE_SHAPE = (4, 512, 128)


def best_of(fn, repeats: int) -> float:
    """Best wall time in seconds over ``repeats`` calls (after one warm-up call)."""
    fn()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def peak_extra_memory(fn, out_nbytes: int) -> float:
    """Peak traced allocation during ``fn()`` as a multiple of the output size (output included)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    result = fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del result
    return peak / out_nbytes


def slider_steps(repeats: int = 15) -> dict:
    """Median seconds of update + PNG per view and parameter, as a notebook slider step does."""
    cases = {
        "rotations: m": (RotationsView, "m", [4 + i % 40 for i in range(repeats)]),
        "rotations: d": (RotationsView, "d", [8 + 8 * (i % 8) for i in range(repeats)]),
        "decay (Fig 2): d": (DecayView, "d", [16 + 8 * (i % 30) for i in range(repeats)]),
        "decay (Fig 2): base": (DecayView, "base", [10 ** (2 + 0.25 * (i % 16)) for i in range(repeats)]),
        "context extension: factor": (ScalingView, "factor", [1.0 + (i % 31) for i in range(repeats)]),
    }
    out = {}
    for name, (view_cls, param, values) in cases.items():
        view = view_cls()
        view.to_png()
        times = []
        for v in values:
            t0 = time.perf_counter()
            view.update(**{param: v})
            view.to_png()
            times.append(time.perf_counter() - t0)
        out[name] = float(np.median(times))
    return out


def notebooks_wall_time() -> tuple[float, int]:
    """Execute every notebook in a fresh kernel (as nbmake does); total seconds and count."""
    import nbformat
    from nbclient import NotebookClient

    paths = sorted((ROOT / "notebooks").glob("*.ipynb"))
    t0 = time.perf_counter()
    for p in paths:
        nb = nbformat.read(p, as_version=4)
        client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(p.parent)}})
        client.execute(stderr=subprocess.DEVNULL)          # the kernel's start-up warnings are not ours
    return time.perf_counter() - t0, len(paths)


def figures_wall_time() -> float:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "rope_ref", "figures", "--out", tmp], check=True,
                       stdout=subprocess.DEVNULL)
        return time.perf_counter() - t0


def torch_rotate_half_time(q, k, repeats):
    """HF-style rotate_half in torch on CPU, same data; None when torch is not installed."""
    try:
        import torch
    except ImportError:
        return None
    tq, tk = torch.from_numpy(q), torch.from_numpy(k)
    d = q.shape[-1]
    inv = 1.0 / 10000 ** (torch.arange(0, d, 2, dtype=torch.float64) / d)
    ang = torch.outer(torch.arange(q.shape[-2], dtype=torch.float64), inv)
    emb = torch.cat([ang, ang], dim=-1)
    cos, sin = emb.cos().float(), emb.sin().float()

    def rotate_half(x):
        x1, x2 = x[..., : d // 2], x[..., d // 2:]
        return torch.cat((-x2, x1), dim=-1)

    def run():
        with torch.no_grad():
            return tq * cos + rotate_half(tq) * sin, tk * cos + rotate_half(tk) * sin

    return best_of(run, repeats)


def run(repeats: int = 7, skip_notebooks: bool = False) -> list[tuple]:
    rng = np.random.default_rng(0)
    q = rng.standard_normal(SHAPE, dtype=np.float32)
    k = rng.standard_normal(SHAPE, dtype=np.float32)
    oq, ok = np.empty_like(q), np.empty_like(k)
    floor = best_of(lambda: (np.copyto(oq, q), np.copyto(ok, k)), repeats)
    rows = [("floor: np.copyto of q and k", floor, 1.0, "")]

    def ratio_row(name, seconds, target=None):
        r = seconds / floor
        verdict = "" if target is None else (f"<= {target:g}x: " + ("met" if r <= target else f"MISSED by {r / target - 1:.0%}"))
        rows.append((name, seconds, r, verdict))

    ratio_row("rotate, interleaved", best_of(lambda: (rotate(q), rotate(k)), repeats), 2.0)
    ratio_row("rotate, half", best_of(lambda: (rotate(q, pairing="half"), rotate(k, pairing="half")), repeats), 4.0)
    def cold(pairing):
        clear_cache()                                         # include building the cos/sin tables
        return rotate(q, pairing=pairing), rotate(k, pairing=pairing)

    ratio_row("rotate, interleaved, cold table cache", best_of(lambda: cold("interleaved"), repeats))
    ratio_row("rotate, half, cold table cache", best_of(lambda: cold("half"), repeats))
    ratio_row("rotate, interleaved, out= buffer",
              best_of(lambda: (rotate(q, out=oq), rotate(k, out=ok)), repeats))
    ratio_row("rotate, half, out= buffer",
              best_of(lambda: (rotate(q, pairing="half", out=oq), rotate(k, pairing="half", out=ok)), repeats))
    ratio_row("rotate_complex (Llama form, complex128)",
              best_of(lambda: (rotate_complex(q), rotate_complex(k)), max(2, repeats // 2)))
    t_torch = torch_rotate_half_time(q, k, repeats)
    if t_torch is not None:
        ratio_row("torch CPU rotate_half (reference)", t_torch)
    else:
        rows.append(("torch CPU rotate_half", float("nan"), float("nan"), "torch not installed"))

    small = rng.standard_normal(DENSE_SHAPE, dtype=np.float32)
    o_small = np.empty_like(small)
    small_floor = best_of(lambda: np.copyto(o_small, small), repeats)
    t_dense = best_of(lambda: rotate_dense(small), max(2, repeats // 2))
    rows.append((f"rotate_dense on {DENSE_SHAPE} (vs its own copy)", t_dense, t_dense / small_floor, "teaching path"))

    for pairing in ("interleaved", "half"):
        mem = peak_extra_memory(lambda: rotate(q, pairing=pairing), q.nbytes)
        rows.append((f"peak memory of rotate ({pairing}) / output", float("nan"), mem,
                     f"extra beyond output {mem - 1:.3f}x; <= 1x: " + ("met" if mem - 1 <= 1 else "MISSED")))

    t_decay = best_of(lambda: decay_bound(FIG2_DISTANCES, 128), repeats)
    rows.append(("decay_bound over 25,601 distances", t_decay, float("nan"), _target(t_decay, 0.100)))
    for name, t in slider_steps().items():
        rows.append((f"slider step (median), {name}", t, float("nan"), _target(t, 0.060)))
    if not skip_notebooks:
        t_nb, n = notebooks_wall_time()
        rows.append((f"execute all {n} notebooks headless", t_nb, float("nan"), _target(t_nb, 60.0)))
    t_fig = figures_wall_time()
    rows.append(("python -m rope_ref figures", t_fig, float("nan"), _target(t_fig, 30.0)))
    return rows


def _target(seconds, limit):
    return f"<= {_fmt_time(limit)}: " + ("met" if seconds <= limit else f"MISSED by {seconds / limit - 1:.0%}")


def _fmt_time(s):
    if not np.isfinite(s):
        return "-"
    return f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.1f} s"


def format_rows(rows) -> str:
    table = [("measurement", "time", "x floor", "target")]
    table += [(n, _fmt_time(t), "-" if not np.isfinite(r) else f"{r:.2f}", v) for n, t, r, v in rows]
    widths = [max(len(r[i]) for r in table) for i in range(4)]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |" for r in table]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python benchmarks/bench.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=7, help="repeats per timing; the best is kept (default 7)")
    parser.add_argument("--skip-notebooks", action="store_true", help="do not time notebook execution")
    args = parser.parse_args(argv)
    print(f"rope_ref benchmark: q, k float32 {SHAPE}, best of {args.repeats}; numpy {np.__version__}, "
          f"{os.cpu_count()} CPUs")
    print(format_rows(run(args.repeats, args.skip_notebooks)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
