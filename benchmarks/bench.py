"""Benchmark of rope_ref: ``python benchmarks/bench.py [--rounds N] [--quick] [--skip-notebooks] [--browser] [--sliders]``.

Every figure is a ratio to floors measured in the same run on the same arrays: ``np.copyto`` into a
preallocated array and ``x.copy()`` (which also pays for the fresh output's pages).  Contenders run
in interleaved rounds (each round runs every contender once, in the same order); each ratio is the
median over rounds of (contender / floor in that round), printed with its [min, max] spread.

* the main shape: float32 q, k of shape (32, 4096, 128), positions 0..4095;
* ``rotate`` both pairings: warm tables, cold tables, ``out=``; bfloat16 and float16 against their
  own copy floors; ``rotate_complex``; peers when installed (transformers' ``apply_rotary_pos_emb``,
  a Meta-Llama-style torch complex form, numexpr, JAX jit), otherwise skipped with a note;
* leading shapes: the same rows as (1, rows, d), (rows, 1, d), ... with shared and per-row positions;
* scaling curves over seq, d, heads (printed tables);
* slider steps of every interactive view (median and p90 of update + PNG), optionally the browser's key-press-to-new-image latencies (``--browser`` runs
  tests/teaching/test_browser.py); ``--sliders`` prints only these;
* notebooks and ``python -m rope_ref figures`` wall time.

No test asserts these numbers (benchmarks/test_bench.py runs a tiny smoke version).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

import ml_dtypes
import numpy as np

from rope_ref import clear_cache, rotate, rotate_complex, set_num_threads
from rope_ref.teaching.views import DecayView, RotationsView, ScalingView

ROOT = Path(__file__).resolve().parent.parent
SHAPE = (32, 4096, 128)
LATENCY_FILE = ROOT / "test-artifacts" / "browser" / "latency.json"


def threads() -> int:
    """How many threads rope_ref.rotate splits large arrays across (set_num_threads)."""
    n = set_num_threads(1)
    set_num_threads(n)
    return n


def one_thread(fn):
    """``fn`` run with rotate confined to the calling thread."""
    def run():
        old = set_num_threads(1)
        try:
            return fn()
        finally:
            set_num_threads(old)
    return run


def rounds(contenders: dict, n_rounds: int) -> dict:
    """Seconds per call: ``{name: array of n_rounds}``, contenders interleaved within each round."""
    for fn in contenders.values():                      # warm-up (and first-touch of buffers)
        fn()
    times = {name: [] for name in contenders}
    for _ in range(n_rounds):
        for name, fn in contenders.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: np.array(t) for name, t in times.items()}


def ratio(times: dict, name: str, floor: str) -> tuple:
    """(median, min, max) over rounds of times[name] / times[floor]."""
    r = times[name] / times[floor]
    return float(np.median(r)), float(r.min()), float(r.max())


def fmt_ratio(r) -> str:
    return f"{r[0]:.2f} [{r[1]:.2f}-{r[2]:.2f}]"


def verdict(r, target) -> str:
    return f"<= {target:g}x: " + ("met" if r[0] <= target else f"MISSED ({r[0]:.2f}x)")


def table(header, rows) -> str:
    rows = [tuple(header)] + [tuple(str(c) for c in r) for r in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["| " + " | ".join(c.ljust(w) for c, w in zip(r, widths)) + " |" for r in rows]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def peak_extra_memory(fn, out_nbytes: int) -> float:
    """Peak traced allocation during ``fn()`` as a multiple of the output size (output included)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    result = fn()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del result
    return peak / out_nbytes


# ---------------------------------------------------------------- peers (all optional)

