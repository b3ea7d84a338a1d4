"""Any-term BM25 over a corpus's postings kept in the sparse leg's memory.

In PostgreSQL a search reads the postings of its terms on every request (`build_any_query`): 2.4-3.9
ms per search on click's 677 chunks, 5.8-8.1 ms on the 10k bench corpus, against 0.37 and 0.59 ms
here (bench-quick's questions, one at a time, asyncpg included; 2026-12-03). Here a corpus of at
most `sparse.in_memory_max_chunks` chunks has its postings and term statistics read once per
committed generation (tribrid/stores/small_corpora.py, within `sparse.in_memory_mb`), and an
unfiltered any-mode search adds up its terms' contributions with numpy.

The answer is the SQL statement's: the same formula over the same postings and statistics, the
same order (the score rounded to 9 digits, then the chunk id), the same matched terms. Questions
with many postings are pruned (MaxScore, as the statement prunes them), with the unpruned answer:
an explain never says "pruned". A score may differ from PostgreSQL's in its last digits (the
contributions are summed in another order).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import NamedTuple

import asyncpg
import numpy as np

from services.sparse.bm25 import SCORE_DIGITS, Bm25Result, bm25_detail
from tribrid.search_common import ScoredChunk
from tribrid.stores.corpus_versions import Version
from tribrid.stores.postgres import CHUNK_COLUMNS, ChunkRow, chunk_row, committed, version_of
from tribrid.stores.small_corpora import READ_TIMEOUT_S, Limits, TooLarge, corpus_row

_ROW_BYTES = 400  # a ChunkRow with its repeated strings shared: 0.40 KB in the 10k bench corpus
_TERM_BYTES = 110  # a term's dict entry: its string and its number


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A committed generation's postings as flat arrays, a term's postings one slice of them (its
    chunks' positions ascending): 6 bytes a posting where every tf fits 16 bits, 8 where not, and
    no object per term but its key and number."""

    version: Version
    n: float  # corpora.chunk_count, as the statement's N
    avgdl: float  # greatest(corpora.avg_chunk_terms, 1)
    rows: list[ChunkRow]  # in chunk-id order
    terms: dict[str, int]  # term -> its number: its postings are chunks[starts[i]:starts[i + 1]]
    starts: np.ndarray  # int64, one more than there are terms
    df: np.ndarray  # int64: a term's df (term_stats)
    chunks: np.ndarray  # int32: a posting's chunk, as a position in rows
    tf: np.ndarray  # uint16 or int32
    doc_terms: np.ndarray  # int32: a chunk's terms, by its position in rows (every posting's doc_terms)

    @property
    def nbytes(self) -> int:
        return snapshot_bytes(len(self.rows), len(self.terms), len(self.chunks), self.tf.itemsize)

    def postings(self, term: str) -> tuple[int, int, int] | None:
        """The term's slice (start, end) of the posting arrays and its df; None if no chunk has it."""
        i = self.terms.get(term)
        if i is None:
            return None
        return int(self.starts[i]), int(self.starts[i + 1]), int(self.df[i])


def snapshot_bytes(rows: int, terms: int, postings: int, tf_bytes: int) -> int:
    """A snapshot's size: a term's start and df (8 bytes each) and its dict entry, a posting's
    chunk (4) and tf, a chunk's doc_terms (4) and its row."""
    return (terms + 1) * 8 + terms * (8 + _TERM_BYTES) + postings * (4 + tf_bytes) + rows * (4 + _ROW_BYTES)


_ROWS = f"""
    SELECT {", ".join("c." + col for col in CHUNK_COLUMNS.split(", "))} FROM chunks c
    WHERE c.corpus_id = $1 AND {committed("c")} ORDER BY c.chunk_id"""
# a term a row: its postings in chunk-id order (the order of _ROWS), each chunk as its position
# there, the arrays in PostgreSQL's binary form (`array_send`): read into numpy as they come, with
# no Python object per posting (a list of ids a term, read as such, left the 100k-chunk corpus's
# leg 230 MB larger after a 92 MB read)
_POSTINGS = f"""
    WITH r AS (
        SELECT c.chunk_id, (row_number() OVER (ORDER BY c.chunk_id) - 1)::int4 AS pos
        FROM chunks c WHERE c.corpus_id = $1 AND {committed("c")}
    )
    SELECT a.term, coalesce(ts.df, 0) AS df, array_send(a.pos) AS pos, array_send(a.tf) AS tf,
           array_send(a.doc_terms) AS doc_terms
    FROM (
        SELECT p.term, array_agg(r.pos ORDER BY r.pos) AS pos,
               array_agg(p.tf::int4 ORDER BY r.pos) AS tf,
               array_agg(p.doc_terms::int4 ORDER BY r.pos) AS doc_terms
        FROM postings p JOIN r ON r.chunk_id = p.chunk_id
        WHERE p.corpus_id = $1 AND {committed("p")}
        GROUP BY p.term
    ) a
    LEFT JOIN term_stats ts ON ts.corpus_id = $1 AND ts.term = a.term"""
