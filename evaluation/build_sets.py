"""Build the evaluation sets and their corpora from installed third-party code (click + httpx).

Ground truth comes from Python's `ast` over the source files, never from TriBridRAG itself:

- docstring.jsonl  — CodeSearchNet protocol: query = first sentence of a function's docstring,
  answer = that function (its `def` line to `end_lineno`, decorators excluded), searched in a copy
  of the code with every docstring blanked out (line numbers unchanged);
- structural.jsonl — "who calls X" (by a small resolver over same-module names, imports, `self.`,
  `cls.` and `super()` methods), "subclasses of Y" (direct), "methods of class Z";
- identifier.jsonl — an exact function or class name, answer = its definition.

    .venv/bin/python -m evaluation.build_sets            # corpora under .state/eval/, sets in evals/sets/
    .venv/bin/python -m evaluation.build_sets --corpora-only
"""

from __future__ import annotations

import argparse
import ast
import importlib.metadata
import json
import random
import re
import shutil
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from evaluation import REPO_ROOT, doc_sets, pinned

PACKAGES = ("click", "httpx")
SEED = 20260522
SETS_DIR = REPO_ROOT / "evals" / "sets"
WORK_DIR = REPO_ROOT / ".state" / "eval"
# Which corpus each set is searched in: the docstring set in the docstring-stripped copy.
SET_CORPUS = {"docstring": "eval-docstring", "structural": "eval-code", "identifier": "eval-code"}
CORPUS_DIRS = {"eval-code": "code", "eval-docstring": "docstring"}

Kind = Literal["function", "method", "class"]
FuncNode = ast.FunctionDef | ast.AsyncFunctionDef
DefNode = FuncNode | ast.ClassDef


@dataclass
class Definition:
    qualname: str  # e.g. click.core.Context.invoke
    name: str
    kind: Kind
    path: str  # relative to the corpus root, e.g. click/core.py
    node: DefNode
    module: Module
    owner: Definition | None = None  # the class of a method
    methods: dict[str, Definition] = field(default_factory=dict)  # for classes

    @property
    def span(self) -> dict[str, Any]:
        end = self.node.end_lineno or self.node.lineno
        return {"path": self.path, "start_line": self.node.lineno, "end_line": end}


@dataclass
class Module:
    name: str  # dotted, e.g. click.core
    path: str
    tree: ast.Module
    lines: list[str]
    local: dict[str, str] = field(default_factory=dict)  # module-level def/class name -> qualname
    imports: dict[str, str] = field(default_factory=dict)  # bound name -> dotted target


