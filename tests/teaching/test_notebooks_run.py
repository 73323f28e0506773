"""Every notebook run once (each solution's code run right after it, in an added cell tagged :data:`CHECK`), and
every test that needs the runs, kept in this module so that ``--dist loadfile`` runs them on one worker: the site
built from the runs, read as HTML and in headless Chromium offline, and the runs opened in one JupyterLab."""

from __future__ import annotations

import contextlib
import html
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from rope_ref.teaching.site import build_site, course_notebooks
from rope_ref.teaching.widgets import _widget_call

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = course_notebooks(ROOT / "notebooks")
NAMES = [p.name for p in NOTEBOOKS]
CHECK = "solution-check"        # the tag of the cells this module adds: a solution's code, run where it stands
TOKEN = "rope-ref-browser-test"
#: Every slider view of the course: (widget function, args, kwargs) of each notebook cell that calls one.
VIEWS = [call for p in NOTEBOOKS for c in nbformat.read(p, 4).cells if (call := _widget_call(c.source))]


def solution_code(cell) -> str:
    """A solution's code: the fenced ```python block of a markdown cell tagged ``solution``; else ''."""
    solution = "solution" in cell.metadata.get("tags", []) and cell.cell_type == "markdown"
    return "\n".join(re.findall(r"```python\n(.*?)```", cell.source, re.S)) if solution else ""


def needles(nb) -> list[str]:
    """Lines only a solution shows: each solution's code lines and plain prose lines of 12 characters or more that
    no other cell holds (whitespace runs made one space, as the pages are compared)."""
    found = []
    for cell in nb.cells:
        prose = "" if cell.cell_type == "code" else re.sub(r"```.*?```", "", cell.source, flags=re.S)
        lines = solution_code(cell).splitlines() + [ln for ln in prose.splitlines() if not re.search(r"[`*_$<>#|]", ln)]
        found += [" ".join(ln.split()) for ln in lines if len(ln.strip()) >= 12 and "(solution)" not in ln] \
            if "solution" in cell.metadata.get("tags", []) else []
    elsewhere = " ".join(" ".join(c.source.split()) for c in nb.cells if "solution" not in c.metadata.get("tags", []))
    return [n for n in found if n not in elsewhere]


@pytest.fixture(scope="module")
def runs() -> dict:
    """name -> (the executed notebook with its CHECK cells, the error or None): every notebook run once."""
    done = {}
    for path in NOTEBOOKS:
        nb = nbformat.read(path, 4)
        cells = []
        for cell in nb.cells:
            code = solution_code(cell)
            cells += [cell, nbformat.v4.new_code_cell(code, metadata={"tags": [CHECK]})] if code else [cell]
        nb.cells = cells
        try:
            NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
                           ).execute(stderr=subprocess.DEVNULL)
            done[path.name] = (nb, None)
        except CellExecutionError as exc:
            done[path.name] = (nb, exc)
    return done


def as_run_all_leaves_it(nb):
    """The executed notebook without the cells :func:`runs` added."""
    return nbformat.from_dict({**nb, "cells": [c for c in nb.cells if CHECK not in c.metadata.get("tags", [])]})


@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs_and_every_solution_is_correct(runs, name):
    nb, error = runs[name]
    assert error is None, f"{name}: {error}"
    stored = nbformat.read(ROOT / "notebooks" / name, 4)
    exercises = [c for c in stored.cells if "exercise" in c.metadata.get("tags", []) and c.cell_type == "code"]
    solved = [c for c in nb.cells if CHECK in c.metadata.get("tags", [])]
    assert len(solved) >= len(exercises), f"{name}: {len(exercises)} exercises, {len(solved)} solutions with code"
    for cell in solved:
        printed = "".join(o.get("text", "") for o in cell.outputs if o.output_type == "stream").split("\n")
        last = [line for line in printed if line.strip()][-1:]
        assert last and last[0].startswith("Correct"), f"{name}: the solution\n{cell.source}\nprinted {printed}"


# ---- the course site, built from these runs ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def site(runs, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    build_site(out, NOTEBOOKS, executed=[as_run_all_leaves_it(runs[name][0]) for name in NAMES])
    return out


def text_outside_details(page: Path) -> tuple[str, str]:
    """A page's visible text with every <details> taken out, and the text inside them (tags dropped, entities
    read, whitespace runs one space)."""
    raw = re.sub(r"<style>.*?</style>|<math.*?</math>", " ", page.read_text(encoding="utf-8"), flags=re.S)
    folded = re.findall(r"<details.*?</details>", raw, re.S)
    def text(s):
        return " ".join(html.unescape(re.sub(r"<[^>]+>", "", s)).split())
    return text(re.sub(r"<details.*?</details>", " ", raw, flags=re.S)), text(" ".join(folded))


