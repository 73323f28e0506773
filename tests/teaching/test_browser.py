"""The sliders work in a real browser: JupyterLab on 127.0.0.1, driven by Playwright in headless Chromium.

Needs Debian's Chromium at /usr/bin/chromium (``apt-get install chromium``); Playwright comes
from PyPI and is launched with that executable (no ``playwright install``).  Under ``CI=true``
a missing browser fails; elsewhere the test skips and says how to install it.
Screenshots go to ``test-artifacts/browser/`` (git-ignored).

Each slider also prints its key-press-to-new-image latencies (into ``latency.json`` there, which
``benchmarks/bench.py`` reports), next to those of a bare ipywidgets slider that swaps a small PNG:
JupyterLab's own round trip on the same machine, the floor under every view.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts" / "browser"
TOKEN = "rope-ref-browser-test"
LATENCY_FILE = ARTIFACTS / "latency.json"      # read by benchmarks/bench.py --browser
LATENCY_PRESSES = 15
_ROOT_DIRS: dict = {}         # JupyterLab's URL -> the folder it serves

# The same slider, readout and image, swapping a small PNG and nothing else: JupyterLab's own round
# trip on this machine, to read the views' latencies against (rope_ref is not imported).
ROUND_TRIP = "00_round_trip.ipynb"
ROUND_TRIP_SOURCE = """\
import io
import ipywidgets as W
from PIL import Image

def png(level):
    buf = io.BytesIO()
    Image.new("RGB", (200, 100), (level, level, level)).save(buf, "png")
    return buf.getvalue()

slider = W.IntSlider(value=0, min=0, max=255, description="m")
readout = W.HTML("level 0")
image = W.Image(value=png(0), format="png")

def step(change):
    image.value = png(change["new"])
    readout.value = f"level {change['new']}"

slider.observe(step, names="value")
W.VBox([W.HBox([slider]), readout, image])
"""


#: Notebooks whose solutions the browser checks are hidden (each is opened executed, as after Run All): every
#: notebook in notebooks/ with an exercise, found by glob so that a new notebook is checked without being listed.
HIDDEN_SOLUTION_NOTEBOOKS = tuple(sorted(
    p.name for p in (ROOT / "notebooks").glob("*.ipynb")
    if any("exercise" in c.get("metadata", {}).get("tags", []) for c in json.loads(p.read_text())["cells"])))


def _executed(server: str, name: str):
    """notebooks/<name> as Run All leaves it; executed on first use, into the server's folder as executed_<name>."""
    target = jupyter_server_dir(server) / f"executed_{name}"
    if not target.exists():
        from nbclient import NotebookClient
        nb = nbformat.read(ROOT / "notebooks" / name, 4)
        resources = {"metadata": {"path": str(target.parent)}}
        NotebookClient(nb, timeout=600, kernel_name="python3", resources=resources).execute()
        nbformat.write(nb, target)
    return nbformat.read(target, 4)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def jupyter_server(tmp_path_factory, chromium):
    """JupyterLab serving a scratch copy of the notebooks; stopped in the finalizer."""
    work = tmp_path_factory.mktemp("lab")
    for nb in ("02_rotations.ipynb", "03_long_term_decay.ipynb", "05_context_extension.ipynb"):
        shutil.copy(ROOT / "notebooks" / nb, work / nb)
    round_trip = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(ROUND_TRIP_SOURCE)])
    round_trip.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(round_trip, work / ROUND_TRIP)
    # Render every cell (no virtual scrolling, so off-screen widgets exist) and skip the news prompt.
    settings = work / ".settings"
    for name, body in [("notebook-extension/tracker", '{"windowingMode": "none"}'),
                       ("apputils-extension/notification", '{"fetchNews": "false"}')]:
        path = settings / "@jupyterlab" / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
    port = _free_port()
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(work / ".cfg"), JUPYTER_RUNTIME_DIR=str(work / ".rt"),
               JUPYTERLAB_SETTINGS_DIR=str(work / ".settings"), JUPYTERLAB_WORKSPACES_DIR=str(work / ".ws"))
    env.pop("MPLBACKEND", None)
    lab = Path(sys.executable).parent / "jupyter-lab"
    cmd = [str(lab), "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
           f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={work}",
           "--ServerApp.port_retries=0", "--allow-root", "--LabApp.news_url=None",
           "--LabApp.extension_manager=readonly", "--LabApp.check_for_updates_class="
           "jupyterlab.NeverCheckForUpdate"]
    log = open(work / "server.log", "w")
    proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    _ROOT_DIRS[url] = work
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/status?token={TOKEN}", timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("JupyterLab did not start:\n" + (work / "server.log").read_text()[-3000:])
                time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        log.close()


