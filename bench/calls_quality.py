"""How right are our resolved `calls` edges? Compare them with an independent reference built from `ast`.

    .venv/bin/python -m bench.calls_quality [PATH ...]

PATH is a Python package directory (default: the installed `click`, `anyio` and `starlette`, then
the TypeScript and Java code bases of evaluation.lang_sets). A Python package is copied under a
temporary root so module names are real import names (click.core), then:

* reference: a small resolver written here, independent of services.indexer: calls of same-module
  functions and classes, `self.m()` / `cls.m()` / `super().m()` inside a class (inherited methods of
  corpus classes included), and names reached through `import x` / `from x import f` across corpus
  modules (re-exports followed), and decorators. Calling a class counts as calling the class and
  its `__init__` (looked up through the bases) when a corpus class in its MRO defines one.
  A call `x.m()` follows x's class where the code states it: x a parameter or local whose every
  binding is an annotation `C` (`Optional[C]`, `C | None`, `"C"`) or `x = C(...)`; `C(...).m()`;
  `self.x.m()` where the class binds `x` only so (a class body annotation, `self.x = C(...)`,
  `self.x = p` of a parameter `p: C`).
* ours: walk_corpus + chunk_file + extract_file + resolve_corpus, keeping `calls` edges whose caller
  is a function or method.

Both sides are compared as (caller qualified name, callee qualified name) pairs; precision, recall,
counts and examples of each kind of disagreement are printed.

That reference follows the same resolvable scope as the extractor, so it cannot see what the
extractor leaves out. A second, name-based reference counts every call site: each call in a
function (`f(...)`, `C(...)`, `raise E(...)`, `x.m(...)`, `a.b.m(...)`, a bare decorator) by the
name called, where the corpus defines that name. A site is found when the caller has a call edge
to a definition of that name. Proven and inferred edges are scored apart against it:

* precision: the share of edges whose callee's name is one the caller calls;
* site recall: the share of call sites found by proven edges, by inferred ones, and by either.

For the TypeScript (rxjs) and Java (java.net.http) code bases the name-based reference is the one
their eval sets use: the call sites that the TypeScript compiler API and javac's tree API report
(`f()`, `x.f()`, `new X()`), matched to our callers by file and first line.
"""

from __future__ import annotations

import argparse
import ast
import shutil
import tempfile
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from evaluation import lang_sets, unseen_sets
from evaluation.lang_sets import Extracted
from evaluation.unseen_sets import Entity as LangEntity
from services.indexer.chunker import chunk_file
from services.indexer.graph import extract_file, resolve_corpus
from services.indexer.walker import SourceFile, walk_corpus
from tribrid.config import IndexerConfig
from tribrid.models import Entity

Pair = tuple[str, str]
MAX_HOPS = 12
EXAMPLES = 8


# --- the reference ---------------------------------------------------------------------------------


@dataclass
class RefClass:
    qual: str
    module: str
    methods: dict[str, str] = field(default_factory=dict)
    bases: list[ast.expr] = field(default_factory=list)
    node: ast.ClassDef | None = None


@dataclass
class RefModule:
    name: str
    is_package: bool
    tree: ast.Module
    # name -> ("def", qual) | ("class", qual) | ("module", modname) | ("from", module, attr) | ("local", "")
    names: dict[str, tuple[str, ...]] = field(default_factory=dict)


