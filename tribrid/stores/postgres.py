"""PostgreSQL access shared by the indexer and the legs: pool, schema migrations, chunk rows."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, NamedTuple
from urllib.parse import urlsplit

import asyncpg
import numpy as np
from pgvector.asyncpg import register_vector

from tribrid.config import PostgresConfig, VectorConfig

log = logging.getLogger(__name__)

OPCLASS = {"cosine": "vector_cosine_ops", "l2": "vector_l2_ops", "inner_product": "vector_ip_ops"}


# NOTIFY channel of the corpora table's changes; the payload is the corpus id
CORPORA_CHANNEL = "tribrid_corpora"


def migrations(dim: int, vector: VectorConfig) -> list[str]:
    """Schema steps, applied in order once each; append new steps, never edit old ones."""
    return [
        "CREATE EXTENSION IF NOT EXISTS vector",
        f"""
        CREATE TABLE corpora (
            corpus_id text PRIMARY KEY,
            root_path text NOT NULL,
            embedding_model text NOT NULL,
            embedding_dim int NOT NULL,
            generation bigint NOT NULL DEFAULT 0,
            chunk_count bigint NOT NULL DEFAULT 0,
            avg_chunk_terms double precision NOT NULL DEFAULT 0,
            created_at timestamptz NOT NULL DEFAULT now(),
            updated_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE TABLE files (
            corpus_id text NOT NULL REFERENCES corpora ON DELETE CASCADE,
            file_path text NOT NULL,
            content_hash text NOT NULL,
            language text NOT NULL,
            PRIMARY KEY (corpus_id, file_path)
        );
        CREATE TABLE chunks (
            corpus_id text NOT NULL REFERENCES corpora ON DELETE CASCADE,
            chunk_id text NOT NULL,
            file_path text NOT NULL,
            start_line int NOT NULL,
            end_line int NOT NULL,
            language text NOT NULL,
            kind text NOT NULL,
            symbol text NOT NULL,
            content text NOT NULL,
            embedding vector({dim}) NOT NULL,
            tsv tsvector NOT NULL,
            term_count int NOT NULL,
            PRIMARY KEY (corpus_id, chunk_id)
        );
        CREATE INDEX chunks_by_file ON chunks (corpus_id, file_path);
        CREATE INDEX chunks_tsv ON chunks USING gin (tsv);
        CREATE INDEX chunks_embedding ON chunks USING hnsw (embedding {OPCLASS[vector.metric]})
            WITH (m = {vector.hnsw_m}, ef_construction = {vector.hnsw_ef_construction});
        -- An inverted index for BM25: one row per (term, chunk) with the term's frequency and the
        -- chunk's length, so scoring reads only the postings of the query's terms.
        CREATE TABLE postings (
            corpus_id text NOT NULL,
            term text NOT NULL,
            chunk_id text NOT NULL,
            tf int NOT NULL,
            doc_terms int NOT NULL,
            PRIMARY KEY (corpus_id, term, chunk_id),
            FOREIGN KEY (corpus_id, chunk_id) REFERENCES chunks ON DELETE CASCADE
        );
        CREATE INDEX postings_by_chunk ON postings (corpus_id, chunk_id);
        """,
        # Rows carry the index generation that wrote them, so a run can stream its rows in while it
        # embeds: they stay hidden (generation > the corpus's) until the run commits.
        # embed_hash (model and embedding text): a changed file's unchanged definitions keep their
        # vectors. BM25 reads tf and the chunk length of every posting of the query's terms: with
        # both in the key's index, that is an index-only scan. index_format: how the committed
        # generation was chunked and tokenized; a run under another format redoes every file.
        """
        ALTER TABLE postings DROP CONSTRAINT postings_corpus_id_chunk_id_fkey;
        ALTER TABLE chunks ADD COLUMN generation bigint NOT NULL DEFAULT 0;
        ALTER TABLE chunks ADD COLUMN embed_hash text;
        ALTER TABLE chunks DROP CONSTRAINT chunks_pkey;
        ALTER TABLE chunks ADD PRIMARY KEY (corpus_id, chunk_id, generation);
        CREATE INDEX chunks_by_embed_hash ON chunks (corpus_id, embed_hash);
        ALTER TABLE postings ADD COLUMN generation bigint NOT NULL DEFAULT 0;
        ALTER TABLE postings DROP CONSTRAINT postings_pkey;
        ALTER TABLE postings ADD PRIMARY KEY (corpus_id, term, chunk_id, generation) INCLUDE (tf, doc_terms);
        DROP INDEX postings_by_chunk;
        CREATE INDEX postings_by_chunk ON postings (corpus_id, chunk_id, generation);
        ALTER TABLE postings ADD FOREIGN KEY (corpus_id, chunk_id, generation)
            REFERENCES chunks (corpus_id, chunk_id, generation) ON DELETE CASCADE;
        ALTER TABLE corpora ADD COLUMN index_format int NOT NULL DEFAULT 0;
        """,
        # A chunk's postings (for the deletes cascading from chunks) by chunk id alone. Led by the
        # corpus, this index also offered "every posting of the corpus, filtered by term" to plans
        # made without knowing the corpus or terms: the sparse leg's generic plans, which must read
        # postings by term (`postings_pkey`) and, with many small corpora, picked it instead.
        """
        DROP INDEX postings_by_chunk;
        CREATE INDEX postings_by_chunk ON postings (chunk_id, generation);
        """,
        # Each term's document frequency in the committed generation, kept by the commit that
        # changes it: BM25 reads it instead of counting the postings of every query term twice.
        """
        CREATE TABLE term_stats (
            corpus_id text NOT NULL REFERENCES corpora ON DELETE CASCADE,
            term text NOT NULL,
            df int NOT NULL,
            PRIMARY KEY (corpus_id, term)
        );
        INSERT INTO term_stats (corpus_id, term, df)
            SELECT p.corpus_id, p.term, count(*) FROM postings p JOIN corpora c USING (corpus_id)
            WHERE p.generation <= c.generation
            GROUP BY p.corpus_id, p.term;
        """,
        # Documents: the title, the section breadcrumb and the pages of a chunk ('' and 0 for code).
        """
        ALTER TABLE chunks ADD COLUMN document_title text NOT NULL DEFAULT '';
        ALTER TABLE chunks ADD COLUMN section text NOT NULL DEFAULT '';
        ALTER TABLE chunks ADD COLUMN page_start int NOT NULL DEFAULT 0;
        ALTER TABLE chunks ADD COLUMN page_end int NOT NULL DEFAULT 0;
        """,
        # Named entities found in a chunk text, by the recognizer's identity (model, version,
        # labels) and the text's SHA-1: an unchanged chunk is not analysed again, even after a
        # restart or in another corpus (services/indexer/entity_cache.py).
        """
        CREATE TABLE entity_mentions (
            model text NOT NULL,
            text_sha1 bytea NOT NULL,
            mentions jsonb NOT NULL,
            PRIMARY KEY (model, text_sha1)
        );
        """,
        # Documents: their metadata (front matter, <meta>, PDF/DOCX properties), '{}' for code.
        """
        ALTER TABLE chunks ADD COLUMN document_metadata jsonb NOT NULL DEFAULT '{}';
        """,
        # Definitions: the embedding of the qualified name and declaration (Chunk.signature), NULL
        # for every other chunk; the vector leg blends its similarity into the chunk's.
        f"""
        ALTER TABLE chunks ADD COLUMN signature_embedding vector({dim});
        """,
        # The vectors in the row, not in the TOAST table (pgvector's type defaults to EXTERNAL):
        # a row with two 384-d vectors passes the 2 kB toast threshold, and each vector read
        # back (an exact scan, the distances the legs select) cost a TOAST index probe and heap
        # fetch. MAIN moves one out only when the row would not fit a page (very wide vectors).
        # Rows written before keep their TOAST copies until the next index run replaces them.
        """
        ALTER TABLE chunks ALTER COLUMN embedding SET STORAGE MAIN,
                           ALTER COLUMN signature_embedding SET STORAGE MAIN;
        """,
        # A curated graph a user imported (services/indexer/graph_import.py), validated, by the
        # generation that brought it: a run builds its graph from the newest import up to its own
        # generation, so an import appears with the commit of its generation and later runs keep it.
        """
        CREATE TABLE graph_imports (
            corpus_id text NOT NULL REFERENCES corpora ON DELETE CASCADE,
            generation bigint NOT NULL,
            source text NOT NULL,
            graph jsonb NOT NULL,
            imported_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (corpus_id, generation)
        );
        """,
        # Relations a generation model read out of a chunk text, by model (and prompt) and the
        # text's SHA-1 (services/indexer/relation_extraction.py): a re-index asks only for new text.
        """
        CREATE TABLE extracted_relations (
            model text NOT NULL,
            text_sha1 bytea NOT NULL,
            triples jsonb NOT NULL,
            PRIMARY KEY (model, text_sha1)
        );
        """,
        # A corpus's row changed (a commit's new generation, a delete, a new corpus): the services
        # that keep what they read of it (tribrid/stores/corpus_versions.py) hear it on COMMIT.
        f"""
        CREATE FUNCTION tribrid_corpus_changed() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'DELETE' THEN
                PERFORM pg_notify('{CORPORA_CHANNEL}', OLD.corpus_id);
            ELSE
                PERFORM pg_notify('{CORPORA_CHANNEL}', NEW.corpus_id);
            END IF;
            RETURN NULL;
        END $$;
        CREATE TRIGGER corpora_changed AFTER INSERT OR UPDATE OR DELETE ON corpora
            FOR EACH ROW EXECUTE FUNCTION tribrid_corpus_changed();
        """,
        # A corpus searched by HNSW has an index of its own rows (corpus_vector_index) and a
        # smaller one is scanned exactly: the index of every corpus's rows served no search, and
        # each row written to it cost a second HNSW insert (a full re-index of 10k chunks with
        # their vectors reused: 26 s with one index, 33-41 s with both).
        "DROP INDEX IF EXISTS chunks_embedding",
        # When a graph leg last used a corpus's graph (services/graph/recent_graphs.py): a leg
        # that starts loads these graphs before their first search. Not a column of corpora,
        # whose every change tells each service to drop what it read of the corpus.
        """
        CREATE TABLE graph_uses (
            corpus_id text PRIMARY KEY REFERENCES corpora (corpus_id) ON DELETE CASCADE,
            used_at timestamptz NOT NULL
        );
        """,
        # The share of a chunk's embedded text the local model read (tribrid/coverage.py); NULL
        # when not measured (an embedding endpoint, a row written before).
        "ALTER TABLE chunks ADD COLUMN model_coverage real",
    ]


def _corpus_index_sql(name: str, corpus_id: str, vector: VectorConfig, concurrently: bool = False) -> str:
    """The statement that builds a corpus's own HNSW index, `name`, with the configured settings."""
    return (
        f"CREATE INDEX {'CONCURRENTLY ' if concurrently else ''}IF NOT EXISTS {name} ON chunks"
        f" USING hnsw (embedding {OPCLASS[vector.metric]})"
        f" WITH (m = {vector.hnsw_m}, ef_construction = {vector.hnsw_ef_construction})"
        f" WHERE corpus_id = {literal(corpus_id)}"
    )


def corpus_vector_index(corpus_id: str) -> str:
    """The name of a corpus's own HNSW index, of its rows alone. In one index of every corpus's
    rows, a search of one corpus was a filtered scan that walked the others' rows too: 2-15 ms of
    PostgreSQL's CPU per query on a 10k-chunk corpus among 49k rows, 1-4 ms in its own index, and
    more of the true nearest rows found. A hash keeps the name within PostgreSQL's 63 bytes,
    whatever the corpus id."""
    return "chunks_embedding_" + hashlib.md5(corpus_id.encode()).hexdigest()[:16]


def literal(text: str) -> str:
    """`text` as a SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


async def index_corpus_vectors(pool: asyncpg.Pool, corpus_id: str, vector: VectorConfig) -> bool:
    """Give a corpus whose committed chunks are more than `exact_scan_max_rows` (searched by HNSW,
    not by an exact scan) its own HNSW index, built with `hnsw_m` and `hnsw_ef_construction`;
    later rows are added to it as they are written. An index built with other settings is built
    again (`_rebuild_corpus_index`). True when the corpus has one. Building it blocks other
    corpora's writes, not reads (about 4 s for 10k chunks here)."""
    name = corpus_vector_index(corpus_id)
    async with _corpus_index_lock(pool, corpus_id) as conn:
        # read under the lock: a corpus deleted meanwhile gets no index
        count = await conn.fetchval("SELECT chunk_count FROM corpora WHERE corpus_id = $1", corpus_id)
        if count is None or count <= vector.exact_scan_max_rows:
            return False
        try:
            built = await _index_options(conn, name)
            if built is not None:
                if built != _hnsw_options(vector):
                    await _rebuild_corpus_index(conn, corpus_id, vector)
                return True
            async with conn.transaction():
                await conn.execute(f"SET LOCAL maintenance_work_mem = '{_BUILD_MEMORY}'")
                await conn.execute(_corpus_index_sql(name, corpus_id, vector))
        except asyncpg.InsufficientPrivilegeError as err:
            # a database user that may write rows but not own the table: the corpus is then
            # searched by an exact scan (or by its index as it was built), slower but with the
            # same answers; the run itself is not failed
            log.warning(
                "no HNSW index of its own built for corpus %r: %s (the indexer's database user must"
                " own the chunks table); it is searched by an exact scan or the index it has",
                corpus_id,
                err,
            )
            return await _index_options(conn, name) is not None
    return True


@asynccontextmanager
async def _corpus_index_lock(pool: asyncpg.Pool, corpus_id: str) -> AsyncIterator[asyncpg.Connection]:
    """A connection holding the corpus's index lock (a session advisory lock) until the block
    ends. Builds, rebuilds and drops of a corpus's index take turns under it, in every process: a
    concurrent rebuild and a concurrent drop of the same index wait for each other in PostgreSQL,
    which ends one of them as a deadlock."""
    key = int.from_bytes(hashlib.md5(f"vector index {corpus_id}".encode()).digest()[:8], "big", signed=True)
    async with pool.acquire() as conn:
        # tried, not waited for: a statement waiting for the lock is a transaction, which a
        # concurrent build under the lock would wait for in turn
        while not await conn.fetchval("SELECT pg_try_advisory_lock($1)", key):  # noqa: ASYNC110 (another process's)
            await asyncio.sleep(_LOCK_POLL_S)
        try:
            yield conn
        finally:
            await conn.execute("SELECT pg_advisory_unlock($1)", key)


def _hnsw_options(vector: VectorConfig) -> dict[str, str]:
    """The storage parameters a corpus's HNSW index is built with, as PostgreSQL lists them."""
    return {"m": str(vector.hnsw_m), "ef_construction": str(vector.hnsw_ef_construction)}


_LOCK_POLL_S = 0.05

# The graph in memory while an index is built: a 100k-chunk corpus's needs about 250 MB.
_BUILD_MEMORY = "512MB"


async def _index_options(db: asyncpg.Pool | asyncpg.Connection, name: str) -> dict[str, str] | None:
    """The storage parameters an index was built with ({"m": "16", ...}); None without it."""
    row = await db.fetchrow("SELECT reloptions FROM pg_class WHERE relname = $1 AND relkind = 'i'", name)
    if row is None:
        return None
    return dict(option.split("=", 1) for option in row["reloptions"] or [])


async def _rebuild_corpus_index(conn: asyncpg.Connection, corpus_id: str, vector: VectorConfig) -> None:
    """Build a corpus's index again with the configured settings: a new one beside it, built
    without blocking searches or writes, then swapped in under the old one's name in one
    transaction. A build cut short leaves only the old index and an unfinished new one, which the
    next call drops before it starts again. `conn` holds the corpus's index lock."""
    name = corpus_vector_index(corpus_id)
    fresh = f"{name}_new"
    await conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {fresh}")
    await conn.execute(f"SET maintenance_work_mem = '{_BUILD_MEMORY}'")
    try:
        await conn.execute(_corpus_index_sql(fresh, corpus_id, vector, concurrently=True))
    finally:
        await conn.execute("RESET maintenance_work_mem")
    async with conn.transaction():
        await conn.execute(f"DROP INDEX {name}")
        await conn.execute(f"ALTER INDEX {fresh} RENAME TO {name}")
    log.info("vector index built again", extra={"index": name, "options": _hnsw_options(vector)})


async def index_every_corpus_vectors(pool: asyncpg.Pool, vector: VectorConfig) -> list[str]:
    """`index_corpus_vectors` for each corpus that should have its own index and has none (corpora
    indexed before there were such indexes) or has one built with other HNSW settings, one after
    another; the corpora it indexed."""
    rows = await pool.fetch(
        "SELECT corpus_id FROM corpora WHERE chunk_count > $1 ORDER BY corpus_id", vector.exact_scan_max_rows
    )
    wanted = _hnsw_options(vector)
    built = []
    for row in rows:
        corpus_id = row["corpus_id"]
        as_built = await _index_options(pool, corpus_vector_index(corpus_id))
        if as_built != wanted and await index_corpus_vectors(pool, corpus_id, vector):
            built.append(corpus_id)
    return built


async def drop_corpus_vector_index(pool: asyncpg.Pool, corpus_id: str) -> None:
    """Drop a deleted corpus's own HNSW index, and an unfinished copy a rebuild cut short left,
    without blocking searches while they go."""
    name = corpus_vector_index(corpus_id)
    async with _corpus_index_lock(pool, corpus_id) as conn:
        for index in (name, f"{name}_new"):
            await conn.execute(f"DROP INDEX CONCURRENTLY IF EXISTS {index}")


def committed(alias: str, corpus_arg: str = "$1") -> str:
    """SQL condition: the row belongs to the corpus's committed generation.

    An index run writes its rows as generation G+1 while it embeds; they become visible when the
    run flips the corpus to G+1, in the same transaction that deletes the rows they replace.
    """
    return f"{alias}.generation <= (SELECT generation FROM corpora WHERE corpus_id = {corpus_arg})"


async def migrate(conn: asyncpg.Connection, dim: int, vector: VectorConfig) -> int:
    """Apply pending migrations under an advisory lock; returns how many were applied."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(7391001)")  # concurrent starters wait
        await conn.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version int PRIMARY KEY)")
        done = {r["version"] for r in await conn.fetch("SELECT version FROM schema_migrations")}
        applied = 0
        for version, sql in enumerate(migrations(dim, vector), start=1):
            if version in done:
                continue
            await conn.execute(sql)
            await conn.execute("INSERT INTO schema_migrations (version) VALUES ($1)", version)
            applied += 1
    return applied


async def _init_connection(conn: asyncpg.Connection) -> None:
    await register_vector(conn)


class StoreUnavailable(ConnectionError):
    """A store that does not answer when a service starts: which and where, in one line."""


def _address(cfg: PostgresConfig) -> str:
    """host:port of the server, never the DSN's credentials."""
    if cfg.dsn is None:
        return f"{cfg.host}:{cfg.port}"
    try:
        parts = urlsplit(cfg.dsn.get_secret_value())
        return f"{parts.hostname}:{parts.port or 5432}"
    except ValueError:
        return "the configured DSN"


async def create_pool(
    cfg: PostgresConfig,
    dim: int,
    vector: VectorConfig,
    server_settings: dict[str, str] | None = None,
    *,
    reset_sessions: bool = True,
    max_size: int | None = None,
    command_timeout_s: float | None = None,
) -> asyncpg.Pool:
    """Migrate the schema, then open a pool whose connections know the `vector` type and start
    with `server_settings` (RESET ALL, run as a connection goes back, returns to these).

    `reset_sessions=False` is for pools whose users leave no session state behind (no SET, session
    advisory locks or LISTEN: transaction-local settings only): a connection then goes back as it
    is, without asyncpg's reset statements, a round trip per query on the search legs' hot path.
    An open transaction is still rolled back. `max_size` replaces `cfg.pool_max_size`, and
    `command_timeout_s` `cfg.command_timeout_s`."""
    try:
        conn = await asyncpg.connect(cfg.effective_dsn(), timeout=10)
    except (OSError, TimeoutError) as exc:  # refused, unreachable, no answer
        raise StoreUnavailable(f"PostgreSQL at {_address(cfg)} does not answer ({exc})") from exc
    try:
        await migrate(conn, dim, vector)
    finally:
        await conn.close()
    pool = await asyncpg.create_pool(
        cfg.effective_dsn(),
        min_size=min(cfg.pool_min_size, max_size or cfg.pool_max_size),
        max_size=max_size or cfg.pool_max_size,
        command_timeout=command_timeout_s or cfg.command_timeout_s,
        init=_init_connection,
        server_settings=server_settings,
        reset=None if reset_sessions else _keep_session,
    )
    assert pool is not None
    return pool


async def _keep_session(conn: asyncpg.Connection) -> None:
    """A pool's reset that leaves the session as it is (see create_pool's `reset_sessions`)."""


class ChunkRow(NamedTuple):
    """A chunk as a search reads it; a tuple because a leg builds one per candidate (30 per
    search): a frozen dataclass took about 8 us each, a tuple about 1 us."""

    chunk_id: str
    corpus_id: str
    file_path: str
    start_line: int
    end_line: int
    language: str
    kind: str
    symbol: str
    document_title: str
    section: str
    page_start: int
    page_end: int
    document_metadata: str  # a JSON object of strings, as PostgreSQL returns jsonb


# What a search reads of a chunk; its content is fetched once, for the answers (fetch_contents).
CHUNK_COLUMNS = ", ".join(ChunkRow._fields)


def chunk_row(record: asyncpg.Record) -> ChunkRow:
    return ChunkRow._make(map(record.__getitem__, ChunkRow._fields))


def storable_ids(ids: Sequence[str]) -> list[str]:
    """The ids a text column can hold: one with a NUL character names no stored row (PostgreSQL
    text cannot hold NUL, and rejects it in a parameter)."""
    return [i for i in ids if "\x00" not in i]


async def fetch_chunks(pool: asyncpg.Pool, corpus_id: str, chunk_ids: Sequence[str]) -> dict[str, ChunkRow]:
    rows = await pool.fetch(
        f"SELECT {CHUNK_COLUMNS} FROM chunks c"
        f" WHERE c.corpus_id = $1 AND c.chunk_id = ANY($2::text[]) AND {committed('c')}",
        corpus_id,
        storable_ids(chunk_ids),
    )
    return {r["chunk_id"]: chunk_row(r) for r in rows}


async def fetch_contents(pool: asyncpg.Pool, corpus_id: str, chunk_ids: Sequence[str]) -> dict[str, str]:
    """Chunk id -> content, for the chunks of the committed generation among `chunk_ids`."""
    rows = await pool.fetch(
        "SELECT c.chunk_id, c.content FROM chunks c"
        f" WHERE c.corpus_id = $1 AND c.chunk_id = ANY($2::text[]) AND {committed('c')}",
        corpus_id,
        storable_ids(chunk_ids),
    )
    return {r["chunk_id"]: r["content"] for r in rows}


async def fetch_contents_and_vectors(
    pool: asyncpg.Pool, corpus_id: str, chunk_ids: Sequence[str]
) -> dict[str, tuple[str, np.ndarray]]:
    """Chunk id -> (content, embedding as a numpy array), for the chunks of the committed
    generation among `chunk_ids`: what the gateway's diversity stage reads, in one query."""
    rows = await pool.fetch(
        "SELECT c.chunk_id, c.content, c.embedding FROM chunks c"
        f" WHERE c.corpus_id = $1 AND c.chunk_id = ANY($2::text[]) AND {committed('c')}",
        corpus_id,
        storable_ids(chunk_ids),
    )
    return {r["chunk_id"]: (r["content"], r["embedding"].to_numpy()) for r in rows}


async def corpus_exists(pool: asyncpg.Pool, corpus_id: str) -> bool:
    """True once a run of this corpus has committed (a first run still in progress does not count)."""
    return await corpus_generation(pool, corpus_id) is not None


async def list_corpora(pool: asyncpg.Pool) -> list[dict[str, Any]]:
    rows = await pool.fetch(
        """SELECT c.corpus_id, c.root_path, c.generation, c.chunk_count, c.embedding_model,
                  c.updated_at, (SELECT count(*) FROM files f WHERE f.corpus_id = c.corpus_id) AS files
           FROM corpora c WHERE c.generation > 0 ORDER BY c.corpus_id"""
    )
    return [dict(r) for r in rows]


async def corpus_generation(pool: asyncpg.Pool, corpus_id: str) -> int | None:
    """The corpus's last complete index generation (None: no such corpus, or none committed yet).

    The graph of that generation is stored under `graphstore.base.graph_key(corpus_id, generation)`.
    """
    value = await pool.fetchval("SELECT generation FROM corpora WHERE corpus_id = $1", corpus_id)
    return None if value is None or value == 0 else int(value)


async def corpus_version(pool: asyncpg.Pool, corpus_id: str) -> tuple[int, str] | None:
    """The committed generation and a token for this life of the corpus (its row's creation time).

    A corpus deleted and indexed again counts its generations from 1 again: what is cached per
    generation must be keyed by both.
    """
    row = await pool.fetchrow("SELECT generation, created_at FROM corpora WHERE corpus_id = $1", corpus_id)
    return None if row is None or row["generation"] == 0 else version_of(row)


def version_of(row: asyncpg.Record) -> tuple[int, str]:
    """corpus_version's answer, from a committed corpus row (its generation and created_at)."""
    return int(row["generation"]), row["created_at"].isoformat()
