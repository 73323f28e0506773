"""Reading the course notebooks' cells in tests (one copy): source text, tags, the prose a student reads."""

import json
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def cells(name: str) -> list:
    """The cells of ``notebooks/<name>.ipynb`` (name without the suffix)."""
    return json.loads((NOTEBOOKS / f"{name}.ipynb").read_text())["cells"]


def src(cell) -> str:
    return "".join(cell["source"])


def tags(cell) -> list:
    return cell["metadata"].get("tags", [])


def prose(name: str, *, solutions: bool | None = False) -> str:
    """The markdown of a notebook: without solutions (False), only solutions (True), or all (None)."""
    return "\n".join(src(c) for c in cells(name) if c["cell_type"] == "markdown"
                     and (solutions is None or ("solution" in tags(c)) == solutions))


def text(name: str, *, solutions: bool | None = False) -> str:
    """The prose with whitespace collapsed to single spaces (a phrase may be split across lines)."""
    return " ".join(prose(name, solutions=solutions).split())


def run_cells(name: str, *ids: str, namespace: dict | None = None) -> dict:
    """Execute the code cells ``ids`` in order in ``namespace`` (a new dict when None; a test may fill in inputs)
    and return it: what a notebook computes, read from its own lines.  ``%`` magics are skipped."""
    namespace = {} if namespace is None else namespace
    by_id = {c["id"]: c for c in cells(name)}
    for cell_id in ids:
        code = "\n".join(line for line in src(by_id[cell_id]).splitlines() if not line.startswith("%"))
        exec(compile(code, f"{name}.ipynb:{cell_id}", "exec"), namespace)
    return namespace
