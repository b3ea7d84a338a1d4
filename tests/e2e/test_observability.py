"""Prometheus metrics move with real traffic; the shipped dashboard and collector config refer to
what the services export."""

from __future__ import annotations

import json
import re

import prometheus_client
import yaml

from services.graph.search import GraphSettings, hit_score
from tests import REPO_ROOT
from tests.conftest import SAMPLE_CORPUS, Stack
from tribrid.graphstore.base import TraversalHit
from tribrid.models import Entity
from tribrid.v1 import common_pb2, fusion_pb2_grpc, indexer_pb2

OBSERVABILITY = REPO_ROOT / "deploy" / "observability"
FUSION_OK = {"method": "/tribrid.v1.Fusion/Search", "code": "OK"}


def sample(name: str, labels: dict[str, str] | None = None) -> float:
    return prometheus_client.REGISTRY.get_sample_value(name, labels or {}) or 0.0


async def test_a_fused_search_moves_the_metrics(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress
) -> None:
    legs = ("vector", "sparse", "graph")
    before = {leg: sample("tribrid_leg_requests_total", {"leg": leg, "status": "ok"}) for leg in legs}
    served = sample("tribrid_grpc_requests_total", FUSION_OK)
    searches = sample("tribrid_fusion_search_duration_seconds_count", {"code": "OK"})
    async with stack.channel("fusion") as channel:
        request = common_pb2.SearchRequest(corpus_id=SAMPLE_CORPUS, query="validate_card_number")
        reply = await fusion_pb2_grpc.FusionStub(channel).Search(request, timeout=30)
    assert not reply.partial
    for leg in legs:
        assert sample("tribrid_leg_requests_total", {"leg": leg, "status": "ok"}) == before[leg] + 1, leg
    assert (
        sample("tribrid_grpc_requests_total", {"method": "/tribrid.v1.Fusion/Search", "code": "OK"})
        == served + 1
    )
    assert sample("tribrid_fusion_search_duration_seconds_count", {"code": "OK"}) == searches + 1


def exported_metric_names() -> set[str]:
    names: set[str] = set()
    for family in prometheus_client.REGISTRY.collect():
        names.update(s.name for s in family.samples)
        names.add(family.name)
    return names


def test_dashboard_queries_only_exported_metrics() -> None:
    dashboard = json.loads((OBSERVABILITY / "grafana-dashboard.json").read_text())
    exprs = re.findall(r'"expr":\s*"((?:[^"\\]|\\.)*)"', json.dumps(dashboard))
    used = {m for e in exprs for m in re.findall(r"\btribrid_[a-z_]+", e)}
    assert used, "the dashboard has no tribrid queries"
    # histogram series (_bucket/_count/_sum) and counters (_total) only appear once observed
    exported = exported_metric_names()
    families = {re.sub(r"_(bucket|count|sum|total)$", "", n) for n in exported}
    missing = {
        m for m in used if m not in exported and re.sub(r"_(bucket|count|sum|total)$", "", m) not in families
    }
    assert not missing, f"dashboard queries metrics nobody exports: {sorted(missing)}"
    # per-leg latency and error rate are on it
    assert "tribrid_leg_duration_seconds_bucket" in used and "tribrid_leg_requests_total" in used


def test_collector_config_receives_traces_and_scrapes_every_service() -> None:
    config = yaml.safe_load((OBSERVABILITY / "otel-collector.yaml").read_text())
    assert "otlp" in config["receivers"]
    pipelines = config["service"]["pipelines"]
    assert "otlp" in pipelines["traces"]["receivers"]
    assert "prometheus" in pipelines["metrics"]["receivers"]
    targets = config["receivers"]["prometheus"]["config"]["scrape_configs"][0]["static_configs"][0]["targets"]
    assert {t.split(":")[0] for t in targets} >= {
        f"tribrid-{s}" for s in ("fusion", "vector", "sparse", "graph")
    }


def test_community_boost_scales_a_graph_hit() -> None:
    entity = Entity("e", "c", "function", "f", "m.f", "m.py", 1, 2, "chunk")
    hit = TraversalHit(entity, 1, "seed", ("calls",), ("seed", "e"), 1)
    settings = GraphSettings(2, ["function"], ["calls"], (1.0, 0.8, 0.6), 20, 100, community_boost=0.25)
    plain = hit_score(hit, 1.0, settings, same_community=False)
    assert plain == 0.8
    assert hit_score(hit, 1.0, settings, same_community=True) == 0.8 * 1.25
