"""Documents as an outline: a title, headings and text blocks, each with its source lines and page.

Each format is read by a well-kept parser (markdown-it-py, docutils, lxml, pypdf, python-docx);
nothing here parses markup by hand. `services.indexer.doc_chunks` turns an outline into chunks.

Line numbers are 1-based and inclusive. For Markdown, reStructuredText, HTML and plain text they
are lines of the file. PDF and DOCX have no lines: their text is extracted (page after page for
a PDF) and the numbers are lines of that text, which is what the chunks' content is cut from.
"""

from __future__ import annotations

import io
import itertools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

# Languages (as the walker names them) that are chunked as documents rather than as code.
DOCUMENT_LANGUAGES = frozenset({"markdown", "rst", "html", "text", "pdf", "docx"})
# Formats whose bytes are not text: the walker extracts their text and outline.
BINARY_DOCUMENT_LANGUAGES = frozenset({"pdf", "docx"})


@dataclass(frozen=True, slots=True)
class Heading:
    start: int  # first line of the heading (an overline or the title line)
    end: int  # last line (the underline of a setext/RST heading)
    level: int  # 1 = outermost
    title: str


@dataclass(frozen=True, slots=True)
class Block:
    """A paragraph, list, table, code block or heading: the unit chunks are made of."""

    start: int
    end: int
    text: str  # the block's text (for HTML: extracted from the markup)
    page: int = 0  # 1-based page of a paged source; 0: the source has no pages


@dataclass(frozen=True, slots=True)
class Outline:
    title: str
    headings: list[Heading]
    blocks: list[Block]  # in source order
    # True: a chunk's content is the source lines of its span (blank lines between blocks kept).
    # False (HTML): its content is its blocks' extracted text, and the span says where they are.
    verbatim: bool = True
    # First lines of blocks that open a new passage without a heading: in plain text, a paragraph
    # after two or more blank lines. Chunks are cut there and never merged across.
    breaks: frozenset[int] = frozenset()
    # The document's own metadata (front matter, <meta>, PDF/DOCX properties) other than its title.
    metadata: dict[str, str] = field(default_factory=dict)


class DocumentError(Exception):
    """A document that cannot be read; `reason` is the skip reason the index run counts."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class ExtractedDocument:
    """A binary document's text (what its chunks are cut from) and its outline."""

    text: str
    outline: Outline


# Bounds on what a document's metadata may add to each of its chunks.
METADATA_MAX_KEYS = 32
METADATA_MAX_KEY_CHARS = 64
METADATA_MAX_VALUE_CHARS = 500


def document_metadata(raw: Mapping[Any, Any]) -> dict[str, str]:
    """A document's properties as strings: scalars as they read, dates in ISO form, a list of
    scalars joined by ", "; the title (which is `document_title`), empty values and nested maps are
    left out. Bounded: the first METADATA_MAX_KEYS keys, values cut at METADATA_MAX_VALUE_CHARS."""
    out: dict[str, str] = {}
    for key, value in raw.items():
        name = str(key).strip()
        if not name or name.lower() == "title" or len(name) > METADATA_MAX_KEY_CHARS:
            continue
        text = _metadata_text(value)
        if text:
            out[name] = text[:METADATA_MAX_VALUE_CHARS]
        if len(out) == METADATA_MAX_KEYS:
            break
    return out


def _metadata_text(value: Any) -> str:
    if isinstance(value, list | tuple):
        parts = [_metadata_text(v) for v in value if not isinstance(v, Mapping | list | tuple)]
        return ", ".join(p for p in parts if p)
    if value is None or isinstance(value, Mapping):
        return ""
    if hasattr(value, "isoformat"):  # date, datetime
        return str(value.isoformat())
    return " ".join(str(value).split())


def file_title(path: str) -> str:
    """The fallback title: the file name without its extension."""
    return PurePosixPath(path).stem or PurePosixPath(path).name


def _lines(text: str) -> list[str]:
    return text.split("\n")


