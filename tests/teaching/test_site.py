"""``python -m rope_ref site``: the course as static HTML that needs no network.

One site is built per module: a small synthetic notebook (objectives, math, an exercise, a
two-cell solution, a slider view, a plain widget, a local image, a dollar sign in code) and
every notebook of the course.  The HTML is checked here; the browser test opens every page in
headless Chromium with every non-file request aborted.
"""

from __future__ import annotations

import base64
import re
import struct
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest

from rope_ref.teaching.site import (HANDOUT, build_site, course_notebooks, handout_html, index_html, markdown_to_html,
                                   math_to_mathml)

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = course_notebooks(ROOT / "notebooks")
pytestmark = pytest.mark.slow
PNG_1x1 = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==")


def _synthetic_notebook(folder: Path) -> Path:
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    hidden = {"tags": ["solution"], "jupyter": {"source_hidden": True}}
    cells = [
        md("# Zero. A test lesson on $\\theta_i$\n\nThe angle is $m\\theta_i$ and\n\n$$q_m \\cdot k_n = x^2.$$\n\n"
           "A price in code stays: `echo $HOME and $PATH`.\n\n![a dot](dot.png) ![attached](attachment:dot2.png)",
           attachments={"dot2.png": {"image/png": base64.b64encode(PNG_1x1).decode()}}),
        md("## Learning objectives\n\n- rotate a pair by $m\\theta_i$\n- read Figure 2, where $a +\n b$ spans two lines"),
        md("**Exercise.** Compute $2+2$.", metadata={"tags": ["exercise"]}),
        md("The answer is SOLUTION-TEXT.", metadata=hidden),
        code("print('SOLUTION-' + 'CODE')", metadata=hidden),
        md("After the solution: AFTER-TEXT."),
        code("from rope_ref.teaching.widgets import decay_widget\ndecay_widget(d=64)"),
        code("import ipywidgets\nipywidgets.IntSlider()"),
    ]
    nb = nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "language": "python",
                                                                        "display_name": "Python 3"}})
    (folder / "dot.png").write_bytes(PNG_1x1)
    path = folder / "00_test_lesson.ipynb"
    nbformat.write(nb, path)
    return path


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    src = tmp_path_factory.mktemp("src")
    out = tmp_path_factory.mktemp("site")
    index = build_site(out, [_synthetic_notebook(src), *NOTEBOOKS])
    return index, [out / f"{p.stem}.html" for p in [src / "00_test_lesson.ipynb", *NOTEBOOKS]]


class _Tags(HTMLParser):
    """Every start tag with its attributes, and the text outside <pre> and <code>."""

    def __init__(self):
        super().__init__()
        self.tags, self.prose, self._raw = [], [], 0

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._raw += tag in ("pre", "code")

    def handle_endtag(self, tag):
        self._raw -= tag in ("pre", "code")

    def handle_data(self, data):
        if not self._raw:
            self.prose.append(data)


def _parse(path: Path) -> _Tags:
    parser = _Tags()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_every_page_exists_and_fetches_nothing(site):
    index, pages = site
    for page in [index, *pages]:
        assert page.is_file(), page
        parsed = _parse(page)
        for tag, attrs in parsed.tags:
            assert tag not in ("script", "link", "iframe", "object", "embed"), f"{page.name}: <{tag} {attrs}>"
            if tag == "img":
                src = attrs.get("src", "")
                assert src.startswith("data:image/") or (page.parent / src).is_file(), f"{page.name}: {src[:80]}"
            for name in ("src", "srcset", "poster", "data"):
                assert not re.match(r"\s*(https?:)?//", attrs.get(name, "")), f"{page.name}: <{tag} {name}=...>"
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"@import|url\(\s*['\"]?(https?:)?//", text), page.name
        assert "Loading widget" not in text and "require.js" not in text.lower(), page.name


