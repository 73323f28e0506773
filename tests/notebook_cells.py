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
