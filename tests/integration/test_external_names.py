"""The graph leg's index of unresolved references, on the real graph store."""

from __future__ import annotations

from dataclasses import replace

from services.graph.external import ExternalNames
from tests.integration.test_graphstore import ent, new_corpus_id
from tests.stack import Stack
from tribrid.graphstore.base import graph_key

REFS = {
    "a": ("requests.get", "json.dumps"),
    "b": ("requests.Session.get",),
    "c": ("get",),
    "d": ("shutil.get_terminal_size",),
    "e": ("json.dumps",),
}


async def test_referrers_match_names_and_dotted_tails_per_generation(stack: Stack) -> None:
    store = stack.resources.graph()
    corpus_id = new_corpus_id()
    first, second = graph_key(corpus_id, 1), graph_key(corpus_id, 2)
    entities = [replace(ent(corpus_id, eid, f"f_{eid}"), unresolved=refs) for eid, refs in REFS.items()]
    entities[4] = replace(entities[4], type="class")
    await store.upsert_entities(first, entities)
    # the next generation: "a" no longer refers to json.dumps
    await store.upsert_entities(second, [replace(entities[0], unresolved=("requests.get",)), *entities[1:]])
    external = ExternalNames()
    try:
        for names, types, want in [
            (["get"], ["function"], ["a", "b", "c"]),
            (["requests.get"], ["function"], ["a"]),
            (["session.get", "DUMPS"], ["function", "class"], ["a", "b", "e"]),
            (["json.dumps"], ["class"], ["e"]),
            (["s.get", "nothing"], ["function"], []),
        ]:
            indexed = await external.of(first, "life-1").referrers(store, names, types, 50)
            assert [r.entity.entity_id for r in indexed] == want, names
        limited = await external.of(first, "life-1").referrers(store, ["get"], ["function"], 2)
        assert [(r.entity.entity_id, r.name) for r in limited] == [
            ("a", "requests.get"),
            ("b", "requests.Session.get"),
        ]
        later = await external.of(second, "life-1").referrers(store, ["dumps"], ["function", "class"], 9)
        assert [(r.entity.entity_id, r.name) for r in later] == [("e", "json.dumps")]
    finally:
        await store.delete_corpus(first)
        await store.delete_corpus(second)
