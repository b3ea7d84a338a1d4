"""Session fixtures: real embedded stores on test-only ports and a test-only state dir, and the five
services in this process over them.

tests/integration and tests/e2e both use them; they are defined once, here, so that one session
runs one set of stores (two definitions would start two sets in the same state dir). tests/unit
refuses them (tests/unit/conftest.py). Nothing starts unless a test asks for a fixture.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from bench.procstack import free_port
from tests import REPO_ROOT
from tests.stack import FIXTURE_REPO, SAMPLE_CORPUS, Stack, index_corpus
from tribrid import telemetry
from tribrid.config import TriBridConfig, load_config
from tribrid.resources import Resources
from tribrid.stores import embedded
from tribrid.v1 import indexer_pb2, indexer_pb2_grpc
from tribridctl.compose import ALL_SERVICES, start_services


@pytest.fixture(scope="session")
def config() -> Iterator[TriBridConfig]:
    # Free ports from the OS, so this suite never collides with `make up`, another checkout's
    # tests, or stores a killed test run left behind.
    cfg = load_config(
        # TRIBRID_TEST_STATE_DIR lets several test sessions run side by side on one machine
        state_dir=Path(os.environ.get("TRIBRID_TEST_STATE_DIR", REPO_ROOT / ".state" / "test")),
        postgres={"port": free_port(), "database": "tribrid_test"},
        graph_store={"falkordb_port": free_port(), "graph_prefix": "tribrid_test_"},
        embedding={"num_threads": 2},
    )
    embedded.down(cfg)  # stores a killed run left in this state dir, whatever port they hold
    embedded.up(cfg)
    yield cfg
    embedded.down(cfg)


@pytest.fixture(scope="session")
async def stack(config: TriBridConfig) -> AsyncIterator[Stack]:
    cfg = config.model_copy(
        update={
            "services": config.services.model_copy(
                update={f"{name}_port": 0 for name in ("fusion", "vector", "sparse", "graph", "indexer")}
            )
        }
    )
    # traced, as a service with an exporter is (telemetry.tracing_on, read as servers and channels
    # are made): the tracing tests add their span processor to this provider
    if not telemetry.tracing_on():
        trace.set_tracer_provider(TracerProvider())
    resources = Resources(cfg)
    servers = await start_services(cfg, ALL_SERVICES, resources)
    yield Stack(resources.cfg, resources, {str(name): server for name, server in servers.items()})
    for server in servers.values():
        await server.stop(0)
    await resources.close()


@pytest.fixture(scope="session")
async def sample_corpus(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> indexer_pb2.IndexProgress:
    """The fixture repository, copied (tests may edit the copy) and indexed fresh into SAMPLE_CORPUS."""
    root = tmp_path_factory.mktemp("sample") / "repo"
    shutil.copytree(FIXTURE_REPO, root)
    async with stack.channel("indexer") as channel:
        await indexer_pb2_grpc.IndexerStub(channel).DeleteCorpus(
            indexer_pb2.DeleteCorpusRequest(corpus_id=SAMPLE_CORPUS)
        )
    return await index_corpus(stack, SAMPLE_CORPUS, root)
