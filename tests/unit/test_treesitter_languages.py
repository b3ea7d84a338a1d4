"""Tree-sitter chunking and code graphs of JavaScript, TypeScript, Go, Java and Rust, on exact expectations.

Each language has a two-file fixture under tests/fixtures/langs/<language>/ so imports and calls
cross files. Entities are (type, qualified name, start, end); edges (type, source, target) by
qualified name. No database needed.
"""

from __future__ import annotations

import hashlib
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from services.indexer.chunker import ChunkResult, chunk_file
from services.indexer.graph import extract_file, resolve_corpus
from services.indexer.python_graph import FileGraph
from services.indexer.walker import SourceFile, detect_language, walk_corpus
from tests import FIXTURES
from tribrid.config import IndexerConfig
from tribrid.models import Relation, stable_id

CORPUS = "c"
LANGS = FIXTURES / "langs"

EntityKey = tuple[str, str, int, int]
EdgeKey = tuple[str, str, str]


@dataclass(frozen=True)
class Expected:
    entities: set[EntityKey]
    chunks: list[tuple[str, str, str, int, int]]
    contains: set[EdgeKey]
    edges: set[EdgeKey]  # every other relation type
    unresolved: set[tuple[str, str, str]]


@dataclass
class Indexed:
    files: list[SourceFile]
    results: dict[str, ChunkResult]
    graphs: list[FileGraph]
    entities: set[EntityKey]
    edges: set[EdgeKey]
    unresolved: set[tuple[str, str, str]]


def index(root: Path, cfg: IndexerConfig | None = None) -> Indexed:
    cfg = cfg or IndexerConfig()
    files = [f for f in walk_corpus(root, cfg) if isinstance(f, SourceFile)]
    results = {f.path: chunk_file(CORPUS, f, cfg) for f in files}
    graphs = [g for f in files if (g := extract_file(CORPUS, f, results[f.path])) is not None]
    names = {e.entity_id: e.qualified_name for g in graphs for e in g.entities}
    links = resolve_corpus(CORPUS, graphs)
    relations = [r for g in graphs for r in g.relations] + links.relations
    return Indexed(
        files,
        results,
        graphs,
        {(e.type, e.qualified_name, e.start_line, e.end_line) for g in graphs for e in g.entities},
        {(_edge_type(r), names[r.source_id], names[r.target_id]) for r in relations},
        {(names[u.source_id], u.name, u.kind) for u in links.unresolved},
    )


def _edge_type(relation: Relation) -> str:
    """The relation's type; an inferred call also shows its confidence: "calls inferred 0.50"."""
    return f"{relation.type} inferred {relation.confidence:.2f}" if relation.inferred else relation.type


def source(path: str, code: str) -> SourceFile:
    text = textwrap.dedent(code).lstrip("\n")
    return SourceFile(path, text, detect_language(path) or "text", hashlib.sha256(text.encode()).hexdigest())


