"""Session fixtures: real embedded stores on test-only ports and a test-only state dir."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tribrid.config import REPO_ROOT, TriBridConfig, load_config
from tribrid.stores import embedded


@pytest.fixture(scope="session")
def config() -> Iterator[TriBridConfig]:
    cfg = load_config(
        state_dir=REPO_ROOT / ".state" / "test",
        postgres={"port": 55532, "database": "tribrid_test"},
        graph_store={"falkordb_port": 56479, "graph_prefix": "tribrid_test_"},
        embedding={"num_threads": 2},
    )
    started = embedded.up(cfg)
    yield cfg
    if started:  # leave stores that were already running (e.g. by hand) alone
        embedded.down(cfg)