# the columns many chunks share a value of (a file's path, its language): held once, not per row
_SHARED = ("corpus_id", "file_path", "language", "kind", "document_title", "section", "document_metadata")
_TF_16 = np.iinfo(np.uint16).max
# The leg's pool plans for its searches (SESSION_SETTINGS: no sorts, generic plans); the postings'
# aggregation needs a sort, without which it joined them to the chunks by a nested loop (the 10k
# bench corpus: past the 30 s timeout, against 1.4 s). For the read's transaction only.
READ_SETTINGS = "SET LOCAL enable_sort = on; SET LOCAL plan_cache_mode = auto"
_BATCH = 2000  # rows or terms a cursor fetches at once
# the committed postings (each term's df) and terms, counted without reading them
_SIZES = """
    SELECT coalesce(sum(df), 0)::int8 AS postings, count(*) AS terms FROM term_stats WHERE corpus_id = $1"""


async def read_snapshot(pool: asyncpg.Pool, corpus_id: str, limits: Limits) -> Snapshot | TooLarge | None:
    """The corpus's committed chunks, postings and term statistics, in one transaction's view; the
    rows and the postings a batch at a time (cursors), so that reading them costs little memory.
    A corpus whose snapshot would be larger than `limits.max_bytes` is not read: its size is known
    from its term statistics (its snapshot's least size, every tf in 16 bits)."""
    async with pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
        corpus = await corpus_row(conn, corpus_id, limits.max_rows)
        if not isinstance(corpus, asyncpg.Record):
            return corpus
        version = version_of(corpus)
        sizes = await conn.fetchrow(_SIZES, corpus_id)
        if snapshot_bytes(corpus["chunk_count"], sizes["terms"], sizes["postings"], 2) > limits.max_bytes:
            return TooLarge(version)
        await conn.execute(READ_SETTINGS)
        rows = _SharedStrings()
        async for record in conn.cursor(_ROWS, corpus_id, prefetch=_BATCH, timeout=READ_TIMEOUT_S):
            rows.append(chunk_row(record))
        if len(rows.rows) > limits.max_rows:
            return TooLarge(version)
        postings = _PostingsRead(len(rows.rows))
        batch: list[asyncpg.Record] = []
        async for record in conn.cursor(_POSTINGS, corpus_id, prefetch=_BATCH, timeout=READ_TIMEOUT_S):
            batch.append(record)
            if len(batch) == _BATCH:
                postings.add(batch)
                batch = []
        postings.add(batch)
    return Snapshot(
        version=version,
        n=float(corpus["chunk_count"]),
        avgdl=max(float(corpus["avg_chunk_terms"] or 0.0), 1.0),
        rows=rows.rows,
        terms=postings.terms,
        starts=np.frombuffer(postings.starts, dtype=np.int64),
        df=np.frombuffer(postings.dfs, dtype=np.int64),
        chunks=postings.positions.done(),
        tf=postings.tfs.done(),
        doc_terms=postings.doc_terms,
    )


class _PostingsRead:
    """The postings read so far, as a few arrays a batch of terms: an array a term cost about 150
    bytes of numpy's own for the one to three postings most terms have (the 100k-chunk corpus's
    202k terms: 60 MB)."""

    def __init__(self, chunks: int) -> None:
        self.terms: dict[str, int] = {}
        self.starts = array("q", [0])  # 8 bytes a term, not a list's 36
        self.dfs = array("q")
        self.positions = _Growing(np.int32)
        self.tfs = _Growing(np.uint16)  # int32 from the first tf that does not fit
        self.doc_terms = np.zeros(chunks, dtype=np.int32)

    def add(self, batch: list[asyncpg.Record]) -> None:
        if not batch:
            return
        for record in batch:
            self.terms[record["term"]] = len(self.dfs)
            self.dfs.append(int(record["df"]))
            self.starts.append(self.starts[-1] + _int4_count(record["pos"]))
        posted = _int4_values(batch, "pos")
        self.positions.extend(posted)
        self.tfs.extend(_int4_values(batch, "tf"))
        # a chunk's doc_terms is the same in each of its postings
        self.doc_terms[posted] = _int4_values(batch, "doc_terms")


