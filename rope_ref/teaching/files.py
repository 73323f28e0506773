"""How the teaching layer writes files: each one whole (a temporary file beside the target, then :func:`os.replace`),
so a reader, a crash or Ctrl-C never meets half a file."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


def output_folder(out, argument: str = "out") -> Path:
    """The absolute folder ``out`` names (``~`` expanded); a ``TypeError`` or ``ValueError`` naming ``argument`` if
    it is no path or a file stands where one of its folders goes.  Nothing is created."""
    if not isinstance(out, (str, os.PathLike)):
        raise TypeError(f"{argument}: expected a folder path (str or os.PathLike), got {type(out).__name__} {out!r}")
    if not str(out).strip():
        raise ValueError(f"{argument}: expected a folder path, got {out!r}")
    folder = Path(os.path.abspath(os.path.expanduser(out)))
    existing = next(path for path in (folder, *folder.parents) if path.exists())
    if not existing.is_dir():
        raise ValueError(f"{argument}: {existing} is a file, expected a folder for {folder}")
    return folder


def check_targets(folder: Path | str, names) -> None:
    """A ``ValueError`` if one of ``names`` in ``folder`` exists and is not a file (a folder where a file goes)."""
    for path in (Path(folder) / name for name in names):
        if os.path.lexists(path) and not path.is_file():
            raise ValueError(f"{path} exists and is not a file; remove it or choose another")


def write_atomically(path: Path | str, data: bytes) -> Path:
    """Write ``data`` to ``path`` as one whole file (its folder created if missing), keeping the permission bits of
    the file it replaces (a new file gets those the umask allows)."""
    path = Path(path)
    check_targets(path.parent, [path.name])
    path.parent.mkdir(parents=True, exist_ok=True)
    umask = os.umask(0o022)
    os.umask(umask)
    mode = stat.S_IMODE(path.stat().st_mode) if path.is_file() else 0o666 & ~umask
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
