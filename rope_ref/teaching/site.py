"""The course as static HTML that works offline: ``python -m rope_ref site --out DIR``.

:func:`build_site` executes every notebook (nbclient) and writes ``index.html`` (order, timings,
learning objectives, links) and one page per notebook.  Pages load nothing from the network:

* math (``$...$``, ``$$...$$``) is pre-rendered to MathML (latex2mathml), which the browser draws;
* figures and the first image of every slider view are embedded as ``data:`` URIs (the sliders'
  box carries an ``image/png`` next to its widget view, see :class:`~.widgets.SliderApp`);
* the only style is a ``<style>`` block in each page; there are no scripts at all;
* solutions (cells tagged ``solution``) are collapsed in ``<details>``; exercises (tagged
  ``exercise``) are framed.

The builder reads only cell types, tags and outputs, the first ``# `` heading (the title) and the
markdown cell that starts with ``## Learning objectives``; nothing else about the notebooks.
"""

from __future__ import annotations

import base64
import html
import re
import subprocess
from pathlib import Path

import latex2mathml.converter
import mistune
import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from .files import check_targets, write_atomically

#: The 90-minute session: notebook name -> minutes, in teaching order.
SCHEDULE = {"00_why_positions": 10, "01_three_forms": 15, "02_long_term_decay": 10, "03_rotations": 15,
            "04_attention": 15, "05_context_extension": 10, "06_precision": 5, "07_check_your_rope": 10}
OBJECTIVES = "## Learning objectives"
WIDGET = "application/vnd.jupyter.widget-view+json"

CSS = """
body { font: 17px/1.5 system-ui, sans-serif; max-width: 60rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
nav { display: flex; justify-content: space-between; border-bottom: 1px solid #ddd; margin-bottom: 1rem; }
pre { background: #f6f8fa; padding: .6rem; overflow-x: auto; font-size: 14px; }
pre.out { background: none; border-left: 3px solid #ccc; }
pre.stderr { border-left-color: #e6a23c; }
img { max-width: 100%; }
.exercise { border-left: 4px solid #2b7bb9; padding: 0 1rem; background: #f0f6fb; }
details.solution { border: 1px solid #bbb; padding: .3rem 1rem; margin: 1rem 0; }
details.solution > summary { cursor: pointer; font-weight: bold; }
table { border-collapse: collapse; } td, th { border: 1px solid #ccc; padding: .3rem .6rem; vertical-align: top; }
""" + HtmlFormatter().get_style_defs(".highlight")

PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title><style>{css}</style></head>
<body>{nav}
{body}
{nav}</body></html>
"""

_markdown = mistune.create_markdown(escape=False, plugins=["strikethrough", "table"])
# Code first, so a $ inside code stays a $; then display math, then inline math (not across a blank line).
_CODE_OR_MATH = re.compile(r"(```.*?```|`[^`\n]*`)|\$\$(.+?)\$\$|(?<![\\$])\$((?:[^$\n]|\n(?!\n))+?)\$", re.S)


def math_to_mathml(tex: str, display: bool = False) -> str:
    """LaTeX to a MathML element the browser draws itself (no script, no network)."""
    try:
        mathml = latex2mathml.converter.convert(tex.strip(), display="block" if display else "inline")
    except Exception as exc:        # latex2mathml has many exception types; name the formula instead
        raise ValueError(f"cannot render the math {tex.strip()!r} as MathML: {exc!r}") from exc
    unknown = re.findall(r">(\\[A-Za-z]+)<", mathml)    # a command latex2mathml does not know is left as text
    if unknown:
        raise ValueError(f"cannot render the math {tex.strip()!r} as MathML: unknown command(s) {unknown}")
    return mathml


def markdown_to_html(source: str) -> str:
    """Markdown with $...$ and $$...$$ math to HTML; math becomes MathML."""
    maths = []

    def protect(match):
        if match.group(1):
            return match.group(1)
        maths.append(math_to_mathml(match.group(2) or match.group(3), display=match.group(2) is not None))
        return f"MATHPLACEHOLDER{len(maths) - 1}END"

    text = _markdown(_CODE_OR_MATH.sub(protect, source))
    return re.sub(r"MATHPLACEHOLDER(\d+)END", lambda m: maths[int(m.group(1))], text)


def _embed_local_images(text: str, folder: Path, attachments: dict) -> str:
    """Turn <img src="..."> of a cell attachment or a file next to the notebook into a data: URI."""
    def embed(match):
        src = html.unescape(match.group(2))
        if src.startswith("attachment:"):
            bundle = attachments.get(src.split(":", 1)[1], {})
            mime, data = next(iter(bundle.items()), ("", ""))
        elif not re.match(r"\w+:", src) and (folder / src).is_file():
            mime = "image/svg+xml" if src.endswith(".svg") else f"image/{Path(src).suffix[1:].lower()}"
            data = base64.b64encode((folder / src).read_bytes()).decode()
        else:
            return match.group(0)
        return f'{match.group(1)}"data:{mime};base64,{data}"'
    return re.sub(r'(<img\b[^>]*?\bsrc=)"([^"]*)"', embed, text)


def _png(data: str) -> str:
    return f'<img src="data:image/png;base64,{"".join(data.split())}" alt="figure">'


def output_to_html(output) -> str:
    """One code-cell output as HTML: images inline, math as MathML, text escaped."""
    if output.output_type == "stream":
        return f'<pre class="out {output.name}">{html.escape(_strip_ansi(output.text))}</pre>'
    if output.output_type == "error":
        return f'<pre class="out stderr">{html.escape(_strip_ansi(chr(10).join(output.traceback)))}</pre>'
    data = output.get("data", {})
    if "image/png" in data:
        return _png(data["image/png"])
    if "image/svg+xml" in data:
        return data["image/svg+xml"]
    if WIDGET in data:      # a widget that carries no image needs a live kernel
        return '<p class="out"><em>(interactive view: open the notebook in JupyterLab to use it)</em></p>'
    if "text/html" in data:
        return data["text/html"]
    if "text/latex" in data:
        return math_to_mathml(data["text/latex"].strip().strip("$"), display=True)
    if "text/markdown" in data:
        return markdown_to_html(data["text/markdown"])
    if "text/plain" in data:
        return f'<pre class="out">{html.escape(_strip_ansi(data["text/plain"]))}</pre>'
    return ""


def _strip_ansi(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*[A-Za-z]", "", text)


def cell_to_html(cell, folder: Path) -> str:
    if cell.cell_type == "markdown":
        text = _embed_local_images(markdown_to_html(cell.source), folder, cell.get("attachments", {}))
    elif cell.cell_type == "code":
        text = highlight(cell.source, PythonLexer(), HtmlFormatter()) + "".join(map(output_to_html, cell.outputs))
    else:
        return ""
    tags = cell.metadata.get("tags", [])
    return f'<div class="exercise">{text}</div>' if "exercise" in tags else text


def notebook_body(nb, folder: Path) -> str:
    """Every cell in order; each run of consecutive solution cells folded into one <details>."""
    parts, solution = [], []
    for cell in nb.cells + [nbformat.v4.new_raw_cell()]:       # the raw cell closes a last solution run
        if "solution" in cell.metadata.get("tags", []):
            solution.append(cell_to_html(cell, folder))
            continue
        if solution:
            parts.append('<details class="solution"><summary>Solution</summary>' + "".join(solution) + "</details>")
            solution = []
        parts.append(cell_to_html(cell, folder))
    return "\n".join(parts)


def title_and_objectives(nb, default: str) -> tuple[str, str]:
    """The first '# ' heading, and the objectives cell without its heading, as HTML ('' if absent)."""
    title, objectives = default, ""
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        lines = cell.source.strip().splitlines()
        if title == default and lines and lines[0].startswith("# "):
            title = lines[0][2:].strip()
        if not objectives and lines and lines[0].strip().startswith(OBJECTIVES):
            objectives = markdown_to_html("\n".join(lines[1:]))
    return title, objectives


def execute(path: Path, timeout: int = 300):
    """The notebook read from ``path`` and run top to bottom in its own folder (the file is not changed).
    The kernel's own log lines on stderr are dropped; a failing cell raises RuntimeError."""
    nb = nbformat.read(path, as_version=4)
    try:
        NotebookClient(nb, timeout=timeout, startup_timeout=timeout, kernel_name="python3",
                       resources={"metadata": {"path": str(path.parent)}}).execute(stderr=subprocess.DEVNULL)
    except CellExecutionError as exc:
        raise RuntimeError(f"notebook {path.name} failed: {exc.ename}: {exc.evalue}") from exc
    return nb


