"""Command line of rope_ref.

  python -m rope_ref            check every identity, then regenerate the figures
  python -m rope_ref check      check every identity (table; exit status 1 if one fails)
  python -m rope_ref figures    regenerate the figures (PNG and SVG)
  python -m rope_ref site --out DIR
                                build the course as static HTML pages that work offline

Run from a source checkout, figures go to the checkout's figures/ folder; from an installed
copy, to ./figures in the current directory.  --out DIR chooses another folder.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from .checks import format_table, run_checks

PACKAGE_DIR = Path(__file__).resolve().parent


def source_checkout() -> Path | None:
    """The root of the source checkout this package was imported from, or None if installed."""
    root = PACKAGE_DIR.parent
    pyproject = root / "pyproject.toml"
    if pyproject.is_file() and 'name = "rope_ref"' in pyproject.read_text() and (root / "notebooks").is_dir():
        return root
    return None


def default_figures_dir() -> Path:
    """The checkout's figures/ when run from a checkout, else ./figures of the current directory."""
    root = source_checkout()
    return (root / "figures") if root is not None else Path.cwd() / "figures"


def notebooks_hint() -> str:
    """How to open the notebooks: an absolute path, or where to get them."""
    root = source_checkout()
    root_flag = " --allow-root" if hasattr(os, "geteuid") and os.geteuid() == 0 else ""
    if root is None:
        return ("The notebooks are not part of an installed package: they are in the notebooks/ folder of the "
                "rope_ref source repository. Clone it, then run  jupyter lab" + root_flag + " notebooks/")
    return f"Next: open the notebooks with  jupyter lab{root_flag} {root / 'notebooks'}"


def _check(args) -> int:
    t0 = time.perf_counter()
    checks = run_checks(d=args.d, seq=args.seq)
    print(f"rope_ref identities: d={args.d}, positions 0..{args.seq - 1}, float64")
    print(format_table(checks))
    failed = [c for c in checks if not c.ok]
    print(f"{len(checks) - len(failed)} of {len(checks)} identities hold ({time.perf_counter() - t0:.1f} s)")
    return 1 if failed else 0


def _figures(args) -> int:
    try:    # the teaching layer needs matplotlib; the identity checks do not
        from .teaching.figures import write_all
    except ImportError as exc:
        print(f"python -m rope_ref figures needs the teaching dependencies ({exc.name} is missing): "
              "pip install 'rope_ref[teaching]'", file=sys.stderr)
        return 1
    out = args.out if args.out is not None else default_figures_dir()
    t0 = time.perf_counter()
    paths = write_all(out)
    print(f"wrote {len(paths)} figure files (PNG and SVG) to {out} in {time.perf_counter() - t0:.1f} s")
    return 0


def _site(args) -> int:
    prog = "python -m rope_ref site"
    try:    # the site builder needs the teaching dependencies
        from .teaching.site import build_site
    except ImportError as exc:
        print(f"{prog} needs the teaching dependencies ({exc.name} is missing): pip install 'rope_ref[teaching]'",
              file=sys.stderr)
        return 1
    root = source_checkout()
    if root is None:
        print(f"{prog}: error: the notebooks are not part of an installed package; run it in a clone of the "
              "rope_ref repository", file=sys.stderr)
        return 1
    out = args.out
    notebooks = sorted((root / "notebooks").glob("*.ipynb"))
    t0 = time.perf_counter()
    try:
        index = build_site(out, notebooks)
    except RuntimeError as exc:     # a notebook failed
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 1
    print(f"built {len(notebooks)} executed notebooks as HTML in {time.perf_counter() - t0:.1f} s; open")
    print(index)
    return 0


def _out_dir(prog: str, text: str) -> Path | None:
    """The --out folder, created; None after a one-line error on stderr (empty, a file, not creatable)."""
    if not text.strip():
        print(f"{prog}: error: --out: expected a folder path, got {text!r} (see --help)", file=sys.stderr)
        return None
    out = Path(text).resolve()
    if out.exists() and not out.is_dir():
        print(f"{prog}: error: --out: {out} is an existing file, expected a folder (see --help)", file=sys.stderr)
        return None
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        print(f"{prog}: error: --out: cannot create the folder {out}: {exc.strerror or exc}", file=sys.stderr)
        return None
    return out


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line on stderr and exit status 2 (no usage dump)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


#: Upper bounds for the checks' sizes: run_checks builds 64 dense d x d matrices and several (seq, d)
#: float64 arrays, so these keep one run within a few hundred MB instead of a MemoryError traceback.
MAX_D, MAX_SEQ, MAX_ELEMENTS = 512, 1 << 20, 1 << 23


def _even_positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive even integer, got {text!r}") from None
    if value <= 0 or value % 2:
        raise argparse.ArgumentTypeError(f"expected a positive even integer, got {value}")
    if value > MAX_D:
        raise argparse.ArgumentTypeError(f"expected a positive even integer up to {MAX_D}, got {value}")
    return value


def _seq_length(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 2, got {text!r}") from None
    if value < 2 or value > MAX_SEQ:
        raise argparse.ArgumentTypeError(f"expected an integer from 2 to {MAX_SEQ}, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    checks = argparse.ArgumentParser(add_help=False)
    checks.add_argument("--d", type=_even_positive, default=argparse.SUPPRESS,
                        help="feature dimension for the checks, a positive even integer (default 128)")
    checks.add_argument("--seq", type=_seq_length, default=argparse.SUPPRESS,
                        help="number of positions for the checks, at least 2 (default 4096)")
    figures = argparse.ArgumentParser(add_help=False)
    figures.add_argument("--out", default=argparse.SUPPRESS,
                         help="folder for the figures (default: the checkout's figures/, else ./figures)")
    parser = _Parser(prog="python -m rope_ref", description=__doc__, parents=[checks, figures],
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    sub.add_parser("check", parents=[checks], help="check every identity only")
    sub.add_parser("figures", parents=[figures], help="regenerate every figure only")
    site = sub.add_parser("site", help="build the course as static HTML (executes every notebook)")
    site.add_argument("--out", required=True, help="folder for index.html and one page per notebook")
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    for name, default in [("d", 128), ("seq", 4096), ("out", None)]:
        if not hasattr(args, name):
            setattr(args, name, default)
    if args.d * args.seq > MAX_ELEMENTS:
        parser.error(f"--d {args.d} times --seq {args.seq} is {args.d * args.seq} values; expected at most "
                     f"{MAX_ELEMENTS} (2^23)")
    if args.out is not None:        # checked (and created) before any work, as argparse checks the others
        args.out = _out_dir(" ".join(filter(None, ["python -m rope_ref", args.command])), args.out)
        if args.out is None:
            return 2
    if args.command == "check":
        return _check(args)
    if args.command == "figures":
        return _figures(args)
    if args.command == "site":
        return _site(args)
    status = _check(args)
    print()
    status = _figures(args) or status
    print("\n" + notebooks_hint())
    return status


if __name__ == "__main__":
    sys.exit(main())
