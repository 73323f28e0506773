"""``python -m rope_ref site`` on a synthetic lesson whose outputs are written by hand (the course's own pages are
tested in test_notebooks_run.py, from the one run of each notebook)."""

from __future__ import annotations

import base64
import re
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest

from rope_ref.teaching.site import HANDOUT, build_site, handout_html, index_html, markdown_to_html, math_to_mathml

PNG_1x1 = base64.b64decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5E"
                           "rkJggg==")
WIDGET = "application/vnd.jupyter.widget-view+json"


def _notebook(cells):
    return nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "language": "python",
                                                                          "display_name": "Python 3"}})


def _code(source, **data):
    """A code cell as a kernel leaves it: ``data`` (mime type -> content) its one display output."""
    cell = nbformat.v4.new_code_cell(source)
    cell.outputs = [nbformat.v4.new_output("display_data", data=data)] if data else []
    return cell


def _lesson():
    md = nbformat.v4.new_markdown_cell
    solution = {"model_id": "0", "version_major": 2, "version_minor": 0}
    cells = [
        md("# Zero. A test lesson on $\\theta_i$\n\nThe angle is $m\\theta_i$ and\n\n$$q_m \\cdot k_n = x^2.$$\n\n"
           "A price in code stays: `echo $HOME and $PATH`.\n\n![a dot](dot.png) ![attached](attachment:dot2.png)",
           attachments={"dot2.png": {"image/png": base64.b64encode(PNG_1x1).decode()}}),
        md("## Learning objectives\n\n- rotate a pair by $m\\theta_i$\n- read Figure 2, where $a +\n b$ spans two "
           "lines"),
        md("**Exercise.** Compute $2+2$.", metadata={"tags": ["exercise"]}),
        md("<details><summary>Solution</summary>\nThe answer is OLD-TEXT.\n\n```python\nprint('OLD-CODE')\n```\n"
           "</details>", metadata={"tags": ["solution"]}),        # no blank line after <summary>, before </details>
        md("<details>\n<summary>Solution</summary>\n\nNEW-TEXT, with $x^2$:\n\n```python\nanswer = 'NEW-CODE'\n```\n\n"
           "</details>", metadata={"tags": ["solution"]}),
        md("After the solutions: AFTER-TEXT."),
        _code("from rope_ref.teaching.widgets import decay_widget\ndecay_widget(d=64)", **{WIDGET: solution}),
        _code("import ipywidgets\nipywidgets.IntSlider()", **{WIDGET: solution, "text/plain": "IntSlider()"}),
    ]
    nb = _notebook(cells)       # the widget's state, as nbclient stores it (else nbconvert shows text/plain)
    nb.metadata.widgets = {"application/vnd.jupyter.widget-state+json": {"state": {"0": {}}, "version_major": 2,
                                                                         "version_minor": 0}}
    return nb


@pytest.fixture(scope="module")
def lesson(tmp_path_factory):
    """The synthetic lesson's page (with its notebook's folder holding a local image) and the index."""
    src, out = tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("site")
    (src / "dot.png").write_bytes(PNG_1x1)
    nb = _lesson()
    nbformat.write(nb, src / "00_test_lesson.ipynb")
    index = build_site(out, [src / "00_test_lesson.ipynb"], executed=[nb])
    return out / "00_test_lesson.html", index


def start_tags(text) -> list:
    """Every start tag of ``text`` with its attributes."""
    parser = HTMLParser()
    parser.handle_starttag = lambda tag, attrs: found.append((tag, dict(attrs)))
    found = []
    parser.feed(text)
    return found


@pytest.mark.slow
def test_the_lesson_page_renders_math_folds_solutions_and_embeds_only_its_own_images(lesson):
    page, index = lesson
    text = page.read_text(encoding="utf-8")
    # m theta_i: an identifier m, then theta (U+03B8) with subscript i
    assert re.search(r"<mi>m</mi>\s*<msub>\s*<mi>(&#x0*3B8;|\u03b8)</mi>\s*<mi>i</mi>\s*</msub>", text, re.I)
    assert re.search(r'<math[^>]*display="block"', text) and "<msup><mi>x</mi><mn>2</mn></msup>" in text
    assert "echo $HOME and $PATH" in text                   # a dollar in code is not math
    folded = re.findall(r'<details class="solution">(.*?)</details>', text, re.S)
    assert len(folded) == 2 and all(f.count("<summary>") == 1 for f in folded), "one <details> per solution"
    assert "OLD-TEXT.</p>" in folded[0] and "OLD-CODE" in folded[0]     # <details><summary> on one line
    assert "NEW-TEXT" in folded[1] and "NEW-CODE" in folded[1] and "<msup>" in folded[1]
    outside = re.sub(r"<details.*?</details>", "", text, flags=re.S)
    assert "AFTER-TEXT" in outside and not re.search("OLD-|NEW-|&lt;/?details", outside)
    assert re.search(r'<div class="exercise">.*?Exercise.*?</div>', text, re.S)
    images = [a["src"] for t, a in start_tags(text) if t == "img"]
    assert all(src.startswith("data:image/") for src in images)
    assert images.count(f"data:image/png;base64,{base64.b64encode(PNG_1x1).decode()}") == 1, "only the attachment"
    assert "[a dot: not embedded]" in text and "open the notebook in JupyterLab" in text      # the plain slider
    index_text = index.read_text(encoding="utf-8")
    assert re.findall(r'<a href="([^"]+\.html)">', index_text) == ["00_test_lesson.html"]
    assert "Zero. A test lesson" in index_text and "read Figure 2" in index_text
    assert "docs/lecture_plan.md" in index_text


