"""The shipped dashboard and collector config (deploy/observability) refer to what the services
export (the metrics moving with real traffic: tests/integration/test_observability_metrics.py)."""

from __future__ import annotations

import json
import re

import yaml

from tests import REPO_ROOT
from tribrid import telemetry

OBSERVABILITY = REPO_ROOT / "deploy" / "observability"


def exported_metric_names() -> set[str]:
    names: set[str] = set()
    for family in telemetry.METRICS.registry.collect():  # every metric the services export
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
