"""Named-entity answers cached in PostgreSQL by content: a chunk text analysed once per
recognizer (model, version, labels, confidence floor) is read back instead of analysed again,
across restarts and corpora."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Sequence
from typing import Protocol

import asyncpg

from tribrid.ner import Mention


class Recognizer(Protocol):
    @property
    def identity(self) -> str: ...

    def recognize(self, texts: Sequence[str]) -> list[list[Mention]]: ...


def text_key(text: str) -> bytes:
    return hashlib.sha1(text.encode("utf-8")).digest()


def encode_mentions(mentions: Sequence[Mention]) -> str:
    return json.dumps([[m.label, m.text, m.count] for m in mentions], ensure_ascii=False)


def decode_mentions(stored: str) -> list[Mention]:
    return [Mention(label, text, count) for label, text, count in json.loads(stored)]


async def recognize_cached(
    pool: asyncpg.Pool, recognizer: Recognizer, texts: Sequence[str]
) -> list[list[Mention]]:
    """`recognizer.recognize(texts)`, reading the texts already analysed in one query and writing
    the new answers in one statement. Each distinct text is analysed at most once per call."""
    model = recognizer.identity
    keys = [text_key(text) for text in texts]
    rows = await pool.fetch(
        "SELECT text_sha1, mentions::text AS mentions FROM entity_mentions"
        " WHERE model = $1 AND text_sha1 = ANY($2::bytea[])",
        model,
        sorted(set(keys)),
    )
    found = {bytes(row["text_sha1"]): decode_mentions(row["mentions"]) for row in rows}
    missing: dict[bytes, str] = {}
    for key, text in zip(keys, texts, strict=True):
        if key not in found:
            missing.setdefault(key, text)
    if missing:
        answers = await asyncio.to_thread(recognizer.recognize, list(missing.values()))
        fresh = dict(zip(missing, answers, strict=True))
        await pool.execute(
            "INSERT INTO entity_mentions (model, text_sha1, mentions)"
            " SELECT $1, k, m::jsonb FROM unnest($2::bytea[], $3::text[]) AS t(k, m)"
            " ON CONFLICT DO NOTHING",
            model,
            list(fresh),
            [encode_mentions(mentions) for mentions in fresh.values()],
        )
        found.update(fresh)
    return [found[key] for key in keys]