class Reference:
    def __init__(self, root: Path) -> None:
        self.modules: dict[str, RefModule] = {}
        self.classes: dict[str, RefClass] = {}
        self.functions: set[str] = set()
        for path in sorted(root.rglob("*.py")):
            rel = path.relative_to(root).with_suffix("")
            parts = list(rel.parts)
            is_package = parts[-1] == "__init__"
            name = ".".join(parts[:-1] if is_package else parts)
            try:
                tree = ast.parse(path.read_text(encoding="utf-8"))
            except (SyntaxError, UnicodeDecodeError):
                continue
            self.modules[name] = RefModule(name, is_package, tree)
        for module in self.modules.values():
            self._collect(module, module.tree.body, module.name, module.names, None)

    def _collect(
        self,
        module: RefModule,
        body: list[ast.stmt],
        prefix: str,
        names: dict[str, tuple[str, ...]],
        cls: RefClass | None,
    ) -> None:
        for stmt in _statements(body):
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                qual = f"{prefix}.{stmt.name}"
                self.functions.add(qual)
                if cls is not None:
                    cls.methods[stmt.name] = qual
                else:
                    names[stmt.name] = ("def", qual)
            elif isinstance(stmt, ast.ClassDef):
                qual = f"{prefix}.{stmt.name}"
                ref_class = RefClass(qual, module.name, bases=list(stmt.bases), node=stmt)
                self.classes[qual] = ref_class
                if cls is None:
                    names[stmt.name] = ("class", qual)
                self._collect(module, stmt.body, qual, {}, ref_class)
            elif cls is None and isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.asname:
                        names[alias.asname] = ("module", alias.name)
                    else:
                        head = alias.name.split(".")[0]
                        names[head] = ("module", head)
            elif cls is None and isinstance(stmt, ast.ImportFrom):
                base = self._from_base(module, stmt)
                for alias in stmt.names:
                    if base is not None and alias.name != "*":
                        names[alias.asname or alias.name] = ("from", base, alias.name)
            elif cls is None and isinstance(stmt, ast.Assign | ast.AnnAssign):
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        names[target.id] = ("local", "")

    def _from_base(self, module: RefModule, stmt: ast.ImportFrom) -> str | None:
        if stmt.level == 0:
            return stmt.module or ""
        package = module.name.split(".") if module.is_package else module.name.split(".")[:-1]
        if stmt.level - 1 > len(package):
            return None
        parts = package[: len(package) - (stmt.level - 1)]
        return ".".join([*parts, stmt.module] if stmt.module else parts)

    # lookups

    def member(self, module: str, attr: str, hops: int = 0) -> tuple[str, str] | None:
        """What `module.attr` is: ("def"|"class"|"module", qualified name)."""
        found = self.modules.get(module)
        if found is not None and hops < MAX_HOPS:
            entry = found.names.get(attr)
            if entry is not None:
                resolved = self._entry(entry, hops + 1)
                if resolved is not None:
                    return resolved
        if f"{module}.{attr}" in self.modules:
            return ("module", f"{module}.{attr}")
        return None

    def _entry(self, entry: tuple[str, ...], hops: int) -> tuple[str, str] | None:
        if entry[0] in ("def", "class"):
            return entry[0], entry[1]
        if entry[0] == "module":
            return ("module", entry[1]) if entry[1] in self.modules else None
        if entry[0] == "from":
            return self.member(entry[1], entry[2], hops)
        return None

    def lookup(self, module: RefModule, name: str) -> tuple[str, str] | None:
        entry = module.names.get(name)
        return self._entry(entry, 0) if entry is not None else None

    def method(self, cls: str, name: str, skip_own: bool) -> str | None:
        seen: set[str] = set()

        def search(current: str, own: bool) -> str | None:
            info = self.classes.get(current)
            if info is None or current in seen:
                return None
            seen.add(current)
            if own and name in info.methods:
                return info.methods[name]
            for base in info.bases:
                if isinstance(base, ast.Subscript):  # Base[T]
                    base = base.value
                target = self.expr(self.modules[info.module], base)
                if target is not None and target[0] == "class":
                    hit = search(target[1], True)
                    if hit is not None:
                        return hit
            return None

        return search(cls, not skip_own)

    def expr(self, module: RefModule, node: ast.expr) -> tuple[str, str] | None:
        """What a name or attribute chain denotes at module level."""
        if isinstance(node, ast.Name):
            return self.lookup(module, node.id)
        if isinstance(node, ast.Attribute):
            owner = self.expr(module, node.value)
            if owner is None:
                return None
            if owner[0] == "module":
                return self.member(owner[1], node.attr)
            if owner[0] == "class":
                found = self.method(owner[1], node.attr, False)
                return ("def", found) if found is not None else None
        return None

    def callee(self, target: tuple[str, str]) -> list[str]:
        """What a call of the target runs: a function; a class and its `__init__` if any."""
        kind, qual = target
        if kind == "def":
            return [qual]
        if kind == "class":
            init = self.method(qual, "__init__", False)
            return [qual, init] if init else [qual]
        return []

    # calls

    def pairs(self) -> set[Pair]:
        found: set[Pair] = set()
        for module in self.modules.values():
            for caller, node, cls in _functions(module.tree.body, module.name, None):
                found.update((caller, callee) for callee in self._calls(module, node, cls))
        return found

    def _calls(
        self, module: RefModule, node: ast.FunctionDef | ast.AsyncFunctionDef, cls: str | None
    ) -> Iterator[str]:
        local_imports = self._local_imports(module, node)
        if local_imports:  # names a function imports for itself resolve like module-level imports
            module = RefModule(module.name, module.is_package, module.tree, {**module.names, **local_imports})
        locals_ = _local_names(node) - local_imports.keys()
        self_name = None
        decorators = {d.id for d in node.decorator_list if isinstance(d, ast.Name)}
        positional = [*node.args.posonlyargs, *node.args.args]
        if cls is not None and positional and "staticmethod" not in decorators:
            self_name = positional[0].arg
        typed = self._stated_classes(module, node)
        attributes = self._attribute_classes(module, cls) if self_name is not None and cls is not None else {}
        for stmt in node.body:
            for call in (n for n in ast.walk(stmt) if isinstance(n, ast.Call)):
                func = call.func
                if isinstance(func, ast.Attribute):
                    receiver = self._receiver_class(module, func.value, typed, self_name, attributes)
                    if receiver is not None:
                        yield from _listed(self.method(receiver, func.attr, False))
                        continue
                yield from self._call_target(module, func, cls, self_name, locals_)
        # Decorators run where the def is: a bare `@d` calls d, `@d(x)` calls d too.
        for decorator in node.decorator_list:
            called = [n.func for n in ast.walk(decorator) if isinstance(n, ast.Call)]
            if not isinstance(decorator, ast.Call):
                called.append(decorator)
            for func in called:
                yield from self._call_target(module, func, None, None, set())

    # receivers whose class the code states: `x: C`, `x = C(...)`, `C(...).m()`, `self.x` likewise

    def _receiver_class(
        self,
        module: RefModule,
        value: ast.expr,
        typed: dict[str, str],
        self_name: str | None,
        attributes: dict[str, str],
    ) -> str | None:
        if isinstance(value, ast.Name):
            return typed.get(value.id)
        if isinstance(value, ast.Call):
            return self._class_of(module, value.func)
        if (
            isinstance(value, ast.Attribute)
            and isinstance(value.value, ast.Name)
            and value.value.id == self_name
        ):
            return attributes.get(value.attr)
        return None

    def _class_of(self, module: RefModule, node: ast.expr | None) -> str | None:
        target = self.expr(module, node) if node is not None else None
        return target[1] if target is not None and target[0] == "class" else None

    def _stated_classes(
        self, module: RefModule, node: ast.FunctionDef | ast.AsyncFunctionDef
    ) -> dict[str, str]:
        """Parameters and locals whose every binding is `x: C` or `x = C(...)` of a corpus class."""
        seen: defaultdict[str, set[str | None]] = defaultdict(set)
        args = node.args
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
            seen[arg.arg].add(self._class_of(module, _annotated(arg.annotation)))
        for rest in (args.vararg, args.kwarg):
            if rest is not None:
                seen[rest.arg].add(None)
        bound: set[int] = set()
        for child in ast.walk(node):
            if isinstance(child, ast.AnnAssign) and isinstance(child.target, ast.Name):
                seen[child.target.id].add(self._class_of(module, _annotated(child.annotation)))
                bound.add(id(child.target))
            elif (
                isinstance(child, ast.Assign)
                and len(child.targets) == 1
                and isinstance(child.targets[0], ast.Name)
            ):
                call = child.value
                seen[child.targets[0].id].add(
                    self._class_of(module, call.func) if isinstance(call, ast.Call) else None
                )
                bound.add(id(child.targets[0]))
            elif (
                isinstance(child, ast.Name) and not isinstance(child.ctx, ast.Load) and id(child) not in bound
            ):
                seen[child.id].add(None)
            elif isinstance(child, ast.arg) and child not in (
                *args.posonlyargs,
                *args.args,
                *args.kwonlyargs,
            ):
                seen[child.arg].add(None)
        return _one_each(seen)

    def _attribute_classes(self, module: RefModule, cls: str) -> dict[str, str]:
        """A class's attributes bound only as `attr: C` (class body), `self.attr: C = ...`,
        `self.attr = C(...)` or `self.attr = p` of a parameter `p: C`."""
        node = self.classes[cls].node
        seen: defaultdict[str, set[str | None]] = defaultdict(set)
        for stmt in node.body if node is not None else []:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                seen[stmt.target.id].add(self._class_of(module, _annotated(stmt.annotation)))
            if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            positional = [*stmt.args.posonlyargs, *stmt.args.args]
            if not positional or any(
                isinstance(d, ast.Name) and d.id == "staticmethod" for d in stmt.decorator_list
            ):
                continue
            me = positional[0].arg
            params = {
                a.arg: a.annotation for a in (*stmt.args.posonlyargs, *stmt.args.args, *stmt.args.kwonlyargs)
            }
            bound: set[int] = set()
            for child in ast.walk(stmt):
                target: ast.expr | None = child.target if isinstance(child, ast.AnnAssign) else None
                if isinstance(child, ast.Assign) and len(child.targets) == 1:
                    target = child.targets[0]
                if (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == me
                ):
                    bound.add(id(target))
                    if isinstance(child, ast.AnnAssign):
                        seen[target.attr].add(self._class_of(module, _annotated(child.annotation)))
                    elif isinstance(child, ast.Assign) and isinstance(child.value, ast.Call):
                        seen[target.attr].add(self._class_of(module, child.value.func))
                    elif isinstance(child, ast.Assign) and isinstance(child.value, ast.Name):
                        seen[target.attr].add(self._class_of(module, _annotated(params.get(child.value.id))))
                    else:
                        seen[target.attr].add(None)
                elif (
                    isinstance(child, ast.Attribute)
                    and isinstance(child.value, ast.Name)
                    and child.value.id == me
                    and not isinstance(child.ctx, ast.Load)
                    and id(child) not in bound
                ):
                    seen[child.attr].add(None)
        return _one_each(seen)

    def _local_imports(
        self, module: RefModule, node: ast.FunctionDef | ast.AsyncFunctionDef
    ) -> dict[str, tuple[str, ...]]:
        found: dict[str, tuple[str, ...]] = {}
        for child in ast.walk(node):
            if isinstance(child, ast.ImportFrom):
                base = self._from_base(module, child)
                for alias in child.names:
                    if base is not None and alias.name != "*":
                        found[alias.asname or alias.name] = ("from", base, alias.name)
            elif isinstance(child, ast.Import):
                for alias in child.names:
                    head = alias.name.split(".")[0]
                    found[alias.asname or head] = ("module", alias.name if alias.asname else head)
        return found

    def _call_target(
        self, module: RefModule, func: ast.expr, cls: str | None, self_name: str | None, locals_: set[str]
    ) -> list[str]:
        if isinstance(func, ast.Name) and cls is not None and func.id == self_name == "cls":
            return self.callee(("class", cls))  # cls(...) in a classmethod constructs the class
        if isinstance(func, ast.Attribute) and cls is not None:
            value = func.value
            if isinstance(value, ast.Name) and value.id == self_name:
                return _listed(self.method(cls, func.attr, False))
            if isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "super":
                return _listed(self.method(cls, func.attr, True))
        head = func
        while isinstance(head, ast.Attribute):
            head = head.value
        if not isinstance(head, ast.Name) or head.id in locals_:
            return []
        target = self.expr(module, func)
        return self.callee(target) if target is not None else []


