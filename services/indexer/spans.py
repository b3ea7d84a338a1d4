"""What the chunkers build on: line spans, windows over them, and the builder that turns spans of one
file into chunks (used by `services.indexer.chunker` and `services.indexer.treesitter.chunks`)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from services.indexer.walker import SourceFile
from tribrid.models import Chunk, stable_id

Span = tuple[int, int]  # 1-based inclusive line range


@dataclass(slots=True)
class ChunkBuilder:
    """Builds chunks of one file; numbers chunks sharing (kind, symbol) to keep their ids distinct."""

    corpus_id: str
    source: SourceFile
    lines: list[str]
    chunks: list[Chunk] = field(default_factory=list)
    _ordinals: Counter[tuple[str, str]] = field(default_factory=Counter)

    def add(self, span: Span, kind: str, symbol: str, header: list[str], signature: str = "") -> None:
        start, end = span
        ordinal = self._ordinals[(kind, symbol)]
        self._ordinals[(kind, symbol)] += 1
        content = "\n".join(self.lines[start - 1 : end])
        context = "\n".join([f"# file: {self.source.path}", *header])
        self.chunks.append(
            Chunk(
                chunk_id=stable_id(self.corpus_id, self.source.path, kind, symbol, str(ordinal)),
                corpus_id=self.corpus_id,
                file_path=self.source.path,
                start_line=start,
                end_line=end,
                language=self.source.language,
                kind=kind,
                symbol=symbol,
                content=content,
                embed_text=f"{context}\n{content}",
                signature=signature,
            )
        )

    def is_blank(self, line: int) -> bool:
        return not self.lines[line - 1].strip()

    def trim(self, span: Span) -> Span | None:
        """The span without its leading and trailing blank lines; None if nothing else is left."""
        start, end = span
        while start <= end and self.is_blank(start):
            start += 1
        while end >= start and self.is_blank(end):
            end -= 1
        return (start, end) if start <= end else None

    def sorted_chunks(self) -> list[Chunk]:
        return sorted(self.chunks, key=lambda c: (c.start_line, c.end_line))


def windows(span: Span, size: int, overlap: int) -> list[Span]:
    """Cover span with windows of `size` lines, consecutive windows sharing `overlap` lines."""
    start, end = span
    step = size - min(overlap, size - 1)  # always advance
    out: list[Span] = []
    while True:
        window_end = min(start + size - 1, end)
        out.append((start, window_end))
        if window_end >= end:
            return out
        start += step
