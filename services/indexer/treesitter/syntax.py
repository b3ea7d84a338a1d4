"""Per-language readers of imports, fields, bases and calls, on tree-sitter nodes."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache

from tree_sitter import Node, Query, QueryCursor

from services.indexer.treesitter.outline import java_body_members
from services.indexer.treesitter.parsers import grammar_for, text

SAME_PACKAGE = "."  # import spec of a name some other file of the same Go/Java package defines
IMPL_PREFIX = "impl:"  # FileGraph.classes key of methods for a type defined in another file
RUST_SELF = "self"  # import spec of a `a::b()` path read relative to the file's own Rust module

SELF_NAMES: dict[str, frozenset[str]] = {
    "javascript": frozenset(("this",)),
    "typescript": frozenset(("this",)),
    "java": frozenset(("this",)),
    "rust": frozenset(("self", "Self")),
    "go": frozenset(),  # the receiver's name, per method
}
# Calls that are part of the language, never an unresolved reference worth reporting.
IGNORED_CALLS: dict[str, frozenset[str]] = {
    "go": frozenset(
        "append cap clear close complex copy delete imag len make max min new panic print println real "
        "recover string int int8 int16 int32 int64 uint uint8 uint16 uint32 uint64 uintptr float32 "
        "float64 byte rune bool error any".split()
    ),
    "rust": frozenset(("Some", "Ok", "Err", "None")),
}
CONSTRUCTOR_NAMES = frozenset(("constructor",))  # JS/TS; Java constructors are named after the class

_NAMES = frozenset(
    (
        "identifier",
        "type_identifier",
        "field_identifier",
        "property_identifier",
        "private_property_identifier",
        "package_identifier",
        "shorthand_property_identifier",
        "this",
        "self",
        "super",
        "crate",
    )
)
# node type -> (field of the object, field of the member name)
_MEMBER_ACCESS: dict[str, tuple[str, str]] = {
    "member_expression": ("object", "property"),
    "selector_expression": ("operand", "field"),
    "field_access": ("object", "field"),
    "field_expression": ("value", "field"),
    "scoped_identifier": ("path", "name"),
    "scoped_type_identifier": ("path", "name"),
}


@dataclass(frozen=True, slots=True)
class ImportBinding:
    local: str  # the name it binds in the file ("" binds nothing: side effect, wildcard, blank)
    spec: str  # the module as written: "./util", "example.com/p/util", "com.x.Helper", "crate::util::f"
    attrs: tuple[str, ...]  # names read from that module
    written: str  # the import entity's qualified name
    node: Node
    export: bool = False  # a re-export (`export { a } from "./b"`): other files may import it from here


@dataclass(frozen=True, slots=True)
class Call:
    parts: list[str]  # the callee as a name chain: ["this", "run"], ["util", "Helper"], ["S", "new"]
    implicit_this: bool  # a Java call with no object: a method of the enclosing classes first
    scoped: bool  # a Rust `a::b` path (relative to the module), not a field access


def chain(node: Node | None) -> list[str] | None:
    """["a", "b", "c"] for `a.b.c` / `a::b::c` / `a->b`; None for anything but a plain name chain."""
    if node is None:
        return None
    if node.type in _NAMES:
        return [text(node)]
    if node.type in ("generic_type", "generic_function", "parenthesized_expression"):
        inner = node.child_by_field_name("name") or node.child_by_field_name("function")
        inner = inner or node.child_by_field_name("type")
        if inner is None and node.named_children:
            inner = node.named_children[0]
        return chain(inner)
    if node.type in ("pointer_type", "qualified_type") and node.named_children:
        return chain(node.named_children[-1]) if node.type == "pointer_type" else _split(text(node), ".")
    fields = _MEMBER_ACCESS.get(node.type)
    if fields is None:
        return None
    if node.type == "scoped_type_identifier" and node.child_by_field_name(fields[1]) is None:
        # Java's grammar gives `Outer.Inner` no fields: its parts are the named children
        parts = [chain(child) for child in node.named_children]
        return [p for part in parts if part is not None for p in part] if all(parts) else None
    obj, name = node.child_by_field_name(fields[0]), node.child_by_field_name(fields[1])
    if name is None:
        return None
    if obj is None:
        return [text(name)]
    head = chain(obj)
    return [*head, text(name)] if head is not None else None


def _split(value: str, sep: str) -> list[str]:
    return [p for p in value.split(sep) if p]


_CALL_NODES: dict[str, tuple[str, ...]] = {
    "javascript": ("call_expression", "new_expression"),
    "typescript": ("call_expression", "new_expression"),
    "tsx": ("call_expression", "new_expression"),
    "go": ("call_expression", "composite_literal"),  # `Store{...}` constructs a Store
    "java": ("method_invocation", "object_creation_expression"),
    "rust": ("call_expression", "struct_expression"),  # `Counter { .. }` constructs a Counter
}


@cache
def _call_query(grammar: str) -> Query:
    patterns = " ".join(f"({kind})" for kind in _CALL_NODES[grammar])
    return Query(grammar_for(grammar), f"[{patterns}] @call")


def calls_in(grammar: str, node: Node, skip: set[tuple[int, int]]) -> Iterator[tuple[Node, Call]]:
    """Every call in node's subtree in source order, leaving out those inside the spans in skip."""
    found = QueryCursor(_call_query(grammar)).captures(node).get("call", [])
    spans = sorted(s for s in skip if s != (node.start_byte, node.end_byte))
    starts = [s[0] for s in spans]
    for current in sorted(found, key=lambda n: (n.start_byte, -n.end_byte)):
        index = bisect_right(starts, current.start_byte) - 1
        if index >= 0 and current.end_byte <= spans[index][1]:
            continue  # inside a definition that is an entity of its own
        call = _call(current)
        if call is not None:
            yield current, call