# an array_send'ed one-dimensional int4[] without NULLs: a 20-byte header (ndim, flags, element
# type, length, lower bound), then each element's length (4) and value, big-endian
_HEADER = 20


def _int4_count(sent: bytes) -> int:
    return (len(sent) - _HEADER) // 8


def _int4_values(batch: list[asyncpg.Record], column: str) -> np.ndarray:
    """The `column` arrays of the batch's records, one after the other, as one int32 array."""
    body = b"".join(record[column][_HEADER:] for record in batch)
    return np.frombuffer(body, dtype=">i4")[1::2].astype(np.int32)


class _SharedStrings:
    """Rows kept with each repeated value of the `_SHARED` columns one string object: a row then
    holds its own id and symbol, and pointers (0.69 -> 0.40 KB a row in the 10k bench corpus)."""

    _shared = [col in _SHARED for col in ChunkRow._fields]

    def __init__(self) -> None:
        self.rows: list[ChunkRow] = []
        self._held: dict[object, object] = {}

    def append(self, row: ChunkRow) -> None:
        held = self._held
        self.rows.append(
            ChunkRow._make(held.setdefault(v, v) if s else v for v, s in zip(row, self._shared, strict=True))
        )


class _Growing:
    """An array appended to in place, grown and at last trimmed by numpy's resize (a realloc, which
    moves a large array's pages rather than copying them). Parts joined at the end were held twice
    at the read's peak: 29 MB more for the 100k-chunk corpus."""

    def __init__(self, dtype: type[np.integer]) -> None:
        self._array = np.zeros(1 << 16, dtype=dtype)
        self._size = 0

    def extend(self, values: np.ndarray) -> None:
        if self._array.dtype == np.uint16 and values.size and values.max() > _TF_16:
            self._array = self._array.astype(np.int32)  # once, for a chunk of 65,536 equal words
        end = self._size + len(values)
        if end > len(self._array):
            self._array.resize(max(end, len(self._array) * 3 // 2), refcheck=False)
        self._array[self._size : end] = values
        self._size = end

    def done(self) -> np.ndarray:
        self._array.resize(self._size, refcheck=False)
        return self._array


# MaxScore is tried from this many postings of the question's terms on: below it, adding up every
# posting is cheaper than ruling chunks out (2026-12-03, in process: pruning costs 1.1-1.3 times the
# plain sum under 2,000 postings, 0.5 times from 4,000 on the 10k bench corpus).
PRUNE_FROM = 2000
# A ruled-out chunk's best possible score is below the top_k-th by more than this: far more than the
# summation's rounding, and than SCORE_DIGITS, so no tie on the rounded score can bring it back.
_PRUNE_MARGIN = 1e-6


def bm25_any_in_memory(
    snapshot: Snapshot, terms: list[str], k1: float, b: float, top_k: int, prune_from: int = PRUNE_FROM
) -> Bm25Result:
    """bm25_any's answer for an unfiltered search, from the snapshot. With `prune_from` postings or
    more, MaxScore (Turtle and Flood 1995) rules out the chunks that cannot make the top_k (see
    `_candidates`); the answer is the same either way, to the last bit of every score."""
    if not terms or not snapshot.rows:
        return Bm25Result([])
    # a term given twice counts twice, as in the statement
    found_terms = [at for term in terms if (at := snapshot.postings(term)) is not None]
    posted = [Posted(start, end, _idf(snapshot, df)) for start, end, df in found_terms]
    summed: dict[int, np.ndarray] = {}  # by place in `posted`: contributions already worked out
    candidates = None
    if sum(p.end - p.start for p in posted) >= prune_from:
        candidates = _candidates(snapshot, posted, k1, b, top_k, summed)
    if candidates is None:
        found, scores = _every_chunk(snapshot, posted, k1, b, summed)
    else:
        found, scores = candidates, _scores_of(snapshot, posted, k1, b, candidates, summed)
    best = np.lexsort((found, -np.round(scores, SCORE_DIGITS)))[:top_k]  # rounded score, then chunk id
    top = found[best]
    # which query terms each answer holds, a term at a time (sorted, as the statement's array_agg)
    held = [
        (term, _holds(snapshot.chunks[at[0] : at[1]], top))
        for term in sorted(set(terms))
        if (at := snapshot.postings(term)) is not None
    ]
    chunks = []
    for i, row in enumerate(top.tolist()):
        matched = [term for term, holds in held if holds[i]]
        detail = bm25_detail(k1, b, "any", matched, "")
        chunks.append(ScoredChunk(snapshot.rows[row], float(scores[best[i]]), detail))
    return Bm25Result(chunks)


class Posted(NamedTuple):
    """A query term's slice of the posting arrays, and its idf."""

    start: int
    end: int
    idf: float


def _idf(snapshot: Snapshot, df: int) -> float:
    return float(np.log(1 + (snapshot.n - df + 0.5) / (df + 0.5)))


def _contributions(
    snapshot: Snapshot, term: Posted, at: slice | np.ndarray, chunks: np.ndarray, k1: float, b: float
) -> np.ndarray:
    """The term's BM25 contribution to `chunks`, whose postings are `at` (within the term's slice):
    the same operations, element by element, whichever postings are asked for."""
    tf = snapshot.tf[term.start : term.end][at].astype(np.float64)
    length = 1 - b + b * snapshot.doc_terms[chunks] / snapshot.avgdl
    return np.asarray(term.idf * tf * (k1 + 1) / (tf + k1 * length))


def _every_chunk(
    snapshot: Snapshot, posted: list[Posted], k1: float, b: float, summed: dict[int, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """Every chunk holding a term, and its score: each term's contributions added in query order."""
    score = np.zeros(len(snapshot.rows), dtype=np.float64)
    hit = np.zeros(len(snapshot.rows), dtype=bool)
    for i, term in enumerate(posted):
        chunks = snapshot.chunks[term.start : term.end]
        added = summed.get(i)
        score[chunks] += (
            _contributions(snapshot, term, slice(None), chunks, k1, b) if added is None else added
        )
        hit[chunks] = True
    found = np.flatnonzero(hit)
    return found, score[found]


def _candidates(
    snapshot: Snapshot, posted: list[Posted], k1: float, b: float, top_k: int, summed: dict[int, np.ndarray]
) -> np.ndarray | None:
    """The chunks that can still make the top_k, ascending; None when none can be ruled out.

    A term adds less than idf * (k1 + 1) to any chunk (its bound). The terms are added up rarest
    first (the highest bound, the fewest postings), into partial scores that only grow. Once the
    bounds of the terms left add up to less than the top_k-th partial score, a chunk whose partial
    score plus those bounds stays below it cannot make the top_k, nor can a chunk that holds only
    terms left; those terms are then read for the remaining chunks only. The contributions worked
    out on the way are kept in `summed`, for the final sums."""
    n = len(snapshot.rows)
    bounds = [term.idf * (k1 + 1) for term in posted]
    left = sum(bounds)
    partial = np.zeros(n, dtype=np.float64)
    hit = np.zeros(n, dtype=bool)
    rarest_first = sorted(range(len(posted)), key=lambda i: -bounds[i])
    for i in rarest_first[:-1]:  # the last term's own postings are the ones worth skipping
        term = posted[i]
        chunks = snapshot.chunks[term.start : term.end]
        summed[i] = _contributions(snapshot, term, slice(None), chunks, k1, b)
        partial[chunks] += summed[i]
        hit[chunks] = True
        left -= bounds[i]
        found = np.flatnonzero(hit)
        if len(found) < top_k:  # top_k >= 1: validate_search
            continue
        kth = np.partition(partial[found], len(found) - top_k)[len(found) - top_k]
        if left < kth - _PRUNE_MARGIN:
            kept: np.ndarray = found[partial[found] + left >= kth - _PRUNE_MARGIN]
            return kept
    return None


def _scores_of(
    snapshot: Snapshot,
    posted: list[Posted],
    k1: float,
    b: float,
    candidates: np.ndarray,
    summed: dict[int, np.ndarray],
) -> np.ndarray:
    """The candidates' scores, each term's contribution added in query order as `_every_chunk`
    adds them (the same sums, bit for bit); a term's postings found by binary search."""
    scores = np.zeros(len(candidates), dtype=np.float64)
    for i, term in enumerate(posted):
        chunks = snapshot.chunks[term.start : term.end]
        at = np.minimum(np.searchsorted(chunks, candidates), len(chunks) - 1)
        holds = chunks[at] == candidates
        added = summed.get(i)
        if added is not None:
            scores[holds] += added[at[holds]]
        else:
            scores[holds] += _contributions(snapshot, term, at[holds], candidates[holds], k1, b)
    return scores


def _holds(chunks: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """For each of `rows`, whether the ascending `chunks` hold it."""
    at = np.minimum(np.searchsorted(chunks, rows), len(chunks) - 1)
    return np.asarray(chunks[at] == rows)
