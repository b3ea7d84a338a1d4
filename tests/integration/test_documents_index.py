"""Documents against the real stores: a changed PDF re-indexed replaces only its chunks, and the demo
document collection answers the demo questions."""

from __future__ import annotations

from pathlib import Path

from services.indexer.pipeline import IndexPipeline
from tests.stack import Stack, index_corpus
from tests.unit.test_documents import PDF_PAGES, corpus, write_pdf
from tribrid.config import IndexerConfig
from tribrid.stores.postgres import committed
from tribrid.v1 import common_pb2, fusion_pb2_grpc, indexer_pb2, indexer_pb2_grpc
from tribridctl.cli import DEMO_DOCUMENT_QUERIES, _demo_documents_root

__all__ = ["corpus"]  # the fixture (a copy of the document fixtures with a PDF and a DOCX), used here


async def index_with(
    stack: Stack, cfg: IndexerConfig, corpus_id: str, root: Path
) -> indexer_pb2.IndexProgress:
    pipeline = IndexPipeline(
        stack.cfg.model_copy(update={"indexer": cfg}),
        await stack.resources.pool(),
        stack.resources.graph(),
        stack.resources.embedder(),
    )
    last = indexer_pb2.IndexProgress()
    async for event in pipeline.run(corpus_id, str(root)):
        last = event
    assert last.done
    return last


async def test_reindexing_a_changed_pdf_replaces_only_its_chunks(stack: Stack, corpus: Path) -> None:
    cfg = stack.cfg.indexer.model_copy(update={"doc_chunk_min_tokens": 1, "doc_chunk_max_tokens": 20})
    async with stack.channel("indexer") as channel:  # a corpus an earlier session left behind
        await indexer_pb2_grpc.IndexerStub(channel).DeleteCorpus(
            indexer_pb2.DeleteCorpusRequest(corpus_id="docs-reindex")
        )
    first = await index_with(stack, cfg, "docs-reindex", corpus)
    assert first.files_changed == 5 and first.files_skipped == 0
    pool = await stack.resources.pool()
    query = (
        "SELECT chunk_id, file_path, generation, start_line, end_line, content, document_title, section,"
        f" page_start, page_end FROM chunks c WHERE corpus_id = $1 AND {committed('c')}"
    )
    before = {r["chunk_id"]: dict(r) for r in await pool.fetch(query, "docs-reindex")}
    pdf_before = {k: v for k, v in before.items() if v["file_path"] == "ops.pdf"}
    assert sorted((v["page_start"], v["page_end"], v["document_title"]) for v in pdf_before.values()) == [
        (1, 1, "VxRail Operations"),
        (2, 2, "VxRail Operations"),
        (3, 3, "VxRail Operations"),
    ]

    changed = (
        PDF_PAGES[0],
        ("Restore procedures", "Restores need the volume key.", "Keys live in the vault."),
        PDF_PAGES[2],
    )
    (corpus / "ops.pdf").write_bytes(write_pdf(changed))
    second = await index_with(stack, cfg, "docs-reindex", corpus)
    assert (second.files_changed, second.files_deleted, second.generation) == (1, 0, first.generation + 1)
    after = {r["chunk_id"]: dict(r) for r in await pool.fetch(query, "docs-reindex")}

    others = {k: v for k, v in before.items() if v["file_path"] != "ops.pdf"}
    assert {k: v for k, v in after.items() if v["file_path"] != "ops.pdf"} == others  # untouched rows
    pdf_after = sorted(
        (v["page_start"], v["generation"], v["content"])
        for v in after.values()
        if v["file_path"] == "ops.pdf"
    )
    assert [(page, content) for page, _, content in pdf_after] == [
        (1, "\n".join(PDF_PAGES[0])),
        (2, "\n".join(changed[1])),
        (3, "\n".join(PDF_PAGES[2])),
    ]
    assert {generation for _, generation, _ in pdf_after} == {second.generation}

    # A fused search answers with the document's title, breadcrumb and page.
    request = common_pb2.SearchRequest(
        corpus_id="docs-reindex", query="where do the volume keys live", top_k=3
    )
    async with stack.channel("fusion") as channel:
        reply = await fusion_pb2_grpc.FusionStub(channel).Search(request, timeout=30)
    top = reply.matches[0]
    assert (top.file_path, top.document_title, top.section, top.page_start, top.page_end, top.kind) == (
        "ops.pdf",
        "VxRail Operations",
        "VxRail Operations",
        2,
        2,
        "section",
    )
    assert (top.start_line, top.end_line) == (5, 7)


async def test_the_demo_document_collection_answers_the_demo_questions(stack: Stack) -> None:
    root = _demo_documents_root()
    async with stack.channel("indexer") as channel:
        await indexer_pb2_grpc.IndexerStub(channel).DeleteCorpus(
            indexer_pb2.DeleteCorpusRequest(corpus_id="demo-docs")
        )
    done = await index_corpus(stack, "demo-docs", root)
    assert done.done and done.chunks_total > 20
    expected = ("breast_cancer.rst", "wine_data.rst", "twenty_newsgroups.rst")
    async with stack.channel("fusion") as channel:
        for query, file_path in zip(DEMO_DOCUMENT_QUERIES, expected, strict=True):
            request = common_pb2.SearchRequest(corpus_id="demo-docs", query=query, top_k=5)
            reply = await fusion_pb2_grpc.FusionStub(channel).Search(request, timeout=30)
            top = reply.matches[0]
            assert top.file_path == file_path and top.section.startswith(top.document_title)
