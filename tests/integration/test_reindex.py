"""Re-indexing: incremental, consistent across both stores, and safe to interrupt (a run killed in
its worker process: tests/e2e/test_reindex_killed.py)."""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import grpc
import numpy as np
import pytest

from services.indexer.communities import detect_communities
from services.indexer.pg_writer import delete_corpus, run_lock
from services.indexer.pipeline import INDEX_FORMAT, IndexPipeline
from tests.stack import FIXTURE_REPO, Stack, index_corpus
from tribrid.embedding import Embedder, Vectors
from tribrid.graphstore.base import graph_key
from tribrid.models import Entity, Relation
from tribrid.resources import Resources
from tribrid.stores.postgres import committed, corpus_generation, corpus_vector_index
from tribrid.text import stem
from tribrid.v1 import (
    common_pb2,
    graph_pb2_grpc,
    indexer_pb2,
    indexer_pb2_grpc,
)

NEW_MODULE = '''"""Orders."""

from shop.pricing import apply_tax


def order_total(amount: float) -> float:
    return apply_tax(amount) + 1.0
'''


class RecordingEmbedder:
    """The real model, plus a record of every text it was asked to embed."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.texts: list[str] = []

    async def embed(self, texts: Sequence[str]) -> Vectors:
        self.texts.extend(texts)
        return await self.inner.embed(texts)


@dataclass(frozen=True)
class Snapshot:
    generation: int
    chunks: dict[str, tuple[str, int, int, str]]  # chunk id -> (file, start, end, content)
    embeddings: dict[str, np.ndarray]
    signature_embeddings: dict[str, np.ndarray]  # of the definitions' chunks
    entities: dict[str, tuple[str, str, str]]  # entity id -> (type, qualified name, file)
    relations: set[tuple[str, str, str]]  # (source qualified name, type, target qualified name)
    counts: dict[str, int]  # the graph store's totals per entity and relationship type


async def snapshot(stack: Stack, corpus_id: str) -> Snapshot:
    pool = await stack.resources.pool()
    generation = await corpus_generation(pool, corpus_id)
    assert generation is not None
    # What searches see: the rows of the committed generation.
    rows = await pool.fetch(
        "SELECT chunk_id, file_path, start_line, end_line, content, embedding, signature_embedding"
        f" FROM chunks c WHERE corpus_id = $1 AND {committed('c')}",
        corpus_id,
    )
    assert len({r["chunk_id"] for r in rows}) == len(rows), "a chunk id is visible twice"
    store = stack.resources.graph()
    key = graph_key(corpus_id, generation)
    relations = await store.all_relations(key)
    ids = sorted({r.source_id for r in relations} | {r.target_id for r in relations})
    entities: list[Entity] = await store.get_entities(key, ids)
    everything = await entity_table(stack, key)
    names = {e.entity_id: e.qualified_name for e in entities}
    return Snapshot(
        generation=generation,
        chunks={r["chunk_id"]: (r["file_path"], r["start_line"], r["end_line"], r["content"]) for r in rows},
        embeddings={r["chunk_id"]: r["embedding"].to_numpy() for r in rows},
        signature_embeddings={
            r["chunk_id"]: r["signature_embedding"].to_numpy()
            for r in rows
            if r["signature_embedding"] is not None
        },
        entities=everything,
        relations={(names[r.source_id], r.type, names[r.target_id]) for r in relations},
        counts=await store.counts(key),
    )


async def entity_table(stack: Stack, key: str) -> dict[str, tuple[str, str, str]]:
    """The linked entities of a graph generation (every definition here is contained in a module)."""
    store = stack.resources.graph()
    relations: list[Relation] = await store.all_relations(key)
    ids = {r.source_id for r in relations} | {r.target_id for r in relations}
    entities = await store.get_entities(key, sorted(ids))
    return {e.entity_id: (e.type, e.qualified_name, e.file_path) for e in entities}


async def all_entities(stack: Stack, key: str) -> set[tuple[str, str, str]]:
    """(type, qualified name, file) of every entity of a graph generation."""
    store = stack.resources.graph()
    entities = await store.get_entities(key, await store.entity_ids(key))
    return {(e.type, e.qualified_name, e.file_path) for e in entities}


async def index(stack: Stack, embedder: Embedder, corpus_id: str, root: Path) -> indexer_pb2.IndexProgress:
    pipeline = IndexPipeline(stack.cfg, await stack.resources.pool(), stack.resources.graph(), embedder)
    last = indexer_pb2.IndexProgress()
    async for event in pipeline.run(corpus_id, str(root)):
        last = event
    assert last.done
    return last


def edit_tree(root: Path) -> None:
    """Change one file, delete one, add one."""
    pricing = root / "shop" / "pricing.py"
    pricing.write_text(pricing.read_text().replace("TAX_RATE = 0.2", "TAX_RATE = 0.25"))
    (root / "shop" / "inventory.py").unlink()
    (root / "shop" / "orders.py").write_text(NEW_MODULE)


async def test_incremental_reindex_matches_a_fresh_index(stack: Stack, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE_REPO, root)
    assert "TAX_RATE = 0.2\n" in (root / "shop" / "pricing.py").read_text()
    embedder = RecordingEmbedder(stack.resources.embedder())
    await index(stack, embedder, "reindex-inc", root)
    before = await snapshot(stack, "reindex-inc")
    old_entities = await all_entities(stack, graph_key("reindex-inc", before.generation))
    old_stats = await exact_term_stats(stack, "reindex-inc")

    # Unchanged: nothing embedded, nothing written, same generation.
    embedder.texts.clear()
    unchanged = await index(stack, embedder, "reindex-inc", root)
    assert embedder.texts == []
    assert (unchanged.message, unchanged.generation, unchanged.files_changed) == (
        "unchanged",
        before.generation,
        0,
    )
    assert unchanged.entities == before.counts["entities"] > len(before.entities) > 0

    edit_tree(root)
    embedder.texts.clear()
    progress = await index(stack, embedder, "reindex-inc", root)
    after = await snapshot(stack, "reindex-inc")
    assert (progress.files_changed, progress.files_deleted) == (2, 1)
    assert after.generation == before.generation + 1

    # Only new embedding texts went through the model: the new file's chunks and the changed
    # chunk of the changed file. Its other chunks kept their stored vectors.
    touched = {"shop/pricing.py", "shop/orders.py"}
    added = {cid for cid, (path, *_rest) in after.chunks.items() if path == "shop/orders.py"}
    pricing = {cid for cid, (path, *_rest) in after.chunks.items() if path == "shop/pricing.py"}
    edited = {cid for cid in pricing if after.chunks[cid] != before.chunks.get(cid)}
    assert len(edited) == 1 and len(pricing) > 1 and added
    # each new chunk's text, and its signature when it is a definition's
    new_signatures = (added | edited) & after.signature_embeddings.keys()
    assert new_signatures and len(embedder.texts) == len(added) + 1 + len(new_signatures)
    assert progress.chunks_reused == len(pricing) - 1
    assert all(np.array_equal(before.embeddings[cid], after.embeddings[cid]) for cid in pricing - edited)
    reused_signatures = (pricing - edited) & before.signature_embeddings.keys()
    assert reused_signatures and reused_signatures <= after.signature_embeddings.keys()
    assert all(
        np.array_equal(before.signature_embeddings[cid], after.signature_embeddings[cid])
        for cid in reused_signatures
    )
    # Chunks of untouched files kept their rows and their stored embeddings.
    kept = {
        cid for cid, (path, *_rest) in before.chunks.items() if path not in touched | {"shop/inventory.py"}
    }
    assert kept and kept <= after.chunks.keys()
    assert all(np.array_equal(before.embeddings[cid], after.embeddings[cid]) for cid in kept)
    assert not any(path == "shop/inventory.py" for path, *_rest in after.chunks.values())

    # The graph moved with PostgreSQL: the deleted file's entities went, the new file's came,
    # and the cross-file call into the changed file survived its replacement.
    assert not any(file == "shop/inventory.py" for *_rest, file in after.entities.values())
    assert ("shop.orders.order_total", "calls", "shop.pricing.apply_tax") in after.relations
    assert ("shop.cart.Cart.total_price", "calls", "shop.pricing.compute_discount") in after.relations
    assert not any("Inventory" in source or "Inventory" in target for source, _t, target in after.relations)
    # Exactly these changes, nothing else: chunks of the deleted file and the changed module chunk
    # went, the new file's chunks and the changed chunk came; the same for entities and edges.
    old_chunks, new_chunks = set(before.chunks.values()), set(after.chunks.values())
    changed_old = {c for c in old_chunks if c[0] == "shop/pricing.py" and "TAX_RATE = 0.2" in c[3]}
    changed_new = {c for c in new_chunks if c[0] == "shop/pricing.py" and "TAX_RATE = 0.25" in c[3]}
    assert len(changed_old) == len(changed_new) == 1
    assert old_chunks - new_chunks == {c for c in old_chunks if c[0] == "shop/inventory.py"} | changed_old
    assert new_chunks - old_chunks == {c for c in new_chunks if c[0] == "shop/orders.py"} | changed_new
    new_entities = await all_entities(stack, graph_key("reindex-inc", after.generation))
    assert old_entities - new_entities == {e for e in old_entities if e[2] == "shop/inventory.py"} != set()
    assert new_entities - old_entities == {e for e in new_entities if e[2] == "shop/orders.py"} != set()
    assert before.relations - after.relations == {
        r for r in before.relations if "shop.inventory" in r[0] or "shop.inventory" in r[2]
    }
    assert after.relations - before.relations == {
        r for r in after.relations if "shop.orders" in r[0] or "shop.orders" in r[2]
    }
    # The previous generation's graph is gone.
    assert (await stack.resources.graph().counts(graph_key("reindex-inc", before.generation)))[
        "entities"
    ] == 0

    # Incremental equals from scratch, in both stores.
    await index(stack, RecordingEmbedder(stack.resources.embedder()), "reindex-fresh", root)
    fresh = await snapshot(stack, "reindex-fresh")
    assert sorted(after.chunks.values()) == sorted(fresh.chunks.values())
    assert sorted(after.entities.values()) == sorted(fresh.entities.values())
    assert after.relations == fresh.relations
    assert after.counts == fresh.counts
    new_stats = await exact_term_stats(stack, "reindex-inc")
    assert new_stats == await exact_term_stats(stack, "reindex-fresh") != old_stats
    warehouse, shelves = stem("warehouse"), stem("shelves")  # terms are stems
    assert old_stats[warehouse] - new_stats[warehouse] == 2  # the deleted file's two chunks with it
    assert shelves in old_stats and shelves not in new_stats  # a word only the deleted file had


async def exact_term_stats(stack: Stack, corpus_id: str) -> dict[str, int]:
    """The document frequencies BM25 reads (term_stats), checked against a count of the postings
    of the committed generation."""
    pool = await stack.resources.pool()
    kept = await pool.fetch("SELECT term, df FROM term_stats WHERE corpus_id = $1", corpus_id)
    counted = await pool.fetch(
        f"SELECT p.term, count(*) FROM postings p WHERE p.corpus_id = $1 AND {committed('p')}"
        " GROUP BY p.term",
        corpus_id,
    )
    stats = {r["term"]: r["df"] for r in kept}
    assert stats == {r["term"]: r["count"] for r in counted} != {}
    return stats


@pytest.fixture(autouse=True)
async def _clean_corpora(stack: Stack) -> None:
    from services.indexer.graph_writer import discard_uncommitted, drop_generation
    from services.indexer.pg_writer import delete_corpus

    pool = await stack.resources.pool()
    for corpus_id in (
        "reindex-inc",
        "reindex-fresh",
        "reindex-kill",
        "reindex-refs",
        "reindex-bad",
        "reindex-nocomm",
        "reindex-kept",
        "reindex-format",
        "reindex-hold",
        "reindex-busy",
        "reindex-life",
    ):
        generation = await corpus_generation(pool, corpus_id)
        await delete_corpus(pool, corpus_id)
        if generation is not None:
            await discard_uncommitted(stack.resources.graph(), corpus_id, generation)
            await drop_generation(stack.resources.graph(), corpus_id, generation)


async def test_unresolved_references_and_communities_follow_the_corpus(stack: Stack, tmp_path: Path) -> None:
    """A call into a file that goes away is kept as an unresolved reference on its (unchanged)
    caller, and cleared again when the callee comes back; communities are recomputed each run."""
    corpus_id = "reindex-refs"
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "main.py").write_text(
        "import json\n\nfrom pkg.util import helper\n\n\n"
        "def run(x: int) -> str:\n    return json.dumps(helper(x))\n"
    )
    util = "def helper(x: int) -> int:\n    return x + 1\n"
    (root / "pkg" / "util.py").write_text(util)
    embedder = stack.resources.embedder()
    store = stack.resources.graph()

    async def run_entity() -> tuple[tuple[str, ...], int]:
        pool = await stack.resources.pool()
        generation = await corpus_generation(pool, corpus_id)
        assert generation is not None
        key = graph_key(corpus_id, generation)
        (entity,) = await store.find_by_qualified_name(key, "pkg.main.run")
        return entity.unresolved, (await store.community_of(key, [entity.entity_id])).get(
            entity.entity_id, -1
        )

    first = await index(stack, embedder, corpus_id, root)
    assert first.unresolved_references == 1 and first.communities >= 1
    # computed from the run's own lists, they are what the stored graph gives
    key = graph_key(corpus_id, first.generation)
    gcfg = stack.cfg.graph
    stored_ids = sorted(await store.entity_ids(key))
    before_recompute = await store.community_of(key, stored_ids)
    again = await detect_communities(
        store, key, gcfg.community_algorithm, gcfg.community_seed, gcfg.community_resolution
    )
    assert again.communities == first.communities
    assert await store.community_of(key, stored_ids) == before_recompute
    assert (await run_entity())[0] == ("json.dumps",)
    assert (await run_entity())[1] >= 0
    # the graph leg answers for code outside the corpus through the references kept
    async with stack.channel("graph") as channel:
        stub = graph_pb2_grpc.GraphSearchStub(channel)
        for query in ("who calls json.dumps", "dumps_json", "json.dumps"):
            request = common_pb2.SearchRequest(corpus_id=corpus_id, query=query)
            matches = list((await stub.Search(request, timeout=30)).matches)
            if query == "dumps_json":  # names nothing, inside or outside the corpus
                assert matches == []
                continue
            assert [m.symbol for m in matches] == ["pkg.main.run"], query
            provenance = matches[0].explain[0].graph
            assert (provenance.seed_entity, provenance.seed_match, provenance.hops) == (
                "json.dumps",
                "unresolved",
                1,
            )

    (root / "pkg" / "util.py").unlink()  # main.py itself is unchanged
    gone = await index(stack, embedder, corpus_id, root)
    assert (gone.files_changed, gone.files_deleted) == (0, 1)
    assert (await run_entity())[0] == ("helper", "json.dumps")

    (root / "pkg" / "util.py").write_text(util)
    back = await index(stack, embedder, corpus_id, root)
    assert back.files_changed == 1
    assert (await run_entity())[0] == ("json.dumps",)
    assert back.communities == first.communities
    unchanged = await index(stack, embedder, corpus_id, root)
    assert (unchanged.message, unchanged.communities) == ("unchanged", first.communities)
    assert unchanged.unresolved_references == first.unresolved_references == 1


async def test_bad_files_are_skipped_and_counted_and_bad_requests_are_invalid(
    stack: Stack, tmp_path: Path
) -> None:
    """Through the indexer service: what cannot be indexed is skipped and counted, never fatal."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "good.py").write_text("def ok() -> int:\n    return 1\n")
    (root / "broken.py").write_text("def broken(:\n    return\n")  # a syntax error
    (root / "blob.dat.txt").write_bytes(b"\x00\x01\x02binary\x00" * 10)
    (root / "latin1.txt").write_bytes("caf\xe9 cr\xe8me".encode("latin-1") + b"\xff\xfe\xfa")
    (root / "huge.txt").write_text("x" * (stack.cfg.indexer.max_file_bytes + 1))
    (root / "loop").symlink_to(root)  # a symlink loop: never followed
    progress = await index_corpus(stack, "reindex-bad", root)
    assert progress.done
    assert dict(progress.skipped_by_reason) == {"binary": 1, "undecodable": 1, "too_large": 1, "symlink": 1}
    assert progress.files_skipped == 4 and progress.syntax_errors == 1
    pool = await stack.resources.pool()
    files = {
        r["file_path"]
        for r in await pool.fetch("SELECT file_path FROM chunks WHERE corpus_id = $1", "reindex-bad")
    }
    assert files == {"good.py", "broken.py"}  # the broken file is still searchable as text

    for corpus_id, path, message in (
        ("reindex-bad", str(tmp_path / "no-such-dir"), "does not exist"),
        ("reindex-bad", "relative/path", "absolute"),
        ("bad name!", str(root), "corpus_id"),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as excinfo:
            await index_corpus(stack, corpus_id, Path(path) if path.startswith("/") else path)
        assert excinfo.value.code() == grpc.StatusCode.INVALID_ARGUMENT, message
        assert message in (excinfo.value.details() or ""), excinfo.value.details()


async def test_include_communities_false_skips_the_step(stack: Stack, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE_REPO, root)
    cfg = stack.cfg.model_copy(
        update={"graph": stack.cfg.graph.model_copy(update={"include_communities": False})}
    )
    pipeline = IndexPipeline(
        cfg, await stack.resources.pool(), stack.resources.graph(), stack.resources.embedder()
    )
    events = [event async for event in pipeline.run("reindex-nocomm", str(root))]
    assert events[-1].done and events[-1].relationships > 0
    assert "communities" not in {e.phase for e in events} and events[-1].communities == 0
    key = graph_key("reindex-nocomm", events[-1].generation)
    assert await stack.resources.graph().community_count(key) == 0


async def test_a_run_gives_a_corpus_searched_by_hnsw_its_own_vector_index(
    stack: Stack, tmp_path: Path
) -> None:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE_REPO, root)
    pool = await stack.resources.pool()
    for corpus_id, exact_max in (("reindex-own-index", 5), ("reindex-no-own-index", 100_000)):
        await delete_corpus(pool, corpus_id)  # a first run, whatever an earlier session left
        cfg = stack.cfg.model_copy(
            update={"vector": stack.cfg.vector.model_copy(update={"exact_scan_max_rows": exact_max})}
        )
        pipeline = IndexPipeline(cfg, pool, stack.resources.graph(), stack.resources.embedder())
        events = [event async for event in pipeline.run(corpus_id, str(root))]
        assert events[-1].done and events[-1].chunks_total > 5
        assert "vector_index" in events[-1].stage_seconds
    names = {
        r["indexname"]
        for r in await pool.fetch("SELECT indexname FROM pg_indexes WHERE tablename = 'chunks'")
    }
    assert corpus_vector_index("reindex-own-index") in names
    assert corpus_vector_index("reindex-no-own-index") not in names