def paragraph_blocks(lines: list[str], first: int, last: int, page: int = 0) -> list[Block]:
    """Runs of non-blank lines between first..last, one block each."""
    blocks: list[Block] = []
    start: int | None = None
    for number in range(first, last + 1):
        blank = not lines[number - 1].strip()
        if not blank and start is None:
            start = number
        if start is not None and (blank or number == last):
            end = number - 1 if blank else number
            blocks.append(Block(start, end, "\n".join(lines[start - 1 : end]), page))
            start = None
    return blocks


def _outside(blocks: list[Block], headings: list[Heading]) -> list[Block]:
    """Blocks split around heading lines: the heading lines become blocks of their own."""
    heading_lines = {n for h in headings for n in range(h.start, h.end + 1)}
    out: list[Block] = []
    for block in blocks:
        run: list[int] = []
        for number in range(block.start, block.end + 1):
            if number in heading_lines:
                if run:
                    out.append(_sub_block(block, run[0], run[-1]))
                    run = []
            else:
                run.append(number)
        if run:
            out.append(_sub_block(block, run[0], run[-1]))
    for heading in headings:
        out.append(Block(heading.start, heading.end, heading.title))
    return sorted(out, key=lambda b: b.start)


def _sub_block(block: Block, start: int, end: int) -> Block:
    lines = block.text.split("\n")
    return Block(start, end, "\n".join(lines[start - block.start : end - block.start + 1]), block.page)


def _single_top_title(headings: list[Heading]) -> str:
    """The first heading, when it is the only one at the outermost level (it names the document)."""
    if not headings:
        return ""
    top = min(h.level for h in headings)
    tops = [h for h in headings if h.level == top]
    return tops[0].title if len(tops) == 1 and tops[0] is headings[0] else ""


# --- Markdown ----------------------------------------------------------------------------------


def markdown_outline(text: str, path: str) -> Outline:
    """ATX and setext headings and top-level blocks from markdown-it's token map; YAML front
    matter (its `title`) names the document and is not indexed as text."""
    import yaml
    from markdown_it import MarkdownIt
    from mdit_py_plugins.front_matter import front_matter_plugin

    parser = MarkdownIt("commonmark").enable("table").use(front_matter_plugin)
    tokens = parser.parse(text)
    lines = _lines(text)
    headings: list[Heading] = []
    blocks: list[Block] = []
    meta: dict[str, Any] = {}
    for index, token in enumerate(tokens):
        if token.level != 0 or token.map is None or token.nesting == -1:
            continue
        start, end = token.map[0] + 1, token.map[1]
        if token.type == "front_matter":
            try:
                loaded = yaml.safe_load(token.content)
            except yaml.YAMLError:
                loaded = None
            meta = loaded if isinstance(loaded, dict) else {}
            continue
        end = _last_non_blank(lines, start, end)
        if token.type == "heading_open":
            title = tokens[index + 1].content.strip()
            headings.append(Heading(start, end, int(token.tag[1]), title))
        blocks.append(Block(start, end, "\n".join(lines[start - 1 : end])))
    title = str(meta.get("title") or "").strip() or _single_top_title(headings) or file_title(path)
    return Outline(title, headings, blocks, metadata=document_metadata(meta))


def _last_non_blank(lines: list[str], start: int, end: int) -> int:
    while end > start and not lines[end - 1].strip():
        end -= 1
    return end


# --- reStructuredText --------------------------------------------------------------------------


