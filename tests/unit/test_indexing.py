"""The database-free indexing logic: walking, chunking and the Python code graph, on exact expectations."""

from __future__ import annotations

import argparse
import hashlib
import json.decoder
import textwrap
from pathlib import Path

import pytest

from services.indexer.chunker import ChunkResult, chunk_file
from services.indexer.graph import extract_file
from services.indexer.pysyntax import module_name, reindent_bracket_continuations
from services.indexer.python_graph import FileGraph, UnresolvedRef, extract_python, resolve, resolve_refs
from services.indexer.walker import SourceFile, detect_language, walk_corpus
from tests import FIXTURES
from tribrid.config import IndexerConfig
from tribrid.models import Chunk

CORPUS = "test-corpus"
FIXTURE_REPO = FIXTURES / "sample_repo"
STDLIB = Path(argparse.__file__).parent


def source(path: str, text: str) -> SourceFile:
    return SourceFile(path, text, detect_language(path) or "text", hashlib.sha256(text.encode()).hexdigest())


def python(path: str, code: str) -> SourceFile:
    return source(path, textwrap.dedent(code).lstrip("\n"))


def spans(chunks: list[Chunk]) -> list[tuple[str, str, int, int]]:
    return [(c.kind, c.symbol, c.start_line, c.end_line) for c in chunks]


def assert_content_is_the_lines(src: SourceFile, chunks: list[Chunk]) -> None:
    lines = src.text.split("\n")
    for chunk in chunks:
        assert 1 <= chunk.start_line <= chunk.end_line <= len(lines), chunk
        assert chunk.content == "\n".join(lines[chunk.start_line - 1 : chunk.end_line]), chunk
        assert chunk.embed_text.endswith("\n" + chunk.content)
        assert chunk.embed_text.startswith(f"# file: {src.path}\n")


# --- walker --------------------------------------------------------------------------------------


def test_walker_honours_nested_gitignore_and_skips_what_it_cannot_index(tmp_path: Path) -> None:
    files: dict[str, bytes] = {
        ".gitignore": b"*.log\nbuild/\n",
        ".git/config": b"[core]\n",
        "app.py": b"print('hi')\r\nprint('bye')\r\n",
        "debug.log": b"ignored by the root .gitignore\n",
        "build/out.py": b"x = 1\n",
        "sub/.gitignore": b"secret.txt\n!keep.log\n",
        "sub/secret.txt": b"ignored by the nested .gitignore\n",
        "sub/keep.log": b"re-included by the nested .gitignore\n",
        "sub/code.py": b"y = 2\n",
        "other/secret.txt": b"the nested pattern does not reach here\n",
        "Makefile": b"all:\n\ttrue\n",
        "bom.md": b"\xef\xbb\xbf# Title\n",
        "image.png": b"\x89PNG\r\n",
        "data.txt": b"text\x00with a NUL\n",
        "big.txt": b"x" * 101,
        "latin.txt": b"caf\xe9\n",
    }
    for rel, data in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
    (tmp_path / "loop").symlink_to(tmp_path, target_is_directory=True)  # would recurse forever

    items = list(walk_corpus(tmp_path, IndexerConfig(max_file_bytes=100)))

    summary = [
        (i.path, i.language) if isinstance(i, SourceFile) else (i.path, f"skipped:{i.reason}") for i in items
    ]
    assert summary == [
        (".gitignore", "text"),
        ("Makefile", "makefile"),
        ("app.py", "python"),
        ("big.txt", "skipped:too_large"),
        ("bom.md", "markdown"),
        ("data.txt", "skipped:binary"),
        ("image.png", "skipped:unsupported"),
        ("latin.txt", "skipped:undecodable"),
        ("loop", "skipped:symlink"),
        ("other/secret.txt", "text"),
        ("sub/.gitignore", "text"),
        ("sub/code.py", "python"),
        ("sub/keep.log", "text"),
    ]
    by_path = {i.path: i for i in items if isinstance(i, SourceFile)}
    assert by_path["app.py"].text == "print('hi')\nprint('bye')\n"  # newlines normalised
    assert by_path["app.py"].content_hash == hashlib.sha256(files["app.py"]).hexdigest()  # of the bytes
    assert by_path["bom.md"].text == "# Title\n"


def test_walker_on_the_sample_repo_skips_ignored_build_dir_and_logs() -> None:
    paths = [i.path for i in walk_corpus(FIXTURE_REPO, IndexerConfig())]
    assert paths == [
        ".gitignore",
        "README.md",
        "shop/__init__.py",
        "shop/cart.py",
        "shop/inventory.py",
        "shop/payment.py",
        "shop/pricing.py",
    ]


@pytest.mark.parametrize(
    ("path", "language"),
    [
        ("a/b.py", "python"),
        ("x.pyi", "python"),
        ("web/app.tsx", "typescript"),
        ("main.go", "go"),
        ("lib.rs", "rust"),
        ("README.md", "markdown"),
        ("Dockerfile", "dockerfile"),
        ("deploy/Dockerfile.dev", "dockerfile"),
        ("LICENSE", "text"),
        ("ci.yml", "yaml"),
        ("pyproject.toml", "toml"),
        ("run.sh", "shell"),
        ("logo.png", None),
        ("archive.tar.gz", None),
    ],
)
def test_detect_language(path: str, language: str | None) -> None:
    assert detect_language(path) == language