async def test_the_indexers_statements_wait_the_maintenance_timeout_and_searches_the_command_timeout(
    stack: Stack,
) -> None:
    """A 100k-chunk corpus's HNSW build ran past the 30 s command timeout and failed its run: the
    indexer's pool (`Resources.pool()`) waits `maintenance_timeout_s`, the legs' `command_timeout_s`."""
    postgres = stack.cfg.postgres.model_copy(update={"command_timeout_s": 0.5, "maintenance_timeout_s": 60.0})
    resources = Resources(stack.cfg.model_copy(update={"postgres": postgres}))
    try:
        assert await (await resources.pool()).fetchval("SELECT 1 FROM pg_sleep(1.0)") == 1
        with pytest.raises(TimeoutError):
            await (await resources.pool(search=True)).fetchval("SELECT pg_sleep(1.0)")
    finally:
        await resources.close()


async def test_a_corpus_of_an_older_index_format_is_redone_whole_reusing_equal_vectors(
    stack: Stack, tmp_path: Path
) -> None:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE_REPO, root)
    first = await index(stack, stack.resources.embedder(), "reindex-format", root)
    before = await snapshot(stack, "reindex-format")
    pool = await stack.resources.pool()
    # As if the corpus had been indexed by an older release, whose graph was made differently.
    await pool.execute(
        "UPDATE corpora SET index_format = $2 WHERE corpus_id = $1", "reindex-format", INDEX_FORMAT - 1
    )

    embedder = RecordingEmbedder(stack.resources.embedder())
    redone = await index(stack, embedder, "reindex-format", root)
    assert redone.files_changed == first.files_changed > 0 and redone.files_deleted == 0
    # every file is chunked and its graph made again; the texts are the same, so no vector is new
    assert embedder.texts == [] and redone.chunks_reused == len(before.chunks)
    assert redone.generation == first.generation + 1
    # Every row is the new generation's, and nothing else changed.
    generations = await pool.fetch(
        "SELECT DISTINCT generation FROM chunks WHERE corpus_id = $1", "reindex-format"
    )
    assert [r["generation"] for r in generations] == [redone.generation]
    after = await snapshot(stack, "reindex-format")
    assert after.chunks == before.chunks and after.relations == before.relations

    again = await index(stack, embedder, "reindex-format", root)
    assert again.message == "unchanged" and again.generation == redone.generation


