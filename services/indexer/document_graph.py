"""The graph of a corpus's documents: document and chunk nodes, CONTAINS and SIMILAR_TO edges.

Like the code graph, it is a function of the whole new parse (every document chunk of the
generation being built), so the generation writer's diff brings the stored graph to exactly it.
Named entities (MENTIONS, RELATED_TO) are added by `services.indexer.named_entities`.

SIMILAR_TO is an exact k-nearest-neighbour join of the document chunks' stored embeddings,
computed in numpy in row blocks: for 10k chunks it is one 10k x 10k matrix product in pieces,
exact and deterministic (`make bench-docgraph`: 3.0 s for 10k chunks, mostly the product, and
1.9 s to write 10k nodes and 35k edges to FalkorDB). A kNN query per chunk through the HNSW index would be 10k
round trips and approximate.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

import asyncpg
import numpy as np

from services.indexer.doc_chunks import DOCUMENT_CHUNK_KIND
from tribrid.models import Chunk, Entity, Relation, stable_id

# Rows of the similarity matrix computed at once: 1024 x 10k float32 is 40 MB.
SIMILARITY_BLOCK = 1024


@dataclass(frozen=True, slots=True)
class DocumentNodes:
    """Document and chunk nodes, and the CONTAINS edges between them."""

    entities: list[Entity]
    contains: list[Relation]


def document_chunks(chunks_by_file: dict[str, list[Chunk]]) -> list[Chunk]:
    """The chunks of documents (not code), by file path then position."""
    return [
        chunk
        for path in sorted(chunks_by_file)
        for chunk in chunks_by_file[path]
        if chunk.kind == DOCUMENT_CHUNK_KIND
    ]


def document_id(corpus_id: str, file_path: str) -> str:
    return stable_id(corpus_id, "document", file_path)


def document_nodes(corpus_id: str, chunks: Iterable[Chunk]) -> DocumentNodes:
    """A document node per file, a chunk node per chunk (its entity id is the chunk id, so a
    walk that reaches it has its chunk), and document -CONTAINS-> chunk."""
    entities: dict[str, Entity] = {}
    contains: list[Relation] = []
    for chunk in chunks:
        doc_id = document_id(corpus_id, chunk.file_path)
        if doc_id not in entities:
            entities[doc_id] = Entity(
                entity_id=doc_id,
                corpus_id=corpus_id,
                type="document",
                name=chunk.document_title or chunk.file_path,
                qualified_name=chunk.file_path,
                file_path=chunk.file_path,
                start_line=1,
                end_line=chunk.end_line,
                chunk_id="",
            )
        elif chunk.end_line > entities[doc_id].end_line:
            entities[doc_id] = replace(entities[doc_id], end_line=chunk.end_line)
        entities[chunk.chunk_id] = Entity(
            entity_id=chunk.chunk_id,
            corpus_id=corpus_id,
            type="chunk",
            name=chunk.section or chunk.document_title or chunk.file_path,
            qualified_name=f"{chunk.file_path}:{chunk.start_line}-{chunk.end_line}",
            file_path=chunk.file_path,
            start_line=chunk.start_line,
            end_line=chunk.end_line,
            chunk_id=chunk.chunk_id,
        )
        contains.append(Relation(doc_id, chunk.chunk_id, "contains"))
    return DocumentNodes(list(entities.values()), contains)


async def chunk_vectors(
    pool: asyncpg.Pool, corpus_id: str, generation: int, chunk_ids: Sequence[str]
) -> dict[str, np.ndarray]:
    """Each chunk's embedding as the generation being built will hold it: its newest row up to
    that generation (a changed file's new row, or an unchanged file's committed one)."""
    rows = await pool.fetch(
        """SELECT DISTINCT ON (chunk_id) chunk_id, embedding FROM chunks
           WHERE corpus_id = $1 AND chunk_id = ANY($2::text[]) AND generation <= $3
           ORDER BY chunk_id, generation DESC""",
        corpus_id,
        list(chunk_ids),
        generation,
    )
    return {str(r["chunk_id"]): r["embedding"].to_numpy() for r in rows}


def similar_chunks(vectors: dict[str, np.ndarray], threshold: float, k: int) -> list[Relation]:
    """SIMILAR_TO edges: each chunk to its k most similar others (cosine; the same vectors give
    the same edges) at or above the threshold. An edge is stored once (source id < target id) and
    means both ways; a pair is kept when either chunk keeps the other among its k."""
    if k == 0 or len(vectors) < 2:
        return []
    ids = sorted(vectors)
    exact = np.vstack([vectors[i] for i in ids]).astype(np.float64)
    norms = np.linalg.norm(exact, axis=1, keepdims=True)
    exact /= np.where(norms > 0, norms, 1.0)
    matrix = exact.astype(np.float32)
    pairs: set[tuple[int, int]] = set()
    take = min(k, len(ids) - 1)
    for start in range(0, len(ids), SIMILARITY_BLOCK):
        block = matrix[start : start + SIMILARITY_BLOCK] @ matrix.T
        rows = np.arange(block.shape[0])
        block[rows, start + rows] = -np.inf  # not similar to itself
        # each row's k best (unordered), then in order: similarity desc, ties by id (index)
        best = np.argpartition(-block, take - 1, axis=1)[:, :take]
        for offset, candidates in enumerate(best):
            row = block[offset]
            for other in sorted(candidates.tolist(), key=lambda j: (-row[j], j)):
                if row[other] < threshold:
                    break
                pairs.add((min(start + offset, other), max(start + offset, other)))
    # The stored value is the pair's own float64 cosine: the same whatever blocks it was found
    # in, so an unchanged pair is an unchanged edge for the generation writer's diff.
    edges = []
    for a, b in sorted(pairs):
        similarity = min(float(exact[a] @ exact[b]), 1.0)
        if similarity >= threshold:
            edges.append(Relation(ids[a], ids[b], "similar_to", similarity=similarity))
    return edges
