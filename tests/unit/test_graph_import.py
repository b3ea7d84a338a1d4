"""Reading an imported graph (JSON Lines and CSV, errors by line and field) and merging it into the
document graph (no stores)."""

from __future__ import annotations

import json

import pytest

from services.indexer.graph_import import GraphImportError, ImportedGraph, read_csv, read_jsonl
from services.indexer.imported_graph import merge_imported
from services.indexer.named_entities import DocumentGraph
from tribrid.config import EntitiesConfig
from tribrid.models import Entity, Relation

NODES_CSV = (
    "id,type,name,aliases,title\nchasca,Character,恰斯卡,Chasca|Miss Chasca,scout\nff,organization,花羽会,,\n"
)
EDGES_CSV = "source,relation,target,role\nchasca,MEMBER_OF,ff,member\n"


def test_csv_and_jsonl_read_the_same_graph() -> None:
    from_csv = read_csv(NODES_CSV.encode(), EDGES_CSV.encode())
    lines = [
        {"id": "chasca", "type": "character", "name": "恰斯卡", "aliases": ["Chasca", "Miss Chasca"],
         "properties": {"title": "scout"}},
        {"id": "ff", "type": "organization", "name": "花羽会"},
        {"source": "chasca", "relation": "member_of", "target": "ff", "properties": {"role": "member"}},
    ]  # fmt: skip
    from_jsonl = read_jsonl("\n".join(json.dumps(x, ensure_ascii=False) for x in lines).encode())
    assert from_csv == from_jsonl
    assert from_csv.edges[0].relation == "member_of" and from_csv.nodes[0].type == "character"
    assert ImportedGraph.from_json(from_csv.to_json()) == from_csv


@pytest.mark.parametrize(
    ("nodes", "edges", "message"),
    [
        ("id,type\n", EDGES_CSV, "nodes line 1: missing column(s) name"),
        (
            NODES_CSV + "chasca,character,Other,,\n",
            "source,relation,target\n",
            "nodes line 4: id: 'chasca' is already",
        ),
        (NODES_CSV, "source,relation,target\nchasca,member of,ff\n", "edges line 2: relation"),
        (NODES_CSV, EDGES_CSV + "chasca,MEMBER_OF,ff,again\n", "edges line 3: the same edge as line 2"),
        (
            NODES_CSV,
            "source,relation,target\nff,LEADS,nobody\n",
            "edges line 2: target: no node has id 'nobody'",
        ),
        ("id,type,name\n,person,X\n", "source,relation,target\n", "nodes line 2: id"),
    ],
)
def test_csv_errors_name_the_file_line_and_field(nodes: str, edges: str, message: str) -> None:
    with pytest.raises(GraphImportError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        read_csv(nodes.encode(), edges.encode())


def test_a_property_must_be_a_plain_value() -> None:
    with pytest.raises(GraphImportError, match=r"^line 1: properties\.tags: "):
        read_jsonl(b'{"id": "a", "type": "x", "name": "A", "properties": {"tags": ["a", "b"]}}')


def test_a_recognised_entity_named_like_an_imported_node_is_that_node() -> None:
    graph = read_csv(NODES_CSV.encode(), EDGES_CSV.encode())
    recognised = Entity("ner-1", "c", "person", "Chasca", "Chasca", "", 0, 0, "")
    other = Entity("ner-2", "c", "location", "Natlan", "Natlan", "", 0, 0, "")
    named = DocumentGraph(
        entities=[recognised, other],
        mentions=[Relation("k1", "ner-1", "mentions", count=2), Relation("k2", "ner-2", "mentions", count=1)],
    )
    linked = {"k1": {"chasca": 1}, "k3": {"ff": 1, "chasca": 1}}
    merged = merge_imported("c", graph, named, linked, EntitiesConfig(related_min_chunks=1))
    assert [e.entity_id for e in merged.entities] == ["chasca", "ff", "ner-2"]
    assert {(m.source_id, m.target_id, m.count) for m in merged.mentions} == {
        ("k1", "chasca", 2),  # the larger of the recogniser's 2 and the linker's 1
        ("k2", "ner-2", 1),
        ("k3", "chasca", 1),
        ("k3", "ff", 1),
    }
    assert [(r.source_id, r.type, r.target_id, json.loads(r.properties)) for r in merged.typed] == [
        ("chasca", "member_of", "ff", {"role": "member"})
    ]
    assert [(r.source_id, r.target_id) for r in merged.related] == [("chasca", "ff")]
