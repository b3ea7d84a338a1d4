"""Split a source file into chunks: code by definition, documents by section, the rest by line window.

Python, JavaScript, TypeScript, Go, Java and Rust are chunked from their tree-sitter tree
(`services.indexer.treesitter`). Python is also parsed with `ast`, for its graph extractor.

Documents (Markdown, reStructuredText, HTML, PDF, DOCX, plain text) are chunked from their outline
(`services.indexer.documents`, `services.indexer.doc_chunks`).

Invariant: a code chunk's `content` is exactly the file's lines start_line..end_line (1-based, inclusive,
joined by "\\n"). Chunk ids leave line numbers out, so an unchanged definition keeps its id when
code above it moves.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace

from tree_sitter import Tree

from services.indexer.doc_chunks import chunk_document
from services.indexer.documents import DOCUMENT_LANGUAGES, outline_of
from services.indexer.pysyntax import reindent_bracket_continuations, split_lines
from services.indexer.spans import ChunkBuilder, windows
from services.indexer.treesitter.chunks import TreeChunker
from services.indexer.treesitter.parsers import TREE_SITTER_LANGUAGES, parse
from services.indexer.walker import SourceFile
from tribrid.config import IndexerConfig
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
    if source.language in DOCUMENT_LANGUAGES:
        outline = source.outline or outline_of(source.language, source.text, source.path)
        return ChunkResult(chunk_document(corpus_id, source.path, source.language, source.text, outline, cfg))
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