# --- chunker -------------------------------------------------------------------------------------


@pytest.mark.parametrize("stdlib_file", [Path(json.decoder.__file__), Path(argparse.__file__)])
def test_every_chunk_is_exactly_its_lines_on_stdlib_files(stdlib_file: Path) -> None:
    rel = stdlib_file.relative_to(STDLIB).as_posix()
    src = source(rel, stdlib_file.read_text(encoding="utf-8"))
    result = chunk_file(CORPUS, src, IndexerConfig())

    assert not result.syntax_error and result.tree is not None
    assert_content_is_the_lines(src, result.chunks)
    assert len({c.chunk_id for c in result.chunks}) == len(result.chunks)
    assert {c.kind for c in result.chunks} == {"module", "class", "function"}
    # Nothing is lost: every line with code or comments is in some chunk (bare `else:` aside).
    lines = src.text.split("\n")
    covered = {n for c in result.chunks for n in range(c.start_line, c.end_line + 1)}
    uncovered = {lines[n - 1].strip() for n in range(1, len(lines) + 1) if n not in covered}
    assert uncovered <= {"", "else:", "try:", "finally:", "except:"}
    # Classes never contain their methods.
    for chunk in result.chunks:
        if chunk.kind == "class":
            assert "    def " not in chunk.content, chunk.symbol


def test_stdlib_method_chunk_symbol_and_embed_header() -> None:
    src = source("json/decoder.py", Path(json.decoder.__file__).read_text(encoding="utf-8"))
    chunks = {c.symbol: c for c in chunk_file(CORPUS, src, IndexerConfig()).chunks if c.kind == "function"}
    decode = chunks["json.decoder.JSONDecoder.decode"]
    assert decode.content.startswith("    def decode(self, s, _w=WHITESPACE.match):\n")
    assert decode.embed_text.startswith(
        "# file: json/decoder.py\n# class: JSONDecoder\n"
        "# def decode(self, s, _w=WHITESPACE.match)\n    def decode("
    )
    assert "json.decoder.JSONDecoder.raw_decode" in chunks
    assert "json.decoder.py_scanstring" in chunks


def test_a_definitions_chunks_carry_its_signature_and_other_chunks_none() -> None:
    src = source("json/decoder.py", Path(json.decoder.__file__).read_text(encoding="utf-8"))
    chunks = chunk_file(CORPUS, src, IndexerConfig()).chunks
    by_symbol = {c.symbol: c for c in chunks if c.kind != "module"}
    decode = by_symbol["json.decoder.JSONDecoder.decode"]
    assert decode.signature == "json.decoder.JSONDecoder.decode: def decode(self, s, _w=WHITESPACE.match)"
    assert (
        by_symbol["json.decoder.JSONDecoder"].signature
        == "json.decoder.JSONDecoder: class JSONDecoder(object)"
    )
    assert all(c.signature == "" for c in chunks if c.kind == "module")
    java = source("a/Box.java", "class Box {\n  int size(int x) { return x; }\n}\n")
    (size,) = [c for c in chunk_file(CORPUS, java, IndexerConfig()).chunks if c.kind == "function"]
    assert size.signature == f"{size.symbol}: int size(int x)"


def test_class_chunk_holds_header_docstring_and_attributes_but_not_methods() -> None:
    src = python(
        "geo/shapes.py",
        '''
        """Shapes."""
        import math


        @register
        class Shape(Base):
            """A shape."""

            sides: int = 0
            name = "shape"

            def area(self) -> float:
                return 0.0

            unit = "cm"

            @staticmethod
            def origin() -> tuple[int, int]:
                def inner() -> int:
                    return 0
                return (inner(), 0)
        ''',
    )
    chunks = chunk_file(CORPUS, src, IndexerConfig()).chunks

    assert spans(chunks) == [
        ("module", "geo.shapes", 1, 2),
        ("class", "geo.shapes.Shape", 5, 10),
        ("function", "geo.shapes.Shape.area", 12, 13),
        ("class", "geo.shapes.Shape", 15, 15),
        ("function", "geo.shapes.Shape.origin", 17, 21),  # decorator included, nested def inside
    ]
    assert_content_is_the_lines(src, chunks)
    assert chunks[1].content == textwrap.dedent(
        '''\
        @register
        class Shape(Base):
            """A shape."""

            sides: int = 0
            name = "shape"'''
    )
    assert chunks[1].embed_text.startswith("# file: geo/shapes.py\n# class Shape(Base)\n@register")
    assert chunks[2].embed_text == (
        "# file: geo/shapes.py\n# class: Shape\n# def area(self) -> float\n"
        "    def area(self) -> float:\n        return 0.0"
    )
    assert chunks[0].embed_text.startswith("# file: geo/shapes.py\n# module: geo.shapes\n")


def test_long_function_is_split_into_overlapping_windows_that_keep_the_symbol() -> None:
    body = "".join(f"    x{i} = {i}\n" for i in range(24))
    src = source("m.py", f"def long():\n{body}")  # lines 1..25
    cfg = IndexerConfig(max_chunk_lines=10, text_chunk_overlap=3, text_chunk_lines=20)
    chunks = chunk_file(CORPUS, src, cfg).chunks

    assert spans(chunks) == [
        ("function", "m.long", 1, 10),
        ("function", "m.long", 8, 17),
        ("function", "m.long", 15, 24),
        ("function", "m.long", 22, 25),
    ]
    assert_content_is_the_lines(src, chunks)
    assert len({c.chunk_id for c in chunks}) == 4
    assert all("# def long()\n" in c.embed_text for c in chunks)


