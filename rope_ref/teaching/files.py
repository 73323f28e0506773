"""How the teaching layer writes files: whole files only, never through a symbolic link.

Every file that :func:`~rope_ref.teaching.figures.write_all` and :func:`~rope_ref.teaching.site.build_site`
write goes through :func:`write_atomically`: the bytes go to a temporary file in the target's own folder
(``.NAME.XXXXXXXX.tmp``), are flushed to disk, and the temporary file is renamed over the target with
:func:`os.replace`, which is atomic on POSIX and Windows.  A run killed at any moment therefore leaves each
target either as it was (the old whole file) or as the new whole file; at worst a stray ``.NAME.*.tmp``
file stays behind, which is safe to delete.

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
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        return []
    if stat.S_ISLNK(st.st_mode):
        st = os.stat(folder)
    if not stat.S_ISDIR(st.st_mode):
        raise ValueError(f"{folder} is not a folder")
    existing = []
    for name in names:
        path = folder / name
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(st.st_mode):
            raise ValueError(f"{path} is a symbolic link; rope_ref neither writes through links nor replaces "
                             "them: remove it or choose another folder")
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{path} exists and is not a regular file; remove it or choose another folder")
        existing.append(name)
    return existing


def _mode_for(path: Path) -> int:
    """The permission bits of the file being replaced, or those a new file gets under the umask."""
    try:
        st = os.lstat(path)
        if stat.S_ISREG(st.st_mode):
            return stat.S_IMODE(st.st_mode)
    except FileNotFoundError:
        pass
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
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path