def rst_outline(text: str, path: str) -> Outline:
    """Sections from docutils' doctree (underlined and over+underlined titles); the text between
    titles splits into paragraphs at blank lines."""
    from docutils import nodes
    from docutils.core import publish_doctree

    settings = {
        "report_level": 5,  # quiet: a document with errors still has sections to read
        "halt_level": 5,
        "file_insertion_enabled": False,  # never read other files or URLs named in the text
        "raw_enabled": False,
        "input_encoding": "unicode",
    }
    lines = _lines(text)
    try:
        tree = publish_doctree(text, source_path=path, settings_overrides=settings)
    except Exception:  # docutils raises many kinds on odd input: fall back to paragraphs
        return Outline(file_title(path), [], paragraph_blocks(lines, 1, len(lines)))
    headings: list[Heading] = []
    for title in tree.findall(nodes.title):
        parent = title.parent
        if title.line is None or not isinstance(parent, (nodes.section, nodes.document)):
            continue
        # the document's own title (docutils promotes a lone top title) is level 1, sections below it
        level = 1 + sum(1 for a in _ancestors(title) if isinstance(a, nodes.section))
        # docutils gives the underline's line; an overline (the same character) sits above the title
        underline = title.line
        start = underline - 1
        above = lines[start - 2].strip() if start >= 2 else ""
        if above and _is_adornment(above) and above[0] == lines[underline - 1].strip()[:1]:
            start -= 1
        headings.append(Heading(start, underline, level, title.astext()))
    doc_title = str(tree.get("title") or "").strip()
    body = paragraph_blocks(lines, 1, len(lines))
    return Outline(
        doc_title or _single_top_title(headings) or file_title(path), headings, _outside(body, headings)
    )


def _ancestors(node: Any) -> list[Any]:
    out = []
    while node.parent is not None:
        node = node.parent
        out.append(node)
    return out


_ADORNMENT = re.compile(r"^([!-/:-@\[-`{-~])\1+\s*$")


def _is_adornment(line: str) -> bool:
    return bool(_ADORNMENT.match(line))


# --- plain text ----------------------------------------------------------------------------------

# Blank lines that separate sections rather than paragraphs in plain text (two, as in RFCs, FAQs,
# Project Gutenberg books and text whose headings were stripped).
SECTION_GAP_LINES = 2


def text_outline(text: str, path: str) -> Outline:
    """Paragraphs; plain text has no markup, so its one mark of a new section is a wider gap."""
    lines = _lines(text)
    blocks = paragraph_blocks(lines, 1, len(lines))
    breaks = frozenset(
        block.start
        for previous, block in itertools.pairwise(blocks)
        if block.start - previous.end - 1 >= SECTION_GAP_LINES
    )
    return Outline(file_title(path), [], blocks, breaks=breaks)


# --- HTML ----------------------------------------------------------------------------------------

# Never content: code, styling, and the page's navigation around the text.
_DROPPED_TAGS = ("script", "style", "noscript", "template", "nav", "header", "footer", "aside", "form")
_HEADING_TAGS = {f"h{n}": n for n in range(1, 7)}
# Elements whose text is one block (unless they hold other such elements).
_BLOCK_TAGS = frozenset(
    {
        "p",
        "li",
        "pre",
        "blockquote",
        "tr",
        "dt",
        "dd",
        "figcaption",
        "caption",
        "address",
        "div",
        "section",
        "article",
        "main",
        "td",
        "th",
    }
    | set(_HEADING_TAGS)
)


def html_outline(text: str, path: str) -> Outline:
    """The page's text: headings, paragraphs, list items, table rows (cells joined by " | "), with
    the source lines each comes from; scripts, styles and navigation dropped; `<title>` names it."""
    import lxml.html
    from lxml import etree

    if not text.strip():
        return Outline(file_title(path), [], [], verbatim=False)
    try:
        root = lxml.html.document_fromstring(text)
    except (etree.ParserError, ValueError):  # nothing lxml can read as a page: no text to index
        return Outline(file_title(path), [], [], verbatim=False)
    title_element = root.find(".//title")
    page_title = " ".join(title_element.text_content().split()) if title_element is not None else ""
    metadata = document_metadata(_html_meta(root))
    head = root.find("head")
    if head is not None:
        head.drop_tree()
    for element in list(root.iter(*_DROPPED_TAGS)):
        element.drop_tree()
    headings: list[Heading] = []
    blocks: list[Block] = []
    body = root.find("body")
    _html_blocks(body if body is not None else root, headings, blocks)
    title = page_title or _single_top_title(headings) or file_title(path)
    return Outline(title, headings, blocks, verbatim=False, metadata=metadata)


