"""MaxScore in the sparse leg's memory (services/sparse/in_memory.py): a pruned answer is the
unpruned one, chunk for chunk and bit for bit, and the pruning does rule chunks out."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import services.sparse.in_memory as in_memory
from services.sparse.bm25 import Bm25Result
from services.sparse.in_memory import Snapshot, bm25_any_in_memory
from tribrid.stores.postgres import ChunkRow

NEVER = 10**12


def snapshot(rng: np.random.Generator, chunks: int, terms: int, ties: bool) -> Snapshot:
    """Terms with Zipf-like document frequencies over `chunks` chunks; with `ties`, every tf 1 and
    every chunk as long, so that many chunks score alike."""
    rows = [
        ChunkRow(f"c{i:05d}", "corpus", f"f{i % 97}.py", 1, 2, "python", "function", "", "", "", 0, 0, "{}")
        for i in range(chunks)
    ]
    doc_terms = np.full(chunks, 40, dtype=np.int32) if ties else rng.integers(5, 400, chunks, dtype=np.int32)
    starts, posted, tfs = [0], [], []
    for t in range(terms):
        df = max(1, int(chunks * 0.6 / (t + 1) ** 1.1))
        held = np.sort(rng.choice(chunks, size=df, replace=False)).astype(np.int32)
        posted.append(held)
        tfs.append(np.ones(df, dtype=np.uint16) if ties else rng.integers(1, 9, df, dtype=np.uint16))
        starts.append(starts[-1] + df)
    return Snapshot(
        version=(1, "life"),
        n=float(chunks),
        avgdl=float(doc_terms.mean()),
        rows=rows,
        terms={f"t{t}": t for t in range(terms)},
        starts=np.array(starts, dtype=np.int64),
        df=np.diff(np.array(starts, dtype=np.int64)),
        chunks=np.concatenate(posted),
        tf=np.concatenate(tfs),
        doc_terms=doc_terms,
    )


def answer(found: Bm25Result) -> list[tuple[str, float, str]]:
    return [(c.chunk.chunk_id, c.score, c.detail) for c in found.chunks]


@pytest.mark.parametrize("ties", [False, True])
def test_a_pruned_answer_is_the_unpruned_one(ties: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(11)
    snap = snapshot(rng, 4000, 40, ties)
    ruled_out: list[bool] = []
    candidates = in_memory._candidates

    def counted(
        of: Snapshot,
        terms: list[in_memory.Posted],
        k1: float,
        b: float,
        top_k: int,
        summed: dict[int, np.ndarray],
    ) -> np.ndarray | None:
        kept = candidates(of, terms, k1, b, top_k, summed)
        if len(terms) > 1 and top_k <= 30:
            ruled_out.append(kept is not None and len(kept) < snap.n)
        return kept

    monkeypatch.setattr(in_memory, "_candidates", counted)
    queries = [[f"t{t}" for t in rng.integers(0, 40, rng.integers(1, 6))] for _ in range(60)]
    queries += [["t0", "t0", "t3"], ["t39", "t1"], ["t7", "unknown"], ["unknown"]]
    for terms, (k1, b), top_k in itertools.product(
        queries, [(1.2, 0.6), (0.0, 0.6), (3.0, 1.0), (1.2, 0.0)], (1, 10, 30, 5000)
    ):
        plain = bm25_any_in_memory(snap, terms, k1, b, top_k, prune_from=NEVER)
        pruned = bm25_any_in_memory(snap, terms, k1, b, top_k, prune_from=0)
        assert answer(pruned) == answer(plain), (terms, k1, b, top_k)
        assert len(plain.chunks) == min(
            top_k, len({r for t in terms if t in snap.terms for r in posted(snap, t)})
        )
    # the pruning was not vacuous: it ruled chunks out on most questions of several terms
    assert len(ruled_out) > 400 and sum(ruled_out) > len(ruled_out) / 2


def posted(snap: Snapshot, term: str) -> list[int]:
    i = snap.terms[term]
    return [int(chunk) for chunk in snap.chunks[snap.starts[i] : snap.starts[i + 1]]]
