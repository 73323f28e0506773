"""The identity table compares independent code paths: a bug planted in one of them is caught."""

import numpy as np
import pytest

import rope_ref as rr
from rope_ref import _fast, checks


def _failed(table):
    return {c.name for c in table if not c.ok}


def test_every_identity_holds_on_a_small_case():
    table = checks.run_checks(d=32, seq=300)
    assert not _failed(table), checks.format_table(table)
    assert len(table) == 17


def test_a_bug_planted_in_the_fast_path_is_caught(monkeypatch):
    real = _fast._rotate_block

    def off_by_a_sign(xs, ys, tabs, pairing, r, tmp):      # sin flipped: rotates clockwise
        real(xs, ys, [np.conj(t) if np.iscomplexobj(t) else t for t in tabs], pairing, r, tmp)

    rr.clear_cache()
    monkeypatch.setattr(_fast, "_rotate_block", off_by_a_sign)
    failed = _failed(checks.run_checks(d=32, seq=300))
    assert "fast rotate == plain elementwise" in failed


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


def test_readme_shows_the_table_a_fresh_run_prints():
    """The README's identity table (Quick start) is the one `python -m rope_ref` prints today."""
    from pathlib import Path
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    block = readme.split("```\nidentity  ", 1)[1].split("```", 1)[0]
    shown = ["identity  " + block.splitlines()[0]] + block.splitlines()[1:]
    printed = checks.format_table(checks.run_checks()).splitlines()
    assert [line.rstrip() for line in shown[:len(printed)]] == [line.rstrip() for line in printed]
    assert shown[len(printed)].startswith(f"{len(printed) - 2} of {len(printed) - 2} identities hold")
