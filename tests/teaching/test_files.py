"""rope_ref.teaching.files: each file written whole, never through a symbolic link (issue 22)."""

import os
import stat

import pytest

import rope_ref.teaching.files as files
from rope_ref.teaching.files import check_targets, write_atomically


def test_a_file_is_replaced_whole_and_keeps_its_mode(tmp_path):
    target = tmp_path / "a.png"
    target.write_bytes(b"old")
    os.chmod(target, 0o640)
    write_atomically(target, b"new bytes")
    assert target.read_bytes() == b"new bytes"
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.png"], "no temporary file left"


def test_a_new_file_gets_the_umask_mode(tmp_path):
    old = os.umask(0o027)
    try:
        write_atomically(tmp_path / "n.svg", b"x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "n.svg").st_mode) == 0o640    # not mkstemp's 0o600


def test_a_symbolic_link_is_refused_and_its_target_untouched(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "a.png").symlink_to(victim)
    with pytest.raises(ValueError, match="a.png is a symbolic link"):
        write_atomically(tmp_path / "out" / "a.png", b"png")
    assert victim.read_text() == "precious"
    with pytest.raises(ValueError, match="is a symbolic link"):
        check_targets(tmp_path / "out", ["b.png", "a.png"])


def test_a_link_that_appears_after_the_check_is_replaced_not_followed(tmp_path, monkeypatch):
    # the race: a link made between check_targets and os.replace; the link itself is replaced
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / "a.png").symlink_to(victim)
    monkeypatch.setattr(files, "check_targets", lambda folder, names: [])
    write_atomically(tmp_path / "a.png", b"png")
    assert victim.read_text() == "precious"
    assert not (tmp_path / "a.png").is_symlink() and (tmp_path / "a.png").read_bytes() == b"png"


def test_a_folder_with_a_target_name_is_refused(tmp_path):
    (tmp_path / "a.png").mkdir()
    with pytest.raises(ValueError, match="is not a regular file"):
        write_atomically(tmp_path / "a.png", b"png")


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "a.png"
    target.write_bytes(b"old")

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(files.os, "replace", broken_replace)
    with pytest.raises(OSError, match="No space left"):
        write_atomically(target, b"new")
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.png"]


def test_write_all_refuses_a_link_before_drawing_anything(tmp_path, monkeypatch):
    import rope_ref.teaching.figures as figures
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "clock_hands.svg").symlink_to(victim)
    monkeypatch.setattr(figures, "FIGURES", {name: (lambda: pytest.fail("drew a figure")) for name in figures.FIGURES})
    with pytest.raises(ValueError, match="clock_hands.svg is a symbolic link"):
        figures.write_all(tmp_path / "out")
    assert victim.read_text() == "precious"
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["clock_hands.svg"]
