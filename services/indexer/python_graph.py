"""The code graph of Python files: entities (module, class, function, variable, import) and relations.

Two steps. `extract_python` reads one file and links what that file alone decides; references that
go through an import wait in `FileGraph.pending` until `resolve` sees the whole corpus.

Resolution is conservative, so every edge is one Python would really follow: a name links only
through what binds it (a definition, an import, `self`/`cls`/`super()` inside a class). A call on
any other object (`obj.meth()`) never links to some same-named method; it is reported unresolved.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Literal

from services.indexer.pysyntax import (
    DefinitionNode,
    FunctionNode,
    definitions,
    dotted,
    first_line,
    is_package_init,
    last_line,
    module_name,
    scope_statements,
    split_lines,
)
from services.indexer.receiver_types import Dotted, attribute_types, receiver_types
from services.indexer.walker import SourceFile
from tribrid.models import Chunk, Entity, Relation, stable_id

_BUILTIN_NAMES = frozenset(dir(builtins))
# Methods of builtin types: a call `x.get()` is far more often a dict's than a corpus method's.
_BUILTIN_METHODS = frozenset(
    name for kind in (str, bytes, list, dict, set, frozenset, tuple, int, float, object) for name in dir(kind)
)
DEFAULT_INFERRED_CANDIDATES = 3  # config.IndexerConfig.inferred_max_candidates
_MAX_BINDING_HOPS = 16  # re-export chains longer than this are treated as unresolvable (and cycles)


@dataclass(frozen=True, slots=True)
class EntitySite:
    """Where a file's entities live: its corpus, its path, and the chunk holding each line."""

    corpus_id: str
    path: str
    chunk_at: list[str]  # line number -> the first chunk holding it ("" if none)


def record_entity(
    entities: dict[str, Entity],
    types: dict[str, str],
    site: EntitySite,
    type_: str,
    name: str,
    qualified: str,
    span: tuple[int, int],
    chunk: str = "",
    overload: int = 1,
) -> str:
    """Add an entity (if its id is new: a redefinition or setter keeps the first) and return its
    stable id. It points at `chunk`, else at the chunk holding its first line. `overload` n > 1
    makes the n-th overload of a name (Java) an entity of its own, with the same names."""
    parts = (qualified,) if overload == 1 else (qualified, str(overload))
    entity_id = stable_id(site.corpus_id, site.path, type_, *parts)
    if entity_id not in entities:
        entities[entity_id] = Entity(
            entity_id=entity_id,
            corpus_id=site.corpus_id,
            type=type_,
            name=name,
            qualified_name=qualified,
            file_path=site.path,
            start_line=span[0],
            end_line=span[1],
            chunk_id=chunk or (site.chunk_at[span[0]] if type_ != "module" else ""),
        )
        types[entity_id] = type_
    return entity_id


@dataclass(frozen=True, slots=True)
class UnresolvedRef:
    """A call or base class whose target is not known, e.g. `obj.unknown` or an external library."""

    source_id: str  # the entity making the reference
    name: str  # the reference as written: "helper", "obj.unknown", "np.mean", "super().run"
    kind: Literal["calls", "inherits"]
    # `m` of a call `x.m()` whose receiver's type is unknown (a local, a parameter, an attribute):
    # the corpus step may infer it by method name. "" for anything else (an external import, a base).
    method: str = ""


# --- symbolic targets: what a name refers to when only the whole corpus can tell -------------------


@dataclass(frozen=True, slots=True)
class ModuleAttr:
    """The attribute chain `attrs` read from module `module`: ("pkg.mod", ("Cls", "meth")).

    Empty attrs is the module itself. This is also how an import binds a name.
    """

    module: str
    attrs: tuple[str, ...] = ()

    def then(self, more: tuple[str, ...]) -> ModuleAttr:
        return ModuleAttr(self.module, self.attrs + more)


@dataclass(frozen=True, slots=True)
class AnyOf:
    """A free name that one of several `from m import *` modules may provide (the later import wins)."""

    candidates: tuple[ModuleAttr, ...]

    def then(self, more: tuple[str, ...]) -> AnyOf:
        return AnyOf(tuple(c.then(more) for c in self.candidates))


@dataclass(frozen=True, slots=True)
class MethodLookup:
    """`self.name` / `super().name` in a class whose bases include one from another file."""

    class_id: str
    name: str
    skip_own: bool  # super(): start at the bases
    # A Java inner class's bare `m()` may be a method of an enclosing class: tried in this order
    # (innermost first) when the class and its bases have none.
    outer: tuple[str, ...] = ()


Symbolic = ModuleAttr | AnyOf | MethodLookup


@dataclass(frozen=True, slots=True)
class Definition:
    """A name defined in this file: a class, function or variable entity."""

    entity_id: str
    type: str


Binding = Definition | ModuleAttr | AnyOf


@dataclass(frozen=True, slots=True)
class PendingRef:
    source_id: str
    target: Symbolic
    kind: Literal["calls", "inherits", "references"]
    written: str
    # `m` of `x.m()` read through x's stated class: if the corpus cannot follow the class, the call
    # is inferred by method name like any other call on a receiver of unknown type.
    method: str = ""
    # False for `C(...).m()`: when C is no corpus class it is a function's result, nothing to report.
    report: bool = True