async def test_a_lost_graph_is_rebuilt_by_the_next_run_without_embedding(
    stack: Stack, tmp_path: Path
) -> None:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE_REPO, root)
    first = await index(stack, stack.resources.embedder(), "reindex-lost", root)
    before = await snapshot(stack, "reindex-lost")
    # As if the graph store came back from a snapshot older than the corpus's last commit.
    await stack.resources.graph().delete_corpus(graph_key("reindex-lost", first.generation))

    embedder = RecordingEmbedder(stack.resources.embedder())
    rebuilt = await index(stack, embedder, "reindex-lost", root)
    assert rebuilt.message != "unchanged" and rebuilt.generation == first.generation + 1
    assert embedder.texts == []  # every vector reused
    after = await snapshot(stack, "reindex-lost")
    assert after.chunks == before.chunks
    assert after.relations == before.relations and after.counts == before.counts
    assert (await index(stack, embedder, "reindex-lost", root)).message == "unchanged"


async def test_rows_written_after_embedding_make_the_same_index(stack: Stack, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE_REPO, root)
    await index(stack, stack.resources.embedder(), "reindex-fresh", root)
    held = stack.cfg.model_copy(
        update={"indexer": stack.cfg.indexer.model_copy(update={"write_while_embedding": False})}
    )
    pipeline = IndexPipeline(
        held, await stack.resources.pool(), stack.resources.graph(), stack.resources.embedder()
    )
    events = [event async for event in pipeline.run("reindex-hold", str(root))]
    assert events[-1].done and events[-1].generation == 1
    streamed, after = await snapshot(stack, "reindex-fresh"), await snapshot(stack, "reindex-hold")
    assert sorted(streamed.chunks.values()) == sorted(after.chunks.values())
    assert streamed.relations == after.relations


