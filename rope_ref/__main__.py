"""Command line of rope_ref.

  python -m rope_ref [--d D] [--seq N] [--out DIR]   check every identity, write every figure, name the notebooks
  python -m rope_ref check [--d D] [--seq N]         check every identity only
  python -m rope_ref figures [--out DIR]             write every figure only (PNG and SVG)
  python -m rope_ref site --out DIR                  build the course as static HTML pages that work offline

Figures go to the checkout's figures/ (from an installed copy, ./figures) unless --out DIR.  Exit status: 0 done;
1 an identity or a notebook failed, or a file could not be written; 2 a bad option, before any work; 130 Ctrl-C.
"""

import argparse
import os
import sys
import threading
import time
from pathlib import Path

from .checks import format_table, run_checks

PACKAGE_DIR = Path(__file__).resolve().parent
PROG = "python -m rope_ref"
MAX_D = 512
MAX_VALUES = 2**23      # --d times --seq: the checks build (seq, d) arrays and 64 dense d x d matrices
OPTIONS = {None: ("--d", "--seq", "--out"), "check": ("--d", "--seq"), "figures": ("--out",), "site": ("--out",)}


def source_checkout() -> Path | None:
    """The root of the source checkout this package was imported from, or None if installed."""
    root = PACKAGE_DIR.parent
    return root if (root / "pyproject.toml").is_file() and (root / "notebooks").is_dir() else None


def parse_command_line(argv=None) -> argparse.Namespace:
    """The command line as ``command`` (None: the main job), ``d``, ``seq`` and ``out``, checked before any work:
    ``out`` an absolute Path (:func:`rope_ref.teaching.files.output_folder`), without --out the checkout's figures/
    or, from an installed copy, ./figures (never into site-packages)."""
    parser = argparse.ArgumentParser(prog=PROG, usage=argparse.SUPPRESS, description=__doc__,   # errors: one line
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", nargs="?", choices=["check", "figures", "site"], help="see above")
    parser.add_argument("--d", type=int, metavar="D", help=f"feature dimension, even, 2 to {MAX_D} (default 128)")
    parser.add_argument("--seq", type=int, metavar="N", help="positions 0..N-1, N at least 2 (default 4096)")
    parser.add_argument("--out", metavar="DIR", help="folder for the files, created if missing")
    args = parser.parse_args(argv)
    takes = OPTIONS[args.command]
    for option in ("--d", "--seq", "--out"):
        if getattr(args, option[2:]) is not None and option not in takes:
            parser.error(f"{option}: {args.command} takes {' '.join(takes)} only")
    if args.command == "site" and args.out is None:
        parser.error("site needs --out DIR")
    args.d, args.seq = 128 if args.d is None else args.d, 4096 if args.seq is None else args.seq
    if not (2 <= args.d <= MAX_D and args.d % 2 == 0):
        parser.error(f"--d: expected an even D from 2 to {MAX_D}, got {args.d}")
    if not 2 <= args.seq <= MAX_VALUES // args.d:
        parser.error(f"--seq: expected N from 2 to 2^23 / D = {MAX_VALUES // args.d} (D = {args.d}), got {args.seq}")
    if args.command != "check":
        from .teaching.files import output_folder                # standard library only
        try:
            from .teaching.figures import FIGURES as figures     # on demand: the oracle needs no matplotlib
        except ImportError:                                     # the figures step says what is missing
            figures = {}
        files = [] if args.command == "site" else [f"{name}.{fmt}" for name in figures for fmt in ("png", "svg")]
        try:
            args.out = output_folder((source_checkout() or Path.cwd()) / "figures" if args.out is None else args.out,
                                     "--out", files)
        except ValueError as exc:
            parser.error(str(exc))
    return args


def print_identities(d: int, seq: int) -> int:
    """Print the identity table on d features at positions 0..seq-1; the exit status (1 if one fails)."""
    t0 = time.perf_counter()
    checks = run_checks(d=d, seq=seq)
    print(f"rope_ref identities: d={d}, positions 0..{seq - 1}, float64")
    print(format_table(checks))
    passed = sum(check.ok for check in checks)
    print(f"{passed} of {len(checks)} identities hold ({time.perf_counter() - t0:.1f} s)")
    return 0 if passed == len(checks) else 1


def write_figures(out: Path) -> None:
    """Write NAME.png and NAME.svg for every figure into ``out``."""
    from .teaching.figures import write_all      # on demand: the oracle needs no matplotlib
    t0 = time.perf_counter()
    print(f"wrote {len(write_all(out))} figure files (PNG and SVG) to {out} in {time.perf_counter() - t0:.1f} s")


def build_course_site(out: Path) -> None:
    """Execute every notebook of the checkout and write the course's pages into ``out`` (a failed notebook: a
    RuntimeError).  In a worker thread, so that Ctrl-C reaches us as KeyboardInterrupt, not nbclient's errors."""
    from .teaching.site import build_site, course_notebooks
    notebooks = course_notebooks((source_checkout() or Path.cwd()) / "notebooks")     # FileNotFoundError if none
    t0 = time.perf_counter()
    outcome = {}

    def work():
        try:
            outcome["index"] = build_site(out, notebooks)
        except BaseException as exc:      # raised again in the main thread
            outcome["error"] = exc
    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    try:
        worker.join()
    except KeyboardInterrupt:
        worker.join(timeout=10)     # the notebook's kernel had Ctrl-C too: let nbclient shut it down
        raise
    if "error" in outcome:
        raise outcome["error"]
    print(f"built {len(notebooks)} executed notebooks as HTML in {time.perf_counter() - t0:.1f} s; open")
    print(outcome["index"])


def main(argv=None) -> int:
    """Run the command line; the exit status (see the module's docstring)."""
    try:
        args = parse_command_line(argv)
        status = print_identities(args.d, args.seq) if args.command in (None, "check") else 0
        if args.command in (None, "figures"):
            write_figures(args.out)
        if args.command == "site":
            build_course_site(args.out)
        if args.command is None:                    # how to open the notebooks: their path, or where to get them
            root = source_checkout()
            where = root / "notebooks" if root else "notebooks/  (in a clone of the rope_ref repository: not installed)"
            print(f"\nNext: open the notebooks with  jupyter lab {where}  (as root add --allow-root)")
        sys.stdout.flush()          # a closed pipe (`check | head -1`) is met here, not at the interpreter's exit
        return status
    except SystemExit as stop:      # argparse: after --help (0) or a one-line error (2)
        return stop.code
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except ImportError as exc:
        if (exc.name or "rope_ref").startswith("rope_ref"):
            raise                   # a broken import inside rope_ref is a bug to show
        print(f"{PROG}: error: {exc.name} is missing: pip install -e '.[teaching]' in the checkout", file=sys.stderr)
        return 1
    except BrokenPipeError:         # the reader of stdout has gone: say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (OSError, ValueError, RuntimeError) as exc:   # a full disk, a folder where a file goes, a notebook failed
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    STATUS = main()
    if STATUS == 130:       # after Ctrl-C, nbclient's clean-up at exit may race its own, in the worker: not news
        sys.unraisablehook = lambda report: None
    sys.exit(STATUS)