def _annotated(annotation: ast.expr | None) -> ast.expr | None:
    """The class expression of `C`, `"C"`, `Optional[C]`, `C | None`; None for anything else."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(annotation, ast.Subscript) and isinstance(annotation.value, ast.Name | ast.Attribute):
        head = annotation.value.id if isinstance(annotation.value, ast.Name) else annotation.value.attr
        return _annotated(annotation.slice) if head == "Optional" else None
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        sides = [
            x
            for x in (annotation.left, annotation.right)
            if not (isinstance(x, ast.Constant) and x.value is None)
        ]
        return _annotated(sides[0]) if len(sides) == 1 else None
    return annotation if isinstance(annotation, ast.Name | ast.Attribute) else None


def _one_each(seen: dict[str, set[str | None]]) -> dict[str, str]:
    return {
        name: cls
        for name, found in seen.items()
        if len(found) == 1 and (cls := next(iter(found))) is not None
    }


def _listed(qualified: str | None) -> list[str]:
    return [qualified] if qualified else []


def _statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If):
            yield from _statements(stmt.body + stmt.orelse)
        elif isinstance(stmt, ast.Try):
            blocks = stmt.body + [s for h in stmt.handlers for s in h.body] + stmt.orelse + stmt.finalbody
            yield from _statements(blocks)
        elif isinstance(stmt, ast.With):
            yield from _statements(stmt.body)


def _functions(
    body: list[ast.stmt], prefix: str, cls: str | None
) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef, str | None]]:
    for stmt in _statements(body):
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            # Conditional redefinitions (`if WIN: def f` / `else: def f`) are one callable name: both count.
            yield f"{prefix}.{stmt.name}", stmt, cls
        elif isinstance(stmt, ast.ClassDef):
            qual = f"{prefix}.{stmt.name}"
            yield from _functions(stmt.body, qual, qual)


def _local_names(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Parameters and names bound anywhere in the function (they shadow module-level names)."""
    args = node.args
    names = {a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]}
    names.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
    global_names: set[str] = set()
    for child in ast.walk(node):
        if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Store):
            names.add(child.id)
        elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and child is not node:
            names.add(child.name)
        elif isinstance(child, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in child.names)
        elif isinstance(child, ast.Global):
            global_names.update(child.names)
        elif isinstance(child, ast.arg):
            names.add(child.arg)
    return names - global_names