def test_plain_text_windows_overlap_and_skip_blank_only_windows() -> None:
    text = "".join(f"line {n}\n" for n in range(1, 18)) + "\n" * 12 + "last\n"  # 30 lines
    src = source("notes.yaml", text)  # not a document format: line windows
    chunks = chunk_file(CORPUS, src, IndexerConfig(text_chunk_lines=10, text_chunk_overlap=3)).chunks
    # Windows 1-10, 8-17, 15-24 (trimmed to 15-17), 22-30 (trimmed to 30); 29-30 would only repeat "last".
    assert spans(chunks) == [
        ("text", "", 1, 10),
        ("text", "", 8, 17),
        ("text", "", 15, 17),
        ("text", "", 30, 30),
    ]
    assert_content_is_the_lines(src, chunks)


def test_markdown_splits_by_headings_within_the_token_budget() -> None:
    appendix = "".join(f"a{n}.\n" for n in range(1, 11))
    text = (
        "# Guide\nintro\n\n"  # 1-3
        "## Install\npip install x\n```sh\n# not a heading\n```\n\n"  # 4-9
        "## Use\nrun it\n### Detail\nmore\n"  # 10-13
        "# Appendix\n" + appendix  # 14-24: one paragraph, longer than the budget
    )
    src = source("docs/guide.md", text)
    cfg = IndexerConfig(doc_chunk_min_tokens=1, doc_chunk_max_tokens=8)
    chunks = chunk_file(CORPUS, src, cfg).chunks

    # The fence's "# not a heading" is code; the appendix splits after sentence ends, its heading
    # staying with the text under it.
    assert [(c.start_line, c.end_line) for c in chunks] == [
        (1, 2),
        (4, 5),
        (6, 8),
        (10, 11),
        (12, 13),
        (14, 18),
        (19, 22),
        (23, 24),
    ]
    assert {c.kind for c in chunks} == {"section"} and {c.symbol for c in chunks} == {""}
    assert_content_is_the_lines(src, chunks)
    headers = [c.embed_text.split("\n")[1] for c in chunks]
    # two top-level headings: the file name is the document's title
    assert headers == [
        "# section: guide > Guide",
        "# section: guide > Guide > Install",
        "# section: guide > Guide > Install",
        "# section: guide > Guide > Use",
        "# section: guide > Guide > Use > Detail",
        "# section: guide > Appendix",
        "# section: guide > Appendix",
        "# section: guide > Appendix",
    ]


def test_small_markdown_stays_one_chunk() -> None:
    src = source("README.md", (FIXTURE_REPO / "README.md").read_text(encoding="utf-8"))
    assert spans(chunk_file(CORPUS, src, IndexerConfig()).chunks) == [("section", "", 1, 11)]


def test_chunk_ids_survive_a_blank_line_inserted_above_a_function() -> None:
    code = """
        import os

        LIMIT = 1


        def f():
            return LIMIT


        class C:
            def m(self):
                return f()
        """
    before = chunk_file(CORPUS, python("p/q.py", code), IndexerConfig()).chunks
    shifted = python("p/q.py", code.replace("\n\n\n        def f", "\n\n\n\n        def f"))
    after = chunk_file(CORPUS, shifted, IndexerConfig()).chunks

    assert [c.chunk_id for c in after] == [c.chunk_id for c in before]
    assert [c.start_line for c in after] == [1, 7, 11, 12]
    assert [c.start_line for c in before] == [1, 6, 10, 11]


def test_python_is_chunked_from_tree_sitter_so_a_syntax_error_spares_the_other_definitions() -> None:
    src = python(
        "pkg/bad.py",
        """
        import os


        def good_one(a):
            return a + 1


        def broken(x):
            return x +* 2


        @decorated
        def good_two(b):
            return b * 2


        class K:
            def m(self):
                return 1
        """,
    )
    result = chunk_file(CORPUS, src, IndexerConfig())

    # ast cannot parse it: no tree for the graph extractor, only the module entity.
    assert result == ChunkResult(result.chunks, None, syntax_error=True)
    assert spans(result.chunks) == [
        ("module", "pkg.bad", 1, 1),
        ("function", "pkg.bad.good_one", 4, 5),
        ("function", "pkg.bad.broken", 8, 9),
        ("function", "pkg.bad.good_two", 12, 14),
        ("class", "pkg.bad.K", 17, 17),
        ("function", "pkg.bad.K.m", 18, 19),
    ]
    assert_content_is_the_lines(src, result.chunks)
    assert result.chunks[2].embed_text.startswith("# file: pkg/bad.py\n# def broken(x)\ndef broken(x):\n")
    assert [e.type for e in extract_python(CORPUS, src, result.chunks).entities] == ["module"]
    assert extract_file(CORPUS, src, result) is None


def test_python_syntax_error_in_a_signature_still_yields_its_function() -> None:
    src = source("bad.py", "def broken(:\n    pass\n")
    result = chunk_file(CORPUS, src, IndexerConfig())
    assert result == ChunkResult(result.chunks, None, syntax_error=True)
    assert spans(result.chunks) == [("function", "bad.broken", 1, 2)]
    assert extract_python(CORPUS, src, result.chunks).entities[0].type == "module"