def test_math_is_mathml_and_no_tex_is_left(site):
    index, pages = site
    lesson = pages[0].read_text(encoding="utf-8")
    # m theta_i: an identifier m, then theta (U+03B8) with subscript i
    assert re.search(r"<mi>m</mi>\s*<msub>\s*<mi>(&#x0*3B8;|\u03b8)</mi>\s*<mi>i</mi>\s*</msub>", lesson, re.I)
    assert re.search(r'<math[^>]*display="block"', lesson) and "<msup><mi>x</mi><mn>2</mn></msup>" in lesson
    assert "echo $HOME and $PATH" in lesson            # a dollar in code is not math
    for page in [index, *pages]:
        prose = "".join(_parse(page).prose)
        assert "$" not in prose, f"{page.name}: TeX left in the text: {prose[prose.find('$') - 40:][:80]!r}"
    for page in pages[1:]:
        nb = nbformat.read(ROOT / "notebooks" / f"{page.stem}.ipynb", 4)
        if any("$" in c.source for c in nb.cells if c.cell_type == "markdown"):
            assert "<math" in page.read_text(encoding="utf-8"), page.name


def test_solutions_are_folded_and_exercises_framed(site):
    _, pages = site
    lesson = pages[0].read_text(encoding="utf-8")
    folded = re.findall(r'<details class="solution">(.*?)</details>', lesson, re.S)
    assert len(folded) == 1, "the two solution cells form one <details>"
    assert "SOLUTION-TEXT" in folded[0] and "SOLUTION-CODE" in folded[0] and "AFTER-TEXT" not in folded[0]
    assert lesson.count("SOLUTION-TEXT") == 1 and lesson.count("AFTER-TEXT") == 1
    assert re.search(r'<div class="exercise">.*?Exercise.*?</div>', lesson, re.S)
    for page in pages[1:]:       # every cell tagged solution of the course is inside a <details>
        nb = nbformat.read(ROOT / "notebooks" / f"{page.stem}.ipynb", 4)
        n_solutions = sum("solution" in c.metadata.get("tags", []) for c in nb.cells)
        assert ("<details" in page.read_text(encoding="utf-8")) == (n_solutions > 0), page.name


def test_widgets_and_attachments_are_embedded_and_local_files_are_not(site):
    _, pages = site
    imgs = [a["src"] for t, a in _parse(pages[0]).tags if t == "img"]
    sizes = [_png_size(base64.b64decode(src.split(",", 1)[1])) for src in imgs]
    assert sizes.count((1, 1)) == 1, "the cell attachment is embedded, the file dot.png next to the notebook is not"
    assert "[a dot: not embedded]" in pages[0].read_text(encoding="utf-8")
    # the slider view's static fallback: its strip of frames, each the view's figure at VIEW_DPI pixels per inch
    # under a caption band of 40 pixels (two lines), one frame per state the widget lists, stacked top to bottom
    from rope_ref.teaching.style import VIEW_DPI
    from rope_ref.teaching.views import DecayView
    from rope_ref.teaching.widgets import decay_widget
    width_in, height_in = DecayView(d=64).fig.get_size_inches()
    n_frames = len(decay_widget(d=64).frames)
    assert n_frames >= 2, "a strip shows the view in more than one state"
    strip = (round(VIEW_DPI * width_in), n_frames * (round(VIEW_DPI * height_in) + 40))
    assert strip in sizes, (strip, sizes)
    assert "open the notebook in JupyterLab" in pages[0].read_text(encoding="utf-8")   # the plain slider
    for page in pages[1:]:       # a notebook that shows a view shows its image
        nb = nbformat.read(ROOT / "notebooks" / f"{page.stem}.ipynb", 4)
        n_views = sum(len(re.findall(r"\b\w+_widget\(", c.source)) for c in nb.cells if c.cell_type == "code")
        n_imgs = sum(t == "img" for t, _ in _parse(page).tags)
        assert n_imgs >= n_views, page.name


def test_index_lists_every_notebook_in_order(site):
    index, pages = site
    assert [p.name for p in NOTEBOOKS] == sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
    text = index.read_text(encoding="utf-8")
    links = re.findall(r'<a href="([^"]+\.html)">', text)
    assert links == [p.name for p in pages] and all((index.parent / link).is_file() for link in links)
    assert "Zero. A test lesson" in text and "read Figure 2" in text
    assert "docs/lecture_plan.md" in text
    for page in pages[1:]:
        nb = nbformat.read(ROOT / "notebooks" / f"{page.stem}.ipynb", 4)
        if not any(c.source.startswith("## Learning objectives") for c in nb.cells):
            assert "no learning objectives given" in text


