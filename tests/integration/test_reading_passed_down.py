"""The question is read once: the gateway passes its reading to the graph leg, whose answer is the
one it gives when it reads the question itself; and a reading it is given is the one it walks by."""

from __future__ import annotations

import pytest

from tests.stack import SAMPLE_CORPUS, Stack
from tribrid.corpus_profile import CorpusProfiles
from tribrid.question import Reading, read
from tribrid.question.contract import to_proto
from tribrid.v1 import common_pb2, graph_pb2_grpc, indexer_pb2

QUESTIONS = (
    "who calls compute_discount",
    "what does total_price call",
    "subclasses of PaymentGateway",
    "what are the members of Cart",
    "which classes does CardGateway inherit from",
    "compute_discount",
    "how are discounts for loyal customers computed",
    "I'm refactoring the pricing module. Which functions end up calling apply_tax?",
)


async def _graph(stack: Stack, query: str, reading: Reading | None = None) -> list[tuple[str, float]]:
    request = common_pb2.SearchRequest(corpus_id=SAMPLE_CORPUS, query=query, top_k=20)
    if reading is not None:
        request.reading.CopyFrom(to_proto(reading))
    async with stack.channel("graph") as channel:
        reply = await graph_pb2_grpc.GraphSearchStub(channel).Search(request, timeout=30)
    return [(m.chunk_id, round(m.score, 9)) for m in reply.matches]


@pytest.mark.parametrize("question", QUESTIONS)
async def test_the_answer_with_the_reading_passed_down_is_the_answer_read_by_the_leg(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, question: str
) -> None:
    corpus = await CorpusProfiles(await stack.resources.pool()).get(SAMPLE_CORPUS)
    reading = read(question, corpus)
    passed = await _graph(stack, question, reading)
    assert passed == await _graph(stack, question)
    if reading.kind == "structural":
        assert passed, question  # the fixture code answers every structural question here


async def test_the_leg_walks_by_the_reading_it_is_given(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress
) -> None:
    question = "subclasses of PaymentGateway"
    own = await _graph(stack, question)
    # the same words read as asking for the class's bases: the answer is no longer its subclasses
    misread = await _graph(stack, question, Reading("structural", "bases", question))
    assert own and misread != own
