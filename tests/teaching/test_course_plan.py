"""docs/lecture_plan.md's teaching times recounted from the notebooks by the plan's own rule; each 90-minute lecture
fits.  ``python tests/teaching/test_course_plan.py`` prints the counts; ``--write`` recounts the plan's columns."""

import json
import math
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLAN = ROOT / "docs" / "lecture_plan.md"
WPM, PER_CODE, PER_VISUAL, PER_EXERCISE, PER_MOVE, LECTURE, MIN_QUESTIONS = 150, 1, 2, 5, 2, 90, 10
ALL = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
#: A cell that draws a figure or a slider view: figures.fig_*, the extensions' F.fig_* / mx.fig_*, *_widget(,
#: and notebook 07's kernel_vs_expected(.
VISUAL = r"\bfig\w*\(|_widget\(|kernel_vs_expected\("
STATED = r"Teaching time: about (\d+) minutes"


def cells(name):
    return json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())["cells"]


def counts(cs):
    """(words, code cells, figure/view cells, exercises) of the cells a room goes through: no solutions, and an
    exercise's student cell counts with its exercise.  A display formula $$...$$ counts as one word."""
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


def reading(words, code, visual, exercises):
    """A student reading alone: the measure of the previous plan, for comparison."""
    return words / WPM + 0.5 * code + visual


def teaching(words, code, visual, exercises):
    return 2 * words / WPM + PER_CODE * code + PER_VISUAL * visual + PER_EXERCISE * exercises


def stated_time(minutes):
    return 5 * math.ceil(minutes / 5)


def heading(cell):
    src = "".join(cell["source"])
    return src.split("\n", 1)[0].lstrip("#").strip() if cell["cell_type"] == "markdown" and re.match(r"#{1,3} ", src) \
        else None


def section(name, title):
    """The cells from the heading (level 1-3) that starts with ``title`` to the next heading of level 1-3."""
    out, inside = [], False
    for c in cells(name):
        if (h := heading(c)) is not None:
            inside = h.startswith(title)
        if inside:
            out.append(c)
    assert out, f"{name} has no section starting '{title}': update docs/lecture_plan.md"
    return out


def lectures(text):
    """[(heading, [(minutes, notebook, [demo titles], [homework titles])], totals or None)] per '## Lecture'."""
    parts = re.split(r"^(## Lecture \d.*)$", text, flags=re.M)
    out = []
    for head, body in zip(parts[1::2], parts[2::2]):
        rows = [(int(m), name, [t.strip() for t in demo.split(";") if t.strip() not in ("", "—")],
                 [t.strip() for t in home.split(";") if t.strip() not in ("", "—")])
                for m, name, demo, home in re.findall(r"^\| (\d+) \| (\d\d_\w+) \|[^|]*\| ([^|]*) \| ([^|]*) \|$",
                                                      body, re.M)]
        total = re.search(r"\*\*(\d+) \+ (\d+) \+ (\d+) = (\d+)\*\* of 90 min", body)
        out.append((head, rows, total and tuple(map(int, total.groups()))))
    return out


def room_minutes(name, demo, home):
    return math.ceil(teaching(*counts(cells(name))) - sum(teaching(*counts(section(name, t))) for t in home)
                     - sum(teaching(*counts(section(name, t))) for t in demo) / 2)


def test_the_plan_states_the_rule_the_test_applies():
    text = " ".join(PLAN.read_text().split())
    for stated in ["**words / 75**", "**1 min per code cell**", "**2 more minutes**", "**5 min per exercise**",
                   "rounded up to 5 minutes", "a demo counts **half**", "**2 min** per move",
                   f"at least **{MIN_QUESTIONS} min of questions**"]:
        assert stated in text, stated


def test_every_notebook_states_its_teaching_time_and_the_plan_agrees():
    rows = {m[0]: m[1:] for m in re.findall(r"^\| (\d\d_\w+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \| ([\d.]+) \| "
                                            r"([\d.]+) \| (\d+) \|$", PLAN.read_text(), re.M)}
    assert set(rows) == set(ALL), sorted(set(rows) ^ set(ALL))
    wrong = []
    for name in ALL:
        n = counts(cells(name))
        expect = (*map(str, n), f"{reading(*n):.1f}", f"{teaching(*n):.1f}", str(stated_time(teaching(*n))))
        said = re.findall(STATED, "".join(cells(name)[0]["source"]))
        if rows[name] != expect or said != [expect[-1]]:
            wrong.append((name, rows[name], expect, said))
    assert not wrong, f"(notebook, plan's row, recounted, the first cell's 'Teaching time') differ: {wrong}"
    assert all(float(r[5]) >= 2 * float(r[4]) for r in rows.values()), "teaching is at least twice reading"


def test_every_lecture_adds_up_and_fits_in_90_minutes_with_questions():
    text = PLAN.read_text()
    found = lectures(text)
    order = [name for _, rows, _ in found for _, name, _, _ in rows]
    assert len(found) == 3 and len(order) == len(set(order)), "three lectures, each notebook in one at most"
    assert order.index("11_rope_inside_a_real_model") < order.index("10_the_papers_numbers"), "11 comes before 10"
    assert "05_context_extension" not in [name for _, name, _, _ in found[0][1]], "05 is mostly out of lecture 1"
    homework_only = re.findall(r"^\* `(\d\d_\w+)`", text.split("### Homework only", 1)[1], re.M)
    assert sorted(order + homework_only) == ALL, "every notebook is in a lecture or homework only"
    for head, rows, total in found:
        for minutes, name, demo, home in rows:
            assert minutes == room_minutes(name, demo, home), (head, name, room_minutes(name, demo, home))
        assert total, f"{head}: a total '**rows + moves + questions = sum** of 90 min'"
        in_rows, moves, questions, whole = total
        assert in_rows == sum(r[0] for r in rows) and moves == PER_MOVE * (len(rows) - 1), head
        assert questions >= MIN_QUESTIONS and whole == in_rows + moves + questions <= LECTURE, head


def recounted(text):
    """The plan with its counted columns (the table of times, each lecture row's minutes) recounted; the cut and the
    totals stay as written, so the test still checks that each lecture fits."""
    for name in ALL:
        n = counts(cells(name))
        row = f"| {name} | {' | '.join(map(str, n))} | {reading(*n):.1f} | {teaching(*n):.1f} | " \
              f"{stated_time(teaching(*n))} |"
        text = re.sub(rf"^\| {name} \| \d+ \| \d+ \| \d+ \| \d+ \| [\d.]+ \| [\d.]+ \| \d+ \|$", row, text, flags=re.M)
    for _, rows, _ in lectures(text):
        for _, name, demo, home in rows:
            text = re.sub(rf"^\| \d+ \| {name} \|", f"| {room_minutes(name, demo, home)} | {name} |", text, flags=re.M)
    return text


if __name__ == "__main__":          # print every count; with --write, recount the plan's counted columns in place
    import sys
    if "--write" in sys.argv:
        PLAN.write_text(recounted(PLAN.read_text()))
    for name in ALL:
        print(name, f"teaching {teaching(*counts(cells(name))):.1f} min")
        for c in cells(name):
            if (h := heading(c)) is not None and not c["source"][0].startswith("# "):
                print(f"      {teaching(*counts(section(name, h))):5.1f}  {h}")
    for head, rows, total in lectures(PLAN.read_text()):
        print(head, [f"{name}: {room_minutes(name, demo, home)}" for _, name, demo, home in rows], "stated", total)
