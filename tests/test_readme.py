"""The README and the docs claim no index release, and every page they link to exists."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", ROOT / "benchmarks" / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_no_page_claims_an_index_release():
    for page in PAGES:
        for line in page.read_text().splitlines():
            if re.search(r"pip install\s+['\"]?rope_ref\b", line):
                assert "not" in line, f"{page.name}: {line}"


def test_every_relative_link_resolves():
    missing = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if re.match(r"\w+:", target):
                continue
            path = (page.parent / target).resolve()
            if not path.exists():
                missing.append((page.relative_to(ROOT), target))
    assert not missing, missing
