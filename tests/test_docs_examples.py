"""Every ```python block of the docs pages below runs as written, in order, one namespace per page (their numbers
are ``assert`` lines).  Run from the checkout's root (paths such as tests/data/configs/... are relative to it)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["docs/checking_kernels.md", "docs/oracle.md", "docs/model_configs.md"]
CONFIGS = (ROOT / "docs" / "model_configs.md").read_text()
DATA = (ROOT / "tests" / "data" / "README.md").read_text()


def python_blocks(text):
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_every_python_block_runs(page, monkeypatch):
    monkeypatch.chdir(ROOT)
    namespace = {"__name__": "docs_example"}
    blocks = python_blocks((ROOT / page).read_text())
    assert blocks, page
    for i, block in enumerate(blocks):
        code = compile(block, f"{page} block {i + 1}", "exec")
        exec(code, namespace)


def audit_counts():
    """Verdict counts of tests/data/audit_families.txt, config types and scaling variants apart."""
    counts = {}
    for line in (ROOT / "tests" / "data" / "audit_families.txt").read_text().splitlines()[1:]:
        m = re.match(r"^(\S+(?: \(text_config: \S+\))?(?: \[\S+\])?)( \+\S+)?\s+"
                     r"(ok \(|refused:|not audited:|MISMATCH)", line)
        if m:
            key = ("variant" if m.group(2) else "type", m.group(3).rstrip(" (:"))
            counts[key] = counts.get(key, 0) + 1
    return counts


def test_the_audit_numbers_the_docs_state_are_the_recorded_run():
    c = audit_counts()
    types = sum(n for (kind, _), n in c.items() if kind == "type")
    variants = sum(n for (kind, _), n in c.items() if kind == "variant")
    assert ("type", "MISMATCH") not in c and ("variant", "MISMATCH") not in c
    assert (f"of {types}\nconfig-type lines, **{c['type', 'ok']} ok**, {c['type', 'refused']} refused, "
            f"{c['type', 'not audited']} not audited, **no mismatch**; of {variants} scaling-variant\nlines, "
            f"{c['variant', 'ok']} ok, {c['variant', 'refused']} refused, {c['variant', 'not audited']} not audited"
            ) in CONFIGS
    assert f"{types}\nconfig-type lines and {variants} scaling-variant lines" in DATA
    assert f"**ok**: {c['type', 'ok']} config-type lines and {c['variant', 'ok']} scaling-variant lines" in DATA
    assert f"**refused**: {c['type', 'refused']} config-type lines" in DATA
    assert f"**not audited**: {c['type', 'not audited']} config-type lines" in DATA


def test_the_counts_of_families_and_recorded_configs_are_todays():
    from rope_ref.hf_families import FAMILIES
    read = sum(1 for f in FAMILIES.values() if not f.unsupported)
    family_configs = len(list((ROOT / "tests" / "data" / "configs" / "families").glob("*.json")))
    published = len(list((ROOT / "tests" / "data" / "configs").glob("*.json")))
    assert f"**{read} families** rope_ref reads" in CONFIGS
    assert f"`tests/data/configs/families/` {family_configs} small" in CONFIGS
    assert f"rope fields of {published} published configs" in CONFIGS
    assert f"| `configs/families/*.json` | {family_configs} small configs" in DATA
    mla = sum(1 for f in FAMILIES.values() if "qk_rope_head_dim" in f.head_keys)
    mrope = sum(1 for f in FAMILIES.values() if f.mrope)
    assert f"Mistral 4, ...: {mla} families)" in CONFIGS
    assert f"GLM-4V text models, ...: {mrope} families)" in CONFIGS