def _open_and_run(browser, url, notebook):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(60_000)
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(f"page error: {e}"))
    page.goto(f"{url}/lab/tree/{notebook}?token={TOKEN}&reset")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    page.wait_for_selector(".jp-StatusBar-TextItem:has-text('| Idle')", timeout=60_000)
    try:
        for attempt in range(3):   # a run-all issued while the kernel is still connecting can be dropped
            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            page.locator("li.lm-Menu-item[data-command='runmenu:run-all']").click()
            try:
                page.wait_for_selector(".widget-slider .noUi-handle", state="attached", timeout=20_000)
                break
            except Exception:
                if attempt == 2:
                    raise
        page.wait_for_selector(".jupyter-widgets img", timeout=60_000)
        page.wait_for_selector(".jp-StatusBar-TextItem:has-text('| Idle')", timeout=60_000)
    except Exception:
        page.screenshot(path=str(ARTIFACTS / f"{Path(notebook).stem}_failure.png"))
        raise
    return page, errors


def _panel(page):
    """The notebook tab in front (a reused workspace may keep other notebooks open, hidden)."""
    return page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")


def _widget_area(page):
    return _panel(page).locator(".jp-OutputArea-output .widget-vbox").first


def _move_slider(page, notebook, label, presses, key="ArrowRight"):
    box = _widget_area(page)
    slider = box.locator(".widget-slider", has=page.locator(f"label:text-is('{label}')")).first
    readout_el = slider.locator(".widget-readout")
    image = box.locator("img").first
    box.scroll_into_view_if_needed()
    text_before = box.locator(".widget-html-content").first.inner_text()
    value_before = readout_el.inner_text()
    src_before = image.get_attribute("src")
    shot_before = image.screenshot(path=str(ARTIFACTS / f"{notebook}_{label}_before.png"))
    slider.locator(".noUi-handle").first.focus()
    _watch_latency(page, image)
    for _ in range(presses):
        _press_and_wait(page, key)
    page.wait_for_function("([el, src]) => el.getAttribute('src') !== src",
                           arg=[image.element_handle(), src_before], timeout=30_000)
    page.wait_for_timeout(300)
    shot_after = image.screenshot(path=str(ARTIFACTS / f"{notebook}_{label}_after.png"))
    page.screenshot(path=str(ARTIFACTS / f"{notebook}_page.png"), full_page=False)
    return value_before, readout_el.inner_text(), text_before, box.locator(".widget-html-content").first.inner_text(), \
        shot_before, shot_after


def _watch_latency(page, image):
    """Record, in the page, the time from each key press to the load of the next new image."""
    page.evaluate("""(el) => {
        window.__latency = []; window.__keyAt = null;
        document.addEventListener('keydown', () => { window.__keyAt = performance.now(); }, true);
        el.addEventListener('load', () => {
            if (window.__keyAt !== null) { window.__latency.push(performance.now() - window.__keyAt); window.__keyAt = null; }
        });
    }""", image.element_handle())


def _press_and_wait(page, key):
    """One key press, then wait until its new image has loaded (so presses do not queue up)."""
    n = page.evaluate("window.__latency.length")
    page.keyboard.press(key)
    page.wait_for_function(f"window.__latency.length > {n}", timeout=30_000)


def _report_latency(name, page, key):
    """More presses, one at a time; print key-press-to-new-image latencies and add them to LATENCY_FILE.
    No assertion on time (the machine is shared): the benchmark reports them against the target."""
    for _ in range(LATENCY_PRESSES):
        _press_and_wait(page, key)
    ms = page.evaluate("window.__latency")
    q = sorted(ms)
    print(f"\n{name}: key press to new image over {len(ms)} presses: median {q[len(q) // 2]:.0f} ms, "
          f"p90 {q[min(len(q) - 1, int(0.9 * len(q)))]:.0f} ms, max {q[-1]:.0f} ms")
    data = json.loads(LATENCY_FILE.read_text()) if LATENCY_FILE.exists() else {}
    data[name] = ms
    LATENCY_FILE.write_text(json.dumps(data, indent=1))


def _assert_clean(page, errors):
    body = _panel(page).locator(".jp-Notebook").inner_text()
    assert "Loading widget" not in body, "a widget did not render (\"Loading widget...\")"
    assert "Error displaying widget" not in body and "Traceback" not in body, body[-2000:]
    assert not errors, f"browser console errors: {errors}"


