"""The course as static HTML that works offline: ``python -m rope_ref site --out DIR``.

Every notebook executed (nbclient) and written through nbconvert's HTML exporter with the template ``site.html.j2``
(the page around the cells: style, links, the overview's text, figure boxes): no script, nothing fetched; math as
MathML (latex2mathml), figures as ``data:`` URIs, raw HTML escaped, each body through an allowlist (:func:`_clean`);
solutions folded, exercises framed; each slider view as radio buttons over its frames (:func:`.widgets.static_sliders`).
"""

import base64
import functools
import io
import re
import subprocess
import sys
from pathlib import Path

import latex2mathml.converter
import nbformat
import nh3
from mistune.util import striptags
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from nbconvert import HTMLExporter
from nbconvert.filters.markdown_mistune import InvalidNotebook, IPythonRenderer, MarkdownWithMath
from PIL import Image
from pygments.formatters import HtmlFormatter
from traitlets.config import Config

from .._validate import check_number, check_positive_int
from .files import output_folder, write_atomically
from .widgets import SLIDERS, WIDGET_VIEW, with_sliders

#: The one-page handout (notation, the scaling formulas), published as ``handout.html`` when the checkout has it.
HANDOUT = Path(__file__).resolve().parents[2] / "docs" / "handout.md"
#: The output kinds a page shows, the first a output has winning (HTML only as text; no script, no widget state).
SHOWN = [SLIDERS, "image/png", "image/svg+xml", WIDGET_VIEW, "text/latex", "text/markdown", "text/plain", "text/html"]

# ---- MathML that reads like TeX: the TeX rewritten before latex2mathml, the MathML after ---------------------------

#: A function name TeX sets with thin spaces around it, in TeX.
_FUNCTION = (r"\\(?:arccos|arcsin|arctan|arg|cosh|cos|cot|csc|det|dim|exp|gcd|inf|lim|ln|log|max|min|mod|sec|sinh|"
             r"sin|sup|tanh|tan)(?![A-Za-z])")
#: TeX's thin spaces around \cos, \ln, ... that MathML leaves out ("cos mθ", "0.1 ln 4"), as ``\,``: before the name
#: after an operand, after it (or its power, ``\cos^2 x``) unless a bracket, a script or the end follows.
_TEX_REWRITES = [(rf"(?<=[\w}})])\s*(?={_FUNCTION})", r"\\,"),
                 (rf"({_FUNCTION}(?:\^(?:\w|\{{[^}}]*\}}))?)\s*(?![\s(\[{{}}_^]|\\left|\\right|\\\\|$)", r"\1\\,")]
#: The brackets of a matrix as tall as the matrix: a class on the ``<mtable>`` whose borders the page's style draws (a
#: stretchy ``<mo>`` grows only with an OpenType MATH font); ``|x|`` and ``\|x\|`` drawn tight, as TeX draws them (a
#: bar is a fence, not an operator with gaps).
_MATHML_REWRITES = [
    *((rf"(?s)<mo>{left}</mo><mtable>((?:(?!<mtable>).)*?)</mtable><mo>{right}</mo>",
       rf'<mtable class="{kind}">\1</mtable>')
      for left, right, kind in [("&#x00028;", "&#x00029;", "paren"), ("&#x0005B;", "&#x0005D;", "bracket"),
                                ("&#x0007C;", "&#x0007C;", "vbar"), ("&#x02016;", "&#x02016;", "vvbar")]),
    (r'<mo((?: fence="false")? stretchy="false")>(&#x0007C;|&#x02016;)</mo>',
     r'<mo\1 lspace="0em" rspace="0em">\2</mo>')]


def _rewrite(text: str, rules: list) -> str:
    """``text`` with each (pattern, replacement) of ``rules`` substituted in turn."""
    return functools.reduce(lambda done, rule: re.sub(*rule, done), rules, text)


def math_to_mathml(tex: str, display: bool = False) -> str:
    """LaTeX to a MathML element the browser draws itself (no script, no network), spaced and fenced as TeX is."""
    try:
        mathml = latex2mathml.converter.convert(_rewrite(tex.strip(), _TEX_REWRITES),
                                                display="block" if display else "inline")
    except Exception as exc:        # latex2mathml has many exception types; name the formula instead
        raise ValueError(f"cannot render the math {tex.strip()!r} as MathML: {exc!r}") from exc
    unknown = re.findall(r">(\\[A-Za-z]+)<", mathml)    # a command latex2mathml does not know is left as text
    if unknown:
        raise ValueError(f"cannot render the math {tex.strip()!r} as MathML: unknown command(s) {unknown}")
    return _clean(_rewrite(mathml, _MATHML_REWRITES))


