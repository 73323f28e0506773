"""``python -m rope_ref``: the identity table, exit statuses, where figures go, argument errors."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import rope_ref.checks as checks
from rope_ref.__main__ import default_figures_dir, main, notebooks_hint, source_checkout

ROOT = Path(__file__).resolve().parents[1]


def _run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "rope_ref", *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


def test_check_command_passes_and_prints_table():
    res = _run("check")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "d=128, positions 0..4095, float64" in res.stdout
    for words in ["R orthogonal", "decay bound at 0", "linear attention", "paper eq", "max abs error",
                  "fast rotate == plain elementwise"]:
        assert words in res.stdout
    assert "FAIL" not in res.stdout


def test_options_are_accepted_after_the_sub_command():
    res = _run("check", "--d", "16", "--seq", "100")
    assert res.returncode == 0, res.stderr
    assert "d=16, positions 0..99" in res.stdout


@pytest.mark.parametrize("args,words", [
    (["check", "--d", "7"], "--d: expected a positive even integer, got 7"),
    (["--seq", "x"], "--seq: expected an integer >= 2, got 'x'"),
    (["check", "--d", "-4"], "--d: expected a positive even integer, got -4"),
    (["bogus"], "invalid choice"),
])
def test_bad_values_give_one_line_and_status_2(args, words):
    res = _run(*args)
    assert res.returncode == 2
    assert words in res.stderr
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_help_is_plain_text():
    res = _run("--help")
    assert res.returncode == 0
    assert "``" not in res.stdout and ":func:" not in res.stdout
    assert "figures" in res.stdout and "check" in res.stdout


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


def test_figures_out_prints_the_absolute_path(tmp_path, monkeypatch, capsys):
    import rope_ref.teaching.figures as figures
    monkeypatch.setattr(figures, "FIGURES", {"fig2_long_term_decay": figures.FIGURES["fig2_long_term_decay"]})
    monkeypatch.chdir(tmp_path)
    assert main(["figures", "--out", "rel"]) == 0
    out = capsys.readouterr().out
    assert str(tmp_path / "rel") in out
    assert (tmp_path / "rel" / "fig2_long_term_decay.png").exists()


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


@pytest.mark.parametrize("make_out,words", [
    (lambda tmp: (tmp / "taken.txt", (tmp / "taken.txt").write_text("x"))[0], "is an existing file, expected a folder"),
    (lambda tmp: (tmp / "f", (tmp / "f").write_text("x"))[0] / "sub", "cannot create the folder"),
])
def test_site_with_a_bad_out_gives_one_line_and_status_2(tmp_path, make_out, words):
    res = _run("site", "--out", str(make_out(tmp_path)))
    assert res.returncode == 2, res.stdout + res.stderr
    assert words in res.stderr
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_site_needs_out():
    res = _run("site")
    assert res.returncode == 2 and "--out" in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_site_builds_every_notebook_and_prints_the_absolute_index_path(tmp_path, monkeypatch, capsys):
    import rope_ref.teaching.site as site
    calls = []

    def fake_build(out, notebooks):
        calls.append((out, list(notebooks)))
        (out / "index.html").write_text("<html></html>")
        return out / "index.html"

    monkeypatch.setattr(site, "build_site", fake_build)
    monkeypatch.chdir(tmp_path)
    assert main(["site", "--out", "rel/site"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert Path(last).is_absolute() and Path(last) == tmp_path / "rel" / "site" / "index.html"
    assert calls[0][1] == sorted((ROOT / "notebooks").glob("*.ipynb")) and len(calls[0][1]) >= 7


@pytest.mark.parametrize("args,words", [
    (["check", "--seq", "99999999999999999999"], "--seq: expected an integer from 2 to 1048576"),
    (["check", "--d", "10000000"], "--d: expected a positive even integer up to 512, got 10000000"),
    (["check", "--d", "512", "--seq", "100000"], "--d 512 times --seq 100000 is 51200000 values"),
])
def test_sizes_that_would_exhaust_memory_are_argument_errors(args, words):
    # before the bounds these ended in a MemoryError / numpy ValueError traceback (exit status 1)
    res = _run(*args)
    assert res.returncode == 2, res.stderr[-500:]
    assert words in res.stderr
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr


@pytest.mark.parametrize("kind,words", [("file", "is an existing file, expected a folder"),
                                        ("under a file", "cannot create the folder"),
                                        ("empty", "expected a folder path, got ''")])
@pytest.mark.parametrize("command", [["figures"], [], ["site"]], ids=["figures", "default", "site"])
def test_a_bad_out_is_one_line_and_status_2_before_any_work(tmp_path, capsys, monkeypatch, command, kind, words):
    # figures (and the default check + figures) used to end in a FileExistsError traceback after the checks ran,
    # and --out '' built the site in the current folder
    import rope_ref.__main__ as cli
    monkeypatch.setattr(cli, "_check", lambda args: pytest.fail("ran the checks before refusing --out"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "taken.txt").write_text("x")
    out = {"file": "taken.txt", "under a file": "taken.txt/sub", "empty": ""}[kind]
    assert main(command + ["--out", out]) == 2
    err = capsys.readouterr().err
    assert words in err and "--out" in err and len(err.strip().splitlines()) == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken.txt"]
