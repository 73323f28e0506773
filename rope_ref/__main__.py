"""Command line of rope_ref.

  python -m rope_ref [--d D] [--seq N] [--out DIR]
                          the main job: check every identity, then regenerate the figures,
                          then print where the notebooks are
  python -m rope_ref check [--d D] [--seq N]
                          check every identity only (a table; exit status 1 if one fails)
  python -m rope_ref figures [--out DIR]
                          regenerate every figure only (PNG and SVG)
  python -m rope_ref site --out DIR
                          build the course as static HTML pages that work offline

Each sub-command takes only its own options (`python -m rope_ref COMMAND --help`); an option
it does not use is an error.  Options may stand before or after the sub-command.  Run from a
source checkout, figures go to the checkout's figures/ folder; from an installed copy, to
./figures in the current directory; --out DIR chooses another folder.  Files are written whole
(a temporary file beside each, then renamed into place); files of the same names are replaced,
symbolic links are refused, nothing else in the folder is touched.  A bad option prints one
line and exits with status 2 before any work, creating nothing.
"""

from __future__ import annotations

import argparse
import errno
import os
import stat
import sys
import tempfile
import time
from pathlib import Path

from .checks import format_table, run_checks

PACKAGE_DIR = Path(__file__).resolve().parent
PROG = "python -m rope_ref"


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


class UsageError(Exception):
    """A bad command line: one line on stderr, exit status 2, nothing done."""


# ---- --out: where files may go, checked before any work and without creating anything ---------------

def output_folder(text: str, label: str = "--out") -> Path:
    """The absolute folder ``--out`` names, if files can be written there; else :class:`UsageError`.

    Nothing is created: the folder itself is made later, when the files are written.  Refused: an empty
    path, a filesystem root, a path that cannot be resolved (a loop of symbolic links), a name longer than
    the filesystem allows, an existing non-folder (or a path under one), and a place where the nearest
    existing folder does not accept a new entry (permissions, a read-only mount, /proc, /sys).
    """
    if not text.strip():
        raise UsageError(f"{label}: expected a folder path, got {text!r}")
    try:
        out = Path(text).expanduser().resolve()
    except (RuntimeError, OSError) as exc:      # RuntimeError: Python 3.11's "Symlink loop"
        raise UsageError(f"{label}: cannot resolve {text}: a loop of symbolic links ({exc})") from None
    if out == Path(out.anchor):
        raise UsageError(f"{label}: {out} is the root of the filesystem; name a folder for the files "
                         "(e.g. /tmp/figures)")
    existing = out
    while True:                     # the nearest part of the path that exists
        try:
            st = os.stat(existing)
            break
        except FileNotFoundError:
            existing = existing.parent
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise UsageError(f"{label}: cannot resolve {existing}: a loop of symbolic links") from None
            if exc.errno == errno.ENAMETOOLONG:
                raise UsageError(f"{label}: {out}: a name too long for the filesystem") from None
            if exc.errno == errno.ENOTDIR:
                existing = existing.parent
                continue
            raise UsageError(f"{label}: cannot use {existing}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        if existing == out:
            raise UsageError(f"{label}: {out} is an existing file, expected a folder")
        raise UsageError(f"{label}: {out} lies under the file {existing}, expected a folder")
    name_max = os.pathconf(existing, "PC_NAME_MAX") if hasattr(os, "pathconf") else 255
    long_names = [part for part in out.relative_to(existing).parts if len(os.fsencode(part)) > name_max]
    if long_names or len(os.fsencode(str(out))) >= 4096:
        raise UsageError(f"{label}: {out}: a name too long for the filesystem (at most {name_max} bytes "
                         "per name)")
    if _read_only(existing):
        raise UsageError(f"{label}: cannot write in {existing}: a read-only filesystem")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"{label}: cannot write in {existing}: permission denied")
    try:                            # root passes os.access: ask the filesystem itself (/proc, /sys refuse here)
        if existing == out:
            fd, probe = tempfile.mkstemp(dir=out, prefix=".rope_ref-probe-")
            os.close(fd)
            os.unlink(probe)
        else:
            os.rmdir(tempfile.mkdtemp(dir=existing, prefix=".rope_ref-probe-"))
    except OSError as exc:
        raise UsageError(f"{label}: cannot write in {existing}: {exc.strerror}") from None
    return out


def _read_only(path: Path) -> bool:
    return hasattr(os, "statvfs") and bool(os.statvfs(path).f_flag & os.ST_RDONLY)



# ---- the sub-commands ----------------------------------------------------------------------------------

