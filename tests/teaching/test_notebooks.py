"""Notebooks are stored clean; pytest --nbmake (configured in pyproject) executes them."""

import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").glob("*.ipynb"))
EXPECTED = ["00_why_positions", "01_three_forms", "02_rotations", "03_long_term_decay", "04_attention",
            "05_context_extension", "06_precision", "07_check_your_rope", "08_what_frequencies_do", "09_multi_axis",
            "10_the_papers_numbers"]


def test_expected_notebooks_exist():
    names = {p.stem for p in NOTEBOOKS}
    assert set(EXPECTED) <= names, f"missing: {set(EXPECTED) - names}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_stored_clean(path):
    nb = json.loads(path.read_text())
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        assert cell.get("outputs") == [], f"{path.name} cell {i} has stored outputs"
        assert cell.get("execution_count") is None, f"{path.name} cell {i} has an execution count"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_valid_nbformat_with_unique_cell_ids(path):
    """nbformat 4.5: every cell has an id (a missing one is a MissingIDFieldWarning now, an error later)."""
    nbformat = pytest.importorskip("nbformat")
    raw = json.loads(path.read_text())
    ids = [cell.get("id") for cell in raw["cells"]]
    assert None not in ids, f"{path.name}: cells {[i for i, c in enumerate(ids) if c is None]} have no id"
    assert len(set(ids)) == len(ids), f"{path.name}: repeated cell ids"
    nbformat.validate(nbformat.reads(path.read_text(), as_version=4))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_defines_no_formulas(path):
    # Formulas live in rope_ref: notebooks call it, they do not define functions of their own.
    # The one exception: the solution cell of the exercise "write eq 34 in five lines", tagged
    # "writes-a-formula" (test_course_structure checks there is exactly one, and that it is a solution).
    nb = json.loads(path.read_text())
    for i, cell in enumerate(nb["cells"]):
        src = "".join(cell["source"])
        if cell["cell_type"] == "code":
            assert "def " not in src and "lambda" not in src, f"{path.name} cell {i} defines a function"
            if "writes-a-formula" in cell["metadata"].get("tags", []):
                continue
            assert "np.cos" not in src and "np.sin" not in src and "np.exp" not in src, \
                f"{path.name} cell {i} computes a rotation by hand"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_randomness_is_seeded(path):
    import re
    code = "".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code")
    for call in re.findall(r"np\.random\.(\w+)\(([^)]*)\)", code):
        assert call[0] == "default_rng" and call[1].strip(), f"{path.name}: unseeded np.random.{call[0]}"
