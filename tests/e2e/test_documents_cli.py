"""Documents through the CLI as a user runs it (a subprocess) and over the HTTP bridge: the search
answer shows each match's document title, breadcrumb, pages and metadata."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from tests.e2e.test_cli import cli
from tests.integration.test_bridge import _bridge
from tests.stack import Stack, index_corpus
from tests.unit.test_documents import corpus
from tribrid.v1 import indexer_pb2, indexer_pb2_grpc

__all__ = ["corpus"]  # the fixture (a copy of the document fixtures with a PDF and a DOCX), used here


async def test_cli_and_http_search_show_document_fields(stack: Stack, corpus: Path) -> None:
    async with stack.channel("indexer") as channel:
        await indexer_pb2_grpc.IndexerStub(channel).DeleteCorpus(
            indexer_pb2.DeleteCorpusRequest(corpus_id="docs-cli")
        )
    done = await index_corpus(stack, "docs-cli", corpus)
    assert done.done and done.files_changed == 5
    code, out, err = await cli(
        stack, "search", "nodes drained one at a time during upgrades", "--corpus", "docs-cli", "--json"
    )
    assert code == 0, err
    top = json.loads(out)["matches"][0]
    assert (top["file_path"], top["document_title"], top["section"], top["page_start"], top["page_end"]) == (
        "ops.pdf",
        "VxRail Operations",
        "VxRail Operations",
        1,
        3,
    )
    assert top["document_metadata"]["author"] == "Ops Team"
    code, out, err = await cli(
        stack, "search", "nodes drained one at a time during upgrades", "--corpus", "docs-cli", "--top-k", "3"
    )
    assert code == 0, err
    assert "VxRail Operations pp.1-3" in out and "symbol / section" in out

    bridge = await _bridge(stack)
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{bridge.port}", timeout=60) as http:
            body = {"corpusId": "docs-cli", "query": "nodes drained one at a time during upgrades", "topK": 3}
            reply = await http.post("/v1/search", json=body)
    finally:
        await bridge.stop(0)
    assert reply.status_code == 200, reply.text
    first = reply.json()["matches"][0]
    assert first["documentMetadata"]["keywords"] == "backup, restore"
    assert (first["documentTitle"], first["section"], first["pageStart"], first["pageEnd"]) == (
        "VxRail Operations",
        "VxRail Operations",
        1,
        3,
    )