@pytest.mark.parametrize("tex,words", [(r"x^", "MissingSuperScript"), (r"\nosuchcommand x", r"\nosuchcommand")])
def test_math_that_cannot_be_rendered_is_an_error_naming_it(tex, words):
    with pytest.raises(ValueError, match=re.escape(words)) as err:
        markdown_to_html(f"before ${tex}$ after")
    assert repr(tex) in str(err.value)


def test_a_failing_notebook_names_itself_and_creates_nothing(tmp_path):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 / 0")])
    nbformat.write(nb, tmp_path / "bad.ipynb")
    with pytest.raises(RuntimeError, match="bad.ipynb failed: ZeroDivisionError"):
        build_site(tmp_path / "out", [tmp_path / "bad.ipynb"])
    assert not (tmp_path / "out").exists()


def test_a_missing_notebook_is_named_before_any_runs(tmp_path):
    # before: a raw FileNotFoundError from nbformat, after the notebooks before it had run
    with pytest.raises(FileNotFoundError, match="notebook.s. not found: " + re.escape(str(tmp_path / "nope.ipynb"))):
        build_site(tmp_path / "out", [tmp_path / "nope.ipynb"])
    assert not (tmp_path / "out").exists()


HOSTILE = [
    ("markdown", "<script>alert('md')</script> <img src=x onerror=alert(1)> <iframe src='https://e.org'></iframe>"),
    ("markdown", "[click](javascript:alert(1)) [again](JaVaScRiPt:alert(2)) <a href='javascript:alert(3)'>a</a>"),
    ("markdown", "![secret](/etc/hostname) ![remote](https://example.org/x.png) <style>body{display:none}</style>"),
    ("markdown", "Math with a payload $\\text{<script>alert(4)</script>}$"),
    ("html", "<script>alert('out')</script><b onclick='alert(5)'>bold</b>"),
    ("svg", "<svg xmlns='http://www.w3.org/2000/svg'><script>alert(6)</script><circle r='4'/></svg>"),
    ("markdown-output", "<script>alert(7)</script>[x](javascript:alert(8))"),
]


def test_no_script_from_any_notebook(tmp_path):
    # before: <script> in markdown and text/html outputs was copied into the page, javascript: links kept,
    # and ![..](/local/path) embedded a file of the builder's machine
    md, code = nbformat.v4.new_markdown_cell, nbformat.v4.new_code_cell
    cells = []
    for kind, payload in HOSTILE:
        if kind == "markdown":
            cells.append(md(payload))
        else:
            mime = {"html": "text/html", "svg": "image/svg+xml", "markdown-output": "text/markdown"}[kind]
            cells.append(code(f"from IPython.display import display\ndisplay({{{mime!r}: {payload!r}}}, raw=True)"))
    nb = nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "language": "python",
                                                                        "display_name": "Python 3"}})
    nbformat.write(nb, tmp_path / "evil.ipynb")
    build_site(tmp_path / "out", [tmp_path / "evil.ipynb"])
    page = tmp_path / "out" / "evil.html"
    parsed = _parse(page)
    assert [t for t, _ in parsed.tags].count("style") == 1, "only the page's own style block"
    for tag, attrs in parsed.tags:
        assert tag not in ("script", "iframe", "svg", "object", "embed"), (tag, attrs)
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
        assert not re.match(r"\s*javascript:", attrs.get("href", ""), re.I), (tag, attrs)
        if tag == "img":
            assert attrs["src"].startswith("data:image/"), attrs["src"][:80]
    text = page.read_text(encoding="utf-8")
    assert "alert(4)" not in text      # the payload inside \text{} is dropped with its <script>
    assert "&lt;script&gt;alert(&#x27;md&#x27;)" in text or "&lt;script&gt;alert('md')" in text   # shown, not run
    hostname = Path("/etc/hostname").read_bytes() if Path("/etc/hostname").exists() else b"\0"
    assert base64.b64encode(hostname).decode() not in text
    assert "[secret: not embedded]" in text and "[remote: not embedded]" in text