class _CourseRenderer(IPythonRenderer):
    """nbconvert's markdown renderer, for :func:`markdown_to_html`."""

    def inline_math(self, body: str) -> str:
        return math_to_mathml(body)

    def block_math(self, body: str) -> str:
        return math_to_mathml(body, display=True)

    def latex_environment(self, name: str, body: str) -> str:
        return math_to_mathml(f"\\begin{{{name}}}{body}\\end{{{name}}}", display=True)

    def block_html(self, html: str) -> str:
        """A fold kept (``<details>``, a plain ``<summary>...</summary>``, ``</details>``); other raw HTML escaped."""
        if re.fullmatch(r"\s*(<details>\s*)?(<summary>[^<>]*</summary>)?\s*|\s*</details>\s*", html):
            return html.replace("<details>", '<details class="solution">')
        return super().block_html(html)

    def image(self, text: str, url: str, title: str | None = None) -> str:
        """An image the cell holds (its attachments, ``data:`` images); any other is shown as its alt text."""
        try:
            img = super().image(text, url, title)
        except InvalidNotebook:     # an attachment the cell does not hold
            img = ""
        shown = img.startswith('<img src="data:image/')
        return img if shown else f"<em>[{striptags(text) or 'image'}: not embedded]</em>"


def markdown_to_html(source: str, attachments: dict | None = None) -> str:
    """Markdown with $...$ and $$...$$ math to HTML; math becomes MathML.  Raw HTML is escaped but for the lines of
    a folded block (``<details>``, ``<summary>``), links keep only safe protocols, and an image is shown only when
    the cell holds it (``attachments``), else as its alt text."""
    renderer = _CourseRenderer(escape=True, allow_harmful_protocols=None, exclude_anchor_links=True,
                               attachments=attachments or {})
    source = re.sub(r"^[ \t]*(<details>[ \t]*(<summary>[^<>]*</summary>)?|<summary>[^<>]*</summary>|</details>)[ \t]*$",
                    r"\n\1\n", source, flags=re.M)       # each line of a fold a block of its own (markdown between)
    return MarkdownWithMath(renderer=renderer).render(source)


MATHML_TAGS = set("""math semantics annotation mrow mi mn mo ms mtext mspace msub msup msubsup mfrac msqrt mroot mtable
    mtr mtd mover munder munderover mstyle mpadded mphantom menclose merror mmultiscripts mprescripts none""".split())
MATHML_ATTRIBUTES = set("""display xmlns mathvariant stretchy fence separator lspace rspace columnalign rowalign
    columnspacing rowspacing columnlines rowlines frame depth width height minsize maxsize accent accentunder
    linethickness movablelimits symmetric form notation displaystyle scriptlevel encoding largeop voffset""".split())


def _embedded_images_only(tag: str, attribute: str, value: str) -> str | None:
    """An image's source only as a ``data:image/...`` URI (what the notebook holds); no ``data:`` link."""
    if attribute == "src":
        return value if tag == "img" and value.startswith("data:image/") else None
    return None if value.lstrip().lower().startswith("data:") else value


def _clean(text: str) -> str:
    """HTML with only allowed tags and attributes (nh3's defaults, MathML, classes): scripts and styles dropped
    with their content, links only to http(s), mailto and relative targets, images only from ``data:`` URIs."""
    return nh3.clean(text, tags=nh3.ALLOWED_TAGS | MATHML_TAGS | {"input", "label"}, link_rel=None,
                     attribute_filter=_embedded_images_only,
                     attributes={**nh3.ALLOWED_ATTRIBUTES, "*": MATHML_ATTRIBUTES | {"class", "title"},
                                 "input": {"type", "name", "id", "checked"}, "label": {"for"}},
                     url_schemes={"http", "https", "mailto", "data"})


def _css_width(png: str) -> str:
    """`` width="..."``: a PNG at 96 CSS px per inch when it states its resolution (dpi), else ''."""
    try:
        with Image.open(io.BytesIO(base64.b64decode(png))) as image:
            dpi = image.info.get("dpi", (0,))[0]
            return f' width="{round(image.width * 96 / dpi)}"' if dpi > 0 else ""
    except (OSError, ValueError):   # not an image Pillow reads: shown at its own size
        return ""