def module_name(rel: Path) -> str:
    parts = list(rel.with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


class CodeBase:
    """Every module of the packages, their top-level functions, classes and methods, resolved."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.modules: dict[str, Module] = {}
        self.defs: dict[str, Definition] = {}
        for path in sorted(root.rglob("*.py")):
            rel = path.relative_to(root)
            text = path.read_text(encoding="utf-8")
            mod = Module(module_name(rel), rel.as_posix(), ast.parse(text), text.splitlines())
            self.modules[mod.name] = mod
        for mod in self.modules.values():
            self._collect(mod)

    def _collect(self, mod: Module) -> None:
        package = mod.name if mod.path.endswith("__init__.py") else mod.name.rpartition(".")[0]
        for stmt in _flat(mod.tree.body):
            if isinstance(stmt, ast.Import):
                for alias in stmt.names:
                    if alias.asname:
                        mod.imports[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        mod.imports[top] = top
            elif isinstance(stmt, ast.ImportFrom):
                base = stmt.module or ""
                if stmt.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - (stmt.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                for alias in stmt.names:
                    if alias.name != "*":
                        mod.imports[alias.asname or alias.name] = f"{base}.{alias.name}"
            elif isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                qual = f"{mod.name}.{stmt.name}"
                mod.local[stmt.name] = qual
                self._add(stmt, qual, mod, None)

    def _add(self, node: DefNode, qual: str, mod: Module, owner: Definition | None) -> None:
        kind: Kind = "class" if isinstance(node, ast.ClassDef) else ("method" if owner else "function")
        d = Definition(qual, node.name, kind, mod.path, node, mod, owner)
        # Conditional re-definitions (if/else, try/except): the first one wins, consistently.
        self.defs.setdefault(qual, d)
        if owner is not None and kind == "method":
            owner.methods.setdefault(node.name, d)
        if isinstance(node, ast.ClassDef):
            for stmt in _flat(node.body):
                if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    self._add(stmt, f"{qual}.{stmt.name}", mod, d)

    # --- name resolution ---------------------------------------------------------------------

    def resolve_qual(self, qual: str, depth: int = 0) -> Definition | None:
        """A dotted name to a definition, following re-exports (`from .core import X`)."""
        if qual in self.defs:
            return self.defs[qual]
        if depth > 8:
            return None
        parts = qual.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            mod = self.modules.get(".".join(parts[:cut]))
            if mod is None:
                continue
            head, rest = parts[cut], parts[cut + 1 :]
            target = mod.local.get(head) or mod.imports.get(head)
            if target is None or target == qual:
                return None
            return self.resolve_qual(".".join([target, *rest]), depth + 1)
        return None

    def resolve_expr(self, expr: ast.expr, mod: Module) -> Definition | None:
        """A Name or dotted Attribute chain in module scope to a definition."""
        dotted = _dotted(expr)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        target = mod.local.get(head) or mod.imports.get(head)
        if target is None:
            return None
        return self.resolve_qual(f"{target}.{rest}" if rest else target)

    def bases(self, cls: Definition) -> list[Definition]:
        assert isinstance(cls.node, ast.ClassDef)
        found = [self.resolve_expr(b, cls.module) for b in cls.node.bases]
        return [b for b in found if b is not None and b.kind == "class"]

    def lookup_method(self, cls: Definition, name: str, skip_self: bool = False) -> Definition | None:
        """`name` on cls or its bases (depth first, in base order), within the code base."""
        seen: set[str] = set()
        stack = [cls]
        while stack:
            c = stack.pop(0)
            if c.qualname in seen:
                continue
            seen.add(c.qualname)
            if not (skip_self and c is cls) and name in c.methods:
                return c.methods[name]
            stack.extend(self.bases(c))
        return None

    def callees(self, fn: Definition) -> set[str]:
        """Qualified names of the functions and methods fn's body calls (nested defs included)."""
        cls = fn.owner
        out: set[str] = set()
        for node in ast.walk(fn.node):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            target: Definition | None = None
            if isinstance(func, ast.Attribute) and cls is not None:
                value = func.value
                if isinstance(value, ast.Name) and value.id in ("self", "cls"):
                    target = self.lookup_method(cls, func.attr)
                elif (
                    isinstance(value, ast.Call)
                    and isinstance(value.func, ast.Name)
                    and value.func.id == "super"
                ):
                    target = self.lookup_method(cls, func.attr, skip_self=True)
            if target is None:
                target = self.resolve_expr(func, fn.module)
            if target is not None and target.kind != "class" and target.qualname != fn.qualname:
                out.add(target.qualname)
        return out

    def functions(self) -> list[Definition]:
        """Top-level functions and methods (not nested defs: those are part of their parent)."""
        return [d for d in self.defs.values() if d.kind != "class"]

    def classes(self) -> list[Definition]:
        return [d for d in self.defs.values() if d.kind == "class"]


def _flat(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements of a body, looking into if/try blocks (conditional definitions and imports)."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If):
            yield from _flat(stmt.body)
            yield from _flat(stmt.orelse)
        elif isinstance(stmt, ast.Try):
            yield from _flat(stmt.body)
            for handler in stmt.handlers:
                yield from _flat(handler.body)
            yield from _flat(stmt.orelse)
            yield from _flat(stmt.finalbody)


def _dotted(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        inner = _dotted(expr.value)
        return f"{inner}.{expr.attr}" if inner else None
    return None


# --- docstring stripping ------------------------------------------------------------------------


def _docstring_expr(node: ast.AST) -> ast.Expr | None:
    body = getattr(node, "body", None)
    if not body:
        return None
    first = body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
        if isinstance(first.value.value, str):
            return first
    return None


def strip_docstrings(text: str) -> str:
    """The source with every module/class/function docstring blanked; line numbers unchanged.

    A docstring's lines become empty lines; when it was the whole body, its last line becomes
    `...` so the code still parses. Raises ValueError if the result does not keep every definition
    on the same lines.
    """
    tree = ast.parse(text)
    lines = text.split("\n")
    for node in ast.walk(tree):
        if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        doc = _docstring_expr(node)
        if doc is None or doc.end_lineno is None or doc.end_col_offset is None:
            continue
        first, last = doc.lineno - 1, doc.end_lineno - 1
        only = len(node.body) == 1 and not isinstance(node, ast.Module)
        head = lines[first].encode("utf-8")
        tail = lines[last].encode("utf-8")
        prefix, suffix = head[: doc.col_offset], tail[doc.end_col_offset :]
        if prefix.strip() or suffix.strip():  # shares a line with code: replace in place
            if first != last:
                raise ValueError(f"multi-line docstring sharing a line with code at line {doc.lineno}")
            lines[first] = (prefix + (b"..." if only else b"") + suffix).decode("utf-8").rstrip()
            if not lines[first].strip() or lines[first].rstrip().endswith(":"):
                lines[first] = lines[first] + " ..."
            continue
        for i in range(first, last + 1):
            lines[i] = ""
        if only:  # on the last line, so the definition still ends where it did
            lines[last] = prefix.decode("utf-8") + "..."
    stripped = "\n".join(lines)
    if _def_lines(ast.parse(stripped)) != _def_lines(tree):
        raise ValueError("stripping docstrings moved a definition")
    return stripped


def _def_lines(tree: ast.Module) -> list[tuple[str, int, int | None]]:
    return [
        (n.name, n.lineno, n.end_lineno)
        for n in ast.walk(tree)
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
    ]


# --- corpora -------------------------------------------------------------------------------------


def package_dirs(pins: dict[str, str]) -> dict[str, Path]:
    return {name: pinned.package_dir(name, name, pins[name]) for name in PACKAGES}


def versions() -> dict[str, str]:
    """The installed versions (what `make eval-sets` builds the sets from)."""
    return {name: importlib.metadata.version(name) for name in PACKAGES}


def pins() -> dict[str, str]:
    """The versions the sets were built on (what `make eval` indexes), else the installed ones."""
    installed = versions()
    return {name: pinned.recorded_version(name) or installed[name] for name in PACKAGES}


def _ignore(_dir: str, names: list[str]) -> list[str]:
    return [n for n in names if n == "__pycache__" or n.endswith(".pyc")]


def materialize(work_dir: Path = WORK_DIR, at: dict[str, str] | None = None) -> dict[str, Path]:
    """Copy the packages (at these versions; default: installed) to <work>/code/ and a
    docstring-stripped copy to <work>/docstring/."""
    at = at or versions()
    code, stripped = work_dir / "code", work_dir / "docstring"
    for target in (code, stripped):
        if target.exists():
            shutil.rmtree(target)
    for name, src in package_dirs(at).items():
        shutil.copytree(src, code / name, ignore=_ignore)
        shutil.copytree(src, stripped / name, ignore=_ignore)
        for path in sorted((stripped / name).rglob("*.py")):
            path.write_text(strip_docstrings(path.read_text(encoding="utf-8")), encoding="utf-8")
    (work_dir / "versions.json").write_text(json.dumps(at, indent=1) + "\n")
    return {"eval-code": code, "eval-docstring": stripped}


def corpus_dirs(work_dir: Path = WORK_DIR) -> dict[str, Path]:
    """The corpus directories at the versions the sets were built on, (re)built when missing or
    made from other versions."""
    stamp = work_dir / "versions.json"
    current = stamp.exists() and json.loads(stamp.read_text()) == pins()
    dirs = {corpus: work_dir / sub for corpus, sub in CORPUS_DIRS.items()}
    if not current or not all(d.is_dir() for d in dirs.values()):
        return materialize(work_dir, pins())
    return dirs


# --- sets ----------------------------------------------------------------------------------------

_SENTENCE_END = re.compile(r"(?<=[.!?])\s")
_WORD = re.compile(r"[A-Za-z]")


def first_sentence(doc: str) -> str:
    paragraph = doc.strip().split("\n\n")[0]
    text = " ".join(paragraph.split())
    sentence = _SENTENCE_END.split(text, maxsplit=1)[0]
    return sentence.rstrip(".").strip()


def _code_lines(d: Definition, stripped_lines: list[str]) -> int:
    """Non-blank, non-comment lines of d's body in the docstring-stripped copy."""
    end = d.node.end_lineno or d.node.lineno
    body = stripped_lines[d.node.lineno : end]
    return sum(1 for line in body if line.strip() and not line.strip().startswith("#"))


def build_docstring(cb: CodeBase, stripped: CodeBase, rng: random.Random, n: int) -> list[dict[str, Any]]:
    candidates: list[tuple[str, Definition]] = []
    for d in cb.functions():
        doc = ast.get_docstring(d.node)
        if not doc:
            continue
        query = first_sentence(doc)
        words = query.split()
        if len(words) < 4 or not _WORD.search(query) or query.startswith((":", "..", ">>>")):
            continue
        if _code_lines(d, stripped.modules[d.module.name].lines) < 2:
            continue  # nothing but the docstring (and `...`/`pass`): no code to find
        candidates.append((query, d))
    counts = Counter(q.lower() for q, _ in candidates)
    unique = sorted(((q, d) for q, d in candidates if counts[q.lower()] == 1), key=lambda x: x[1].qualname)
    chosen = sorted(rng.sample(unique, min(n, len(unique))), key=lambda x: x[1].qualname)
    return [
        {
            "id": f"doc-{d.qualname}",
            "query": q,
            "relevant": [d.span],
            "tags": ["docstring", d.kind, d.module.name.split(".")[0]],
        }
        for q, d in chosen
    ]


CALLER_TEMPLATES = ("who calls {x}", "functions that call {x}", "where is {x} called")
SUBCLASS_TEMPLATES = ("subclasses of {x}", "classes that inherit from {x}")
METHOD_TEMPLATES = ("methods of class {x}", "what methods does {x} have")


def _display_names(defs: list[Definition]) -> dict[str, str]:
    """qualname -> the shortest unambiguous name: `name`, else `Class.name`; absent if neither is."""
    by_name = Counter(d.name for d in defs)
    by_pair = Counter(f"{d.owner.name}.{d.name}" for d in defs if d.owner is not None)
    out: dict[str, str] = {}
    for d in defs:
        if by_name[d.name] == 1:
            out[d.qualname] = d.name
        elif d.owner is not None and by_pair[f"{d.owner.name}.{d.name}"] == 1:
            out[d.qualname] = f"{d.owner.name}.{d.name}"
    return out


def build_structural(cb: CodeBase, rng: random.Random, n_each: tuple[int, int, int]) -> list[dict[str, Any]]:
    funcs = cb.functions()
    classes = cb.classes()
    fnames = _display_names(funcs)
    cnames = _display_names(classes)
    callers: dict[str, list[Definition]] = defaultdict(list)
    for fn in funcs:
        for target in cb.callees(fn):
            callers[target].append(fn)
    subclasses: dict[str, list[Definition]] = defaultdict(list)
    for cls in classes:
        for base in cb.bases(cls):
            subclasses[base.qualname].append(cls)

    def usable(x: str) -> bool:
        return not (x.startswith("__") and x.endswith("__")) and len(x) >= 4

    pools: list[tuple[str, tuple[str, ...], list[tuple[str, list[Definition]]]]] = [
        (
            "callers",
            CALLER_TEMPLATES,
            [(fnames[q], v) for q, v in sorted(callers.items()) if q in fnames and usable(fnames[q])],
        ),
        (
            "subclasses",
            SUBCLASS_TEMPLATES,
            [(cnames[q], v) for q, v in sorted(subclasses.items()) if q in cnames],
        ),
        (
            "methods",
            METHOD_TEMPLATES,
            [(cnames[c.qualname], list(c.methods.values())) for c in classes if c.qualname in cnames],
        ),
    ]
    items: list[dict[str, Any]] = []
    for (kind, templates, pool), n in zip(pools, n_each, strict=True):
        pool = [(x, answers) for x, answers in pool if 1 <= len(answers) <= 15]
        for x, answers in sorted(rng.sample(pool, min(n, len(pool))), key=lambda p: p[0]):
            template = rng.choice(templates)
            answers = sorted(answers, key=lambda d: (d.path, d.node.lineno))
            items.append(
                {
                    "id": f"{kind}-{x}",
                    "query": template.format(x=x),
                    "relevant": [a.span for a in answers],
                    "tags": ["structural", kind, template.split(" {")[0].replace(" ", "_")],
                }
            )
    return items


def build_identifier(cb: CodeBase, rng: random.Random, n_funcs: int, n_classes: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for defs, n in ((cb.functions(), n_funcs), (cb.classes(), n_classes)):
        counts = Counter(d.name for d in defs + (cb.classes() if defs[0].kind != "class" else cb.functions()))
        pool = sorted(
            (d for d in defs if counts[d.name] == 1 and len(d.name) >= 6 and not d.name.startswith("__")),
            key=lambda d: d.qualname,
        )
        for d in sorted(rng.sample(pool, min(n, len(pool))), key=lambda d: d.qualname):
            items.append(
                {
                    "id": f"ident-{d.qualname}",
                    "query": d.name,
                    "relevant": [d.span],
                    "tags": ["identifier", d.kind, "private" if d.name.startswith("_") else "public"],
                }
            )
    return items


def write_jsonl(path: Path, items: list[dict[str, Any]]) -> None:
    with path.open("w", encoding="utf-8") as out:
        for item in items:
            ordered = {k: item[k] for k in ("id", "query", "relevant", "tags")}
            out.write(json.dumps(ordered, ensure_ascii=False) + "\n")


def build(sets_dir: Path = SETS_DIR, work_dir: Path = WORK_DIR) -> dict[str, int]:
    dirs = materialize(work_dir)
    code = CodeBase(dirs["eval-code"])
    stripped = CodeBase(dirs["eval-docstring"])
    sets = {
        "docstring": build_docstring(code, stripped, random.Random(SEED), 150),
        "structural": build_structural(code, random.Random(SEED + 1), (40, 20, 20)),
        "identifier": build_identifier(code, random.Random(SEED + 2), 55, 25),
    }
    doc_questions, _, doc_versions = doc_sets.build(work_dir)
    for name, questions in doc_questions.items():
        sets[name] = doc_sets.as_items(name, questions)
    set_corpus = SET_CORPUS | doc_sets.DOC_SET_CORPUS
    sets_dir.mkdir(parents=True, exist_ok=True)
    for name, items in sets.items():
        write_jsonl(sets_dir / f"{name}.jsonl", items)
    manifest = {
        "packages": versions() | doc_versions,
        "seed": SEED,
        "corpora": {
            corpus: f".state/eval/{sub}" for corpus, sub in (CORPUS_DIRS | doc_sets.DOC_CORPUS_DIRS).items()
        },
        "sets": {name: {"corpus": set_corpus[name], "queries": len(items)} for name, items in sets.items()},
        "held_out": list(doc_sets.HELD_OUT),
    }
    (sets_dir / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return {name: len(items) for name, items in sets.items()}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sets-dir", type=Path, default=SETS_DIR)
    parser.add_argument("--work-dir", type=Path, default=WORK_DIR, help="where the corpora are written")
    parser.add_argument("--corpora-only", action="store_true", help="only (re)write the corpus copies")
    args = parser.parse_args()
    if args.corpora_only:
        for corpus, path in materialize(args.work_dir).items():
            print(f"{corpus}: {path}")
        return
    for name, count in build(args.sets_dir, args.work_dir).items():
        print(f"{name}: {count} queries -> {args.sets_dir / (name + '.jsonl')}")


if __name__ == "__main__":
    main()
