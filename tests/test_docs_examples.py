"""Every ```python block of the docs pages below runs as written, in order, one namespace per page.

The blocks carry their numbers as ``assert`` lines, so a number that is no longer what the code gives
fails here.  Run from the checkout's root (paths such as tests/data/configs/... are relative to it).
"""

import os
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["docs/checking_kernels.md", "docs/oracle.md", "docs/model_configs.md"]


def python_blocks(text):
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def test_the_pages_have_blocks():
    for page in PAGES:
        assert python_blocks((ROOT / page).read_text()), page


@pytest.mark.parametrize("page", PAGES)
def test_every_python_block_runs(page, monkeypatch):
    monkeypatch.chdir(ROOT)
    namespace = {"__name__": "docs_example"}
    for i, block in enumerate(python_blocks((ROOT / page).read_text())):
        code = compile(block, f"{page} block {i + 1}", "exec")
        exec(code, namespace)
