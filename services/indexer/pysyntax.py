"""Python syntax helpers shared by the chunker and the graph extractor, so both name things alike."""

from __future__ import annotations

import ast
import io
import tokenize
from collections.abc import Iterator

FunctionNode = ast.FunctionDef | ast.AsyncFunctionDef
DefinitionNode = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef

PYTHON_SUFFIXES = (".py", ".pyi", ".pyw")


def split_lines(text: str) -> list[str]:
    """Source lines as the Python tokenizer counts them: only \\n, \\r\\n and \\r end a line.

    (str.splitlines also breaks at form feeds and other separators, which would shift line numbers.)
    """
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the final newline ends the last line; it does not start a new one
    return lines


def is_package_init(path: str) -> bool:
    return path.rsplit("/", 1)[-1] in ("__init__.py", "__init__.pyi")


def module_name(path: str) -> str:
    """Dotted module name of a corpus-relative path: a/b/c.py -> a.b.c, a/b/__init__.py -> a.b."""
    stem = path
    for suffix in PYTHON_SUFFIXES:
        if stem.endswith(suffix):
            stem = stem[: -len(suffix)]
            break
    parts = stem.split("/")
    if len(parts) > 1 and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def dotted(expr: ast.expr) -> list[str] | None:
    """["a", "b", "c"] for `a.b.c`; None for anything that is not a plain name chain."""
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    parts.append(expr.id)
    return parts[::-1]


def definitions(body: list[ast.stmt]) -> Iterator[DefinitionNode]:
    """Defs and classes of a module or class body, including those under if/try/with blocks.

    Conditional definitions (`if sys.platform == ...: def f()`) are still the scope's own names;
    definitions inside loops or inside other functions are not.
    """
    for stmt in body:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            yield stmt
        else:
            for block in _nested_blocks(stmt):
                yield from definitions(block)


def _nested_blocks(stmt: ast.stmt) -> list[list[ast.stmt]]:
    if isinstance(stmt, ast.If):
        return [stmt.body, stmt.orelse]
    if isinstance(stmt, ast.Try | ast.TryStar):
        return [stmt.body, *(h.body for h in stmt.handlers), stmt.orelse, stmt.finalbody]
    if isinstance(stmt, ast.With | ast.AsyncWith):
        return [stmt.body]
    return []


def scope_statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement of a module or class body, descending the same blocks as `definitions`."""
    for stmt in body:
        yield stmt
        for block in _nested_blocks(stmt):
            yield from scope_statements(block)


def first_line(node: DefinitionNode) -> int:
    """First line of a definition, its decorators included."""
    return min([node.lineno, *(d.lineno for d in node.decorator_list)])


def last_line(node: ast.stmt) -> int:
    return node.end_lineno if node.end_lineno is not None else node.lineno


def reindent_bracket_continuations(text: str) -> str | None:
    """The text with every line that continues a bracketed expression indented at least as far as
    its statement; None if no line needed it (or the text does not tokenize).

    Python ignores indentation inside brackets, but tree-sitter-python reads a line there that is
    indented less than its statement as a dedent and fails the whole block (tree-sitter-python#256).
    Only leading spaces of lines that start with a token change: line numbers, string contents and
    the meaning of the code stay the same.
    """
    lines = text.split("\n")
    depth = statement_indent = last_row = 0
    changed = False
    layout = (tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type in layout:
                continue
            row, column = token.start
            first_on_line = row > last_row
            last_row = token.end[0]
            if first_on_line and depth == 0:
                statement_indent = column
            elif first_on_line and column < statement_indent:
                lines[row - 1] = " " * (statement_indent - column) + lines[row - 1]
                changed = True
            if token.type == tokenize.OP and token.string in ("(", "[", "{"):
                depth += 1
            elif token.type == tokenize.OP and token.string in (")", "]", "}"):
                depth = max(0, depth - 1)
    except (tokenize.TokenError, SyntaxError):
        return None
    return "\n".join(lines) if changed else None
