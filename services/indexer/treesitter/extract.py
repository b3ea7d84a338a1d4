"""Entities and relations of one tree-sitter parsed file (JavaScript, TypeScript, Go, Java, Rust).

Mirrors python_graph: a name links only through what binds it in the file (a definition, an import,
the receiver `this`/`self` inside a class); names read through an import wait in `FileGraph.pending`
as `ModuleAttr(<import spec as written>, attrs)` until `graph.resolve_corpus` maps the spec to files.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Literal

from tree_sitter import Node

from services.indexer.python_graph import (
    AnyOf,
    Binding,
    ClassInfo,
    Definition,
    EntitySite,
    FileGraph,
    MethodLookup,
    ModuleAttr,
    Symbolic,
    find_method,
    link_ref,
    record_entity,
)
from services.indexer.treesitter import outline as ol
from services.indexer.treesitter.parsers import first_line, grammar_name, last_line, text
from services.indexer.treesitter.syntax import (
    CONSTRUCTOR_NAMES,
    IGNORED_CALLS,
    IMPL_PREFIX,
    RUST_SELF,
    SAME_PACKAGE,
    SELF_NAMES,
    Call,
    base_types,
    calls_in,
    chain,
    class_fields,
    imports,
    java_package,
    module_variables,
    reads_in,
)
from services.indexer.walker import SourceFile
from tribrid.models import Chunk, Entity, Relation

Kind = Literal["calls", "inherits", "references"]
Outcome = str | Symbolic | None


@dataclass(slots=True)
class _Region:
    """Code whose calls belong to one entity."""

    owner_id: str
    node: Node
    skip: set[tuple[int, int]] = field(default_factory=set)  # byte spans of definitions of their own
    class_ids: list[str] = field(default_factory=list)  # enclosing classes, innermost first
    self_names: frozenset[str] = frozenset()


def extract_tree(corpus_id: str, source: SourceFile, chunks: list[Chunk], root: Node) -> FileGraph:
    extractor = _Extractor(corpus_id, source, chunks, root)
    extractor.run()
    return extractor.finish()


def namespace_of(source: SourceFile, root: Node) -> str:
    """Where the file's names are visible without an import: its Go directory, its Java package."""
    if source.language == "go":
        return source.path.rpartition("/")[0]
    if source.language == "java":
        return java_package(root)
    return ""


