"""rope_ref.teaching.files: each file written whole (a temporary file, then os.replace)."""

import os
import stat

import pytest

import rope_ref.teaching.files as files
from rope_ref.teaching.files import output_folder, write_atomically


def test_a_file_is_replaced_whole_keeping_its_mode_and_a_link_is_replaced_not_followed(tmp_path):
    target = tmp_path / "a.png"
    target.write_bytes(b"old")
    os.chmod(target, 0o640)
    write_atomically(target, b"new bytes")
    assert target.read_bytes() == b"new bytes" and stat.S_IMODE(os.stat(target).st_mode) == 0o640
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / "b.png").symlink_to(victim)
    write_atomically(tmp_path / "b.png", b"png")
    assert victim.read_text() == "precious"
    assert not (tmp_path / "b.png").is_symlink() and (tmp_path / "b.png").read_bytes() == b"png"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.png", "b.png", "victim.txt"], "no temporary file left"


def test_a_new_file_gets_the_umask_mode_in_a_folder_made_for_it(tmp_path):
    old = os.umask(0o027)
    try:
        write_atomically(tmp_path / "new" / "n.svg", b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "new" / "n.svg").st_mode) == 0o640    # not mkstemp's 0o600


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "a.png"
    target.write_bytes(b"old")
    (tmp_path / "b.png").mkdir()
    with pytest.raises(OSError, match="b.png"):                         # a folder in the way: Python names it
        write_atomically(tmp_path / "b.png", b"png")

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", broken_replace)
    with pytest.raises(OSError, match="No space left"):
        write_atomically(target, b"new")
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.png", "b.png"]


@pytest.mark.parametrize("out, target, error", [
    (None, "b.svg", TypeError), (b"bytes", "b.svg", TypeError), ("", "b.svg", ValueError),
    ("a\0b", "b.svg", ValueError), ("taken.txt", "b.svg", ValueError), ("taken.txt/sub", "b.svg", ValueError),
    ("d", "a.svg", ValueError), ("d", "link.png", ValueError), ("/proc/nope", "b.svg", ValueError)])
def test_a_bad_output_folder_or_a_non_file_target_is_named_and_nothing_is_created(tmp_path, out, target, error):
    (tmp_path / "taken.txt").write_text("x")
    (tmp_path / "d" / "a.svg").mkdir(parents=True)
    (tmp_path / "d" / "link.png").symlink_to(tmp_path / "gone")      # a broken link: not a file either
    with pytest.raises(error, match="^folder_arg"):
        output_folder(tmp_path / out if isinstance(out, str) and out else out, "folder_arg", ["new.png", target])
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["a.svg", "d", "link.png", "taken.txt"]
    assert output_folder(f"{tmp_path}/new/../d", "folder_arg", ["new.png"]) == tmp_path / "d"
