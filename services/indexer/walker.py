"""Walk a corpus: honour .gitignore files, keep readable UTF-8 text, say why anything else is skipped."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pathspec

from services.indexer.documents import (
    BINARY_DOCUMENT_LANGUAGES,
    DOCUMENT_LANGUAGES,
    DocumentError,
    Outline,
    extract_binary,
)
from tribrid.config import IndexerConfig

BINARY_SNIFF_BYTES = 8192

_LANGUAGE_BY_SUFFIX: dict[str, str] = {
    **dict.fromkeys((".py", ".pyi", ".pyw"), "python"),
    **dict.fromkeys((".js", ".mjs", ".cjs", ".jsx"), "javascript"),
    **dict.fromkeys((".ts", ".tsx", ".mts", ".cts"), "typescript"),
    ".go": "go",
    ".java": "java",
    **dict.fromkeys((".kt", ".kts"), "kotlin"),
    ".scala": "scala",
    ".rs": "rust",
    **dict.fromkeys((".c", ".h"), "c"),
    **dict.fromkeys((".cc", ".cpp", ".cxx", ".hh", ".hpp", ".hxx"), "cpp"),
    ".cs": "csharp",
    ".swift": "swift",
    **dict.fromkeys((".m", ".mm"), "objc"),
    ".rb": "ruby",
    ".php": "php",
    **dict.fromkeys((".pl", ".pm"), "perl"),
    ".lua": "lua",
    ".r": "r",
    ".jl": "julia",
    **dict.fromkeys((".hs", ".lhs"), "haskell"),
    **dict.fromkeys((".ex", ".exs"), "elixir"),
    ".erl": "erlang",
    **dict.fromkeys((".clj", ".cljs", ".cljc", ".edn"), "clojure"),
    ".dart": "dart",
    ".zig": "zig",
    **dict.fromkeys((".sh", ".bash", ".zsh", ".fish", ".ksh"), "shell"),
    **dict.fromkeys((".ps1", ".psm1"), "powershell"),
    **dict.fromkeys((".bat", ".cmd"), "batch"),
    ".sql": "sql",
    **dict.fromkeys((".html", ".htm"), "html"),
    **dict.fromkeys((".css", ".scss", ".sass", ".less"), "css"),
    ".vue": "vue",
    ".svelte": "svelte",
    **dict.fromkeys((".md", ".markdown", ".mdx"), "markdown"),
    ".rst": "rst",
    ".pdf": "pdf",
    ".docx": "docx",
    ".adoc": "asciidoc",
    ".tex": "latex",
    **dict.fromkeys((".yaml", ".yml"), "yaml"),
    ".toml": "toml",
    **dict.fromkeys((".json", ".jsonc", ".json5"), "json"),
    **dict.fromkeys((".xml", ".xsd", ".xsl", ".svg"), "xml"),
    ".proto": "protobuf",
    **dict.fromkeys((".graphql", ".gql"), "graphql"),
    **dict.fromkeys((".tf", ".tfvars", ".hcl"), "hcl"),
    ".nix": "nix",
    ".cmake": "cmake",
    ".mk": "makefile",
    **dict.fromkeys((".gradle", ".groovy"), "groovy"),
    **dict.fromkeys((".ini", ".cfg", ".conf", ".properties", ".env"), "ini"),
    **dict.fromkeys((".txt", ".text", ".csv", ".tsv", ".in", ".lock", ".log"), "text"),
}

# Extensionless names with a known language; any other extensionless file counts as text
# (LICENSE, CODEOWNERS, .gitignore, scripts without a suffix); the binary sniff still applies.
_LANGUAGE_BY_NAME: dict[str, str] = {
    "makefile": "makefile",
    "gnumakefile": "makefile",
    "dockerfile": "dockerfile",
    "containerfile": "dockerfile",
    "cmakelists.txt": "cmake",
    "gemfile": "ruby",
    "rakefile": "ruby",
    "jenkinsfile": "groovy",
    "vagrantfile": "ruby",
}


@dataclass(frozen=True, slots=True)
class SourceFile:
    path: str  # relative to the corpus root, "/"-separated
    text: str  # decoded UTF-8 (BOM dropped), newlines normalised to "\n"
    language: str
    content_hash: str  # sha256 hex of the file's bytes as stored
    # PDF and DOCX: `text` is the extracted text and this its outline (headings, blocks, pages).
    outline: Outline | None = None


@dataclass(frozen=True, slots=True)
class Skipped:
    path: str
    # too_large | binary | undecodable | symlink | unsupported | special | unreadable, and for
    # documents: empty | corrupt | encrypted | no_text_layer
    reason: str


def detect_language(path: str) -> str | None:
    """Language of a file from its name, or None if it is not a text format worth indexing."""
    name = path.rsplit("/", 1)[-1].lower()
    if name in _LANGUAGE_BY_NAME:
        return _LANGUAGE_BY_NAME[name]
    if name.startswith(("dockerfile.", "containerfile.")):
        return "dockerfile"
    stem, dot, suffix = name.rpartition(".")
    if not dot or not stem:  # no extension; a leading dot (".gitignore") is a name, not one
        return "text"
    return _LANGUAGE_BY_SUFFIX.get("." + suffix)


def walk_corpus(root: Path, cfg: IndexerConfig) -> Iterator[SourceFile | Skipped]:
    """Every file under root that .gitignore does not exclude, in sorted path order.

    `.git` is never entered and symlinks are never followed (no loops, nothing outside root).
    """
    yield from _walk_dir(root, "", [], cfg)


@dataclass(frozen=True, slots=True)
class _IgnoreFile:
    base: str  # directory of the .gitignore, relative to root, "" or ending in "/"
    spec: pathspec.GitIgnoreSpec


def _walk_dir(
    directory: Path, rel_dir: str, ignores: list[_IgnoreFile], cfg: IndexerConfig
) -> Iterator[SourceFile | Skipped]:
    try:
        with os.scandir(directory) as scan:
            entries = list(scan)
    except OSError:
        yield Skipped(rel_dir.rstrip("/") or ".", "unreadable")
        return
    ignores = ignores + _read_gitignore(directory, rel_dir)
    # A directory sorts as "name/", so a depth-first walk yields paths in plain sorted order.
    entries.sort(key=lambda e: e.name + "/" if _is_real_dir(e) else e.name)
    for entry in entries:
        rel_path = rel_dir + entry.name
        if entry.name == ".git":
            continue
        is_dir = _is_real_dir(entry)
        if _is_ignored(rel_path + "/" if is_dir else rel_path, ignores):
            continue
        if entry.is_symlink():
            yield Skipped(rel_path, "symlink")
        elif is_dir:
            yield from _walk_dir(Path(entry.path), rel_path + "/", ignores, cfg)
        elif not entry.is_file(follow_symlinks=False):
            yield Skipped(rel_path, "special")  # fifo, socket, device: reading could block
        else:
            yield _read_file(Path(entry.path), rel_path, cfg)


def _is_real_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


def _read_gitignore(directory: Path, rel_dir: str) -> list[_IgnoreFile]:
    path = directory / ".gitignore"
    if not path.is_file() or path.is_symlink():
        return []
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    return [_IgnoreFile(rel_dir, pathspec.GitIgnoreSpec.from_lines(lines))]


def _is_ignored(rel_path: str, ignores: list[_IgnoreFile]) -> bool:
    """Git's precedence: the deepest .gitignore with a matching pattern decides (negations included)."""
    for ignore in reversed(ignores):
        if not rel_path.startswith(ignore.base):
            continue
        decision = ignore.spec.check_file(rel_path[len(ignore.base) :]).include
        if decision is not None:
            return bool(decision)
    return False


