"""Map the import specs of JavaScript/TypeScript, Go, Java and Rust files to the corpus's files.

Per file, the extractor leaves `ModuleAttr(<spec as written>, attrs)`; here each spec becomes the
module name(s) of the file(s) it means, so python_graph's corpus index can follow the names.
"""

from __future__ import annotations

import dataclasses
import posixpath

from services.indexer.python_graph import (
    AnyOf,
    Binding,
    ClassInfo,
    Definition,
    FileGraph,
    ModuleAttr,
    PendingRef,
    Symbolic,
    UnresolvedRef,
)
from services.indexer.treesitter.syntax import IMPL_PREFIX, RUST_SELF, SAME_PACKAGE
from tribrid.models import Relation

_JS_FAMILY = frozenset(("javascript", "typescript"))
_JS_EXTENSIONS = (".ts", ".tsx", ".d.ts", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts")


def rust_module_path(path: str) -> tuple[str, tuple[str, ...]]:
    """(crate source root, module path) of a Rust file: src/a/mod.rs -> ("src", ("a",))."""
    parts = path.split("/")
    cut = max((i for i, p in enumerate(parts[:-1]) if p == "src"), default=-1) + 1
    root, rel = "/".join(parts[:cut]), parts[cut:]
    rel[-1] = rel[-1].removesuffix(".rs")
    if rel[-1] == "mod" or (len(rel) == 1 and rel[0] in ("lib", "main")):
        rel.pop()
    return root, tuple(rel)


class SpecLocator:
    def __init__(self, graphs: list[FileGraph]) -> None:
        self.by_path = {g.path: g for g in graphs}
        self.by_module = {g.module: g for g in graphs}
        self.by_namespace: dict[tuple[str, str], list[FileGraph]] = {}
        self.rust: dict[tuple[str, tuple[str, ...]], FileGraph] = {}
        for graph in graphs:
            if graph.language in ("go", "java"):
                self.by_namespace.setdefault((graph.language, graph.namespace), []).append(graph)
            elif graph.language == "rust":
                self.rust.setdefault(rust_module_path(graph.path), graph)
        self.go_dirs = sorted({ns for lang, ns in self.by_namespace if lang == "go"}, key=len, reverse=True)

    def locate(self, graph: FileGraph, spec: str, attrs: tuple[str, ...]) -> list[ModuleAttr]:
        """The (file module, attrs) pairs a spec and the names read from it may mean."""
        if graph.language in _JS_FAMILY:
            found = self._js_file(graph, spec)
            return [ModuleAttr(found.module, attrs)] if found is not None else []
        if graph.language == "go":
            return [ModuleAttr(g.module, attrs) for g in self._go_package(graph, spec)]
        if graph.language == "java":
            return self._java(graph, spec, attrs)
        if graph.language == "rust":
            return self._rust(graph, spec, attrs)
        return []

    def _js_file(self, graph: FileGraph, spec: str) -> FileGraph | None:
        if not spec.startswith("."):
            return None  # a package from node_modules
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(graph.path), spec))
        stem = joined.rsplit(".", 1)[0] if posixpath.splitext(joined)[1] in _JS_EXTENSIONS else joined
        candidates = [
            joined,
            *(stem + e for e in _JS_EXTENSIONS),
            *(f"{joined}/index{e}" for e in _JS_EXTENSIONS),
        ]
        return next((self.by_path[c] for c in candidates if c in self.by_path), None)

    def _go_package(self, graph: FileGraph, spec: str) -> list[FileGraph]:
        if spec == SAME_PACKAGE:
            return self.by_namespace.get(("go", graph.namespace), [])
        for directory in self.go_dirs:  # the longest directory the import path ends with
            if directory and (spec == directory or spec.endswith("/" + directory)):
                return self.by_namespace[("go", directory)]
        return []

    def _java(self, graph: FileGraph, spec: str, attrs: tuple[str, ...]) -> list[ModuleAttr]:
        if spec == SAME_PACKAGE:
            files = self.by_namespace.get(("java", graph.namespace), [])
            return [ModuleAttr(g.module, attrs) for g in files]
        if spec.endswith(".*"):
            files = self.by_namespace.get(("java", spec[:-2]), [])
            return [ModuleAttr(g.module, attrs) for g in files]
        parts = spec.split(".")
        for end in range(len(parts), 0, -1):  # com.x.Helper.method: the longest package.Class prefix
            package, cls = ".".join(parts[: end - 1]), parts[end - 1]
            for candidate in self.by_namespace.get(("java", package), []):
                if cls in candidate.exports:
                    return [ModuleAttr(candidate.module, (cls, *parts[end:], *attrs))]
        return []

    def _rust(self, graph: FileGraph, spec: str, attrs: tuple[str, ...]) -> list[ModuleAttr]:
        root, own = rust_module_path(graph.path)
        parts = [*([] if spec == RUST_SELF else spec.split("::")), *attrs]
        if not parts:
            return []
        base: tuple[str, ...]
        if parts[0] == "crate":
            base, parts, minimum = (), parts[1:], 0
        elif parts[0] in ("self", "super"):
            base = own
            while parts and parts[0] in ("self", "super"):
                base = base[:-1] if parts.pop(0) == "super" else base
            minimum = 0
        else:  # `util::f`: a child module declared with `mod util;`, else an external crate
            base, minimum = own, 1
        for end in range(len(parts), minimum - 1, -1):
            found = self.rust.get((root, base + tuple(parts[:end])))
            if found is not None:
                return [ModuleAttr(found.module, tuple(parts[end:]))]
        return []

    # --- rewriting a file's graph ---------------------------------------------------------------------

    def rewrite(
        self, graph: FileGraph, relations: list[Relation], unresolved: list[UnresolvedRef]
    ) -> FileGraph:
        """A copy of graph whose specs name modules; imports edges and dead-end refs go to the lists."""
        for spec, _ in graph.module_imports:
            for target in self.locate(graph, spec, ()):
                found = self.by_module.get(target.module)
                if found is not None and found is not graph:
                    relations.append(Relation(graph.module_id, found.module_id, "imports"))
        pending: list[PendingRef] = []
        for ref in graph.pending:
            mapped = self._target(graph, ref.target)
            if mapped is not None:
                pending.append(dataclasses.replace(ref, target=mapped))
            elif ref.kind != "references":
                unresolved.append(UnresolvedRef(ref.source_id, ref.written, ref.kind))
        exports: dict[str, Binding] = {}
        for name, binding in graph.exports.items():
            new = self._target(graph, binding) if isinstance(binding, ModuleAttr | AnyOf) else binding
            if isinstance(new, Definition | ModuleAttr | AnyOf):
                exports[name] = new
        classes = {
            cid: ClassInfo(dict(info.methods), [self._base(graph, b) for b in info.bases])
            for cid, info in graph.classes.items()
        }
        star_imports = [m.module for spec in graph.star_imports for m in self.locate(graph, spec, ())]
        return dataclasses.replace(
            graph,
            pending=pending,
            exports=exports,
            classes=classes,
            module_imports=[],
            star_imports=star_imports,
        )

    @staticmethod
    def merge_methods(graphs: list[FileGraph]) -> None:
        """Go methods declared apart from their type join the type's class (same package)."""
        classes: dict[tuple[str, str], ClassInfo] = {}
        for graph in graphs:
            for name, binding in graph.exports.items():
                if graph.language == "go" and isinstance(binding, Definition) and binding.type == "class":
                    classes.setdefault((graph.namespace, name), graph.classes[binding.entity_id])
        for graph in graphs:
            for key in [k for k in graph.classes if k.startswith(IMPL_PREFIX)]:
                info = graph.classes.pop(key)
                target = classes.get((graph.namespace, key.removeprefix(IMPL_PREFIX)))
                if target is not None and graph.language == "go":
                    for name, method_id in info.methods.items():
                        target.methods.setdefault(name, method_id)

    def _base(self, graph: FileGraph, base: str | Symbolic | None) -> str | Symbolic | None:
        return base if base is None or isinstance(base, str) else self._target(graph, base)

    def _target(self, graph: FileGraph, target: Symbolic) -> Symbolic | None:
        if isinstance(target, ModuleAttr):
            found = self.locate(graph, target.module, target.attrs)
        elif isinstance(target, AnyOf):
            found = [m for c in target.candidates for m in self.locate(graph, c.module, c.attrs)]
        else:
            return target  # MethodLookup: by class id, nothing to map
        if not found:
            return None
        return found[0] if len(found) == 1 else AnyOf(tuple(found))
