"""The benchmarks name PostgreSQL settings that add work to every statement (statement logging),
so CPU figures measured on a server left logging are not taken for the product's."""

from __future__ import annotations

import asyncpg

from bench.server_cpu import statement_costs, statement_costs_note
from tribrid.config import TriBridConfig


async def test_statement_logging_is_named_and_the_defaults_are_not(config: TriBridConfig) -> None:
    assert await statement_costs(config) == []
    assert statement_costs_note([]) == ""
    database = config.postgres.database
    conn = await asyncpg.connect(config.postgres.effective_dsn())
    try:
        # new sessions of the database get these, as a server's own settings would
        await conn.execute(f'ALTER DATABASE "{database}" SET log_min_duration_statement = 0')
        await conn.execute(f"ALTER DATABASE \"{database}\" SET log_statement = 'all'")
        costs = await statement_costs(config)
    finally:
        await conn.execute(f'ALTER DATABASE "{database}" RESET log_min_duration_statement')
        await conn.execute(f'ALTER DATABASE "{database}" RESET log_statement')
        await conn.close()
    assert costs == ["log_min_duration_statement=0", "log_statement=all"]
    assert "log_min_duration_statement=0, log_statement=all" in statement_costs_note(costs)
    assert await statement_costs(config) == []
