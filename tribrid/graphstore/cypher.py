"""All Cypher text used by the graph stores, and the one place that knows how the dialects differ.

Both FalkorDB (native protocol) and Neo4j 5 accept the shared queries below as they are. Values
always travel as query parameters; the only things formatted into query text are relationship
labels (from a fixed whitelist) because Cypher cannot parameterize them.

Nodes: (:Entity:<Type> {id, corpus_id, type, name, qualified_name, file_path, start_line,
end_line, chunk_id, name_lower, qname_lower, aliases, aliases_lower, aliases_text[, community]}).
Every node is an Entity, and also carries its type as a second label (chunk -> :Chunk,
organization -> :Organization), so the design's patterns read naturally:
`(:Document)-[:CONTAINS]->(:Chunk)-[:MENTIONS]->(:Person)`. `name_lower`/`qname_lower` are
lower-cased copies kept for indexed exact-name lookups; `aliases_text` joins the aliases for the
fulltext index; `community` is written by graphstore.communities (-1 = an entity without
relations). Relationships: one label per relationship type, upper-cased (calls -> CALLS); their
properties (`inferred`, `confidence`, `count`, `strength`, `similarity`) are stored only where set.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

# Type names reach these only after base.check_entity_types / check_relationship_types (plain
# identifiers): never format unchecked text into a query.


# Cached: a graph read in whole makes one per relation (146k at 30k chunks), and a few distinct
# strings shared by all of them take 16 MB less than one string each.
@functools.lru_cache(maxsize=4096)
def relationship_label(rel_type: str) -> str:
    """The database label of a relationship type (calls -> CALLS)."""
    return rel_type.upper()


@functools.lru_cache(maxsize=4096)
def relationship_type(label: str) -> str:
    """The relationship type of a database label (CALLS -> calls)."""
    return label.lower()


def node_label(entity_type: str) -> str:
    """The second label of a node of this type (chunk -> Chunk, work_of_art -> WorkOfArt)."""
    return "".join(part.capitalize() for part in entity_type.split("_"))


# find_seeds scores: how a seed matched a query term
EXACT_SCORE = 1.0  # name or qualified name equals the term (case-insensitive)
PREFIX_SCORE = 0.7  # name starts with the term
FUZZY_SCORE = 0.4  # any other fulltext hit: a word of the qualified name starts with the term, or a typo

# An entity without its unresolved references: what search reads for its many seeds and hits.
# (Up to 64 names per entity would be most of each reply, parsed for nothing.)
ENTITY_FIELDS = (
    "e.id AS id, e.corpus_id AS corpus_id, e.type AS type, e.name AS name, "
    "e.qualified_name AS qualified_name, e.file_path AS file_path, "
    "e.start_line AS start_line, e.end_line AS end_line, e.chunk_id AS chunk_id, e.aliases AS aliases, "
    "e.imported AS imported"
)
ENTITY_COLUMNS = f"{ENTITY_FIELDS}, e.unresolved AS unresolved, e.properties AS properties"


def upsert_entities(entity_type: str) -> str:
    """MERGE entities of one type by id: every property from the row, and the type's label."""
    return f"""
UNWIND $rows AS row
MERGE (e:Entity {{corpus_id: $corpus_id, id: row.id}})
SET e += row, e:{node_label(entity_type)}
RETURN count(*) AS written
"""


# Deletes are batched so that a huge corpus never becomes one huge transaction (Neo4j).
DELETE_FILE_ENTITIES = """
MATCH (e:Entity {corpus_id: $corpus_id})
WHERE e.file_path IN $file_paths
WITH e LIMIT $batch
DETACH DELETE e
RETURN count(*) AS deleted
"""

DELETE_ENTITIES = """
UNWIND $ids AS entity_id
MATCH (e:Entity {corpus_id: $corpus_id, id: entity_id})
DETACH DELETE e
RETURN count(*) AS deleted
"""

DELETE_CORPUS_ENTITIES = """
MATCH (e:Entity {corpus_id: $corpus_id})
WITH e LIMIT $batch
DETACH DELETE e
RETURN count(*) AS deleted
"""

