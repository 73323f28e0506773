"""``python -m rope_ref``: the identity table, exit statuses, where figures go, argument errors."""

import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import rope_ref.checks as checks
from rope_ref.__main__ import default_figures_dir, main, notebooks_hint, source_checkout

ROOT = Path(__file__).resolve().parents[1]


def _run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "rope_ref", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


@pytest.mark.slow
def test_check_command_passes_and_prints_table():
    res = _run("check")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "d=128, positions 0..4095, float64" in res.stdout
    for words in ["R orthogonal", "decay bound at 0", "linear attention", "paper eq", "max abs error",
                  "fast rotate == plain elementwise"]:
        assert words in res.stdout
    assert "FAIL" not in res.stdout


@pytest.mark.slow
def test_options_are_accepted_after_the_sub_command():
    res = _run("check", "--d", "16", "--seq", "100")
    assert res.returncode == 0, res.stderr
    assert "d=16, positions 0..99" in res.stdout


@pytest.mark.slow
@pytest.mark.parametrize("args,words", [
    (["check", "--d", "7"], "--d: expected an even integer from 2 to 512, got 7"),
    (["--seq", "x"], "--seq: expected an integer from 2 to 1048576, got 'x'"),
    (["check", "--d", "-4"], "--d: expected an even integer from 2 to 512, got -4"),
    (["bogus"], "invalid choice"),
])
def test_bad_values_give_one_line_and_status_2(args, words):
    res = _run(*args)
    assert res.returncode == 2
    assert words in res.stderr
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr


@pytest.mark.slow
def test_help_is_plain_text():
    res = _run("--help")
    assert res.returncode == 0
    assert "``" not in res.stdout and ":func:" not in res.stdout
    assert "figures" in res.stdout and "check" in res.stdout


@pytest.mark.slow
def test_check_command_exits_nonzero_when_an_identity_fails(monkeypatch, capsys):
    real = checks.run_checks

    def broken(**kw):
        out = real(**kw)
        out[0].error = np.inf
        return out

    monkeypatch.setattr("rope_ref.__main__.run_checks", broken)
    assert main(["check", "--seq", "256"]) == 1
    assert "FAIL" in capsys.readouterr().out


def test_from_the_checkout_figures_go_to_its_figures_folder():
    assert source_checkout() == ROOT
    assert default_figures_dir() == ROOT / "figures"
    hint = notebooks_hint()
    assert str(ROOT / "notebooks") in hint and Path(hint.split()[-1]).is_absolute()


def test_from_an_installed_copy_figures_go_to_the_current_directory(tmp_path, monkeypatch):
    import rope_ref.__main__ as cli
    monkeypatch.setattr(cli, "PACKAGE_DIR", tmp_path / "site-packages" / "rope_ref")
    monkeypatch.chdir(tmp_path)
    assert cli.source_checkout() is None
    assert cli.default_figures_dir() == tmp_path / "figures"
    assert "source repository" in cli.notebooks_hint()


@pytest.mark.slow
def test_figures_out_prints_the_absolute_path(tmp_path, monkeypatch, capsys):
    import rope_ref.teaching.figures as figures
    monkeypatch.setattr(figures, "FIGURES", {"fig2_long_term_decay": figures.FIGURES["fig2_long_term_decay"]})
    monkeypatch.chdir(tmp_path)
    assert main(["figures", "--out", "rel"]) == 0
    out = capsys.readouterr().out
    assert str(tmp_path / "rel") in out
    assert (tmp_path / "rel" / "fig2_long_term_decay.png").exists()


@pytest.mark.slow
def test_a_copy_outside_the_checkout_never_writes_into_its_own_folder(tmp_path):
    import shutil
    site = tmp_path / "site-packages"
    shutil.copytree(ROOT / "rope_ref", site / "rope_ref", ignore=shutil.ignore_patterns("__pycache__"))
    work = tmp_path / "work"
    work.mkdir()
    code = ("import rope_ref, rope_ref.__main__ as m; print(rope_ref.__file__); "
            "print(m.default_figures_dir()); print(m.notebooks_hint())")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=work,
                         env={**__import__("os").environ, "PYTHONPATH": str(site)}, check=True)
    imported, figures_dir, hint = res.stdout.strip().splitlines()
    assert imported.startswith(str(site))
    assert Path(figures_dir) == work / "figures"
    assert "source repository" in hint