@pytest.mark.parametrize("notebook,label,presses", [
    ("02_rotations.ipynb", "m", 3),
    ("03_long_term_decay.ipynb", "d", 2),
    ("05_context_extension.ipynb", "factor", 2),
    (ROUND_TRIP, "m", 3),
])
def test_slider_moves_readout_and_plot(jupyter_server, browser, notebook, label, presses):
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    page, errors = _open_and_run(browser, jupyter_server, notebook)
    try:
        v0, v1, text0, text1, png0, png1 = _move_slider(page, Path(notebook).stem, label, presses)
        assert v1 != v0, f"slider readout did not change ({v0!r})"
        assert text1 != text0, "the view's text readout did not change"
        assert png1 != png0, "the plot image did not change"
        _report_latency(f"{Path(notebook).stem}: {label}", page, "ArrowRight")
        _assert_clean(page, errors)
    finally:
        page.close()
    assert time.monotonic() - t0 < 110


# --- solutions stay hidden until clicked -------------------------------------------------------------------------------

def _solution_needles(nb) -> dict:
    """Text that only a solution shows: per solution cell, a line of its source (code) or a phrase of its prose
    (markdown, no math), and the first line of each of its text outputs; plus how many images its outputs hold."""
    import re
    needles, images = [], 0
    for cell in nb.cells:
        if "solution" not in cell.metadata.get("tags", []) or cell.metadata.get("heading_collapsed"):
            continue
        if cell.cell_type == "code":
            needles.append(next(ln.strip() for ln in cell.source.splitlines()
                                if len(ln.strip()) > 12 and "(solution)" not in ln))
            for out in cell.get("outputs", []):
                text = out.get("text") or out.get("data", {}).get("text/plain", "")
                lines = [ln.strip() for ln in text.splitlines() if ln.strip() and ln.strip() != "(solution)"]
                if out.output_type == "stream" and lines:
                    needles.append(lines[0])
                images += "image/png" in out.get("data", {})
        else:
            prose = re.sub(r"\$\$.*?\$\$|\$[^$]*\$", "|", cell.source.replace("*(solution)*", ""), flags=re.S)
            words = [w for w in re.split(r"[|*`:.]", prose) if len(w.split()) >= 4]
            if words:                                 # (a cell of formulas only has its code cell's needles)
                needles.append(" ".join(max(words, key=len).split()[:4]))
    elsewhere = "".join(c.source + "".join(o.get("text", "") for o in c.get("outputs", [])) for c in nb.cells
                        if "solution" not in c.metadata.get("tags", []))
    needles = [" ".join(n.split()) for n in needles]
    return {"needles": [n for n in needles if n not in " ".join(elsewhere.split())], "images": images}


def _visible_text(page) -> str:
    """The notebook's visible text, whitespace runs made one space (the needles are compared the same way)."""
    return " ".join(_panel(page).locator(".jp-Notebook").inner_text().split())


def _visible_output_images(page) -> int:
    return _panel(page).locator(".jp-OutputArea-output img:visible").count()


