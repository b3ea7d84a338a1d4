"""The code graph of any indexed file: one entry point per step, whatever the language.

Python goes through `python_graph` (ast); JavaScript, TypeScript, Go, Java and Rust through the
tree-sitter extractor. Both leave cross-file references for `resolve_corpus`.
"""

from __future__ import annotations

from services.indexer.chunker import ChunkResult
from services.indexer.python_graph import (
    DEFAULT_INFERRED_CANDIDATES,
    CorpusLinks,
    FileGraph,
    UnresolvedRef,
    extract_python,
    resolve_refs,
)
from services.indexer.treesitter.extract import extract_tree
from services.indexer.treesitter.resolve import SpecLocator
from services.indexer.walker import SourceFile
from tribrid.models import Relation


def extract_file(corpus_id: str, source: SourceFile, chunked: ChunkResult) -> FileGraph | None:
    """Entities and in-file relations of one chunked file; None for languages without a graph
    (Markdown, plain text, ...) and for Python that did not parse."""
    if source.language == "python":
        if chunked.tree is None:
            return None
        return extract_python(corpus_id, source, chunked.chunks, chunked.tree)
    if chunked.syntax_tree is None:
        return None
    return extract_tree(corpus_id, source, chunked.chunks, chunked.syntax_tree.root_node)


def resolve_corpus(
    corpus_id: str, graphs: list[FileGraph], max_inferred_candidates: int = DEFAULT_INFERRED_CANDIDATES
) -> CorpusLinks:
    """Cross-file relations (imports, calls, inherits, references, inferred calls) and what stays
    unresolved."""
    others = [g for g in graphs if g.language != "python"]
    locator = SpecLocator(others)
    relations: list[Relation] = []
    unresolved: list[UnresolvedRef] = []
    rewritten = [locator.rewrite(g, relations, unresolved) for g in others]
    locator.merge_methods(rewritten)
    python = [g for g in graphs if g.language == "python"]
    links = resolve_refs(corpus_id, python + rewritten, max_inferred_candidates)
    return CorpusLinks(list(dict.fromkeys(relations + links.relations)), unresolved + links.unresolved)