def test_every_page_is_there_with_its_math_rendered_and_its_solutions_folded(site):
    links = re.findall(r'<a href="([^"]+\.html)">', (site / "index.html").read_text(encoding="utf-8"))
    assert links == [f"{p.stem}.html" for p in NOTEBOOKS]
    for page in [site / "index.html", site / "handout.html", *(site / f"{p.stem}.html" for p in NOTEBOOKS)]:
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"<(script|link|iframe|object|embed)\b", text), page.name
        prose = re.sub(r'<div class="highlight.*?</pre></div>|<code>.*?</code>', " ", text, flags=re.S)   # not code
        tex = re.findall(r"\$[^$<>]{1,80}\$", html.unescape(re.sub(r"<[^>]+>", "", prose)))
        assert not tex, f"{page.name}: TeX left unrendered: {tex}"
    for path in NOTEBOOKS:
        outside, inside = text_outside_details(site / f"{path.stem}.html")
        hidden = needles(nbformat.read(path, 4))
        assert not [n for n in hidden if n in outside] and "Correct" not in outside, f"{path.name}: an answer shows"
        assert all(n in inside for n in hidden), f"{path.name}: {[n for n in hidden if n not in inside]}"


# ---- in Chromium, offline -----------------------------------------------------------------------------------------

PAGE_LAYOUT = """() => ({
    maths: [...document.querySelectorAll('math')].map(m => { const r = m.getBoundingClientRect();
        return {w: r.width, h: r.height, display: getComputedStyle(m).display}; }),
    images: [...document.images].filter(i => i.getClientRects().length).map(i => i.complete ? i.naturalWidth : 0),
    matrices: [...document.querySelectorAll('mtable.paren, mtable.bracket')].map(t => t.getBoundingClientRect().height),
    outputs: [...document.querySelectorAll('pre.out')].map(p => p.scrollWidth - p.clientWidth),
    figures: [...document.querySelectorAll('.fig img[width]')].map(i =>     // at 96 CSS px per inch, not squeezed
        Math.abs(i.getBoundingClientRect().width - parseFloat(i.getAttribute('width')))),
    sums: [...document.querySelectorAll('math[display="block"] munderover')].map(u => {
        const [op, under, over] = [...u.children].map(c => c.getBoundingClientRect());
        return under.top >= op.bottom - 1 && over.bottom <= op.top + 1
            && getComputedStyle(u).fontFamily.startsWith('"DejaVu Math TeX Gyre"'); }),
})"""


@contextlib.contextmanager
def offline_page(browser, **options):
    """A page in a new browser context that loads only file: and data: URLs; (page, the URLs it refused)."""
    context, blocked = browser.new_context(**options), []

    def route(request_route):
        if request_route.request.url.startswith(("file://", "data:")):
            return request_route.continue_()
        blocked.append(request_route.request.url)
        return request_route.abort()
    context.route("**/*", route)
    try:
        yield context.new_page(), blocked
    finally:
        context.close()


def test_every_page_renders_offline_and_opens_a_solution_on_a_click(site, browser):
    errors, sums, figures = [], 0, 0
    with offline_page(browser, viewport={"width": 900, "height": 900}) as (page, blocked):    # narrower than figures
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        for path in [site / "index.html", site / "handout.html", *(site / f"{p.stem}.html" for p in NOTEBOOKS)]:
            page.goto(path.as_uri(), wait_until="load")
            layout = page.evaluate(PAGE_LAYOUT)
            assert all(m["display"] in ("math", "block math", "inline math") and m["w"] > 0 and m["h"] > 0
                       for m in layout["maths"]), path.name
            assert all(w > 0 for w in layout["images"]), f"{path.name}: an image did not load"
            assert all(h > 30 for h in layout["matrices"]), f"{path.name}: a matrix's brackets are one line high"
            assert all(extra <= 1 for extra in layout["outputs"]), f"{path.name}: an output scrolls sideways"
            assert all(layout["sums"]), f"{path.name}: a sum's limits beside it, or not in the math font"
            assert all(extra <= 1 for extra in layout["figures"]), f"{path.name}: a figure is squeezed"
            sums, figures = sums + len(layout["sums"]), figures + len(layout["figures"])
            summaries = page.locator("details > summary")
            for k in range(summaries.count()):
                content = page.locator("details").nth(k).locator(":scope > :not(summary)").first
                assert not content.is_visible(), f"{path.name}: a solution is open before a click"
                summaries.nth(k).click()
                assert content.is_visible(), f"{path.name}: a click does not open the solution"
    assert sums and figures and not blocked and not errors, (sums, figures, blocked, errors)