@pytest.mark.slow
def test_a_slider_view_is_a_button_per_value_over_the_views_own_frames(lesson):
    from rope_ref.teaching.widgets import decay_widget
    text = lesson[0].read_text(encoding="utf-8")
    block = text[text.index('<div class="sliders">'):]
    rows = re.findall(r"<div><b>([^<]*)</b>(.*?)</div>", block)
    assert [name for name, _ in rows] == ["d", "base"]
    box = decay_widget(d=64)
    for name, labels in rows:
        for n, value in re.findall(r'<label class="l\d+" for="[^"]*-(\d+)">([^<]*)</label>', labels):
            frame = re.search(rf'<div class="frame f{n}"><img [^>]*src="data:image/png;base64,([^"]*)"', block)[1]
            box.controls[name].value = {"d": int, "base": float}[name](value)
            assert base64.b64decode(frame) == box.image.value, (name, value)     # the view's own image
            box.controls[name].value = {"d": 64, "base": 10000.0}[name]
    assert len(re.findall(r'type="radio"', block)) == len(re.findall(r'<div class="frame ', block)) >= 9
    assert block.count(" checked") == 1 and block.count("<label class=") == 12, "a label per value, 6 per control"


@pytest.mark.parametrize("tex,words", [(r"x^", "MissingSuperScript"), (r"\nosuchcommand x", r"\nosuchcommand")])
def test_math_that_cannot_be_rendered_is_an_error_naming_it(tex, words):
    with pytest.raises(ValueError, match=re.escape(words)) as err:
        markdown_to_html(f"before ${tex}$ after")
    assert repr(tex) in str(err.value)


HOSTILE = [
    ("markdown", "<script>alert('md')</script> <img src=x onerror=alert(1)> <iframe src='https://e.org'></iframe>"),
    ("markdown", "[click](javascript:alert(1)) [again](JaVaScRiPt:alert(2)) <a href='javascript:alert(3)'>a</a>"),
    ("markdown", "![secret](/etc/hostname) ![remote](https://example.org/x.png) <style>body{display:none}</style>"),
    ("markdown", "Math with a payload $\\text{<script>alert(4)</script>}$"),
    ("markdown", "<details>\n<summary><script>alert(9)</script></summary>\n\n<script>alert(10)</script>\n</details>"),
    ("text/html", "<script>alert('out')</script><b onclick='alert(5)'>bold</b>"),
    ("image/svg+xml", "<svg xmlns='http://www.w3.org/2000/svg'><script>alert(6)</script><circle r='4'/></svg>"),
    ("text/markdown", "<script>alert(7)</script>[x](javascript:alert(8))"),
]


def test_no_script_from_any_notebook(tmp_path):
    # before: <script> in markdown and text/html outputs was copied into the page, javascript: links kept,
    # and ![..](/local/path) embedded a file of the builder's machine
    nb = _notebook([nbformat.v4.new_markdown_cell(payload) if kind == "markdown" else _code("", **{kind: payload})
                    for kind, payload in HOSTILE])
    nbformat.write(nb, tmp_path / "evil.ipynb")
    build_site(tmp_path / "out", [tmp_path / "evil.ipynb"], executed=[nb])
    text = (tmp_path / "out" / "evil.html").read_text(encoding="utf-8")
    tags = start_tags(text)
    assert [t for t, _ in tags].count("style") == 1, "only the page's own style block"
    for tag, attrs in tags:
        assert tag not in ("script", "iframe", "svg", "object", "embed"), (tag, attrs)
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
        assert not re.match(r"\s*javascript:", attrs.get("href", ""), re.I), (tag, attrs)
        if tag == "img":
            assert attrs["src"].startswith("data:image/"), attrs["src"][:80]
    assert "alert(4)" not in text      # the payload inside \text{} is dropped with its <script>
    assert "&lt;script&gt;alert(&#x27;md&#x27;)" in text or "&lt;script&gt;alert('md')" in text   # shown, not run
    hostname = Path("/etc/hostname").read_bytes() if Path("/etc/hostname").exists() else b"\0"
    assert base64.b64encode(hostname).decode() not in text
    assert "[secret: not embedded]" in text and "[remote: not embedded]" in text