def _open_in_lab(browser, server: str, filename: str):
    """A new page with ``filename`` open in JupyterLab, its cells drawn and its kernel idle."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(60_000)
    page.goto(f"{server}/lab/tree/{filename}?token={TOKEN}&reset")
    page.wait_for_selector(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell", timeout=60_000)
    page.wait_for_selector(".jp-StatusBar-TextItem:has-text('| Idle')", timeout=60_000)
    return page


@pytest.mark.parametrize("name", HIDDEN_SOLUTION_NOTEBOOKS)
def test_solutions_stay_hidden_in_jupyterlab_until_clicked(jupyter_server, browser, name):
    """An executed notebook (as an instructor leaves it after Run All) opened in JupyterLab: no solution's source,
    prose or output is visible, and no solution image; the one visible line is "Solution".  Clicking the collapsed
    heading and then each hidden cell shows them (so the check can see solution text when it is there)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    nb = _executed(jupyter_server, name)
    found = _solution_needles(nb)
    shown_images = sum("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code"
                       and "solution" not in c.metadata.get("tags", []) for o in c.get("outputs", []))
    assert found["needles"]
    page = _open_in_lab(browser, jupyter_server, f"executed_{name}")
    try:
        page.wait_for_timeout(1500)                       # rendered markdown and outputs settle
        text = _visible_text(page)
        page.screenshot(path=str(ARTIFACTS / f"hidden_{Path(name).stem}.png"), full_page=True)
        assert "Solution" in text and "Not answered yet" in text, "the heading and the student cell's output show"
        leaks = [n for n in found["needles"] if n in text]
        assert not leaks, f"{name}: solution text visible before a click: {leaks}"
        assert "Correct:" not in text
        assert _visible_output_images(page) <= shown_images, f"{name}: a solution's image is visible"
        # Click 1: "N cells hidden" under each "Solution" heading.  The cells appear folded: each shows only its
        # first source line and first output line, which give nothing away.
        buttons = _panel(page).locator(".jp-showHiddenCellsButton")
        assert buttons.count() == sum(1 for c in nb.cells if c.metadata.get("heading_collapsed"))
        while buttons.count():
            buttons.first.click()
            page.wait_for_timeout(200)
        folded = _panel(page).locator(".jp-Placeholder-content").all_inner_texts()
        assert folded and all(f.strip() in ("*(solution)*", "# (solution)", "(solution)") for f in folded), folded
        text = _visible_text(page)
        leaks = [n for n in found["needles"] if n in text]
        assert not leaks and "Correct:" not in text, f"{name}: solution text visible with the heading open: {leaks}"
        # Click 2: every folded cell; now the solutions, their outputs and the checker's verdict show.
        placeholders = _panel(page).locator(".jp-Placeholder:visible")
        for _ in range(50):
            if not placeholders.count():
                break
            placeholders.first.click()
            page.wait_for_timeout(200)
        page.wait_for_timeout(800)
        opened = _visible_text(page)
        page.screenshot(path=str(ARTIFACTS / f"opened_{Path(name).stem}.png"))
        assert "Correct:" in opened and all(n in opened for n in found["needles"]), \
            [n for n in found["needles"] if n not in opened]
    finally:
        page.close()


@pytest.mark.slow
@pytest.mark.parametrize("name", HIDDEN_SOLUTION_NOTEBOOKS)
def test_run_all_in_jupyterlab_keeps_solutions_hidden(jupyter_server, browser, name):
    """The README tells instructors to Run All before class: no solution text, verdict or image may then show, in
    any notebook.  (Run All leaves the last cell active, and JupyterLab unfolds a heading to show its active cell.)"""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "notebooks" / name, jupyter_server_dir(jupyter_server) / f"run_all_{name}")
    executed = _executed(jupyter_server, name)
    found = _solution_needles(executed)
    shown_images = sum("image/png" in o.get("data", {}) for c in executed.cells if c.cell_type == "code"
                       and "solution" not in c.metadata.get("tags", []) for o in c.get("outputs", []))
    headings = sum(1 for c in executed.cells if c.metadata.get("heading_collapsed"))
    page = _open_in_lab(browser, jupyter_server, f"run_all_{name}")
    try:
        for attempt in range(3):   # a run-all issued while the kernel is still connecting can be dropped
            page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
            page.locator("li.lm-Menu-item[data-command='runmenu:run-all']").click()
            try:                   # taken: the first code cell is queued ([*]) or has run ([1])
                page.wait_for_selector(".jp-InputPrompt:has-text('[*]'), .jp-InputPrompt:has-text('[1]')",
                                       timeout=20_000)
                break
            except Exception:
                if attempt == 2:
                    raise
        page.wait_for_selector("text=Not answered yet", timeout=900_000)          # notebook 11 trains a model
        page.wait_for_selector(".jp-StatusBar-TextItem:has-text('| Idle')", timeout=900_000)
        page.wait_for_timeout(1500)
        text = _visible_text(page)
        page.screenshot(path=str(ARTIFACTS / f"run_all_{Path(name).stem}.png"))
        leaks = [n for n in found["needles"] if n in text]
        assert not leaks and "Correct:" not in text, f"{name}: Run All showed solution text: {leaks}"
        assert _panel(page).locator(".jp-showHiddenCellsButton").count() == headings, \
            f"{name}: every Solution heading is still folded"
        assert _visible_output_images(page) <= shown_images, f"{name}: Run All showed a solution's image"
    finally:
        page.close()


def jupyter_server_dir(url: str) -> Path:
    """The folder the test's JupyterLab serves (its root_dir), asked from the server itself."""
    with urllib.request.urlopen(f"{url}/api/contents?token={TOKEN}", timeout=10) as r:
        json.loads(r.read())
    return _ROOT_DIRS[url]
