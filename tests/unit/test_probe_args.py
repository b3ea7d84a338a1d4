"""`python -m tribrid.probe NAME` takes the name of a gRPC service (the bridge's probes are HTTP)."""

from __future__ import annotations

from tribrid.probe import main


def test_probe_names_a_grpc_service() -> None:
    assert main([]) == 2
    assert main(["bridge"]) == 2  # HTTP: its probes are httpGet
