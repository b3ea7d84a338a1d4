"""Typed relations a generation model reads out of document chunks (as LightRAG and neo4j-graphrag
do), off by default (`entities.extract_relations`), through the configured OpenAI-compatible
`/chat/completions` (the `generation` section).

Each chunk that names at least two known entities (imported or recognised) is sent once; the model
answers a JSON array of {"source", "relation", "target"} naming entities as the text does. A triple
is kept when both names are known entities' names or aliases and the relation is a type name
that is not one the indexer writes itself; it becomes an edge of that type with the properties
{"extracted": true, "chunk": <chunk id>}, so it is told apart from a curated one. Answers are
cached in PostgreSQL by model and chunk text: a re-index asks again only for new or changed text.
A chunk whose answer fails (HTTP error, timeout, not such an array) is skipped and counted; the
index run goes on.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import asyncpg

from services.indexer.named_entities import normalize_name
from tribrid.config import GRAPH_TYPE_PATTERN, RELATIONSHIP_TYPES
from tribrid.generation import GenerationClient, GenerationError
from tribrid.models import Relation

PROMPT = (
    "Read the passage and list the relations it states between the named entities below, as a JSON "
    'array of objects {{"source": NAME, "relation": TYPE, "target": NAME}}. NAME is one of the '
    "entities exactly as listed; TYPE is an upper-case relation name such as MEMBER_OF, LEADER_OF, "
    "FRIEND_OF, ENEMY_OF, FAMILY_OF, PARTNER_OF or SERVES. Only relations the passage states. Answer "
    "with the JSON array only ([] if none).\n\nEntities: {names}\n\nPassage:\n{text}"
)
# Chunks asked at once: the model server's queue, not ours, should decide the pace.
CONCURRENCY = 4
_TYPE = re.compile(GRAPH_TYPE_PATTERN)
Triple = tuple[str, str, str]


def parse_triples(answer: str) -> list[Triple]:
    """The triples of a model's answer; GenerationError when it is not a JSON array of them (a
    fenced ```json block is read too: models add one)."""
    text = answer.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        items = json.loads(text)
    except ValueError:
        raise GenerationError("not JSON: expected an array of {source, relation, target}") from None
    if not isinstance(items, list):
        raise GenerationError("not a JSON array of {source, relation, target}")
    triples: list[Triple] = []
    for item in items:
        if not isinstance(item, dict):
            raise GenerationError("an item of the array is not an object")
        values = [item.get(field) for field in ("source", "relation", "target")]
        if not all(isinstance(v, str) and v.strip() for v in values):
            raise GenerationError("an item lacks source, relation or target")
        source, relation, target = (str(v).strip() for v in values)
        triples.append((source, relation, target))
    return triples


@dataclass(frozen=True, slots=True)
class Extraction:
    relations: list[Relation]
    failed: int  # chunks whose answer could not be used
    asked: int  # chunks sent to the model (the rest came from the cache)


def _key(model: str, text: str) -> tuple[str, bytes]:
    return model, hashlib.sha1(text.encode("utf-8")).digest()


async def _cached(pool: asyncpg.Pool, model: str, texts: Sequence[str]) -> dict[str, list[Triple]]:
    digests = {_key(model, t)[1]: t for t in texts}
    rows = await pool.fetch(
        """SELECT text_sha1, triples FROM extracted_relations
           WHERE model = $1 AND text_sha1 = ANY($2::bytea[])""",
        model,
        list(digests),
    )
    return {digests[bytes(r["text_sha1"])]: [tuple(t) for t in json.loads(r["triples"])] for r in rows}


async def _store(pool: asyncpg.Pool, model: str, text: str, triples: list[Triple]) -> None:
    await pool.execute(
        """INSERT INTO extracted_relations (model, text_sha1, triples) VALUES ($1, $2, $3::jsonb)
           ON CONFLICT (model, text_sha1) DO UPDATE SET triples = $3::jsonb""",
        *_key(model, text),
        json.dumps(triples, ensure_ascii=False),
    )


async def extract_relations(
    client: GenerationClient,
    pool: asyncpg.Pool,
    chunks: Mapping[str, str],
    named: Mapping[str, Sequence[str]],
    names: Mapping[str, tuple[str, ...]],
) -> Extraction:
    """Relations stated in `chunks` (chunk id -> text) between the entities each one names
    (`named`: chunk id -> entity ids; `names`: entity id -> its name and aliases)."""
    by_name = {normalize_name(n): eid for eid, forms in sorted(names.items()) for n in forms}
    asked = {cid: text for cid, text in chunks.items() if len(set(named.get(cid, ()))) >= 2}
    model = f"{client.model} {hashlib.sha1(PROMPT.encode()).hexdigest()[:8]}"  # a new prompt asks again
    cached = await _cached(pool, model, list(asked.values()))
    sem = asyncio.Semaphore(CONCURRENCY)
    failed = 0

    async def one(chunk_id: str, text: str) -> list[Triple]:
        nonlocal failed
        if text in cached:
            return cached[text]
        listed = ", ".join(sorted({names[e][0] for e in named[chunk_id]}))
        async with sem:
            try:
                triples, _ = await client.generate(
                    PROMPT.format(names=listed, text=text), text, parse_triples
                )
            except GenerationError:
                failed += 1
                return []
        await _store(pool, model, text, triples)
        return triples

    found = await asyncio.gather(*(one(cid, text) for cid, text in sorted(asked.items())))
    edges: dict[tuple[str, str, str], Relation] = {}
    for chunk_id, triples in zip(sorted(asked), found, strict=True):
        for source, relation, target in triples:
            kind = relation.strip().lower()
            a, b = by_name.get(normalize_name(source)), by_name.get(normalize_name(target))
            if a is None or b is None or a == b or not _TYPE.match(kind) or kind in RELATIONSHIP_TYPES:
                continue
            properties = json.dumps({"chunk": chunk_id, "extracted": True}, sort_keys=True)
            edges.setdefault((a, kind, b), Relation(a, b, kind, properties=properties))
    asked_now = sum(1 for text in asked.values() if text not in cached)
    return Extraction(
        sorted(edges.values(), key=lambda r: (r.source_id, r.type, r.target_id)), failed, asked_now
    )
