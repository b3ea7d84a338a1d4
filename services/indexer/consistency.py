"""Does a corpus's index hold together? Counts of what an interrupted run could leave behind.

Every count is 0 for a corpus whose last run completed: no chunk, posting, entity or edge twice,
none left over from a generation that is not the committed one, every posting on a committed
chunk, every entity on a chunk and a file PostgreSQL holds, every edge between two entities of the
graph, and only the committed generation's graph stored. Used by the kill-while-indexing
benchmark (bench/faults_index.py) and its test.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import asyncpg

from tribrid.graphstore import GraphStore
from tribrid.graphstore.base import corpus_of_key, graph_key
from tribrid.stores.postgres import committed


@dataclass(frozen=True, slots=True)
class Consistency:
    generation: int  # the committed generation (0: none)
    chunks: int  # committed chunk rows
    entities: int
    relations: int
    duplicate_chunks: int  # committed rows beyond the first of a chunk id
    uncommitted_chunks: int  # rows of a generation after the committed one
    chunks_without_file: int  # committed chunks of a file the files table does not list
    chunk_count_mismatch: int  # |corpora.chunk_count - committed rows|
    duplicate_postings: int  # committed postings beyond the first of a (term, chunk)
    uncommitted_postings: int
    orphan_postings: int  # postings whose chunk row is gone
    term_stats_mismatch: int  # terms whose stored document frequency is not the postings' count
    duplicate_entities: int
    entities_without_chunk: int  # entities naming a chunk id PostgreSQL has not committed
    entities_without_file: int  # entities of a file the files table does not list
    duplicate_edges: int
    orphan_edges: int  # edges with an end that is not an entity of the graph
    stale_graphs: int  # stored graphs of the corpus other than the committed generation's

    def problems(self) -> dict[str, int]:
        """The nonzero counts of what should not be there."""
        totals = {"generation", "chunks", "entities", "relations"}
        return {name: value for name, value in asdict(self).items() if name not in totals and value}


async def check_corpus(
    pool: asyncpg.Pool, store: GraphStore, corpus_id: str, stored_graph_keys: Sequence[str]
) -> Consistency:
    """`stored_graph_keys`: every graph key the graph database holds (see `falkordb_graph_keys`)."""
    generation = int(
        await pool.fetchval("SELECT generation FROM corpora WHERE corpus_id = $1", corpus_id) or 0
    )
    chunk_rows = await pool.fetch(
        f"SELECT chunk_id, file_path FROM chunks c WHERE c.corpus_id = $1 AND {committed('c')}", corpus_id
    )
    chunk_ids = Counter(r["chunk_id"] for r in chunk_rows)
    files = {
        r["file_path"]
        for r in await pool.fetch("SELECT file_path FROM files WHERE corpus_id = $1", corpus_id)
    }
    stored_count = int(
        await pool.fetchval("SELECT chunk_count FROM corpora WHERE corpus_id = $1", corpus_id) or 0
    )

    async def count(sql: str) -> int:
        return int(await pool.fetchval(sql, corpus_id) or 0)

    key = graph_key(corpus_id, generation)
    entity_ids = Counter(await store.entity_ids(key)) if generation else Counter[str]()
    entities = await store.get_entities(key, sorted(entity_ids), with_unresolved=False) if generation else []
    relations = await store.all_relations(key) if generation else []
    edges = Counter((r.source_id, r.type, r.target_id) for r in relations)
    return Consistency(
        generation=generation,
        chunks=len(chunk_rows),
        entities=len(entity_ids),
        relations=len(edges),
        duplicate_chunks=sum(n - 1 for n in chunk_ids.values()),
        uncommitted_chunks=await count(
            f"SELECT count(*) FROM chunks c WHERE c.corpus_id = $1 AND NOT {committed('c')}"
        ),
        chunks_without_file=sum(1 for r in chunk_rows if r["file_path"] not in files),
        chunk_count_mismatch=abs(stored_count - len(chunk_rows)),
        duplicate_postings=await count(
            f"SELECT count(*) - count(DISTINCT (p.term, p.chunk_id)) FROM postings p"
            f" WHERE p.corpus_id = $1 AND {committed('p')}"
        ),
        uncommitted_postings=await count(
            f"SELECT count(*) FROM postings p WHERE p.corpus_id = $1 AND NOT {committed('p')}"
        ),
        orphan_postings=await count(
            "SELECT count(*) FROM postings p WHERE p.corpus_id = $1 AND NOT EXISTS (SELECT 1 FROM chunks c"
            " WHERE c.corpus_id = p.corpus_id AND c.chunk_id = p.chunk_id AND c.generation = p.generation)"
        ),
        term_stats_mismatch=await count(
            f"""SELECT count(*) FROM (
                  SELECT term, df FROM term_stats WHERE corpus_id = $1
                  EXCEPT SELECT p.term, count(*)::int FROM postings p
                         WHERE p.corpus_id = $1 AND {committed("p")} GROUP BY p.term
                  UNION ALL
                  (SELECT p.term, count(*)::int FROM postings p
                   WHERE p.corpus_id = $1 AND {committed("p")} GROUP BY p.term
                   EXCEPT SELECT term, df FROM term_stats WHERE corpus_id = $1)
                ) differing"""
        ),
        duplicate_entities=sum(n - 1 for n in entity_ids.values()),
        entities_without_chunk=sum(1 for e in entities if e.chunk_id and e.chunk_id not in chunk_ids),
        entities_without_file=sum(1 for e in entities if e.file_path and e.file_path not in files),
        duplicate_edges=sum(n - 1 for n in edges.values()),
        orphan_edges=sum(
            1 for source, _, target in edges if source not in entity_ids or target not in entity_ids
        ),
        stale_graphs=sum(1 for k in stored_graph_keys if corpus_of_key(k) == corpus_id and k != key),
    )


async def falkordb_graph_keys(host: str, port: int, graph_prefix: str) -> list[str]:
    """The graph keys (prefix removed) a FalkorDB server stores under `graph_prefix`."""
    from falkordb import FalkorDB

    def listed() -> list[str]:
        client = FalkorDB(host=host, port=port)
        try:
            return [str(name) for name in client.list_graphs()]
        finally:
            client.connection.close()

    names = await asyncio.to_thread(listed)
    return sorted(name.removeprefix(graph_prefix) for name in names if name.startswith(graph_prefix))
