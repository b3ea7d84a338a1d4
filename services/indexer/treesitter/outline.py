"""The definitions of a parsed file, per language: what becomes a chunk and a function/class entity.

One table of node types per language plus a few small readers; the chunker and the extractor both
walk the same `Definition` tree, so chunk symbols and entity qualified names always agree. Python is
only chunked from this tree: its graph extractor reads `ast` (`pysyntax.definitions`), and `_python`
finds the same definitions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Literal

from tree_sitter import Node

from services.indexer.treesitter.parsers import first_line, last_line, text

MAX_SIGNATURE_CHARS = 240


@dataclass(slots=True)
class Definition:
    kind: Literal["function", "class"]
    name: str
    span: Node  # the lines of the definition (an `export` wrapper, Python decorators included)
    node: Node  # the declaration itself
    owner: str = ""  # a Go method's receiver type, a Rust impl's type: the class it belongs to
    is_impl: bool = False  # a Rust `impl` block: chunked like a class, but no entity of its own
    trait: Node | None = None  # the trait of `impl Trait for Type`
    members: list[Definition] = field(default_factory=list)  # methods and nested classes
    lead: Node | None = None  # the first of the Rust attributes (`#[derive(..)]`) right above it

    @property
    def lines(self) -> tuple[int, int]:
        """1-based inclusive lines of the definition, attributes included."""
        return first_line(self.lead or self.span), last_line(self.span)

    @property
    def bytes(self) -> tuple[int, int]:
        return (self.lead or self.span).start_byte, self.span.end_byte


def module_of(path: str) -> str:
    """Module name of a non-Python file: its path without the extension (src/util.ts -> src/util)."""
    head, _, name = path.rpartition("/")
    stem = name.rsplit(".", 1)[0] if "." in name.lstrip(".") else name
    return f"{head}/{stem}" if head else stem


def signature(definition: Definition) -> str:
    """The declaration up to its body, on one line: `class A extends B`, `func (s *S) Run(x int) int`."""
    start, node = definition.span, definition.node
    if node.type in _PY_DEFINITIONS:
        return _python_signature(node)
    body = node.child_by_field_name("body")
    end = body.start_byte if body is not None else node.end_byte
    raw = (start.text or b"")[: end - start.start_byte].decode("utf-8", errors="replace")
    one_line = " ".join(raw.split()).rstrip("{ =").strip()
    return one_line[:MAX_SIGNATURE_CHARS]


def outline(language: str, root: Node) -> list[Definition]:
    return list(_read_all(_READERS[language], root.named_children))


def _read_all(reader: Callable[[Node], Iterator[Definition]], nodes: list[Node]) -> Iterator[Definition]:
    """The definitions among nodes, each with the run of attribute items just above it."""
    lead: Node | None = None
    for node in nodes:
        if node.type == "attribute_item":
            lead = lead or node
            continue
        for definition in reader(node):
            definition.lead = lead
            yield definition
        lead = None


# --- JavaScript / TypeScript -------------------------------------------------------------------

_JS_FUNCTIONS = frozenset(("function_declaration", "generator_function_declaration"))
_JS_FUNCTION_VALUES = frozenset(("arrow_function", "function_expression", "function", "generator_function"))
_JS_CLASSES = frozenset(
    ("class_declaration", "abstract_class_declaration", "interface_declaration", "enum_declaration")
)
_JS_CLASS_VALUES = frozenset(("class",))


def _js(node: Node) -> Iterator[Definition]:
    span = node
    if node.type == "export_statement":
        inner = node.child_by_field_name("declaration") or node.child_by_field_name("value")
        if inner is None:
            return
        node = inner
    if node.type in _JS_FUNCTIONS or node.type in _JS_FUNCTION_VALUES:
        yield Definition("function", _name(node) or "default", span, node)
    elif node.type in _JS_CLASSES or node.type in _JS_CLASS_VALUES:
        yield Definition("class", _name(node) or "default", span, node, members=list(_js_members(node)))
    elif node.type in ("lexical_declaration", "variable_declaration"):
        declarators = [c for c in node.named_children if c.type == "variable_declarator"]
        value = declarators[0].child_by_field_name("value") if len(declarators) == 1 else None
        name = _name(declarators[0]) if declarators else ""
        if value is not None and name and value.type in _JS_FUNCTION_VALUES:
            yield Definition("function", name, span, value)
        elif value is not None and name and value.type in _JS_CLASS_VALUES:
            yield Definition("class", name, span, value, members=list(_js_members(value)))


def _js_members(node: Node) -> Iterator[Definition]:
    body = node.child_by_field_name("body")
    for member in body.named_children if body is not None else []:
        if member.type == "method_definition" and member.child_by_field_name("body") is not None:
            yield Definition("function", _name(member), member, member)


# --- Go ----------------------------------------------------------------------------------------


def _go(node: Node) -> Iterator[Definition]:
    if node.type == "function_declaration":
        yield Definition("function", _name(node), node, node)
    elif node.type == "method_declaration":
        yield Definition("function", _name(node), node, node, owner=go_receiver(node)[1])
    elif node.type == "type_declaration":
        specs = [c for c in node.named_children if c.type == "type_spec"]
        for spec in specs:
            kind = spec.child_by_field_name("type")
            if kind is not None and kind.type in ("struct_type", "interface_type"):
                yield Definition("class", _name(spec), node if len(specs) == 1 else spec, spec)


def go_receiver(node: Node) -> tuple[str, str]:
    """(variable, type) of a Go method's receiver: `func (s *Server[T]) Run()` -> ("s", "Server")."""
    receiver = node.child_by_field_name("receiver")
    params = [c for c in receiver.named_children if c.type == "parameter_declaration"] if receiver else []
    if not params:
        return "", ""
    type_node = params[0].child_by_field_name("type")
    while type_node is not None and type_node.type in ("pointer_type", "generic_type"):
        inner = type_node.child_by_field_name("type")
        type_node = inner if inner is not None else _first_named(type_node)
    return text(params[0].child_by_field_name("name")), text(type_node)