def test_python_definitions_under_if_try_and_with_blocks_with_their_decorators() -> None:
    """As pysyntax.definitions: defs under if/elif/else, try/except/except*/else/finally and
    (async) with are the scope's own; those in loops, match cases or other functions are not."""
    src = python(
        "pkg/compat.py",
        '''
        import sys

        if sys.platform == "win32":
            @cache
            def home():
                return "C:/"
        elif sys.platform == "darwin":
            class Home:
                pass
        else:
            def home():
                return "/"

        try:
            import fast
        except ImportError:
            def speed():
                return 0
        else:
            def speed():
                return 1
        finally:
            @log
            @trace(level=2)
            class Done:
                """Done."""

                @property
                def ok(self):
                    return True

        with lock:
            def locked():
                pass

        async with session:
            def opened():
                pass

        for name in names:
            def per_name():
                pass
        else:
            def after_loop():
                pass

        match mode:
            case "a":
                def in_case():
                    pass


        def outer():
            def inner():
                pass
            return inner


        class Box:
            if DEBUG:
                def dump(self):
                    return repr(self)
            try:
                def check(self):
                    return True
            except* ValueError:
                pass
        ''',
    )
    result = chunk_file(CORPUS, src, IndexerConfig())

    assert not result.syntax_error and result.tree is not None
    # Lone `else:`, `finally:` and `try:` lines between the definitions are no chunks of their own.
    assert spans(result.chunks) == [
        ("module", "pkg.compat", 1, 3),
        ("function", "pkg.compat.home", 4, 6),
        ("module", "pkg.compat", 7, 7),
        ("class", "pkg.compat.Home", 8, 9),
        ("function", "pkg.compat.home", 11, 12),
        ("module", "pkg.compat", 14, 16),
        ("function", "pkg.compat.speed", 17, 18),
        ("function", "pkg.compat.speed", 20, 21),
        ("class", "pkg.compat.Done", 23, 26),
        ("function", "pkg.compat.Done.ok", 28, 30),
        ("module", "pkg.compat", 32, 32),
        ("function", "pkg.compat.locked", 33, 34),
        ("module", "pkg.compat", 36, 36),
        ("function", "pkg.compat.opened", 37, 38),
        ("module", "pkg.compat", 40, 50),  # the loop, its else and the match, with their defs
        ("function", "pkg.compat.outer", 53, 56),  # inner stays inside
        ("class", "pkg.compat.Box", 59, 60),
        ("function", "pkg.compat.Box.dump", 61, 62),
        ("function", "pkg.compat.Box.check", 64, 65),
        ("class", "pkg.compat.Box", 66, 67),
    ]
    assert_content_is_the_lines(src, result.chunks)
    assert len({c.chunk_id for c in result.chunks}) == len(result.chunks)  # the two homes, speeds
    done, ok = result.chunks[8], result.chunks[9]
    assert done.embed_text.startswith("# file: pkg/compat.py\n# class Done\n    @log\n    @trace(level=2)\n")
    assert ok.embed_text.startswith(
        "# file: pkg/compat.py\n# class: Done\n# def ok(self)\n        @property\n"
    )
    # The graph extractor (ast) finds the same definitions, each in its own chunk.
    graph = extract_python(CORPUS, src, result.chunks, result.tree)
    start_of = {c.chunk_id: c.start_line for c in result.chunks}
    definitions = [e for e in graph.entities if e.type in ("function", "class")]
    defined = {(e.qualified_name, start_of[e.chunk_id]) for e in definitions}
    assert defined == {
        ("pkg.compat.home", 4),  # a redefinition keeps the first
        ("pkg.compat.Home", 8),
        ("pkg.compat.speed", 17),
        ("pkg.compat.Done", 23),
        ("pkg.compat.Done.ok", 28),
        ("pkg.compat.locked", 33),
        ("pkg.compat.opened", 37),
        ("pkg.compat.outer", 53),
        ("pkg.compat.Box", 59),
        ("pkg.compat.Box.dump", 61),
        ("pkg.compat.Box.check", 64),
    }


def test_python_graph_keeps_the_parameters_a_call_may_name() -> None:
    src = python(
        "pkg/opts.py",
        """
        class Option:
            def __init__(self, decls, /, multiple=False, *args, is_flag=None, _seen=0, **attrs):
                pass

            @staticmethod
            def parse(text, strict=True):
                pass

            @classmethod
            def make(cls, name):
                pass

        def option(*decls, cls=None, **attrs):
            pass

        def bare():
            pass
        """,
    )
    result = chunk_file(CORPUS, src, IndexerConfig())
    graph = extract_python(CORPUS, src, result.chunks, result.tree)
    name_of = {e.entity_id: e.qualified_name for e in graph.entities}
    # no receiver, positional-only, *args, **kwargs or private name; a static method has no receiver
    assert {name_of[k]: v for k, v in graph.keywords.items()} == {
        "pkg.opts.Option.__init__": ("multiple", "is_flag"),
        "pkg.opts.Option.parse": ("text", "strict"),
        "pkg.opts.Option.make": ("name",),
        "pkg.opts.option": ("cls",),
    }


