"""A curated graph imported into an indexed corpus through the real stack: validation (line and
field, nothing written), typed relations with their properties, names and aliases linked in Chinese
and accented Latin text, re-import replacing the last one, later index runs keeping it, and delete
removing it."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import grpc
import pytest

from services.indexer.pg_writer import committed_root
from tests.stack import Stack, index_corpus
from tribrid.v1 import common_pb2, graph_pb2, graph_pb2_grpc, indexer_pb2, indexer_pb2_grpc

CORPUS = "imported-graph"
DOCS = {
    "natlan.md": (
        "# 纳塔\n\n恰斯卡是花羽会的成员\N{FULLWIDTH COMMA}常在纳塔的高原上巡游。\n\n"
        "伊法也属于花羽会\N{FULLWIDTH COMMA}他和恰斯卡一起出发。\n"
    ),
    "zurich.md": "# Zurich\n\nThe Zurich office opened in 2020. Chasca visited the ZÜRICH team twice.\n",
    "other.md": "# Other\n\nNothing about anyone here: just the weather and the trains.\n",
}
NODES: list[dict[str, Any]] = [
    {
        "id": "chasca",
        "type": "character",
        "name": "恰斯卡",
        "aliases": ["Chasca"],
        "properties": {"region": "纳塔"},
    },
    {"id": "ifa", "type": "character", "name": "伊法", "aliases": ["Ifa"]},
    {"id": "flower-feather", "type": "organization", "name": "花羽会", "aliases": ["Flower-Feather Clan"]},
    {"id": "zurich", "type": "location", "name": "Zürich"},
]
EDGES: list[dict[str, Any]] = [
    {
        "source": "chasca",
        "relation": "MEMBER_OF",
        "target": "flower-feather",
        "properties": {"role": "scout"},
    },
    {"source": "ifa", "relation": "MEMBER_OF", "target": "flower-feather", "properties": {"role": "healer"}},
    {"source": "chasca", "relation": "FRIEND_OF", "target": "ifa", "properties": {"strength": 0.8}},
]


def jsonl(*items: Mapping[str, Any]) -> bytes:
    return "\n".join(json.dumps(item, ensure_ascii=False) for item in items).encode()


async def import_graph(stack: Stack, request: indexer_pb2.ImportGraphRequest) -> indexer_pb2.IndexProgress:
    last = indexer_pb2.IndexProgress()
    async with stack.channel("indexer") as channel:
        async for event in indexer_pb2_grpc.IndexerStub(channel).ImportGraph(request, timeout=120):
            last = event
    return last


def request(content: bytes, corpus_id: str = CORPUS) -> indexer_pb2.ImportGraphRequest:
    return indexer_pb2.ImportGraphRequest(corpus_id=corpus_id, content=content, source="test.jsonl")


async def graph_call(stack: Stack, method: str, message: object) -> object:
    async with stack.channel("graph") as channel:
        return await getattr(graph_pb2_grpc.GraphSearchStub(channel), method)(message, timeout=30)


@pytest.fixture(scope="module")
async def root(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Path:
    docs = tmp_path_factory.mktemp("imported") / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    await index_corpus(stack, CORPUS, docs)
    return docs


@pytest.fixture(scope="module")
async def imported(stack: Stack, root: Path) -> indexer_pb2.IndexProgress:
    return await import_graph(stack, request(jsonl(*NODES, *EDGES)))


async def test_a_bad_line_names_its_number_and_field_and_writes_nothing(stack: Stack, root: Path) -> None:
    async with stack.channel("indexer") as channel:
        before = {
            c.corpus_id: c.generation
            for c in (
                await indexer_pb2_grpc.IndexerStub(channel).ListCorpora(indexer_pb2.ListCorporaRequest())
            ).corpora
        }
    bad_edge = {"source": "chasca", "relation": "MEMBER_OF", "target": "nobody"}
    cases = [
        (jsonl(*NODES, bad_edge), "content line 5: target: no node has id 'nobody'"),
        (jsonl(NODES[0], {"id": "x", "type": "character"}), "content line 2: name: Field required"),
        (jsonl(NODES[0]) + b"\n{oops", "content line 2: not JSON"),
        (jsonl({**NODES[0], "type": "chunk"}), "content line 1: type"),
        (jsonl(NODES[0], {**EDGES[0], "relation": "mentions"}), "content line 2: relation"),
    ]
    for content, message in cases:
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await import_graph(stack, request(content))
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert message in (err.value.details() or "")
    with pytest.raises(grpc.aio.AioRpcError) as missing:
        await import_graph(stack, request(jsonl(*NODES), corpus_id="no-such-corpus"))
    assert missing.value.code() == grpc.StatusCode.NOT_FOUND
    async with stack.channel("indexer") as channel:
        after = {
            c.corpus_id: c.generation
            for c in (
                await indexer_pb2_grpc.IndexerStub(channel).ListCorpora(indexer_pb2.ListCorporaRequest())
            ).corpora
        }
    assert after[CORPUS] == before[CORPUS]


async def test_the_import_is_a_new_generation_with_its_nodes_edges_and_linked_mentions(
    stack: Stack, imported: indexer_pb2.IndexProgress
) -> None:
    assert imported.done and (imported.imported_nodes, imported.imported_edges) == (4, 3)
    # (chunk, entity) pairs: 恰斯卡, 伊法 and 花羽会 in natlan.md, Chasca and Zürich in zurich.md
    assert imported.linked_mentions >= 4


async def test_typed_relations_keep_their_properties_both_ways(stack: Stack, imported: object) -> None:
    reply = await graph_call(
        stack,
        "Neighbors",
        graph_pb2.NeighborsRequest(
            corpus_id=CORPUS, entity=graph_pb2.EntityRef(name="花羽会"), relationship_type="MEMBER_OF"
        ),
    )
    assert isinstance(reply, graph_pb2.EntitiesResponse)
    members = {(e.entity_id, e.direction, e.edge.attributes["role"]) for e in reply.entities}
    assert members == {("chasca", "in", "scout"), ("ifa", "in", "healer")}
    with pytest.raises(grpc.aio.AioRpcError) as typo:  # the graph's own types are listed
        await graph_call(
            stack,
            "Neighbors",
            graph_pb2.NeighborsRequest(
                corpus_id=CORPUS, entity=graph_pb2.EntityRef(name="花羽会"), relationship_type="MEMBERS_OF"
            ),
        )
    assert typo.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "no relationship type 'MEMBERS_OF'; it has " in (typo.value.details() or "")
    assert "friend_of" in (typo.value.details() or "") and "member_of" in (typo.value.details() or "")
    search = await graph_call(
        stack,
        "EntitySearch",
        graph_pb2.EntitySearchRequest(corpus_id=CORPUS, entity=graph_pb2.EntityRef(name="Chasca")),
    )
    assert isinstance(search, graph_pb2.EntitySearchResponse)
    assert search.entity.entity_id == "chasca" and search.entity.attributes["region"] == "纳塔"
    typed = {(r.relation, r.direction, r.target.entity_id) for r in search.relations}
    assert {("member_of", "out", "flower-feather"), ("friend_of", "out", "ifa")} <= typed
    path = await graph_call(
        stack,
        "PathBetween",
        graph_pb2.PathBetweenRequest(
            corpus_id=CORPUS,
            source=graph_pb2.EntityRef(name="伊法"),
            target=graph_pb2.EntityRef(name="恰斯卡"),
        ),
    )
    assert isinstance(path, graph_pb2.PathResponse)
    assert path.found and list(path.relationship_types) == ["friend_of"]


async def test_names_and_aliases_are_linked_in_chinese_and_accented_text(
    stack: Stack, imported: object
) -> None:
    async def chunk_files(name: str) -> dict[str, float]:
        reply = await graph_call(
            stack,
            "EntityChunks",
            graph_pb2.EntityChunksRequest(corpus_id=CORPUS, entity=graph_pb2.EntityRef(name=name)),
        )
        return {m.file_path: m.score for m in reply.matches}  # type: ignore[attr-defined]

    chasca = await chunk_files("恰斯卡")
    assert set(chasca) == {"natlan.md", "zurich.md"}  # 恰斯卡 in Chinese, the alias Chasca in English
    zurich = await chunk_files("Zürich")
    assert list(zurich) == ["zurich.md"] and zurich["zurich.md"] >= 3  # Zurich, Zurich, ZÜRICH
    assert set(await chunk_files("花羽会")) == {"natlan.md"}


async def test_an_english_question_finds_a_chinese_name_as_pinyin(stack: Stack, imported: object) -> None:
    """伊法 has no Latin alias: "Yi Fa" (pinyin, as English-language readers spell Chinese names)
    still names it, in a question to the graph leg and on the entity calls, as "Zurich" names
    Zürich."""
    search = await graph_call(
        stack,
        "Search",
        common_pb2.SearchRequest(corpus_id=CORPUS, query="Where did Yi Fa set out for?", top_k=5),
    )
    assert isinstance(search, common_pb2.SearchResponse)
    assert search.matches and search.matches[0].file_path == "natlan.md"
    assert "seed=伊法" in search.matches[0].explain[0].detail
    unnamed = await graph_call(
        stack,
        "Search",
        common_pb2.SearchRequest(corpus_id=CORPUS, query="Where did they set out for?", top_k=5),
    )
    assert not [m for m in unnamed.matches if "伊法" in m.explain[0].detail]  # type: ignore[attr-defined]
    for spelled in ("Yifa", "yi fa", "Zurich"):
        chunks = await graph_call(
            stack,
            "EntityChunks",
            graph_pb2.EntityChunksRequest(corpus_id=CORPUS, entity=graph_pb2.EntityRef(name=spelled)),
        )
        assert [m.file_path for m in chunks.matches] == [  # type: ignore[attr-defined]
            "zurich.md" if spelled == "Zurich" else "natlan.md"
        ]
    for near in ("Yi", "Yi Fq"):  # the start of a spelling, one edit from one: the candidates
        with pytest.raises(grpc.aio.AioRpcError) as offered:
            await graph_call(
                stack,
                "EntitySearch",
                graph_pb2.EntitySearchRequest(corpus_id=CORPUS, entity=graph_pb2.EntityRef(name=near)),
            )
        assert offered.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert "names no entity; the nearest, best first: 伊法" in (offered.value.details() or "")
    with pytest.raises(grpc.aio.AioRpcError) as longer:  # a spelling inside a longer name is not it
        await graph_call(
            stack,
            "EntityChunks",
            graph_pb2.EntityChunksRequest(corpus_id=CORPUS, entity=graph_pb2.EntityRef(name="Yifa Zurich")),
        )
    assert longer.value.code() in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT)


async def test_a_relation_stated_once_is_found_as_a_co_mention(stack: Stack, imported: object) -> None:
    """zurich.md names Zürich and Chasca together once: no RELATED_TO (it needs two chunks), but
    EntitySearch lists the pair as co-mentioned, with the chunk; pairs a stored edge links are not."""
    search = await graph_call(
        stack,
        "EntitySearch",
        graph_pb2.EntitySearchRequest(corpus_id=CORPUS, entity=graph_pb2.EntityRef(name="Zürich")),
    )
    assert isinstance(search, graph_pb2.EntitySearchResponse)
    assert [(r.relation, r.target.entity_id, r.properties.count) for r in search.relations] == [
        ("co_mentioned", "chasca", 1)
    ]
    (chunk,) = search.relations[0].chunk_ids
    entities = await graph_call(
        stack, "ChunkEntities", graph_pb2.ChunkEntitiesRequest(corpus_id=CORPUS, chunk_id=chunk)
    )
    assert {e.entity_id for e in entities.mentions} == {"chasca", "zurich"}  # type: ignore[attr-defined]
    chasca = await graph_call(
        stack,
        "EntitySearch",
        graph_pb2.EntitySearchRequest(corpus_id=CORPUS, entity=graph_pb2.EntityRef(entity_id="chasca")),
    )
    relations = [(r.relation, r.target.entity_id) for r in chasca.relations]  # type: ignore[attr-defined]
    assert ("co_mentioned", "zurich") in relations
    assert ("co_mentioned", "ifa") not in relations and ("friend_of", "ifa") in relations
    only = await graph_call(
        stack,
        "EntitySearch",
        graph_pb2.EntitySearchRequest(
            corpus_id=CORPUS, entity=graph_pb2.EntityRef(entity_id="chasca"), relation="CO_MENTIONED"
        ),
    )
    assert {r.relation for r in only.relations} == {"co_mentioned"}  # type: ignore[attr-defined]


async def test_the_relation_a_question_names_leads_to_the_chunk_that_states_it(
    stack: Stack, tmp_path: Path
) -> None:
    """Two paragraphs name Liesel, each with one of her neighbours: her husband and her friend, each
    named once. The question that names the relation ("husband", a property's word; "friend", the
    type's word; 丈夫 in Chinese, where 夫 is a property's run) ranks its paragraph first."""
    corpus = "relation-words"
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "husband.md").write_text("# Market\n\nLiesel walked with Bruno to the market.\n")
    (docs / "friend.md").write_text("# Letter\n\nLiesel wrote a long letter to Carla.\n")
    await index_corpus(stack, corpus, docs)
    nodes: list[dict[str, Any]] = [
        {"id": "liesel", "type": "character", "name": "Liesel", "aliases": ["莉泽尔"]},
        {"id": "bruno", "type": "character", "name": "Bruno"},
        {"id": "carla", "type": "character", "name": "Carla"},
    ]
    edges: list[dict[str, Any]] = [
        {"source": "liesel", "relation": "FAMILY_OF", "target": "bruno", "properties": {"kind": "husband"}},
        {"source": "bruno", "relation": "PARTNER_OF", "target": "liesel", "properties": {"label": "夫/妻"}},
        {"source": "liesel", "relation": "FRIEND_OF", "target": "carla", "properties": {"since": "school"}},
    ]
    await import_graph(stack, request(jsonl(*nodes, *edges), corpus_id=corpus))
    firsts: dict[str, str] = {}
    for question in ("Who is Liesel's husband?", "Who is Liesel's friend?", "莉泽尔的丈夫是谁"):
        found = await graph_call(
            stack, "Search", common_pb2.SearchRequest(corpus_id=corpus, query=question, top_k=5)
        )
        assert isinstance(found, common_pb2.SearchResponse)
        assert {m.file_path for m in found.matches} == {"husband.md", "friend.md"}
        firsts[question] = found.matches[0].file_path
    assert firsts == {
        "Who is Liesel's husband?": "husband.md",
        "Who is Liesel's friend?": "friend.md",
        "莉泽尔的丈夫是谁": "husband.md",
    }


@pytest.mark.parametrize(
    ("name", "nearest"),
    [
        ("Flower", "花羽会"),  # the start of an alias
        ("Chasco", "恰斯卡"),  # one edit
        ("Zürick", "Zürich"),
        ("Ifaa", "伊法"),  # one edit from a short name
        ("Zurih", "Zürich"),  # one edit, its accent left out
        ("feather clan", "花羽会"),  # the end of an alias, its hyphen typed as a space
    ],
)
async def test_a_name_that_fits_nothing_lists_the_nearest_entities(
    stack: Stack, imported: object, name: str, nearest: str
) -> None:
    for method, message in (
        (
            "EntitySearch",
            graph_pb2.EntitySearchRequest(corpus_id=CORPUS, entity=graph_pb2.EntityRef(name=name)),
        ),
        (
            "EntityChunks",
            graph_pb2.EntityChunksRequest(corpus_id=CORPUS, entity=graph_pb2.EntityRef(name=name)),
        ),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await graph_call(stack, method, message)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        details = err.value.details() or ""
        assert "names no entity; the nearest, best first: " + nearest in details
    with pytest.raises(grpc.aio.AioRpcError) as none:
        await graph_call(
            stack,
            "EntitySearch",
            graph_pb2.EntitySearchRequest(corpus_id=CORPUS, entity=graph_pb2.EntityRef(name="Qwxyz")),
        )
    assert none.value.code() == grpc.StatusCode.NOT_FOUND


async def test_a_reimport_replaces_the_last_and_an_index_run_keeps_it(
    stack: Stack, root: Path, imported: object
) -> None:
    smaller = await import_graph(stack, request(jsonl(NODES[0], NODES[2], EDGES[0])))
    assert (smaller.imported_nodes, smaller.imported_edges) == (2, 1)
    with pytest.raises(grpc.aio.AioRpcError) as gone:
        await graph_call(
            stack,
            "EntitySearch",
            graph_pb2.EntitySearchRequest(corpus_id=CORPUS, entity=graph_pb2.EntityRef(name="伊法")),
        )
    assert gone.value.code() == grpc.StatusCode.NOT_FOUND
    (root / "more.md").write_text(
        "# More\n\n恰斯卡 came back to the Flower-Feather Clan.\n", encoding="utf-8"
    )
    again = await index_corpus(stack, CORPUS, root)
    assert again.imported_nodes == 2 and again.generation == smaller.generation + 1
    reply = await graph_call(
        stack,
        "EntityChunks",
        graph_pb2.EntityChunksRequest(
            corpus_id=CORPUS, entity=graph_pb2.EntityRef(entity_id="flower-feather")
        ),
    )
    assert {m.file_path for m in reply.matches} == {"natlan.md", "more.md"}  # type: ignore[attr-defined]


async def test_deleting_the_corpus_removes_the_import(stack: Stack, root: Path, imported: object) -> None:
    async with stack.channel("indexer") as channel:
        stub = indexer_pb2_grpc.IndexerStub(channel)
        await stub.DeleteCorpus(indexer_pb2.DeleteCorpusRequest(corpus_id=CORPUS))
    rows = await (await stack.resources.pool()).fetchval(
        "SELECT count(*) FROM graph_imports WHERE corpus_id = $1", CORPUS
    )
    assert rows == 0
    await index_corpus(stack, CORPUS, root)
    with pytest.raises(grpc.aio.AioRpcError) as gone:
        await graph_call(
            stack,
            "EntitySearch",
            graph_pb2.EntitySearchRequest(corpus_id=CORPUS, entity=graph_pb2.EntityRef(entity_id="chasca")),
        )
    assert gone.value.code() == grpc.StatusCode.NOT_FOUND


async def test_an_import_reads_the_files_from_where_they_were_indexed_last(
    stack: Stack, tmp_path: Path
) -> None:
    """The same files indexed from a moved directory make no new generation, but the corpus now
    lives there: an import afterwards re-reads them from the new place (the old one is gone)."""
    first, moved = tmp_path / "first", tmp_path / "moved"
    first.mkdir()
    for name, text in DOCS.items():
        (first / name).write_text(text, encoding="utf-8")
    corpus = "moved-graph"
    indexed = await index_corpus(stack, corpus, first)
    shutil.move(first, moved)
    again = await index_corpus(stack, corpus, moved)
    assert again.message == "unchanged" and again.generation == indexed.generation
    assert await committed_root(await stack.resources.pool(), corpus) == str(moved)
    done = await import_graph(stack, request(jsonl(*NODES, *EDGES), corpus_id=corpus))
    assert done.generation == indexed.generation + 1 and done.linked_mentions > 0
    async with stack.channel("indexer") as channel:
        await indexer_pb2_grpc.IndexerStub(channel).DeleteCorpus(
            indexer_pb2.DeleteCorpusRequest(corpus_id=corpus)
        )