# Indexed exact lookups ($terms arrive lower-cased); one query per property so each uses its index.
FIND_EXACT_BY_NAME = f"""
UNWIND $terms AS term
MATCH (e:Entity {{corpus_id: $corpus_id, name_lower: term}})
WHERE e.type IN $entity_types
RETURN {ENTITY_FIELDS}
"""

FIND_EXACT_BY_QNAME = f"""
UNWIND $terms AS term
MATCH (e:Entity {{corpus_id: $corpus_id, qname_lower: term}})
WHERE e.type IN $entity_types
RETURN {ENTITY_FIELDS}
"""


def find_exact_by_alias(entity_type: str) -> str:
    """Entities of one (named-entity) type with an alias equal to a lower-cased term: a scan of
    that type's nodes by its label (few next to a corpus's chunks and code)."""
    return f"""
MATCH (e:{node_label(entity_type)})
WHERE e.corpus_id = $corpus_id AND any(alias IN e.aliases_lower WHERE alias IN $terms)
RETURN {ENTITY_FIELDS}
"""


_GET_ENTITIES = """
UNWIND $ids AS entity_id
MATCH (e:Entity {corpus_id: $corpus_id, id: entity_id})
RETURN """
GET_ENTITIES = _GET_ENTITIES + ENTITY_COLUMNS
GET_ENTITY_FIELDS = _GET_ENTITIES + ENTITY_FIELDS

COUNT_ENTITIES = """
MATCH (e:Entity {corpus_id: $corpus_id})
RETURN e.type AS type, count(*) AS n
"""

COUNT_RELATIONSHIPS = """
MATCH (:Entity {corpus_id: $corpus_id})-[r]->(:Entity {corpus_id: $corpus_id})
RETURN type(r) AS type, count(*) AS n
"""


ALL_RELATIONS = """
MATCH (a:Entity {corpus_id: $corpus_id})-[r]->(b:Entity {corpus_id: $corpus_id})
RETURN a.id AS source, type(r) AS label, b.id AS target, properties(r) AS props
"""

# Only inferred edges (calls, inherits) carry `inferred` and `confidence`: proven edges stay
# property-free.
INFERRED_EDGES = """
UNWIND $pairs AS pair
MATCH (a:Entity {corpus_id: $corpus_id, id: pair[0]})
WITH a, pair
MATCH (a)-[r:CALLS|INHERITS]->(b:Entity {corpus_id: $corpus_id, id: pair[1]})
WHERE r.inferred = true
RETURN a.id AS source, b.id AS target, max(r.confidence) AS confidence
"""

# After a native whole-graph copy, nodes still carry the source key.
RELABEL_CORPUS = """
MATCH (e:Entity)
SET e.corpus_id = $corpus_id
RETURN count(*) AS relabelled
"""

ENTITY_IDS = """
MATCH (e:Entity {corpus_id: $corpus_id})
WHERE e.id > $after
RETURN e.id AS id
ORDER BY id
LIMIT $batch
"""

UNRESOLVED_REFS = """
MATCH (e:Entity {corpus_id: $corpus_id})
WHERE e.id > $after AND size(coalesce(e.unresolved, [])) > 0
RETURN e.id AS id, e.unresolved AS unresolved
ORDER BY id
LIMIT $batch
"""

ENTITIES_IN_FILES = f"""
UNWIND $file_paths AS path
MATCH (e:Entity {{corpus_id: $corpus_id, file_path: path}})
RETURN {ENTITY_COLUMNS}
"""

# Entities of no file (named and imported entities). Not `file_path: ''`: FalkorDB's index on
# file_path never matches the empty string (4.16), so that lookup found none and the generation
# writer kept every named entity a re-index had dropped.
FREE_ENTITIES = f"""
MATCH (e:Entity {{corpus_id: $corpus_id}})
WHERE size(e.file_path) = 0
RETURN {ENTITY_COLUMNS}
"""

ENTITIES_BY_CHUNKS = f"""
UNWIND $chunk_ids AS cid
MATCH (e:Entity {{corpus_id: $corpus_id, chunk_id: cid}})
RETURN {ENTITY_COLUMNS}
"""

