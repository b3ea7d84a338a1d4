"""Split a source file into chunks: code by definition, Markdown by section, the rest by line window.

Python is read with `ast`; JavaScript, TypeScript, Go, Java and Rust with tree-sitter
(`tribrid.indexing.treesitter`).

Invariant: a chunk's `content` is exactly the file's lines start_line..end_line (1-based, inclusive,
joined by "\\n"). Chunk ids leave line numbers out, so an unchanged definition keeps its id when
code above it moves.
"""

from __future__ import annotations

import ast
import itertools
import re
from collections import Counter
from dataclasses import dataclass, field

from tree_sitter import Tree

from tribrid.config import IndexerConfig
from tribrid.indexing.pysyntax import (
    DefinitionNode,
    definitions,
    first_line,
    last_line,
    module_name,
    signature,
    split_lines,
)
from tribrid.indexing.treesitter.parsers import TREE_SITTER_LANGUAGES
from tribrid.indexing.walker import SourceFile
from tribrid.models import Chunk, stable_id

Span = tuple[int, int]  # 1-based inclusive line range


@dataclass(frozen=True, slots=True)
class ChunkResult:
    chunks: list[Chunk]
    # The parsed module for Python files, to hand to extract_python (None: not Python, or unparsable).
    tree: ast.Module | None = None
    # Python that did not parse (chunked as plain text instead), or a tree-sitter tree with ERROR or
    # MISSING nodes (chunked and extracted from what did parse).
    syntax_error: bool = False
    # The tree-sitter tree of a JavaScript/TypeScript/Go/Java/Rust file, to hand to graph.extract_file.
    syntax_tree: Tree | None = None


def chunk_file(corpus_id: str, source: SourceFile, cfg: IndexerConfig) -> ChunkResult:
    lines = split_lines(source.text)
    builder = _ChunkBuilder(corpus_id, source, lines)
    if source.language == "python":
        tree = _parse_python(source)
        if tree is None:
            _add_text_windows(builder, cfg)
            return ChunkResult(builder.chunks, None, syntax_error=True)
        _PythonChunker(builder, cfg, module_name(source.path)).run(tree)
        return ChunkResult(builder.sorted_chunks(), tree)
    if source.language in TREE_SITTER_LANGUAGES:
        return _chunk_with_tree_sitter(builder, cfg)
    if source.language == "markdown":
        _add_markdown_sections(builder, cfg)
    else:
        _add_text_windows(builder, cfg)
    return ChunkResult(builder.chunks)


def _chunk_with_tree_sitter(builder: _ChunkBuilder, cfg: IndexerConfig) -> ChunkResult:
    from tribrid.indexing.treesitter.chunks import TreeChunker  # it builds on this module's pieces
    from tribrid.indexing.treesitter.parsers import parse

    tree = parse(builder.source)
    TreeChunker(builder, cfg, builder.source.language).run(tree.root_node)
    return ChunkResult(builder.sorted_chunks(), syntax_error=tree.root_node.has_error, syntax_tree=tree)


def _parse_python(source: SourceFile) -> ast.Module | None:
    try:
        return ast.parse(source.text, filename=source.path)
    except (SyntaxError, ValueError, RecursionError):  # RecursionError: absurdly deep nesting
        return None


# --- shared pieces ---------------------------------------------------------------------------


@dataclass(slots=True)
class _ChunkBuilder:
    """Builds chunks of one file; numbers chunks sharing (kind, symbol) to keep their ids distinct."""

    corpus_id: str
    source: SourceFile
    lines: list[str]
    chunks: list[Chunk] = field(default_factory=list)
    _ordinals: Counter[tuple[str, str]] = field(default_factory=Counter)

    def add(self, span: Span, kind: str, symbol: str, header: list[str]) -> None:
        start, end = span
        ordinal = self._ordinals[(kind, symbol)]
        self._ordinals[(kind, symbol)] += 1
        content = "\n".join(self.lines[start - 1 : end])
        context = "\n".join([f"# file: {self.source.path}", *header])
        self.chunks.append(
            Chunk(
                chunk_id=stable_id(self.corpus_id, self.source.path, kind, symbol, str(ordinal)),
                corpus_id=self.corpus_id,
                file_path=self.source.path,
                start_line=start,
                end_line=end,
                language=self.source.language,
                kind=kind,
                symbol=symbol,
                content=content,
                embed_text=f"{context}\n{content}",
            )
        )

    def is_blank(self, line: int) -> bool:
        return not self.lines[line - 1].strip()

    def trim(self, span: Span) -> Span | None:
        """The span without its leading and trailing blank lines; None if nothing else is left."""
        start, end = span
        while start <= end and self.is_blank(start):
            start += 1
        while end >= start and self.is_blank(end):
            end -= 1
        return (start, end) if start <= end else None

    def sorted_chunks(self) -> list[Chunk]:
        return sorted(self.chunks, key=lambda c: (c.start_line, c.end_line))


def windows(span: Span, size: int, overlap: int) -> list[Span]:
    """Cover span with windows of `size` lines, consecutive windows sharing `overlap` lines."""
    start, end = span
    step = size - min(overlap, size - 1)  # always advance
    out: list[Span] = []
    while True:
        window_end = min(start + size - 1, end)
        out.append((start, window_end))
        if window_end >= end:
            return out
        start += step


def _add_text_windows(builder: _ChunkBuilder, cfg: IndexerConfig) -> None:
    if not builder.lines:
        return
    for window in windows((1, len(builder.lines)), cfg.text_chunk_lines, cfg.text_chunk_overlap):
        trimmed = builder.trim(window)
        if trimmed is not None:
            builder.add(trimmed, "text", "", [])