# Fields whose identifier names something rather than reads it: a declaration's name or pattern,
# the member of `obj.member`, an assignment target.
_NAMING_FIELDS = ("name", "pattern", "field", "property", "left", "key", "label")


# Statements that bind names rather than use them.
_BINDING_STATEMENTS = frozenset(
    (
        "import_statement",
        "import_declaration",
        "import_spec",
        "use_declaration",
        "package_clause",
        "package_declaration",
        "extern_crate_declaration",
    )
)


@cache
def _read_query(grammar: str) -> Query:
    language = grammar_for(grammar)
    kinds = [k for k in ("identifier", "type_identifier") if language.id_for_node_kind(k, True) is not None]
    return Query(language, "[" + " ".join(f"({k})" for k in kinds) + "] @name")


def _is_naming(node: Node) -> bool:
    parent = node.parent
    if parent is None:
        return True
    ancestor: Node | None = parent
    while ancestor is not None:
        if ancestor.type in _BINDING_STATEMENTS:
            return True
        ancestor = ancestor.parent
    if "parameter" in parent.type or parent.type in ("expression_list", "identifier_list"):
        # a parameter, or Go's `a, b := ...`: a local name (expression lists elsewhere are reads,
        # but those are call arguments and returns of names bound here, rare enough to skip)
        return True
    return any(parent.child_by_field_name(f) == node for f in _NAMING_FIELDS)


def reads_in(grammar: str, node: Node, skip: set[tuple[int, int]]) -> tuple[list[str], set[str]]:
    """Names the subtree reads (source order, once each) and names it declares itself (locals,
    parameters, its own members), leaving out the spans in skip."""
    found = QueryCursor(_read_query(grammar)).captures(node).get("name", [])
    spans = sorted(s for s in skip if s != (node.start_byte, node.end_byte))
    starts = [s[0] for s in spans]
    reads: dict[str, None] = {}
    declared: set[str] = set()
    for current in sorted(found, key=lambda n: n.start_byte):
        index = bisect_right(starts, current.start_byte) - 1
        if index >= 0 and current.end_byte <= spans[index][1]:
            continue
        name = text(current)
        if _is_naming(current):
            declared.add(name)
        else:
            reads.setdefault(name, None)
    return list(reads), declared


def _call(node: Node) -> Call | None:
    kind = node.type
    if kind == "method_invocation":  # Java: `obj.name(...)` or `name(...)`
        obj, name = node.child_by_field_name("object"), text(node.child_by_field_name("name"))
        head = chain(obj) if obj is not None else []
        return Call([*head, name], obj is None, False) if head is not None and name else None
    callee: Node | None = None
    if kind == "call_expression":
        callee = node.child_by_field_name("function")
    elif kind == "new_expression":
        callee = node.child_by_field_name("constructor")
    elif kind in ("object_creation_expression", "composite_literal"):
        callee = node.child_by_field_name("type")
    elif kind == "struct_expression":
        callee = node.child_by_field_name("name")
    if callee is None:
        return None
    if callee.type == "generic_function":
        callee = callee.child_by_field_name("function") or callee
    parts = chain(callee)
    if not parts:
        return None
    return Call(parts, False, callee.type == "scoped_identifier")


