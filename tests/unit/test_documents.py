"""Documents: each format's outline and chunks (exact spans, breadcrumbs, pages) and the files that
are skipped and why (a changed PDF re-indexed against the real stores: tests/integration/
test_documents_index.py)."""

from __future__ import annotations

import io
import shutil
from datetime import date
from pathlib import Path

import docx
import pytest
from pypdf import PdfReader, PdfWriter
from reportlab.graphics.shapes import Drawing, Rect
from reportlab.lib.pagesizes import A4
from reportlab.pdfgen import canvas

from services.indexer.chunker import chunk_file
from services.indexer.doc_chunks import breadcrumb, estimate_tokens
from services.indexer.documents import (
    METADATA_MAX_KEYS,
    METADATA_MAX_VALUE_CHARS,
    document_metadata,
    outline_of,
)
from services.indexer.walker import Skipped, SourceFile, walk_corpus
from tests import FIXTURES
from tribrid.config import IndexerConfig
from tribrid.models import Chunk
from tribrid.v1 import common_pb2
from tribridctl.cli import describe_match

DOCUMENTS = FIXTURES / "documents"
# No minimum (nothing merges) and a budget every section of the fixtures fits: a chunk per section.
SMALL = IndexerConfig(doc_chunk_min_tokens=1, doc_chunk_max_tokens=60)

PDF_PAGES = (
    (
        "Backup procedures",
        "Backups run nightly to the protection appliance.",
        "Each job copies changed blocks.",
    ),
    ("Restore procedures", "Pick a restore point from the catalogue.", "Restores go to a new volume."),
    ("Upgrade procedures", "Upgrades roll one node at a time.", "Each node is drained first."),
)


def write_pdf(pages: tuple[tuple[str, ...], ...], title: str = "VxRail Operations") -> bytes:
    out = io.BytesIO()
    pdf = canvas.Canvas(out, pagesize=A4)
    pdf.setTitle(title)
    pdf.setAuthor("Ops Team")
    pdf.setKeywords("backup, restore")
    for lines in pages:
        for number, line in enumerate(lines):
            pdf.drawString(72, 800 - 16 * number, line)
        pdf.showPage()
    pdf.save()
    return out.getvalue()


def write_docx() -> bytes:
    document = docx.Document()
    document.core_properties.author = "Story Team"
    document.core_properties.keywords = "fleet, harbor"
    document.add_paragraph("Story Atlas", style="Title")
    document.add_heading("Characters", level=1)
    document.add_paragraph("Mara is a pilot of the northern fleet.")
    document.add_heading("Allies", level=2)
    document.add_paragraph("Tomas repairs her ship.")
    document.add_heading("Places", level=1)
    table = document.add_table(rows=2, cols=2)
    for row, cells in enumerate((("City", "Founded"), ("Harbor", "1204"))):
        for column, text in enumerate(cells):
            table.cell(row, column).text = text
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def walk(root: Path, cfg: IndexerConfig = SMALL) -> tuple[dict[str, SourceFile], dict[str, str]]:
    files: dict[str, SourceFile] = {}
    skipped: dict[str, str] = {}
    for item in walk_corpus(root, cfg):
        if isinstance(item, Skipped):
            skipped[item.path] = item.reason
        else:
            files[item.path] = item
    return files, skipped


def chunks_of(source: SourceFile, cfg: IndexerConfig = SMALL) -> list[Chunk]:
    return chunk_file("docs", source, cfg).chunks


def table(chunks: list[Chunk]) -> list[tuple[int, int, str, int, int]]:
    return [(c.start_line, c.end_line, c.section, c.page_start, c.page_end) for c in chunks]


def assert_content_is_the_lines(source: SourceFile, chunks: list[Chunk]) -> None:
    lines = source.text.split("\n")
    for chunk in chunks:
        assert chunk.content == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
        assert chunk.embed_text == f"# file: {source.path}\n# section: {chunk.section}\n{chunk.content}"


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    shutil.copytree(DOCUMENTS, tmp_path / "docs")
    (tmp_path / "docs" / "ops.pdf").write_bytes(write_pdf(PDF_PAGES))
    (tmp_path / "docs" / "atlas.docx").write_bytes(write_docx())
    return tmp_path / "docs"