def test_python_signature_header_is_the_def_line_without_decorators_or_comments() -> None:
    src = python(
        "pkg/net.py",
        """
        @retry(
            times=3,
        )
        async def fetch(
            url: str,  # where from
            *,
            timeout: float = 1.0,
        ) -> bytes:  # the body follows
            return b""


        class Point(
            Base,
            metaclass=Meta,
        ):
            pass
        """,
    )
    chunks = chunk_file(CORPUS, src, IndexerConfig()).chunks

    assert [c.embed_text.split("\n")[1] for c in chunks] == [
        "# async def fetch(url: str, *, timeout: float = 1.0) -> bytes",
        "# class Point(Base, metaclass=Meta)",
    ]
    assert spans(chunks) == [("function", "pkg.net.fetch", 1, 9), ("class", "pkg.net.Point", 12, 16)]


def test_python_with_a_dedented_bracket_continuation_is_not_a_syntax_error() -> None:
    """Valid Python that tree-sitter-python misreads (a bracketed line indented less than its
    statement) is parsed again with that line re-indented: same lines, no error."""
    code = (
        'class A:\n    def f(self):\n        return (1 +\n2)\n\n    def g(self):\n        return """\nx"""\n'
    )
    assert reindent_bracket_continuations(code) == code.replace("\n2)", "\n        2)")
    assert reindent_bracket_continuations("x = (1 +\n     2)\n") is None
    result = chunk_file(CORPUS, source("pkg/odd.py", code), IndexerConfig())
    assert not result.syntax_error and result.tree is not None
    assert spans(result.chunks) == [
        ("class", "pkg.odd.A", 1, 1),
        ("function", "pkg.odd.A.f", 2, 4),
        ("function", "pkg.odd.A.g", 6, 8),
    ]


def test_python_trailing_comments_at_body_indentation_belong_to_the_definition() -> None:
    src = python(
        "pkg/notes.py",
        """
        class A:
            def f(self):
                return 1
                # TODO: handle 2

            # helpers

            def g(self):
                pass
            # def h(self):
            #     pass
        # module level
        """,
    )
    assert spans(chunk_file(CORPUS, src, IndexerConfig()).chunks) == [
        ("class", "pkg.notes.A", 1, 1),
        ("function", "pkg.notes.A.f", 2, 4),
        ("class", "pkg.notes.A", 6, 6),
        ("function", "pkg.notes.A.g", 8, 9),
        ("class", "pkg.notes.A", 10, 11),
        ("module", "pkg.notes", 12, 12),
    ]


def test_module_names_from_paths() -> None:
    assert module_name("a/b/c.py") == "a.b.c"
    assert module_name("a/b/__init__.py") == "a.b"
    assert module_name("setup.py") == "setup"


# --- python graph --------------------------------------------------------------------------------

BASE_PY = '''
    """Base things."""
    LIMIT = 3


    def helper(x):
        return x + LIMIT


    class Base:
        kind = "base"

        def run(self):
            return self.step()

        def step(self):
            return helper(1)
    '''

APP_PY = """
    from pkg.base import Base, helper
    from . import base as base_mod


    class App(Base):
        def run(self):
            self.step()
            self.local()
            obj = make()
            obj.unknown()
            return helper(2)

        def local(self):
            return base_mod.helper(3)


    def make():
        return App()
    """


def build_graphs(files: list[SourceFile]) -> tuple[list[FileGraph], dict[str, list[Chunk]]]:
    graphs: list[FileGraph] = []
    chunks: dict[str, list[Chunk]] = {}
    for src in files:
        result = chunk_file(CORPUS, src, IndexerConfig())
        chunks[src.path] = result.chunks
        assert result.tree is not None
        graphs.append(extract_python(CORPUS, src, result.chunks, result.tree))
    return graphs, chunks


def readable(graphs: list[FileGraph]) -> tuple[set[tuple[str, str]], set[tuple[str, str, str]]]:
    """Entities as (type, qualified name); all relations, in-file and cross-file, by qualified name."""
    names = {e.entity_id: f"{e.type}:{e.qualified_name}" for g in graphs for e in g.entities}
    entities = {(e.type, e.qualified_name) for g in graphs for e in g.entities}
    relations = [r for g in graphs for r in g.relations] + resolve(CORPUS, graphs)
    return entities, {(names[r.source_id], r.type, names[r.target_id]) for r in relations}