# --- imports ----------------------------------------------------------------------------------------


def imports(language: str, root: Node) -> Iterator[ImportBinding]:
    for node in root.named_children:
        if language in ("javascript", "typescript"):
            yield from _js_imports(node)
        elif language == "go" and node.type == "import_declaration":
            yield from _go_imports(node)
        elif language == "java" and node.type == "import_declaration":
            yield from _java_import(node)
        elif language == "rust" and node.type == "use_declaration":
            yield from _rust_use(node)


def _string(node: Node | None) -> str:
    return text(node).strip("\"'`")


def _js_imports(node: Node) -> Iterator[ImportBinding]:
    source = node.child_by_field_name("source")
    if source is None or node.type not in ("import_statement", "export_statement"):
        return
    spec = _string(source)
    export = node.type == "export_statement"
    found = False
    for clause in node.named_children:
        if clause.type == "import_clause":
            for part in clause.named_children:
                if part.type == "identifier":
                    found = True
                    yield ImportBinding(text(part), spec, ("default",), f"{spec}.default", node)
                elif part.type == "namespace_import":
                    found = True
                    yield ImportBinding(text(part.named_children[0]), spec, (), spec, node)
                elif part.type == "named_imports":
                    for binding in _js_specifiers(part, "import_specifier", spec, node, False):
                        found = True
                        yield binding
        elif clause.type == "export_clause":
            for binding in _js_specifiers(clause, "export_specifier", spec, node, True):
                found = True
                yield binding
    if not found:  # `import "./polyfill"`, `export * from "./all"`
        yield ImportBinding("", spec, (), spec, node, export)


def _js_specifiers(clause: Node, kind: str, spec: str, node: Node, export: bool) -> Iterator[ImportBinding]:
    for specifier in clause.named_children:
        if specifier.type == kind:
            name = text(specifier.child_by_field_name("name"))
            local = text(specifier.child_by_field_name("alias")) or name
            yield ImportBinding(local, spec, (name,), f"{spec}.{name}", node, export)


def _go_imports(node: Node) -> Iterator[ImportBinding]:
    stack = list(node.named_children)
    while stack:
        spec_node = stack.pop(0)
        if spec_node.type == "import_spec_list":
            stack[:0] = spec_node.named_children
            continue
        if spec_node.type != "import_spec":
            continue
        path = _string(spec_node.child_by_field_name("path"))
        alias = text(spec_node.child_by_field_name("name"))
        local = "" if alias in ("_", ".") else alias or path.rsplit("/", 1)[-1]
        yield ImportBinding(local, path, (), path, spec_node)


def _java_import(node: Node) -> Iterator[ImportBinding]:
    name = next((c for c in node.named_children if c.type in ("scoped_identifier", "identifier")), None)
    if name is None:
        return
    dotted = text(name)
    if any(c.type == "asterisk" for c in node.named_children):
        yield ImportBinding("", f"{dotted}.*", (), f"{dotted}.*", node)
    else:
        yield ImportBinding(dotted.rsplit(".", 1)[-1], dotted, (), dotted, node)


def _rust_use(node: Node) -> Iterator[ImportBinding]:
    argument = node.child_by_field_name("argument")
    for local, path in _rust_paths(argument, []):
        spec = "::".join(path)
        yield ImportBinding(local, spec, (), spec, node)


def _rust_paths(node: Node | None, prefix: list[str]) -> Iterator[tuple[str, list[str]]]:
    """(bound name, full path) of each name a `use` tree brings in; "" for a glob."""
    if node is None:
        return
    kind = node.type
    if kind in ("identifier", "self", "crate", "super", "scoped_identifier"):
        path = prefix + _split(text(node), "::")
        if path and path[-1] == "self":  # `use a::b::{self}` binds b
            path = path[:-1]
        if path:
            yield path[-1], path
    elif kind == "use_as_clause":
        path = prefix + _split(text(node.child_by_field_name("path")), "::")
        yield text(node.child_by_field_name("alias")), path
    elif kind == "scoped_use_list":
        inner = prefix + _split(text(node.child_by_field_name("path")), "::")
        yield from _rust_paths(node.child_by_field_name("list"), inner)
    elif kind == "use_list":
        for child in node.named_children:
            yield from _rust_paths(child, prefix)
    elif kind == "use_wildcard":
        yield "", prefix + _split(text(node).removesuffix("*").rstrip(":"), "::")


