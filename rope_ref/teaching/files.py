"""How the teaching layer writes files: each one whole (a temporary file beside the target, then :func:`os.replace`),
so a reader, a crash or Ctrl-C never meets half a file."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


def output_folder(out, argument: str = "out") -> Path:
    """The absolute folder ``out`` names (``~`` expanded) if its nearest existing part is a folder we may write in;
    else a ``TypeError`` or ``ValueError`` naming ``argument``.  Nothing is created."""
    if not isinstance(out, (str, os.PathLike)) or not isinstance(os.fspath(out), str):
        raise TypeError(f"{argument}: expected a folder path (str or os.PathLike), got {type(out).__name__} {out!r}")
    text = os.fspath(out)
    if not text.strip() or "\0" in text:
        raise ValueError(f"{argument}: expected a folder path, got {text!r}")
    folder = Path(os.path.abspath(os.path.expanduser(text)))
    existing = next(path for path in (folder, *folder.parents) if path.exists())
    if not existing.is_dir():
        raise ValueError(f"{argument}: {existing} is a file, expected a folder for {folder}")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"{argument}: cannot write in {existing}")
    return folder


def check_targets(folder: Path | str, names, argument: str = "") -> list[str]:
    """The ``names`` that exist in ``folder`` (to be replaced); a ``ValueError`` (starting with ``argument``, if
    given) if one of them is a folder or another thing that is not a file."""
    existing = [name for name in names if os.path.lexists(Path(folder) / name)]
    for name in existing:
        if not (Path(folder) / name).is_file():
            prefix = f"{argument}: " if argument else ""
            raise ValueError(f"{prefix}{Path(folder) / name} exists and is not a file; remove it or choose another")
    return existing


def write_atomically(path: Path | str, data: bytes) -> Path:
    """Write ``data`` to ``path`` as one whole file (its folder created if missing), keeping the permission bits of
    the file it replaces (a new file gets those the umask allows)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data: expected bytes, got {type(data).__name__}")
    path = Path(path)
    check_targets(path.parent, [path.name], "path")
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_file():
        mode = stat.S_IMODE(path.stat().st_mode)
    else:
        umask = os.umask(0o022)
        os.umask(umask)
        mode = 0o666 & ~umask
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