EXPECTED: dict[str, Expected] = {
    "javascript": Expected(
        entities={
            ("module", "lib/format", 1, 20),
            ("variable", "lib/format.DEFAULT_WIDTH", 2, 2),
            ("function", "lib/format.pad", 4, 6),
            ("function", "lib/format.upper", 8, 8),
            ("class", "lib/format.Formatter", 10, 20),
            ("variable", "lib/format.Formatter.indent", 11, 11),
            ("function", "lib/format.Formatter.format", 13, 15),
            ("function", "lib/format.Formatter.line", 17, 19),
            ("import", "./format.js.Formatter", 1, 1),
            ("import", "./format.js.upper", 1, 1),
            ("module", "lib/report", 1, 21),
            ("import", "./format", 2, 2),
            ("import", "node:path.default", 3, 3),
            ("class", "lib/report.Report", 5, 15),
            ("function", "lib/report.Report.constructor", 6, 9),
            ("function", "lib/report.Report.render", 11, 14),
            ("function", "lib/report.build", 17, 19),
        },
        chunks=[
            ("lib/format.js", "module", "lib/format", 1, 2),
            ("lib/format.js", "function", "lib/format.pad", 4, 6),
            ("lib/format.js", "function", "lib/format.upper", 8, 8),
            ("lib/format.js", "class", "lib/format.Formatter", 10, 11),
            ("lib/format.js", "function", "lib/format.Formatter.format", 13, 15),
            ("lib/format.js", "function", "lib/format.Formatter.line", 17, 19),
            ("lib/report.mjs", "module", "lib/report", 1, 3),
            ("lib/report.mjs", "class", "lib/report.Report", 5, 5),
            ("lib/report.mjs", "function", "lib/report.Report.constructor", 6, 9),
            ("lib/report.mjs", "function", "lib/report.Report.render", 11, 14),
            ("lib/report.mjs", "function", "lib/report.build", 17, 19),
            ("lib/report.mjs", "module", "lib/report", 21, 21),
        ],
        contains={
            ("contains", "lib/format", "lib/format.DEFAULT_WIDTH"),
            ("contains", "lib/format", "lib/format.Formatter"),
            ("contains", "lib/format", "lib/format.pad"),
            ("contains", "lib/format", "lib/format.upper"),
            ("contains", "lib/format.Formatter", "lib/format.Formatter.format"),
            ("contains", "lib/format.Formatter", "lib/format.Formatter.indent"),
            ("contains", "lib/format.Formatter", "lib/format.Formatter.line"),
            ("contains", "lib/report", "./format"),
            ("contains", "lib/report", "./format.js.Formatter"),
            ("contains", "lib/report", "./format.js.upper"),
            ("contains", "lib/report", "lib/report.Report"),
            ("contains", "lib/report", "lib/report.build"),
            ("contains", "lib/report", "node:path.default"),
            ("contains", "lib/report.Report", "lib/report.Report.constructor"),
            ("contains", "lib/report.Report", "lib/report.Report.render"),
        },
        edges={
            ("references", "lib/format.pad", "lib/format.DEFAULT_WIDTH"),
            ("calls", "lib/format.Formatter.format", "lib/format.Formatter.line"),
            ("calls", "lib/format.Formatter.line", "lib/format.pad"),
            ("calls", "lib/report", "lib/report.build"),
            ("calls", "lib/report.Report.render", "lib/format.Formatter.format"),
            ("calls", "lib/report.Report.render", "lib/format.pad"),
            ("calls", "lib/report.Report.render", "lib/format.upper"),
            ("calls", "lib/report.build", "lib/report.Report"),  # new Report(title)
            ("calls", "lib/report.build", "lib/report.Report.constructor"),
            ("imports", "lib/report", "lib/format"),
            ("inherits", "lib/report.Report", "lib/format.Formatter"),
        },
        unresolved={
            ("lib/format.Formatter.format", "lines.map", "calls"),
            ("lib/format.pad", "text.padEnd", "calls"),
            ("lib/format.upper", "text.toUpperCase", "calls"),
            ("lib/report.Report.constructor", "super", "calls"),
            ("lib/report.Report.render", "path.basename", "calls"),
        },
    ),
    "typescript": Expected(
        entities={
            ("class", "src/shapes.Shape", 1, 4),
            ("module", "src/shapes", 1, 23),
            ("variable", "src/shapes.Shape.name", 2, 2),
            ("class", "src/shapes.Unit", 6, 9),
            ("class", "src/shapes.BaseShape", 11, 19),
            ("variable", "src/shapes.BaseShape.name", 12, 12),
            ("function", "src/shapes.BaseShape.describe", 16, 18),
            ("function", "src/shapes.round", 21, 23),
            ("import", "./shapes.BaseShape", 1, 1),
            ("import", "./shapes.round", 1, 1),
            ("module", "src/view", 1, 24),
            ("import", "react.default", 2, 2),
            ("variable", "src/view.SIDES", 4, 4),
            ("class", "src/view.Square", 6, 16),
            ("variable", "src/view.Square.name", 7, 7),
            ("function", "src/view.Square.constructor", 9, 11),
            ("function", "src/view.Square.area", 13, 15),
            ("function", "src/view.ShapeView", 18, 20),
            ("function", "src/view.perimeter", 22, 24),
        },
        chunks=[
            ("src/shapes.ts", "class", "src/shapes.Shape", 1, 4),
            ("src/shapes.ts", "class", "src/shapes.Unit", 6, 9),
            ("src/shapes.ts", "class", "src/shapes.BaseShape", 11, 14),
            ("src/shapes.ts", "function", "src/shapes.BaseShape.describe", 16, 18),
            ("src/shapes.ts", "function", "src/shapes.round", 21, 23),
            ("src/view.tsx", "module", "src/view", 1, 4),
            ("src/view.tsx", "class", "src/view.Square", 6, 7),
            ("src/view.tsx", "function", "src/view.Square.constructor", 9, 11),
            ("src/view.tsx", "function", "src/view.Square.area", 13, 15),
            ("src/view.tsx", "function", "src/view.ShapeView", 18, 20),
            ("src/view.tsx", "function", "src/view.perimeter", 22, 24),
        ],
        contains={
            ("contains", "src/shapes", "src/shapes.BaseShape"),
            ("contains", "src/shapes", "src/shapes.Shape"),
            ("contains", "src/shapes", "src/shapes.Unit"),
            ("contains", "src/shapes", "src/shapes.round"),
            ("contains", "src/shapes.BaseShape", "src/shapes.BaseShape.describe"),
            ("contains", "src/shapes.BaseShape", "src/shapes.BaseShape.name"),
            ("contains", "src/shapes.Shape", "src/shapes.Shape.name"),
            ("contains", "src/view", "./shapes.BaseShape"),
            ("contains", "src/view", "./shapes.round"),
            ("contains", "src/view", "react.default"),
            ("contains", "src/view", "src/view.SIDES"),
            ("contains", "src/view", "src/view.ShapeView"),
            ("contains", "src/view", "src/view.Square"),
            ("contains", "src/view", "src/view.perimeter"),
            ("contains", "src/view.Square", "src/view.Square.area"),
            ("contains", "src/view.Square", "src/view.Square.constructor"),
            ("contains", "src/view.Square", "src/view.Square.name"),
        },
        edges={
            ("references", "src/view.perimeter", "src/view.Square"),
            ("references", "src/view.ShapeView", "src/shapes.BaseShape"),
            ("calls", "src/shapes.BaseShape.describe", "src/shapes.round"),
            ("calls", "src/view.Square.area", "src/shapes.round"),
            ("calls", "src/view.perimeter", "src/shapes.round"),
            # this.area(), props.shape.describe(), square.area(): receivers of unknown type, by name
            ("calls inferred 1.00", "src/shapes.BaseShape.describe", "src/view.Square.area"),
            ("calls inferred 1.00", "src/view.ShapeView", "src/shapes.BaseShape.describe"),
            ("calls inferred 1.00", "src/view.perimeter", "src/view.Square.area"),
            ("imports", "src/view", "src/shapes"),
            ("inherits", "src/shapes.BaseShape", "src/shapes.Shape"),
            ("inherits", "src/view.Square", "src/shapes.BaseShape"),
        },
        unresolved={
            ("src/shapes.BaseShape.describe", "this.area", "calls"),
            ("src/shapes.round", "Math.round", "calls"),
            ("src/view.ShapeView", "props.shape.describe", "calls"),
            ("src/view.Square.constructor", "super", "calls"),
            ("src/view.perimeter", "square.area", "calls"),
        },
    ),
    "go": Expected(
        entities={
            ("module", "cmd/main", 1, 22),
            ("import", "fmt", 4, 4),
            ("import", "example.com/kv/store", 6, 6),
            ("class", "cmd/main.Getter", 9, 11),
            ("function", "cmd/main.main", 13, 17),
            ("function", "cmd/main.lookup", 19, 22),
            ("module", "store/reset", 1, 8),
            ("function", "store/reset.Store.reset", 3, 6),
            ("function", "store/reset.logReset", 8, 8),
            ("module", "store/store", 1, 40),
            ("import", "errors", 3, 3),
            ("variable", "store/store.ErrMissing", 6, 6),
            ("variable", "store/store.maxKeys", 8, 8),
            ("class", "store/store.Base", 10, 12),
            ("variable", "store/store.Base.name", 11, 11),
            ("function", "store/store.Base.Name", 14, 16),
            ("class", "store/store.Store", 18, 21),
            ("variable", "store/store.Store.items", 20, 20),
            ("function", "store/store.New", 23, 25),
            ("function", "store/store.Store.Get", 27, 33),
            ("function", "store/store.Store.Put", 35, 40),
        },
        chunks=[
            ("cmd/main.go", "module", "cmd/main", 1, 7),
            ("cmd/main.go", "class", "cmd/main.Getter", 9, 11),
            ("cmd/main.go", "function", "cmd/main.main", 13, 17),
            ("cmd/main.go", "function", "cmd/main.lookup", 19, 22),
            ("store/reset.go", "module", "store/reset", 1, 1),
            ("store/reset.go", "function", "store/reset.Store.reset", 3, 6),
            ("store/reset.go", "function", "store/reset.logReset", 8, 8),
            ("store/store.go", "module", "store/store", 1, 8),
            ("store/store.go", "class", "store/store.Base", 10, 12),
            ("store/store.go", "function", "store/store.Base.Name", 14, 16),
            ("store/store.go", "class", "store/store.Store", 18, 21),
            ("store/store.go", "function", "store/store.New", 23, 25),
            ("store/store.go", "function", "store/store.Store.Get", 27, 33),
            ("store/store.go", "function", "store/store.Store.Put", 35, 40),
        ],
        contains={
            ("contains", "cmd/main", "cmd/main.Getter"),
            ("contains", "cmd/main", "cmd/main.lookup"),
            ("contains", "cmd/main", "cmd/main.main"),
            ("contains", "cmd/main", "example.com/kv/store"),
            ("contains", "cmd/main", "fmt"),
            ("contains", "store/reset", "store/reset.Store.reset"),
            ("contains", "store/reset", "store/reset.logReset"),
            ("contains", "store/store", "errors"),
            ("contains", "store/store", "store/store.Base"),
            ("contains", "store/store", "store/store.ErrMissing"),
            ("contains", "store/store", "store/store.New"),
            ("contains", "store/store", "store/store.Store"),
            ("contains", "store/store", "store/store.maxKeys"),
            ("contains", "store/store.Base", "store/store.Base.Name"),
            ("contains", "store/store.Base", "store/store.Base.name"),
            ("contains", "store/store.Store", "store/store.Store.Get"),
            ("contains", "store/store.Store", "store/store.Store.Put"),
            ("contains", "store/store.Store", "store/store.Store.items"),
        },
        edges={
            ("calls", "store/store.New", "store/store.Store"),  # &Store{...}: a composite literal
            ("calls", "store/store.New", "store/store.Base"),  # Base{name: name}
            ("references", "store/store.Store.Put", "store/store.maxKeys"),
            ("calls", "cmd/main.main", "cmd/main.lookup"),
            ("calls", "cmd/main.main", "store/store.New"),
            ("calls", "store/reset.Store.reset", "store/reset.logReset"),
            ("calls", "store/reset.Store.reset", "store/store.Base.Name"),
            ("calls", "store/store.Store.Put", "store/reset.Store.reset"),
            ("imports", "cmd/main", "store/reset"),
            ("imports", "cmd/main", "store/store"),
            ("inherits", "store/store.Store", "store/store.Base"),
        },
        unresolved={
            ("cmd/main.lookup", "g.Get", "calls"),
            ("cmd/main.main", "fmt.Println", "calls"),
            ("cmd/main.main", "s.Put", "calls"),
            ("store/store", "errors.New", "calls"),
        },
    ),
    "java": Expected(
        entities={
            ("module", "com/acme/app/Greeter", 1, 40),
            ("import", "com.acme.util.Strings", 3, 3),
            ("import", "java.util.List", 4, 4),
            ("class", "com/acme/app/Greeter.Greeter", 6, 30),
            ("variable", "com/acme/app/Greeter.Greeter.name", 7, 7),
            ("variable", "com/acme/app/Greeter.Greeter.count", 8, 8),
            ("function", "com/acme/app/Greeter.Greeter.Greeter", 10, 12),
            ("function", "com/acme/app/Greeter.Greeter.run", 14, 18),
            ("function", "com/acme/app/Greeter.Greeter.greet", 20, 25),
            ("function", "com/acme/app/Greeter.Greeter.create", 27, 29),
            ("class", "com/acme/app/Greeter.Base", 32, 40),
            ("function", "com/acme/app/Greeter.Base.log", 33, 35),
            ("function", "com/acme/app/Greeter.Base.helper", 37, 39),
            ("module", "com/acme/util/Strings", 1, 15),
            ("class", "com/acme/util/Strings.Strings", 3, 15),
            ("variable", "com/acme/util/Strings.Strings.EMPTY", 4, 4),
            ("function", "com/acme/util/Strings.Strings.Strings", 6, 6),
            ("function", "com/acme/util/Strings.Strings.repeat", 8, 10),
            ("function", "com/acme/util/Strings.Strings.isBlank", 12, 14),
        },
        chunks=[
            ("com/acme/app/Greeter.java", "module", "com/acme/app/Greeter", 1, 4),
            ("com/acme/app/Greeter.java", "class", "com/acme/app/Greeter.Greeter", 6, 8),
            ("com/acme/app/Greeter.java", "function", "com/acme/app/Greeter.Greeter.Greeter", 10, 12),
            ("com/acme/app/Greeter.java", "function", "com/acme/app/Greeter.Greeter.run", 14, 18),
            ("com/acme/app/Greeter.java", "function", "com/acme/app/Greeter.Greeter.greet", 20, 25),
            ("com/acme/app/Greeter.java", "function", "com/acme/app/Greeter.Greeter.create", 27, 29),
            ("com/acme/app/Greeter.java", "class", "com/acme/app/Greeter.Base", 32, 32),
            ("com/acme/app/Greeter.java", "function", "com/acme/app/Greeter.Base.log", 33, 35),
            ("com/acme/app/Greeter.java", "function", "com/acme/app/Greeter.Base.helper", 37, 39),
            ("com/acme/util/Strings.java", "module", "com/acme/util/Strings", 1, 1),
            ("com/acme/util/Strings.java", "class", "com/acme/util/Strings.Strings", 3, 4),
            ("com/acme/util/Strings.java", "function", "com/acme/util/Strings.Strings.Strings", 6, 6),
            ("com/acme/util/Strings.java", "function", "com/acme/util/Strings.Strings.repeat", 8, 10),
            ("com/acme/util/Strings.java", "function", "com/acme/util/Strings.Strings.isBlank", 12, 14),
        ],
        contains={
            ("contains", "com/acme/app/Greeter", "com.acme.util.Strings"),
            ("contains", "com/acme/app/Greeter", "com/acme/app/Greeter.Base"),
            ("contains", "com/acme/app/Greeter", "com/acme/app/Greeter.Greeter"),
            ("contains", "com/acme/app/Greeter", "java.util.List"),
            ("contains", "com/acme/app/Greeter.Base", "com/acme/app/Greeter.Base.helper"),
            ("contains", "com/acme/app/Greeter.Base", "com/acme/app/Greeter.Base.log"),
            ("contains", "com/acme/app/Greeter.Greeter", "com/acme/app/Greeter.Greeter.Greeter"),
            ("contains", "com/acme/app/Greeter.Greeter", "com/acme/app/Greeter.Greeter.count"),
            ("contains", "com/acme/app/Greeter.Greeter", "com/acme/app/Greeter.Greeter.create"),
            ("contains", "com/acme/app/Greeter.Greeter", "com/acme/app/Greeter.Greeter.greet"),
            ("contains", "com/acme/app/Greeter.Greeter", "com/acme/app/Greeter.Greeter.name"),
            ("contains", "com/acme/app/Greeter.Greeter", "com/acme/app/Greeter.Greeter.run"),
            ("contains", "com/acme/util/Strings", "com/acme/util/Strings.Strings"),
            ("contains", "com/acme/util/Strings.Strings", "com/acme/util/Strings.Strings.EMPTY"),
            ("contains", "com/acme/util/Strings.Strings", "com/acme/util/Strings.Strings.Strings"),
            ("contains", "com/acme/util/Strings.Strings", "com/acme/util/Strings.Strings.isBlank"),
            ("contains", "com/acme/util/Strings.Strings", "com/acme/util/Strings.Strings.repeat"),
        },
        edges={
            ("calls", "com/acme/app/Greeter.Greeter.create", "com/acme/app/Greeter.Greeter"),  # new Greeter()
            ("calls", "com/acme/app/Greeter.Greeter.create", "com/acme/app/Greeter.Greeter.Greeter"),
            ("calls", "com/acme/app/Greeter.Greeter.greet", "com/acme/app/Greeter.Base.helper"),
            ("calls", "com/acme/app/Greeter.Greeter.greet", "com/acme/util/Strings.Strings.isBlank"),
            ("calls", "com/acme/app/Greeter.Greeter.run", "com/acme/app/Greeter.Base.log"),
            ("calls", "com/acme/app/Greeter.Greeter.run", "com/acme/app/Greeter.Greeter.greet"),
            ("calls", "com/acme/app/Greeter.Greeter.run", "com/acme/util/Strings.Strings.repeat"),
            ("imports", "com/acme/app/Greeter", "com/acme/util/Strings"),
            ("inherits", "com/acme/app/Greeter.Greeter", "com/acme/app/Greeter.Base"),
        },
        unresolved={
            ("com/acme/app/Greeter.Base.log", "System.out.println", "calls"),
            ("com/acme/app/Greeter.Greeter", "Runnable", "inherits"),
            ("com/acme/app/Greeter.Greeter.create", "names.get", "calls"),
            ("com/acme/util/Strings.Strings.isBlank", "s.trim", "calls"),
            ("com/acme/util/Strings.Strings.repeat", "s.repeat", "calls"),
        },
    ),
    "rust": Expected(
        entities={
            ("module", "src/lib", 1, 49),
            ("import", "crate::util::Limits", 4, 4),
            ("import", "crate::util::clamp", 4, 4),
            ("import", "std::fmt", 5, 5),
            ("variable", "src/lib.START", 7, 7),
            ("class", "src/lib.Tick", 9, 16),
            ("function", "src/lib.Tick.tick_twice", 12, 15),
            ("class", "src/lib.Counter", 18, 22),
            ("variable", "src/lib.Counter.value", 20, 20),
            ("variable", "src/lib.Counter.limits", 21, 21),
            ("function", "src/lib.Counter.new", 25, 27),
            ("function", "src/lib.Counter.bump", 29, 31),
            ("function", "src/lib.Counter.tick", 35, 38),
            ("function", "src/lib.Counter.fmt", 42, 44),
            ("function", "src/lib.start", 47, 49),
            ("module", "src/util", 1, 22),
            ("class", "src/util.Limits", 1, 4),
            ("variable", "src/util.Limits.max", 3, 3),
            ("function", "src/util.Limits.standard", 7, 9),
            ("function", "src/util.clamp", 12, 14),
            ("function", "src/util.log", 16, 18),
            ("function", "src/util.reset", 20, 22),
        },
        chunks=[
            ("src/lib.rs", "module", "src/lib", 1, 7),
            ("src/lib.rs", "class", "src/lib.Tick", 9, 10),
            ("src/lib.rs", "function", "src/lib.Tick.tick_twice", 12, 15),
            ("src/lib.rs", "class", "src/lib.Counter", 18, 22),
            ("src/lib.rs", "class", "src/lib.Counter", 24, 24),
            ("src/lib.rs", "function", "src/lib.Counter.new", 25, 27),
            ("src/lib.rs", "function", "src/lib.Counter.bump", 29, 31),
            ("src/lib.rs", "class", "src/lib.Counter", 34, 34),
            ("src/lib.rs", "function", "src/lib.Counter.tick", 35, 38),
            ("src/lib.rs", "class", "src/lib.Counter", 41, 41),
            ("src/lib.rs", "function", "src/lib.Counter.fmt", 42, 44),
            ("src/lib.rs", "function", "src/lib.start", 47, 49),
            ("src/util.rs", "class", "src/util.Limits", 1, 4),
            ("src/util.rs", "class", "src/util.Limits", 6, 6),
            ("src/util.rs", "function", "src/util.Limits.standard", 7, 9),
            ("src/util.rs", "function", "src/util.clamp", 12, 14),
            ("src/util.rs", "function", "src/util.log", 16, 18),
            ("src/util.rs", "function", "src/util.reset", 20, 22),
        ],
        contains={
            ("contains", "src/lib", "crate::util::Limits"),
            ("contains", "src/lib", "crate::util::clamp"),
            ("contains", "src/lib", "src/lib.Counter"),
            ("contains", "src/lib", "src/lib.START"),
            ("contains", "src/lib", "src/lib.Tick"),
            ("contains", "src/lib", "src/lib.start"),
            ("contains", "src/lib", "std::fmt"),
            ("contains", "src/lib.Counter", "src/lib.Counter.bump"),
            ("contains", "src/lib.Counter", "src/lib.Counter.fmt"),
            ("contains", "src/lib.Counter", "src/lib.Counter.limits"),
            ("contains", "src/lib.Counter", "src/lib.Counter.new"),
            ("contains", "src/lib.Counter", "src/lib.Counter.tick"),
            ("contains", "src/lib.Counter", "src/lib.Counter.value"),
            ("contains", "src/lib.Tick", "src/lib.Tick.tick_twice"),
            ("contains", "src/util", "src/util.Limits"),
            ("contains", "src/util", "src/util.clamp"),
            ("contains", "src/util", "src/util.log"),
            ("contains", "src/util", "src/util.reset"),
            ("contains", "src/util.Limits", "src/util.Limits.max"),
            ("contains", "src/util.Limits", "src/util.Limits.standard"),
        },
        edges={
            ("references", "src/lib.Counter.new", "src/lib.START"),
            ("references", "src/lib.start", "src/lib.START"),
            ("references", "src/util.clamp", "src/util.Limits"),
            ("references", "src/lib.Counter", "src/util.Limits"),
            ("calls", "src/lib.Counter.bump", "src/util.clamp"),
            ("calls", "src/lib.Counter.new", "src/util.Limits.standard"),
            ("calls", "src/lib.Counter.new", "src/lib.Counter"),  # Counter { .. }: a struct literal
            ("calls", "src/util.Limits.standard", "src/util.Limits"),  # Limits { max: 10 }
            ("calls", "src/lib.Counter.tick", "src/lib.Counter.bump"),
            # self.tick() in the trait's default method: the one method named tick, by name
            ("calls inferred 1.00", "src/lib.Tick.tick_twice", "src/lib.Counter.tick"),
            ("calls", "src/lib.Counter.tick", "src/util.log"),
            ("calls", "src/util.reset", "src/lib.start"),
            ("imports", "src/lib", "src/util"),
            ("inherits", "src/lib.Counter", "src/lib.Tick"),
        },
        unresolved={
            ("src/lib.Counter", "fmt.Display", "inherits"),
            ("src/lib.Tick.tick_twice", "self.tick", "calls"),
            ("src/util.clamp", "value.min", "calls"),
        },
    ),
}


