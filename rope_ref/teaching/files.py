"""How the teaching layer writes files: each one whole (a temporary file beside the target, then :func:`os.replace`),
so a reader, a crash or Ctrl-C never meets half a file."""

import os
import secrets
import shutil
import tempfile
from pathlib import Path


def output_folder(out, name: str, files=()) -> Path:
    """The absolute folder ``out`` names (``~`` expanded), if its nearest existing part is a folder this user may write
    in and none of ``files`` in it is anything but a file; else a TypeError or ValueError naming ``name``.  Nothing is
    left created."""
    text = os.fspath(out) if isinstance(out, (str, os.PathLike)) else None
    if not isinstance(text, str):
        raise TypeError(f"{name} must be a folder path (str or os.PathLike), got {type(out).__name__} {out!r:.60}")
    if not text.strip() or "\0" in text:
        raise ValueError(f"{name} must be a folder path, got {text!r}")
    folder = Path(os.path.abspath(os.path.expanduser(text)))
    try:
        existing = next(path for path in (folder, *folder.parents) if path.exists())
    except OSError as exc:          # a name too long for the system
        raise ValueError(f"{name} must be a folder path the system accepts, got {text!r:.80} ({exc.strerror})") \
            from None
    try:                            # a file made and gone: os.access grants root everything, even /proc
        tempfile.TemporaryFile(dir=existing).close()
    except OSError:
        raise ValueError(f"{name} must be a folder this user may write in, got {folder} ({existing} is not)") from None
    taken = [str(folder / f) for f in files if os.path.lexists(folder / f) and not (folder / f).is_file()]
    if taken:
        raise ValueError(f"{name} must have only files where files go, got a folder or other non-file at {taken}")
    return folder


def write_atomically(path: Path | str, data: bytes) -> Path:
    """Write ``data`` to ``path`` as one whole file (its folder created if missing), keeping the permission bits of
    the file it replaces (a new file gets those the umask allows)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    try:
        with open(tmp, "xb") as f:      # created new, with the mode the umask allows
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if path.is_file():
            shutil.copymode(path, tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path