# <meta name="..."> that describe the document (not the page's rendering: viewport, robots, ...).
_HTML_META_NAMES = frozenset(
    {"author", "description", "keywords", "subject", "date", "creator", "publisher", "language"}
)


def _html_meta(root: Any) -> dict[str, str]:
    found: dict[str, str] = {}
    language = str(root.get("lang") or "").strip()
    if language:
        found["language"] = language
    for element in root.iter("meta"):
        name = str(element.get("name") or "").strip().lower()
        content = str(element.get("content") or "").strip()
        if name in _HTML_META_NAMES and content:
            found[name] = content
    return found


def _has_block(element: Any) -> bool:
    return any(isinstance(d.tag, str) and d.tag in _BLOCK_TAGS for d in element.iterdescendants())


def _html_blocks(element: Any, headings: list[Heading], blocks: list[Block]) -> None:
    """Depth first: a table row, a heading, or a block element with no block inside is one block;
    a container's loose text between its inner blocks (an item's text above its sub-list) is a
    block of its own."""
    tag = element.tag if isinstance(element.tag, str) else ""
    if tag == "tr" or tag in _HEADING_TAGS or (tag in _BLOCK_TAGS and not _has_block(element)):
        words = _element_text(element)
        if words and element.sourceline is not None:
            start = element.sourceline
            end = start + str(element.text_content()).strip("\n").count("\n")
            if tag in _HEADING_TAGS:
                headings.append(Heading(start, end, _HEADING_TAGS[tag], words))
            blocks.append(Block(start, end, words))
        return
    line = element.sourceline or 1
    run: list[tuple[int, str]] = [(line, element.text or "")]
    for child in element:
        child_line = child.sourceline or line
        if isinstance(child.tag, str) and (child.tag in _BLOCK_TAGS or _has_block(child)):
            _add_loose_text(run, blocks)
            run = []
            _html_blocks(child, headings, blocks)
        elif isinstance(child.tag, str):  # inline: part of the running text
            run.append((child_line, str(child.text_content())))
        if child.tail:  # text after the child starts where the child ends
            run.append((child_line + str(child.text_content()).count("\n"), child.tail))
    _add_loose_text(run, blocks)


def _add_loose_text(run: list[tuple[int, str]], blocks: list[Block]) -> None:
    text = "".join(piece for _, piece in run)
    words = " ".join(text.split())
    if not words:
        return
    line, first = next((line, piece) for line, piece in run if piece.strip())
    start = line + first[: len(first) - len(first.lstrip())].count("\n")
    blocks.append(Block(start, start + text.strip().count("\n"), words))


def _element_text(element: Any) -> str:
    if element.tag == "tr":
        cells = [" ".join(c.text_content().split()) for c in element if isinstance(c.tag, str)]
        return " | ".join(c for c in cells if c)
    if element.tag == "pre":
        return str(element.text_content()).strip("\n")
    return " ".join(element.text_content().split())


# --- PDF -----------------------------------------------------------------------------------------