def test_markdown_atx_and_setext_headings_and_front_matter(corpus: Path) -> None:
    files, _ = walk(corpus)
    source = files["guide.md"]
    chunks = chunks_of(source)
    # Front matter (lines 1-4) is the title, not text; "Installing" and "Requirements" are setext.
    assert table(chunks) == [
        (6, 10, "Backup Guide > Installing", 0, 0),
        (12, 15, "Backup Guide > Installing > Requirements", 0, 0),
        (17, 24, "Backup Guide > Backup procedures", 0, 0),
        (26, 28, "Backup Guide > Backup procedures > Restoring", 0, 0),
    ]
    assert {c.document_title for c in chunks} == {"Backup Guide"} and {c.kind for c in chunks} == {"section"}
    assert all(c.document_metadata == {"author": "Ops"} for c in chunks)  # the title is not repeated
    assert_content_is_the_lines(source, chunks)
    # Under a minimum above their size the small sections merge: a section's text with its subsections.
    roomy = IndexerConfig(doc_chunk_min_tokens=80, doc_chunk_max_tokens=224)
    assert table(chunks_of(source, roomy)) == [(6, 28, "Backup Guide", 0, 0)]


def test_restructuredtext_sections_by_overline_and_underline(corpus: Path) -> None:
    files, _ = walk(corpus)
    source = files["manual.rst"]
    chunks = chunks_of(source)
    assert table(chunks) == [
        (1, 5, "Cluster Manual", 0, 0),  # the over+underlined title opens the document
        (7, 10, "Cluster Manual > Networking", 0, 0),
        (12, 15, "Cluster Manual > Networking > Bonding", 0, 0),
        (17, 20, "Cluster Manual > Storage", 0, 0),
    ]
    assert_content_is_the_lines(source, chunks)


def test_html_main_text_without_scripts_styles_or_navigation(corpus: Path) -> None:
    files, _ = walk(corpus)
    chunks = chunks_of(files["page.html"])
    assert table(chunks) == [
        (10, 12, "Release Notes > Version 2.0", 0, 0),
        (14, 21, "Release Notes > Version 2.0 > Upgrading", 0, 0),
    ]
    assert chunks[0].document_title == "Release Notes"  # from <title>
    # What describes the document, not how a browser shows it (no viewport).
    assert chunks[0].document_metadata == {"language": "en", "author": "Release Team"}
    assert chunks[0].content == "Version 2.0\n\nThis release adds snapshots and faster replication."
    assert chunks[1].content == (
        "Upgrading\n\nStop the service.\n\nInstall the new package.\n\nComponent | Version\n\nagent | 2.0.1"
    )
    text = " ".join(c.embed_text for c in chunks)
    for dropped in ("tracking", "never indexed", "color", "Home", "Copyright"):
        assert dropped not in text


def test_pdf_chunks_keep_their_pages(corpus: Path) -> None:
    files, _ = walk(corpus)
    source = files["ops.pdf"]
    # The extracted text, a blank line between pages: what the chunks' lines are numbers of.
    assert source.text.split("\n") == [*PDF_PAGES[0], "", *PDF_PAGES[1], "", *PDF_PAGES[2]]
    chunks = chunks_of(source, IndexerConfig(doc_chunk_min_tokens=1, doc_chunk_max_tokens=20))
    assert table(chunks) == [
        (1, 3, "VxRail Operations", 1, 1),
        (5, 7, "VxRail Operations", 2, 2),
        (9, 11, "VxRail Operations", 3, 3),
    ]
    assert_content_is_the_lines(source, chunks)
    assert table(chunks_of(source, IndexerConfig())) == [(1, 11, "VxRail Operations", 1, 3)]
    metadata = chunks[0].document_metadata
    assert (metadata["author"], metadata["keywords"]) == ("Ops Team", "backup, restore")
    assert metadata["creationdate"].startswith("D:")