# --- Java --------------------------------------------------------------------------------------

_JAVA_CLASSES = frozenset(
    (
        "class_declaration",
        "interface_declaration",
        "enum_declaration",
        "record_declaration",
        "annotation_type_declaration",
    )
)
_JAVA_METHODS = frozenset(
    ("method_declaration", "constructor_declaration", "compact_constructor_declaration")
)


def _java(node: Node) -> Iterator[Definition]:
    if node.type in _JAVA_CLASSES:
        yield Definition("class", _name(node), node, node, members=list(_java_members(node)))


def _java_members(node: Node) -> Iterator[Definition]:
    for member in java_body_members(node):
        if member.type in _JAVA_CLASSES:
            yield from _java(member)
        elif member.type in _JAVA_METHODS and member.child_by_field_name("body") is not None:
            yield Definition("function", _name(member), member, member)


def java_body_members(node: Node) -> Iterator[Node]:
    """Declarations in a class/interface/enum body (an enum's come after its constants)."""
    body = node.child_by_field_name("body")
    for member in body.named_children if body is not None else []:
        if member.type == "enum_body_declarations":
            yield from member.named_children
        else:
            yield member


# --- Rust --------------------------------------------------------------------------------------

_RUST_TYPES = frozenset(("struct_item", "enum_item", "union_item"))


def _rust(node: Node) -> Iterator[Definition]:
    if node.type == "function_item":
        yield Definition("function", _name(node), node, node)
    elif node.type in _RUST_TYPES:
        yield Definition("class", _name(node), node, node)
    elif node.type == "trait_item":
        yield Definition("class", _name(node), node, node, members=list(_rust_functions(node)))
    elif node.type == "impl_item":
        type_name = rust_type_name(node.child_by_field_name("type"))
        if type_name:
            yield Definition(
                "class",
                type_name,
                node,
                node,
                owner=type_name,
                is_impl=True,
                trait=node.child_by_field_name("trait"),
                members=list(_rust_functions(node)),
            )


def _rust_functions(node: Node) -> Iterator[Definition]:
    body = node.child_by_field_name("body")
    yield from _read_all(_rust_function, body.named_children if body is not None else [])


def _rust_function(member: Node) -> Iterator[Definition]:
    if member.type == "function_item":
        yield Definition("function", _name(member), member, member)