class _Extractor:
    def __init__(self, corpus_id: str, source: SourceFile, chunks: list[Chunk], root: Node) -> None:
        self.corpus_id = corpus_id
        self.path = source.path
        self.language = source.language
        self.grammar = grammar_name(source)
        self.root = root
        self.module = ol.module_of(source.path)
        line_count = max(1, source.text.count("\n") + (0 if source.text.endswith("\n") else 1))
        self.chunk_at = _chunk_by_line(chunks, line_count)
        self.types: dict[str, str] = {}
        self._entities: dict[str, Entity] = {}
        self._overloads: dict[str, int] = {}  # qualified name -> functions defined with it so far
        self.local: dict[str, Binding] = {}  # names the file's code can use: definitions and imports
        self.class_names: dict[str, str] = {}  # class id -> the type's simple name
        self.wildcards: list[str] = []  # Java `import a.b.*;` specs: where an unbound type may be
        self.regions: list[_Region] = []
        self.base_work: list[tuple[str, list[Node]]] = []
        module_chunk = next((c.chunk_id for c in chunks if c.kind == "module"), "")
        name = self.module.rsplit("/", 1)[-1]
        module_id = self._entity("module", name, self.module, (1, line_count), module_chunk)
        self.graph = FileGraph(
            self.path, self.module, module_id, [], [], [], language=self.language,
            namespace=namespace_of(source, root),
        )  # fmt: skip

    def run(self) -> None:
        self._imports()
        for name, node in module_variables(self.language, self.root):
            self._variable(name, node, self.graph.module_id, self.module, exported=True)
        definitions = ol.outline(self.language, self.root)
        for definition in definitions:
            if not definition.owner:
                self._define(definition, self.graph.module_id, self.module, [])
        for definition in definitions:
            if definition.owner:
                self._define_owned(definition)
        self._default_export()
        for class_id, bases in self.base_work:
            self._link_bases(class_id, bases)
        top = {d.bytes for d in definitions}
        self.regions.append(_Region(self.graph.module_id, self.root, top))
        for region in self.regions:
            called = self._link_calls(region)
            self._link_reads(region, called)

    def finish(self) -> FileGraph:
        self.graph.entities = list(self._entities.values())
        self.graph.relations = list(dict.fromkeys(self.graph.relations))
        return self.graph

    # --- definitions -------------------------------------------------------------------------------

    def _imports(self) -> None:
        for binding in imports(self.language, self.root):
            entity_name = binding.local or binding.written
            import_id = self._entity("import", entity_name, binding.written, _span(binding.node))
            self._relate(self.graph.module_id, import_id, "contains")
            self.graph.module_imports.append((binding.spec, ""))
            target = ModuleAttr(binding.spec, binding.attrs)
            if self.language == "java" and binding.spec.endswith(".*"):
                self.wildcards.append(binding.spec)
            if binding.local:
                self.local[binding.local] = target
            if binding.export and binding.local:
                self.graph.exports[binding.local] = target
            elif binding.export and not binding.attrs and self.language in ("javascript", "typescript"):
                # `export * from "./x"`: a barrel file re-exports every name of x
                self.graph.star_imports.append(binding.spec)

    def _default_export(self) -> None:
        """`export default Name;` (JS/TS): the module's `default` is what Name binds, so
        `import X from "./m"` and `export { default as X } from "./m"` reach the definition."""
        if self.language not in ("javascript", "typescript"):
            return
        for node in self.root.named_children:
            value = node.child_by_field_name("value") if node.type == "export_statement" else None
            if value is not None and value.type == "identifier":
                binding = self.local.get(text(value))
                if isinstance(binding, Definition | ModuleAttr):
                    self.graph.exports.setdefault("default", binding)

    def _define(self, definition: ol.Definition, owner_id: str, prefix: str, classes: list[str]) -> None:
        if definition.kind == "function":
            self._function(definition, owner_id, prefix, classes, SELF_NAMES[self.language])
        else:
            self._class(definition, owner_id, prefix, classes)

    def _class(self, definition: ol.Definition, owner_id: str, prefix: str, outer: list[str]) -> None:
        qualified = f"{prefix}.{definition.name}"
        class_id = self._entity("class", definition.name, qualified, definition.lines)
        self._relate(owner_id, class_id, "contains")
        self.types[class_id] = "class"
        self.graph.classes.setdefault(class_id, ClassInfo())
        self.class_names[class_id] = definition.name
        if not outer:
            self._bind(definition.name, Definition(class_id, "class"))
        self.base_work.append((class_id, base_types(self.language, definition.node)))
        for name, node in class_fields(self.language, definition.node):
            self._variable(name, node, class_id, qualified, exported=False)
        classes = [class_id, *outer]
        for member in definition.members:
            self._define(member, class_id, qualified, classes)
        members = {m.bytes for m in definition.members}
        self.regions.append(_Region(class_id, definition.node, members, classes, SELF_NAMES[self.language]))

    def _function(
        self,
        definition: ol.Definition,
        owner_id: str,
        prefix: str,
        classes: list[str],
        self_names: frozenset[str],
    ) -> None:
        name = definition.name
        qualified = f"{prefix}.{name}"
        overload = 1
        if self.language == "java":  # overloads: each its own entity, its own calls
            overload = self._overloads[qualified] = self._overloads.get(qualified, 0) + 1
        function_id = self._entity("function", name, qualified, definition.lines, overload=overload)
        self._relate(owner_id, function_id, "contains")
        if classes:
            info = self.graph.classes[classes[0]]
            info.methods.setdefault(name, function_id)
            if name in CONSTRUCTOR_NAMES or (self.language == "java" and prefix.endswith(f".{name}")):
                info.methods.setdefault("__init__", function_id)  # what constructing the class runs
        else:
            self._bind(name, Definition(function_id, "function"))
        self.regions.append(_Region(function_id, definition.node, set(), classes, self_names))

    def _define_owned(self, definition: ol.Definition) -> None:
        """A Go method or a Rust impl block: methods of a type that may be defined elsewhere."""
        type_name = definition.owner
        binding = self.local.get(type_name)
        qualified = f"{self.module}.{type_name}"
        if isinstance(binding, Definition) and binding.type == "class":
            class_id = owner_id = binding.entity_id
        else:  # the type is in another file: the methods hang off the module
            # keyed IMPL_PREFIX + name; resolve_corpus merges Go ones into the type's class
            class_id, owner_id = f"{IMPL_PREFIX}{type_name}", self.graph.module_id
            self.graph.classes.setdefault(class_id, ClassInfo())
        self.class_names[class_id] = type_name
        if definition.is_impl:
            if definition.trait is not None and owner_id == class_id:
                self.base_work.append((class_id, [definition.trait]))
            for member in definition.members:
                self._function(member, owner_id, qualified, [class_id], SELF_NAMES["rust"])
            members = {m.bytes for m in definition.members}
            self.regions.append(_Region(owner_id, definition.node, members, [class_id], SELF_NAMES["rust"]))
        else:
            receiver = ol.go_receiver(definition.node)[0]
            self._function(definition, owner_id, qualified, [class_id], frozenset({receiver} - {""}))

    def _variable(self, name: str, node: Node, owner_id: str, prefix: str, exported: bool) -> None:
        if not name:
            return
        var_id = self._entity("variable", name, f"{prefix}.{name}", _span(node))
        self._relate(owner_id, var_id, "contains")
        if exported:
            self._bind(name, Definition(var_id, "variable"))

    def _bind(self, name: str, binding: Definition) -> None:
        self.local.setdefault(name, binding)
        self.graph.exports.setdefault(name, binding)

    def _entity(
        self, type_: str, name: str, qualified: str, span: tuple[int, int], chunk: str = "", overload: int = 1
    ) -> str:
        site = EntitySite(self.corpus_id, self.path, self.chunk_at)
        return record_entity(self._entities, self.types, site, type_, name, qualified, span, chunk, overload)

    def _relate(self, source_id: str, target_id: str, type_: str) -> None:
        self.graph.relations.append(Relation(source_id, target_id, type_))

    # --- references --------------------------------------------------------------------------------

    def _link_bases(self, class_id: str, bases: list[Node]) -> None:
        info = self.graph.classes[class_id]
        for base in bases:
            parts = chain(base)
            if not parts:
                info.bases.append(None)
                continue
            outcome = self._resolve(parts, _Region(class_id, base), scoped=False)
            if isinstance(outcome, str):
                info.bases.append(outcome if self.types.get(outcome) == "class" else None)
            else:
                info.bases.append(outcome if isinstance(outcome, ModuleAttr | AnyOf) else None)
            self._link(class_id, outcome, "inherits", ".".join(parts))

    def _link_calls(self, region: _Region) -> set[str]:
        """Link the region's calls; returns the names its calls start with."""
        ignored = IGNORED_CALLS.get(self.language, frozenset())
        heads: set[str] = set()
        for _node, call in calls_in(self.grammar, region.node, region.skip):
            heads.add(call.parts[0])
            if len(call.parts) == 1 and call.parts[0] in ignored:
                continue
            outcome: Outcome = None
            if call.implicit_this:
                outcome = self._implicit_method(call.parts[0], region)
            if outcome is None:
                outcome = self._resolve(call.parts, region, call.scoped)
            self._link(region.owner_id, outcome, "calls", _written(call))
        return heads

    def _link_reads(self, region: _Region, called: set[str]) -> None:
        """`references`, the fallback: a file-level definition or import the region uses other
        than by calling it (a constant, a type in a signature, a function passed as a value).
        Names the region declares itself shadow the file's; the region's own name is no use."""
        # a class's bases are `inherits` already
        bases = {
            (b.start_byte, b.end_byte)
            for cid, nodes in self.base_work
            if cid == region.owner_id
            for b in nodes
        }
        reads, declared = reads_in(self.grammar, region.node, region.skip | bases)
        for name in reads:
            if name in declared or name in called or name in region.self_names:
                continue
            binding = self.local.get(name)
            if binding is None:
                continue  # locals, builtins, other files' names: nothing to link
            outcome = self._resolve([name], region, scoped=False)
            if outcome == region.owner_id or outcome in region.class_ids:
                continue  # itself, or the class it is a member of (a Go receiver, a Rust impl)
            self._link(region.owner_id, outcome, "references", name)

    def _implicit_method(self, name: str, region: _Region) -> Outcome:
        """A bare `m()`: a method of the region's class or, for an inner class, of an enclosing
        one. A class whose bases are in other files defers, and the enclosing classes go along."""
        for index, class_id in enumerate(region.class_ids):
            found = self._method(class_id, name, skip_own=False)
            if isinstance(found, MethodLookup):
                return dataclasses.replace(found, outer=tuple(region.class_ids[index + 1 :]))
            if found is not None:
                return found
        return None

    def _resolve(self, parts: list[str], region: _Region, scoped: bool) -> Outcome:
        head, rest = parts[0], tuple(parts[1:])
        if region.class_ids and head in region.self_names:
            return self._method(region.class_ids[0], rest[0], skip_own=False) if len(rest) == 1 else None
        if region.class_ids and head == "super" and self.language != "rust" and len(rest) <= 1:
            # super.m() is the base's method; super() runs the base's constructor
            return self._method(region.class_ids[0], rest[0] if rest else "__init__", skip_own=True)
        binding = self.local.get(head)
        if isinstance(binding, ModuleAttr):
            return binding.then(rest)
        if isinstance(binding, Definition):
            if not rest:
                return binding.entity_id
            if binding.type == "class" and len(rest) == 1:
                return self._method(binding.entity_id, rest[0], skip_own=False)
            return None
        return self._unbound(parts, scoped)

    def _unbound(self, parts: list[str], scoped: bool) -> Outcome:
        """A name the file does not bind: the package's other files (Go, Java), or a Rust module path."""
        if self.language == "java" and parts[0][:1].isupper() and self.wildcards:
            # a simple type name is the package's own, else one an on-demand import brings (JLS 6.4.1)
            specs = (SAME_PACKAGE, *self.wildcards)
            return AnyOf(tuple(ModuleAttr(spec, tuple(parts)) for spec in specs))
        if self.language == "go" or (self.language == "java" and parts[0][:1].isupper()):
            return ModuleAttr(SAME_PACKAGE, tuple(parts))
        if self.language == "rust" and scoped:
            return ModuleAttr(RUST_SELF, tuple(parts))
        return None

    def _method(self, class_id: str, name: str, skip_own: bool) -> Outcome:
        found = find_method(self.graph.classes, self.types, class_id, name, skip_own, None)
        if isinstance(found, str):
            return found
        if found is None and self.language == "go" and not skip_own:
            # Go methods of a type may sit in any file of its package
            return ModuleAttr(SAME_PACKAGE, (self.class_names[class_id], name))
        return None if found is None else MethodLookup(class_id, name, skip_own)

    def _link(self, source_id: str, outcome: Outcome, kind: Kind, written: str) -> None:
        link_ref(self.graph, self.types, source_id, outcome, kind, written)


def _written(call: Call) -> str:
    return ("::" if call.scoped else ".").join(call.parts)


def _span(node: Node) -> tuple[int, int]:
    return first_line(node), last_line(node)


def _chunk_by_line(chunks: list[Chunk], line_count: int) -> list[str]:
    """For each line (index = line number), the first chunk holding it, or ""."""
    by_line = [""] * (line_count + 2)
    for chunk in sorted(chunks, key=lambda c: (c.start_line, c.end_line)):
        for line in range(chunk.start_line, min(chunk.end_line, line_count) + 1):
            if not by_line[line]:
                by_line[line] = chunk.chunk_id
    return by_line


__all__ = ["extract_tree", "namespace_of", "text"]
