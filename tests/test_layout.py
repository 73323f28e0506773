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
ORACLE = [p for p in sorted(PKG.rglob("*.py")) if "teaching" not in p.relative_to(PKG).parts]
#: The command line loads the teaching layer on demand, in these functions only.
ON_DEMAND = {("__main__.py", "write_figures"), ("__main__.py", "build_course_site")}


@pytest.mark.slow
def test_import_rope_ref_loads_no_teaching_dependency():
    code = ("import sys, rope_ref, rope_ref.__main__, rope_ref.checks, rope_ref.kernel_check; "
            f"print(sorted(m for m in {sorted(TEACHING_DEPS | {'rope_ref.teaching'})!r} if m in sys.modules))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.strip() == "[]", res.stdout


def _imports(path):
    """(enclosing function or None, imported module) for every import statement in ``path``."""
    tree = ast.parse(path.read_text())
    inside = {id(node): fn.name for fn in ast.walk(tree) if isinstance(fn, ast.FunctionDef) for node in ast.walk(fn)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((inside.get(id(node)), alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            yield inside.get(id(node)), "." * node.level + (node.module or "")


@pytest.mark.slow
def test_the_oracle_imports_the_teaching_layer_only_on_demand_in_the_command_line():
    for path in ORACLE:
        for function, name in _imports(path):
            assert name.split(".")[0] not in TEACHING_DEPS, f"{path.name} imports {name}"
            assert "teaching" not in name or (path.name, function) in ON_DEMAND, f"{path.name}:{function} imports {name}"
    assert ("write_figures", ".teaching.figures") in _imports(PKG / "__main__.py")     # the walk sees them


def _top_level_imports(path):
    """The modules of rope_ref/ (top level) that ``path`` imports at module level, relatively."""
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            names |= {node.module} if node.module else {a.name for a in node.names}
    return {n.split(".")[0] for n in names} & {p.stem for p in PKG.glob("*.py")}


@pytest.mark.slow
def test_the_oracle_modules_import_no_cycle():
    graph = {p.stem: _top_level_imports(p) for p in PKG.glob("*.py") if p.stem not in ("__init__", "__main__")}
    done: set = set()

    def visit(name, path):
        assert name not in path, f"import cycle: {' -> '.join(path + [name])}"
        if name not in done:
            for dep in graph.get(name, ()):
                visit(dep, path + [name])
            done.add(name)

    for name in graph:
        visit(name, [])
    assert "forms" in graph["checks"]       # the graph is read, not empty


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
    named = set(re.findall(r"`([\w<>]+)(?:\.py|/)?`", page))
    modules = {p.stem for p in PKG.rglob("*.py") if p.stem != "__init__"} | {"kernel_check", "teaching"}
    missing = {m for m in modules if m not in named and not (m.startswith("exercises_") and "exercises_<topic>" in named)}
    assert not missing, missing
