"""How the teaching layer writes files: whole files only (a temporary file beside the target, then
:func:`os.replace`), never through a symbolic link, with Ctrl-C held while a file is written.  The promises in full:
docs/command_line.md.
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import stat
import sys
import tempfile
import threading
from pathlib import Path

REASONS = {errno.ELOOP: "a loop of symbolic links", errno.ENAMETOOLONG: "a name too long for the filesystem",
           errno.EROFS: "a read-only filesystem", errno.EACCES: "permission denied",
           errno.ENOENT: "the filesystem accepts no new entries there", errno.EPERM: "operation not permitted"}
#: Ctrl-C's state: ``seen`` once SIGINT arrived; ``held`` while a file is written (the interrupt waits).
INTERRUPT = {"seen": False, "held": False}


def output_folder(out, argument: str = "out") -> Path:
    """The absolute folder ``out`` names (``~`` expanded, links resolved), if files can be written there; else a
    ``TypeError`` or ``ValueError`` that names ``argument``.  Nothing is created."""
    text = os.fspath(out) if isinstance(out, (str, os.PathLike)) else None
    if not isinstance(text, str):
        raise TypeError(f"{argument}: expected a folder path (str or os.PathLike), got {type(out).__name__} {out!r}")
    if not text.strip() or "\0" in text:
        raise ValueError(f"{argument}: expected a folder path, got {text!r}")
    expanded = os.path.expanduser(text)
    if expanded.startswith("~"):
        raise ValueError(f"{argument}: cannot expand {text.split(os.sep)[0]}: no such user")
    try:
        folder = Path(expanded).resolve()
    except (RuntimeError, OSError):      # RuntimeError: Python 3.11's "Symlink loop"
        raise ValueError(f"{argument}: cannot resolve {text}: a loop of symbolic links") from None
    if folder == Path(folder.anchor):
        raise ValueError(f"{argument}: {folder} is the root of the filesystem; name a folder for the files "
                         "(e.g. /tmp/figures)")
    if os.path.islink(expanded) and not folder.exists():
        raise ValueError(f"{argument}: {text} is a symbolic link to {folder}, which does not exist")
    existing = folder
    while True:                     # the nearest part of the path that exists
        try:
            mode = os.stat(existing).st_mode
            break
        except (FileNotFoundError, NotADirectoryError):
            existing = existing.parent
        except OSError as exc:      # a loop of links, a name too long, ...
            raise ValueError(f"{argument}: cannot use {folder}: {REASONS.get(exc.errno, exc.strerror)}") from None
    if not stat.S_ISDIR(mode):
        raise ValueError(f"{argument}: {folder} is an existing file, expected a folder" if existing == folder
                         else f"{argument}: {folder} lies under the file {existing}, expected a folder")
    try:                            # ask the filesystem itself: root passes os.access, /proc and /sys refuse here
        os.rmdir(tempfile.mkdtemp(dir=existing, prefix=".rope_ref-probe-"))
    except OSError as exc:
        raise ValueError(f"{argument}: cannot write in {existing}: {REASONS.get(exc.errno, exc.strerror)}") from None
    return folder


def stop_if_interrupted() -> None:
    """Raise ``KeyboardInterrupt`` if Ctrl-C arrived under :func:`handling_interrupts`, even if it was ignored."""
    if INTERRUPT["seen"]:
        raise KeyboardInterrupt


def _on_sigint(signum, frame) -> None:
    INTERRUPT["seen"] = True
    if not INTERRUPT["held"]:
        raise KeyboardInterrupt


@contextlib.contextmanager
def handling_interrupts():
    """Within: Ctrl-C is recorded (see :func:`stop_if_interrupted`) and waits while a file is written."""
    INTERRUPT.update(seen=False, held=False)
    in_main_thread = threading.current_thread() is threading.main_thread()     # where signal handlers are set
    previous = signal.signal(signal.SIGINT, _on_sigint) if in_main_thread else None
    hook = sys.unraisablehook       # quiet about an ignored KeyboardInterrupt: it is recorded already
    sys.unraisablehook = lambda report: None if isinstance(report.exc_value, KeyboardInterrupt) else hook(report)
    try:
        yield INTERRUPT
    finally:
        if in_main_thread:
            signal.signal(signal.SIGINT, previous)
        sys.unraisablehook = hook
        INTERRUPT.update(seen=False, held=False)


def check_targets(folder: Path | str, names, argument: str = "") -> list[str]:
    """The ``names`` that exist in ``folder`` (to be replaced); a ``ValueError`` (its message starting with
    ``argument``, if given) if one is a symbolic link or not a regular file."""
    folder = Path(folder)
    argument = f"{argument}: " if argument else ""
    existing = [name for name in names if os.path.lexists(folder / name)]
    for target in (folder / name for name in existing):
        if target.is_symlink():
            raise ValueError(f"{argument}{target} is a symbolic link; rope_ref neither writes through links nor "
                             "replaces them: remove it or choose another folder")
        if not target.is_file():
            raise ValueError(f"{argument}{target} exists and is not a regular file; remove it or choose another folder")
    return existing


def _mode_for(path: Path) -> int:
    """The permission bits of the file being replaced, or those a new file gets under the umask."""
    if path.is_file() and not path.is_symlink():
        return stat.S_IMODE(path.stat().st_mode)
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


def write_atomically(path: Path | str, data: bytes) -> Path:
    """Write ``data`` to ``path`` as one whole file (its folder created if missing); a ``ValueError`` as
    :func:`check_targets` and :func:`output_folder` give."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data: expected bytes, got {type(data).__name__}")
    folder = output_folder(Path(path).parent if isinstance(path, (str, os.PathLike)) else path, "path")
    path = folder / Path(path).name
    check_targets(folder, [path.name])
    folder.mkdir(parents=True, exist_ok=True)
    stop_if_interrupted()
    mode = _mode_for(path)
    INTERRUPT["held"] = True         # Ctrl-C waits until the file is whole or gone
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)       # replaces a link itself, never its target
    except BaseException:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        raise
    finally:
        INTERRUPT["held"] = False
    stop_if_interrupted()
    return path