def test_exact_entities_and_relations_of_a_two_module_package() -> None:
    files = [
        python("pkg/__init__.py", ""),
        python("pkg/base.py", BASE_PY),
        python("pkg/app.py", APP_PY),
    ]
    graphs, chunks = build_graphs(files)
    entities, relations = readable(graphs)

    assert entities == {
        ("module", "pkg"),
        ("module", "pkg.base"),
        ("variable", "pkg.base.LIMIT"),
        ("function", "pkg.base.helper"),
        ("class", "pkg.base.Base"),
        ("variable", "pkg.base.Base.kind"),
        ("function", "pkg.base.Base.run"),
        ("function", "pkg.base.Base.step"),
        ("module", "pkg.app"),
        ("import", "pkg.base.Base"),
        ("import", "pkg.base.helper"),
        ("import", "pkg.base"),
        ("class", "pkg.app.App"),
        ("function", "pkg.app.App.run"),
        ("function", "pkg.app.App.local"),
        ("function", "pkg.app.make"),
    }
    assert relations == {
        # structure
        ("module:pkg.base", "contains", "variable:pkg.base.LIMIT"),
        ("module:pkg.base", "contains", "function:pkg.base.helper"),
        ("module:pkg.base", "contains", "class:pkg.base.Base"),
        ("class:pkg.base.Base", "contains", "variable:pkg.base.Base.kind"),
        ("class:pkg.base.Base", "contains", "function:pkg.base.Base.run"),
        ("class:pkg.base.Base", "contains", "function:pkg.base.Base.step"),
        ("module:pkg.app", "contains", "import:pkg.base.Base"),
        ("module:pkg.app", "contains", "import:pkg.base.helper"),
        ("module:pkg.app", "contains", "import:pkg.base"),
        ("module:pkg.app", "contains", "class:pkg.app.App"),
        ("class:pkg.app.App", "contains", "function:pkg.app.App.run"),
        ("class:pkg.app.App", "contains", "function:pkg.app.App.local"),
        ("module:pkg.app", "contains", "function:pkg.app.make"),
        # within pkg/base.py
        ("function:pkg.base.helper", "references", "variable:pkg.base.LIMIT"),
        ("function:pkg.base.Base.run", "calls", "function:pkg.base.Base.step"),  # self.step()
        ("function:pkg.base.Base.step", "calls", "function:pkg.base.helper"),
        # within pkg/app.py
        ("function:pkg.app.App.run", "calls", "function:pkg.app.App.local"),  # self.local()
        ("function:pkg.app.App.run", "calls", "function:pkg.app.make"),
        ("function:pkg.app.make", "calls", "class:pkg.app.App"),  # no __init__: the class itself
        # across files (the corpus step)
        ("module:pkg.app", "imports", "module:pkg.base"),  # both imports, the relative one included
        ("class:pkg.app.App", "inherits", "class:pkg.base.Base"),
        ("function:pkg.app.App.run", "calls", "function:pkg.base.Base.step"),  # inherited self.step()
        ("function:pkg.app.App.run", "calls", "function:pkg.base.helper"),  # from pkg.base import helper
        ("function:pkg.app.App.local", "calls", "function:pkg.base.helper"),  # base_mod.helper()
    }
    # obj.unknown() links nowhere and is reported instead.
    app_run = next(e for g in graphs for e in g.entities if e.qualified_name == "pkg.app.App.run")
    assert resolve_refs(CORPUS, graphs).unresolved == [
        UnresolvedRef(app_run.entity_id, "obj.unknown", "calls", method="unknown")
    ]
    # Each definition points at the chunk holding its first line.
    chunk_by_id = {c.chunk_id: c for file_chunks in chunks.values() for c in file_chunks}
    for entity in (e for g in graphs for e in g.entities):
        if entity.type in ("function", "class"):
            assert chunk_by_id[entity.chunk_id].symbol == entity.qualified_name
            assert chunk_by_id[entity.chunk_id].kind == ("class" if entity.type == "class" else "function")
        elif entity.type in ("variable", "import") and entity.qualified_name != "pkg.base.Base.kind":
            assert chunk_by_id[entity.chunk_id].kind == "module"
        elif entity.qualified_name == "pkg":
            assert entity.chunk_id == ""  # an empty __init__.py has no chunk


def test_resolution_is_precise_about_locals_constructors_super_and_reexports() -> None:
    files = [
        python("lib/__init__.py", "from .engine import Engine\n"),
        python(
            "lib/engine.py",
            """
            def start():
                return 1


            class Engine:
                def __init__(self, start):
                    self.speed = start()  # the parameter, not the module function

                @classmethod
                def make(cls):
                    return cls(start)
            """,
        ),
        python(
            "app/main.py",
            """
            import lib
            from lib import Engine as E


            class Turbo(E):
                def __init__(self):
                    super().__init__(0)
                    self.speed.set(1)

            def main(items):
                lib.Engine.make()
                items.start()
                len(items)
                return Turbo()
            """,
        ),
    ]
    graphs, _ = build_graphs(files)
    _, relations = readable(graphs)
    edges = {r for r in relations if r[1] in ("calls", "inherits", "imports")}
    assert edges == {
        ("module:lib", "imports", "module:lib.engine"),
        ("module:app.main", "imports", "module:lib"),
        ("function:lib.engine.Engine.make", "calls", "class:lib.engine.Engine"),  # cls(...)
        ("function:lib.engine.Engine.make", "calls", "function:lib.engine.Engine.__init__"),
        ("class:app.main.Turbo", "inherits", "class:lib.engine.Engine"),  # through the package re-export
        ("function:app.main.Turbo.__init__", "calls", "function:lib.engine.Engine.__init__"),  # super()
        ("function:app.main.main", "calls", "function:lib.engine.Engine.make"),
        ("function:app.main.main", "calls", "class:app.main.Turbo"),  # Turbo()
        ("function:app.main.main", "calls", "function:app.main.Turbo.__init__"),
    }
    assert ("function:lib.engine.Engine.make", "references", "function:lib.engine.start") in relations
    names = {e.entity_id: e.qualified_name for g in graphs for e in g.entities}
    unresolved = {(names[u.source_id], u.name) for u in resolve_refs(CORPUS, graphs).unresolved}
    assert unresolved == {
        ("lib.engine.Engine.__init__", "start"),
        ("app.main.Turbo.__init__", "self.speed.set"),
        ("app.main.main", "items.start"),
    }


