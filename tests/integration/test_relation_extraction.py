"""Relations a generation model reads out of chunks (entities.extract_relations), against a real
HTTP stand-in for the model and the real PostgreSQL cache: kept only between known entities,
marked extracted with their chunk, cached by text, and a malformed answer skips its chunk."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator

import pytest

from services.indexer.relation_extraction import extract_relations
from tests.chat_server import Reply, ScriptedChat, chat_server
from tests.stack import Stack
from tribrid.config import GenerationConfig
from tribrid.generation import GenerationClient

NAMES = {"chasca": ("恰斯卡", "Chasca"), "ff": ("花羽会",), "ifa": ("伊法",)}
CHUNKS = {
    "k1": "恰斯卡是花羽会的成员。",
    "k2": "伊法和恰斯卡一起出发。",
    "k3": "恰斯卡独自巡游。",  # one entity: nothing to relate, never asked
}
NAMED = {"k1": ["chasca", "ff"], "k2": ["ifa", "chasca"], "k3": ["chasca"]}


@pytest.fixture
async def chat() -> AsyncIterator[ScriptedChat]:
    async with chat_server() as server:
        yield server


def answer(prompt: str) -> Reply:
    if "花羽会的成员" in prompt:  # a fenced block, and a triple naming an unknown entity
        triples = [
            {"source": "Chasca", "relation": "MEMBER_OF", "target": "花羽会"},
            {"source": "Nobody", "relation": "FRIEND_OF", "target": "恰斯卡"},
            {"source": "恰斯卡", "relation": "mentions", "target": "花羽会"},  # the indexer's own type
        ]
        return Reply(text="```json\n" + json.dumps(triples, ensure_ascii=False) + "\n```")
    return Reply("malformed")


async def test_relations_between_known_entities_marked_extracted_and_cached(
    stack: Stack, chat: ScriptedChat
) -> None:
    chat.respond = answer
    # a model name of its own: the cache lives in the stores, which outlive one test run
    model = f"stand-in-{uuid.uuid4().hex[:8]}"
    client = GenerationClient(GenerationConfig(base_url=chat.url, model=model, cache_size=0))
    pool = await stack.resources.pool()
    try:
        first = await extract_relations(client, pool, CHUNKS, NAMED, NAMES)
        assert [(r.source_id, r.type, r.target_id, json.loads(r.properties)) for r in first.relations] == [
            ("chasca", "member_of", "ff", {"chunk": "k1", "extracted": True})
        ]
        assert (first.asked, first.failed, len(chat.calls)) == (2, 1, 2)  # k3 names one entity
        again = await extract_relations(client, pool, CHUNKS, NAMED, NAMES)
        assert again.relations == first.relations
        # k1's answer came from PostgreSQL; k2's failed, so it is asked again
        assert (again.asked, again.failed, len(chat.calls)) == (1, 1, 3)
    finally:
        await client.close()
