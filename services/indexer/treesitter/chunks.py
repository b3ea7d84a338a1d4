"""Chunks of a tree-sitter parsed file: one per function/method, class headers without their methods,
module-level code in between; long pieces split into overlapping windows."""

from __future__ import annotations

from tree_sitter import Node

from services.indexer.pysyntax import module_name
from services.indexer.spans import ChunkBuilder, Span, windows
from services.indexer.treesitter.outline import Definition, module_of, outline, signature
from tribrid.config import IndexerConfig

# Lines that only close a block: a gap made of these alone is not worth a chunk.
_CLOSERS = frozenset(("", "}", "};", "})", "});", ")", ");", "]", "];", "},"))
# Python's equivalent: a lone block keyword, like the `else:` between two conditional defs.
_BARE_BLOCK_LINES = frozenset(("", "else:", "try:", "finally:", "except:"))


class TreeChunker:
    def __init__(self, builder: ChunkBuilder, cfg: IndexerConfig, language: str) -> None:
        self.builder = builder
        self.cfg = cfg
        self.language = language
        # Python symbols use dotted module names (pkg.mod.Class.method), as its graph extractor does.
        path = builder.source.path
        self.module = module_name(path) if language == "python" else module_of(path)
        self.filler = _BARE_BLOCK_LINES if language == "python" else _CLOSERS

    def run(self, root: Node) -> None:
        members = outline(self.language, root)
        for definition in members:
            self._add(definition, self.module, "")
        header = [f"# module: {self.module}"]
        for gap in self._gaps((1, len(self.builder.lines)), members):
            self._add_windows(gap, "module", self.module, header)

    def _add(self, definition: Definition, scope: str, class_path: str) -> None:
        if definition.owner and not definition.is_impl:  # a Go method: named through its receiver type
            scope, class_path = f"{self.module}.{definition.owner}", definition.owner
        symbol = f"{scope}.{definition.name}"
        header = [f"# class: {class_path}"] if class_path else []
        declaration = signature(definition)
        header.append(f"# {declaration}")
        named = f"{symbol}: {declaration}"
        if definition.kind == "function":
            self._add_windows(definition.lines, "function", symbol, header, named)
            return
        inner_path = f"{class_path}.{definition.name}" if class_path else definition.name
        for member in definition.members:
            self._add(member, symbol, inner_path)
        for gap in self._gaps(definition.lines, definition.members):
            self._add_windows(gap, "class", symbol, header, named)

    def _gaps(self, span: Span, members: list[Definition]) -> list[Span]:
        """Non-blank runs of span's lines outside every member's lines."""
        gaps: list[Span] = []
        cursor = span[0]
        for start, end in sorted(m.lines for m in members):
            gaps.append((cursor, start - 1))
            cursor = max(cursor, end + 1)
        gaps.append((cursor, span[1]))
        trimmed = [t for g in gaps if g[0] <= g[1] and (t := self.builder.trim(g)) is not None]
        return [t for t in trimmed if not self._only_filler(t)]

    def _only_filler(self, span: Span) -> bool:
        """A run of closing brackets or bare block keywords: nothing worth a chunk."""
        lines = self.builder.lines[span[0] - 1 : span[1]]
        return all(line.strip() in self.filler for line in lines)

    def _add_windows(self, span: Span, kind: str, symbol: str, header: list[str], named: str = "") -> None:
        for window in windows(span, self.cfg.max_chunk_lines, self.cfg.text_chunk_overlap):
            self.builder.add(window, kind, symbol, header, named)