FIND_BY_QNAME = f"""
MATCH (e:Entity {{corpus_id: $corpus_id, qname_lower: $qname_lower}})
WHERE e.qualified_name = $qualified_name
RETURN {ENTITY_COLUMNS}
ORDER BY id
"""

FIND_BY_NAME = f"""
MATCH (e:Entity {{corpus_id: $corpus_id, name_lower: $name_lower}})
RETURN {ENTITY_COLUMNS}
ORDER BY id
"""

# Only named entities have aliases, and a corpus has few of them next to its chunks and code:
# a scan of the corpus's nodes, filtered by the type(s) that can have aliases.
FIND_BY_ALIAS = f"""
MATCH (e:Entity {{corpus_id: $corpus_id}})
WHERE size(e.aliases_lower) > 0 AND $name_lower IN e.aliases_lower
RETURN {ENTITY_COLUMNS}
ORDER BY id
"""

MOST_MENTIONED = """
MATCH (c:Entity {corpus_id: $corpus_id})-[:MENTIONS]->(e:Entity)
WHERE e.corpus_id = $corpus_id
RETURN e.id AS id, count(c) AS chunks
ORDER BY chunks DESC, id ASC
LIMIT $limit
"""

SET_COMMUNITIES = """
UNWIND $rows AS row
MATCH (e:Entity {corpus_id: $corpus_id, id: row.id})
SET e.community = row.community
RETURN count(*) AS written
"""

COMMUNITY_OF = """
UNWIND $ids AS entity_id
MATCH (e:Entity {corpus_id: $corpus_id, id: entity_id})
RETURN e.id AS id, e.community AS community
"""

COUNT_COMMUNITIES = """
MATCH (e:Entity {corpus_id: $corpus_id})
WHERE e.community >= 0
RETURN count(DISTINCT e.community) AS n
"""

ALL_ENTITY_ROWS = """
MATCH (e:Entity {corpus_id: $corpus_id})
WHERE e.id > $after
RETURN properties(e) AS row, e.id AS id
ORDER BY id
LIMIT $batch
"""


def _labels(rel_types: list[str]) -> str:
    return "|".join(relationship_label(rel_type) for rel_type in rel_types)


def upsert_relations(rel_type: str) -> str:
    """MERGE relations of one type; rows are {source, target, props} (props: only those set)."""
    return f"""
UNWIND $rows AS row
MATCH (a:Entity {{corpus_id: $corpus_id, id: row.source}})
MATCH (b:Entity {{corpus_id: $corpus_id, id: row.target}})
MERGE (a)-[r:{_labels([rel_type])}]->(b)
SET r += row.props
RETURN count(*) AS written
"""


def delete_relations(rel_type: str) -> str:
    """Delete relations of one type; rows are {source, target}."""
    return f"""
UNWIND $rows AS row
MATCH (a:Entity {{corpus_id: $corpus_id, id: row.source}})-[r:{_labels([rel_type])}]->(b:Entity)
WHERE b.corpus_id = $corpus_id AND b.id = row.target
DELETE r
RETURN count(*) AS deleted
"""


_PATTERNS = {"both": "-[r:{labels}]-", "out": "-[r:{labels}]->", "in": "<-[r:{labels}]-"}


def neighbours(rel_types: list[str], direction: str = "both", *, with_properties: bool = False) -> str:
    """One breadth-first step: every (frontier id, relation label, neighbour id).

    direction: "both" (ignore edge direction), "out" (a -> b) or "in" (a <- b). The per-node
    fan-out cap is applied by the caller (traversal.cap_fanout). The frontier node is
    matched first, on its own: in one MATCH, FalkorDB plans an "in" step as a label scan of
    every entity (1.1 s on a 15k-entity graph against 1 ms this way).
    """
    pattern = _PATTERNS[direction].format(labels=_labels(rel_types))  # KeyError: unknown direction
    props = ", properties(r) AS props" if with_properties else ""
    return f"""
UNWIND $ids AS source_id
MATCH (a:Entity {{corpus_id: $corpus_id, id: source_id}})
WITH a, source_id
MATCH (a){pattern}(b:Entity)
WHERE b.corpus_id = $corpus_id
RETURN source_id, type(r) AS label, b.id AS target_id{props}
"""


