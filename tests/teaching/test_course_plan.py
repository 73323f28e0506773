"""docs/lecture_plan.md: every number in it is recounted from the notebooks by one measure, and each lecture fits.

The measure (issue 31, section 3): prose at 150 words a minute, 30 s per code cell, 1 min per figure or slider
view; a lecture adds its live exercises' stated minutes and 1.5 min for each move from one notebook to the next.
"""

import json
import math
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLAN = ROOT / "docs" / "lecture_plan.md"
WPM, PER_CODE_CELL, PER_VISUAL, PER_TRANSITION = 150, 0.5, 1.0, 1.5
#: A lecture is 90 minutes; the plan keeps at least this much of it free (a kernel to restart, a question).
LECTURE, MIN_SLACK = 90, 5
CORE = ["00_why_positions", "01_three_forms", "02_rotations", "03_long_term_decay", "04_attention",
        "05_context_extension"]
#: Every notebook in notebooks/: the measured table has a row for each, the extensions (06-...) included.
ALL = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
#: A cell that draws a figure or a slider view: figures.fig_*, the extensions' F.fig_* / mx.fig_*, *_widget(,
#: and notebook 07's kernel_vs_expected(.
VISUAL = r"\bfig\w*\(|_widget\(|kernel_vs_expected\("


def cells(name):
    return json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())["cells"]


def measure(cs):
    """(words, code cells, figure/view cells, exercises) of cells a room reads: no solutions, no student cells."""
    words = code = visual = exercises = 0
    for c in cs:
        src, tags = "".join(c["source"]), c["metadata"].get("tags", [])
        if "solution" in tags:
            continue
        if c["cell_type"] == "markdown":
            words += len(re.sub(r"\$\$.*?\$\$", " formula ", src, flags=re.S).split())
            exercises += "exercise" in tags
        elif "exercise" not in tags:
            code += 1
            visual += bool(re.search(VISUAL, src))
    return words, code, visual, exercises


def minutes(words, code, visual):
    return words / WPM + PER_CODE_CELL * code + PER_VISUAL * visual


def section(name, heading):
    """The cells from the '## heading' cell to the next heading of level 1-3 (exclusive: an exercise stays out)."""
    out, inside = [], False
    for c in cells(name):
        src = "".join(c["source"])
        if c["cell_type"] == "markdown" and re.match(r"#{1,3} ", src):
            inside = src.startswith(f"## {heading}")
        if inside:
            out.append(c)
    assert out, f"{name} has no section '## {heading}': update the plan's table of reading at home"
    return out


def plan_text():
    return PLAN.read_text()


def home_reading(text):
    """notebook -> [(section heading, stated minutes)] from the plan's table of reading at home."""
    rows = re.findall(r"^\| (\d\d_\w+) \| home: (.+?) \| ([\d.]+) \|", text, re.M)
    out = {}
    for name, heading, stated in rows:
        out.setdefault(name, []).append((heading, stated))
    return out


def lectures(text):
    """[(heading, [(stated minutes, notebook, live exercise minutes)], total match)] for every '## Lecture' part."""
    parts = re.split(r"^(## Lecture \d.*)$", text, flags=re.M)
    out = []
    for heading, body in zip(parts[1::2], parts[2::2]):
        rows = [(int(m), name, sum(int(x) for x in re.findall(r"\((\d+)\)", live)))
                for m, name, live in re.findall(r"^\| (\d+) \| (\d\d_\w+) \|[^|]*\| ([^|]*) \|", body, re.M)]
        total = re.search(r"\*\*(\d+) \+ (\d+) = (\d+)\*\* of 90 min, (\d+) min free", body)
        out.append((heading, rows, total))
    return out


def test_the_plan_states_the_measure_the_test_applies():
    text = plan_text()
    for stated in ["**150 words per minute**", "**30 s per code cell**", "**1 more minute**",
                   "**1.5 min** for each move", f"at least {MIN_SLACK} min"]:
        assert stated in text, stated


def test_measured_table_is_recounted_from_the_notebooks():
    text = plan_text()
    row = r"^\| (\d\d_\w+) \| (\d+) \| (\d+) \| (\d+) \| ([\d.]+) \| (\d+) \|$"
    rows = {m[0]: m[1:] for m in re.findall(row, text, re.M)}
    assert set(rows) == set(ALL), sorted(set(rows) ^ set(ALL))
    for name in ALL:
        w, c, v, e = measure(cells(name))
        assert rows[name] == (str(w), str(c), str(v), f"{minutes(w, c, v):.1f}", str(e)), name


def test_reading_at_home_is_measured():
    home = home_reading(plan_text())
    assert home, "the plan lists what is read at home"
    for name, items in home.items():
        for heading, stated in items:
            assert stated == f"{minutes(*measure(section(name, heading))[:3]):.1f}", (name, heading)


def test_every_lecture_adds_up_and_fits_with_slack():
    text = plan_text()
    home = home_reading(text)
    found = lectures(text)
    assert [name for _, rows, _ in found[:1] for _, name, _ in rows] == CORE, "lecture 1 is the core path, in order"
    extensions = [name for _, rows, _ in found[1:] for _, name, _ in rows]
    assert len(found) == 3 and extensions == [n for n in ALL if n not in CORE], "the extensions as two lectures"
    for heading, rows, total in found:
        for stated, name, live in rows:
            at_home = sum(minutes(*measure(section(name, h))[:3]) for h, _ in home.get(name, []))
            room = minutes(*measure(cells(name))[:3]) - at_home + live
            assert stated == math.ceil(room), (heading, name, room)
        assert total, f"{heading}: a total '**rows + transitions = sum** of 90 min, N min free'"
        in_rows, moves, whole, free = map(int, total.groups())
        assert in_rows == sum(r[0] for r in rows), heading
        assert moves == math.ceil(PER_TRANSITION * (len(rows) - 1)), heading
        assert whole == in_rows + moves and free == LECTURE - whole >= MIN_SLACK, heading

