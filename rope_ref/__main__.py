"""Command line of rope_ref.

  python -m rope_ref [--d D] [--seq N] [--out DIR]   check every identity, regenerate the figures, name the notebooks
  python -m rope_ref check [--d D] [--seq N]         check every identity only (exit status 1 if one fails)
  python -m rope_ref figures [--out DIR]             regenerate every figure only (PNG and SVG)
  python -m rope_ref site --out DIR                  build the course as static HTML pages that work offline

Each sub-command takes only its own options, before or after it (`python -m rope_ref COMMAND --help`).  Figures
go to the checkout's figures/ (from an installed copy, ./figures) unless --out DIR; files are written whole,
symbolic links refused.  Exit status 2: a bad option, refused in one line before any work; 130: Ctrl-C, in one
line, leaving no temporary file; 1: a failure such as a full disk, in one line.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import difflib
import inspect
import os
import sys
import threading
import time
from pathlib import Path

from .checks import format_table, run_checks
from .teaching.files import INTERRUPT, check_targets, handling_interrupts, output_folder, stop_if_interrupted

PACKAGE_DIR = Path(__file__).resolve().parent
PROG = "python -m rope_ref"
#: Upper bounds for the checks' sizes: one run stays within a few hundred MB (64 dense d x d matrices, (seq, d) arrays).
MAX_D, MAX_SEQ, MAX_ELEMENTS = 512, 1 << 20, 1 << 23
#: The options of the main job (no sub-command) and of each sub-command.
OPTIONS = {None: ("d", "seq", "out"), "check": ("d", "seq"), "figures": ("out",), "site": ("out",)}
DEFAULTS = {"d": 128, "seq": 4096, "out": None}


def source_checkout() -> Path | None:
    """The root of the source checkout this package was imported from, or None if installed."""
    root = PACKAGE_DIR.parent
    pyproject = root / "pyproject.toml"
    checkout = pyproject.is_file() and 'name = "rope_ref"' in pyproject.read_text() and (root / "notebooks").is_dir()
    return root if checkout else None


def default_figures_dir() -> Path:
    """The checkout's figures/ when run from a checkout, else ./figures of the current directory."""
    return (source_checkout() or Path.cwd()) / "figures"


def notebooks_hint() -> str:
    """How to open the notebooks: an absolute path, or where to get them."""
    root = source_checkout()
    root_flag = " --allow-root" if hasattr(os, "geteuid") and os.geteuid() == 0 else ""
    if root is None:
        return ("The notebooks are not part of an installed package: they are in the notebooks/ folder of the "
                "rope_ref source repository. Clone it, then run  jupyter lab" + root_flag + " notebooks/")
    return f"Next: open the notebooks with  jupyter lab{root_flag} {root / 'notebooks'}"