# --- operators' read-only queries (CypherQuery) ------------------------------------------------
# The databases' read-only modes are what keep such a query from writing (FalkorDB GRAPH.RO_QUERY,
# Neo4j READ access); this check runs first so that the refusal names the clause.

_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|//[^\n]*|/\*.*?\*/", re.DOTALL)
_BACKTICKED = re.compile(r"`([^`]*)`")
# A clause keyword: not a property (`n.set`), a parameter ($delete) or part of a longer name.
_WRITE_CLAUSE = re.compile(
    r"(?<![\w.$])(CREATE|MERGE|SET|DELETE|DETACH|REMOVE|DROP|FOREACH|LOAD\s+CSV|ALTER|GRANT|REVOKE|DENY)(?![\w])",
    re.IGNORECASE,
)
_CALL = re.compile(r"(?<![\w.$])CALL\s+([A-Za-z_][\w.]*)", re.IGNORECASE)


def write_clause(query: str, read_procedures: tuple[str, ...]) -> str | None:
    """Why `query` may write, or None: a write clause, or a procedure call outside
    `read_procedures` (names, or namespaces ending in "."). String literals and comments are
    skipped; the check is by keyword, so a variable named like a clause is refused too."""
    text = _BACKTICKED.sub(r"\1", _QUOTED.sub(" ", query))
    clause = _WRITE_CLAUSE.search(text)
    if clause:
        return f"the {' '.join(clause.group(1).upper().split())} clause writes"
    for call in _CALL.finditer(text):
        procedure = call.group(1)
        if not any(
            procedure == allowed or (allowed.endswith(".") and procedure.startswith(allowed))
            for allowed in read_procedures
        ):
            return f"procedure {procedure} is not one of the read-only procedures {list(read_procedures)}"
    return None


# Lucene (Neo4j) and RediSearch (FalkorDB) query-syntax characters; user text escapes them all.
_LUCENE_SPECIAL = re.compile(r'([+\-&|!(){}\[\]^"~*?:\\/\s])')
_REDISEARCH_SPECIAL = re.compile(r"([^A-Za-z0-9_\u0080-\U0010ffff])")


@dataclass(frozen=True, slots=True)
class Dialect:
    """What differs between the databases' Cypher: schema DDL and the fulltext index query.

    Traversal is a hop-by-hop breadth-first search built from the shared `neighbours` query
    (exact minimum hops and supporting-path counts without enumerating every path, the same
    for both databases), so neither dialect's shortestPath form is needed. Seed lookup uses the
    fulltext index (different procedure names and query syntax) plus indexed exact lookups.
    """

    name: str
    # Run in order by ensure_schema.
    schema_statements: tuple[str, ...]
    # Substring of the error raised when an index already exists; None when the DDL is idempotent.
    existing_index_error: str | None = None
    # The fulltext CALL for the query text in the variable `q`; must YIELD `node` and `score`.
    fulltext_call: str = ""
    # "redisearch" (FalkorDB) or "lucene" (Neo4j): how prefix/fuzzy queries are written.
    fulltext_syntax: str = "lucene"
    # Procedures an operator's read-only query may CALL (names, or namespaces ending in ".").
    read_procedures: tuple[str, ...] = ()

    def is_existing_index_error(self, exc: BaseException) -> bool:
        return self.existing_index_error is not None and self.existing_index_error in str(exc)

    def escape(self, text: str) -> str:
        """User text as a literal term of this dialect's fulltext syntax."""
        pattern = _REDISEARCH_SPECIAL if self.fulltext_syntax == "redisearch" else _LUCENE_SPECIAL
        return pattern.sub(r"\\\1", text)

    def fulltext_text(self, term: str, *, fuzzy: bool) -> str:
        """A fulltext query: words starting with the term, or (fuzzy) one edit away from it."""
        word = self.escape(term)
        if self.fulltext_syntax == "redisearch":
            return f"{word}* | %{word}%" if fuzzy else f"{word}*"
        return f"{word}* OR {word}~1" if fuzzy else f"{word}*"

    def fulltext_query(self, columns: str) -> str:
        """Every query text in $queries at once: each text's first $limit hits of $entity_types
        in the corpus (by score, then id), the `columns` of each hit `e` once."""
        return f"""
UNWIND $queries AS q
CALL {{
  WITH q
  {self.fulltext_call} YIELD node, score
  WITH node AS e, score
  WHERE e.corpus_id = $corpus_id AND e.type IN $entity_types
  RETURN e, score
  ORDER BY score DESC, e.id ASC
  LIMIT $limit
}}
RETURN DISTINCT {columns}
"""


