"""The architecture holds: the oracle imports without the teaching layer or its dependencies."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import rope_ref

PKG = Path(__file__).resolve().parents[1] / "rope_ref"
TEACHING_DEPS = {"matplotlib", "IPython", "ipywidgets", "PIL", "nbformat", "nbclient", "nbconvert"}


@pytest.mark.slow
def test_import_rope_ref_loads_no_teaching_dependency():
    code = ("import sys, rope_ref, rope_ref.__main__, rope_ref.checks, rope_ref.kernel_check; "
            f"print(sorted(m for m in {sorted(TEACHING_DEPS | {'rope_ref.teaching'})!r} if m in sys.modules))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.strip() == "[]", res.stdout


@pytest.mark.slow
def test_no_public_name_is_also_a_module():
    modules = {p.stem for p in PKG.rglob("*.py")} | {p.name for p in PKG.rglob("*") if (p / "__init__.py").exists()}
    publics = set(rope_ref.__all__)
    for sub in ("kernel_check", "teaching"):
        for path in (PKG / sub).glob("*.py"):
            publics |= {n.name for n in ast.parse(path.read_text()).body
                        if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and not n.name.startswith("_")}
    assert not publics & modules, publics & modules


def test_the_architecture_page_names_every_module():
    page = (PKG.parent / "docs" / "architecture.md").read_text()
    named = set(re.findall(r"`(\w+)(?:\.py|/)?`", page))
    modules = {p.stem for p in PKG.rglob("*.py") if p.stem != "__init__"} | {"kernel_check", "teaching"}
    missing = modules - named
    assert not missing, missing