@pytest.mark.parametrize("language", sorted(EXPECTED))
def test_exact_entities_of_each_language(language: str) -> None:
    assert index(LANGS / language).entities == EXPECTED[language].entities


@pytest.mark.parametrize("language", sorted(EXPECTED))
def test_exact_edges_of_each_language(language: str) -> None:
    indexed = index(LANGS / language)
    assert {e for e in indexed.edges if e[0] == "contains"} == EXPECTED[language].contains
    assert {e for e in indexed.edges if e[0] != "contains"} == EXPECTED[language].edges
    assert indexed.unresolved == EXPECTED[language].unresolved


@pytest.mark.parametrize("language", sorted(EXPECTED))
def test_exact_chunk_spans_and_content_of_each_language(language: str) -> None:
    indexed = index(LANGS / language)
    chunks = [c for f in indexed.files for c in indexed.results[f.path].chunks]
    assert [(c.file_path, c.kind, c.symbol, c.start_line, c.end_line) for c in chunks] == (
        EXPECTED[language].chunks
    )
    for f in indexed.files:
        assert not indexed.results[f.path].syntax_error
        lines = f.text.split("\n")
        for chunk in indexed.results[f.path].chunks:
            assert chunk.content == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])
            assert chunk.embed_text.startswith(f"# file: {f.path}\n")
            assert chunk.embed_text.endswith("\n" + chunk.content)