def _check(args) -> int:
    t0 = time.perf_counter()
    checks = run_checks(d=args.d, seq=args.seq)
    print(f"rope_ref identities: d={args.d}, positions 0..{args.seq - 1}, float64")
    print(format_table(checks))
    failed = [c for c in checks if not c.ok]
    print(f"{len(checks) - len(failed)} of {len(checks)} identities hold ({time.perf_counter() - t0:.1f} s)")
    return 1 if failed else 0


def _figures(args, before=None) -> int:
    """Regenerate the figures; ``before`` (the main job's checks) runs once the folder has been checked."""
    try:    # the teaching layer needs matplotlib; the identity checks do not
        from .teaching.files import check_targets
        from .teaching.figures import FIGURES, write_all
    except ImportError as exc:
        status = before() if before else 0
        print(f"{PROG} figures needs the teaching dependencies ({exc.name} is missing): "
              "pip install -e '.[teaching]' in the checkout", file=sys.stderr)
        return status or 1
    out = args.out if args.out is not None else output_folder(str(default_figures_dir()), "figures folder")
    try:
        replaced = check_targets(out, [f"{name}.{fmt}" for name in FIGURES for fmt in ("png", "svg")])
    except ValueError as exc:
        raise UsageError(f"--out: {exc}" if args.out is not None else str(exc)) from None
    status = 0
    if before:
        status = before()
        print()
    t0 = time.perf_counter()
    paths = write_all(out)
    note = f" ({len(replaced)} replaced files of the same names)" if replaced else ""
    print(f"wrote {len(paths)} figure files (PNG and SVG) to {out} in {time.perf_counter() - t0:.1f} s{note}")
    return status


def _site(args) -> int:
    prog = f"{PROG} site"
    try:    # the site builder needs the teaching dependencies
        from .teaching.files import check_targets
        from .teaching.site import build_site, course_notebooks
    except ImportError as exc:
        print(f"{prog} needs the teaching dependencies ({exc.name} is missing): pip install -e '.[teaching]' "
              "in the checkout", file=sys.stderr)
        return 1
    root = source_checkout()
    if root is None:
        print(f"{prog}: error: the notebooks are not part of an installed package; run it in a clone of the "
              "rope_ref repository", file=sys.stderr)
        return 1
    notebooks = course_notebooks(root / "notebooks")
    try:
        check_targets(args.out, [f"{p.stem}.html" for p in notebooks] + ["index.html"])
    except ValueError as exc:
        raise UsageError(f"--out: {exc}") from None
    t0 = time.perf_counter()
    try:
        index = build_site(args.out, notebooks)
    except RuntimeError as exc:     # a notebook failed
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 1
    print(f"built {len(notebooks)} executed notebooks as HTML in {time.perf_counter() - t0:.1f} s; open")
    print(index)
    return 0


# ---- the command line ------------------------------------------------------------------------------------

class _Parser(argparse.ArgumentParser):
    """argparse, but a bad argument is one line on stderr and exit status 2 (no usage dump)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


class _NotAnOption(argparse.Action):
    """An option another sub-command takes: an error here, naming the options this one does take."""

    def __init__(self, option_strings, dest, takes="", **kwargs):
        self.takes = takes
        super().__init__(option_strings, dest, nargs="?", help=argparse.SUPPRESS)

    def __call__(self, parser, namespace, values, option_string=None):
        parser.error(f"{option_string} is not an option of {parser.prog.split()[-1]}; it takes {self.takes}")


#: Upper bounds for the checks' sizes: run_checks builds 64 dense d x d matrices and several (seq, d)
#: float64 arrays, so these keep one run within a few hundred MB instead of a MemoryError traceback.
MAX_D, MAX_SEQ, MAX_ELEMENTS = 512, 1 << 20, 1 << 23
DEFAULTS = {"d": 128, "seq": 4096, "out": None}
OPTIONS = {None: ("d", "seq", "out"), "check": ("d", "seq"), "figures": ("out",), "site": ("out",)}


def _integer(text: str, rule: str, ok) -> int:
    """``text`` as an integer that satisfies ``ok``; else one error stating ``rule`` and what was given."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {rule}, got {text!r}") from None
    if not ok(value):
        raise argparse.ArgumentTypeError(f"expected {rule}, got {value}")
    return value


def _even_positive(text: str) -> int:
    return _integer(text, f"an even integer from 2 to {MAX_D}", lambda v: 2 <= v <= MAX_D and v % 2 == 0)


def _seq_length(text: str) -> int:
    return _integer(text, f"an integer from 2 to {MAX_SEQ}", lambda v: 2 <= v <= MAX_SEQ)


HELP = {"d": "feature dimension for the checks, an even integer from 2 to 512 (default 128)",
        "seq": "number of positions for the checks, from 2 to 1048576 (default 4096)",
        "out": "folder for the figures (default: the checkout's figures/, else ./figures); created if missing",
        "site_out": "folder for index.html and one page per notebook (required); created if missing"}


