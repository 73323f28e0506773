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


#: Show the math you teach: each row is a visible code cell (found by its first line) that computes what the notebook
#: teaches in its own few lines of NumPy, then compares it with rope_ref's form.  (notebook, first line starts with,
#: the form it is compared with, at most this many lines of math, calls the math lines must not make).
SHOWN = [
    ("01_three_forms", "# eqs 12-13 in NumPy", "rr.rotate_complex(", 4, ["rr."]),
    ("01_three_forms", "# eqs 14-15 in NumPy", "rr.rotation_matrix(", 6, ["rr."]),
    ("01_three_forms", "# eq 34 for one vector", "rr.rotate_elementwise(", 6, ["rr."]),
    ("01_three_forms", "# eq 16 with the matrices", "rr.rotate(", 6, ["rr."]),
    ("01_three_forms", "# eq 16 with complex numbers", "rr.rotate(", 6, ["rr."]),
    ("03_long_term_decay", "# eqs 36-37 and Figure 2", "rr.partial_sums(", 6, ["rr."]),
    ("03_long_term_decay", "# eqs 36-37 and Figure 2", "rr.decay_bound(", 6, ["rr."]),
    ("03_long_term_decay", "# eqs 35-37 in NumPy", "rr.rotate(", 12, ["rr."]),
    ("04_attention", "# eq 2 with RoPE in NumPy", "rr.attention(", 6, ["rr.attention"]),
    ("04_attention", "# the KV cache in NumPy", "rr.attention(", 12, ["rr.attention"]),
    ("04_attention", "# eq 19's weights in NumPy", "rr.linear_attention(", 4, ["rr.linear_attention"]),
    ("05_context_extension", "# each method's frequencies in NumPy", "rr.scaled_inv_freq(", 20, ["rr.scaled_inv_freq"]),
    ("11_rope_inside_a_real_model", "# the forward pass in NumPy", "model.forward(", 30, ["model.forward", "rm."]),
]


def split_math(code: str, form: str) -> tuple[list, str]:
    """A cell's code lines after its first line, split at its first print, assert or call of ``form``: the lines
    that do the math (blank and comment lines left out), and the rest of the cell as text."""
    lines = code.splitlines()[1:]
    end = next((i for i, line in enumerate(lines) if line.strip().startswith(("print(", "assert ")) or form in line),
               len(lines))
    return [ln for ln in lines[:end] if ln.strip() and not ln.strip().startswith("#")], "\n".join(lines[end:])


@pytest.mark.parametrize("name,first,form,most,forbidden", SHOWN, ids=[f"{s[0][:2]} {s[1][2:]} {s[2]}" for s in SHOWN])
def test_notebook_shows_the_math_it_teaches_then_compares_it_with_rope_ref(name, first, form, most, forbidden):
    cells = json.loads((NOTEBOOKS[0].parent / f"{name}.ipynb").read_text())["cells"]
    code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    found = [i for i, s in enumerate(code) if s.startswith(first)]
    assert len(found) == 1, f"{name}: one code cell starts with {first!r}, found {len(found)}"
    meta = [c for c in cells if c["cell_type"] == "code"][found[0]]["metadata"]
    assert not meta.get("jupyter", {}).get("source_hidden") and not {"solution", "exercise"} & set(meta.get("tags", [])), \
        f"{name}: the cell {first!r} is a visible cell of the lesson, not an exercise or a hidden solution"
    lines, rest = split_math(code[found[0]], form)
    assert 1 <= len(lines) <= most, f"{name}: {first!r} does its math in 1..{most} lines, got {len(lines)}: {lines}"
    assert not [ln for ln in lines if any(call in ln for call in forbidden)], \
        f"{name}: {first!r} computes the math itself, without calling {forbidden}: {lines}"
    compared = rest + "\n" + (code[found[0] + 1] if found[0] + 1 < len(code) else "")
    assert form in compared and "assert " in compared, \
        f"{name}: after {first!r} computes it, the same or the next code cell compares it with {form}...) in an assert"


@pytest.mark.parametrize("path", NOTEBOOKS[:6], ids=[p.name for p in NOTEBOOKS[:6]])
def test_notebook_shows_its_own_lines_not_the_package_source(path):
    # The core notebooks (00-05): the math they teach stands in their cells; printing rope_ref's source (full of
    # argument checks) is not showing it.
    code = "".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code")
    assert "getsource(" not in code, f"{path.name} prints a function's source instead of showing its own lines"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_randomness_is_seeded(path):
    import re
    code = "".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code")
    for call in re.findall(r"np\.random\.(\w+)\(([^)]*)\)", code):
        assert call[0] == "default_rng" and call[1].strip(), f"{path.name}: unseeded np.random.{call[0]}"