@pytest.mark.parametrize("language", sorted(EXPECTED))
def test_class_chunks_exclude_their_methods(language: str) -> None:
    indexed = index(LANGS / language)
    for f in indexed.files:
        chunks = indexed.results[f.path].chunks
        methods = [c for c in chunks if c.kind == "function"]
        for cls in (c for c in chunks if c.kind == "class"):
            for method in methods:
                assert cls.end_line < method.start_line or method.end_line < cls.start_line, (cls, method)


def test_method_chunk_header_names_file_class_and_signature() -> None:
    indexed = index(LANGS / "go")
    chunk = next(c for c in indexed.results["store/store.go"].chunks if c.symbol == "store/store.Store.Get")
    assert chunk.embed_text.split("\n")[:4] == [
        "# file: store/store.go",
        "# class: Store",
        "# func (s *Store) Get(key string) (string, error)",
        "func (s *Store) Get(key string) (string, error) {",
    ]
    ts = index(LANGS / "typescript")
    square = next(c for c in ts.results["src/view.tsx"].chunks if c.symbol == "src/view.Square")
    assert square.embed_text.split("\n")[:3] == [
        "# file: src/view.tsx",
        "# export class Square extends BaseShape",
        "export class Square extends BaseShape {",
    ]
    assert square.content == 'export class Square extends BaseShape {\n  name = "square";'


