"""Notebooks as committed: clean, valid, solutions folded in every viewer, and the math they teach shown in NumPy."""

import json
import re
import subprocess

import pytest

from notebook_cells import NOTEBOOKS as NB_DIR, cells, src, tags

ROOT = NB_DIR.parent
NAMES = sorted(p.stem for p in NB_DIR.glob("*.ipynb"))


def committed(name):
    """The notebook at HEAD (a student's autosaved outputs do not count), or None outside git or uncommitted."""
    try:
        out = subprocess.run(["git", "show", f"HEAD:notebooks/{name}.ipynb"], cwd=ROOT, capture_output=True,
                             timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return json.loads(out.stdout) if out.returncode == 0 else None


@pytest.mark.parametrize("name", NAMES)
def test_notebook_is_committed_clean(name):
    nb = committed(name)
    if nb is None:
        pytest.skip("not in a git checkout, or the notebook is not committed yet")
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    dirty = [i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"
             and (c.get("outputs") != [] or c.get("execution_count") is not None)]
    assert not dirty, f"{name}: committed with outputs or execution counts in cells {dirty}"


@pytest.mark.parametrize("name", NAMES)
def test_notebook_is_valid_nbformat_with_unique_cell_ids(name):
    """nbformat 4.5: every cell has an id (a missing one is a MissingIDFieldWarning now, an error later)."""
    nbformat = pytest.importorskip("nbformat")
    text = (NB_DIR / f"{name}.ipynb").read_text()
    ids = [c.get("id") for c in json.loads(text)["cells"]]
    assert None not in ids and len(set(ids)) == len(ids), f"{name}: a cell without an id, or a repeated id"
    nbformat.validate(nbformat.reads(text, as_version=4))


DETAILS = re.compile(r"<details><summary>Solution</summary>\n(.*?)</details>", re.S)
FENCE = re.compile(r"^```python\n(.*?)^```$", re.S | re.M)


def solution_code(cell) -> str:
    """The Python of a solution cell: one markdown cell holding exactly one <details><summary>Solution</summary>
    block (nothing outside it) with exactly one ```python block; AssertionError otherwise."""
    text = src(cell)
    assert cell["cell_type"] == "markdown", "a solution is a markdown cell: no viewer runs or shows it unasked"
    blocks = DETAILS.findall(text)
    assert len(blocks) == 1 and not DETAILS.sub("", text).strip(), "exactly one <details> block and nothing else"
    code = FENCE.findall(blocks[0])
    assert len(code) == 1 and blocks[0].count("```") == 2, "exactly one fenced ```python block"
    return code[0]


@pytest.mark.parametrize("name", NAMES)
def test_every_solution_is_folded_in_every_viewer_and_ends_in_its_checker(name):
    """JupyterLab, VS Code, Colab and GitHub's preview all fold <details> (issue 39, item 4); the code ends by
    calling the checker, which prints 'Correct: ...' when the site's run-once test executes it."""
    cs = cells(name)
    solutions = [c for c in cs if "solution" in tags(c)]
    assert solutions or not any("exercise" in tags(c) for c in cs), f"{name}: exercises without solutions"
    for c in solutions:
        code = solution_code(c)
        last = [ln for ln in code.splitlines() if ln.strip() and not ln.lstrip().startswith("#")][-1]
        assert re.match(r"\w+\.check_\w+\(.*\);?$", last), f"{name}: a solution ends by calling its checker: {last!r}"
        assert not c["metadata"].get("jupyter") and not c["metadata"].get("jp-MarkdownHeadingCollapsed"), \
            f"{name}: the old hidden-cell metadata is gone"


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
    ("04_attention", "# eq 19's weights in NumPy", "rr.linear_attention(", 5, ["rr.linear_attention"]),
    ("05_context_extension", "# each method's frequencies in NumPy", "rr.scaled_inv_freq(", 20, ["rr.scaled_inv_freq"]),
    ("11_rope_inside_a_real_model", "# the forward pass in NumPy", "model.forward(", 30, ["model.forward", "rm."]),
]


def split_math(code: str, form: str) -> tuple[list, str]:
    """(the math lines after the first line, up to the first print, assert or ``form``; the rest of the cell)."""
    lines = code.splitlines()[1:]
    end = next((i for i, line in enumerate(lines) if line.strip().startswith(("print(", "assert ")) or form in line),
               len(lines))
    return [ln for ln in lines[:end] if ln.strip() and not ln.strip().startswith("#")], "\n".join(lines[end:])


@pytest.mark.parametrize("name,first,form,most,forbidden", SHOWN, ids=[f"{s[0][:2]} {s[1][2:]} {s[2]}" for s in SHOWN])
def test_notebook_shows_the_math_it_teaches_then_compares_it_with_rope_ref(name, first, form, most, forbidden):
    code_cells = [c for c in cells(name) if c["cell_type"] == "code"]
    found = [i for i, c in enumerate(code_cells) if src(c).startswith(first)]
    assert len(found) == 1, f"{name}: one code cell starts with {first!r}, found {len(found)}"
    assert not {"solution", "exercise"} & set(tags(code_cells[found[0]])), f"{name}: {first!r} is part of the lesson"
    lines, rest = split_math(src(code_cells[found[0]]), form)
    assert 1 <= len(lines) <= most, f"{name}: {first!r} does its math in 1..{most} lines, got {len(lines)}: {lines}"
    assert not [ln for ln in lines if any(call in ln for call in forbidden)], \
        f"{name}: {first!r} computes the math itself, without calling {forbidden}: {lines}"
    compared = rest + "\n" + (src(code_cells[found[0] + 1]) if found[0] + 1 < len(code_cells) else "")
    assert form in compared and "assert " in compared, \
        f"{name}: after {first!r} computes it, the same or the next code cell compares it with {form}...) in an assert"


@pytest.mark.parametrize("name", NAMES)
def test_notebook_randomness_is_seeded_and_no_source_is_printed(name):
    code = "".join(src(c) for c in cells(name) if c["cell_type"] == "code")
    for call, args in re.findall(r"np\.random\.(\w+)\(([^)]*)\)", code):
        assert call == "default_rng" and args.strip(), f"{name}: unseeded np.random.{call}"
    assert "getsource(" not in code or int(name[:2]) >= 6, f"{name} prints a function's source instead of its own lines"