def test_every_slider_moves_the_figure_with_javascript_off(site, browser):
    moved = 0
    with offline_page(browser, java_script_enabled=False, viewport={"width": 1400, "height": 900}) as (page, blocked):
        for path in NOTEBOOKS:
            page.goto((site / f"{path.stem}.html").as_uri(), wait_until="load")
            n_views = sum(bool(_widget_call(c.source)) for c in nbformat.read(path, 4).cells if c.cell_type == "code")
            assert page.locator(".sliders").count() == n_views, f"{path.name}: a slider view is not on its page"
            for view in page.locator(".sliders").all():
                shown = view.locator(".frame:visible img")
                start = shown.get_attribute("src")
                for row in view.locator(".controls > div").all():
                    row.locator("label:not(.l0)").last.click()          # a value other than the start
                    assert view.locator(".frame:visible").count() == 1, path.name
                    changed = shown.get_attribute("src") != start
                    assert changed, f"{path.name}: {row.inner_text()} moves nothing"
                    moved += 1
                    row.locator("label.l0").click()
    assert moved >= 2 * len(VIEWS) and not blocked


# ---- one JupyterLab: the executed notebooks keep their solutions folded; the sliders move after Run All ----------

#: A solution in the notebooks' form, for JupyterLab to fold and open on a click.
FOLDED = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
    "# Folded\n\n<details>\n<summary>Solution</summary>\n\nThe folded prose of a solution.\n\n```python\n"
    "answer = 'the folded answer'\nprint('Correct: folded')\n```\n\n</details>", metadata={"tags": ["solution"]})])


