"""The architecture holds: the oracle imports without the teaching layer's dependencies."""

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "rope_ref"
TEACHING_DEPS = {"matplotlib", "IPython", "ipywidgets", "PIL", "nbformat", "nbclient", "nbconvert"}


def test_import_rope_ref_loads_no_teaching_dependency():
    code = ("import sys, rope_ref, rope_ref.checks, rope_ref.kernel_check, rope_ref.scaling; "
            f"print(sorted(m for m in {sorted(TEACHING_DEPS)!r} if m in sys.modules))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert res.stdout.strip() == "[]", res.stdout


def _imports(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            yield ("." * node.level) + (node.module or "")


def _oracle_modules():
    """Every module of the package outside rope_ref/teaching (subpackages such as kernel_check/ included)."""
    return [p for p in sorted(PKG.rglob("*.py")) if "teaching" not in p.relative_to(PKG).parts]


def test_oracle_modules_include_the_subpackages():
    assert PKG / "kernel_check" / "__init__.py" in _oracle_modules()
    assert not any("teaching" in p.parts for p in _oracle_modules())


@pytest.mark.slow
def test_oracle_modules_import_neither_teaching_nor_its_dependencies():
    for path in _oracle_modules():
        if path.name == "__main__.py":       # the CLI loads the figures on demand
            continue
        for name in _imports(path):
            assert "teaching" not in name, f"{path.name} imports {name}"
            assert name.split(".")[0] not in TEACHING_DEPS, f"{path.name} imports {name}"


@pytest.mark.slow
def test_no_function_local_imports_in_the_package():
    allowed = {("__main__.py", "_figures"), ("__main__.py", "_site")}   # optional dependencies, with a clear message
    for path in sorted(PKG.rglob("*.py")):
        for fn in ast.walk(ast.parse(path.read_text())):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                local = [n for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom))]
                assert not local or (path.name, fn.name) in allowed, f"{path.name}:{fn.name} imports inside"


def _top_level_imports(path):
    """The modules of rope_ref/ (top level) that ``path`` imports at module level, relatively."""
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            names |= {node.module} if node.module else {a.name for a in node.names}
    return {n.split(".")[0] for n in names} & {p.stem for p in PKG.glob("*.py")}


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
    assert "forms" in graph["rope_attention"] and "_fast" in graph["forms"]     # the graph is read, not empty


def test_no_public_name_is_also_a_module():
    # every module of the package, the subpackages' included (teaching.spectrum, kernel_check.naming, ...)
    import rope_ref
    modules = {p.stem for p in PKG.rglob("*.py")} | {p.name for p in PKG.rglob("*") if (p / "__init__.py").exists()}
    publics = set(rope_ref.__all__)
    for sub in ("kernel_check", "teaching"):
        for path in (PKG / sub).glob("*.py"):
            publics |= {n.name for n in ast.parse(path.read_text()).body
                        if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and not n.name.startswith("_")}
    clash = publics & modules
    assert not clash, clash


def test_the_architecture_page_names_every_module():
    # docs/architecture.md is the map for the next maintainer: a module it does not name is a room off the map
    page = (PKG.parent / "docs" / "architecture.md").read_text()
    named = set(re.findall(r"`([\w<>]+)(?:\.py|/)?`", page))
    modules = {p.stem for p in PKG.rglob("*.py") if p.stem != "__init__"} | {"kernel_check", "teaching"}
    missing = {m for m in modules if m not in named and not (m.startswith("exercises_") and "exercises_<topic>" in named)}
    assert not missing, missing