def test_entity_ids_are_stable_and_point_at_the_defining_chunk() -> None:
    indexed = index(LANGS / "java")
    chunks = {c.chunk_id: c for r in indexed.results.values() for c in r.chunks}
    entities = {e.qualified_name: e for g in indexed.graphs for e in g.entities}
    greet = entities["com/acme/app/Greeter.Greeter.greet"]
    assert greet.entity_id == stable_id(
        CORPUS, "com/acme/app/Greeter.java", "function", "com/acme/app/Greeter.Greeter.greet"
    )
    assert chunks[greet.chunk_id].symbol == "com/acme/app/Greeter.Greeter.greet"
    cls = entities["com/acme/app/Greeter.Greeter"]
    assert (chunks[cls.chunk_id].kind, chunks[cls.chunk_id].start_line) == ("class", 6)
    again = index(LANGS / "java")
    assert {e.entity_id for g in again.graphs for e in g.entities} == {
        e.entity_id for g in indexed.graphs for e in g.entities
    }


def test_long_function_is_split_into_overlapping_windows() -> None:
    body = "\n".join(f"  total += {i};" for i in range(25))
    src = source(
        "long.ts", f"export function sum(): number {{\n  let total = 0;\n{body}\n  return total;\n}}\n"
    )
    cfg = IndexerConfig(max_chunk_lines=10, text_chunk_overlap=3)
    chunks = chunk_file(CORPUS, src, cfg).chunks
    assert [(c.kind, c.symbol, c.start_line, c.end_line) for c in chunks] == [
        ("function", "long.sum", 1, 10),
        ("function", "long.sum", 8, 17),
        ("function", "long.sum", 15, 24),
        ("function", "long.sum", 22, 29),
    ]
    assert len({c.chunk_id for c in chunks}) == 4
    assert all(c.embed_text.startswith("# file: long.ts\n# export function sum(): number\n") for c in chunks)


