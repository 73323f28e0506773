"""The identity table compares independent code paths: a bug planted in any of them is caught."""

import re
from pathlib import Path

import numpy as np
import pytest

import rope_ref as rr
from rope_ref import checks


def test_every_identity_holds_on_a_small_case():
    table = checks.run_checks(d=16, seq=64)
    assert all(c.ok for c in table), checks.format_table(table)
    assert len(table) == 17


@pytest.mark.parametrize("planted", ["rotate", "rotate_elementwise", "rotate_dense", "rotate_complex"])
def test_a_bug_planted_in_one_form_is_caught(monkeypatch, planted):
    real = getattr(rr, planted)

    def clockwise(x, positions=None, *args, **kw):       # the fast path, or another form, turning the wrong way
        return real(x, -(np.arange(x.shape[-2]) if positions is None else np.asarray(positions)), *args, **kw)
    monkeypatch.setattr(checks, planted, clockwise)
    failed = {c.name for c in checks.run_checks(d=16, seq=64) if not c.ok}
    assert failed, f"a bug in {planted} went unnoticed"
    if planted == "rotate":
        assert "fast rotate == plain elementwise" in failed


@pytest.mark.slow
def test_readme_shows_the_table_a_fresh_run_prints():
    """Every column but the rounding errors (CPU-dependent; each shown still below its tolerance)."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    block = readme.split("```\nidentity  ", 1)[1].split("```", 1)[0]
    shown = ("identity  " + block).splitlines()
    printed = checks.format_table(checks.run_checks()).splitlines()

    def columns(line):
        return re.split(r"\s{2,}", line.strip())
    assert [columns(a)[:2] + columns(a)[3:] for a in shown[:len(printed)]] == \
        [columns(b)[:2] + columns(b)[3:] for b in printed]
    for line in shown[2:len(printed)]:
        assert 0.0 <= float(columns(line)[2]) < float(columns(line)[3]), line
    assert shown[len(printed)].startswith(f"{len(printed) - 2} of {len(printed) - 2} identities hold")