@pytest.mark.parametrize("out, count, executed, error, named", [
    (None, 1, 1, TypeError, "out"), ("taken.txt", 1, 1, ValueError, "out"), ("site", 1, None, ValueError, "out"),
    ("new", 0, 0, ValueError, "len(notebooks)"), ("new", 2, 1, ValueError, "len(executed)"),
    ("new", 1, 2, ValueError, "len(executed)")])
def test_a_bad_folder_notebook_list_or_executed_list_is_named_before_anything_runs_or_is_written(
        tmp_path, capsys, out, count, executed, error, named):
    """Before: None was a raw TypeError, a file as ``out`` a FileExistsError, a folder at a page's path an
    IsADirectoryError after pages were written, no notebook wrote an empty site, a short ``executed`` an IndexError."""
    nb = _notebook([])
    for i in range(count):
        nbformat.write(nb, tmp_path / f"{i}.ipynb")
    (tmp_path / "taken.txt").write_text("x")
    (tmp_path / "site" / "index.html").mkdir(parents=True)
    with pytest.raises(error, match=rf"^{re.escape(named)} "):
        build_site(out and tmp_path / out, [tmp_path / f"{i}.ipynb" for i in range(count)],
                   executed=None if executed is None else [nb] * executed)
    assert "executing" not in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.rglob("*") if p.suffix != ".ipynb") == ["index.html", "site", "taken.txt"]


@pytest.mark.slow
def test_a_missing_or_failing_notebook_is_named_and_nothing_is_created(tmp_path, capsys):
    # before: a missing notebook was a raw FileNotFoundError from nbformat, after the notebooks before it had run
    nbformat.write(_notebook([nbformat.v4.new_code_cell("1 / 0")]), tmp_path / "bad.ipynb")
    with pytest.raises(FileNotFoundError, match=re.escape(str(tmp_path / "nope.ipynb"))):
        build_site(tmp_path / "out", [tmp_path / "bad.ipynb", tmp_path / "nope.ipynb"])
    assert "executing" not in capsys.readouterr().err, "a notebook ran before the missing one was named"
    with pytest.raises(RuntimeError, match="bad.ipynb failed: ZeroDivisionError"):
        build_site(tmp_path / "out", [tmp_path / "bad.ipynb"])
    assert not (tmp_path / "out").exists()
    assert "executing bad.ipynb (1/1)" in capsys.readouterr().err       # what it is doing, while it does it


@pytest.mark.parametrize("tex,pattern", [
    # issue 24: "cosmθ₁", "0.1ln4 + 1" had no space; matrices' brackets did not stretch
    (r"\cos m\theta_1", r"<mi>cos</mi><mspace width=\"0.1[67]*em\"></mspace><mi>m</mi>"),
    (r"0.1\ln 4 + 1", r"<mn>0.1</mn><mspace[^>]*></mspace><mi>ln</mi><mspace[^>]*></mspace><mn>4</mn>"),
    (r"\sin(x)", r"<mi>sin</mi><mo stretchy=\"false\">\(</mo>"),
    (r"\cos^2 x", r"</msup><mspace[^>]*></mspace><mi>x</mi>"),
    (r"\begin{pmatrix} a \\ b \end{pmatrix}", r'<mrow><mtable class="paren">.*</mtable></mrow>'),
    (r"\begin{bmatrix} a \\ b \end{bmatrix}", r'<mrow><mtable class="bracket">.*</mtable></mrow>'),
    (r"\left( \frac{a}{b} \right)", r'<mo stretchy="true" fence="true" form="prefix">\(</mo><mfrac>'),
    # issue 31: |x| drawn as "| x |", with an operator's gap on each side of each bar
    (r"|q_m| + \|k\|", r'(<mo[^>]* lspace="0em" rspace="0em">(\||\u2016)</mo>.*){4}'),
])
def test_mathml_reads_like_tex_spaced_functions_tall_matrix_brackets_tight_bars(tex, pattern):
    assert re.search(pattern, math_to_mathml(tex)), math_to_mathml(tex)


def test_index_numbers_the_notebooks_as_they_are_titled():
    # issue 31: the index numbered 1..12 while the notebooks are titled "0." .. "11."
    pages = [("00_why_positions", "0. Why positions?", ""), ("01_three_forms", "1. Three forms", ""),
             ("07_check", "Check your RoPE", "")]
    links = re.findall(r'<a href="([^"]+)">([^<]*)</a>', index_html(pages).decode())
    assert links == [("00_why_positions.html", "0. Why positions?"), ("01_three_forms.html", "1. Three forms"),
                     ("07_check.html", "Check your RoPE")]


def test_the_handout_is_a_page_with_its_math_rendered():
    text = handout_html(HANDOUT).decode()
    assert "<math" in text and "arXiv:2309.00071" in text and '<a href="index.html">' in text
    assert not re.search(r"\$[^$<>]{1,80}\$", re.sub(r"<(pre|code)\b.*?</\1>|<[^>]+>", "", text, flags=re.S))
