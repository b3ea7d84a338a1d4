"""Plain records passed between the indexer, the stores and the legs."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field


def stable_id(*parts: str) -> str:
    """A short, stable id derived from its parts (same parts, same id across re-indexes)."""
    return hashlib.sha1("\x1f".join(parts).encode("utf-8")).hexdigest()[:24]


@dataclass(frozen=True, slots=True)
class Chunk:
    chunk_id: str
    corpus_id: str
    file_path: str  # relative to the corpus root, "/"-separated
    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive
    language: str
    kind: str  # function | class | module | text | section (a document's)
    symbol: str  # qualified name of the definition, "" for plain text
    # The source lines start_line..end_line; for HTML, the text of the elements on those lines.
    content: str
    embed_text: str  # content plus a context header, what gets embedded and indexed lexically
    # Documents only: the document's title, the breadcrumb "Title > Section > Subsection", and the
    # pages the chunk's text is on (1-based; 0 where the source has no pages).
    document_title: str = ""
    section: str = ""
    page_start: int = 0
    page_end: int = 0
    # Documents only: the document's metadata other than its title (documents.document_metadata).
    document_metadata: dict[str, str] = field(default_factory=dict)
    # Definitions only: the qualified name and the declaration ("pkg.mod.f: def f(x, y)"), embedded
    # on its own as well: the vector leg's signature similarity (services/vector/search.py).
    signature: str = ""


@dataclass(frozen=True, slots=True)
class Entity:
    entity_id: str
    corpus_id: str
    # a code entity's kind (config.CODE_ENTITY_TYPES), "document", "chunk", or a named-entity
    # type of config.entities.types ("person", "organization", ...)
    type: str
    name: str
    qualified_name: str
    file_path: str
    start_line: int
    end_line: int
    chunk_id: str  # the chunk holding this entity's definition ("" if none)
    # Calls and bases this entity makes that resolve to nothing in the corpus, as written
    # ("np.mean", "requests.get", "Base"): kept, so "who calls requests.get" still has an answer.
    unresolved: tuple[str, ...] = ()
    # Named entities: the other surface forms met in the text ("Dell" for "Dell Technologies"),
    # sorted; looked up like the name.
    aliases: tuple[str, ...] = ()
    # An imported node's own properties, as canonical JSON ("" for none).
    properties: str = ""
    # A node of the graph the user imported (services/indexer/graph_import.py).
    imported: bool = False


PROPERTY_DECIMALS = 6


@dataclass(frozen=True, slots=True)
class Relation:
    source_id: str
    target_id: str
    type: str  # config.RELATIONSHIP_TYPES, or another name the config gives
    # A call inferred by method name (`x.m()` on a receiver of unknown type), not proven by the
    # bindings: confidence is 1 / the number of same-named methods it could be. Proven edges: 1.0.
    inferred: bool = False
    confidence: float = 1.0
    # Document edges' properties (0 where they don't apply, and then not stored):
    # MENTIONS: times the chunk mentions the entity; RELATED_TO: co-occurrence strength in [0, 1];
    # SIMILAR_TO: cosine similarity of the two chunks' embeddings.
    count: int = 0
    strength: float = 0.0
    similarity: float = 0.0
    # An imported edge's own properties ("role", "reason", ...), as canonical JSON ("" for none).
    properties: str = ""

    def __post_init__(self) -> None:
        # FalkorDB returns a double with 15 significant digits; 6 decimals survive the round trip
        # exactly, so the generation writer's diff of wanted and stored relations stays exact.
        for name in ("confidence", "strength", "similarity"):
            value = getattr(self, name)
            rounded = round(value, PROPERTY_DECIMALS)
            if rounded != value:  # else the value stays, often a shared 0.0 or 1.0: no new float
                object.__setattr__(self, name, rounded)
