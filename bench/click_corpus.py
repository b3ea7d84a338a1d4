"""The corpus the self-contained benchmarks index by default: the installed `click` package, and
questions about it (prose, an identifier and a structural one)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import grpc
from rich.console import Console

from evaluation import REPO_ROOT
from tribrid.v1 import indexer_pb2, indexer_pb2_grpc

QUERIES = [
    "parse command line options",
    "prompt the user for confirmation",
    "how are environment variables read for options",
    "progress bar rendering",
    "shell completion for bash",
    "wrap text to a width",
    "convert a value to an integer type",
    "open a file lazily",
    "BadParameter",
    "who calls echo",
    "format the help page",
    "invoke a sub command",
]


def default_root() -> Path:
    """click's package directory (located, not imported), else the test fixtures."""
    spec = importlib.util.find_spec("click")
    return Path(spec.origin).parent if spec and spec.origin else REPO_ROOT / "tests"


async def index_once(port: int, path: Path, corpus: str, console: Console) -> None:
    """`path` indexed as `corpus` by the indexer on 127.0.0.1:`port`, unless it already is."""
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        stub = indexer_pb2_grpc.IndexerStub(channel)
        listed = await stub.ListCorpora(indexer_pb2.ListCorporaRequest())
        if any(c.corpus_id == corpus for c in listed.corpora):
            return
        last = indexer_pb2.IndexProgress()
        async for event in stub.IndexCorpus(indexer_pb2.IndexCorpusRequest(corpus_id=corpus, path=str(path))):
            last = event
        console.print(f"indexed {path}: {last.chunks_total} chunks in {last.elapsed_s:.1f} s")