def peers(q, k, positions) -> dict:
    """Contenders from other libraries, each rotating q and k; a missing library is listed as None."""
    out = {}
    d, h = q.shape[-1], q.shape[-1] // 2
    angles = np.multiply.outer(positions, 10000.0 ** (-np.arange(0, d, 2) / d))        # float64
    try:
        import torch
        tq, tk = torch.from_numpy(q), torch.from_numpy(k)
        emb = torch.from_numpy(np.concatenate([angles, angles], -1))
        cos, sin = emb.cos().float()[None], emb.sin().float()[None]                     # (1, seq, d)
        try:
            from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

            def hf():
                with torch.no_grad():
                    return apply_rotary_pos_emb(tq[None], tk[None], cos, sin, unsqueeze_dim=1)
            out["transformers apply_rotary_pos_emb (torch CPU, half)"] = hf
        except ImportError:
            out["transformers apply_rotary_pos_emb"] = None
        freqs_cis = torch.polar(torch.ones(angles.shape, dtype=torch.float64),
                                torch.from_numpy(angles)).to(torch.complex64)

        def meta(x):                                     # Llama model.py apply_rotary_emb, per tensor
            xc = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
            return torch.view_as_real(xc * freqs_cis).flatten(-2)

        def meta_qk():
            with torch.no_grad():
                return meta(tq), meta(tk)
        out["Meta-Llama torch complex (interleaved)"] = meta_qk
    except ImportError:
        out["torch (transformers, Meta-Llama complex)"] = None
    try:
        import numexpr as ne
        c, s = np.cos(angles).astype(np.float32), np.sin(angles).astype(np.float32)

        def ne_half(x):
            x1, x2 = x[..., :h], x[..., h:]
            o = np.empty_like(x)
            env = dict(x1=x1, x2=x2, c=c, s=s)
            o[..., :h] = ne.evaluate("x1 * c - x2 * s", local_dict=env)
            o[..., h:] = ne.evaluate("x2 * c + x1 * s", local_dict=env)
            return o
        out["numexpr (half)"] = lambda: (ne_half(q), ne_half(k))
    except ImportError:
        out["numexpr"] = None
    try:
        import jax
        import jax.numpy as jnp
        jq, jk = jnp.asarray(q), jnp.asarray(k)
        jc, js = jnp.asarray(np.cos(angles), jnp.float32), jnp.asarray(np.sin(angles), jnp.float32)

        @jax.jit
        def j_half(x, c, s):
            x1, x2 = x[..., :h], x[..., h:]
            return jnp.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], -1)

        @jax.jit
        def j_inter(x, c, s):
            xe, xo = x[..., 0::2], x[..., 1::2]
            return jnp.stack([xe * c - xo * s, xo * c + xe * s], -1).reshape(x.shape)
        out["JAX jit (half)"] = lambda: jax.block_until_ready((j_half(jq, jc, js), j_half(jk, jc, js)))
        out["JAX jit (interleaved)"] = lambda: jax.block_until_ready((j_inter(jq, jc, js), j_inter(jk, jc, js)))
    except ImportError:
        out["JAX"] = None
    cos2 = np.concatenate([np.cos(angles)] * 2, -1).astype(np.float32)
    sin2 = np.concatenate([np.sin(angles)] * 2, -1).astype(np.float32)

    def naive(x):                                        # HF's formula written in NumPy
        return x * cos2 + np.concatenate([-x[..., h:], x[..., :h]], -1) * sin2
    out["naive NumPy (half)"] = lambda: (naive(q), naive(k))
    return out


# ---------------------------------------------------------------- the main shape