def pdf_document(data: bytes, path: str) -> ExtractedDocument:
    """Text page by page (pypdf's layout-free extraction); pages are separated by a blank line and
    every block keeps its page number. Encrypted, corrupt or text-less files raise DocumentError."""
    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError

    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):  # an empty user password opens many
            raise DocumentError("encrypted")
        pages = [page.extract_text() or "" for page in reader.pages]
        info: Mapping[str, Any] = reader.metadata or {}
        meta_title = str(info.get("/Title") or "").strip()
        metadata = document_metadata(
            {key.lstrip("/").lower(): info.get(key) for key in _PDF_INFO_KEYS if info.get(key)}
        )
    except DocumentError:
        raise
    except FileNotDecryptedError as error:
        raise DocumentError("encrypted", str(error)) from error
    except Exception as error:  # a damaged file fails in many ways deep in the parser; never fatal
        raise DocumentError("corrupt", f"{type(error).__name__}: {error}") from error
    if not any(page.strip() for page in pages):
        raise DocumentError("no_text_layer")
    all_lines: list[str] = []
    blocks: list[Block] = []
    for number, page_text in enumerate(pages, start=1):
        page_lines = [line.rstrip() for line in page_text.replace("\r", "\n").split("\n")]
        while page_lines and not page_lines[-1].strip():
            page_lines.pop()
        if all_lines:
            all_lines.append("")  # pages never run into one another
        first = len(all_lines) + 1
        all_lines.extend(page_lines)
        blocks.extend(paragraph_blocks(all_lines, first, len(all_lines), page=number))
    title = meta_title or file_title(path)
    return ExtractedDocument("\n".join(all_lines), Outline(title, [], blocks, metadata=metadata))


# The PDF document information entries kept as metadata (dates are PDF date strings, kept as is).
_PDF_INFO_KEYS = ("/Author", "/Subject", "/Keywords", "/Creator", "/CreationDate")


# --- DOCX ----------------------------------------------------------------------------------------


def docx_document(data: bytes, path: str) -> ExtractedDocument:
    """Paragraphs (one line each, a blank line between) and tables (a row per line, cells joined by
    " | "); paragraphs styled "Heading N" are the sections, a "Title" paragraph names the document."""
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    try:
        document = docx.Document(io.BytesIO(data))
        items = list(document.iter_inner_content())
        core = document.core_properties
        core_title = (core.title or "").strip()
        metadata = document_metadata(
            {name: getattr(core, name) for name in _DOCX_CORE_PROPERTIES if getattr(core, name)}
        )
    except Exception as error:  # not a zip, a missing part, bad XML: a damaged package; never fatal
        raise DocumentError("corrupt", f"{type(error).__name__}: {error}") from error
    lines: list[str] = []
    headings: list[Heading] = []
    blocks: list[Block] = []
    style_title = ""
    for item in items:
        if isinstance(item, Paragraph):
            content = [item.text.strip()] if item.text.strip() else []
            style = item.style.name if item.style is not None and item.style.name else ""
        elif isinstance(item, Table):
            content = [" | ".join(c.text.strip() for c in row.cells) for row in item.rows]
            style = ""
        else:
            continue
        if not content:
            continue
        if lines:
            lines.append("")
        start = len(lines) + 1
        lines.extend(line.replace("\n", " ") for line in content)
        block = Block(start, len(lines), "\n".join(lines[start - 1 :]))
        level = _docx_heading_level(style)
        if style == "Title" and not style_title:
            style_title = block.text
        elif level:
            headings.append(Heading(start, start, level, block.text))
        blocks.append(block)
    if not blocks:
        raise DocumentError("empty")
    title = core_title or style_title or _single_top_title(headings) or file_title(path)
    return ExtractedDocument("\n".join(lines), Outline(title, headings, blocks, metadata=metadata))


_DOCX_CORE_PROPERTIES = ("author", "subject", "keywords", "category", "created")


_DOCX_HEADING = re.compile(r"^Heading (\d)$")


def _docx_heading_level(style: str) -> int:
    match = _DOCX_HEADING.match(style)
    return int(match.group(1)) if match else 0


def extract_binary(language: str, data: bytes, path: str) -> ExtractedDocument:
    if language == "pdf":
        return pdf_document(data, path)
    if language == "docx":
        return docx_document(data, path)
    raise ValueError(f"not a binary document format: {language}")


def outline_of(language: str, text: str, path: str) -> Outline:
    """The outline of a text document (the walker extracts binary ones)."""
    if language == "markdown":
        return markdown_outline(text, path)
    if language == "rst":
        return rst_outline(text, path)
    if language == "html":
        return html_outline(text, path)
    return text_outline(text, path)
