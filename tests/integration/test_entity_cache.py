"""The content-addressed NER cache in the embedded PostgreSQL: each text analysed once, across
restarts, keyed by the recognizer's label set."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import asyncpg
import pytest

from services.indexer.entity_cache import recognize_cached
from tests.unit.test_entities import TEXTS
from tribrid.config import EntitiesConfig, TriBridConfig
from tribrid.ner import EntityRecognizer, Mention
from tribrid.stores.postgres import create_pool


class CountingRecognizer(EntityRecognizer):
    """The real recognizer, counting the texts it is asked to analyse."""

    def __init__(self, cfg: EntitiesConfig) -> None:
        super().__init__(cfg)
        self.analysed: list[str] = []

    def recognize(self, texts: Sequence[str]) -> list[list[Mention]]:
        self.analysed.extend(texts)
        return super().recognize(texts)


@pytest.fixture
async def pool(config: TriBridConfig) -> AsyncIterator[asyncpg.Pool]:
    pool = await create_pool(config.postgres, config.embedding.dim, config.vector, max_size=2)
    yield pool
    await pool.close()


async def test_cache_analyses_each_text_once(pool: asyncpg.Pool) -> None:
    counting = CountingRecognizer(EntitiesConfig())
    await pool.execute("DELETE FROM entity_mentions WHERE model = $1", counting.identity)
    texts = [TEXTS["chunk-a"], TEXTS["chunk-c"], TEXTS["chunk-a"], TEXTS["chunk-d"]]

    first = await recognize_cached(pool, counting, texts)
    assert counting.analysed == [TEXTS["chunk-a"], TEXTS["chunk-c"], TEXTS["chunk-d"]]
    assert first == counting.recognize(texts)  # the same answers as the recognizer's own
    counting.analysed.clear()

    again = CountingRecognizer(EntitiesConfig())  # a restart: a new recognizer, the same store
    second = await recognize_cached(pool, again, [*texts, TEXTS["chunk-b"]])
    assert again.analysed == [TEXTS["chunk-b"]]
    assert second[:4] == first
    assert second[4] == [
        Mention("GPE", "Paris", 2),
        Mention("ORG", "Dell Technologies", 1),
        Mention("PERSON", "Dell", 1),
    ]
    stored = await pool.fetchval("SELECT count(*) FROM entity_mentions WHERE model = $1", again.identity)
    assert stored == 4


async def test_cache_key_includes_the_label_set(pool: asyncpg.Pool) -> None:
    everything = CountingRecognizer(EntitiesConfig())
    only_places = CountingRecognizer(EntitiesConfig(types={"GPE": "location"}))
    assert everything.identity != only_places.identity
    await pool.execute("DELETE FROM entity_mentions WHERE model = $1", only_places.identity)
    await recognize_cached(pool, everything, [TEXTS["chunk-b"]])
    places = await recognize_cached(pool, only_places, [TEXTS["chunk-b"]])
    assert only_places.analysed == [TEXTS["chunk-b"]]
    assert places == [[Mention("GPE", "Paris", 2)]]