def rust_type_name(node: Node | None) -> str:
    """`Foo` of `Foo`, `Foo<T>`, `crate::m::Foo`, `&Foo`."""
    while node is not None and node.type in ("generic_type", "reference_type", "scoped_type_identifier"):
        inner = node.child_by_field_name("type") or node.child_by_field_name("name")
        node = inner if inner is not None else _first_named(node)
    return text(node) if node is not None and node.type in ("type_identifier", "identifier") else ""


# --- Python ------------------------------------------------------------------------------------

_PY_DEFINITIONS = frozenset(("function_definition", "class_definition"))  # `async def` included
# Statements whose blocks still belong to the enclosing module or class body, as in
# pysyntax.definitions: if/elif/else, try/except/except*/else/finally, with/async with.
# Loops (for/while and their else) and match are not descended, nor are function bodies.
_PY_BLOCK_STATEMENTS = frozenset(("if_statement", "try_statement", "with_statement"))
_PY_CLAUSES = frozenset(("elif_clause", "else_clause", "except_clause", "finally_clause"))
# Not part of a signature: comments inside the header, backslash continuations.
_PY_SIGNATURE_NOISE = frozenset(("comment", "line_continuation"))
# `f( a, b )` -> `f(a, b)`: the spaces a multi-line parameter list leaves inside its brackets.
_PY_BRACKET_SPACE = re.compile(r"([(\[]) | ([)\]])")


def _python(node: Node) -> Iterator[Definition]:
    span = node
    if node.type == "decorated_definition":  # the decorators are part of the definition's lines
        inner = node.child_by_field_name("definition")
        if inner is None:
            return
        node = inner
    name = _name(node)
    if node.type == "function_definition" and name:
        yield Definition("function", name, span, node)
    elif node.type == "class_definition" and name:
        members = list(_python_body(node.child_by_field_name("body")))
        yield Definition("class", name, span, node, members=members)
    elif node.type in _PY_BLOCK_STATEMENTS:
        for block in _python_blocks(node):
            yield from _python_body(block)


def _python_body(block: Node | None) -> Iterator[Definition]:
    for statement in block.named_children if block is not None else []:
        yield from _python(statement)


def _python_blocks(node: Node) -> Iterator[Node]:
    """The blocks of an if/try/with statement: its body and those of its clauses."""
    for child in node.named_children:
        if child.type == "block":
            yield child
        elif child.type in _PY_CLAUSES:
            yield from (c for c in child.named_children if c.type == "block")


def _python_signature(node: Node) -> str:
    """`def name(args) -> ret` / `class Name(bases)`: the def/class line(s) up to the ':' that ends
    them (even with an ERROR node before the body), without decorators, comments or a trailing comma."""
    colon = next((c for c in node.children if c.type == ":"), None)
    end = colon.start_byte if colon is not None else node.end_byte
    noise: list[Node] = []
    for field_name in ("parameters", "superclasses"):
        brackets = node.child_by_field_name(field_name)
        if brackets is not None and brackets.child_count > 2 and brackets.children[-2].type == ",":
            noise.append(brackets.children[-2])
    pending = [c for c in node.children if c.start_byte < end]
    while pending:
        child = pending.pop()
        if child.type in _PY_SIGNATURE_NOISE:
            noise.append(child)
        else:
            pending.extend(c for c in child.children if c.start_byte < end)
    header = (node.text or b"")[: end - node.start_byte]
    pieces: list[bytes] = []
    cursor = 0
    for skipped in sorted(noise, key=lambda n: n.start_byte):
        pieces.append(header[cursor : skipped.start_byte - node.start_byte])
        cursor = skipped.end_byte - node.start_byte
    pieces.append(header[cursor:])
    one_line = " ".join(b" ".join(pieces).decode("utf-8", errors="replace").split())
    return _PY_BRACKET_SPACE.sub(r"\1\2", one_line)[:MAX_SIGNATURE_CHARS]


# --- shared -------------------------------------------------------------------------------------


def _name(node: Node) -> str:
    return text(node.child_by_field_name("name"))


def _first_named(node: Node) -> Node | None:
    return node.named_children[0] if node.named_children else None


_READERS: dict[str, Callable[[Node], Iterator[Definition]]] = {
    "javascript": _js,
    "typescript": _js,
    "go": _go,
    "java": _java,
    "rust": _rust,
    "python": _python,
}