def test_syntax_errors_are_counted_but_what_parses_is_still_extracted() -> None:
    src = source(
        "broken.rs",
        """
        fn good() -> u32 {
            helper()
        }

        fn broken( {

        fn helper() -> u32 { 1 }
        """,
    )
    result = chunk_file(CORPUS, src, IndexerConfig())
    assert result.syntax_error
    graph = extract_file(CORPUS, src, result)
    assert graph is not None
    functions = {e.qualified_name for e in graph.entities if e.type == "function"}
    assert "broken.good" in functions
    lines = src.text.split("\n")
    for chunk in result.chunks:
        assert chunk.content == "\n".join(lines[chunk.start_line - 1 : chunk.end_line])


def test_markdown_has_no_graph_and_python_goes_through_the_ast_extractor() -> None:
    cfg = IndexerConfig()
    md = source("README.md", "# Title\n\ntext\n")
    assert extract_file(CORPUS, md, chunk_file(CORPUS, md, cfg)) is None
    py_a = source("pkg/a.py", "def f():\n    return 1\n")
    py_b = source("pkg/b.py", "from pkg.a import f\n\ndef g():\n    return f()\n")
    js = source("web/app.js", "import { h } from './h';\nexport function main() { h(); }\n")
    js_h = source("web/h.js", "export function h() {}\n")
    graphs = [g for s in (py_a, py_b, js, js_h) if (g := extract_file(CORPUS, s, chunk_file(CORPUS, s, cfg)))]
    names = {e.entity_id: e.qualified_name for g in graphs for e in g.entities}
    links = resolve_corpus(CORPUS, graphs)
    assert {(r.type, names[r.source_id], names[r.target_id]) for r in links.relations} == {
        ("imports", "pkg.b", "pkg.a"),
        ("calls", "pkg.b.g", "pkg.a.f"),
        ("imports", "web/app", "web/h"),
        ("calls", "web/app.main", "web/h.h"),
    }


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("a.js", "javascript"),
        ("a.mjs", "javascript"),
        ("a.cjs", "javascript"),
        ("a.jsx", "javascript"),
        ("a.ts", "typescript"),
        ("a.tsx", "typescript"),
        ("a.go", "go"),
        ("A.java", "java"),
        ("a.rs", "rust"),
    ],
)
def test_tree_sitter_languages_are_detected(path: str, language: str) -> None:
    assert detect_language(path) == language


