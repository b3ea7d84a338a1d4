"""The tree-sitter grammars we ship, and parsing a source file with the right one."""

from __future__ import annotations

from functools import cache

import tree_sitter_go
import tree_sitter_java
import tree_sitter_javascript
import tree_sitter_python
import tree_sitter_rust
import tree_sitter_typescript
from tree_sitter import Language, Node, Parser, Tree

from tribrid.indexing.walker import SourceFile

# Languages (walker.detect_language names) chunked and extracted through tree-sitter. Python is
# chunked through tree-sitter too, but its graph comes from `ast` (see chunker.chunk_file).
TREE_SITTER_LANGUAGES = frozenset(("javascript", "typescript", "go", "java", "rust"))


@cache
def grammar_for(name: str) -> Language:
    loaders = {
        "python": tree_sitter_python.language,
        "javascript": tree_sitter_javascript.language,
        "typescript": tree_sitter_typescript.language_typescript,
        "tsx": tree_sitter_typescript.language_tsx,
        "go": tree_sitter_go.language,
        "java": tree_sitter_java.language,
        "rust": tree_sitter_rust.language,
    }
    return Language(loaders[name]())


def grammar_name(source: SourceFile) -> str:
    """The grammar for a file: .tsx files need the TSX dialect of TypeScript."""
    if source.language == "typescript" and source.path.lower().endswith(".tsx"):
        return "tsx"
    return source.language


def parse(source: SourceFile) -> Tree:
    return Parser(grammar_for(grammar_name(source))).parse(source.text.encode("utf-8"))


def text(node: Node | None) -> str:
    if node is None or node.text is None:
        return ""
    return node.text.decode("utf-8", errors="replace")


def first_line(node: Node) -> int:
    return node.start_point.row + 1


def last_line(node: Node) -> int:
    """1-based last line; a node ending at column 0 ends on the line before (its trailing newline)."""
    row, column = node.end_point.row, node.end_point.column
    if column == 0 and row > node.start_point.row:
        row -= 1
    return row + 1
