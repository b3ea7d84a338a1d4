"""Query and passage prefixes (embedding.query_prefix / passage_prefix), as multilingual e5
models need: checked with the shipped local model and against a real local HTTP server speaking
the OpenAI embeddings API (a stand-in for a hosted multilingual model)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from tribrid.config import EmbeddingConfig
from tribrid.embedding import OpenAICompatibleEmbedder, QueryEmbeddingCache, get_embedder

DIM = 8


class _Embeddings(BaseHTTPRequestHandler):
    received: list[str] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        _Embeddings.received.extend(body["input"])
        # a deterministic vector per text: its bytes folded into DIM buckets
        data = []
        for i, text in enumerate(body["input"]):
            vector = [0.0] * DIM
            for j, byte in enumerate(text.encode()):
                vector[j % DIM] += byte
            data.append({"index": i, "embedding": vector})
        payload = json.dumps({"data": data, "model": body["model"]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def endpoint() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Embeddings)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Embeddings.received = []
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


async def test_prefixes_reach_the_endpoint(endpoint: str) -> None:
    cfg = EmbeddingConfig(
        provider="openai",
        openai_base_url=endpoint,
        openai_model="multilingual-e5-small",
        dim=DIM,
        query_prefix="query: ",
        passage_prefix="passage: ",
    )
    embedder = OpenAICompatibleEmbedder(cfg)
    cache = QueryEmbeddingCache(embedder, 4, prefix=cfg.query_prefix)
    first = await cache.embed_query("读取文件")
    again = await cache.embed_query("读取文件")
    assert _Embeddings.received == ["query: 读取文件"]  # cached by the query, embedded with its prefix
    assert np.array_equal(first, again)
    # the prefixes are part of the model's identity: a corpus embedded without them is another model
    assert embedder.name == "multilingual-e5-small (query prefix 'query: ', passage prefix 'passage: ')"
    assert OpenAICompatibleEmbedder(EmbeddingConfig(openai_model="m", dim=DIM)).name == "m"


async def test_query_prefix_with_the_configured_local_model() -> None:
    embedder = get_embedder(EmbeddingConfig())
    cache = QueryEmbeddingCache(embedder, 4, prefix="query: ")
    prefixed = await cache.embed_query("Zürich Altstadt")
    expected, bare = await embedder.embed(["query: Zürich Altstadt", "Zürich Altstadt"])
    assert np.allclose(prefixed, expected, atol=1e-5)
    assert not np.allclose(prefixed, bare, atol=1e-3)
