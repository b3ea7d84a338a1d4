"""Every request option's bounds through the CLI as a user runs it (a subprocess): each rejection a
failing exit naming the option and what it allows, and the settings at their bounds answered by the
CLI and the HTTP bridge alike (the leg, the gateway and HTTP alone: tests/integration/
test_option_bounds.py)."""

from __future__ import annotations

import httpx
import pytest
from google.protobuf import json_format

from tests.e2e.test_cli import cli
from tests.integration.test_option_bounds import CASES, IDS, flat, http, request
from tests.stack import SAMPLE_CORPUS, Stack
from tribrid.v1 import indexer_pb2

__all__ = ["http"]  # the fixture (a client of an HTTP bridge to the stack), used here


@pytest.mark.parametrize(("settings", "message"), CASES, ids=IDS)
async def test_the_cli_rejects_every_option(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, settings: tuple[str, ...], message: str
) -> None:
    args = [arg for setting in settings for arg in ("-o", setting)]
    code, _out, err = await cli(stack, "search", "cart total", "--corpus", SAMPLE_CORPUS, *args)
    assert code != 0
    assert "INVALID_ARGUMENT" in err and message in flat(err)


async def test_valid_options_are_answered_everywhere(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, http: httpx.AsyncClient
) -> None:
    """The same settings at their bounds are accepted: the table's rejections are the bounds."""
    settings = (
        "vector.ef_search=400",
        "vector.similarity_threshold=-1",
        "sparse.bm25_k1=3",
        "sparse.query_mode=boolean",
        "graph.max_hops=5",
        "graph.direction=callers",
        "fusion.method=weighted",
        "fusion.normalization=z_score",
        "fusion.legs.graph.weight=0",
        "fusion.expansion_top_n=100",
        "fusion.enable_expansion=true",
        "fusion.expansion_max_hops=3",
        "fusion.expansion_chunk_weight=1",
        "fusion.expansion_min_score=0",
        "fusion.expansion_max_chunks=200",
        "fusion.expansion_placement=interleave",
    )
    reply = await http.post("/v1/search", json=json_format.MessageToDict(request(settings)))
    assert reply.status_code == 200, reply.text
    assert reply.json()["fusionMethod"] == "FUSION_METHOD_WEIGHTED" and reply.json()["weights"]["graph"] == 0
    args = [arg for setting in settings for arg in ("-o", setting)]
    code, _out, err = await cli(stack, "search", "cart total", "--corpus", SAMPLE_CORPUS, "--json", *args)
    assert code == 0, err