def test_bases_and_instantiations_no_scope_resolves_are_inferred_by_class_name(tmp_path: Path) -> None:
    """A nested type extending its sibling, an implemented interface of the same package named
    without an import, and `Outer.Inner` bases become `inherits` edges inferred by class name, with
    confidence 1 / the classes of that name; `new Inner()` of a nested type likewise becomes an
    inferred call. A name the corpus lacks stays unresolved only."""
    shop = tmp_path / "shop"
    shop.mkdir()
    (shop / "Tube.java").write_text(
        textwrap.dedent(
            """
            package shop;

            public class Tube {
                abstract static class AbstractSubscriber {
                    abstract void next();
                }

                static final class Wrapper extends AbstractSubscriber {
                    void next() {}
                }

                void start() {
                    new Wrapper();
                    new Missing();
                }
            }
            """
        ).lstrip("\n")
    )
    (shop / "Publishers.java").write_text(
        textwrap.dedent(
            """
            package shop;

            public class Publishers {
                public interface Trusted {}

                public static class Bytes implements Trusted, Tube.AbstractSubscriber, Flow.Missing {}
            }
            """
        ).lstrip("\n")
    )
    (shop / "Buffering.java").write_text(
        textwrap.dedent(
            """
            package shop;

            public class Buffering implements Trusted {}
            """
        ).lstrip("\n")
    )
    indexed = index(tmp_path)
    inherits = {edge for edge in indexed.edges if edge[0].startswith("inherits")}
    assert inherits == {
        ("inherits inferred 1.00", "shop/Tube.Tube.Wrapper", "shop/Tube.Tube.AbstractSubscriber"),
        ("inherits inferred 1.00", "shop/Publishers.Publishers.Bytes", "shop/Publishers.Publishers.Trusted"),
        ("inherits inferred 1.00", "shop/Publishers.Publishers.Bytes", "shop/Tube.Tube.AbstractSubscriber"),
        ("inherits inferred 1.00", "shop/Buffering.Buffering", "shop/Publishers.Publishers.Trusted"),
    }
    calls = {edge for edge in indexed.edges if edge[0].startswith("calls")}
    assert calls == {("calls inferred 1.00", "shop/Tube.Tube.start", "shop/Tube.Tube.Wrapper")}
    # a guess, not a proof: the bases stay listed as unresolved, and one the corpus lacks too
    assert {u for u in indexed.unresolved if u[2] == "inherits"} == {
        ("shop/Tube.Tube.Wrapper", "AbstractSubscriber", "inherits"),
        ("shop/Publishers.Publishers.Bytes", "Trusted", "inherits"),
        ("shop/Publishers.Publishers.Bytes", "Tube.AbstractSubscriber", "inherits"),
        ("shop/Publishers.Publishers.Bytes", "Flow.Missing", "inherits"),
        ("shop/Buffering.Buffering", "Trusted", "inherits"),
    }


def test_names_imported_through_a_barrel_file_resolve_to_their_definitions(tmp_path: Path) -> None:
    """`export * from "./x"` re-exports every name of x: an import from the barrel reaches the
    definition (a proven call), through a barrel of barrels too."""
    src = tmp_path / "src"
    (src / "utils").mkdir(parents=True)
    (src / "utils" / "props.ts").write_text(
        "export function hasProp(target: object, key: string) {\n  return key in target\n}\n"
    )
    # a barrel of many: the one defining the name is found past the others
    for i in range(30):
        (src / "utils" / f"part{i}.ts").write_text(f"export function part{i}() {{\n  return {i}\n}}\n")
    exports = "".join(f'export * from "./part{i}"\n' for i in range(15))
    exports += 'export * from "./props"\n'
    exports += "".join(f'export * from "./part{i}"\n' for i in range(15, 30))
    (src / "utils" / "index.ts").write_text(exports)
    (src / "internal.ts").write_text('export * from "./utils/index"\n')
    (src / "decorators.ts").write_text(
        'import { hasProp } from "./internal"\n\nexport function collect(target: object) {\n'
        '  return hasProp(target, "annotations")\n}\n'
    )
    indexed = index(tmp_path)
    assert ("calls", "src/decorators.collect", "src/utils/props.hasProp") in indexed.edges


def test_definitions_after_generic_call_signatures_on_their_own_lines_are_read(tmp_path: Path) -> None:
    """tree-sitter-typescript#335: `<T>(fn: T): T` lines without `;` in an interface broke the
    whole file, and the functions after it were lost; line numbers stay those of the file."""
    (tmp_path / "action.ts").write_text(
        textwrap.dedent(
            """
            export interface ActionFactory extends Annotation, PropertyDecorator {
                // nameless actions
                <T extends Function | undefined | null>(fn: T): T
                // named actions
                <T extends Function | undefined | null>(name: string, fn: T): T

                // named decorator
                (customName: string): PropertyDecorator & Annotation
            }

            function createAction(name: string) {
                return name
            }

            export function createActionFactory(auto: boolean) {
                return createAction(auto ? "auto" : "plain")
            }
            """
        ).lstrip("\n")
    )
    indexed = index(tmp_path)
    functions = {(e[1], e[2], e[3]) for e in indexed.entities if e[0] == "function"}
    assert functions == {("action.createAction", 11, 13), ("action.createActionFactory", 15, 17)}
    assert ("calls", "action.createActionFactory", "action.createAction") in indexed.edges


