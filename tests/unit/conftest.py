"""Unit tests need no store and no service: the session's store fixtures (tests/conftest.py) are
refused here, so a test that asks for one fails at once instead of starting PostgreSQL and FalkorDB
under `make unit`. Such a test belongs in tests/integration (or tests/e2e)."""

from __future__ import annotations

from typing import NoReturn

import pytest


def _refused(request: pytest.FixtureRequest) -> NoReturn:
    pytest.fail(
        f"the {request.fixturename!r} fixture starts the stores: unit tests start no store or "
        "service; a test that needs one belongs in tests/integration",
        pytrace=False,
    )


@pytest.fixture(scope="session")
def config(request: pytest.FixtureRequest) -> NoReturn:
    _refused(request)


@pytest.fixture(scope="session")
def stack(request: pytest.FixtureRequest) -> NoReturn:
    _refused(request)


@pytest.fixture(scope="session")
def sample_corpus(request: pytest.FixtureRequest) -> NoReturn:
    _refused(request)