@pytest.fixture(scope="module")
def lab(runs, tmp_path_factory, chromium):
    """JupyterLab serving the executed notebooks and one of every slider view of the course; (url, folder)."""
    work = tmp_path_factory.mktemp("lab")
    every = [as_run_all_leaves_it(runs[name][0]) for name in NAMES] + [FOLDED]
    cells = [{**c, "id": f"c{k}"} for k, c in enumerate(c for nb in every for c in nb.cells)]
    nbformat.write(nbformat.from_dict({**every[0], "cells": cells}), work / "all.ipynb")
    cells = [f"from rope_ref.teaching import widgets\nwidgets.{f.__name__}(*{a!r}, **{k!r})" for f, a, k in VIEWS]
    views = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells],
                                     metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}})
    nbformat.write(views, work / "views.ipynb")
    for name, body in [("notebook-extension/tracker", '{"windowingMode": "none"}'),      # every cell drawn
                       ("apputils-extension/notification", '{"fetchNews": "false"}')]:
        path = work / ".settings" / "@jupyterlab" / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(work / ".cfg"), "JUPYTER_RUNTIME_DIR": str(work / ".rt"),
           "JUPYTERLAB_SETTINGS_DIR": str(work / ".settings"), "JUPYTERLAB_WORKSPACES_DIR": str(work / ".ws"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    env.pop("MPLBACKEND", None)
    log = open(work / "server.log", "w")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([str(Path(sys.executable).parent / "jupyter-lab"), "--no-browser", "--allow-root",
                             "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
                             f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={work}",
                             "--LabApp.news_url=None"], cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=2)
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, (work / "server.log").read_text()[-3000:]
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


@contextlib.contextmanager
def lab_page(browser, url: str, name: str):
    """A page showing notebook ``name`` in JupyterLab, its kernel idle: (page, the notebook's panel)."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(60_000)
    try:
        page.goto(f"{url}/lab/tree/{name}?token={TOKEN}&reset")
        panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
        panel.locator(".jp-Cell").first.wait_for(timeout=60_000)
        page.wait_for_selector(".jp-StatusBar-TextItem:has-text('| Idle')", timeout=120_000)
        page.wait_for_timeout(1000)                             # rendered markdown and outputs settle
        yield page, panel
    finally:
        page.close()


def visible_text(panel) -> str:
    return " ".join(panel.locator(".jp-Notebook").inner_text().split())


def test_jupyterlab_shows_no_solution_before_a_click(lab, browser):
    """Every executed notebook, one after another in one notebook (all.ipynb: one page, one kernel)."""
    stored = [nbformat.read(path, 4) for path in NOTEBOOKS] + [FOLDED]
    hidden = [n for nb in stored for n in needles(nb)]
    folded = [n for nb in stored for n in needles(nbformat.from_dict(
        {**nb, "cells": [c for c in nb.cells if "<details>" in c.source]}))]
    with lab_page(browser, lab, "all.ipynb") as (page, panel):
        text = visible_text(panel)
        assert "The folded prose" not in text and len(hidden) > 50, "the check can see a solution's text"
        assert not [n for n in hidden if n in text] and "Correct" not in text, [n for n in hidden if n in text]
        summaries = panel.locator(".jp-RenderedMarkdown details > summary")
        for k in range(summaries.count()):               # the notebooks' form: each solution opens on a click
            summaries.nth(k).click()
        text = visible_text(panel)
        assert folded and all(n in text for n in folded), [n for n in folded if n not in text]
        assert "Correct: folded" in text


def test_every_slider_view_moves_in_jupyterlab_after_run_all(lab, browser):
    with lab_page(browser, lab, "views.ipynb") as (page, panel):
        for _attempt in range(3):      # a Run All issued while the kernel is still connecting can be dropped
            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            page.locator("li.lm-Menu-item[data-command='runmenu:run-all']").click()
            try:
                panel.locator(".jupyter-widgets img").first.wait_for(timeout=30_000)
                break
            except Exception:
                continue
        boxes = panel.locator(".jp-OutputArea-output .widget-vbox:has(.noUi-handle):has(img)")
        deadline = time.monotonic() + 120                 # the kernel may show Idle between two cells of the run
        while boxes.count() < len(VIEWS) and time.monotonic() < deadline:
            page.wait_for_timeout(500)
        assert boxes.count() == len(VIEWS) >= 6
        for k in range(boxes.count()):
            image = boxes.nth(k).locator("img").first
            before = image.get_attribute("src")
            boxes.nth(k).locator(".noUi-handle").first.focus()
            page.keyboard.press("ArrowRight")
            page.wait_for_function("([el, src]) => el.getAttribute('src') !== src",
                                   arg=[image.element_handle(), before])
        body = visible_text(panel)
        assert "Error displaying widget" not in body and "Traceback" not in body, body[-2000:]


# ---- every number a slider view shows equals what the neighbouring cells print for the same state -----------

def outputs(cell):
    """The text a cell printed or displayed."""
    return "".join(o.text if o.output_type == "stream" else o.get("data", {}).get("text/plain", "")
                   for o in cell.get("outputs", []))


def widget_readout(runs, name, call):
    """The executed notebook ``name``, the readout of its one cell calling ``call`` and that cell's index."""
    nb = as_run_all_leaves_it(runs[name][0])
    cells = [c for c in nb.cells if c.cell_type == "code" and call in c.source]
    assert len(cells) == 1, call
    return nb, outputs(cells[0]), nb.cells.index(cells[0])


def printed(cells) -> str:
    return "".join(outputs(c) for c in cells if c.cell_type == "code")


def test_rotations_view_score_equals_the_cell_below(runs):
    nb, readout, at = widget_readout(runs, "02_rotations.ipynb", "rotations_widget(")
    view = re.search(r"m = (\d+), n = (\d+),.*q_m \. k_n = ([-+]?\d+\.\d+)", readout)
    below = printed(nb.cells[at + 1:at + 4])
    same = re.search(rf"m =\s*{view[1]}, n =\s*{view[2]},.*q_m\.k_n = ([-+]?\d+\.\d+)", below)
    assert same and float(same[1]) == float(view[3]), (readout, below)
    shifted = re.findall(r"m =\s*(\d+), n =\s*(\d+), m - n =\s*(-?\d+): q_m\.k_n = ([-+]?\d+\.\d+)", below)
    assert any(int(m) != int(view[1]) and float(s) == float(view[3]) for m, n, _, s in shifted), \
        "shifting both positions keeps the number the view shows"


def test_decay_view_numbers_equal_the_cells(runs):
    nb, readout, at = widget_readout(runs, "03_long_term_decay.ipynb", "decay_widget(")
    view = re.search(r"d = 128, base = 10000: bound at 0 = ([\d.]+), at 256 = ([\d.]+), mean over \[128, 256\] = "
                     r"([\d.]+)", readout)
    above = printed(nb.cells[:at])
    at0 = re.search(r"bound at 0: ([\d.]+)", above)
    far = re.search(r"at 256: ([\d.]+);  mean over 128..256: ([\d.]+)", above)
    assert view and at0 and far, (readout, above)
    assert float(at0[1]) == float(view[1]) and (far[1], far[2]) == (view[2], view[3])


def test_scaling_view_ratios_equal_the_cell_above(runs):
    nb, readout, at = widget_readout(runs, "05_context_extension.ipynb", "scaling_widget(")
    view = dict(re.findall(r"(\w+) ([\d.]+)(?:,|;)", readout.split("slowest pair scaled by")[1]))
    rows = dict(re.findall(r"^(\w+)\s+fastest pair x[\d.]+, slowest pair x([\d.]+)", printed(nb.cells[:at]), re.M))
    assert set(rows) == {"linear", "ntk", "dynamic", "yarn", "llama3"} and set(rows) <= set(view), (rows, view)
    for name, value in rows.items():
        assert float(view[name]) == pytest.approx(float(value), rel=5e-3), name     # printed to 3 significant digits
