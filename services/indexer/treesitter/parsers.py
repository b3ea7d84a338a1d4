"""The tree-sitter grammars we ship, and parsing a source file with the right one."""

from __future__ import annotations

import re
from functools import cache

import tree_sitter_go
import tree_sitter_java
import tree_sitter_javascript
import tree_sitter_python
import tree_sitter_rust
import tree_sitter_typescript
from tree_sitter import Language, Node, Parser, Tree

from services.indexer.walker import SourceFile

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
    name = grammar_name(source)
    parser = Parser(grammar_for(name))
    tree = parser.parse(source.text.encode("utf-8"))
    if name == "typescript" and tree.root_node.has_error:
        # tree-sitter-typescript#335: generic call signatures on separate lines without `;`
        # (`<T>(fn: T): T` then `<T>(name: string, fn: T): T`) break the whole file. A second
        # parse with the semicolons written, line numbers unchanged, is kept if it errs less.
        fixed = parser.parse(_SIGNATURE_BREAK.sub(r"\1;", source.text).encode("utf-8"))
        if _errors(fixed.root_node) < _errors(tree.root_node):
            return fixed
    return tree


# A code line (not a comment) followed, past blank and comment lines, by a line opening with `<`.
_SIGNATURE_BREAK = re.compile(
    r"(?m)^((?![ \t]*(?://|/\*|\*))[^\n]*[^\s;{,(\[/*])(?=[ \t]*\n(?:[ \t]*(?://[^\n]*)?\n)*[ \t]*<)"
)


def _errors(node: Node) -> int:
    """ERROR and missing nodes in a tree (read only for a tree that has some)."""
    if not node.has_error:
        return 0
    return int(node.type == "ERROR" or node.is_missing) + sum(_errors(c) for c in node.children)


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