# --- the name-based reference ------------------------------------------------------------------


def call_sites(root: Path) -> tuple[set[Pair], dict[str, set[str]]]:
    """(caller, name called) for every call site whose name the corpus defines, and each name's
    definitions (qualified names: functions, methods, classes and the `__init__` they run)."""
    reference = Reference(root)
    defined: dict[str, set[str]] = {}
    for qual in reference.functions:
        defined.setdefault(qual.rsplit(".", 1)[-1], set()).add(qual)
    for qual in reference.classes:
        init = reference.method(qual, "__init__", False)
        defined.setdefault(qual.rsplit(".", 1)[-1], set()).update({qual, init} if init else {qual})
    sites: set[Pair] = set()
    for module in reference.modules.values():
        for caller, node, _cls in _functions(module.tree.body, module.name, None):
            called = [n.func for stmt in node.body for n in ast.walk(stmt) if isinstance(n, ast.Call)]
            called += [n.func for d in node.decorator_list for n in ast.walk(d) if isinstance(n, ast.Call)]
            called += [d for d in node.decorator_list if not isinstance(d, ast.Call)]
            for func in called:
                name = (
                    func.id
                    if isinstance(func, ast.Name)
                    else func.attr
                    if isinstance(func, ast.Attribute)
                    else ""
                )
                if name in defined:
                    sites.add((caller, name))
    return sites, defined


