"""The generation model behind the query techniques: any OpenAI-compatible `/chat/completions`.

httpx does the HTTP work: its timeouts bound each request and its transport retries failed
connections (never an answer). Usable answers are kept in an LRU by (model, prompt, query).
The API key goes into the client's headers only: no log line, span, error or repr carries it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

import httpx
from cachetools import LRUCache

from tribrid import telemetry
from tribrid.config import GenerationConfig
from tribrid.model_endpoint import endpoint_client

T = TypeVar("T")


class GenerationError(Exception):
    """The model failed, or its answer was empty or unusable."""


def _content(response: httpx.Response) -> str:
    """The first choice's message text of a chat completion."""
    if response.status_code >= 400:
        raise GenerationError(f"the model answered HTTP {response.status_code}")
    try:
        body: Any = response.json()
        content = body["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise GenerationError("malformed answer: not an OpenAI chat completion") from None
    if not isinstance(content, str) or not content.strip():
        raise GenerationError("empty answer")
    return content


class GenerationClient:
    def __init__(self, cfg: GenerationConfig) -> None:
        if not cfg.configured:
            raise ValueError("generation.base_url is not set")
        self.model = cfg.model
        self._cfg = cfg
        self._client = endpoint_client(cfg)
        self._cache: LRUCache[tuple[str, str, str], object] | None = (
            LRUCache(maxsize=cfg.cache_size) if cfg.cache_size else None
        )

    def __repr__(self) -> str:
        return f"GenerationClient(base_url={self._cfg.base_url!r}, model={self.model!r})"

    async def generate(self, prompt: str, query: str, parse: Callable[[str], T]) -> tuple[T, bool]:
        """`parse` of the model's answer to `prompt` (which embeds `query`), and whether it came
        from the cache. Raises GenerationError; `parse` raises it for an unusable answer, which
        is then not cached."""
        key = (self.model, prompt, query)
        if self._cache is not None and key in self._cache:
            return self._cache[key], True  # type: ignore[return-value]  # stored by this parse
        with telemetry.span("generation", model=self.model) as gen_span:
            started = time.perf_counter()
            try:
                response = await self._client.post(
                    "chat/completions",
                    json={
                        "model": self.model,
                        "messages": [{"role": "user", "content": prompt}],
                        "max_tokens": self._cfg.max_tokens,
                        "temperature": self._cfg.temperature,
                    },
                )
                value = parse(_content(response))
            except httpx.HTTPError as err:
                gen_span.set_attribute("tribrid.status", "error")
                raise GenerationError(f"{type(err).__name__}: {err}") from None
            except GenerationError as err:
                gen_span.set_attribute("tribrid.status", "error")
                gen_span.set_attribute("tribrid.error", str(err))
                raise
            finally:
                gen_span.set_attribute("tribrid.latency_ms", (time.perf_counter() - started) * 1000)
            gen_span.set_attribute("tribrid.status", "ok")
        if self._cache is not None:
            self._cache[key] = value
        return value, False

    async def close(self) -> None:
        await self._client.aclose()
