"""Fixtures the integration tests share: each corpus is written once per session, for every
module that reads it (a fixture imported into a second module would be set up again there)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.integration.test_sparse_leg import DOCS
from tests.integration.test_vector_leg import synth_vectors, write_corpus
from tests.stack import Stack

CODE = "bm25-pruning-click"
FEW = "bm25-pruning-few"


def click_corpus() -> tuple[list[tuple[str, str, str]], list[str]]:
    """Every function and class of the installed click package as a chunk (path, language, text),
    and questions about them: names, structural questions and docstring lines."""
    import click

    docs: list[tuple[str, str, str]] = []
    questions: list[str] = []
    for path in sorted(Path(click.__file__).parent.glob("*.py")):
        text = path.read_text(encoding="utf-8")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef | ast.ClassDef):
                source = ast.get_source_segment(text, node) or ""
                docs.append((f"click/{path.name}", "python", source[:4000]))
                doc_line = (ast.get_docstring(node) or "").strip().split("\n")[0]
                if not node.name.startswith("_"):
                    questions += [node.name, f"who calls {node.name}", f"how does {node.name} work", doc_line]
    return docs, list(dict.fromkeys(q for q in questions if q))[::7][:90]


@pytest.fixture(scope="session")
async def code_corpus(stack: Stack) -> list[str]:
    """Click's definitions as corpus CODE (pseudo-random vectors); the questions about them."""
    docs, questions = click_corpus()
    assert len(docs) > 300
    await write_corpus(stack, CODE, docs, synth_vectors(len(docs), stack.cfg.embedding.dim, seed=5))
    return questions


@pytest.fixture(scope="session")
async def few_chunks(stack: Stack) -> str:
    """A handful of chunks (test_sparse_leg's DOCS) as corpus FEW."""
    await write_corpus(stack, FEW, DOCS, synth_vectors(len(DOCS), stack.cfg.embedding.dim, seed=3))
    return FEW