async def test_kept_parses_spare_unchanged_files_and_change_nothing(
    stack: Stack, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One pipeline, as in the indexer service: a re-index parses only what changed, and the result
    is the same as a fresh index of the same tree."""
    import services.indexer.pipeline as pipeline_module

    parsed_paths: list[str] = []
    real_parse_file = pipeline_module._parse_file

    def counting_parse_file(corpus_id: str, source: object, cfg: object) -> object:
        parsed_paths.append(source.path)  # type: ignore[attr-defined]
        return real_parse_file(corpus_id, source, cfg)  # type: ignore[arg-type]

    monkeypatch.setattr(pipeline_module, "_parse_file", counting_parse_file)
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE_REPO, root)
    pipeline = IndexPipeline(
        stack.cfg, await stack.resources.pool(), stack.resources.graph(), stack.resources.embedder()
    )

    async def run(corpus_id: str, on: IndexPipeline) -> indexer_pb2.IndexProgress:
        events = [event async for event in on.run(corpus_id, str(root))]
        assert events[-1].done
        return events[-1]

    first = await run("reindex-kept", pipeline)
    assert len(parsed_paths) == first.files_seen - first.files_skipped > 3
    parsed_paths.clear()
    edit_tree(root)  # one file changed, one deleted, one added
    await run("reindex-kept", pipeline)
    assert sorted(parsed_paths) == ["shop/orders.py", "shop/pricing.py"]
    kept = await snapshot(stack, "reindex-kept")
    fresh_pipeline = IndexPipeline(
        stack.cfg, await stack.resources.pool(), stack.resources.graph(), stack.resources.embedder()
    )
    await run("reindex-fresh", fresh_pipeline)
    fresh = await snapshot(stack, "reindex-fresh")
    assert sorted(kept.chunks.values()) == sorted(fresh.chunks.values())
    assert kept.relations == fresh.relations and kept.counts == fresh.counts
    pipeline.forget("reindex-kept")
    parsed_paths.clear()
    (root / "shop" / "orders.py").write_text(NEW_MODULE + "\n# edited\n")
    await run("reindex-kept", pipeline)
    assert "shop/cart.py" in parsed_paths  # forgotten: everything is parsed again


async def test_deleting_a_corpus_while_it_is_indexed_is_refused(stack: Stack, tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE_REPO, root)
    first = await index(stack, stack.resources.embedder(), "reindex-busy", root)
    pool = await stack.resources.pool()
    request = indexer_pb2.DeleteCorpusRequest(corpus_id="reindex-busy")
    async with stack.channel("indexer") as channel:
        stub = indexer_pb2_grpc.IndexerStub(channel)
        async with run_lock(pool, "reindex-busy"):  # as a run in another process holds it
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await stub.DeleteCorpus(request, timeout=30)
            assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
            assert "being indexed" in (refused.value.details() or "")
            assert await corpus_generation(pool, "reindex-busy") == first.generation  # nothing lost
        reply = await stub.DeleteCorpus(request, timeout=30)
    assert reply.deleted and reply.chunks_deleted == first.chunks_total > 0
    assert await corpus_generation(pool, "reindex-busy") is None


async def test_a_corpus_indexed_again_after_a_delete_answers_from_its_new_graph(
    stack: Stack, tmp_path: Path
) -> None:
    """Generations count from 1 again after a delete: nothing cached per generation may leak."""

    async def callers_of_json_dumps() -> list[str]:
        async with stack.channel("graph") as channel:
            request = common_pb2.SearchRequest(corpus_id="reindex-life", query="who calls json.dumps")
            reply = await graph_pb2_grpc.GraphSearchStub(channel).Search(request, timeout=30)
        return [m.symbol for m in reply.matches]

    for life, name in enumerate(("first", "second"), start=1):
        root = tmp_path / f"life{life}"
        (root / "pkg").mkdir(parents=True)
        (root / "pkg" / f"{name}.py").write_text(
            f"import json\n\n\ndef {name}(x):\n    return json.dumps(x)\n"
        )
        progress = await index(stack, stack.resources.embedder(), "reindex-life", root)
        assert progress.generation == 1
        assert await callers_of_json_dumps() == [f"pkg.{name}.{name}"]
        async with stack.channel("indexer") as channel:
            request = indexer_pb2.DeleteCorpusRequest(corpus_id="reindex-life")
            assert (await indexer_pb2_grpc.IndexerStub(channel).DeleteCorpus(request, timeout=30)).deleted