@pytest.mark.parametrize("tex,pattern", [
    # issue 24: "cosmθ₁", "0.1ln4 + 1" had no space; matrices' brackets did not stretch
    (r"\cos m\theta_1", r"<mi>cos</mi><mspace width=\"0.1667em\"></mspace><mi>m</mi>"),
    (r"0.1\ln 4 + 1", r"<mn>0.1</mn><mspace[^>]*></mspace><mi>ln</mi><mspace[^>]*></mspace><mn>4</mn>"),
    (r"\sin(x)", r"<mi>sin</mi><mo stretchy=\"false\">\(</mo>"),
    (r"\cos^2 x", r"</msup><mspace[^>]*></mspace><mi>x</mi>"),
    (r"\begin{pmatrix} a \\ b \end{pmatrix}", r'<mrow><mtable class="paren">.*</mtable></mrow>'),
    (r"\begin{bmatrix} a \\ b \end{bmatrix}", r'<mrow><mtable class="bracket">.*</mtable></mrow>'),
    (r"\left( \frac{a}{b} \right)", r'<mo stretchy="true" fence="true" form="prefix">\(</mo><mfrac>'),
])
def test_mathml_spaces_function_names_and_stretches_matrix_brackets(tex, pattern):
    assert re.search(pattern, math_to_mathml(tex)), math_to_mathml(tex)


# --- in a real browser, offline -------------------------------------------------------------------------------

MATH_LAYOUT = """() => [...document.querySelectorAll('math')].map(m => {
    const r = m.getBoundingClientRect(), sub = m.querySelector('msub');
    let dropped = null;
    if (sub) { const base = sub.children[0].getBoundingClientRect(), script = sub.children[1].getBoundingClientRect();
               dropped = script.bottom > base.bottom; }
    return {w: r.width, h: r.height, display: getComputedStyle(m).display, dropped};
})"""


@pytest.mark.browser
def test_every_page_renders_offline_in_chromium(site, browser):
    index, pages = site
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    blocked = []

    def only_files(route):
        if route.request.url.startswith(("file://", "data:")):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    context.route("**/*", only_files)
    try:
        for path in [index, *pages]:
            page = context.new_page()
            errors = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(path.as_uri(), wait_until="load")
            maths = page.evaluate(MATH_LAYOUT)
            for m in maths:       # laid out as MathML (not as plain inline text), with a size
                assert m["display"] in ("math", "block math", "inline math"), (path.name, m)
                assert m["w"] > 0 and m["h"] > 0, (path.name, m)
                assert m["dropped"] in (None, True), f"{path.name}: a subscript is not lowered: {m}"
            if path != index and "<math" in path.read_text(encoding="utf-8"):
                assert maths, path.name
            widths = page.evaluate("() => [...document.images].map(i => i.complete ? i.naturalWidth : 0)")
            assert all(w > 0 for w in widths), f"{path.name}: an image did not load: {widths}"
            assert "Loading widget" not in page.inner_text("body")
            summary = page.locator("details.solution > summary")
            if summary.count():
                content = page.locator("details.solution").first.locator(":scope > :not(summary)").first
                assert not content.is_visible(), f"{path.name}: a solution is open before a click"
                summary.first.click()
                assert content.is_visible(), f"{path.name}: a click does not open the solution"
            assert not errors, f"{path.name}: console errors {errors}"
            page.close()
    finally:
        context.close()
    assert not blocked, f"the pages tried to fetch: {blocked}"


LAYOUT = """() => ({
    matrices: [...document.querySelectorAll('mtable.paren, mtable.bracket')].map(t => {
        const s = getComputedStyle(t), r = t.getBoundingClientRect();
        return {h: r.height, left: parseFloat(s.borderLeftWidth), right: parseFloat(s.borderRightWidth)}; }),
    figures: [...document.querySelectorAll('.fig img')].map(i => ({natural: i.naturalWidth,
        attr: parseFloat(i.getAttribute('width') || '0'), shown: i.getBoundingClientRect().width})),
    outputs: [...document.querySelectorAll('pre.out')].map(p => p.scrollWidth - p.clientWidth),
})"""


