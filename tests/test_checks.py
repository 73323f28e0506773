"""The identity table compares independent code paths: a bug planted in one of them is caught."""

import re

import numpy as np
import pytest

import rope_ref as rr
from rope_ref import _fast, checks


def _failed(table):
    return {c.name for c in table if not c.ok}


@pytest.mark.slow
def test_every_identity_holds_on_a_small_case():
    table = checks.run_checks(d=32, seq=300)
    assert not _failed(table), checks.format_table(table)
    assert len(table) == 17


@pytest.mark.slow
def test_a_bug_planted_in_the_fast_path_is_caught(monkeypatch):
    real = _fast._rotate_block

    def off_by_a_sign(xs, ys, tabs, pairing, r, tmp):      # sin flipped: rotates clockwise
        real(xs, ys, [np.conj(t) if np.iscomplexobj(t) else t for t in tabs], pairing, r, tmp)

    rr.clear_cache()
    monkeypatch.setattr(_fast, "_rotate_block", off_by_a_sign)
    failed = _failed(checks.run_checks(d=32, seq=300))
    assert "fast rotate == plain elementwise" in failed


@pytest.mark.slow
@pytest.mark.parametrize("planted", ["plain", "dense", "complex"])
def test_a_bug_planted_in_another_form_is_caught(monkeypatch, planted):
    def shifted(fn):                                 # positions off by one
        return lambda x, positions=None, **kw: fn(x, (np.arange(x.shape[-2]) if positions is None
                                                      else np.asarray(positions)) + 1, **kw)

    name = {"plain": "rotate_elementwise", "dense": "rotate_dense", "complex": "rotate_complex"}[planted]
    monkeypatch.setattr(checks, name, shifted(getattr(rr, name)))
    failed = _failed(checks.run_checks(d=32, seq=300))
    assert failed, f"a bug in {name} went unnoticed"


def test_format_table_marks_failures():
    table = [checks.Check("a", "1", 0.0, 1e-12), checks.Check("b", "2", np.nan, 1e-12)]
    text = checks.format_table(table)
    assert "pass" in text and "FAIL" in text


@pytest.mark.slow
def test_readme_shows_the_table_a_fresh_run_prints():
    """The README's identity table (Quick start) is the one `python -m rope_ref` prints today."""
    from pathlib import Path
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    block = readme.split("```\nidentity  ", 1)[1].split("```", 1)[0]
    shown = ["identity  " + block.splitlines()[0]] + block.splitlines()[1:]
    printed = checks.format_table(checks.run_checks()).splitlines()
    # Rounding errors (the third column) differ between CPUs (libm, SIMD paths): 0.000e+00 on one machine
    # is 1.110e-15 on another.  Every other column must match; the shown error must be a rounding-level
    # number below its tolerance, as the printed one is.
    def columns(line):
        return re.split(r"\s{2,}", line.strip())
    assert [columns(a)[:2] + columns(a)[3:] for a in shown[:len(printed)]] == \
        [columns(b)[:2] + columns(b)[3:] for b in printed]
    for a in shown[2:len(printed)]:
        err, tol = float(columns(a)[2]), float(columns(a)[3])
        assert 0.0 <= err < tol, a
    assert shown[len(printed)].startswith(f"{len(printed) - 2} of {len(printed) - 2} identities hold")