# --- Python ------------------------------------------------------------------------------------


_BARE_BLOCK_LINES = frozenset(("", "else:", "try:", "finally:", "except:"))


class _PythonChunker:
    """One chunk per function/method, a class chunk without its methods, module code in between."""

    def __init__(self, builder: _ChunkBuilder, cfg: IndexerConfig, module: str) -> None:
        self.builder = builder
        self.cfg = cfg
        self.module = module

    def run(self, tree: ast.Module) -> None:
        members = list(definitions(tree.body))
        for node in members:
            self._add_definition(node, self.module, "")
        header = [f"# module: {self.module}"]
        for gap in self._gaps((1, len(self.builder.lines)), members):
            self._add_windows(gap, "module", self.module, header)

    def _add_definition(self, node: DefinitionNode, scope: str, class_path: str) -> None:
        symbol = f"{scope}.{node.name}"
        header = [f"# class: {class_path}"] if class_path else []
        header.append(f"# {signature(node)}")
        if not isinstance(node, ast.ClassDef):
            # Nested defs stay inside; a method is named through its class: mod.Class.method.
            self._add_windows((first_line(node), last_line(node)), "function", symbol, header)
            return
        members = list(definitions(node.body))
        inner_path = f"{class_path}.{node.name}" if class_path else node.name
        for member in members:
            self._add_definition(member, symbol, inner_path)
        # The header, docstring and attributes, i.e. the class's lines outside its methods.
        for gap in self._gaps((first_line(node), last_line(node)), members):
            self._add_windows(gap, "class", symbol, header)

    def _gaps(self, span: Span, members: list[DefinitionNode]) -> list[Span]:
        """Non-blank runs of span's lines outside every member's lines (members in line order)."""
        gaps: list[Span] = []
        cursor = span[0]
        for member in members:
            gaps.append((cursor, first_line(member) - 1))
            cursor = last_line(member) + 1
        gaps.append((cursor, span[1]))
        trimmed = [t for g in gaps if g[0] <= g[1] and (t := self.builder.trim(g)) is not None]
        return [t for t in trimmed if not self._only_block_keywords(t)]

    def _only_block_keywords(self, span: Span) -> bool:
        """A run like a lone `else:` between two conditional defs: nothing worth a chunk."""
        lines = self.builder.lines[span[0] - 1 : span[1]]
        return all(line.strip() in _BARE_BLOCK_LINES for line in lines)

    def _add_windows(self, span: Span, kind: str, symbol: str, header: list[str]) -> None:
        for window in windows(span, self.cfg.max_chunk_lines, self.cfg.text_chunk_overlap):
            self.builder.add(window, kind, symbol, header)


# --- Markdown ----------------------------------------------------------------------------------

_ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?[ \t#]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


@dataclass(frozen=True, slots=True)
class _Heading:
    line: int
    level: int
    title: str


def _markdown_headings(lines: list[str]) -> list[_Heading]:
    """ATX headings (`## Title`), ignoring lines inside fenced code blocks."""
    headings: list[_Heading] = []
    fence = ""
    for number, line in enumerate(lines, start=1):
        fence_match = _FENCE.match(line)
        if fence_match:
            marker = fence_match.group(1)
            if not fence:
                fence = marker
            elif marker[0] == fence[0] and len(marker) >= len(fence):
                fence = ""
            continue
        if fence:
            continue
        heading = _ATX_HEADING.match(line)
        if heading:
            headings.append(_Heading(number, len(heading.group(1)), (heading.group(2) or "").strip()))
    return headings


def _add_markdown_sections(builder: _ChunkBuilder, cfg: IndexerConfig) -> None:
    headings = _markdown_headings(builder.lines)
    for span in _split_section((1, len(builder.lines)), headings, cfg.text_chunk_lines):
        trimmed = builder.trim(span)
        if trimmed is None:
            continue
        for window in windows(trimmed, cfg.text_chunk_lines, cfg.text_chunk_overlap):
            piece = builder.trim(window)
            if piece is not None:
                builder.add(piece, "text", "", _breadcrumb(headings, piece[0]))


def _split_section(span: Span, headings: list[_Heading], max_lines: int) -> list[Span]:
    """A section that fits stays whole; a longer one splits at its top-level subheadings, recursively.

    Each piece runs from a heading to just before the next heading of the same or a higher level,
    so pieces never overlap; a piece with no subheading left is windowed by the caller.
    """
    start, end = span
    if end < start:
        return []
    inner = [h for h in headings if start < h.line <= end]
    if end - start + 1 <= max_lines or not inner:
        return [span]
    top = min(h.level for h in inner)
    cuts = [h.line for h in inner if h.level == top]
    bounds = [start, *cuts, end + 1]
    pieces: list[Span] = []
    for piece_start, next_start in itertools.pairwise(bounds):
        pieces.extend(_split_section((piece_start, next_start - 1), headings, max_lines))
    return pieces


def _breadcrumb(headings: list[_Heading], line: int) -> list[str]:
    """`# section: Title > Subtitle` for the headings enclosing `line`."""
    stack: list[_Heading] = []
    for heading in headings:
        if heading.line > line:
            break
        while stack and stack[-1].level >= heading.level:
            stack.pop()
        stack.append(heading)
    titles = [h.title for h in stack if h.title]
    return [f"# section: {' > '.join(titles)}"] if titles else []
