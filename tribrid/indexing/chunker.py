"""Split a source file into chunks: code by definition, Markdown by section, the rest by line window.

Python, JavaScript, TypeScript, Go, Java and Rust are chunked from their tree-sitter tree
(`tribrid.indexing.treesitter`). Python is also parsed with `ast`, for its graph extractor.

Invariant: a chunk's `content` is exactly the file's lines start_line..end_line (1-based, inclusive,
joined by "\\n"). Chunk ids leave line numbers out, so an unchanged definition keeps its id when
code above it moves.
"""

from __future__ import annotations

import ast
import itertools
import re
from dataclasses import dataclass, replace

from tree_sitter import Tree

from tribrid.config import IndexerConfig
from tribrid.indexing.pysyntax import reindent_bracket_continuations, split_lines
from tribrid.indexing.spans import ChunkBuilder, Span, windows
from tribrid.indexing.treesitter.chunks import TreeChunker
from tribrid.indexing.treesitter.parsers import TREE_SITTER_LANGUAGES, parse
from tribrid.indexing.walker import SourceFile
from tribrid.models import Chunk


@dataclass(frozen=True, slots=True)
class ChunkResult:
    chunks: list[Chunk]
    # The `ast` module of a Python file, to hand to extract_python (None: not Python, or unparsable).
    tree: ast.Module | None = None
    # A tree-sitter tree with ERROR or MISSING nodes (chunked, and extracted, from what did parse),
    # or Python that `ast` could not parse (chunked from its tree-sitter tree, no graph).
    syntax_error: bool = False
    # The tree-sitter tree of a JavaScript/TypeScript/Go/Java/Rust file, to hand to graph.extract_file.
    syntax_tree: Tree | None = None


def chunk_file(corpus_id: str, source: SourceFile, cfg: IndexerConfig) -> ChunkResult:
    lines = split_lines(source.text)
    builder = ChunkBuilder(corpus_id, source, lines)
    if source.language == "python":
        tree = _parse_python(source)
        syntax_tree = _parse_python_with_tree_sitter(source, tree is not None)
        _chunk_tree(builder, cfg, syntax_tree)
        has_error = syntax_tree.root_node.has_error or tree is None
        return ChunkResult(builder.sorted_chunks(), tree, syntax_error=has_error)
    if source.language in TREE_SITTER_LANGUAGES:
        syntax_tree = parse(source)
        _chunk_tree(builder, cfg, syntax_tree)
        has_error = syntax_tree.root_node.has_error
        return ChunkResult(builder.sorted_chunks(), syntax_error=has_error, syntax_tree=syntax_tree)
    if source.language == "markdown":
        _add_markdown_sections(builder, cfg)
    else:
        _add_text_windows(builder, cfg)
    return ChunkResult(builder.chunks)


def _chunk_tree(builder: ChunkBuilder, cfg: IndexerConfig, tree: Tree) -> None:
    TreeChunker(builder, cfg, builder.source.language).run(tree.root_node)


def _parse_python(source: SourceFile) -> ast.Module | None:
    try:
        return ast.parse(source.text, filename=source.path)
    except (SyntaxError, ValueError, RecursionError):  # RecursionError: absurdly deep nesting
        return None


def _parse_python_with_tree_sitter(source: SourceFile, valid: bool) -> Tree:
    """The tree-sitter tree of a Python file. Valid Python (`ast` parsed it) that tree-sitter misreads
    because a bracketed line is dedented is parsed again with that line re-indented."""
    tree = parse(source)
    if tree.root_node.has_error and valid:
        fixed = reindent_bracket_continuations(source.text)
        if fixed is not None:
            retry = parse(replace(source, text=fixed))
            if not retry.root_node.has_error:
                return retry
    return tree


def _add_text_windows(builder: ChunkBuilder, cfg: IndexerConfig) -> None:
    if not builder.lines:
        return
    for window in windows((1, len(builder.lines)), cfg.text_chunk_lines, cfg.text_chunk_overlap):
        trimmed = builder.trim(window)
        if trimmed is not None:
            builder.add(trimmed, "text", "", [])


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


def _add_markdown_sections(builder: ChunkBuilder, cfg: IndexerConfig) -> None:
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