def main_shape(n_rounds: int, shape=SHAPE, with_peers: bool = True) -> tuple[list, list]:
    rng = np.random.default_rng(0)
    q = rng.standard_normal(shape, dtype=np.float32)
    k = rng.standard_normal(shape, dtype=np.float32)
    oq, ok = np.empty_like(q), np.empty_like(k)
    pos = np.arange(shape[-2], dtype=np.float64)

    def cold(pairing):
        clear_cache()                                    # the table is built once, shared by q and k
        return rotate(q, pairing=pairing), rotate(k, pairing=pairing)

    def cold_one(pairing):
        clear_cache()
        return rotate(q, pairing=pairing)

    c = {
        "np.copyto": lambda: (np.copyto(oq, q), np.copyto(ok, k)),
        "x.copy()": lambda: (q.copy(), k.copy()),
        "x.copy() one": lambda: q.copy(),
    }
    for p in ("interleaved", "half"):
        c[f"rotate {p}, warm"] = lambda p=p: (rotate(q, pairing=p), rotate(k, pairing=p))
        c[f"rotate {p}, warm, 1 thread"] = one_thread(lambda p=p: (rotate(q, pairing=p), rotate(k, pairing=p)))
        c[f"rotate {p}, cold tables"] = lambda p=p: cold(p)
        c[f"rotate {p}, out="] = lambda p=p: (rotate(q, pairing=p, out=oq), rotate(k, pairing=p, out=ok))
        c[f"rotate {p}, one array warm"] = lambda p=p: rotate(q, pairing=p)
        c[f"rotate {p}, one array cold"] = lambda p=p: cold_one(p)
    c["rotate_complex"] = lambda: (rotate_complex(q), rotate_complex(k))
    missing = []
    for name, fn in (peers(q, k, pos) if with_peers else {}).items():
        if fn is None:
            missing.append(name)
        else:
            c[name] = fn
    t = rounds(c, n_rounds)

    rows = []
    for name in ["np.copyto", "x.copy()"]:
        rows.append((name, f"{np.median(t[name]) * 1e3:.1f} ms", fmt_ratio(ratio(t, name, "np.copyto")), "1.00", ""))
    targets = {"rotate interleaved, warm": 1.25, "rotate half, warm": 2.0, "rotate_complex": None,
               "rotate interleaved, warm, 1 thread": 1.25, "rotate half, warm, 1 thread": 2.0}
    for name in c:
        if name in ("np.copyto", "x.copy()", "x.copy() one") or "one array" in name:
            continue
        r_copy = ratio(t, name, "x.copy()")
        note = ""
        if name in targets and targets[name]:
            note = "x.copy() " + verdict(r_copy, targets[name])
        if name == "rotate_complex":
            note = "np.copyto " + verdict(ratio(t, name, "np.copyto"), 6.0)
        if name.endswith("cold tables"):
            warm = t[name.replace("cold tables", "warm")]
            extra = (t[name] - warm) / warm
            note = f"cold adds {np.median(extra):.0%} [{extra.min():.0%}-{extra.max():.0%}] (<= 50%: " + \
                   ("met)" if np.median(extra) <= 0.5 else "MISSED)")
        rows.append((name, f"{np.median(t[name]) * 1e3:.1f} ms", fmt_ratio(ratio(t, name, "np.copyto")),
                     fmt_ratio(r_copy), note))
    for p in ("interleaved", "half"):
        warm, cold_t = t[f"rotate {p}, one array warm"], t[f"rotate {p}, one array cold"]
        r_one = ratio(t, f"rotate {p}, one array warm", "x.copy() one")
        rows.append((f"rotate {p}, q alone, warm", f"{np.median(warm) * 1e3:.1f} ms", "-", fmt_ratio(r_one),
                     "vs q.copy() " + verdict(r_one, {"interleaved": 1.25, "half": 2.0}[p])))
        extra = (cold_t - warm) / warm
        rows.append((f"rotate {p}, q alone: cold vs warm", f"{np.median(cold_t) * 1e3:.1f} ms", "-",
                     fmt_ratio(ratio(t, f"rotate {p}, one array cold", "x.copy() one")),
                     f"cold adds {np.median(extra):.0%} [{extra.min():.0%}-{extra.max():.0%}]"))
    for p in ("interleaved", "half"):
        clear_cache()
        mem = peak_extra_memory(lambda: rotate(q, pairing=p), q.nbytes)
        rows.append((f"rotate {p}: peak memory / output, cold", "-", "-", "-", f"{mem:.3f}"))
    return rows, missing


def cast_round_trip(x: np.ndarray, block: int = 1 << 16) -> np.ndarray:
    """x to float32 and back into a fresh array, a cache-sized block at a time, with the conversions
    rotate uses (NumPy's and ml_dtypes' casts; no arithmetic): the cost rotate cannot go below in one thread."""
    flat, out = x.reshape(-1), np.empty(x.size, x.dtype)
    buf = np.empty(block, np.float32)
    for i in range(0, flat.size, block):
        src, dst = flat[i:i + block], out[i:i + block]
        b = buf[:src.size]
        np.copyto(b, src, casting="unsafe")
        np.copyto(dst, b, casting="unsafe")
    return out.reshape(x.shape)


def narrow_dtypes(n_rounds: int, shape=SHAPE) -> list:
    """bfloat16 and float16 rotate against their own copy floors, and the block-wise casts alone."""
    rows = []
    rng = np.random.default_rng(1)
    for dt in (ml_dtypes.bfloat16, np.float16):
        x = rng.standard_normal(shape, dtype=np.float32).astype(dt)
        o = np.empty_like(x)
        c = {"np.copyto": lambda: np.copyto(o, x), "x.copy()": lambda: x.copy(),
             "interleaved": lambda: rotate(x), "half": lambda: rotate(x, pairing="half"),
             "interleaved, 1 thread": one_thread(lambda: rotate(x)),
             "half, 1 thread": one_thread(lambda: rotate(x, pairing="half")),
             "casts": lambda: cast_round_trip(x)}
        t = rounds(c, n_rounds)
        for p in ("interleaved", "half", "interleaved, 1 thread", "half, 1 thread"):
            r = ratio(t, p, "x.copy()")
            rows.append((f"rotate {p}, {np.dtype(dt).name}", f"{np.median(t[p]) * 1e3:.1f} ms",
                         fmt_ratio(ratio(t, p, "np.copyto")), fmt_ratio(r), "x.copy() " + verdict(r, 3.0)))
        rows.append((f"casts alone: {np.dtype(dt).name} -> float32 -> {np.dtype(dt).name}, by blocks, 1 thread",
                     f"{np.median(t['casts']) * 1e3:.1f} ms", fmt_ratio(ratio(t, "casts", "np.copyto")),
                     fmt_ratio(ratio(t, "casts", "x.copy()")), "a floor for rotate"))
    return rows