def test_instantiation_raise_and_decorators_are_calls_of_the_class_its_init_and_the_decorator() -> None:
    files = [
        python(
            "kit/errors.py",
            """
            class KitError(Exception):
                def __init__(self, message):
                    super().__init__(message)


            class Plain(KitError):
                pass
            """,
        ),
        python(
            "kit/deco.py",
            """
            def register(fn):
                return fn


            def options(**kw):
                return register
            """,
        ),
        python(
            "kit/use.py",
            """
            from kit import deco
            from kit.deco import register, options
            from kit.errors import KitError, Plain


            @register
            class Widget:
                @deco.register
                def draw(self):
                    raise KitError("no")

                @options(size=1)
                def size(self):
                    raise Plain("inherited __init__")


            def build():
                return Widget()
            """,
        ),
    ]
    graphs, _ = build_graphs(files)
    _, relations = readable(graphs)
    calls = {r for r in relations if r[1] == "calls"}
    assert calls == {
        ("class:kit.use.Widget", "calls", "function:kit.deco.register"),  # @register on a class
        ("function:kit.use.Widget.draw", "calls", "function:kit.deco.register"),  # @deco.register
        ("function:kit.use.Widget.draw", "calls", "class:kit.errors.KitError"),  # raise KitError(...)
        ("function:kit.use.Widget.draw", "calls", "function:kit.errors.KitError.__init__"),
        ("function:kit.use.Widget.size", "calls", "function:kit.deco.options"),  # @options(size=1)
        ("function:kit.use.Widget.size", "calls", "class:kit.errors.Plain"),
        ("function:kit.use.Widget.size", "calls", "function:kit.errors.KitError.__init__"),  # inherited
        ("function:kit.use.build", "calls", "class:kit.use.Widget"),  # no __init__: the class alone
    }
    # A bare decorator is a call, so it is not also a plain read.
    assert ("class:kit.use.Widget", "references", "function:kit.deco.register") not in relations


INFER_MODELS_PY = """
    class Cart:
        def add_item(self, item):
            return item

        def checkout(self):
            return 1


    class Order:
        def checkout(self):
            return self.checkout_later()


    class A:
        def render(self):
            return "a"


    class B:
        def render(self):
            return "b"


    class C:
        def render(self):
            return "c"


    class D:
        def render(self):
            return "d"
    """

INFER_USE_PY = """
    import json


    def buy(cart, order, view):
        cart.add_item(1)  # one add_item in the corpus: confidence 1
        order.checkout()  # two: 0.5 each
        view.render()  # four: above the cap of 3, left unresolved
        cart.items.append(2)  # a builtin type's method name: never inferred
        json.dumps({})  # an import from outside the corpus: never inferred
        return helper()  # a plain unknown name: nothing to infer from
    """


def inferred_calls(graphs: list[FileGraph], max_candidates: int) -> set[tuple[str, str, float]]:
    names = {e.entity_id: e.qualified_name for g in graphs for e in g.entities}
    links = resolve_refs(CORPUS, graphs, max_candidates)
    assert all(r.type == "calls" for r in links.relations if r.inferred)
    return {(names[r.source_id], names[r.target_id], r.confidence) for r in links.relations if r.inferred}


def test_calls_on_receivers_of_unknown_type_are_inferred_by_method_name_with_a_confidence() -> None:
    graphs, _ = build_graphs([python("shop/models.py", INFER_MODELS_PY), python("shop/use.py", INFER_USE_PY)])
    assert inferred_calls(graphs, 3) == {
        ("shop.use.buy", "shop.models.Cart.add_item", 1.0),
        ("shop.use.buy", "shop.models.Cart.checkout", 0.5),
        ("shop.use.buy", "shop.models.Order.checkout", 0.5),
    }
    # The cap is the config's: at 4 the renders are inferred too, at 0 nothing is.
    assert {(s, t, c) for s, t, c in inferred_calls(graphs, 4) if t.endswith(".render")} == {
        ("shop.use.buy", f"shop.models.{cls}.render", 0.25) for cls in "ABCD"
    }
    assert inferred_calls(graphs, 0) == set()
    # Proven edges stay proven and carry no confidence; the guessed calls stay listed as unresolved.
    links = resolve_refs(CORPUS, graphs, 3)
    proven = [r for g in graphs for r in g.relations if r.type == "calls"] + [
        r for r in links.relations if r.type == "calls" and not r.inferred
    ]
    assert all(r.confidence == 1.0 and not r.inferred for r in proven)
    names = {e.entity_id: e.qualified_name for g in graphs for e in g.entities}
    assert {(names[u.source_id], u.name, u.method) for u in links.unresolved} == {
        ("shop.models.Order.checkout", "self.checkout_later", "checkout_later"),
        ("shop.use.buy", "cart.add_item", "add_item"),
        ("shop.use.buy", "order.checkout", "checkout"),
        ("shop.use.buy", "view.render", "render"),
        ("shop.use.buy", "cart.items.append", "append"),
        ("shop.use.buy", "json.dumps", ""),
        ("shop.use.buy", "helper", ""),
    }


def test_an_inferred_call_is_dropped_where_the_same_call_is_proven() -> None:
    code = """
        class Cart:
            def add_item(self, item):
                return item

            def fill(self, other):
                self.add_item(1)  # proven
                other.add_item(2)  # the same pair, by name: not a second, weaker edge
        """
    graphs, _ = build_graphs([python("shop/cart.py", code)])
    assert inferred_calls(graphs, 3) == set()
    _, relations = readable(graphs)
    assert ("function:shop.cart.Cart.fill", "calls", "function:shop.cart.Cart.add_item") in relations