def _add_options(parser, names, prefix=""):
    """The options ``names`` for ``parser``, and every other option as an error naming what it takes."""
    takes = ", ".join(f"--{n}" for n in names)
    kinds = {"d": dict(type=_even_positive, metavar="D"), "seq": dict(type=_seq_length, metavar="N"),
             "out": dict(metavar="DIR")}
    for name in ("d", "seq", "out"):
        if name in names:
            helptext = HELP["site_out"] if prefix == "" and parser.prog.endswith(" site") else HELP[name]
            parser.add_argument(f"--{name}", dest=prefix + name, default=argparse.SUPPRESS, help=helptext,
                                **kinds[name])
        else:
            parser.add_argument(f"--{name}", action=_NotAnOption, takes=takes, default=argparse.SUPPRESS)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_options(parser, OPTIONS[None], prefix="top_")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser, title="sub-commands",
                                metavar="{check,figures,site}")
    raw = argparse.RawDescriptionHelpFormatter
    check = sub.add_parser("check", help="check every identity only", formatter_class=raw, description=(
        "Check every identity of RoFormer section 3 that rope_ref implements (the forms agree, q.k depends\n"
        "only on n - m, R is orthogonal, the decay bound, attention and linear attention, ...) on one case:\n"
        "d features, positions 0..N-1, float64. Prints a table; exit status 1 if an identity fails.\n"
        "Writes no file. --d times --seq may be at most 2^23."))
    figures = sub.add_parser("figures", help="regenerate every figure only (PNG and SVG)", formatter_class=raw,
                             description=(
        "Regenerate every figure of the README and the course as NAME.png (150 dpi) and NAME.svg,\n"
        "byte-identical run to run. Each file is written to a temporary file beside it and renamed into\n"
        "place, so an interrupted run leaves each file old or new, never cut. Files of the same names are\n"
        "replaced; a symbolic link or folder with such a name is refused; nothing else is touched."))
    site = sub.add_parser("site", help="build the course as static HTML (executes every notebook)",
                          formatter_class=raw, description=(
        "Execute every notebook in notebooks/ (in file-name order) and write index.html and one page per\n"
        "notebook (NAME.html) into --out DIR. The pages need no network and contain no scripts. The folder\n"
        "is created, and files written, only after every notebook has run; files of the same names are\n"
        "replaced (each written whole), symbolic links refused, nothing else touched. Needs a checkout."))
    for name, command in [("check", check), ("figures", figures), ("site", site)]:
        _add_options(command, OPTIONS[name])
    return parser


def parse(argv=None) -> argparse.Namespace:
    """The command line as a namespace with ``command``, ``d``, ``seq``, ``out`` (not yet checked on disk)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    command = args.command
    prog = " ".join(filter(None, [PROG, command]))
    for name in DEFAULTS:
        before, after = getattr(args, "top_" + name, None), getattr(args, name, None)
        if before is not None and command is not None:
            if name not in OPTIONS[command]:
                takes = ", ".join(f"--{n}" for n in OPTIONS[command])
                raise UsageError(f"--{name} is not an option of {command}; it takes {takes}")
            if after is not None:
                raise UsageError(f"--{name} is given twice (before and after {command})")
        setattr(args, name, after if after is not None else before if before is not None else DEFAULTS[name])
    if command == "site" and args.out is None:
        raise UsageError("--out is required: the folder for index.html and the pages")
    if command in (None, "check") and args.d * args.seq > MAX_ELEMENTS:
        raise UsageError(f"--d {args.d} times --seq {args.seq} is {args.d * args.seq} values; expected at most "
                         f"{MAX_ELEMENTS} (2^23)")
    args.prog = prog
    return args


def main(argv=None) -> int:
    try:
        args = parse(argv)
        if args.out is not None:        # checked before any work, as argparse checks the others
            args.out = output_folder(args.out)
        if args.command == "check":
            return _check(args)
        if args.command == "figures":
            return _figures(args)
        if args.command == "site":
            return _site(args)
        status = _figures(args, before=lambda: _check(args))
        print("\n" + notebooks_hint())
        return status
    except UsageError as exc:
        prog = " ".join(filter(None, [PROG, getattr(exc, "command", None) or _command_of(argv)]))
        print(f"{prog}: error: {exc} (see {prog} --help)", file=sys.stderr)
        return 2


def _command_of(argv) -> str | None:
    words = sys.argv[1:] if argv is None else argv
    return next((w for w in words if w in OPTIONS), None)


if __name__ == "__main__":
    sys.exit(main())
