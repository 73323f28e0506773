"""Slider latency in a real browser: ``python benchmarks/bench_jupyterlab.py [--presses N] [--only 03]``.

Starts JupyterLab on 127.0.0.1 (no token) in a temporary folder holding one small notebook per slider cell of the
course (the notebook's import cell and its slider cell), opens each in Chromium (/usr/bin/chromium, driven by
Playwright), runs it, and on every slider of the view presses an arrow key ``--presses`` times, one press at a
time, timing in the page each key press to the load of the next new image.  Prints the median and max per slider
against issue 39's target of 150 ms.  Run by hand on an otherwise quiet machine: a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import nbformat
from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
TARGET_MS = 150
#: (notebook, index of its import cell, index of its slider cell): every slider view the notebooks show.
SLIDER_CELLS = [("02_rotations", 2, 4), ("03_long_term_decay", 2, 12), ("05_context_extension", 2, 8),
                ("08_what_frequencies_do", 2, 7), ("08_what_frequencies_do", 2, 11), ("09_multi_axis", 2, 6)]

WATCH = """(img) => {
    window.__latency = []; window.__keyAt = null;
    document.addEventListener('keydown', () => { window.__keyAt = performance.now(); }, true);
    img.addEventListener('load', () => {
        if (window.__keyAt !== null) { window.__latency.push(performance.now() - window.__keyAt); window.__keyAt = null; }
    });
}"""


def write_notebooks(work: Path, only: str | None) -> list[str]:
    """One notebook per slider cell in ``work`` (the import cell, then the slider cell); their file names."""
    names = []
    for stem, imports, cell in SLIDER_CELLS:
        if only and not stem.startswith(only):
            continue
        source = nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4)
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source.cells[i].source) for i in (imports, cell)])
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        names.append(f"{stem}_cell{cell}.ipynb")
        nbformat.write(nb, work / names[-1])
    return names


def start_lab(work: Path) -> tuple[subprocess.Popen, str]:
    """JupyterLab serving ``work`` without a token, every cell rendered (no virtual scrolling); (process, url)."""
    for name, body in [("notebook-extension/tracker", '{"windowingMode": "none"}'),
                       ("apputils-extension/notification", '{"fetchNews": "false"}')]:
        path = work / ".settings" / "@jupyterlab" / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, PYTHONPATH=str(ROOT), JUPYTER_CONFIG_DIR=str(work / ".cfg"),
               JUPYTER_RUNTIME_DIR=str(work / ".rt"), JUPYTERLAB_SETTINGS_DIR=str(work / ".settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(work / ".ws"))
    env.pop("MPLBACKEND", None)
    cmd = [str(Path(sys.executable).parent / "jupyter-lab"), "--no-browser", "--ServerApp.ip=127.0.0.1",
           f"--ServerApp.port={port}", "--IdentityProvider.token=", "--ServerApp.password=",
           f"--ServerApp.root_dir={work}", "--ServerApp.port_retries=0", "--allow-root", "--LabApp.news_url=None", "--LabApp.extension_manager=readonly",
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    proc = subprocess.Popen(cmd, cwd=work, env=env, stdout=open(work / "server.log", "w"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 90
    while True:
        try:
            urllib.request.urlopen(f"{url}/api/status", timeout=2)
            return proc, url
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError("JupyterLab did not start:\n" + (work / "server.log").read_text()[-3000:])
            time.sleep(0.3)


def open_and_run(browser, url: str, name: str):
    """A page with notebook ``name`` run to its widget's first image."""
    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    page.set_default_timeout(90_000)
    page.goto(f"{url}/lab/tree/{name}?reset")
    page.wait_for_selector(".jp-StatusBar-TextItem:has-text('| Idle')")
    for attempt in range(3):          # a run-all issued while the kernel is still connecting can be dropped
        page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
        page.locator("li.lm-Menu-item[data-command='runmenu:run-all']").click()
        try:
            page.wait_for_selector(".widget-slider .noUi-handle", state="attached", timeout=30_000)
            break
        except Exception:
            if attempt == 2:
                raise
    page.wait_for_selector(".jupyter-widgets img")
    page.wait_for_selector(".jp-StatusBar-TextItem:has-text('| Idle')")
    return page


def time_slider(page, slider, image, presses: int) -> list[float]:
    """Key press to new image (ms) for ``presses`` arrow presses on ``slider``, turning back at either end."""
    handle = slider.locator(".noUi-handle").first
    handle.focus()
    key = "ArrowRight"
    for _ in range(presses):
        now, high, low = (float(handle.get_attribute(a)) for a in ("aria-valuenow", "aria-valuemax", "aria-valuemin"))
        if key == "ArrowRight" and now >= high or key == "ArrowLeft" and now <= low:
            key = "ArrowLeft" if key == "ArrowRight" else "ArrowRight"
        n = page.evaluate("window.__latency.length")
        page.keyboard.press(key)
        page.wait_for_function(f"window.__latency.length > {n}", timeout=30_000)
    return page.evaluate("window.__latency.splice(0)")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presses", type=int, default=10, help="key presses per slider (default 10)")
    parser.add_argument("--only", help="only notebooks whose name starts with this, e.g. 03")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bench_lab_"))
    proc, url = start_lab(work)
    rows = []
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM)
            for name in write_notebooks(work, args.only):
                page = open_and_run(browser, url, name)
                box = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output .widget-vbox").first
                box.scroll_into_view_if_needed()
                image = box.locator("img").first
                page.evaluate(WATCH, image.element_handle())
                sliders = box.locator(".widget-slider")
                for j in range(sliders.count()):
                    slider = sliders.nth(j)
                    label = slider.locator("label").first.inner_text()
                    page.wait_for_timeout(300)
                    ms = time_slider(page, slider, image, args.presses)
                    rows.append((name.split("_cell")[0], label, statistics.median(ms), max(ms)))
                    print(f"{rows[-1][0]:24s} {label:12s} median {rows[-1][2]:6.0f} ms   max {rows[-1][3]:6.0f} ms",
                          flush=True)
                page.close()
            browser.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nkey press to new image, {args.presses} presses per slider (target {TARGET_MS} ms):")
    print(f"{'notebook':24s} {'slider':12s} {'median':>8s} {'max':>8s}")
    for stem, label, med, top in rows:
        flag = "" if med <= TARGET_MS else "  over"
        print(f"{stem:24s} {label:12s} {med:6.0f} ms {top:6.0f} ms{flag}")
    print(f"worst median {max(r[2] for r in rows):.0f} ms; overall median "
          f"{statistics.median(r[2] for r in rows):.0f} ms")


if __name__ == "__main__":
    main()