# --- fields and variables ---------------------------------------------------------------------------


def module_variables(language: str, root: Node) -> Iterator[tuple[str, Node]]:
    """(name, declaration) of module-level variables and constants."""
    for node in root.named_children:
        declaration = node
        if node.type == "export_statement":
            declaration = node.child_by_field_name("declaration") or node
        if declaration.type in ("lexical_declaration", "variable_declaration"):
            yield from _js_declarators(declaration)
        elif declaration.type in ("var_declaration", "const_declaration"):
            for spec in _descendants(declaration, ("var_spec", "const_spec"), 2):
                for name in spec.children_by_field_name("name"):
                    yield text(name), declaration
        elif declaration.type in ("const_item", "static_item"):
            yield text(declaration.child_by_field_name("name")), declaration


def _js_declarators(node: Node) -> Iterator[tuple[str, Node]]:
    declarators = [c for c in node.named_children if c.type == "variable_declarator"]
    for declarator in declarators:
        name = declarator.child_by_field_name("name")
        value = declarator.child_by_field_name("value")
        is_definition = len(declarators) == 1 and value is not None and value.type in _JS_DEFINITION_VALUES
        if name is not None and name.type == "identifier" and not is_definition:
            yield text(name), node


_JS_DEFINITION_VALUES = frozenset(("arrow_function", "function_expression", "function", "class"))


def class_fields(language: str, node: Node) -> Iterator[tuple[str, Node]]:
    """(name, declaration) of a class's fields / a struct's named fields."""
    if language in ("javascript", "typescript"):
        body = node.child_by_field_name("body")
        for member in body.named_children if body is not None else []:
            if member.type in ("field_definition", "public_field_definition", "property_signature"):
                name = member.child_by_field_name("name") or member.child_by_field_name("property")
                if name is not None:
                    yield text(name), member
    elif language == "java":
        for member in java_body_members(node):
            if member.type in ("field_declaration", "constant_declaration"):
                for declarator in member.children_by_field_name("declarator"):
                    yield text(declarator.child_by_field_name("name")), member
    else:  # Go struct type_spec, Rust struct_item
        for field in _struct_fields(language, node):
            for name in field.children_by_field_name("name"):
                yield text(name), field


def _struct_fields(language: str, node: Node) -> list[Node]:
    body = node.child_by_field_name("type") if language == "go" else node.child_by_field_name("body")
    if body is None:
        return []
    lists = (
        [body]
        if body.type == "field_declaration_list"
        else _descendants(body, ("field_declaration_list",), 1)
    )
    return [f for lst in lists for f in lst.named_children if f.type == "field_declaration"]


def base_types(language: str, node: Node) -> list[Node]:
    """The written supertypes: extends/implements, a Go struct's embedded fields."""
    if language == "go":
        embedded = [f for f in _struct_fields("go", node) if not f.children_by_field_name("name")]
        return [t for f in embedded if (t := f.child_by_field_name("type")) is not None]
    if language == "java":
        found: list[Node] = []
        for child in node.named_children:
            if child.type in ("superclass", "super_interfaces", "extends_interfaces"):
                found.extend(_descendants(child, _TYPE_NODES, 2))
        return found
    bases: list[Node] = []
    for child in node.named_children:
        if child.type == "class_heritage":
            for clause in child.named_children:
                if clause.type == "extends_clause":
                    bases.extend(clause.children_by_field_name("value"))
                elif clause.type == "implements_clause":
                    bases.extend(clause.named_children)
                else:  # JavaScript: `extends <expression>` directly
                    bases.append(clause)
        elif child.type == "extends_type_clause":
            bases.extend(child.named_children)
    return bases


_TYPE_NODES = ("type_identifier", "generic_type", "scoped_type_identifier")


def _descendants(node: Node, types: tuple[str, ...], depth: int) -> list[Node]:
    """Nodes of the given types among node's children, looking at most `depth` levels down."""
    found: list[Node] = []
    for child in node.named_children:
        if child.type in types:
            found.append(child)
        elif depth > 1:
            found.extend(_descendants(child, types, depth - 1))
    return found


def java_package(root: Node) -> str:
    declaration = next((c for c in root.named_children if c.type == "package_declaration"), None)
    if declaration is None:
        return ""
    name = next(
        (c for c in declaration.named_children if c.type in ("scoped_identifier", "identifier")), None
    )
    return text(name)