def test_sample_repo_links_callers_across_files() -> None:
    files = [i for i in walk_corpus(FIXTURE_REPO, IndexerConfig()) if isinstance(i, SourceFile)]
    graphs, _ = build_graphs([f for f in files if f.language == "python"])
    _, relations = readable(graphs)
    assert (
        "function:shop.cart.Cart.total_price",
        "calls",
        "function:shop.pricing.compute_discount",
    ) in relations
    assert ("function:shop.cart.Cart.total_price", "calls", "function:shop.cart.Cart.subtotal") in relations
    assert ("class:shop.payment.CardGateway", "inherits", "class:shop.payment.PaymentGateway") in relations
    assert ("module:shop.cart", "imports", "module:shop.pricing") in relations


def test_calls_on_locals_whose_class_the_code_states_follow_that_class() -> None:
    """`x.m()` is a proven call of C.m when every binding of x states class C: an annotation
    (`Optional`, `| None` and string forms too) or `x = C(...)`, in the function or at module
    level; `C(...).m()` too. A builtin method name (`replace`) is then no obstacle. Any other
    binding, a container annotation, a function's result or a class without `m` leave x unknown."""
    models = """
        class URL:
            def replace(self, **parts):
                return URL()

            def render(self):
                return ""


        class Page:
            def render(self):
                return ""


        def make_url():
            return URL()
        """
    use = """
        from typing import Optional

        from web.models import URL, Page, make_url

        DEFAULT = URL()


        def annotated(url: URL, page: "Page | None", other: Optional[URL], urls: list[URL], n: int):
            url.replace(path="/")
            page.render()
            other.render()
            urls.append(1)
            n.bit_length()


        def constructed(flag):
            fresh = URL()
            fresh.replace(path="/")
            URL().render()
            made = make_url()
            made.replace(path="/")
            mixed = URL()
            if flag:
                mixed = Page()
            mixed.render()
            looped = URL()
            for looped in flag:
                pass
            looped.replace()
            DEFAULT.replace(path="/")
            make_url().render()
        """
    graphs, _ = build_graphs(
        [python("web/__init__.py", ""), python("web/models.py", models), python("web/use.py", use)]
    )
    names = {e.entity_id: e.qualified_name for g in graphs for e in g.entities}
    links = resolve_refs(CORPUS, graphs, 3)
    relations = [r for g in graphs for r in g.relations] + links.relations
    proven = {
        (names[r.source_id], names[r.target_id]) for r in relations if r.type == "calls" and not r.inferred
    }
    assert {c for c in proven if c[0].startswith("web.use")} == {
        ("web.use.annotated", "web.models.URL.replace"),
        ("web.use.annotated", "web.models.Page.render"),
        ("web.use.annotated", "web.models.URL.render"),
        ("web.use.constructed", "web.models.URL"),
        ("web.use.constructed", "web.models.Page"),
        ("web.use.constructed", "web.models.make_url"),
        ("web.use.constructed", "web.models.URL.replace"),  # fresh and DEFAULT
        ("web.use.constructed", "web.models.URL.render"),  # URL().render()
        ("web.use", "web.models.URL"),  # DEFAULT = URL()
    }
    inferred = inferred_calls(graphs, 3)
    # mixed.render() has two candidate classes: inferred by name, as before
    assert ("web.use.constructed", "web.models.Page.render", 0.5) in inferred
    unresolved = {(names[u.source_id], u.name) for u in links.unresolved}
    # made.replace / looped.replace: unknown receivers with a builtin method name stay unresolved
    assert ("web.use.constructed", "made.replace") in unresolved
    assert ("web.use.constructed", "looped.replace") in unresolved
    assert not any(name.startswith("make_url(") for _, name in unresolved)


def test_calls_on_attributes_whose_class_the_class_states_follow_that_class() -> None:
    """`self.x.m()` is a proven call of C.m when every binding of the attribute states C: a class
    body annotation, `self.x: C = ...`, `self.x = C(...)`, or `self.x = param` of a parameter
    annotated C. An attribute bound to anything else, even once, stays of unknown type."""
    code = """
        class Router:
            def url_path_for(self, name):
                return name


        class Store:
            def url_path_for(self, name):
                return name

            def get(self, key):
                return key


        class App:
            cache: Store

            def __init__(self, router: Router, debug):
                self.router = router
                self.fallback = Router()
                self.state: Store = Store()
                self.debug = debug

            def reset(self, items):
                self.state = items

            def url_for(self, name):
                self.router.url_path_for(name)
                self.fallback.url_path_for(name)
                self.cache.get(name)
                self.state.get(name)
                return self.debug.url_path_for(name)
        """
    graphs, _ = build_graphs([python("web/app.py", code)])
    names = {e.entity_id: e.qualified_name for g in graphs for e in g.entities}
    links = resolve_refs(CORPUS, graphs, 3)
    relations = [r for g in graphs for r in g.relations] + links.relations
    proven = {
        names[r.target_id]
        for r in relations
        if r.type == "calls" and not r.inferred and names[r.source_id] == "web.app.App.url_for"
    }
    assert proven == {"web.app.Router.url_path_for", "web.app.Store.get"}
    unresolved = {u.name for u in links.unresolved if names[u.source_id] == "web.app.App.url_for"}
    assert unresolved == {"self.state.get", "self.debug.url_path_for"}
