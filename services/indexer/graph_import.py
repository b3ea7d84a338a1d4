"""A curated graph that a user brings (a wiki export, a game's character database, a CRM): read
from JSON Lines or from a pair of CSV files, validated by pydantic, with every error naming the
line and the field. Nothing of a file with an error is kept.

JSON Lines, one object per line, nodes and edges in any order:
    {"id": "chasca", "type": "character", "name": "恰斯卡", "aliases": ["Chasca"],
     "properties": {"region": "纳塔"}}
    {"source": "chasca", "relation": "MEMBER_OF", "target": "flower-feather",
     "properties": {"role": "member"}}
(each object on one line in the file).

CSV: a nodes file with the columns id, type, name and optionally aliases (separated by "|"), and an
edges file with source, relation, target; every other column is a property (empty cells are left
out). Relation types are stored lower-case (`member_of`); the graph stores them as labels in
upper case (`MEMBER_OF`), as Cypher users write them.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, field_validator

from tribrid.config import GRAPH_TYPE_PATTERN, RELATIONSHIP_TYPES

# Names the indexer's own edges use: an imported edge may not pose as one of them.
RESERVED_RELATIONS = frozenset(RELATIONSHIP_TYPES)
# Entity types the indexer's own nodes use.
RESERVED_TYPES = frozenset({"document", "chunk"})
ALIAS_SEPARATOR = "|"
MAX_TEXT = 1000
_TYPE_NAME = re.compile(GRAPH_TYPE_PATTERN)

Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_TEXT)]
PropertyValue = str | bool | int | float


class GraphImportError(ValueError):
    """A file that cannot be imported; the message names the line and the field."""


def _type_name(value: str, what: str, reserved: frozenset[str]) -> str:
    """A node or relation type, lower-cased; refused when not a type name or one of the indexer's."""
    name = value.strip().lower()
    if not _TYPE_NAME.match(name):
        raise ValueError(f"{what} {value!r} is not a type name (letters, digits and '_', 1..40)")
    if name in reserved:
        raise ValueError(f"{what} {name!r} is one the indexer writes itself; use another name")
    return name