@dataclass(slots=True)
class ClassInfo:
    methods: dict[str, str] = field(default_factory=dict)  # name -> function entity id
    bases: list[str | Symbolic | None] = field(default_factory=list)  # class id here, elsewhere, unknown


@dataclass(slots=True)
class FileGraph:
    path: str
    module: str  # dotted module name
    module_id: str  # the module entity's id
    entities: list[Entity]
    relations: list[Relation]  # everything decidable within the file
    unresolved: list[UnresolvedRef]  # calls and bases no file of the corpus can resolve
    # Inputs of the corpus step: what other files may import from this one, and what this one asks.
    exports: dict[str, Binding] = field(default_factory=dict)  # module-level names
    star_imports: list[str] = field(default_factory=list)  # modules of `from m import *`
    classes: dict[str, ClassInfo] = field(default_factory=dict)  # by class entity id
    # (module, name) of `from module import name`, (module, "") of `import module`; absolute names.
    module_imports: list[tuple[str, str]] = field(default_factory=list)
    pending: list[PendingRef] = field(default_factory=list)
    # Set by services.indexer.graph for other languages; their ModuleAttr modules and module_imports
    # are import specs as written ("./util", "crate::a::b") until graph.resolve_corpus maps them.
    language: str = "python"
    namespace: str = ""  # a Go file's directory, a Java file's package: names shared without imports
    # By function entity id: the parameters a call may name (`f(x=1)`), for documentation that
    # names them (code_mentions). Python only: the other languages have no keyword arguments.
    keywords: dict[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CorpusLinks:
    relations: list[Relation]  # imports edges and cross-file calls / inherits / references
    unresolved: list[UnresolvedRef]  # every file's unresolved refs plus pending ones that found nothing


class _Silent(Enum):
    IGNORE = "ignore"  # a builtin or a plain local: nothing to link, nothing worth reporting


class _Deferred(Enum):
    DEFER = "defer"  # the answer depends on a class in another file


Outcome = str | Symbolic | None | Literal[_Silent.IGNORE]  # entity id, wait for corpus, unknown, ignore


# --- one file ------------------------------------------------------------------------------------


def extract_python(
    corpus_id: str, source: SourceFile, chunks: list[Chunk], tree: ast.Module | None = None
) -> FileGraph:
    """Entities and relations of one Python file. Pass the tree `chunk_file` parsed to avoid a re-parse.

    An unparsable file yields only its module entity.
    """
    if tree is None:
        try:
            tree = ast.parse(source.text, filename=source.path)
        except (SyntaxError, ValueError, RecursionError):
            tree = None
    extractor = _FileExtractor(corpus_id, source, chunks)
    if tree is not None:
        extractor.run(tree)
    return extractor.finish()


@dataclass(slots=True)
class _Scope:
    """Where names are looked up: this scope's bindings, then (for class/function) the module's."""

    bindings: dict[str, Binding]
    module: dict[str, Binding] | None = None  # None: this is the module scope
    shadowed: set[str] = field(default_factory=set)  # plain locals (parameters, assignments, ...)
    class_id: str | None = None  # the class of a method, for self/cls/super()
    self_name: str | None = None  # first parameter of a method ("self", "cls")
    is_classmethod: bool = False


@dataclass(slots=True)
class _Region:
    """Code whose references belong to one entity, read in one scope."""

    owner_id: str
    roots: list[ast.AST]
    scope: _Scope
    skip: set[int] = field(default_factory=set)  # ids of definitions that are entities of their own
    # A body binds names in its scope (a decorator or annotation list does not); params: a def's arguments.
    is_body: bool = False
    params: set[str] = field(default_factory=set)
    # Bare decorators (`@d`, `@m.d`): Python calls them with the definition, so they are calls.
    decorators: list[ast.expr] = field(default_factory=list)
    receivers: dict[str, Dotted] = field(default_factory=dict)  # locals' stated classes (receiver_types)


@dataclass(slots=True)
class _Scan:
    calls: list[ast.expr] = field(default_factory=list)  # callee expressions
    loads: list[ast.expr] = field(default_factory=list)  # names and attribute chains read, not called
    stored: set[str] = field(default_factory=set)  # names bound in the region
    global_names: set[str] = field(default_factory=set)
    imports: list[ast.Import | ast.ImportFrom] = field(default_factory=list)


class _FileExtractor:
    def __init__(self, corpus_id: str, source: SourceFile, chunks: list[Chunk]) -> None:
        self.corpus_id = corpus_id
        self.path = source.path
        self.module = module_name(source.path)
        self.is_package = is_package_init(source.path)
        line_count = len(split_lines(source.text))
        self.chunk_at = _chunk_by_line(chunks, line_count)
        self.types: dict[str, str] = {}  # entity id -> type
        self._entities: dict[str, Entity] = {}
        self._done_imports: set[int] = set()
        module_chunk = next((c.chunk_id for c in chunks if c.kind == "module"), "")
        module_id = self._add_entity(
            "module", self.module.rsplit(".", 1)[-1], self.module, (1, max(1, line_count)), module_chunk
        )
        self.graph = FileGraph(self.path, self.module, module_id, [], [], [])
        self.module_receivers: dict[str, Dotted] = {}
        self.attribute_receivers: dict[str, dict[str, Dotted]] = {}  # class id -> its attributes' classes

    # entities and bindings (the file's definitions, in source order so later bindings win)

    def run(self, tree: ast.Module) -> None:
        module_scope = _Scope(self.graph.exports)
        regions: list[_Region] = []
        classes: list[tuple[ast.ClassDef, str, _Scope]] = []
        self._define(tree.body, module_scope, self.graph.module_id, self.module, None, regions, classes)
        top_level = {id(node) for node in definitions(tree.body)}
        self.module_receivers = receiver_types(None, tree.body, top_level)
        regions.append(
            _Region(
                self.graph.module_id, list(tree.body), module_scope, top_level, is_body=True,
                receivers=self.module_receivers,
            )
        )  # fmt: skip

        scans = [self._scan_region(region) for region in regions]
        for node, class_id, enclosing in classes:
            self._link_bases(node, class_id, enclosing)
        for region, scan in zip(regions, scans, strict=True):
            self._link_region(region, scan)

    def finish(self) -> FileGraph:
        self.graph.entities = list(self._entities.values())
        self.graph.relations = list(dict.fromkeys(self.graph.relations))
        return self.graph

    def _define(
        self,
        body: list[ast.stmt],
        scope: _Scope,
        owner_id: str,
        prefix: str,
        class_id: str | None,
        regions: list[_Region],
        classes: list[tuple[ast.ClassDef, str, _Scope]],
    ) -> None:
        """Entities of one module or class body, plus the regions whose references to read later."""
        for stmt in scope_statements(body):
            if isinstance(stmt, ast.ClassDef):
                self._define_class(stmt, scope, owner_id, prefix, regions, classes)
            elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                self._define_function(stmt, scope, owner_id, prefix, class_id, regions)
            elif isinstance(stmt, ast.Assign | ast.AnnAssign):
                targets: list[ast.expr] = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for name in _plain_names(targets):
                    qualified = f"{prefix}.{name}"
                    var_id = self._add_entity("variable", name, qualified, _span(stmt))
                    self._relate(owner_id, var_id, "contains")
                    scope.bindings[name] = Definition(var_id, "variable")
            elif isinstance(stmt, ast.Import | ast.ImportFrom):
                self._add_import(stmt, scope)

    def _define_class(
        self,
        node: ast.ClassDef,
        scope: _Scope,
        owner_id: str,
        prefix: str,
        regions: list[_Region],
        classes: list[tuple[ast.ClassDef, str, _Scope]],
    ) -> None:
        qualified = f"{prefix}.{node.name}"
        class_id = self._add_entity("class", node.name, qualified, (first_line(node), last_line(node)))
        self._relate(owner_id, class_id, "contains")
        scope.bindings[node.name] = Definition(class_id, "class")
        self.graph.classes.setdefault(class_id, ClassInfo())
        self.attribute_receivers[class_id] = attribute_types(node)
        classes.append((node, class_id, scope))
        # Class bodies see their own names, then the module's (not an enclosing class's).
        body_scope = _Scope({}, module=scope.module if scope.module is not None else scope.bindings)
        self._define(node.body, body_scope, class_id, qualified, class_id, regions, classes)
        members = {id(member) for member in definitions(node.body)}
        regions.append(
            _Region(class_id, [*node.decorator_list, *node.keywords], scope, decorators=node.decorator_list)
        )
        regions.append(_Region(class_id, list(node.body), body_scope, members, is_body=True))

    def _define_function(
        self,
        node: FunctionNode,
        scope: _Scope,
        owner_id: str,
        prefix: str,
        class_id: str | None,
        regions: list[_Region],
    ) -> None:
        qualified = f"{prefix}.{node.name}"
        function_id = self._add_entity("function", node.name, qualified, (first_line(node), last_line(node)))
        self._relate(owner_id, function_id, "contains")
        scope.bindings[node.name] = Definition(function_id, "function")
        if class_id is not None:
            self.graph.classes[class_id].methods[node.name] = function_id
        # Decorators, defaults and annotations are evaluated where the def is; the body in its own scope.
        header: list[ast.AST] = [*node.decorator_list, node.args]
        if node.returns is not None:
            header.append(node.returns)
        regions.append(_Region(function_id, header, scope, decorators=node.decorator_list))
        body_scope = _Scope({}, module=scope.module if scope.module is not None else scope.bindings)
        decorators = {d.id for d in node.decorator_list if isinstance(d, ast.Name)}
        receiver = class_id is not None and "staticmethod" not in decorators
        if class_id is not None:
            positional = [*node.args.posonlyargs, *node.args.args]
            if positional and receiver:
                body_scope.class_id = class_id
                body_scope.self_name = positional[0].arg
                body_scope.is_classmethod = "classmethod" in decorators
        if keywords := _keyword_names(node.args, receiver=receiver):
            self.graph.keywords[function_id] = keywords
        params = _argument_names(node.args)
        receivers = receiver_types(node.args, node.body, set())
        regions.append(
            _Region(
                function_id, list(node.body), body_scope, is_body=True, params=params, receivers=receivers
            )
        )

    def _add_import(self, node: ast.Import | ast.ImportFrom, scope: _Scope) -> None:
        """One import entity per imported name; the names it binds go into scope."""
        if id(node) in self._done_imports:
            return
        self._done_imports.add(id(node))
        if isinstance(node, ast.Import):
            self._add_plain_import(node, scope)
        elif node.module != "__future__":  # compiler directives, not dependencies
            self._add_from_import(node, scope)

    def _add_plain_import(self, node: ast.Import, scope: _Scope) -> None:
        for alias in node.names:
            self._add_import_entity(alias.asname or alias.name, alias.name, node)
            self.graph.module_imports.append((alias.name, ""))
            if alias.asname:
                scope.bindings[alias.asname] = ModuleAttr(alias.name)
            else:  # `import a.b` binds `a`; `a.b.f` is then read through it
                head = alias.name.split(".", 1)[0]
                scope.bindings[head] = ModuleAttr(head)

    def _add_from_import(self, node: ast.ImportFrom, scope: _Scope) -> None:
        base = self._import_base(node)
        # A relative import climbing above the corpus root keeps its written form, and binds nothing known.
        prefix = base if base is not None else "." * node.level + (node.module or "")
        for alias in node.names:
            joiner = "." if prefix and not prefix.endswith(".") else ""
            self._add_import_entity(alias.asname or alias.name, f"{prefix}{joiner}{alias.name}", node)
            if base is None:
                scope.shadowed.add(alias.asname or alias.name)
            elif alias.name == "*":
                self.graph.module_imports.append((base, ""))
                if scope.module is None:  # only legal at module level
                    self.graph.star_imports.append(base)
            else:
                self.graph.module_imports.append((base, alias.name))
                scope.bindings[alias.asname or alias.name] = ModuleAttr(base, (alias.name,))

    def _import_base(self, node: ast.ImportFrom) -> str | None:
        """Absolute module of a from-import; relative ones are resolved against this file's package."""
        if node.level == 0:
            return node.module or ""
        package = self.module.split(".") if self.is_package else self.module.split(".")[:-1]
        up = node.level - 1
        if up > len(package):
            return None  # climbs above the corpus root
        parts = package[: len(package) - up]
        if node.module:
            parts.append(node.module)
        return ".".join(parts)

    def _add_import_entity(self, name: str, target: str, node: ast.stmt) -> None:
        import_id = self._add_entity("import", name, target, _span(node))
        self._relate(self.graph.module_id, import_id, "contains")

    def _add_entity(
        self, type_: str, name: str, qualified: str, span: tuple[int, int], chunk: str = ""
    ) -> str:
        site = EntitySite(self.corpus_id, self.path, self.chunk_at)
        return record_entity(self._entities, self.types, site, type_, name, qualified, span, chunk)

    def _relate(self, source_id: str, target_id: str, type_: str) -> None:
        self.graph.relations.append(Relation(source_id, target_id, type_))

    # references

    def _scan_region(self, region: _Region) -> _Scan:
        scan = _scan(region.roots, region.skip, region.decorators)
        if region.is_body:
            for node in scan.imports:
                self._add_import(node, region.scope)
            bound = scan.stored | region.params
            region.scope.shadowed |= bound - scan.global_names - region.scope.bindings.keys()
        return scan

    def _link_bases(self, node: ast.ClassDef, class_id: str, scope: _Scope) -> None:
        info = self.graph.classes[class_id]
        for base in node.bases:
            expr = base.value if isinstance(base, ast.Subscript) else base  # Generic[T] -> Generic
            parts = dotted(expr)
            if parts is None:
                info.bases.append(None)
                continue
            outcome = self._resolve(parts, scope)
            if isinstance(outcome, str):
                info.bases.append(outcome if self.types.get(outcome) == "class" else None)
            elif isinstance(outcome, ModuleAttr | AnyOf):
                info.bases.append(outcome)
            else:
                info.bases.append(None)
            self._link(class_id, outcome, "inherits", ".".join(parts))

    def _link_region(self, region: _Region, scan: _Scan) -> None:
        for callee in scan.calls:
            method = _super_method(callee)
            if method is not None:
                if region.scope.class_id is not None:
                    outcome = self._method(region.scope.class_id, method, skip_own=True)
                    self._link(region.owner_id, outcome, "calls", f"super().{method}")
                continue
            parts = dotted(callee)
            if parts is not None:
                if not self._link_typed_call(region, parts):
                    self._link(region.owner_id, self._resolve(parts, region.scope), "calls", ".".join(parts))
            elif isinstance(callee, ast.Attribute) and isinstance(callee.value, ast.Call):
                self._link_constructed_call(region, callee.value.func, callee.attr)
        for expr in scan.loads:
            parts = dotted(expr)
            if parts is not None:
                self._link(region.owner_id, self._resolve(parts, region.scope), "references", ".".join(parts))

    def _link_typed_call(self, region: _Region, parts: list[str]) -> bool:
        """`x.m()` / `self.x.m()` where the code states x's class: a call of that class's `m`."""
        cls = self._receiver_class(region, parts)
        if cls is None:
            return False
        outcome = self._resolve([*cls, parts[-1]], region.scope)
        if outcome is None or outcome is _Silent.IGNORE:
            return False  # a builtin or a class without `m`: read as a receiver of unknown type
        link_ref(self.graph, self.types, region.owner_id, outcome, "calls", ".".join(parts), method=parts[-1])
        return True

    def _link_constructed_call(self, region: _Region, constructor: ast.expr, method: str) -> None:
        """`C(...).m()`: a call of class C's `m`; nothing when C is not a class."""
        parts = dotted(constructor)
        if parts is None:
            return
        outcome = self._resolve([*parts, method], region.scope)
        if isinstance(outcome, str) or isinstance(outcome, ModuleAttr | AnyOf | MethodLookup):
            written = f"{'.'.join(parts)}(...).{method}"
            link_ref(self.graph, self.types, region.owner_id, outcome, "calls", written, report=False)

    def _receiver_class(self, region: _Region, parts: list[str]) -> Dotted | None:
        """The class stated for the receiver of a call `x.m` (a local, else a module variable the
        region does not rebind) or `self.x.m` (an attribute of the method's class)."""
        scope = region.scope
        if len(parts) == 3 and scope.class_id is not None and parts[0] == scope.self_name:
            return self.attribute_receivers.get(scope.class_id, {}).get(parts[1])
        if len(parts) != 2:
            return None
        name = parts[0]
        if name in region.receivers:
            return region.receivers[name]
        if name in region.scope.shadowed or name in region.scope.bindings or region.scope.module is None:
            return None
        if isinstance(region.scope.module.get(name), Definition):
            return self.module_receivers.get(name)
        return None

    def _resolve(self, parts: list[str], scope: _Scope) -> Outcome:
        head, rest = parts[0], tuple(parts[1:])
        if scope.class_id is not None and head == scope.self_name:
            return self._self_attribute(scope, scope.class_id, rest)
        binding = _lookup(head, scope, self.graph.star_imports)
        if binding is None or binding is _Silent.IGNORE:
            return binding
        if isinstance(binding, ModuleAttr | AnyOf):
            return binding.then(rest)
        if not rest:
            return binding.entity_id
        if binding.type == "class" and len(rest) == 1:  # Class.method
            return self._method(binding.entity_id, rest[0], skip_own=False)
        return None

    def _self_attribute(self, scope: _Scope, class_id: str, rest: tuple[str, ...]) -> Outcome:
        if not rest:  # `cls(...)` in a classmethod constructs the class; a bare `self` is just a local
            return class_id if scope.is_classmethod else _Silent.IGNORE
        if len(rest) == 1:
            return self._method(class_id, rest[0], skip_own=False)
        return None  # self.items.append: an attribute of an attribute, type unknown

    def _method(self, class_id: str, name: str, skip_own: bool) -> Outcome:
        found = find_method(self.graph.classes, self.types, class_id, name, skip_own, None)
        if found is _Deferred.DEFER:
            return MethodLookup(class_id, name, skip_own)
        return found

    def _link(
        self, source_id: str, outcome: Outcome, kind: Literal["calls", "inherits", "references"], written: str
    ) -> None:
        if outcome is _Silent.IGNORE:
            return
        link_ref(self.graph, self.types, source_id, outcome, kind, written)


# --- syntax helpers --------------------------------------------------------------------------------


def _scan(roots: list[ast.AST], skip: set[int], decorators: Sequence[ast.expr] = ()) -> _Scan:
    """Calls, reads, bindings and imports in roots (pre-order, so a callee is seen before its parts).

    Bare decorators count as calls; a decorator call `@d(arg)` is already one.
    """
    scan = _Scan()
    consumed: set[int] = set()  # parts of a chain already taken whole (`a` and `a.b` of `a.b.c()`)
    called = {id(d) for d in decorators if not isinstance(d, ast.Call)}
    stack = list(reversed(roots))
    while stack:
        node = stack.pop()
        if id(node) in skip:
            continue
        if id(node) in called and isinstance(node, ast.expr):
            scan.calls.append(node)
            consumed.add(id(node))
        _scan_node(node, scan, consumed)
        stack.extend(reversed(list(ast.iter_child_nodes(node))))
    return scan


def _scan_node(node: ast.AST, scan: _Scan, consumed: set[int]) -> None:
    if isinstance(node, ast.Call):
        scan.calls.append(node.func)
        consumed.add(id(node.func))
    elif isinstance(node, ast.Attribute):
        if id(node) not in consumed and isinstance(node.ctx, ast.Load):
            scan.loads.append(node)
        consumed.add(id(node.value))
    elif isinstance(node, ast.Name):
        if not isinstance(node.ctx, ast.Load):
            scan.stored.add(node.id)
        elif id(node) not in consumed:
            scan.loads.append(node)
    elif isinstance(node, ast.arg):
        scan.stored.add(node.arg)
    elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        scan.stored.add(node.name)  # a nested definition: a local name
    elif isinstance(node, ast.Import | ast.ImportFrom):
        scan.imports.append(node)
        scan.stored.update((a.asname or a.name).split(".", 1)[0] for a in node.names)
    elif isinstance(node, ast.Global):
        scan.global_names.update(node.names)
    elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
        scan.stored.add(node.name)
    elif isinstance(node, ast.MatchMapping) and node.rest:
        scan.stored.add(node.rest)


def _super_method(callee: ast.expr) -> str | None:
    """The method name of `super().run` (or `super(Cls, self).run`), else None."""
    if (
        isinstance(callee, ast.Attribute)
        and isinstance(callee.value, ast.Call)
        and isinstance(callee.value.func, ast.Name)
        and callee.value.func.id == "super"
    ):
        return callee.attr
    return None


def _lookup(name: str, scope: _Scope, star_imports: list[str]) -> Binding | Literal[_Silent.IGNORE] | None:
    if name in scope.bindings:
        return scope.bindings[name]
    if name in scope.shadowed:
        return None  # a parameter or local variable: its value is unknown
    if scope.module is not None and name in scope.module:
        return scope.module[name]
    if name in _BUILTIN_NAMES:
        return _Silent.IGNORE
    if star_imports:
        return AnyOf(tuple(ModuleAttr(m, (name,)) for m in reversed(star_imports)))
    return None


def _plain_names(targets: list[ast.expr]) -> Iterator[str]:
    """Names assigned by `x = ...`, `a, (b, *c) = ...`, `x: int`; not attributes or subscripts."""
    for target in targets:
        if isinstance(target, ast.Name):
            yield target.id
        elif isinstance(target, ast.Tuple | ast.List):
            yield from _plain_names(target.elts)
        elif isinstance(target, ast.Starred):
            yield from _plain_names([target.value])


def _keyword_names(args: ast.arguments, *, receiver: bool) -> tuple[str, ...]:
    """The parameters a call may pass by keyword, less the receiver (`self`, `cls`: the first
    positional parameter of a method) and private names."""
    named = args.args[1:] if receiver and not args.posonlyargs else args.args
    return tuple(a.arg for a in [*named, *args.kwonlyargs] if not a.arg.startswith("_"))


def _argument_names(args: ast.arguments) -> set[str]:
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    every += [a for a in (args.vararg, args.kwarg) if a is not None]
    return {a.arg for a in every}


def _span(node: ast.stmt | DefinitionNode) -> tuple[int, int]:
    return node.lineno, last_line(node)


def _chunk_by_line(chunks: list[Chunk], line_count: int) -> list[str]:
    """For each line (index = line number), the first chunk holding it, or ""."""
    by_line = [""] * (line_count + 2)
    for chunk in chunks:
        for line in range(chunk.start_line, min(chunk.end_line, line_count) + 1):
            if not by_line[line]:
                by_line[line] = chunk.chunk_id
    return by_line


# --- shared by both steps ----------------------------------------------------------------------------


def find_method(
    classes: dict[str, ClassInfo],
    types: dict[str, str],
    class_id: str,
    name: str,
    skip_own: bool,
    resolve_base: Callable[[Symbolic], str | None] | None,
) -> str | Literal[_Deferred.DEFER] | None:
    """The method `name` of a class or, depth-first left to right, of its bases.

    Without resolve_base (one file alone), reaching a base from another file defers the answer.
    """
    seen: set[str] = set()

    def search(current: str, include_own: bool) -> str | Literal[_Deferred.DEFER] | None:
        info = classes.get(current)
        if info is None or current in seen:
            return None
        seen.add(current)
        if include_own and name in info.methods:
            return info.methods[name]
        for base in info.bases:
            if base is not None and not isinstance(base, str):
                if resolve_base is None:
                    return _Deferred.DEFER
                base = resolve_base(base)
            if base is None or types.get(base) != "class":
                continue  # a base outside the corpus (object, Exception, a library class)
            found = search(base, True)
            if found is not None:
                return found
        return None

    return search(class_id, not skip_own)


def link_ref(
    graph: FileGraph,
    types: dict[str, str],
    source_id: str,
    target: str | Symbolic | None,
    kind: Literal["calls", "inherits", "references"],
    written: str,
    method: str = "",
    report: bool = True,
) -> None:
    """Record one reference of a file: an edge when it resolved to an entity here, pending when
    only the corpus can tell, else unresolved (a read that resolves to nothing is just dropped).
    `method` and `report` are kept on a pending reference (see PendingRef)."""
    if isinstance(target, str):
        edges = edges_to(kind, source_id, target, types, graph.classes)
        if edges:
            graph.relations.extend(edges)
            return
        target = None
    if target is None and not report:
        return
    if target is None:
        if kind == "calls":
            graph.unresolved.append(UnresolvedRef(source_id, written, kind, _receiver_method(written)))
        elif kind == "inherits":
            graph.unresolved.append(UnresolvedRef(source_id, written, kind))
        return
    graph.pending.append(PendingRef(source_id, target, kind, written, method, report))


def _receiver_method(written: str) -> str:
    """The method name of an unresolved call `x.m` / `a.b.m` / `Foo::m`; "" for a plain name or super()."""
    if written.startswith("super"):
        return ""  # super().m or super.m that found nothing: a base outside the corpus
    for separator in (".", "::"):
        if separator in written:
            return written.rsplit(separator, 1)[1]
    return ""


def edges_to(
    kind: Literal["calls", "inherits", "references"],
    source_id: str,
    target_id: str,
    types: dict[str, str],
    classes: dict[str, ClassInfo],
    resolve_base: Callable[[Symbolic], str | None] | None = None,
) -> list[Relation]:
    """The relations for a reference resolved to target_id; none for a non-class base.

    Calling a class is a call of the class and of its `__init__`, its own or inherited (without
    resolve_base, one file alone, a base in another file is not followed): "who calls Console"
    means the code that writes `Console(...)`.
    """
    target_type = types.get(target_id)
    if kind == "inherits":
        return [Relation(source_id, target_id, "inherits")] if target_type == "class" else []
    if kind == "calls" and target_type == "class":
        edges = [Relation(source_id, target_id, "calls")]
        init = find_method(classes, types, target_id, "__init__", False, resolve_base)
        if isinstance(init, str):
            edges.append(Relation(source_id, init, "calls"))
        return edges
    if kind == "calls" and target_type == "function":
        return [Relation(source_id, target_id, "calls")]
    if source_id == target_id:
        return []
    return [Relation(source_id, target_id, "references")]  # a read, or a call of a variable/module


# --- the corpus step -----------------------------------------------------------------------------


def resolve(corpus_id: str, graphs: list[FileGraph]) -> list[Relation]:
    """Relations that need the whole corpus: module imports, and references through imports."""
    return resolve_refs(corpus_id, graphs).relations


def resolve_refs(
    corpus_id: str, graphs: list[FileGraph], max_inferred_candidates: int = DEFAULT_INFERRED_CANDIDATES
) -> CorpusLinks:
    """Like `resolve`, also returning every reference that stays unresolved (for `references` storage).

    An unresolved call `x.m()` on a receiver of unknown type also gets inferred call edges to the
    corpus's methods named `m` in the caller's language, if there are at most
    `max_inferred_candidates` of them (0: no inference), each with confidence 1 / their number.
    An unresolved base class gets inferred `inherits` edges the same way, to the classes with its
    name. The reference stays listed as unresolved: the edges are a guess, not a proof.
    """
    del corpus_id  # ids are already corpus-qualified; kept for a symmetric API
    index = _CorpusIndex(graphs)
    relations: list[Relation] = []
    unresolved: list[UnresolvedRef] = []
    for graph in graphs:
        for module, name in graph.module_imports:
            target = index.imported_module(module, name)
            if target is not None and target is not graph:
                relations.append(Relation(graph.module_id, target.module_id, "imports"))
        for ref in graph.pending:
            target_id = index.resolve(ref.target)
            edges = []
            if target_id is not None:
                edges = edges_to(
                    ref.kind, ref.source_id, target_id, index.types, index.classes, index.resolve
                )
            if edges:
                relations.extend(edges)
            elif ref.kind != "references" and ref.report:
                unresolved.append(UnresolvedRef(ref.source_id, ref.written, ref.kind, ref.method))
        unresolved.extend(graph.unresolved)
    inferred = infer_by_name(graphs, unresolved, max_inferred_candidates)
    proven = {(r.source_id, r.target_id, r.type) for g in graphs for r in g.relations}
    proven.update((r.source_id, r.target_id, r.type) for r in relations)
    relations.extend(r for r in inferred if (r.source_id, r.target_id, r.type) not in proven)
    return CorpusLinks(list(dict.fromkeys(relations)), unresolved)


@dataclass(frozen=True, slots=True)
class _NameIndex:
    """The corpus's definitions by (language, name): what an unresolved reference may mean."""

    language_of: dict[str, str]  # entity id -> its file's language
    methods: dict[tuple[str, str], set[str]]  # (language, method name) -> function ids
    classes: dict[tuple[str, str], set[str]]  # (language, class name) -> class ids

    @classmethod
    def of(cls, graphs: list[FileGraph]) -> _NameIndex:
        index = cls({}, {}, {})
        names = {e.entity_id: e.name for g in graphs for e in g.entities}
        for graph in graphs:
            for entity in graph.entities:
                index.language_of[entity.entity_id] = graph.language
                if entity.type == "class":
                    index.classes.setdefault((graph.language, entity.name), set()).add(entity.entity_id)
            for info in graph.classes.values():
                for method_id in info.methods.values():
                    if method_id in names:  # by the entity's own name (Go's merged impl keys differ)
                        index.methods.setdefault((graph.language, names[method_id]), set()).add(method_id)
        return index

    def candidates(self, ref: UnresolvedRef) -> tuple[Literal["calls", "inherits"], set[str]]:
        """The relation an unresolved reference would be, and the definitions it may mean."""
        language = self.language_of.get(ref.source_id, "")
        if ref.kind == "inherits":
            return "inherits", self.classes.get((language, _base_name(ref.name)), set())
        if ref.method:
            if ref.method in _BUILTIN_METHODS:
                return "calls", set()
            return "calls", self.methods.get((language, ref.method), set())
        if ref.name.isidentifier():
            # `new Inner()` / `Inner(...)` of a class no scope binds (a nested type of another
            # class, one of the same package): the classes of that name
            return "calls", self.classes.get((language, ref.name), set())
        return "calls", set()


def infer_by_name(
    graphs: list[FileGraph], unresolved: list[UnresolvedRef], max_candidates: int
) -> list[Relation]:
    """Edges inferred by name for references the scopes did not resolve (see `resolve_refs`):
    `calls` by method name for `x.m()` on a receiver of unknown type and by class name for an
    instantiation; `inherits` by class name for a base (a nested type named from a sibling, a type
    of the same package, `Outer.Inner`). In the caller's language, confidence 1 / candidates, when
    at most max_candidates share the name.

    A method name that builtin types define (`get`, `append`, `join`, ...) is left alone: most such
    calls in Python are on dicts, lists and strings, and no corpus method is their target.
    """
    if max_candidates <= 0:
        return []
    index = _NameIndex.of(graphs)
    inferred: list[Relation] = []
    for ref in unresolved:
        rel_type, found = index.candidates(ref)
        targets = found - {ref.source_id}
        if 0 < len(targets) <= max_candidates:
            confidence = 1.0 / len(targets)
            inferred.extend(
                Relation(ref.source_id, target, rel_type, inferred=True, confidence=confidence)
                for target in sorted(targets)
            )
    return inferred


def _base_name(written: str) -> str:
    """The class name a base as written ends with: `pkg.Outer.Inner<T>` -> "Inner"."""
    bare = written.split("<", 1)[0].split("[", 1)[0].strip()
    for separator in ("::", "."):
        bare = bare.rsplit(separator, 1)[-1]
    return bare if bare.isidentifier() else ""


@dataclass(frozen=True, slots=True)
class _ModuleTarget:
    name: str


class _CorpusIndex:
    def __init__(self, graphs: list[FileGraph]) -> None:
        self.types = {e.entity_id: e.type for g in graphs for e in g.entities}
        self.classes = {cid: info for g in graphs for cid, info in g.classes.items()}
        # One file per module name: a package's __init__ over a same-named .py, real code over a stub.
        self._modules: dict[str, FileGraph] = {}
        for graph in sorted(graphs, key=_module_preference):
            self._modules.setdefault(graph.module, graph)
        self._aliases = _source_root_aliases(graphs)

    def module(self, name: str) -> FileGraph | None:
        return self._modules.get(name) or self._aliases.get(name)

    def imported_module(self, module: str, name: str) -> FileGraph | None:
        """The module an import depends on: `from pkg import sub` -> pkg.sub if it is a module, else pkg."""
        submodule = self.module(f"{module}.{name}") if name else None
        return submodule or self.module(module)

    def resolve(self, target: Symbolic) -> str | None:
        """The entity a symbolic target names, or None if the corpus does not define it."""
        if isinstance(target, MethodLookup):
            for class_id in (target.class_id, *target.outer):
                found = find_method(
                    self.classes, self.types, class_id, target.name, target.skip_own, self.resolve
                )
                if isinstance(found, str):
                    return found
            return None
        if isinstance(target, AnyOf):
            return next((r for c in target.candidates if (r := self.resolve(c)) is not None), None)
        found_target = self._chain(target, set())
        if isinstance(found_target, _ModuleTarget):
            graph = self.module(found_target.name)
            return graph.module_id if graph is not None else None
        return found_target

    def _chain(self, target: ModuleAttr, seen: set[tuple[str, str]]) -> str | _ModuleTarget | None:
        current: str | _ModuleTarget | None = _ModuleTarget(target.module)
        for attr in target.attrs:
            if isinstance(current, _ModuleTarget):
                current = self._module_member(current.name, attr, seen)
            elif current is not None and self.types.get(current) == "class":
                method = find_method(self.classes, self.types, current, attr, False, self.resolve)
                current = method if isinstance(method, str) else None
            else:
                return None  # an attribute of a function or variable: unknowable
            if current is None:
                return None
        return current

    def _module_member(
        self, module: str, attr: str, seen: set[tuple[str, str]]
    ) -> str | _ModuleTarget | None:
        """`module.attr`: a name the module defines or imports (followed), else a submodule."""
        graph = self.module(module)
        if graph is not None and (module, attr) not in seen and len(seen) < _MAX_BINDING_HOPS:
            seen.add((module, attr))  # `from . import sub` in pkg/__init__ binds sub to itself
            binding = graph.exports.get(attr)
            if binding is None and graph.star_imports:
                # the last star import wins; the modules that define the name come first, so a
                # barrel of fifty (`export * from` each) does not spend the hop budget on the rest
                stars = list(reversed(graph.star_imports))
                defining = [m for m in stars if self._exports(m, attr)]
                binding = AnyOf(tuple(ModuleAttr(m, (attr,)) for m in defining or stars))
            found = self._follow(binding, seen)
            if found is not None:
                return found
        submodule = f"{module}.{attr}"
        return _ModuleTarget(submodule) if self.module(submodule) is not None else None

    def _exports(self, module: str, attr: str) -> bool:
        graph = self.module(module)
        return graph is not None and attr in graph.exports

    def _follow(self, binding: Binding | None, seen: set[tuple[str, str]]) -> str | _ModuleTarget | None:
        if binding is None:
            return None
        if isinstance(binding, Definition):
            return binding.entity_id
        if isinstance(binding, ModuleAttr):
            return self._chain(binding, seen)
        return next((r for c in binding.candidates if (r := self._chain(c, seen)) is not None), None)


def _module_preference(graph: FileGraph) -> tuple[bool, bool, str]:
    return graph.path.endswith(".pyi"), not is_package_init(graph.path), graph.path


def _source_root_aliases(graphs: list[FileGraph]) -> dict[str, FileGraph]:
    """Import names of modules under a source root: src/pkg/mod.py is importable as pkg.mod.

    A source root is a directory that is not a package itself but holds one; aliases that two
    modules would share are dropped rather than guessed.
    """
    package_dirs = {g.module.replace(".", "/") for g in graphs if is_package_init(g.path)}
    aliases: dict[str, FileGraph | None] = {}
    for graph in graphs:
        parts = graph.module.split(".")
        for depth in range(1, len(parts)):
            root, package = "/".join(parts[:depth]), "/".join(parts[: depth + 1])
            if root not in package_dirs and package in package_dirs:
                alias = ".".join(parts[depth:])
                aliases[alias] = graph if aliases.get(alias, graph) is graph else None
    return {alias: graph for alias, graph in aliases.items() if graph is not None}