@dataclass(frozen=True)
class NameScore:
    """Proven and inferred call edges against every call site by name."""

    name: str
    sites: set[Pair]  # (caller, name called)
    defined: dict[str, set[str]]  # name -> its definitions
    proven: set[Pair]
    inferred: set[Pair]
    # our edges whose caller the reference does not define (left out of both scores)
    unmatched: int = 0

    def precision(self, edges: set[Pair]) -> float:
        agreed = [e for e in edges if any((e[0], name) in self.sites for name in _called_as(e[1]))]
        return len(agreed) / len(edges) if edges else 1.0

    def found(self, edges: set[Pair]) -> set[Pair]:
        return {(caller, name) for caller, callee in edges for name in _called_as(callee)} & self.sites

    def recall(self, edges: set[Pair]) -> float:
        return len(self.found(edges)) / len(self.sites) if self.sites else 1.0


CONSTRUCTORS = ("__init__", "constructor")  # a Java constructor is named after its class already


def _called_as(qualified: str) -> tuple[str, ...]:
    """The names a callee is called by: its own, and `Cls` for `pkg.Cls.__init__` (`Cls(...)`) or
    a JS/TS `Cls.constructor` (`new Cls(...)`)."""
    parts = qualified.split(".")
    return (parts[-1], parts[-2]) if parts[-1] in CONSTRUCTORS and len(parts) > 1 else (parts[-1],)