def test_java_inner_classes_call_enclosing_methods_and_overloads_are_entities_of_their_own(
    tmp_path: Path,
) -> None:
    """A bare `m()` in an inner class that implements a library interface is the enclosing class's
    method (the interface is not in the corpus, so the lookup waits for the whole corpus and then
    goes outwards); each overload of a constructor or method is an entity with its own calls."""
    shop = tmp_path / "shop"
    shop.mkdir()
    (shop / "Server.java").write_text(
        textwrap.dedent(
            """
            package shop;

            class Server {
                Server() {
                    this(80);
                }

                Server(int port) {
                    start(port);
                }

                void start(int port) {}

                void requestStarted() {}

                class Dispatcher implements Runnable {
                    public void run() {
                        requestStarted();
                    }
                }
            }
            """
        ).lstrip("\n")
    )
    indexed = index(tmp_path)
    constructors = {e for e in indexed.entities if e[1] == "shop/Server.Server.Server"}
    assert constructors == {
        ("function", "shop/Server.Server.Server", 4, 6),
        ("function", "shop/Server.Server.Server", 8, 10),
    }
    calls = {edge for edge in indexed.edges if edge[0].startswith("calls")}
    assert ("calls", "shop/Server.Server.Dispatcher.run", "shop/Server.Server.requestStarted") in calls
    # the second constructor's own call is its own: no longer folded into the first one
    starts = [e for e in indexed.graphs[0].relations if e.type == "calls"]
    by_id = {e.entity_id: e for g in indexed.graphs for e in g.entities}
    callers_of_start = {
        by_id[r.source_id].start_line for r in starts if by_id[r.target_id].qualified_name.endswith(".start")
    }
    assert callers_of_start == {8}


def test_a_default_export_of_a_name_reached_through_a_barrel_is_a_proven_base(tmp_path: Path) -> None:
    """`export default NodeBuilder;` makes the class the module's default, so a barrel's
    `export { default as NodeBuilder } from` and `extends NodeBuilder` resolve, and `this.m()` in
    the subclass calls the base's method (before, the base was only inferred by name and the call
    was lost)."""
    (tmp_path / "core").mkdir()
    (tmp_path / "r").mkdir()
    (tmp_path / "core" / "NodeBuilder.js").write_text(
        "class NodeBuilder {\n\tsortBindingGroups() {\n\t\treturn 1;\n\t}\n}\n\nexport default NodeBuilder;\n"
    )
    (tmp_path / "Nodes.js").write_text("export { default as NodeBuilder } from './core/NodeBuilder.js';\n")
    (tmp_path / "r" / "GLSL.js").write_text(
        "import { NodeBuilder } from '../Nodes.js';\n\n"
        "class GLSL extends NodeBuilder {\n\tbuild() {\n\t\tthis.sortBindingGroups();\n\t}\n}\n"
    )
    indexed = index(tmp_path)
    assert ("inherits", "r/GLSL.GLSL", "core/NodeBuilder.NodeBuilder") in indexed.edges
    assert ("calls", "r/GLSL.GLSL.build", "core/NodeBuilder.NodeBuilder.sortBindingGroups") in indexed.edges
    assert indexed.unresolved == set()


def test_java_on_demand_imports_bring_types_for_static_calls_and_bases(tmp_path: Path) -> None:
    """`import a.frame.*;` makes the types of package a.frame usable by their simple names: a static
    call `ErrorFrame.describe(..)` and `extends ErrorFrame` resolve to that package's class, and a
    type the file's own package defines still comes first (JLS 6.4.1)."""
    for package in ("frame", "app"):
        (tmp_path / "a" / package).mkdir(parents=True)
    (tmp_path / "a" / "frame" / "ErrorFrame.java").write_text(
        "package a.frame;\n\npublic class ErrorFrame {\n    public static String describe(int code) {\n"
        '        return "";\n    }\n}\n'
    )
    (tmp_path / "a" / "frame" / "Names.java").write_text(
        "package a.frame;\n\npublic class Names {\n    public static String of(int code) {\n"
        '        return "";\n    }\n}\n'
    )
    (tmp_path / "a" / "app" / "Names.java").write_text(
        'package a.app;\n\nclass Names {\n    static String of(int code) {\n        return "";\n    }\n}\n'
    )
    (tmp_path / "a" / "app" / "Stream.java").write_text(
        textwrap.dedent(
            """
            package a.app;

            import java.util.List;
            import a.frame.*;

            class Stream {
                String reset(int code) {
                    return ErrorFrame.describe(code) + Names.of(code);
                }
            }

            class ResetFrame extends ErrorFrame {
                String show() {
                    return describe(1);
                }
            }
            """
        ).lstrip("\n")
    )
    indexed = index(tmp_path)
    calls = {edge for edge in indexed.edges if edge[0] == "calls"}
    assert ("calls", "a/app/Stream.Stream.reset", "a/frame/ErrorFrame.ErrorFrame.describe") in calls
    assert ("calls", "a/app/Stream.Stream.reset", "a/app/Names.Names.of") in calls
    assert ("calls", "a/app/Stream.Stream.reset", "a/frame/Names.Names.of") not in calls
    assert ("inherits", "a/app/Stream.ResetFrame", "a/frame/ErrorFrame.ErrorFrame") in indexed.edges
    assert ("calls", "a/app/Stream.ResetFrame.show", "a/frame/ErrorFrame.ErrorFrame.describe") in calls