@pytest.mark.slow
@pytest.mark.parametrize("make_out,words", [
    (lambda tmp: (tmp / "taken.txt", (tmp / "taken.txt").write_text("x"))[0], "is an existing file, expected a folder"),
    (lambda tmp: (tmp / "f", (tmp / "f").write_text("x"))[0] / "sub", "lies under the file"),
])
def test_site_with_a_bad_out_gives_one_line_and_status_2(tmp_path, make_out, words):
    res = _run("site", "--out", str(make_out(tmp_path)))
    assert res.returncode == 2, res.stdout + res.stderr
    assert words in res.stderr
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr


@pytest.mark.slow
def test_site_needs_out():
    res = _run("site")
    assert res.returncode == 2 and "--out" in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_site_builds_every_notebook_and_prints_the_absolute_index_path(tmp_path, monkeypatch, capsys):
    import rope_ref.teaching.site as site
    calls = []

    def fake_build(out, notebooks):
        calls.append((out, list(notebooks)))
        assert not out.exists(), "the CLI leaves making the folder to build_site, after the notebooks ran"
        out.mkdir(parents=True)
        (out / "index.html").write_text("<html></html>")
        return out / "index.html"

    monkeypatch.setattr(site, "build_site", fake_build)
    monkeypatch.chdir(tmp_path)
    assert main(["site", "--out", "rel/site"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert Path(last).is_absolute() and Path(last) == tmp_path / "rel" / "site" / "index.html"
    assert calls[0][1] == sorted((ROOT / "notebooks").glob("*.ipynb")) and len(calls[0][1]) >= 7


@pytest.mark.slow
@pytest.mark.parametrize("args,words", [
    (["check", "--seq", "99999999999999999999"], "--seq: expected an integer from 2 to 1048576"),
    (["check", "--d", "10000000"], "--d: expected an even integer from 2 to 512, got 10000000"),
    (["check", "--d", "512", "--seq", "100000"], "--d 512 times --seq 100000 is 51200000 values"),
])
def test_sizes_that_would_exhaust_memory_are_argument_errors(args, words):
    # before the bounds these ended in a MemoryError / numpy ValueError traceback (exit status 1)
    res = _run(*args)
    assert res.returncode == 2, res.stderr[-500:]
    assert words in res.stderr
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr


@pytest.mark.parametrize("kind,words", [("file", "is an existing file, expected a folder"),
                                        ("under a file", "lies under the file"),
                                        ("empty", "expected a folder path, got ''")])
@pytest.mark.parametrize("command", [["figures"], [], ["site"]], ids=["figures", "default", "site"])
def test_a_bad_out_is_one_line_and_status_2_before_any_work(tmp_path, capsys, monkeypatch, command, kind, words):
    # figures (and the default check + figures) used to end in a FileExistsError traceback after the checks ran,
    # and --out '' built the site in the current folder
    import rope_ref.__main__ as cli
    monkeypatch.setattr(cli, "_print_identity_table", lambda args: pytest.fail("ran the checks before refusing --out"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "taken.txt").write_text("x")
    out = {"file": "taken.txt", "under a file": "taken.txt/sub", "empty": ""}[kind]
    assert main(command + ["--out", out]) == 2
    err = capsys.readouterr().err
    assert words in err and "--out" in err and len(err.strip().splitlines()) == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken.txt"]


# ---- each sub-command its own options (issue 19) -----------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("command,words,own,foreign", [
    ("check", "Check every identity", ["--d", "--seq"], ["--out"]),
    ("figures", "Regenerate every figure", ["--out"], ["--d", "--seq"]),
    ("site", "Execute every notebook", ["--out"], ["--d", "--seq"]),
])
def test_each_sub_command_has_its_own_help(command, words, own, foreign):
    res = _run(command, "--help")
    assert res.returncode == 0, res.stderr
    assert words in res.stdout, res.stdout
    for option in own:
        assert option in res.stdout, (command, option)
    for option in foreign:
        assert option not in res.stdout, (command, option)


@pytest.mark.slow
@pytest.mark.parametrize("args,words", [
    (["--out", "D", "check"], "--out is not an option of check; it takes --d, --seq"),
    (["check", "--out", "D"], "--out is not an option of check; it takes --d, --seq"),
    (["--d", "64", "figures"], "--d is not an option of figures; it takes --out"),
    (["figures", "--d", "64"], "--d is not an option of figures; it takes --out"),
    (["figures", "--seq", "64", "--out", "D"], "--seq is not an option of figures; it takes --out"),
    (["--seq", "64", "site", "--out", "D"], "--seq is not an option of site; it takes --out"),
    (["site", "--out", "D", "--d", "8"], "--d is not an option of site; it takes --out"),
    (["--out", "D", "site", "--out", "E"], "--out is given twice (before and after site)"),
])
def test_an_option_a_sub_command_does_not_use_is_an_error(tmp_path, args, words):
    # before: `--out D check` created D and ignored it, `--d 64 figures` ignored --d
    res = _run(*args, cwd=tmp_path)
    assert res.returncode == 2, res.stdout + res.stderr
    assert words in res.stderr, res.stderr
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert list(tmp_path.iterdir()) == [], "nothing is created"


@pytest.mark.parametrize("args", [["--out", "rel/site", "site"], ["site", "--out", "rel/site"]])
def test_out_works_before_or_after_site(tmp_path, monkeypatch, capsys, args):
    # before: `--out D site` said "--out is required"
    import rope_ref.teaching.site as site
    monkeypatch.setattr(site, "build_site", lambda out, notebooks: (out.mkdir(parents=True),
                                                                      out / "index.html")[1])
    monkeypatch.chdir(tmp_path)
    assert main(args) == 0, capsys.readouterr().err
    assert capsys.readouterr().out.strip().splitlines()[-1] == str(tmp_path / "rel" / "site" / "index.html")


@pytest.mark.slow
@pytest.mark.parametrize("text", ["abc", "1", "1048577", "2.5"])
def test_one_wording_per_rule(text):
    res = _run("check", "--seq", text)
    assert res.returncode == 2
    shown = text if not text.isdigit() else str(int(text))
    expected = f"--seq: expected an integer from 2 to 1048576, got {shown if text.isdigit() else repr(text)}"
    assert expected in res.stderr, res.stderr


def test_a_site_that_fails_creates_no_folder(tmp_path, capsys, monkeypatch):
    # before: site made its --out folder, then failed on the first notebook
    import rope_ref.teaching.site as site
    bad = tmp_path / "bad.ipynb"
    import nbformat
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 / 0")],
                                            metadata={"kernelspec": {"name": "python3", "language": "python",
                                                                     "display_name": "Python 3"}}), bad)
    monkeypatch.setattr(site, "course_notebooks", lambda folder: [bad])
    assert main(["site", "--out", str(tmp_path / "out" / "site")]) == 1
    assert "bad.ipynb failed: ZeroDivisionError" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow
def test_the_main_job_checks_writes_the_figures_and_names_the_notebooks(tmp_path, monkeypatch, capsys):
    import rope_ref.teaching.figures as figures
    monkeypatch.setattr(figures, "FIGURES", {"fig2_long_term_decay": figures.FIGURES["fig2_long_term_decay"]})
    assert main(["--d", "8", "--seq", "64", "--out", str(tmp_path / "figs")]) == 0
    out = capsys.readouterr().out
    assert "d=8, positions 0..63" in out and "identities hold" in out
    assert sorted(p.name for p in (tmp_path / "figs").iterdir()) == ["fig2_long_term_decay.png",
                                                                     "fig2_long_term_decay.svg"]
    assert out.strip().splitlines()[-1].startswith("Next: open the notebooks with")


# ---- where files may go (issue 22) ---------------------------------------------------------------------------

def _listing(folder: Path) -> list:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def _bad_out(tmp_path, kind):
    """An --out that cannot work, and the words its error must contain."""
    if kind == "root":
        return "/", "is the root of the filesystem"
    if kind == "proc":
        return "/proc/rope_ref_cli_test/figs", "cannot write in /proc"
    if kind == "sys":
        return "/sys/rope_ref_cli_test", "cannot write in /sys"
    if kind == "under a file":
        (tmp_path / "f").write_text("x")
        return str(tmp_path / "f" / "sub" / "figs"), f"lies under the file {tmp_path / 'f'}"
    if kind == "symlink loop":
        (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
        (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
        return str(tmp_path / "loop1" / "figs"), "a loop of symbolic links"
    if kind == "name too long":
        return str(tmp_path / ("n" * 300) / "figs"), "a name too long for the filesystem"
    raise AssertionError(kind)


@pytest.mark.parametrize("command", [["figures"], ["site"], []], ids=["figures", "site", "default"])
@pytest.mark.parametrize("kind", ["root", "proc", "sys", "under a file", "symlink loop", "name too long"])
def test_an_impossible_out_is_one_line_and_status_2_before_any_work(tmp_path, monkeypatch, capsys, command, kind):
    # before: `figures --out /` wrote 24 files into /; /proc and /sys, loops and long names ended in tracebacks
    import rope_ref.__main__ as cli
    monkeypatch.setattr(cli, "_print_identity_table", lambda args: pytest.fail("ran the checks before refusing --out"))
    out, words = _bad_out(tmp_path, kind)
    before = _listing(tmp_path)
    root_before = sorted(os.listdir("/"))
    assert main(command + ["--out", out]) == 2
    err = capsys.readouterr().err
    assert words in err and "--out" in err and len(err.strip().splitlines()) == 1, err
    assert _listing(tmp_path) == before and sorted(os.listdir("/")) == root_before
    assert kind == "root" or not os.path.lexists(out)


def _unprivileged() -> list:
    """A command prefix that runs without root's override of file permissions: as root, setpriv dropping
    CAP_DAC_OVERRIDE (the interpreter under /root stays reachable); else nothing."""
    if os.geteuid() != 0:
        return []
    import shutil
    if not shutil.which("setpriv"):
        pytest.skip("as root, testing permissions needs setpriv (util-linux) to drop CAP_DAC_OVERRIDE")
    caps = "-dac_override,-dac_read_search"
    return ["setpriv", "--bounding-set", caps, "--inh-caps", caps]


@pytest.mark.slow
def test_a_folder_without_write_permission_is_refused():
    import tempfile
    base = Path(tempfile.mkdtemp(prefix="rope_ref_perm_"))
    try:
        os.chmod(base, 0o755)
        ro = base / "readonly"
        ro.mkdir(mode=0o555)
        os.chmod(ro, 0o555)
        for out in [ro, ro / "new" / "figs"]:
            res = subprocess.run(_unprivileged() + [sys.executable, "-m", "rope_ref", "figures", "--out", str(out)],
                                 capture_output=True, text=True, timeout=300, cwd=base,
                                 env={**os.environ, "PYTHONPATH": str(ROOT)})
            assert res.returncode == 2, res.stdout + res.stderr
            assert f"--out: cannot write in {ro}: permission denied" in res.stderr, res.stderr
            assert len(res.stderr.strip().splitlines()) == 1, res.stderr
            assert os.listdir(ro) == []
    finally:
        os.chmod(base / "readonly", 0o755)
        import shutil
        shutil.rmtree(base)


@pytest.mark.slow
def test_a_read_only_mount_is_refused(tmp_path):
    mnt = tmp_path / "ro"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a read-only tmpfs here (needs root with CAP_SYS_ADMIN)")
    try:
        res = _run("figures", "--out", str(mnt / "figs"))
        assert res.returncode == 2, res.stdout + res.stderr
        assert f"--out: cannot write in {mnt}: a read-only filesystem" in res.stderr, res.stderr
        assert len(res.stderr.strip().splitlines()) == 1
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


@pytest.mark.slow
@pytest.mark.parametrize("command,name", [("figures", "fig2_long_term_decay.png"), ("site", "index.html")])
def test_a_symbolic_link_among_the_outputs_is_refused_before_any_work(tmp_path, command, name):
    # before: the PNG was written through the link, over a file outside the folder
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    out = tmp_path / "out"
    out.mkdir()
    (out / name).symlink_to(victim)
    res = _run(command, "--out", str(out))
    assert res.returncode == 2, res.stdout + res.stderr
    assert f"--out: {out / name} is a symbolic link" in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert victim.read_text() == "precious" and os.listdir(out) == [name]


@pytest.mark.slow
def test_figures_say_how_many_files_they_replaced(tmp_path, monkeypatch, capsys):
    import rope_ref.teaching.figures as figures
    monkeypatch.setattr(figures, "FIGURES", {"aliasing": figures.FIGURES["aliasing"]})
    (tmp_path / "aliasing.png").write_bytes(b"old")
    (tmp_path / "notes.txt").write_text("mine")
    assert main(["figures", "--out", str(tmp_path)]) == 0
    assert "(1 replaced files of the same names)" in capsys.readouterr().out
    assert (tmp_path / "notes.txt").read_text() == "mine" and (tmp_path / "aliasing.png").read_bytes() != b"old"


@pytest.mark.slow
def test_a_killed_figures_run_leaves_every_file_old_or_new(tmp_path):
    """Start `figures`, kill it at random moments: each file is the old whole file or the new whole file.
    Before the fix (savefig straight into the final path) kills left empty or cut SVG/PNG files."""
    import random
    import signal
    import time
    ref, out = tmp_path / "ref", tmp_path / "out"
    t0 = time.perf_counter()
    assert _run("figures", "--out", str(ref)).returncode == 0
    duration = time.perf_counter() - t0
    new = {p.name: p.read_bytes() for p in ref.iterdir()}
    rng = random.Random(22)
    cut = []
    for attempt in range(20):
        out.mkdir(exist_ok=True)
        for name in new:
            (out / name).write_bytes(b"OLD " + name.encode())
        proc = subprocess.Popen([sys.executable, "-m", "rope_ref", "figures", "--out", str(out)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.25 * duration, duration))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        for name, data in new.items():
            now = (out / name).read_bytes()
            if now not in (data, b"OLD " + name.encode()):
                cut.append((attempt, name, len(now)))
    assert not cut, f"files neither old nor new after a kill: {cut}"
    assert {p.name for p in out.iterdir() if not p.name.startswith(".")} == set(new)


# ---- interrupts, full disks, closed pipes, the library's writers (issue 32) -------------------------------------

def _one_line(err: str, words: str) -> None:
    assert words in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def _hidden_files(folder: Path) -> list:
    return [p.name for p in folder.rglob(".*")] if folder.exists() else []


@pytest.mark.slow
def test_an_interrupt_python_ignores_still_stops_the_run(tmp_path, monkeypatch, capsys):
    # before: a KeyboardInterrupt raised inside a weakref callback was printed as "ignored", and all files were
    # written with exit status 0
    import signal
    import weakref
    import rope_ref.teaching.figures as figures

    class Owner:
        pass

    def draw_while_interrupted(draw=figures.FIGURES["aliasing"]):
        owner = Owner()
        watch = weakref.ref(owner, lambda ref: signal.raise_signal(signal.SIGINT))
        del owner                           # the callback runs now; its KeyboardInterrupt is ignored
        assert watch() is None
        return draw()

    monkeypatch.setattr(figures, "FIGURES", {"aliasing": draw_while_interrupted})
    assert main(["figures", "--out", str(tmp_path / "figs")]) == 130
    assert capsys.readouterr().err == "python -m rope_ref figures: interrupted\n"
    assert not (tmp_path / "figs").exists() or list((tmp_path / "figs").iterdir()) == []


def test_an_interrupt_while_a_file_is_written_waits_for_the_whole_file(tmp_path, monkeypatch):
    # before: Ctrl-C between creating the temporary file and its removal could leave a 0-byte .tmp
    import signal
    import rope_ref.teaching.files as files
    real_fsync = os.fsync

    def interrupted_fsync(fd):
        signal.raise_signal(signal.SIGINT)
        real_fsync(fd)

    monkeypatch.setattr(files.os, "fsync", interrupted_fsync)
    (tmp_path / "a.png").write_bytes(b"old")
    with files.handling_interrupts(), pytest.raises(KeyboardInterrupt):
        files.write_atomically(tmp_path / "a.png", b"new")
    assert (tmp_path / "a.png").read_bytes() == b"new" and sorted(os.listdir(tmp_path)) == ["a.png"]


@pytest.mark.slow
def test_a_full_disk_is_one_line_and_leaves_no_temporary_file(tmp_path, monkeypatch, capsys):
    # before: an 18-line ENOSPC traceback
    import errno
    import rope_ref.teaching.figures as figures

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(figures, "FIGURES", {"aliasing": figures.FIGURES["aliasing"]})
    monkeypatch.setattr(os, "fsync", full)
    assert main(["figures", "--out", str(tmp_path / "figs")]) == 1
    _one_line(capsys.readouterr().err, "python -m rope_ref figures: error: No space left on device")
    assert list((tmp_path / "figs").iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize("unbuffered", ["1", ""])
def test_a_closed_pipe_ends_quietly(unbuffered):
    # before: `python -m rope_ref check | head -1` printed a BrokenPipeError traceback (at a print, or at the exit)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": unbuffered}
    res = subprocess.run(f"{sys.executable} -m rope_ref check --d 8 --seq 64 | true", shell=True, capture_output=True,
                         text=True, timeout=300, env=env)
    assert res.stderr == "", res.stderr


@pytest.mark.parametrize("make_out,words", [
    (lambda tmp: "~nosuchuser_rope_ref/x", "--out: cannot expand ~nosuchuser_rope_ref: no such user"),
    (lambda tmp: "/proc/figs", "--out: cannot write in /proc: the filesystem accepts no new entries there"),
    (lambda tmp: ((tmp / "link").symlink_to(tmp / "nowhere"), tmp / "link")[1], "is a symbolic link to"),
    (lambda tmp: "a\0b", "--out: expected a folder path, got 'a\\x00b'"),
])
def test_outs_that_were_misnamed_or_raw_errors(tmp_path, capsys, make_out, words):
    # before: "a loop of symbolic links", "No such file or directory", a folder made where a dangling link pointed
    assert main(["figures", "--out", str(make_out(tmp_path))]) == 2
    _one_line(capsys.readouterr().err, words)
    assert not (tmp_path / "nowhere").exists()


@pytest.mark.slow
def test_site_help_shows_out_as_required_and_a_typo_gets_a_suggestion():
    assert "[--out DIR]" not in _run("site", "--help").stdout and "--out DIR" in _run("site", "--help").stdout
    res = _run("check", "--dd", "64")
    assert res.returncode == 2
    _one_line(res.stderr, "python -m rope_ref check: error: unrecognized arguments: --dd 64; did you mean --d?")


@pytest.mark.parametrize("call,exc,words", [
    (lambda tmp, figures, site: figures.write_all(tmp / "f" / "x"), ValueError, "out_dir: ", ),
    (lambda tmp, figures, site: figures.write_all("/proc/x"), ValueError, "out_dir: cannot write in /proc"),
    (lambda tmp, figures, site: figures.write_all(3), TypeError, "out_dir: expected a folder path"),
    (lambda tmp, figures, site: site.build_site("/proc/x", []), ValueError, "out: cannot write in /proc"),
    (lambda tmp, figures, site: site.build_site(tmp / "site", []), ValueError, "notebooks: expected at least one"),
    (lambda tmp, figures, site: _files().write_atomically("/proc/x/a.png", b""), ValueError, "path: cannot write"),
    (lambda tmp, figures, site: _files().write_atomically(None, b""), TypeError, "path: expected a folder path"),
])
def test_the_library_writers_check_their_folder_like_the_command_line(tmp_path, call, exc, words):
    # before: a raw FileNotFoundError, and build_site(out, []) wrote an empty index
    import rope_ref.teaching.figures as figures
    import rope_ref.teaching.site as site
    (tmp_path / "f").write_text("x")
    with pytest.raises(exc) as info:
        call(tmp_path, figures, site)
    assert str(info.value).startswith(words), info.value
    assert sorted(os.listdir(tmp_path)) == ["f"]


def _files():
    import rope_ref.teaching.files as files
    return files


def test_the_library_creates_a_missing_folder_for_a_file(tmp_path):
    _files().write_atomically(tmp_path / "new" / "a.txt", b"x")
    assert (tmp_path / "new" / "a.txt").read_bytes() == b"x"


def _wait_for(proc, ready) -> None:
    deadline = time.monotonic() + 240
    while not ready(proc):
        assert proc.poll() is None and time.monotonic() < deadline, "the command ended before the interrupt"
        time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.parametrize("command,ready,delays", [
    (["check", "--d", "512", "--seq", "16384"], lambda proc: proc.stdout.readline(), [0.2, 1.0]),  # main() has begun
    (["figures"], lambda proc: any(Path(proc.args[-1]).glob("*.png")), [0.0, 0.5, 2.0]),
    (["site"], lambda proc: subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True).stdout, [0.0, 3.0]),
], ids=["check", "figures", "site"])
def test_ctrl_c_is_one_line_status_130_and_leaves_no_temporary_file(tmp_path, command, ready, delays):
    """Ctrl-C sent to the command's process group (as a terminal does, reaching a notebook's kernel too) at several
    moments.  Before: 45-60 lines of traceback (site: DeadKernelError ... AssertionError), and a 0-byte .tmp file."""
    import signal
    for i, delay in enumerate(delays):
        out = tmp_path / str(i)
        code = "import sys, rope_ref.__main__ as m; print('ready', flush=True); sys.exit(m.main(sys.argv[1:]))"
        args = command + ([] if command[0] == "check" else ["--out", str(out)])
        proc = subprocess.Popen([sys.executable, "-c", code, *args] if command[0] == "check" else
                                [sys.executable, "-m", "rope_ref", *args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True, cwd=tmp_path,
                                env={**os.environ, "PYTHONPATH": str(ROOT)})
        _wait_for(proc, ready)
        time.sleep(delay)
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 130, err
        assert err == f"python -m rope_ref {command[0]}: interrupted\n", err
        assert _hidden_files(out) == []
        assert not subprocess.run(["pgrep", "-s", str(proc.pid)], capture_output=True).stdout, "a process was left"


@pytest.mark.slow
def test_ctrl_c_while_python_m_still_imports_the_package_is_one_line_status_130():
    """`python -m rope_ref` imports the package (NumPy, ...) before rope_ref.__main__ takes Ctrl-C over; Python sets
    argv[0] to "-m" meanwhile.  Before: a Ctrl-C then printed Python's traceback."""
    import signal
    code = ("import os, signal, sys, time; sys.argv[:] = ['-m', 'figures', '--out', 'x']; import rope_ref; "
            "os.kill(os.getpid(), signal.SIGINT); time.sleep(30); print('not interrupted')")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert (run.returncode, run.stderr, run.stdout) == (130, "python -m rope_ref figures: interrupted\n", "")
    plain = subprocess.run([sys.executable, "-c", "import signal, rope_ref; print(signal.getsignal(signal.SIGINT) is "
                            "signal.default_int_handler)"], capture_output=True, text=True, timeout=60,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert plain.stdout == "True\n", plain      # an ordinary import leaves Ctrl-C to the program


def _without_teaching(monkeypatch, blocked: str):
    """Import the teaching layer afresh, with the module `blocked` unimportable (None in sys.modules)."""
    for name in [n for n in sys.modules if n.startswith("rope_ref.teaching")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, blocked, None)


def test_a_missing_dependency_is_named_in_one_line(tmp_path, monkeypatch, capsys):
    _without_teaching(monkeypatch, "matplotlib")
    assert main(["figures", "--out", str(tmp_path / "figs")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs the teaching dependencies (matplotlib is missing)" in err
    assert not (tmp_path / "figs").exists() or not any((tmp_path / "figs").iterdir())


def test_a_broken_import_inside_rope_ref_is_not_called_a_missing_dependency(tmp_path, monkeypatch):
    _without_teaching(monkeypatch, "rope_ref.teaching.style")
    with pytest.raises(ImportError) as raised:
        main(["figures", "--out", str(tmp_path / "figs")])
    assert raised.value.name == "rope_ref.teaching.style"