# FalkorDB: one graph per corpus, so corpus_id has a single value per graph and an index on it
# is useless (it only tempts the planner). Indexes are per attribute (a composite CREATE INDEX
# indexes each attribute and fails whole if one exists), there is no IF NOT EXISTS, and
# re-creating one fails with "Attribute 'x' is already indexed". The fulltext index (RediSearch)
# splits on punctuation but not on '_': "app.parse_args" is the words "app" and "parse_args".
FALKORDB = Dialect(
    name="falkordb",
    schema_statements=(
        "CREATE INDEX FOR (e:Entity) ON (e.id)",
        "CREATE INDEX FOR (e:Entity) ON (e.name)",
        "CREATE INDEX FOR (e:Entity) ON (e.file_path)",
        "CREATE FULLTEXT INDEX FOR (e:Entity) ON (e.name, e.qualified_name, e.aliases_text)",
        "CREATE INDEX FOR (e:Entity) ON (e.name_lower)",
        "CREATE INDEX FOR (e:Entity) ON (e.qname_lower)",
        "CREATE INDEX FOR (e:Entity) ON (e.chunk_id)",
    ),
    existing_index_error="already indexed",
    fulltext_call="CALL db.idx.fulltext.queryNodes('Entity', q)",
    fulltext_syntax="redisearch",
    read_procedures=(
        "db.labels",
        "db.relationshipTypes",
        "db.propertyKeys",
        "db.indexes",
        "db.idx.fulltext.queryNodes",
        "db.idx.vector.queryNodes",
        "algo.",
    ),
)

# Neo4j 5: all corpora share one database, so every lookup key leads with corpus_id. The
# uniqueness constraint makes MERGE on (corpus_id, id) safe under concurrency and brings its
# own index. The fulltext index spans corpora: its hits are filtered by corpus afterwards.
NEO4J = Dialect(
    name="neo4j",
    schema_statements=(
        "CREATE CONSTRAINT entity_key IF NOT EXISTS FOR (e:Entity) REQUIRE (e.corpus_id, e.id) IS UNIQUE",
        "CREATE INDEX entity_corpus IF NOT EXISTS FOR (e:Entity) ON (e.corpus_id)",
        "CREATE INDEX entity_name IF NOT EXISTS FOR (e:Entity) ON (e.corpus_id, e.name)",
        "CREATE INDEX entity_file IF NOT EXISTS FOR (e:Entity) ON (e.corpus_id, e.file_path)",
        "CREATE FULLTEXT INDEX entity_names IF NOT EXISTS FOR (e:Entity) "
        "ON EACH [e.name, e.qualified_name, e.aliases_text]",
        "CREATE INDEX entity_name_lower IF NOT EXISTS FOR (e:Entity) ON (e.corpus_id, e.name_lower)",
        "CREATE INDEX entity_qname_lower IF NOT EXISTS FOR (e:Entity) ON (e.corpus_id, e.qname_lower)",
        "CREATE INDEX entity_chunk IF NOT EXISTS FOR (e:Entity) ON (e.corpus_id, e.chunk_id)",
    ),
    fulltext_call="CALL db.index.fulltext.queryNodes('entity_names', q)",
    fulltext_syntax="lucene",
    read_procedures=(
        "db.labels",
        "db.relationshipTypes",
        "db.propertyKeys",
        "db.schema.nodeTypeProperties",
        "db.schema.relTypeProperties",
        "db.schema.visualization",
        "db.index.fulltext.queryNodes",
        "db.index.fulltext.queryRelationships",
        "db.index.vector.queryNodes",
    ),
)
