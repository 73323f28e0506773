"""``python -m rope_ref check``: the identity table and its exit status."""

import subprocess
import sys

import numpy as np

import rope_ref.checks as checks
from rope_ref.__main__ import main


def test_check_command_passes_and_prints_table():
    res = subprocess.run([sys.executable, "-m", "rope_ref", "check"], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "d=128, positions 0..4095, float64" in res.stdout
    for words in ["R orthogonal", "decay bound at 0", "linear attention", "paper eq", "max abs error"]:
        assert words in res.stdout
    assert "FAIL" not in res.stdout


def test_check_command_exits_nonzero_when_an_identity_fails(monkeypatch, capsys):
    real = checks.run_checks

    def broken(**kw):
        out = real(**kw)
        out[0].error = np.inf
        return out

    monkeypatch.setattr("rope_ref.__main__.run_checks", broken)
    assert main(["--seq", "256", "check"]) == 1
    assert "FAIL" in capsys.readouterr().out
