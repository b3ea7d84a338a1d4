"""Chunks of a document by its structure: a section is a chunk when it fits the token budget.

- A long section splits between blocks (paragraphs, lists, tables), never inside one; a single
  over-long block of several lines splits after lines that end a sentence.
- A tiny piece merges with its neighbour under the same heading (a sibling section, its first
  subsection, or the other half of a split) while the two fit.
- The breadcrumb `Title > Section > Subsection` is stored as the chunk's `section` and heads its
  embedding (and BM25) text.

Tokens are estimated, not counted with the model's tokenizer: (words + punctuation marks) x 1.1,
a CJK character counting as a word. It needs no model in the parsing thread (nor a local one at
all, with an embedding endpoint), and against all-MiniLM-L6-v2's WordPiece on three collections
here (scikit-learn's dataset descriptions, Node.js API Markdown, git release notes) the median
ratio of real to estimated tokens was 1.01-1.03.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from services.indexer.documents import Block, Outline
from tribrid.config import IndexerConfig
from tribrid.models import Chunk, stable_id

DOCUMENT_CHUNK_KIND = "section"
BREADCRUMB_SEPARATOR = " > "

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_WORD = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+|[^\w\s]")
# A line that ends a sentence (a safe place to split a long paragraph that spans lines).
_SENTENCE_END = re.compile("[.!?:;\u2026\u3002\uff01\uff1f][\"')\\]\u201d\u2019\u00bb]*\\s*$")


def estimate_tokens(text: str) -> int:
    return round(len(_WORD.findall(text)) * 1.1)


@dataclass(slots=True)
class _Piece:
    path: tuple[str, ...]  # heading titles, outermost first
    blocks: list[Block]
    tokens: int


def chunk_document(
    corpus_id: str, file_path: str, language: str, text: str, outline: Outline, cfg: IndexerConfig
) -> list[Chunk]:
    lines = text.split("\n")
    pieces: list[_Piece] = []
    headed = {h.start for h in outline.headings}
    for path, blocks in _sections(outline):
        opened = blocks[0].start in headed
        pieces.extend(_split_section(path, blocks, lines, outline.verbatim, cfg, opened, outline.breaks))
    pieces = _merge_tiny(pieces, cfg, outline.breaks)
    ordinals: Counter[str] = Counter()
    chunks: list[Chunk] = []
    for piece in pieces:
        crumb = breadcrumb(outline.title, piece.path)
        ordinal = ordinals[crumb]
        ordinals[crumb] += 1
        start = min(b.start for b in piece.blocks)
        end = max(b.end for b in piece.blocks)
        if outline.verbatim:
            content = "\n".join(lines[start - 1 : end])
        else:
            content = "\n\n".join(b.text for b in piece.blocks)
        pages = [b.page for b in piece.blocks if b.page]
        chunks.append(
            Chunk(
                chunk_id=stable_id(corpus_id, file_path, DOCUMENT_CHUNK_KIND, crumb, str(ordinal)),
                corpus_id=corpus_id,
                file_path=file_path,
                start_line=start,
                end_line=end,
                language=language,
                kind=DOCUMENT_CHUNK_KIND,
                symbol="",
                content=content,
                embed_text=f"# file: {file_path}\n# section: {crumb}\n{content}",
                document_title=outline.title,
                section=crumb,
                page_start=min(pages, default=0),
                page_end=max(pages, default=0),
                document_metadata=outline.metadata,
            )
        )
    return chunks


def breadcrumb(title: str, path: tuple[str, ...]) -> str:
    """`Title > Section > Subsection`; a first heading that repeats the title is not said twice."""
    crumbs = [title] if title else []
    for name in path:
        if name and (crumbs[-1:] != [name]):
            crumbs.append(name)
    return BREADCRUMB_SEPARATOR.join(crumbs)


def _sections(outline: Outline) -> list[tuple[tuple[str, ...], list[Block]]]:
    """Blocks grouped by the headings above them; a heading's own block opens its section."""
    opening = {h.start: h for h in outline.headings}
    stack: list[tuple[int, str]] = []
    sections: list[tuple[tuple[str, ...], list[Block]]] = []
    for block in outline.blocks:
        heading = opening.get(block.start)
        if heading is not None:
            while stack and stack[-1][0] >= heading.level:
                stack.pop()
            stack.append((heading.level, heading.title))
            sections.append((tuple(t for _, t in stack), [block]))
        elif sections:
            sections[-1][1].append(block)
        else:
            sections.append(((), [block]))
    return sections