@pytest.mark.browser
def test_matrices_figures_and_outputs_are_laid_out_for_reading(site, browser):
    # issue 24: matrix brackets one line high, wide figures shrunk to the column (7-8 px legends), long
    # outputs of notebook 07 scrolling sideways
    _, pages = site
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    seen_matrix = seen_figure = 0
    try:
        for path in pages:
            page = context.new_page()
            page.goto(path.as_uri(), wait_until="load")
            layout = page.evaluate(LAYOUT)
            for m in layout["matrices"]:
                seen_matrix += 1
                assert m["left"] > 0 and m["right"] > 0 and m["h"] > 30, (path.name, m)
            for f in layout["figures"]:
                if f["attr"]:       # shown at its physical size (96 CSS px per inch), not squeezed into the column
                    seen_figure += 1
                    assert abs(f["shown"] - f["attr"]) <= 1, (path.name, f)
            assert all(extra <= 1 for extra in layout["outputs"]), (path.name, layout["outputs"])
            page.close()
    finally:
        context.close()
    assert seen_matrix and seen_figure


def test_index_numbers_the_notebooks_as_they_are_titled():
    # issue 31: the index numbered 1..12 while the notebooks are titled "0." .. "11."
    pages = [("00_why_positions", "0. Why positions?", ""), ("01_three_forms", "1. Three forms", ""),
             ("07_check", "Check your RoPE", "")]
    text = index_html(pages).decode()
    numbers = re.findall(r"<tr><td>([^<]*)</td><td><a href=\"[^\"]+\">([^<]*)</a>", text)
    assert numbers == [("0", "Why positions?"), ("1", "Three forms"), ("7", "Check your RoPE")]


def test_the_handout_is_a_page_linked_from_the_index(site):
    index, _ = site
    assert '<a href="handout.html"' in index.read_text(encoding="utf-8")
    page = index.parent / "handout.html"
    assert page.read_bytes() == handout_html(HANDOUT)
    text = page.read_text(encoding="utf-8")
    assert "<math" in text and "arXiv:2309.00071" in text and '<a href="index.html">' in text
    assert "$" not in "".join(_parse(page).prose)


def test_bars_are_fences_without_operator_spacing():
    # issue 31: |x| drawn as "| x |", with an operator's gap on each side of each bar
    mathml = math_to_mathml(r"|q_m| + \|k\|")
    bars = re.findall(r"<mo[^>]*>(?:\||\u2016)</mo>", mathml)
    assert len(bars) == 4 and all('lspace="0em"' in bar and 'rspace="0em"' in bar for bar in bars), bars


SUM_LAYOUT = """() => [...document.querySelectorAll('math[display="block"] munderover')].map(u => {
    const [op, under, over] = [...u.children].map(c => c.getBoundingClientRect());
    return {under_below: under.top >= op.bottom - 1, over_above: over.bottom <= op.top + 1,
            font: getComputedStyle(u).fontFamily};
})"""


@pytest.mark.browser
def test_display_sums_carry_their_limits_below_and_above_in_one_math_font(tmp_path, browser):
    # issue 31: sum limits drawn beside a small sum sign (no OpenType MATH font chosen), and the math in
    # whatever fonts the browser found glyph by glyph
    source = "$$\\frac{1}{d/2}\\sum_{j=1}^{d/2} |S_j| \\qquad \\sum_{i=0}^{d/2-1} h_i e^{i(m-n)\\theta_i}$$"
    path = tmp_path / "sums.html"
    path.write_bytes(handout_html(_write(tmp_path / "sums.md", source)))
    page = browser.new_page()
    try:
        page.goto(path.as_uri(), wait_until="load")
        sums = page.evaluate(SUM_LAYOUT)
    finally:
        page.close()
    assert len(sums) == 2 and all(s["under_below"] and s["over_above"] for s in sums), sums
    assert all(s["font"].startswith('"DejaVu Math TeX Gyre"') for s in sums), sums


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path