def _read_file(path: Path, rel_path: str, cfg: IndexerConfig) -> SourceFile | Skipped:
    language = detect_language(rel_path)
    if language is None:
        return Skipped(rel_path, "unsupported")
    limit = cfg.max_binary_document_bytes if language in BINARY_DOCUMENT_LANGUAGES else cfg.max_file_bytes
    try:
        if path.stat().st_size > limit:
            return Skipped(rel_path, "too_large")
        data = path.read_bytes()
    except OSError:
        return Skipped(rel_path, "unreadable")
    if len(data) > limit:  # grew since stat
        return Skipped(rel_path, "too_large")
    if language in BINARY_DOCUMENT_LANGUAGES:
        return _read_binary_document(data, rel_path, language)
    if b"\0" in data[:BINARY_SNIFF_BYTES]:
        return Skipped(rel_path, "binary")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return Skipped(rel_path, "undecodable")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if language in DOCUMENT_LANGUAGES and not text.strip():
        return Skipped(rel_path, "empty")
    return SourceFile(rel_path, text, language, hashlib.sha256(data).hexdigest())


def _read_binary_document(data: bytes, rel_path: str, language: str) -> SourceFile | Skipped:
    """A PDF or DOCX as its extracted text; an unreadable one is skipped with the reason."""
    if not data.strip():
        return Skipped(rel_path, "empty")
    try:
        extracted = extract_binary(language, data, rel_path)
    except DocumentError as error:
        return Skipped(rel_path, error.reason)
    return SourceFile(rel_path, extracted.text, language, hashlib.sha256(data).hexdigest(), extracted.outline)
