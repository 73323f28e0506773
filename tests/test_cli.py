"""``python -m rope_ref``: exit statuses 0/1/2/130, where figures go, the main job, Ctrl-C."""

import errno
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import rope_ref.__main__ as cli
from rope_ref.__main__ import main
from rope_ref.checks import Check

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _one_line(err: str, *words: str) -> None:
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert all(word in err for word in words), err


@pytest.mark.parametrize("outcome, status", [(KeyboardInterrupt(), 130), ([Check("planted", "0", math.nan, 1)], 1)])
def test_a_failing_identity_is_status_1_and_ctrl_c_one_line_and_130(monkeypatch, capsys, outcome, status):
    def run_checks(d, seq):
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome
    monkeypatch.setattr(cli, "run_checks", run_checks)
    assert main(["check", "--d", "8", "--seq", "64"]) == status
    out, err = capsys.readouterr()
    if status == 130:
        _one_line(err, "interrupted")
    else:
        assert "planted" in out and "FAIL" in out


@pytest.mark.parametrize("args,named,unnamed", [
    (["check", "--d", "7"], "--d", "--seq"), (["check", "--d", "3"], "--d", "--seq"), (["--d", "1024"], "--d", None),
    (["--seq", "x"], "--seq", None), (["--seq", "1"], "--seq", "--d"),
    (["check", "--d", "512", "--seq", "100000"], "--seq", "--d"), (["bogus"], "bogus", None),
    (["check", "--out", "D"], "--out", "site"), (["figures", "--d", "64"], "--d", "site"),
    (["--seq", "64", "site", "--out", "D"], "--seq", None), (["site"], "--out", None),
    *[(command + ["--out", out], "--out", None) for command in (["figures"], ["site"], [])
      for out in ("", "taken.txt", "taken.txt/sub/figs", "x" * 300)],       # under a file, a name too long
])
def test_a_bad_option_is_one_line_and_status_2_before_any_work(tmp_path, monkeypatch, capsys, args, named, unnamed):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli, "print_identities", lambda d, seq: pytest.fail("ran the checks"))
    (tmp_path / "taken.txt").write_text("x")
    assert main(args) == 2
    err = capsys.readouterr().err
    _one_line(err, named)
    assert unnamed is None or unnamed not in err, err            # only the option that is wrong
    assert [p.name for p in tmp_path.iterdir()] == ["taken.txt"]


@pytest.mark.parametrize("command", [["figures"], []])
def test_a_folder_where_a_figure_goes_is_one_line_and_status_2_before_any_work(tmp_path, monkeypatch, capsys, command):
    # before: the identities ran, then fig2_long_term_decay.png was written, then a raw errno message and status 1
    monkeypatch.setattr(cli, "print_identities", lambda d, seq: pytest.fail("ran the checks"))
    (tmp_path / "fig2_long_term_decay.svg").mkdir()
    assert main(command + ["--out", str(tmp_path)]) == 2
    _one_line(capsys.readouterr().err, "--out")
    assert [p.name for p in tmp_path.iterdir()] == ["fig2_long_term_decay.svg"]


@pytest.mark.parametrize("installed", [False, True])
def test_figures_go_to_the_checkout_or_the_current_directory(tmp_path, monkeypatch, capsys, installed):
    """From a checkout: its figures/ and its notebooks; from an installed copy: ./figures, and no local path."""
    if installed:
        monkeypatch.setattr(cli, "PACKAGE_DIR", tmp_path / "site-packages" / "rope_ref")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(cli, "print_identities", lambda d, seq: 0)
    monkeypatch.setattr(cli, "write_figures", print)
    assert main(["--help"]) == 0 and "figures" in capsys.readouterr().out
    assert main([]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == str((tmp_path if installed else ROOT) / "figures")
    assert (str(ROOT / "notebooks") in lines[-1]) is not installed and str(tmp_path) not in lines[-1]


@pytest.mark.slow
def test_the_main_job_checks_writes_the_figures_and_names_the_notebooks(tmp_path, monkeypatch, capsys):
    figures = pytest.importorskip("rope_ref.teaching.figures")
    monkeypatch.setattr(figures, "FIGURES", {"fig2_long_term_decay": figures.FIGURES["fig2_long_term_decay"]})
    monkeypatch.chdir(tmp_path)
    assert main(["--d", "8", "--seq", "64", "--out", "rel/figs"]) == 0
    out = capsys.readouterr().out
    assert "d=8, positions 0..63" in out and str(tmp_path / "rel" / "figs") in out
    assert sorted(p.name for p in (tmp_path / "rel" / "figs").iterdir()) == ["fig2_long_term_decay.png",
                                                                           "fig2_long_term_decay.svg"]
    assert str(ROOT / "notebooks") in out.strip().splitlines()[-1]


@pytest.mark.parametrize("error", [OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "figs/a.png"),
                                   ValueError("out_dir: figs/a.png is a folder, expected a file")])
def test_a_failed_write_is_one_line_and_status_1(tmp_path, monkeypatch, capsys, error):
    def failing(out):
        raise error
    monkeypatch.setattr(cli, "write_figures", failing)
    assert main(["figures", "--out", str(tmp_path)]) == 1
    _one_line(capsys.readouterr().err, "figs/a.png")