def test_docx_headings_paragraphs_and_tables(corpus: Path) -> None:
    files, _ = walk(corpus)
    source = files["atlas.docx"]
    assert source.text.split("\n") == [
        "Story Atlas",
        "",
        "Characters",
        "",
        "Mara is a pilot of the northern fleet.",
        "",
        "Allies",
        "",
        "Tomas repairs her ship.",
        "",
        "Places",
        "",
        "City | Founded",
        "Harbor | 1204",
    ]
    chunks = chunks_of(source, IndexerConfig(doc_chunk_min_tokens=1, doc_chunk_max_tokens=12))
    assert table(chunks) == [
        (1, 1, "Story Atlas", 0, 0),
        (3, 5, "Story Atlas > Characters", 0, 0),
        (7, 9, "Story Atlas > Characters > Allies", 0, 0),
        (11, 14, "Story Atlas > Places", 0, 0),
    ]
    assert_content_is_the_lines(source, chunks)
    metadata = chunks[0].document_metadata
    assert (metadata["author"], metadata["keywords"]) == ("Story Team", "fleet, harbor")
    assert date.fromisoformat(metadata["created"][:10])  # a datetime, in ISO form


def test_document_metadata_values_are_bounded_strings() -> None:
    raw = {
        "title": "Named elsewhere",
        "tags": ["backup", "ops", {"nested": 1}],
        "date": date(2024, 5, 1),
        "draft": False,
        "owner": {"team": "ops"},
        "empty": "",
        "summary": "  spread   over\n lines ",
        "long": "x" * 2000,
        **{f"k{n}": n for n in range(40)},
    }
    metadata = document_metadata(raw)
    assert list(metadata)[:5] == ["tags", "date", "draft", "summary", "long"]
    assert (metadata["tags"], metadata["date"], metadata["draft"]) == ("backup, ops", "2024-05-01", "False")
    assert metadata["summary"] == "spread over lines"
    assert len(metadata["long"]) == METADATA_MAX_VALUE_CHARS
    assert len(metadata) == METADATA_MAX_KEYS and "k26" in metadata and "k27" not in metadata


def test_plain_text_is_chunked_by_paragraph(tmp_path: Path) -> None:
    paragraphs = [" ".join(f"w{p}x{n}." for n in range(10)) for p in range(3)]
    (tmp_path / "notes.txt").write_text("\n\n".join(paragraphs) + "\n")
    files, _ = walk(tmp_path)
    chunks = chunks_of(files["notes.txt"], IndexerConfig(doc_chunk_min_tokens=1, doc_chunk_max_tokens=20))
    assert table(chunks) == [(1, 1, "notes", 0, 0), (3, 3, "notes", 0, 0), (5, 5, "notes", 0, 0)]


def test_plain_text_sections_start_after_two_blank_lines(tmp_path: Path) -> None:
    # Four short paragraphs that would all fit one chunk; a wider gap before the third and fourth.
    short = [f"Paragraph {p} says a few words about topic {p}." for p in range(4)]
    text = f"{short[0]}\n\n{short[1]}\n\n\n{short[2]}\n\n\n\n{short[3]}\n"
    (tmp_path / "faq.txt").write_text(text)
    files, _ = walk(tmp_path)
    chunks = chunks_of(files["faq.txt"], IndexerConfig(doc_chunk_min_tokens=48, doc_chunk_max_tokens=128))
    # The minimum would merge all four; a section break is never merged across.
    assert table(chunks) == [(1, 3, "faq", 0, 0), (6, 6, "faq", 0, 0), (10, 10, "faq", 0, 0)]
    assert_content_is_the_lines(files["faq.txt"], chunks)


def test_a_long_section_splits_between_paragraphs_and_a_long_paragraph_after_sentences(
    tmp_path: Path,
) -> None:
    sentence = "The node keeps a copy of every block it writes."  # 10 words and a period: 12 tokens
    long_paragraph = "\n".join([sentence] * 6)  # lines 5-10: one paragraph of 73 tokens
    text = f"# Storage\n\n{sentence}\n\n{long_paragraph}\n\n{sentence}\n"
    (tmp_path / "storage.md").write_text(text)
    files, _ = walk(tmp_path)
    source = files["storage.md"]
    cfg = IndexerConfig(doc_chunk_min_tokens=1, doc_chunk_max_tokens=30)
    chunks = chunks_of(source, cfg)
    # 30 tokens: after 24 (80 %) a line that ends a sentence closes a piece; no line is cut.
    assert table(chunks) == [
        (1, 3, "Storage", 0, 0),
        (5, 6, "Storage", 0, 0),
        (7, 8, "Storage", 0, 0),
        (9, 10, "Storage", 0, 0),
        (12, 12, "Storage", 0, 0),
    ]
    assert all(estimate_tokens(c.content) <= 30 for c in chunks)
    assert_content_is_the_lines(source, chunks)