def _split_section(
    path: tuple[str, ...],
    blocks: list[Block],
    lines: list[str],
    verbatim: bool,
    cfg: IndexerConfig,
    headed: bool,
    breaks: frozenset[int],
) -> list[_Piece]:
    """The section's blocks packed into pieces within the budget; `headed`: the first block is the
    section's heading, which always stays with the text that follows it. A block in `breaks`
    always opens a piece."""
    units: list[tuple[Block, int]] = []
    for block in blocks:
        tokens = estimate_tokens(block.text)
        if tokens > cfg.doc_chunk_max_tokens and verbatim and block.end > block.start:
            units.extend((b, estimate_tokens(b.text)) for b in _split_block(block, lines, cfg))
        else:
            units.append((block, tokens))
    pieces: list[_Piece] = []
    for index, (block, tokens) in enumerate(units):
        after_heading = headed and index == 1
        full = bool(pieces) and pieces[-1].tokens + tokens > cfg.doc_chunk_max_tokens and not after_heading
        if full or (pieces and block.start in breaks):
            pieces.append(_Piece(path, [block], tokens))
        elif pieces:
            pieces[-1].blocks.append(block)
            pieces[-1].tokens += tokens
        else:
            pieces.append(_Piece(path, [block], tokens))
    return pieces


def _split_block(block: Block, lines: list[str], cfg: IndexerConfig) -> list[Block]:
    """An over-long paragraph of several lines, cut after sentence-ending lines; a run with no
    sentence end at all for twice the budget is cut at a line end rather than kept whole."""
    parts: list[Block] = []
    start = block.start
    tokens = 0
    for number in range(block.start, block.end + 1):
        tokens += estimate_tokens(lines[number - 1])
        last = number == block.end
        ends_sentence = bool(_SENTENCE_END.search(lines[number - 1]))
        if (
            last
            or (tokens >= cfg.doc_chunk_max_tokens * 0.8 and ends_sentence)
            or tokens >= 2 * cfg.doc_chunk_max_tokens
        ):
            parts.append(Block(start, number, "\n".join(lines[start - 1 : number]), block.page))
            start, tokens = number + 1, 0
    return parts


def _merge_tiny(pieces: list[_Piece], cfg: IndexerConfig, breaks: frozenset[int]) -> list[_Piece]:
    out: list[_Piece] = []
    for piece in pieces:
        if out and piece.blocks[0].start not in breaks:
            previous = out[-1]
            tiny = piece.tokens < cfg.doc_chunk_min_tokens or previous.tokens < cfg.doc_chunk_min_tokens
            fits = previous.tokens + piece.tokens <= cfg.doc_chunk_max_tokens
            if tiny and fits and _same_heading(previous.path, piece.path):
                out[-1] = _Piece(
                    _common_prefix(previous.path, piece.path),
                    previous.blocks + piece.blocks,
                    previous.tokens + piece.tokens,
                )
                continue
        out.append(piece)
    return out


def _same_heading(first: tuple[str, ...], second: tuple[str, ...]) -> bool:
    """Two pieces in a row under one heading: halves of one section, siblings, or a section's
    text followed by its first subsection."""
    if first == second or second[: len(first)] == first:
        return True
    return len(first) == len(second) and first[:-1] == second[:-1]


def _common_prefix(first: tuple[str, ...], second: tuple[str, ...]) -> tuple[str, ...]:
    shared: list[str] = []
    for a, b in zip(first, second, strict=False):
        if a != b:
            break
        shared.append(a)
    return tuple(shared)