@pytest.mark.slow
def test_site_prints_the_index_path_and_a_failing_notebook_is_status_1(tmp_path, monkeypatch, capsys):
    site = pytest.importorskip("rope_ref.teaching.site")
    built = []
    monkeypatch.setattr(site, "build_site", lambda out, notebooks: built.append(notebooks) or out / "index.html")
    monkeypatch.chdir(tmp_path)
    assert main(["site", "--out", "rel"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == str(tmp_path / "rel" / "index.html")
    assert built == [sorted((ROOT / "notebooks").glob("*.ipynb"))]

    def failing(out, notebooks):
        raise RuntimeError("notebook 00_why_positions.ipynb failed")
    monkeypatch.setattr(site, "build_site", failing)
    assert main(["site", "--out", "rel"]) == 1
    _one_line(capsys.readouterr().err, "00_why_positions")


@pytest.mark.slow
@pytest.mark.parametrize("missing, traceback", [("matplotlib", False), ("rope_ref.teaching.style", True)])
def test_a_missing_dependency_is_named_in_one_line_a_broken_import_in_rope_ref_is_not(tmp_path, missing, traceback):
    code = f"import sys; sys.modules[{missing!r}] = None; from rope_ref.__main__ import main; sys.exit(main())"
    res = subprocess.run([sys.executable, "-c", code, "figures", "--out", str(tmp_path)], capture_output=True,
                         text=True, timeout=300, env=ENV)
    assert res.returncode == 1 and missing in res.stderr
    assert ("Traceback" in res.stderr) == traceback and (len(res.stderr.strip().splitlines()) == 1) != traceback


def _sigint_default():
    """In the child: Ctrl-C as a terminal gives it, even when this run was started with SIGINT ignored (a background
    job of a non-interactive shell)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
@pytest.mark.parametrize("command", [["check", "--d", "512", "--seq", "16384"], ["site"]], ids=["check", "site"])
def test_ctrl_c_to_the_process_group_is_one_line_status_130(tmp_path, command):
    """As a terminal sends it: to the command and, for site, the notebook's kernel; no process is left."""
    args = command + (["--out", str(tmp_path / "site")] if command == ["site"] else [])
    proc = subprocess.Popen([sys.executable, "-m", "rope_ref", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, env=ENV, preexec_fn=_sigint_default)
    deadline = time.monotonic() + 120
    while not subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True).stdout and command == ["site"]:
        assert proc.poll() is None and time.monotonic() < deadline, "site ended before its kernel started"
        time.sleep(0.05)
    time.sleep(2.0)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("python -m rope_ref") and last.endswith(": interrupted") and "Traceback" not in err, err
    assert not subprocess.run(["pgrep", "-s", str(proc.pid)], capture_output=True).stdout, "a process was left"


@pytest.mark.slow
def test_a_package_that_imports_rope_ref_keeps_its_own_ctrl_c(tmp_path):
    """Issue 38, bug (1): ``python -m thatpackage`` whose __init__ imports rope_ref got rope_ref's SIGINT handler."""
    package = tmp_path / "thatpackage"
    package.mkdir()
    (package / "__init__.py").write_text("import rope_ref\n")
    (package / "__main__.py").write_text("import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\n"
                                         "time.sleep(30)\n")
    res = subprocess.run([sys.executable, "-m", "thatpackage"], capture_output=True, text=True, timeout=60,
                         cwd=tmp_path, env={**ENV, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"},
                         preexec_fn=_sigint_default)
    assert "KeyboardInterrupt" in res.stderr and "python -m rope_ref" not in res.stderr, res.stderr


@pytest.mark.slow
def test_a_closed_pipe_ends_quietly():
    res = subprocess.run(f"{sys.executable} -m rope_ref check --d 8 --seq 64 | true", shell=True, capture_output=True,
                         text=True, timeout=300, env=ENV)
    assert res.stderr == "", res.stderr


@pytest.mark.slow
def test_a_killed_figures_run_leaves_every_file_old_or_new(tmp_path):
    """Kill write_all at random moments while it writes: each file is the old whole file or the new whole file."""
    code = ("import sys, rope_ref.teaching.figures as f; print(flush=True); "
            "f.write_all(sys.argv[1], names=['fig2_long_term_decay', 'aliasing', 'clock_hands'])")

    def start(folder):
        proc = subprocess.Popen([sys.executable, "-c", code, str(folder)], stdout=subprocess.PIPE, env=ENV)
        proc.stdout.readline()      # imported: the writing begins
        return proc, time.perf_counter()
    proc, t0 = start(tmp_path / "new")
    proc.wait()
    duration = time.perf_counter() - t0
    new = {p.name: p.read_bytes() for p in (tmp_path / "new").iterdir()}
    for share in (0.2, 0.5, 0.8):
        out = tmp_path / str(share)
        out.mkdir()
        for name in new:
            (out / name).write_bytes(b"OLD")
        proc, _ = start(out)
        time.sleep(share * duration)
        proc.kill()
        proc.wait()
        assert all((out / name).read_bytes() in (data, b"OLD") for name, data in new.items())
