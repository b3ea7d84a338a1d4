"""Every round of the entity sets' questions (evals/entities/*/questions*.jsonl), as the evaluation
loads them: ids unique, splits named as the held-out rule names them, a family tag, and every answer
a non-empty line of a corpus file (the shape checks each round's writer ran, over all)."""

from __future__ import annotations

import re

import pytest

from evaluation.entity_sets import load

FAMILIES = {"member_of", "co_member", "together", "connection", "relation", "crosslingual"}
SPLIT = re.compile(r"tune|held_out(-\d+)?")


@pytest.mark.parametrize("name", ["en", "zh"])
def test_every_round_is_well_formed(name: str) -> None:
    entity_set = load(name)
    lines: dict[str, list[str]] = {}
    ids: set[str] = set()
    queries: set[str] = set()
    for split, questions in entity_set.queries.items():
        assert SPLIT.fullmatch(split), split
        for question in questions:
            assert question.id not in ids, question.id
            ids.add(question.id)
            asked = " ".join(question.query.lower().split())
            assert asked and asked not in queries, question.id
            queries.add(asked)
            assert question.tags[:2] == ["entity", name] and question.tags[-1] in FAMILIES, question.id
            assert 1 <= len(question.relevant) <= 4, question.id
            for span in question.relevant:
                if span.path not in lines:
                    path = entity_set.root / span.path
                    assert path.is_file(), (question.id, span.path)
                    lines[span.path] = path.read_text(encoding="utf-8").split("\n")
                # an answer is one paragraph line (or the chapter's heading, line 1)
                assert span.start_line == span.end_line, question.id
                assert 1 <= span.start_line <= len(lines[span.path]), question.id
                assert lines[span.path][span.start_line - 1].strip(), question.id
    assert len(ids) == sum(len(q) for q in entity_set.queries.values()) >= 200