# --- ours ---------------------------------------------------------------------------------------


def ours(root: Path) -> set[Pair]:
    return ours_split(root)[0]


def our_calls(root: Path) -> list[tuple[Entity, Entity, bool]]:
    """(caller, callee, inferred) for our `calls` edges whose caller is a function or method."""
    cfg = IndexerConfig()
    graphs = []
    for item in walk_corpus(root, cfg):
        if isinstance(item, SourceFile):
            graph = extract_file("bench", item, chunk_file("bench", item, cfg))
            if graph is not None:
                graphs.append(graph)
    entities = {e.entity_id: e for g in graphs for e in g.entities}
    relations = [r for g in graphs for r in g.relations] + resolve_corpus("bench", graphs).relations
    return [
        (entities[r.source_id], entities[r.target_id], r.inferred)
        for r in relations
        if r.type == "calls" and entities[r.source_id].type == "function"
    ]


def ours_split(root: Path) -> tuple[set[Pair], set[Pair]]:
    """Our proven and inferred call edges (an inferred pair that is also proven counts as proven)."""
    found: dict[bool, set[Pair]] = {False: set(), True: set()}
    for caller, callee, inferred in our_calls(root):
        found[inferred].add((caller.qualified_name, callee.qualified_name))
    return found[False], found[True] - found[False]


# --- TypeScript and Java: the reference is their own parser's call sites --------------------------


def tool_name_score(name: str, root: Path, extracted: Extracted) -> NameScore:
    """Our edges against the call sites by name that the TypeScript compiler API or javac's tree
    API report (evaluation.lang_sets). Our caller is the reference's function in the same file
    whose first line is within 2 of ours (the nearest); callers the reference does not define
    (nested functions, object-literal methods) are counted apart."""
    functions = [d for d in extracted.defs if d.kind == "function"]
    defined: dict[str, set[str]] = defaultdict(set)
    for definition in extracted.defs:
        if definition.name.isidentifier():  # constructors are "<init>": called by their class's name
            defined[definition.name].add(definition.qualname)
    sites = {
        (fn.qualname, called)
        for fn in functions
        for called in extracted.calls[fn.qualname]
        if called in defined
    }
    by_file: dict[str, list[LangEntity]] = defaultdict(list)
    for fn in functions:
        by_file[fn.path].append(fn)

    def reference_caller(ours: Entity) -> str | None:
        near = [fn for fn in by_file[ours.file_path] if abs(fn.start - ours.start_line) <= 2]
        return (
            min(near, key=lambda fn: (abs(fn.start - ours.start_line), fn.start)).qualname if near else None
        )

    found: dict[bool, set[Pair]] = {False: set(), True: set()}
    unmatched = 0
    for caller, callee, inferred in our_calls(root):
        key = reference_caller(caller)
        if key is None:
            unmatched += 1
        else:
            found[inferred].add((key, callee.qualified_name))
    return NameScore(name, sites, dict(defined), found[False], found[True] - found[False], unmatched)


