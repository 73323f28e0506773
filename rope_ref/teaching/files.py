"""How the teaching layer writes files: whole files only, never through a symbolic link.

Every file that :func:`~rope_ref.teaching.figures.write_all` and :func:`~rope_ref.teaching.site.build_site`
write goes through :func:`write_atomically`: the bytes go to a temporary file in the target's own folder
(``.NAME.XXXXXXXX.tmp``), are flushed to disk, and the temporary file is renamed over the target with
:func:`os.replace` (atomic on POSIX and Windows).  A run killed at any moment leaves each target either the
old whole file or the new whole file; at worst a stray ``.NAME.*.tmp`` file, safe to delete, stays behind.

Symbolic links are refused, not followed: :func:`check_targets` raises a ``ValueError`` when a target's
name is a symbolic link (or anything but a regular file), before anything is written.  Should a link
appear between that check and the rename, :func:`os.replace` replaces the link itself; the file it
pointed to is never written.  An existing regular file with a target's name is replaced (its
permission bits are kept); no other file in the folder is touched.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path


def check_targets(folder: Path | str, names) -> list[str]:
    """Refuse before any work: raise ``ValueError`` if ``folder`` exists and is not a folder, or if any of
    ``names`` in it is a symbolic link or not a regular file.  Returns the names that exist (and will be
    replaced)."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{folder} is not a folder")
    existing = [name for name in names if (folder / name).is_symlink() or (folder / name).exists()]
    for name in existing:
        if (folder / name).is_symlink():
            raise ValueError(f"{folder / name} is a symbolic link; rope_ref neither writes through links nor "
                             "replaces them: remove it or choose another folder")
        if not (folder / name).is_file():
            raise ValueError(f"{folder / name} exists and is not a regular file; remove it or choose another folder")
    return existing


def _mode_for(path: Path) -> int:
    """The permission bits of the file being replaced, or those a new file gets under the umask."""
    if path.is_file() and not path.is_symlink():
        return stat.S_IMODE(path.stat().st_mode)
    umask = os.umask(0o022)
    os.umask(umask)
    return 0o666 & ~umask


def write_atomically(path: Path | str, data: bytes) -> Path:
    """Write ``data`` to ``path`` as one whole file: a temporary file beside it, then :func:`os.replace`.

    Raises ``ValueError`` if ``path`` is a symbolic link or not a regular file (see :func:`check_targets`).
    """
    path = Path(path)
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data: expected bytes, got {type(data).__name__}")
    check_targets(path.parent, [path.name])
    mode = _mode_for(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)       # replaces a link itself, never its target
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
