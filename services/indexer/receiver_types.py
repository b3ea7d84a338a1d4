"""The classes Python code states for its local names, so `x.m()` can follow `x`'s class.

A name's class is stated when every binding of it in a region says the same class:
- a parameter or variable annotation, `url: URL`, `url: Optional[URL]`, `url: "URL | None"`;
- an assignment from a constructor call, `url = URL(scope=scope)` (the callee is later checked to
  be a class: `x = make()` of a function states nothing).

Any other binding of the name in the region (a loop target, `with ... as x`, a tuple assignment,
`x = other`) makes its class unknown, as does a parameter without an annotation. Containers
(`list[URL]`) and unions of two classes state no single class.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import TypeGuard

from services.indexer.pysyntax import dotted

_OPTIONAL = frozenset(("Optional", "Annotated", "Final", "ClassVar"))  # X[C, ...] whose class is C

Dotted = tuple[str, ...]


def annotated_class(annotation: ast.expr | None) -> Dotted | None:
    """The one class an annotation names, as written (("datastructures", "URL")), else None."""
    if annotation is None:
        return None
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:  # a forward reference: "URL", "URL | None"
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        sides = [s for s in (annotation.left, annotation.right) if not _is_none(s)]
        return annotated_class(sides[0]) if len(sides) == 1 else None
    if isinstance(annotation, ast.Subscript):
        head = _dotted(annotation.value)
        if head is None or head[-1] not in _OPTIONAL:
            return None
        inner = annotation.slice
        if isinstance(inner, ast.Tuple):  # Annotated[C, meta]
            inner = inner.elts[0] if inner.elts else inner
        return annotated_class(inner)
    return _dotted(annotation)


def constructed_class(value: ast.expr | None) -> Dotted | None:
    """The callee of `C(...)` / `await C(...)` as written: the class, if the callee is one."""
    if isinstance(value, ast.Await):
        return None  # awaiting gives what the call's result resolves to, not the callee's class
    if isinstance(value, ast.Call):
        return _dotted(value.func)
    return None


def receiver_types(args: ast.arguments | None, roots: Iterable[ast.AST], skip: set[int]) -> dict[str, Dotted]:
    """Name -> class as written, for the names whose every binding in the region states one class."""
    stated: dict[str, set[Dotted | None]] = {}

    def state(name: str, cls: Dotted | None) -> None:
        stated.setdefault(name, set()).add(cls)

    if args is not None:
        for arg in (*args.posonlyargs, *args.args, *args.kwonlyargs):
            state(arg.arg, annotated_class(arg.annotation))
        for rest in (args.vararg, args.kwarg):
            if rest is not None:
                state(rest.arg, None)  # *args is a tuple, **kwargs a dict
    typed_targets: set[int] = set()
    stack = list(roots)
    while stack:
        node = stack.pop()
        if id(node) in skip:
            continue
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            state(node.target.id, annotated_class(node.annotation))
            typed_targets.add(id(node.target))
        elif isinstance(node, ast.Assign) and isinstance(target := node.targets[0], ast.Name):
            if len(node.targets) == 1:  # `a = b = C()` binds two names: left unknown below
                state(target.id, constructed_class(node.value))
                typed_targets.add(id(target))
        elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            if id(node) not in typed_targets:
                state(node.id, None)
        elif isinstance(node, ast.arg):
            state(node.arg, None)  # a lambda's or nested def's parameter shadows the name
        stack.extend(ast.iter_child_nodes(node))
    return _single(stated)


def _dotted(expr: ast.expr) -> Dotted | None:
    parts = dotted(expr)
    return tuple(parts) if parts is not None else None


def _is_none(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is None


def attribute_types(node: ast.ClassDef) -> dict[str, Dotted]:
    """Attribute -> class as written, for the attributes of a class whose every binding states one
    class: `attr: C` in the class body, `self.attr: C = ...`, `self.attr = C(...)` and
    `self.attr = param` of a parameter annotated `C`, in its methods."""
    stated: dict[str, set[Dotted | None]] = {}
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            stated.setdefault(stmt.target.id, set()).add(annotated_class(stmt.annotation))
        elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            positional = [*stmt.args.posonlyargs, *stmt.args.args]
            if positional and not any(_is_staticmethod(d) for d in stmt.decorator_list):
                for attr, cls in _self_bindings(positional[0].arg, stmt):
                    stated.setdefault(attr, set()).add(cls)
    return _single(stated)


def _self_bindings(
    self_name: str, method: ast.FunctionDef | ast.AsyncFunctionDef
) -> list[tuple[str, Dotted | None]]:
    """(attribute, stated class or None) for each binding of `self.attribute` in a method."""
    args = method.args
    params = {a.arg: annotated_class(a.annotation) for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    found: list[tuple[str, Dotted | None]] = []
    typed: set[int] = set()
    for node in ast.walk(method):
        if isinstance(node, ast.AnnAssign) and _is_self_attribute(node.target, self_name):
            found.append((node.target.attr, annotated_class(node.annotation)))
            typed.add(id(node.target))
        elif isinstance(node, ast.Assign) and _is_self_attribute(target := node.targets[-1], self_name):
            value = node.value
            cls = params.get(value.id) if isinstance(value, ast.Name) else constructed_class(value)
            found.append((target.attr, cls if len(node.targets) == 1 else None))
            typed.add(id(target))
        elif isinstance(node, ast.Attribute) and not isinstance(node.ctx, ast.Load) and id(node) not in typed:
            if _is_self_attribute(node, self_name):
                found.append((node.attr, None))
    return found


def _is_self_attribute(expr: ast.expr, self_name: str) -> TypeGuard[ast.Attribute]:
    return isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name) and expr.value.id == self_name


def _is_staticmethod(decorator: ast.expr) -> bool:
    return isinstance(decorator, ast.Name) and decorator.id == "staticmethod"


def _single(stated: dict[str, set[Dotted | None]]) -> dict[str, Dotted]:
    """The names all of whose bindings state the same one class."""
    found: dict[str, Dotted] = {}
    for name, classes in stated.items():
        only = next(iter(classes))
        if len(classes) == 1 and only is not None:
            found[name] = only
    return found
