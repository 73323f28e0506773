"""Command line: ``python -m rope_ref [check | figures [--out DIR]]``.

With no sub-command: verify every identity (table, exit 1 on failure), then
regenerate the figures into ``figures/`` and say how to open the notebooks.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from .checks import format_table, run_checks

REPO_FIGURES = Path(__file__).resolve().parent.parent / "figures"


def _check(args) -> int:
    t0 = time.perf_counter()
    checks = run_checks(d=args.d, seq=args.seq)
    print(f"rope_ref identities: d={args.d}, positions 0..{args.seq - 1}, float64")
    print(format_table(checks))
    failed = [c for c in checks if not c.ok]
    print(f"{len(checks) - len(failed)} of {len(checks)} identities hold ({time.perf_counter() - t0:.1f} s)")
    return 1 if failed else 0


def _figures(args) -> int:
    from .figures import write_all

    t0 = time.perf_counter()
    paths = write_all(Path(args.out))
    for p in paths:
        print(f"wrote {p}")
    print(f"{len(paths)} files in {time.perf_counter() - t0:.1f} s")
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rope_ref", description=__doc__.split("\n\n")[0])
    parser.add_argument("--d", type=int, default=128, help="feature dimension for the checks (default 128)")
    parser.add_argument("--seq", type=int, default=4096, help="number of positions for the checks (default 4096)")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("check", help="verify the identities only")
    fig = sub.add_parser("figures", help="regenerate every figure (PNG and SVG)")
    fig.add_argument("--out", default=str(REPO_FIGURES), help="output folder (default: the repo's figures/)")
    args = parser.parse_args(argv)
    if args.command == "check":
        return _check(args)
    if args.command == "figures":
        return _figures(args)
    status = _check(args)
    args.out = str(REPO_FIGURES)
    print()
    _figures(args)
    print("\nNext: open the notebooks with  jupyter lab notebooks/")
    return status


if __name__ == "__main__":
    sys.exit(main())