def _integer_type(rule: str, low: int, high: int, step: int = 1):
    """An argparse type: the text as an integer from ``low`` to ``high`` (a multiple of ``step``)."""
    def integer(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {rule}, got {text!r}") from None
        if not (low <= value <= high and value % step == 0):
            raise argparse.ArgumentTypeError(f"expected {rule}, got {value}")
        return value
    return integer


def _print_identity_table(args, refuse=None) -> int:
    """Check every identity of RoFormer section 3 that rope_ref implements on d features, positions 0..N-1,
    float64, and print a table (exit status 1 if one fails).  Writes no file; --d times --seq is at most 2^23."""
    t0 = time.perf_counter()
    checks = run_checks(d=args.d, seq=args.seq)
    print(f"rope_ref identities: d={args.d}, positions 0..{args.seq - 1}, float64")
    print(format_table(checks))
    failed = [c for c in checks if not c.ok]
    print(f"{len(checks) - len(failed)} of {len(checks)} identities hold ({time.perf_counter() - t0:.1f} s)")
    return 1 if failed else 0


def _teaching_missing(command: str, exc: ImportError) -> int:
    if (exc.name or "rope_ref").partition(".")[0] == "rope_ref":
        raise exc   # a broken import inside rope_ref is a bug to show, not a missing dependency
    print(f"{PROG} {command} needs the teaching dependencies ({exc.name} is missing): pip install -e "
          "'.[teaching]' in the checkout", file=sys.stderr)
    return 1


def _figures(args, refuse, before=None) -> int:
    """Regenerate every figure of the README and the course as NAME.png (150 dpi) and NAME.svg, byte-identical
    run to run, each written whole.  Files of the same names are replaced, symbolic links refused."""
    try:    # the teaching layer needs matplotlib; the identity checks do not
        from .teaching.figures import FIGURES, write_all
    except ImportError as exc:
        if before:      # the main job: the checks still run
            before()
        return _teaching_missing("figures", exc)
    where = "--out" if args.out else "the figures folder"
    try:
        out = args.out or output_folder(default_figures_dir(), where)
        replaced = check_targets(out, [f"{name}.{fmt}" for name in FIGURES for fmt in ("png", "svg")], where)
    except ValueError as exc:
        refuse(str(exc))
    status = before() if before else 0
    if before:
        print()
    t0 = time.perf_counter()
    paths = write_all(out)
    note = f" ({len(replaced)} replaced files of the same names)" if replaced else ""
    print(f"wrote {len(paths)} figure files (PNG and SVG) to {out} in {time.perf_counter() - t0:.1f} s{note}")
    return status


def _in_worker(function, *args):
    """``function(*args)`` in a worker thread: in the main thread, nbclient would take Ctrl-C over."""
    outcome = {}

    def work():
        try:
            outcome["result"] = function(*args)
        except BaseException as exc:
            outcome["error"] = exc
        finally:
            with contextlib.suppress(RuntimeError):     # close the event loop nbclient ran in this thread
                asyncio.get_event_loop_policy().get_event_loop().close()
    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    try:
        worker.join()
    except KeyboardInterrupt:       # the worker stops at its next file (write_atomically sees the interrupt)
        worker.join(timeout=5)
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


def _site(args, refuse) -> int:
    """Execute every notebook in notebooks/ and write index.html and one page per notebook into --out DIR, after
    all have run.  The pages need no network and hold no script.  Needs a checkout."""
    try:    # the site builder needs the teaching dependencies
        from .teaching.site import build_site, course_notebooks
    except ImportError as exc:
        return _teaching_missing("site", exc)
    root = source_checkout()
    if root is None:
        print(f"{PROG} site: error: the notebooks are not part of an installed package; run it in a clone of the "
              "rope_ref repository", file=sys.stderr)
        return 1
    notebooks = course_notebooks(root / "notebooks")
    t0 = time.perf_counter()
    try:
        index = _in_worker(build_site, args.out, notebooks)
    except ValueError as exc:       # a link or folder among the pages' names, refused before any notebook ran
        refuse(f"--out: {exc}")
    except RuntimeError as exc:     # a notebook failed
        print(f"{PROG} site: error: {exc}", file=sys.stderr)
        return 1
    print(f"built {len(notebooks)} executed notebooks as HTML in {time.perf_counter() - t0:.1f} s; open")
    print(index)
    return 0


class _Parser(argparse.ArgumentParser):
    """argparse, with an error as one line on stderr and exit status 2 (no usage dump)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


COMMANDS = {"check": _print_identity_table, "figures": _figures, "site": _site}
#: Each option's type, metavar and help.
KINDS = {"d": (_integer_type(f"an even integer from 2 to {MAX_D}", 2, MAX_D, step=2), "D",
               f"feature dimension for the checks, an even integer from 2 to {MAX_D} (default 128)"),
         "seq": (_integer_type(f"an integer from 2 to {MAX_SEQ}", 2, MAX_SEQ), "N",
                 f"number of positions for the checks, from 2 to {MAX_SEQ} (default 4096)"),
         "out": (str, "DIR", "folder for the files, created if missing (figures: by default the "
                                       "checkout's figures/, else ./figures)")}


def build_parser() -> tuple[argparse.ArgumentParser, dict]:
    """The parser, and the parser of each sub-command by name (options before a sub-command go to ``before_d``...)."""
    raw = argparse.RawDescriptionHelpFormatter
    parser = _Parser(prog=PROG, description=__doc__, formatter_class=raw)
    subparsers = parser.add_subparsers(dest="command", parser_class=_Parser, title="sub-commands")
    commands = {name: subparsers.add_parser(name, formatter_class=raw, description=inspect.cleandoc(run.__doc__))
                for name, run in COMMANDS.items()}
    for command, target in [(None, parser), *commands.items()]:
        for name in OPTIONS[command]:
            kind, metavar, helptext = KINDS[name]
            target.add_argument(f"--{name}", dest=name if command else f"before_{name}", type=kind,
                                metavar=metavar, help=helptext)
    commands["site"].usage = f"{PROG} site [-h] --out DIR"      # required, though it may also stand before `site`
    return parser, commands


def parse_command_line(parser, commands, argv=None) -> argparse.Namespace:
    """The command line as a namespace with ``command``, ``d``, ``seq``, ``out`` (``out`` checked on disk)."""
    args, unknown = parser.parse_known_args(argv)
    command = args.command
    here = commands.get(command, parser)
    takes = ", ".join(f"--{name}" for name in OPTIONS[command])
    if unknown:
        option = unknown[0].split("=")[0]
        if option in (f"--{name}" for name in DEFAULTS):
            here.error(f"{option} is not an option of {command}; it takes {takes}")
        guess = difflib.get_close_matches(option, [f"--{name}" for name in OPTIONS[command]], n=1)
        here.error(f"unrecognized arguments: {' '.join(unknown)}" + (f"; did you mean {guess[0]}?" if guess else ""))
    for name, default in DEFAULTS.items():
        before, after = getattr(args, f"before_{name}", None), getattr(args, name, None)
        if before is not None and name not in OPTIONS[command]:
            here.error(f"--{name} is not an option of {command}; it takes {takes}")
        if before is not None and after is not None:
            here.error(f"--{name} is given twice (before and after {command})")
        setattr(args, name, next((value for value in (after, before) if value is not None), default))
    if command == "site" and args.out is None:      # not required=True: `--out DIR site` gives it too
        here.error("--out is required: the folder for index.html and the pages")
    try:
        args.out = None if args.out is None else output_folder(args.out, "--out")
    except ValueError as exc:
        here.error(str(exc))
    if command in (None, "check") and args.d * args.seq > MAX_ELEMENTS:
        here.error(f"--d {args.d} times --seq {args.seq} is {args.d * args.seq} values; expected at most "
                   f"{MAX_ELEMENTS} (2^23)")
    return args


def main(argv=None) -> int:
    """Run the command line; the exit status (see the module's docstring)."""
    prog = " ".join([PROG, *(word for word in (argv or sys.argv[1:]) if word in COMMANDS)][:2])
    with handling_interrupts():
        try:
            parser, commands = build_parser()
            args = parse_command_line(parser, commands, argv)
            if args.command is not None:
                status = COMMANDS[args.command](args, commands[args.command].error)
            else:       # the main job: the checks, the figures, where the notebooks are
                status = _figures(args, parser.error, before=lambda: _print_identity_table(args))
                print("\n" + notebooks_hint())
            stop_if_interrupted()       # a Ctrl-C whose KeyboardInterrupt Python ignored
            sys.stdout.flush()          # a closed pipe (`| head -1`) is met here, not at the interpreter's exit
            return status
        except SystemExit as stop:      # argparse's exit: after --help (0) or a one-line error (2)
            return stop.code
        except BaseException as exc:
            INTERRUPT["held"] = True    # a second Ctrl-C does not cut this short
            if INTERRUPT["seen"] or isinstance(exc, KeyboardInterrupt):
                print(f"{prog}: interrupted", file=sys.stderr)
                return 130
            if isinstance(exc, BrokenPipeError):        # `... | head -1`: the reader has gone; say nothing
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                return 1
            if isinstance(exc, OSError):
                print(f"{prog}: error: {exc.strerror or exc}" + (f": {exc.filename}" if exc.filename else ""),
                      file=sys.stderr)
                return 1
            raise


if __name__ == "__main__":
    STATUS = main()
    if STATUS == 130:       # after Ctrl-C, a library's clean-up at exit (a notebook kernel's) may fail: not news
        sys.unraisablehook = lambda report: None
    sys.exit(STATUS)