@functools.cache
def _exporter() -> HTMLExporter:
    """nbconvert's HTML exporter with the site's template and its filters (markdown, math, figures, the allowlist)."""
    filters = {"clean": _clean, "course_markdown": markdown_to_html, "css_width": _css_width}
    return HTMLExporter(template_file=str(Path(__file__).with_name("site.html.j2")), filters=filters,
                        preprocessors=[with_sliders], config=Config(NbConvertBase={"display_data_priority": SHOWN}))


def _page(title: str, nb, **resources) -> bytes:
    """A whole page (site.html.j2) of ``nb``'s cells or of one markdown text; ``resources``: ``nav`` (the stems before
    and after, each a list of one or none), ``overview`` (the index's ``pages`` and ``handout``), ``stem``."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(nb)]) if isinstance(nb, str) else nb
    resources.update(title=title, code_style=HtmlFormatter().get_style_defs(".highlight"))
    return _exporter().from_notebook_node(nb, resources=resources)[0].encode("utf-8")


def index_html(pages, handout: bool = False) -> bytes:
    """The overview: every notebook in order, with its title, file and learning objectives (and the handout)."""
    return _page("rope_ref course", nbformat.v4.new_notebook(), overview={"handout": handout, "pages": pages})


def handout_html(source: Path | str = HANDOUT) -> bytes:
    """The handout (markdown with math) as a page of the site, with a link back to the overview."""
    return _page("RoPE on one page", Path(source).read_text(encoding="utf-8"), nav=([], []))


def course_notebooks(folder: Path | str) -> list[Path]:
    """The course: every ``*.ipynb`` in ``folder``, in file-name order (the names' numbers give the order)."""
    if not Path(folder).is_dir():
        raise FileNotFoundError(f"the notebooks folder {folder} does not exist")
    return sorted(Path(folder).glob("*.ipynb"))


def build_site(out: Path | str, notebooks: list[Path], timeout: int = 300, executed: list | None = None) -> Path:
    """Execute ``notebooks`` in the given order (or take ``executed``, the same notebooks already executed), write
    one page each, ``index.html`` and (from a checkout) ``handout.html`` into ``out``; the path of ``index.html``.
    One line per notebook on stderr says what it is doing; nothing is written before every notebook has run."""
    notebooks = [Path(p) for p in notebooks]
    out = output_folder(out, "out", [f"{p.stem}.html" for p in notebooks] + ["index.html", "handout.html"])
    check_positive_int(len(notebooks), "len(notebooks)")
    if executed is not None:
        check_number(len(executed), "len(executed)", f"len(notebooks)={len(notebooks)}", lambda n: n == len(notebooks))
    missing = [str(p) for p in notebooks if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"build_site: notebook(s) not found: {', '.join(missing)}")
    stems, pages, rendered = [p.stem for p in notebooks], [], []
    for i, path in enumerate(notebooks):
        print(f"{'rendering' if executed else 'executing'} {path.name} ({i + 1}/{len(notebooks)})", file=sys.stderr)
        nb = nbformat.read(path, as_version=4) if executed is None else executed[i]
        try:
            if executed is None:            # run top to bottom in its own folder (the file unchanged)
                NotebookClient(nb, timeout=timeout, startup_timeout=timeout, kernel_name="python3",
                               resources={"metadata": {"path": str(path.parent)}}).execute(stderr=subprocess.DEVNULL)
            texts = [cell.source.strip() for cell in nb.cells if cell.cell_type == "markdown"]
            title = next((t.splitlines()[0][2:].strip() for t in texts if t.startswith("# ")), path.stem)
            objectives = next((t.partition("\n")[2] for t in texts if t.startswith("## Learning objectives")), "")
            pages.append((path.stem, title, objectives))                # the objectives without their heading
            rendered.append(_page(title.replace("$", ""), nb, nav=(stems[:i][-1:], stems[i + 1:i + 2]), stem=path.stem))
        except CellExecutionError as exc:
            raise RuntimeError(f"notebook {path.name} failed: {exc.ename}: {exc.evalue}") from exc
        except ValueError as exc:
            raise RuntimeError(f"notebook {path.name}: {exc}") from exc
    for stem, page in zip(stems, rendered):
        write_atomically(out / f"{stem}.html", page)
    if HANDOUT.is_file():
        write_atomically(out / "handout.html", handout_html())
    return write_atomically(out / "index.html", index_html(pages, handout=HANDOUT.is_file()))

