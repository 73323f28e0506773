"""How the teaching layer writes files: each one whole (a temporary file beside the target, then :func:`os.replace`),
so a reader, a crash or Ctrl-C never meets half a file."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


def write_atomically(path: Path | str, data: bytes) -> Path:
    """Write ``data`` to ``path`` as one whole file (its folder created if missing), keeping the permission bits of
    the file it replaces (a new file gets those the umask allows)."""
    path = Path(path)
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