# --- report -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Score:
    name: str
    reference: set[Pair]
    extracted: set[Pair]

    @property
    def agreed(self) -> set[Pair]:
        return self.reference & self.extracted

    @property
    def precision(self) -> float:
        return len(self.agreed) / len(self.extracted) if self.extracted else 1.0

    @property
    def recall(self) -> float:
        return len(self.agreed) / len(self.reference) if self.reference else 1.0


def measure(package: Path) -> tuple[Score, NameScore]:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        shutil.copytree(package, root / package.name, ignore=shutil.ignore_patterns("__pycache__"))
        proven, inferred = ours_split(root)
        sites, defined = call_sites(root)
        return (
            Score(package.name, Reference(root).pairs(), proven),
            NameScore(package.name, sites, defined, proven, inferred),
        )


def report_by_name(score: NameScore) -> str:
    both = score.proven | score.inferred
    missed = sorted(score.sites - score.found(both))
    return "\n".join(
        [
            f"-- {score.name}: every call site by name ({len(score.sites)} sites)",
            f"proven:   edges {len(score.proven):5d}  precision {score.precision(score.proven):.3f}  "
            f"site recall {score.recall(score.proven):.3f}",
            f"inferred: edges {len(score.inferred):5d}  precision {score.precision(score.inferred):.3f}  "
            f"site recall {score.recall(score.inferred):.3f}",
            f"both:     edges {len(both):5d}  precision {score.precision(both):.3f}  "
            f"site recall {score.recall(both):.3f}",
            *(
                [f"edges from callers the reference does not define (left out): {score.unmatched}"]
                if score.unmatched
                else []
            ),
            f"sites found by no edge ({len(missed)}):",
            *(
                f"  {caller} -> {name} ({len(score.defined[name])} definitions)"
                for caller, name in missed[:EXAMPLES]
            ),
        ]
    )


def report(score: Score) -> str:
    only_ours = sorted(score.extracted - score.reference)
    only_ref = sorted(score.reference - score.extracted)
    lines = [
        f"== {score.name}",
        f"reference calls: {len(score.reference)}  extracted calls: {len(score.extracted)}  "
        f"agreed: {len(score.agreed)}",
        f"precision: {score.precision:.3f}  recall: {score.recall:.3f}",
        f"only extracted ({len(only_ours)}):",
        *(f"  {caller} -> {callee}" for caller, callee in only_ours[:EXAMPLES]),
        f"only in reference ({len(only_ref)}):",
        *(f"  {caller} -> {callee}" for caller, callee in only_ref[:EXAMPLES]),
    ]
    return "\n".join(lines)


def default_packages() -> list[Path]:
    """click (tuned on) and the Python unseen-set libraries."""
    import click

    return [Path(click.__file__).parent, *(unseen_sets.package_dir(lib) for lib in unseen_sets.LIBRARIES)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0] if __doc__ else None)
    parser.add_argument(
        "paths",
        nargs="*",
        type=Path,
        help="Python package directories (default: click, the Python unseen libraries, then the "
        "TypeScript and Java unseen code bases)",
    )
    args = parser.parse_args(argv)
    for path in args.paths or default_packages():
        scoped, by_name = measure(path.resolve())
        print(report(scoped))
        print(report_by_name(by_name))
    if not args.paths:
        dirs = lang_sets.corpus_dirs()
        for code_base in lang_sets.CODE_BASES:
            root = dirs[code_base.corpus]
            print(f"== {code_base.corpus} (reference: {code_base.reference})")
            print(
                report_by_name(
                    tool_name_score(code_base.corpus, root, code_base.parse(root, lang_sets.WORK_DIR))
                )
            )


if __name__ == "__main__":
    main()