def test_breadcrumb_does_not_repeat_the_title() -> None:
    assert breadcrumb("Guide", ("Guide", "Install")) == "Guide > Install"
    assert breadcrumb("guide", ("Setup", "Linux")) == "guide > Setup > Linux"
    assert breadcrumb("", ()) == ""


def test_corrupt_encrypted_textless_and_empty_files_are_skipped_with_reasons(tmp_path: Path) -> None:
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.7\n1 0 obj << /Type /Catalog >> garbage")
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(write_pdf(PDF_PAGES))))
    writer.encrypt(user_password="secret", owner_password="owner")
    encrypted = io.BytesIO()
    writer.write(encrypted)
    (tmp_path / "locked.pdf").write_bytes(encrypted.getvalue())
    scan = io.BytesIO()  # a page with a drawing and no text layer, as a scanner makes
    pdf = canvas.Canvas(scan)
    drawing = Drawing(200, 200)
    drawing.add(Rect(10, 10, 100, 100))
    drawing.drawOn(pdf, 72, 400)
    pdf.showPage()
    pdf.save()
    (tmp_path / "scan.pdf").write_bytes(scan.getvalue())
    (tmp_path / "blank.pdf").write_bytes(b"")
    (tmp_path / "broken.docx").write_bytes(b"PK\x03\x04 not really a zip")
    (tmp_path / "empty.md").write_text("\n  \n")
    (tmp_path / "fine.md").write_text("# Fine\n\nStill indexed.\n")

    files, skipped = walk(tmp_path)
    assert skipped == {
        "blank.pdf": "empty",
        "broken.docx": "corrupt",
        "broken.pdf": "corrupt",
        "empty.md": "empty",
        "locked.pdf": "encrypted",
        "scan.pdf": "no_text_layer",
    }
    assert list(files) == ["fine.md"]


def test_describe_match_shows_breadcrumb_and_pages() -> None:
    def match(**fields: object) -> common_pb2.ChunkMatch:
        return common_pb2.ChunkMatch(**fields)  # type: ignore[arg-type]

    assert describe_match(match(symbol="shop.cart.Cart", kind="class")) == "shop.cart.Cart"
    assert describe_match(match(kind="text")) == "text"
    assert describe_match(match(document_title="Guide", section="Guide > Install")) == "Guide > Install"
    pdf = match(document_title="Ops", section="Ops", page_start=2, page_end=2)
    assert describe_match(pdf) == "Ops p.2"
    pdf.page_end = 3
    assert describe_match(pdf) == "Ops pp.2-3"


def test_html_loose_text_nested_lists_and_tables(tmp_path: Path) -> None:
    html = (
        "<html><head><title>T</title></head><body>\n"  # 1
        "Loose intro\ntext.\n"  # 2-3
        "<ul>\n<li>Item one\n"  # 4-5
        "  <ul><li>sub a</li>\n  <li>sub b</li></ul>\n"  # 6-7
        "after sub\n</li>\n</ul>\n"  # 8-10
        "<table><tr><td><p>cell p</p></td><td>c2</td></tr></table>\n"  # 11
        "<div>tail <b>bold</b> end</div>\n"  # 12
        "</body></html>\n"
    )
    (tmp_path / "nested.html").write_text(html)
    files, _ = walk(tmp_path)
    outline = outline_of("html", files["nested.html"].text, "nested.html")
    assert [(b.start, b.end, b.text) for b in outline.blocks] == [
        (2, 3, "Loose intro text."),
        (5, 5, "Item one"),
        (6, 6, "sub a"),
        (7, 7, "sub b"),
        (8, 8, "after sub"),
        (11, 11, "cell p | c2"),  # a row once, not its cells' paragraphs again
        (12, 12, "tail bold end"),
    ]