def leading_shapes(n_rounds: int, rows_total: int = 8192, d: int = 128) -> list:
    """Same rows, different leading shapes, against one (1, rows, d) call: both pairings."""
    rng = np.random.default_rng(2)
    flat = rng.standard_normal((rows_total, d), dtype=np.float32)
    per_row = rng.integers(0, 4096, rows_total).astype(np.float64)
    cases = {
        "(1, rows, d), positions 0..rows-1": ((1, rows_total, d), None),
        "(rows, 1, d), positions 0": ((rows_total, 1, d), None),
        "(rows, 1, d), per-row positions": ((rows_total, 1, d), per_row.reshape(-1, 1)),
        "(1, rows, d), per-row positions": ((1, rows_total, d), per_row.reshape(1, -1)),
        "(rows/32, 32, 1, d), per-sequence positions": ((rows_total // 32, 32, 1, d), per_row[:rows_total // 32, None, None]),
        "(64, rows/64, d)": ((64, rows_total // 64, d), None),
        "(8, 8, rows/64, d), positions (8, 1, rows/64)": ((8, 8, rows_total // 64, d),
                                                            per_row[:rows_total // 8].reshape(8, 1, -1)),
    }
    out = []
    for p in ("interleaved", "half"):
        c = {name: (lambda s=s, pos=pos: rotate(flat.reshape(s), pos, pairing=p)) for name, (s, pos) in cases.items()}
        t = rounds(c, n_rounds)
        ref = "(1, rows, d), positions 0..rows-1"
        for name in cases:
            r = ratio(t, name, ref)
            out.append((p, name.replace("rows", str(rows_total)), f"{np.median(t[name]) * 1e3:.2f} ms", fmt_ratio(r),
                        verdict(r, 1.5)))
    return out


def scaling(n_rounds: int) -> list:
    """rotate / x.copy() of the same array, warm, both pairings, as seq, d, heads grow."""
    cases = [("seq", (8, s, 128)) for s in (256, 1024, 4096, 16384)]
    cases += [("d", (8, 2048, dd)) for dd in (32, 64, 128, 256)]
    cases += [("heads", (hh, 2048, 128)) for hh in (1, 4, 16, 64)]
    rng = np.random.default_rng(3)
    out = []
    for axis, shape in cases:
        x = rng.standard_normal(shape, dtype=np.float32)
        c = {"x.copy()": lambda: x.copy(), "interleaved": lambda: rotate(x), "half": lambda: rotate(x, pairing="half")}
        t = rounds(c, n_rounds)
        out.append((axis, str(shape), f"{np.median(t['x.copy()']) * 1e3:.2f} ms",
                    fmt_ratio(ratio(t, "interleaved", "x.copy()")), fmt_ratio(ratio(t, "half", "x.copy()"))))
    return out


# ---------------------------------------------------------------- teaching layer

def slider_steps(repeats: int = 15) -> dict:
    """Seconds of update + PNG per view and parameter, as a notebook slider step does: {name: array}."""
    cases = {
        "rotations: m": (RotationsView, "m", [4 + i % 40 for i in range(repeats)]),
        "rotations: d": (RotationsView, "d", [8 + 8 * (i % 8) for i in range(repeats)]),
        "rotations: base": (RotationsView, "base", [10 ** (1 + 0.25 * (i % 20)) for i in range(repeats)]),
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
        out[name] = np.array(times)
    return out


def browser_latencies() -> dict | None:
    """Run the browser test; it writes key-press-to-new-image latencies (ms) to LATENCY_FILE."""
    LATENCY_FILE.unlink(missing_ok=True)
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-s", str(ROOT / "tests" / "teaching" / "test_browser.py")],
                   cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return json.loads(LATENCY_FILE.read_text()) if LATENCY_FILE.exists() else None


def notebooks_wall_time() -> tuple[float, int]:
    """Execute every notebook in a fresh kernel (as nbmake does); total seconds and count."""
    import nbformat
    from nbclient import NotebookClient

    paths = sorted((ROOT / "notebooks").glob("*.ipynb"))
    t0 = time.perf_counter()
    for p in paths:
        nb = nbformat.read(p, as_version=4)
        client = NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(p.parent)}})
        client.execute(stderr=subprocess.DEVNULL)
    return time.perf_counter() - t0, len(paths)


def figures_wall_time() -> float:
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "rope_ref", "figures", "--out", tmp], check=True, stdout=subprocess.DEVNULL)
        return time.perf_counter() - t0


def machine() -> str:
    cpu = "unknown CPU"
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return (f"{cpu}, {os.cpu_count()} CPUs, numpy {np.__version__}, Python {sys.version.split()[0]}, "
            f"rope_ref.rotate on {threads()} threads for arrays of 2^20+ elements")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python benchmarks/bench.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=9, help="interleaved rounds per table (default 9)")
    parser.add_argument("--quick", action="store_true", help="small shapes, few rounds (a smoke run)")
    parser.add_argument("--skip-notebooks", action="store_true", help="do not time notebooks and figures")
    parser.add_argument("--no-peers", action="store_true", help="do not import torch, numexpr, JAX")
    parser.add_argument("--browser", action="store_true", help="also run the browser slider test for latencies")
    parser.add_argument("--sliders", action="store_true", help="only the slider tables (and the browser's with --browser)")
    args = parser.parse_args(argv)
    n, shape = (2, (2, 64, 32)) if args.quick else (args.rounds, SHAPE)
    print(f"rope_ref benchmark: {machine()}; medians of {n} interleaved rounds, [min-max] over rounds\n")

    if not args.sliders:
        rows, missing = main_shape(n, shape, not args.no_peers)
        print(f"float32 q, k {shape}, positions 0..{shape[-2] - 1} (pairs of calls unless noted)")
        print(table(["contender", "time", "x np.copyto", "x x.copy()", "target / note"], rows))
        if missing:
            print("not installed, skipped: " + ", ".join(missing))
        print("\nnarrow dtypes, one array of shape", shape)
        print(table(["contender", "time", "x np.copyto", "x x.copy()", "target"], narrow_dtypes(n, shape)))
        print("\nleading shapes: the same rows in one call each, ratio to (1, rows, d)")
        print(table(["pairing", "shape", "time", "ratio", "target"], leading_shapes(n, 256 if args.quick else 8192, shape[-1])))
        if not args.quick:
            print("\nscaling: warm rotate / x.copy() of the same array")
            print(table(["axis", "shape", "x.copy()", "interleaved", "half"], scaling(max(3, n // 2))))
    steps = slider_steps(3 if args.quick else 15)
    print(f"\nslider steps in Python (update + PNG), load average {os.getloadavg()[0]:.1f}")
    print(table(["view: parameter", "median", "p90", "target"],
                [(k, f"{np.median(v) * 1e3:.1f} ms", f"{np.percentile(v, 90) * 1e3:.1f} ms",
                  "median <= 50 ms: " + ("met" if np.median(v) <= 0.05 else "MISSED")) for k, v in steps.items()]))
    if args.browser or (LATENCY_FILE.exists() and not args.quick):
        lat = browser_latencies() if args.browser else json.loads(LATENCY_FILE.read_text())
        when = "this run" if args.browser else "the last browser test run, " + time.strftime(
            "%Y-%m-%d %H:%M UTC", time.gmtime(LATENCY_FILE.stat().st_mtime))
        print(f"\nbrowser: key press to new image (JupyterLab + Chromium), from {when}")
        if lat is None:
            print("browser test did not report (Chromium missing or the test failed)")
        else:
            print(table(["notebook: slider", "median", "p90", "target"],
                        [(k, f"{np.median(v):.0f} ms", f"{np.percentile(v, 90):.0f} ms",
                          "JupyterLab alone, no rope_ref" if k.startswith("00_round_trip") else
                          "p90 <= 100 ms: " + ("met" if np.percentile(v, 90) <= 100 else "MISSED"))
                         for k, v in lat.items()]))
    if not (args.quick or args.skip_notebooks or args.sliders):
        t_nb, count = notebooks_wall_time()
        print(f"\nexecute all {count} notebooks headless: {t_nb:.1f} s; python -m rope_ref figures: "
              f"{figures_wall_time():.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
