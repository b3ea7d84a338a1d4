"""The web console (/console) in a real browser: Playwright drives Debian's chromium, headless, against
a stack with bearer tokens on (the services and the bridge in this process, over the session's
stores and its sample corpus). Every check compares what the page shows with the JSON API's own
answer to the same request. Skipped, saying why, only when Playwright or chromium cannot start.

Measured and printed, not asserted: the first paint, the playground's round trip over the API's
own latency, and drawing 300 nodes. TRIBRID_CONSOLE_SCREENSHOTS=DIR writes each view's screenshot
there (`make console-screenshots`: docs/console/).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

from services.bridge.service import BridgeServer
from tests.stack import FIXTURE_REPO, SAMPLE_CORPUS, Stack, bridged_stack
from tribrid import auth
from tribrid.config import TokenConfig, TriBridConfig
from tribrid.legs import LEG_NAMES
from tribrid.server import RunningServer
from tribrid.v1 import indexer_pb2

playwright_api = pytest.importorskip("playwright.async_api", reason="playwright is not installed")

CHROMIUM = Path(os.environ.get("TRIBRID_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_FOUND = CHROMIUM.exists()
SCREENSHOTS = os.environ.get("TRIBRID_CONSOLE_SCREENSHOTS", "")
INDEXED = "console-e2e"
TOKEN_KEY = "tribrid.console.token"  # console.js keeps the token under this sessionStorage key
# name -> (token, scopes)
TOKENS: dict[str, tuple[str, list[str]]] = {
    "reader": ("console-reader-1", ["search"]),
    "indexer": ("console-indexer-2", ["search", "index"]),
    "admin": ("console-admin-3", ["admin"]),
}
SEARCH = {"corpusId": SAMPLE_CORPUS, "query": "who calls validate_card_number", "topK": 5}


@dataclass
class ConsoleStack:
    base: str
    servers: dict[str, RunningServer]
    bridge: BridgeServer

    def api(self, token: str) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            base_url=self.base, timeout=60, headers={"authorization": f"Bearer {TOKENS[token][0]}"}
        )


@pytest.fixture(scope="module")
async def console_stack(
    config: TriBridConfig, stack: Stack, sample_corpus: indexer_pb2.IndexProgress
) -> AsyncIterator[ConsoleStack]:
    tokens = [
        TokenConfig(name=name, sha256=auth.hash_token(token), scopes=scopes, corpora=["*"])  # type: ignore[arg-type]
        for name, (token, scopes) in TOKENS.items()
    ]
    async with bridged_stack(config, tokens) as bridged:
        yield ConsoleStack(bridged.base, bridged.servers, bridged.bridge)


@pytest.fixture(scope="module")
async def browser() -> AsyncIterator[Any]:
    if not CHROMIUM_FOUND:
        pytest.skip(f"no chromium at {CHROMIUM}: `make browser` installs Debian's (apt-get install chromium)")
    async with playwright_api.async_playwright() as p:
        try:
            chromium = await p.chromium.launch(
                executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"]
            )
        except playwright_api.Error as err:
            pytest.skip(f"chromium at {CHROMIUM} does not start: {err.message.splitlines()[0]}")
        yield chromium
        await chromium.close()


async def open_page(browser: Any, stack: ConsoleStack, token: str, path: str) -> Any:
    """A fresh tab that holds `token` as the console keeps it, at `path`; page errors fail the test."""
    context = await browser.new_context(viewport={"width": 1400, "height": 900}, base_url=stack.base)
    await context.add_init_script(f"sessionStorage.setItem({TOKEN_KEY!r}, {TOKENS[token][0]!r})")
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    page.errors = errors
    await page.goto(path)
    return page


def screenshot_path(name: str) -> Path:
    Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
    return Path(SCREENSHOTS) / f"{name}.png"


async def screenshot(page: Any, name: str) -> None:
    if SCREENSHOTS:
        await page.screenshot(path=str(screenshot_path(name)))


def report(capsys: pytest.CaptureFixture[str], line: str) -> None:
    with capsys.disabled():
        print(f"\n[console] {line}")


def shared(request: dict[str, Any]) -> str:
    return "/console/search#" + urlencode({"request": json.dumps(request)})


async def test_pages_load_without_a_token_but_the_api_needs_one(console_stack: ConsoleStack) -> None:
    async with httpx.AsyncClient(base_url=console_stack.base) as http:
        for path in ("/console/search", "/console/graph", "/console/corpora", "/console/health"):
            page = await http.get(path)
            assert page.status_code == 200 and "<nav>" in page.text
            assert all(token not in page.text for token, _ in TOKENS.values())
        assert (await http.get("/console/static/console.js")).status_code == 200
        assert (await http.get("/console/static/vendor/cytoscape.min.js")).status_code == 200
        assert (await http.get("/console/api/whoami")).status_code == 401
        assert (await http.get("/console/api/health")).status_code == 401
        assert (await http.post("/v1/search", json=SEARCH)).status_code == 401
    async with console_stack.api("reader") as api:
        who = (await api.get("/console/api/whoami")).json()
    assert who == {"auth": True, "name": "reader", "scopes": ["search"], "corpora": ["*"]}


async def test_search_shows_each_leg_and_the_fused_answer_of_the_api(
    console_stack: ConsoleStack, browser: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    async with console_stack.api("reader") as api:
        expected = (await api.post("/v1/search", json=SEARCH)).json()
    page = await open_page(browser, console_stack, "reader", shared(SEARCH))
    # the first contentful paint, once the browser has recorded it
    first_paint = await page.evaluate(
        """() => new Promise((done) => new PerformanceObserver((list, observer) => {
          const paint = list.getEntries().find((e) => e.name === "first-contentful-paint");
          if (paint) { observer.disconnect(); done(paint.startTime); }
        }).observe({ type: "paint", buffered: true }))"""
    )
    await page.wait_for_selector("#search-out[data-state=done]", timeout=30_000)

    shown = await page.eval_on_selector_all("#fused tbody tr", "rows => rows.map(r => r.dataset.chunkId)")
    assert shown == [m["chunkId"] for m in expected["matches"]]
    assert shown, "the question finds the sample's code"
    # each leg's rank and raw score, as the API explains them
    first = expected["matches"][0]
    cells = await page.eval_on_selector_all(
        "#fused tbody tr:first-child td.leg-rank", "cells => cells.map(c => c.textContent)"
    )
    explained = {e["leg"]: e for e in first["explain"] if not e.get("source")}
    for leg, text in zip(LEG_NAMES, cells, strict=True):
        entry = explained.get(f"LEG_{leg.upper()}")
        absent = "\u2013"  # the page's dash for a leg that did not rank the match
        assert text == (f"#{entry['rank']} ({entry['rawScore']:.3f})" if entry and entry["rank"] else absent)
    # how the question was read, and one latency bar per leg
    kind = expected["queryKind"].removeprefix("QUERY_KIND_").lower()
    assert kind in await page.inner_text("#reading-kind")
    assert await page.eval_on_selector_all("#latency .latency", "rows => rows.map(r => r.dataset.leg)") == [
        r["leg"].removeprefix("LEG_").lower() for r in expected["legs"]
    ]

    # three columns, each the leg's own list in its own order; a line for each chunk two lists share
    columns = await page.eval_on_selector_all(
        ".leg-column",
        "cols => cols.map(c => [c.dataset.leg,"
        " [...c.querySelectorAll('.leg-item')].map(i => i.dataset.chunkId)])",
    )
    assert [leg for leg, _ in columns] == list(LEG_NAMES)
    for leg, items in columns:
        assert items, f"{leg}: an empty list"
        assert len(items) == len(set(items)) <= 10
    shared_pairs = sum(len(set(a) & set(b)) for i, (_, a) in enumerate(columns) for _, b in columns[i + 1 :])
    assert await page.locator("#leg-lines path").count() == shared_pairs > 0
    async with console_stack.api("reader") as api:
        sparse_only = {
            **SEARCH,
            "topK": 10,
            "options": {
                "fusion": {
                    "legs": [{"leg": f"LEG_{leg.upper()}", "enabled": leg == "sparse"} for leg in LEG_NAMES],
                    "maxChunksPerFile": 0,
                }
            },
        }
        sparse = (await api.post("/v1/search", json=sparse_only)).json()
    assert dict(columns)["sparse"] == [m["chunkId"] for m in sparse["matches"]]
    await screenshot(page, "search")

    # a click on a match: its text with line numbers, its callers and callees
    await page.click("#fused tbody tr:first-child")
    await page.wait_for_selector("#chunk-graph .neighbours", timeout=10_000)
    numbers = await page.eval_on_selector_all("#chunk-text .ln", "ns => ns.map(n => Number(n.textContent))")
    assert numbers[0] == first["startLine"] and numbers == list(range(numbers[0], numbers[0] + len(numbers)))
    assert "callers:" in await page.inner_text("#chunk-graph")
    await screenshot(page, "search-chunk")

    # the playground's round trip over the API's own latency, warm: the same request again
    await page.click("#chunk-close")
    await page.click("#search-button")
    await page.wait_for_function("performance.getEntriesByName('search-fused').length === 2")
    round_trip = await page.evaluate("performance.getEntriesByName('search-fused')[1].duration")
    took = float(await page.get_attribute("#search-out", "data-took-ms") or 0)
    report(
        capsys,
        f"first paint {first_paint:.0f} ms; search round trip {round_trip:.1f} ms, API took {took:.1f} ms: "
        f"+{round_trip - took:.1f} ms in the page and on the wire",
    )
    assert page.errors == []


async def neighbours(api: httpx.AsyncClient, entity: dict[str, str]) -> dict[str, dict[str, Any]]:
    reply = await api.post("/v1/graph/neighbors", json={"corpusId": SAMPLE_CORPUS, "entity": entity})
    assert reply.status_code == 200, reply.text
    return {e["entityId"]: e for e in reply.json()["entities"]}


async def test_graph_draws_a_neighbourhood_expands_a_node_and_a_path(
    console_stack: ConsoleStack, browser: Any
) -> None:
    name = "validate_card_number"
    async with console_stack.api("reader") as api:
        found = await api.post(
            "/v1/graph/entity", json={"corpusId": SAMPLE_CORPUS, "entity": {"name": name}, "maxHops": 1}
        )
        root = found.json()["entity"]["entityId"]
        around = await neighbours(api, {"name": name})
    around.pop(root, None)
    page = await open_page(
        browser,
        console_stack,
        "reader",
        f"/console/graph#{urlencode({'corpus': SAMPLE_CORPUS, 'entity': name})}",
    )
    await page.wait_for_function("document.getElementById('graph-status').textContent.includes('entities')")
    drawn = set(await page.evaluate("TribridGraph.cy.nodes().map(n => n.id())"))
    assert drawn == {*around, root} and len(around) >= 2
    await page.wait_for_selector("#entity-chunks li[data-chunk-id]")
    await screenshot(page, "graph")

    # a click on a node adds its own neighbours: the function that calls it
    other = next(e["entityId"] for e in around.values() if e["relationshipType"] == "calls")
    async with console_stack.api("reader") as api:
        further = set(await neighbours(api, {"entityId": other}))
    await page.evaluate(f"TribridGraph.cy.getElementById({other!r}).emit('tap')")
    await page.wait_for_function(f"TribridGraph.cy.nodes().length === {len(drawn | further)}")

    # a name that is no entity: the API's message (its nearest names) on the page
    async with console_stack.api("reader") as api:
        miss = await api.post(
            "/v1/graph/entity", json={"corpusId": SAMPLE_CORPUS, "entity": {"name": "validate_card_numbr"}}
        )
    assert miss.status_code in (400, 404)
    await page.fill("#entity", "validate_card_numbr")
    await page.click("#graph-form button[type=submit]")
    await page.wait_for_selector("#graph-error:not([hidden])")
    assert await page.inner_text("#graph-error") == f"{miss.json()['code']}: {miss.json()['message']}"

    # the path between two entities: its entities in order, one edge per step
    async with console_stack.api("reader") as api:
        path = (
            await api.post(
                "/v1/graph/path",
                json={"corpusId": SAMPLE_CORPUS, "source": {"name": name}, "target": {"entityId": other}},
            )
        ).json()
    assert path["found"]
    target = next(e for e in path["entities"] if e["entityId"] == other)
    await page.fill("#entity", name)
    await page.fill("#target", target["qualifiedName"])
    await page.click("#path-button")
    await page.wait_for_function("document.getElementById('graph-status').textContent.startsWith('path')")
    assert await page.evaluate("TribridGraph.cy.nodes().map(n => n.id())") == [
        e["entityId"] for e in path["entities"]
    ]
    assert await page.evaluate("TribridGraph.cy.edges('.path').length") == len(path["relationshipTypes"])
    assert page.errors == []


async def test_drawing_300_nodes(
    console_stack: ConsoleStack, browser: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    page = await open_page(browser, console_stack, "reader", "/console/graph")
    # the page's own drawing calls on a neighbourhood of 300: 20 entities around a root, 14 around each
    drawn = await page.evaluate(
        """() => new Promise((done) => {
      const entity = (id, i) => ({ entityId: id, name: id, type: ["function", "class", "person"][i % 3],
        relationshipType: "calls", direction: i % 2 ? "in" : "out", edge: { count: i } });
      const started = performance.now();
      TribridGraph.reset(entity("root", 0));
      const ring = Array.from({ length: 20 }, (_, i) => entity(`n${i}`, i));
      TribridGraph.add("root", ring);
      ring.forEach((r, i) => TribridGraph.add(r.entityId,
        Array.from({ length: 14 }, (_, j) => entity(`n${i}-${j}`, j)).slice(0, i === 19 ? 13 : 14)));
      TribridGraph.layout();
      requestAnimationFrame(() => requestAnimationFrame(() =>
        done({ ms: performance.now() - started, nodes: TribridGraph.cy.nodes().length })));
    })"""
    )
    assert drawn["nodes"] == 300
    await screenshot(page, "graph-300")
    report(capsys, f"graph view: {drawn['nodes']} nodes drawn in {drawn['ms']:.0f} ms")
    assert page.errors == []


async def test_index_run_streams_progress_until_done_and_admin_deletes(
    console_stack: ConsoleStack, browser: Any, tmp_path: Path
) -> None:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE_REPO, root)
    async with console_stack.api("admin") as api:
        await api.delete(f"/v1/corpora/{INDEXED}")
    page = await open_page(browser, console_stack, "indexer", "/console/corpora")
    await page.wait_for_selector(f"#corpora tr[data-corpus-id='{SAMPLE_CORPUS}']")
    assert await page.locator("button.delete").count() == 0  # index, not admin
    phases: list[str] = []
    await page.expose_function("notePhase", lambda phase: phases.append(phase))
    await page.evaluate(
        """() => new MutationObserver(() => notePhase(document.getElementById('index-phase').dataset.phase))
          .observe(document.getElementById('index-phase'), { attributes: true })"""
    )
    await page.fill("#index-corpus", INDEXED)
    await page.fill("#index-path", str(root))
    await page.click("#index-button")
    await page.wait_for_selector("#index-phase[data-phase=done]", timeout=120_000)
    await page.wait_for_selector(f"#corpora tr[data-corpus-id='{INDEXED}']")
    await screenshot(page, "corpora")
    async with console_stack.api("admin") as api:
        listed = {c["corpusId"]: c for c in (await api.get("/v1/corpora")).json()["corpora"]}
    chunks = await page.inner_text(f"#corpora tr[data-corpus-id='{INDEXED}'] td:nth-child(4)")
    assert int(chunks) == listed[INDEXED]["chunks"] > 0
    # streamed: phases before the last one were shown on the way
    assert phases[-1] == "done" and len(set(phases) - {"starting", "done"}) >= 1, phases
    assert page.errors == []

    # an admin deletes it, after confirming
    admin = await open_page(browser, console_stack, "admin", "/console/corpora")
    row = f"#corpora tr[data-corpus-id='{INDEXED}']"
    await admin.click(f"{row} button.delete")
    await admin.click(f"{row} button.confirm-delete")
    await admin.wait_for_selector(row, state="detached")
    async with console_stack.api("admin") as api:
        assert INDEXED not in {c["corpusId"] for c in (await api.get("/v1/corpora")).json()["corpora"]}


async def test_a_search_token_reads_only(console_stack: ConsoleStack, browser: Any) -> None:
    page = await open_page(browser, console_stack, "reader", "/console/corpora")
    await page.wait_for_selector(f"#corpora tr[data-corpus-id='{SAMPLE_CORPUS}']")
    assert await page.locator("button.delete").count() == 0
    assert await page.locator("#index-form").is_hidden()
    # the API refuses what the page does not offer
    refused = await page.evaluate(
        f"""() => Console.api("DELETE", "/v1/corpora/{SAMPLE_CORPUS}").then(
          () => null, (err) => ({{ status: err.status, code: err.code }}))"""
    )
    assert refused == {"status": 403, "code": "PERMISSION_DENIED"}
    admin = await open_page(browser, console_stack, "admin", "/console/corpora")
    await admin.wait_for_selector(f"#corpora tr[data-corpus-id='{SAMPLE_CORPUS}'] button.delete")


async def test_health_shows_each_service_and_each_legs_latency(
    console_stack: ConsoleStack, browser: Any
) -> None:
    async with console_stack.api("reader") as api:
        assert (await api.post("/v1/search", json=SEARCH)).status_code == 200
        health = (await api.get("/console/api/health")).json()
    assert {s["service"]: s["status"] for s in health["services"]} == dict.fromkeys(
        ("fusion", *LEG_NAMES, "indexer"), "SERVING"
    )
    page = await open_page(browser, console_stack, "reader", "/console/health")
    await page.wait_for_selector("#leg-latency tbody tr")
    statuses = await page.eval_on_selector_all(
        "#services tbody tr", "rows => rows.map(r => [r.dataset.service, r.cells[2].textContent])"
    )
    assert dict(statuses) == dict.fromkeys(("bridge", "fusion", *LEG_NAMES, "indexer"), "SERVING")
    legs = await page.eval_on_selector_all(
        "#leg-latency tbody tr", "rows => rows.map(r => [r.dataset.leg, Number(r.cells[2].textContent)])"
    )
    assert set(LEG_NAMES) <= {leg for leg, _ in legs}
    assert all(p50 > 0 for leg, p50 in legs if leg in LEG_NAMES)
    await screenshot(page, "health")
    assert page.errors == []
