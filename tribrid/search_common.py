"""What every leg does the same way: validate a SearchRequest, build SQL filters, emit ChunkMatch."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

import asyncpg

from tribrid.config import LimitsConfig
from tribrid.options import invalid
from tribrid.stores.postgres import ChunkRow, fetch_contents
from tribrid.v1 import common_pb2, legs_pb2

CORPUS_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def validate_corpus_id(corpus_id: str) -> str:
    if not CORPUS_ID_RE.match(corpus_id):
        raise invalid(f"corpus_id {corpus_id!r} is invalid: use 1..64 letters, digits, '_' or '-'")
    return corpus_id


@dataclass(frozen=True, slots=True)
class SearchParams:
    corpus_id: str
    query: str
    top_k: int
    path_regex: str | None
    languages: tuple[str, ...]


def validate_search(
    request: common_pb2.SearchRequest, default_top_k: int, limits: LimitsConfig
) -> SearchParams:
    """Check a request's common fields; raise RequestError(INVALID_ARGUMENT) naming what is wrong."""
    max_top_k, max_query_chars = limits.max_top_k, limits.max_query_chars
    validate_corpus_id(request.corpus_id)
    query = request.query.strip()
    if not query:
        raise invalid("query is empty: send the text to search for")
    if len(query) > max_query_chars:
        raise invalid(f"query is {len(query)} characters long; the maximum is {max_query_chars}")
    top_k = request.top_k if request.HasField("top_k") else default_top_k
    if not 1 <= top_k <= max_top_k:
        raise invalid(f"top_k must be between 1 and {max_top_k}, got {top_k}")
    glob = request.filters.path_glob.strip()
    # the filters reach PostgreSQL as text parameters, which cannot hold a NUL character
    if "\x00" in glob or any("\x00" in lang for lang in request.filters.languages):
        raise invalid("filters: path_glob and languages must not contain a NUL character")
    return SearchParams(
        corpus_id=request.corpus_id,
        query=query,
        top_k=top_k,
        path_regex=glob_to_regex(glob) if glob else None,
        languages=tuple(sorted({lang.strip().lower() for lang in request.filters.languages if lang.strip()})),
    )


def glob_to_regex(glob: str) -> str:
    """A POSIX regex (for PostgreSQL's `~`) equivalent to a path glob.

    `**` crosses directories, `*` and `?` don't; a glob without '/' matches the file name at any
    depth, as in .gitignore (so `*.py` means every Python file).
    """
    if "/" not in glob:
        glob = "**/" + glob
    out: list[str] = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.sub(r"([\\.^$|()\[\]{}+*?])", r"\\\1", glob[i]))
            i += 1
    return "^" + "".join(out) + "$"


@dataclass(slots=True)
class SqlFilter:
    """Extra `AND ...` clauses on the chunks table and their positional arguments."""

    clauses: list[str] = field(default_factory=list)
    args: list[object] = field(default_factory=list)

    def sql(self) -> str:
        return "".join(f" AND {c}" for c in self.clauses)


def chunk_filter(params: SearchParams, first_arg: int, alias: str = "c") -> SqlFilter:
    """Filter clauses for path glob and languages, numbering arguments from `first_arg`."""
    flt = SqlFilter()
    if params.path_regex is not None:
        flt.clauses.append(f"{alias}.file_path ~ ${first_arg + len(flt.args)}")
        flt.args.append(params.path_regex)
    if params.languages:
        flt.clauses.append(f"{alias}.language = ANY(${first_arg + len(flt.args)}::text[])")
        flt.args.append(list(params.languages))
    return flt


class ScoredChunk(NamedTuple):
    """A leg's hit with its row (a named tuple: each leg builds one per candidate, and a frozen
    dataclass costs three times as much to build)."""

    chunk: ChunkRow
    score: float
    detail: str = ""


def to_matches(
    scored: list[ScoredChunk],
    leg: legs_pb2.Leg.ValueType,
    graph_provenance: Mapping[str, common_pb2.GraphProvenance] | None = None,
) -> list[common_pb2.ChunkMatch]:
    """ChunkMatch messages in rank order, each explaining its rank and raw score in this leg; no
    content (`fill_content` adds it where a caller asks).

    graph_provenance (graph leg): chunk id -> how the graph reached it, put in LegExplain.graph.
    """
    matches = []
    for rank, item in enumerate(scored, start=1):
        c = item.chunk
        match = common_pb2.ChunkMatch(
            chunk_id=c.chunk_id,
            corpus_id=c.corpus_id,
            file_path=c.file_path,
            start_line=c.start_line,
            end_line=c.end_line,
            language=c.language,
            score=item.score,
            leg=leg,
            kind=c.kind,
        )
        # the fields most chunks leave empty are set only when they hold something: each keyword
        # costs, and an empty one is what an unset field reads as (a code chunk has no pages)
        if c.symbol:
            match.symbol = c.symbol
        if c.document_title:
            match.document_title = c.document_title
        if c.section:
            match.section = c.section
        if c.page_start:
            match.page_start = c.page_start
        if c.page_end:
            match.page_end = c.page_end
        if c.document_metadata != "{}":
            match.document_metadata.update(json.loads(c.document_metadata))
        provenance = graph_provenance.get(c.chunk_id) if graph_provenance else None
        # added in place: a LegExplain built apart and passed in a list is built twice
        match.explain.add(leg=leg, rank=rank, raw_score=item.score, detail=item.detail, graph=provenance)
        matches.append(match)
    return matches


async def leg_response(
    pool: asyncpg.Pool,
    corpus_id: str,
    scored: list[ScoredChunk],
    leg: legs_pb2.Leg.ValueType,
    started: float,
    include_content: bool,
    graph_provenance: Mapping[str, common_pb2.GraphProvenance] | None = None,
) -> common_pb2.SearchResponse:
    """A leg's answer: its matches in rank order, their content when asked, the time since `started`
    (a `time.perf_counter()` reading)."""
    matches = to_matches(scored, leg, graph_provenance)
    if include_content:
        await fill_content(pool, corpus_id, matches)
    return common_pb2.SearchResponse(matches=matches, took_ms=(time.perf_counter() - started) * 1000)


async def fill_content(pool: asyncpg.Pool, corpus_id: str, matches: list[common_pb2.ChunkMatch]) -> None:
    """Set each match's content with one query by id in the corpus's committed generation. A match
    whose chunk a commit removed since it was found keeps no content and is dropped."""
    contents = await fetch_contents(pool, corpus_id, [m.chunk_id for m in matches])
    kept = [m for m in matches if m.chunk_id in contents]
    for match in kept:
        match.content = contents[match.chunk_id]
    matches[:] = kept