def _nav(pages, i: int) -> str:
    """Links to the previous page, the overview and the next page."""
    def link(j, text):
        return f'<a href="{pages[j][0]}.html">{text}</a>' if 0 <= j < len(pages) else "<span></span>"
    return f'<nav>{link(i - 1, "&larr; previous")}<a href="index.html">course overview</a>{link(i + 1, "next &rarr;")}</nav>'


def _inline(title: str) -> str:
    """A title as HTML: text escaped, $...$ as MathML (not markdown: "1. Title" is no list)."""
    parts = re.split(r"\$([^$]+)\$", title)
    return "".join(math_to_mathml(p) if i % 2 else html.escape(p) for i, p in enumerate(parts))


def index_html(pages) -> str:
    rows, total = [], 0
    for stem, title, objectives in pages:
        minutes = SCHEDULE.get(stem)
        total += minutes or 0
        rows.append(f'<tr><td>{minutes if minutes is not None else "&ndash;"} min</td>'
                    f'<td><a href="{stem}.html">{_inline(title)}</a><br><code>notebooks/{stem}.ipynb</code></td>'
                    f"<td>{objectives or '<em>(no learning objectives given)</em>'}</td></tr>")
    body = ("<h1>RoPE from the paper to your kernel: a 90-minute course</h1>"
            "<p>RoFormer (arXiv:2104.09864), section 3, with the NumPy reference implementation "
            "<code>rope_ref</code>. Work through the notebooks in this order; the pages show them executed. "
            "Solutions are folded: click <em>Solution</em> to open one. To move the sliders, run the notebooks in "
            "JupyterLab.</p>"
            "<table><tr><th>time</th><th>notebook</th><th>learning objectives</th></tr>"
            + "".join(rows) + f'<tr><th>{total} min</th><td colspan="2">in total</td></tr></table>')
    return PAGE.format(title="rope_ref course", css=CSS, nav="", body=body)


def course_notebooks(folder: Path | str) -> list[Path]:
    """The course: every ``*.ipynb`` in ``folder``, in file-name order (the names' numbers give the order)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"the notebooks folder {folder} does not exist")
    return sorted(folder.glob("*.ipynb"))


def build_site(out: Path | str, notebooks: list[Path], timeout: int = 300) -> Path:
    """Execute ``notebooks`` in the given order, write one page each and ``index.html`` into ``out``;
    return the path of ``index.html``.

    Nothing is created before every notebook has run: then ``out`` is made if missing and each page is
    written whole (a temporary file beside it, renamed into place).  Pages of the same names are replaced;
    a symbolic link with such a name is a ``ValueError`` (checked before the notebooks run).  A notebook
    path that does not exist is a ``FileNotFoundError`` naming it, raised before any notebook runs.
    """
    out = Path(out)
    notebooks = [Path(p) for p in notebooks]
    missing = [str(p) for p in notebooks if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"build_site: notebook(s) not found: {', '.join(missing)}")
    names = [f"{p.stem}.html" for p in notebooks] + ["index.html"]
    check_targets(out, names)
    pages, bodies = [], []
    for path in notebooks:
        nb = execute(path, timeout)
        try:
            title, objectives = title_and_objectives(nb, path.stem)
            bodies.append(notebook_body(nb, path.parent))
        except ValueError as exc:
            raise RuntimeError(f"notebook {path.name}: {exc}") from exc
        pages.append((path.stem, title, objectives))
    out.mkdir(parents=True, exist_ok=True)
    for i, ((stem, title, _), body) in enumerate(zip(pages, bodies)):
        page = PAGE.format(title=html.escape(title.replace("$", "")), css=CSS, nav=_nav(pages, i), body=body)
        write_atomically(out / f"{stem}.html", page.encode("utf-8"))
    return write_atomically(out / "index.html", index_html(pages).encode("utf-8"))