class ImportedNode(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: Text
    type: str
    name: Text
    aliases: tuple[Text, ...] = ()
    properties: dict[str, PropertyValue] = Field(default_factory=dict)

    @field_validator("type")
    @classmethod
    def _node_type(cls, value: str) -> str:
        return _type_name(value, "type", RESERVED_TYPES)


class ImportedEdge(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    source: Text
    relation: str
    target: Text
    properties: dict[str, PropertyValue] = Field(default_factory=dict)

    @field_validator("relation")
    @classmethod
    def _relation_type(cls, value: str) -> str:
        return _type_name(value, "relation", RESERVED_RELATIONS)


@dataclass(frozen=True, slots=True)
class ImportedGraph:
    nodes: tuple[ImportedNode, ...]
    edges: tuple[ImportedEdge, ...]

    def to_json(self) -> str:
        """The validated graph as stored with the corpus (one JSON document)."""
        return json.dumps(
            {
                "nodes": [n.model_dump(mode="json") for n in self.nodes],
                "edges": [e.model_dump(mode="json") for e in self.edges],
            },
            ensure_ascii=False,
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> ImportedGraph:
        data = json.loads(text)
        return cls(
            tuple(ImportedNode.model_validate(n) for n in data["nodes"]),
            tuple(ImportedEdge.model_validate(e) for e in data["edges"]),
        )


def _first_error(line: int, error: ValidationError) -> GraphImportError:
    detail = error.errors()[0]
    # a property's value failed every member of the union: name the property, not the member
    loc = [str(part) for part in detail["loc"] if part not in ("str", "bool", "int", "float")]
    field = ".".join(loc) or "line"
    return GraphImportError(f"line {line}: {field}: {detail['msg']}")


def _lines(data: bytes, what: str) -> Iterator[tuple[int, str]]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise GraphImportError(f"{what}: not UTF-8 (byte {err.start})") from err
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            yield number, line


def read_jsonl(data: bytes) -> ImportedGraph:
    """Nodes and edges from JSON Lines: an object with `source` is an edge, any other a node."""
    nodes: list[tuple[int, ImportedNode]] = []
    edges: list[tuple[int, ImportedEdge]] = []
    for number, line in _lines(data, "jsonl"):
        try:
            item = json.loads(line)
        except json.JSONDecodeError as err:
            raise GraphImportError(f"line {number}: not JSON ({err.msg} at column {err.colno})") from err
        if not isinstance(item, dict):
            raise GraphImportError(f"line {number}: a node or an edge must be a JSON object")
        if "source" in item or "relation" in item:
            edges.append((number, _validated(ImportedEdge, number, item)))
        else:
            nodes.append((number, _validated(ImportedNode, number, item)))
    return _checked(nodes, edges)


def _csv_rows(data: bytes, what: str, required: tuple[str, ...]) -> Iterator[tuple[int, dict[str, str]]]:
    text = "\n".join(line for _, line in _lines(data, what)) if data.strip() else ""
    reader = csv.DictReader(io.StringIO(text))
    header = reader.fieldnames or []
    missing = [name for name in required if name not in header]
    if missing:
        raise GraphImportError(f"{what} line 1: missing column(s) {', '.join(missing)}")
    for row in reader:
        if None in row:
            raise GraphImportError(f"{what} line {reader.line_num}: more cells than columns")
        yield reader.line_num, {k: (v or "").strip() for k, v in row.items()}


NODE_COLUMNS = ("id", "type", "name", "aliases")
EDGE_COLUMNS = ("source", "relation", "target")
Item = TypeVar("Item", ImportedNode, ImportedEdge)


def _validated(model: type[Item], number: int, data: object, file: str = "") -> Item:
    """The line as a node or an edge; GraphImportError naming the file, line and field."""
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise GraphImportError(f"{file}{_first_error(number, err)}") from err


def _csv_item(row: dict[str, str], columns: tuple[str, ...]) -> dict[str, Any]:
    """A CSV row as the JSON Lines object it stands for: its columns, the others as properties."""
    item: dict[str, Any] = {key: row[key] for key in columns if key in row}
    if "aliases" in item:
        item["aliases"] = [a for a in item["aliases"].split(ALIAS_SEPARATOR) if a.strip()]
    item["properties"] = {key: value for key, value in row.items() if key not in columns and value}
    return item


def read_csv(nodes_data: bytes, edges_data: bytes) -> ImportedGraph:
    """Nodes and edges from two CSV files; lines are numbered per file, the header is line 1."""
    nodes = [
        (number, _validated(ImportedNode, number, _csv_item(row, NODE_COLUMNS), "nodes "))
        for number, row in _csv_rows(nodes_data, "nodes", NODE_COLUMNS[:3])
    ]
    edges = [
        (number, _validated(ImportedEdge, number, _csv_item(row, EDGE_COLUMNS), "edges "))
        for number, row in _csv_rows(edges_data, "edges", EDGE_COLUMNS)
    ]
    return _checked(nodes, edges, node_file="nodes ", edge_file="edges ")


def _checked(
    nodes: list[tuple[int, ImportedNode]],
    edges: list[tuple[int, ImportedEdge]],
    node_file: str = "",
    edge_file: str = "",
) -> ImportedGraph:
    """Ids unique, every edge between known nodes, one edge per (source, relation, target)."""
    first_line: dict[str, int] = {}
    for number, node in nodes:
        if node.id in first_line:
            raise GraphImportError(
                f"{node_file}line {number}: id: {node.id!r} is already the id of line {first_line[node.id]}"
            )
        first_line[node.id] = number
    seen: dict[tuple[str, str, str], int] = {}
    for number, edge in edges:
        for field in ("source", "target"):
            node_id = getattr(edge, field)
            if node_id not in first_line:
                raise GraphImportError(f"{edge_file}line {number}: {field}: no node has id {node_id!r}")
        key = (edge.source, edge.relation, edge.target)
        if key in seen:
            raise GraphImportError(f"{edge_file}line {number}: the same edge as line {seen[key]}")
        seen[key] = number
    return ImportedGraph(tuple(n for _, n in nodes), tuple(e for _, e in edges))
