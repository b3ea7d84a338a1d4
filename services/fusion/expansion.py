"""The graph-expansion stage's scoring and placement: plain functions, no I/O.

The gateway asks the graph leg's ExpandContext for the chunks reached from its top fused chunks,
then scores each reached chunk the design's way:

    hybrid = chunk_weight x chunk score + (1 - chunk_weight) x graph score

- chunk score: the fused score of the chunk the walk started from, over the top fused score, so
  the best fused chunk counts 1 and the others their share of it (fusion scores have no fixed
  scale: an RRF sum and a weighted sum only compare within one answer).
- graph score: what ExpandContext says, in [0, 1] for documents (similarity or path strength
  product times the hop penalty). The code graph's scores are not bounded by 1: when an answer
  holds any score above 1, all of that answer's scores are divided by its largest, so a document
  answer is used as it is and a code answer keeps its proportions inside [0, 1].
- the source chunk: the provenance's `seed_entity` is the id of the fused chunk the walk started
  from (documents). For code it is the seed entity's qualified name: the fused chunk whose symbol
  it is, when one of the expanded chunks defines it; otherwise (a module or nested entity of a
  chunk) the expanded chunk with the lowest fused score, since the walk could have started from
  any of them and the lowest is the one claim the stage can make without overrating the match.

Kept: hybrid >= min_score, a chunk not already fused, once (its best hybrid; ties by source chunk
id), within the per-file cap, at most max_chunks of them, best hybrid first (ties by chunk id).

Placement (`fusion.expansion_placement`):
- "append" (the default): after every fused match, scored hybrid x the lowest fused score. What
  the legs found keeps its ranks, the expanded passages are extra context after it. RRF's fused
  scores are flat (the top ten lie within a few percent of each other), so over the top fused score
  nearly every chunk counts about 1 and a graph neighbour would outrank leg-found chunks on
  evidence the legs never weighed; append is the choice that cannot lower the fused ranking's
  quality until the evals show interleaving helps.
- "interleave": scored hybrid x the top fused score and merged into the fused list by score (a
  fused match first on equal scores): a strong neighbour of the best chunk can rank among them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

Placement = Literal["interleave", "append"]


@dataclass(frozen=True, slots=True)
class FusedChunk:
    """A fused match as the stage sees it (in fused order)."""

    chunk_id: str
    score: float
    file_path: str = ""
    # Qualified name of the definition the chunk is (code), to find a code walk's source chunk.
    symbol: str = ""


@dataclass(frozen=True, slots=True)
class ReachedChunk:
    """A chunk ExpandContext reached."""

    chunk_id: str
    # The graph leg's score of it (see the module docstring for its scale).
    graph_score: float
    # Provenance `seed_entity`: the source chunk's id (documents) or the seed's qualified name (code).
    seed_entity: str
    depth: int
    file_path: str = ""
    # Its position in ExpandContext's answer (which of a chunk's answers scored best).
    position: int = 0


@dataclass(frozen=True, slots=True)
class ExpansionSettings:
    top_n: int = 5
    chunk_weight: float = 0.7
    min_score: float = 0.3
    max_chunks: int = 50
    placement: Placement = "append"
    # At most this many matches from one file, fused ones included (0 = no cap).
    max_per_file: int = 0


@dataclass(frozen=True, slots=True)
class Expanded:
    """A kept expanded chunk and how it scored."""

    reached: ReachedChunk
    source_chunk_id: str
    chunk_score: float
    graph_score: float  # in [0, 1], as the hybrid used it
    hybrid: float
    # Its score in the ranked answer (see placement).
    score: float
    # 1-based, among the kept expanded chunks.
    rank: int


@dataclass(frozen=True, slots=True)
class Placed:
    """One entry of the ranked answer: a fused chunk (expanded is None) or an expanded one."""

    chunk_id: str
    score: float
    expanded: Expanded | None = None


def source_chunk(seed_entity: str, top: Sequence[FusedChunk]) -> FusedChunk:
    """The expanded fused chunk a walk started from (see the module docstring); `top` is not empty."""
    for chunk in top:
        if chunk.chunk_id == seed_entity:
            return chunk
    for chunk in top:
        if chunk.symbol and chunk.symbol == seed_entity:
            return chunk
    return min(top, key=lambda c: (c.score, c.chunk_id))


def graph_scale(reached: Sequence[ReachedChunk]) -> float:
    """What an answer's graph scores are divided by: 1, or its largest score when that exceeds 1."""
    return max([1.0, *(r.graph_score for r in reached)])


def score_expanded(
    fused: Sequence[FusedChunk], reached: Sequence[ReachedChunk], settings: ExpansionSettings
) -> list[Expanded]:
    """The kept expanded chunks, best hybrid first, with their score in the ranked answer."""
    top = list(fused[: settings.top_n])
    if not top:
        return []
    top_score = fused[0].score
    present = {c.chunk_id for c in fused}
    scale = graph_scale(reached)
    best: dict[str, tuple[float, str, float, float, ReachedChunk]] = {}
    for item in reached:
        if item.chunk_id in present:
            continue
        source = source_chunk(item.seed_entity, top)
        chunk_score = _unit(source.score / top_score) if top_score > 0 else 0.0
        graph = _unit(item.graph_score / scale)
        hybrid = settings.chunk_weight * chunk_score + (1 - settings.chunk_weight) * graph
        candidate = (hybrid, source.chunk_id, chunk_score, graph, item)
        held = best.get(item.chunk_id)
        if held is None or (hybrid, held[1]) > (held[0], source.chunk_id):
            best[item.chunk_id] = candidate
    ordered = sorted(
        (c for c in best.values() if c[0] >= settings.min_score), key=lambda c: (-c[0], c[4].chunk_id)
    )
    per_file: dict[str, int] = {}
    for chunk in fused:
        per_file[chunk.file_path] = per_file.get(chunk.file_path, 0) + 1
    scale_by = top_score if settings.placement == "interleave" else fused[-1].score
    kept: list[Expanded] = []
    for hybrid, source_id, chunk_score, graph, item in ordered:
        if len(kept) >= settings.max_chunks:
            break
        if settings.max_per_file > 0:
            if per_file.get(item.file_path, 0) >= settings.max_per_file:
                continue
            per_file[item.file_path] = per_file.get(item.file_path, 0) + 1
        kept.append(
            Expanded(item, source_id, chunk_score, graph, hybrid, hybrid * scale_by, rank=len(kept) + 1)
        )
    return kept


def place(fused: Sequence[FusedChunk], expanded: Sequence[Expanded], placement: Placement) -> list[Placed]:
    """The ranked answer: the fused chunks in their order, the expanded ones (best first) after
    them ("append") or merged in by score, a fused chunk first on equal scores ("interleave")."""
    out = [Placed(c.chunk_id, c.score) for c in fused]
    extra = [Placed(e.reached.chunk_id, e.score, e) for e in expanded]
    if placement == "append":
        return [*out, *extra]
    merged: list[Placed] = []
    i = 0
    for item in out:
        while i < len(extra) and extra[i].score > item.score:
            merged.append(extra[i])
            i += 1
        merged.append(item)
    return [*merged, *extra[i:]]


def _unit(value: float) -> float:
    return min(max(value, 0.0), 1.0)
