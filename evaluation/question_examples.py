"""Writes evals/question_examples.jsonl, the labelled examples the learned reader
(`tribrid.question.learned`) is fitted on (`evaluation.reader_model`), from the tuning data only:

- structural: every wording of the phrasing tables (unseen_sets.PHRASINGS, lang_sets.EXTRA_PHRASINGS
  and the reworded rounds), except the rounds held out (unseen_sets.HELD_OUT, lang_sets.HELD_OUT),
  labelled with the relation it asks for;
- "none": the how-to questions of evals/howto/questions.jsonl, and the queries of the prose tuning
  sets (docstring, FAQ) and of the identifier set;
- the question banks of evals/questions/ (QUESTION_BANKS), each labelled by the helper that wrote
  it: every relation, and questions that ask none.

    .venv/bin/python -m evaluation.question_examples
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from evaluation import REPO_ROOT, lang_sets, unseen_sets
from evaluation.build_sets import SETS_DIR
from tribrid.question.learned import NO_RELATION, mask_names

EXAMPLES = REPO_ROOT / "evals" / "question_examples.jsonl"
HOWTO = REPO_ROOT / "evals" / "howto" / "questions.jsonl"
QUESTIONS_DIR = REPO_ROOT / "evals" / "questions"
# Each written by a helper that never saw /work, in one style (evals/README.md, "A learned reading
# of questions"): rows {"text": a wording with {x} for the name, "reading": its label}.
QUESTION_BANKS = (
    "terse",
    "chatty",
    "multilingual",
    "communities",
    "task-driven",
    "more-languages",
    "everyone",
)
NO_RELATION_SETS = (
    "docstring",
    "unseen-docstring",
    "unseen-docstring-3",
    "faq-perl",
    "faq-sed",
    "identifier",
)
NAME = "WidgetFactory"  # any name written as one: it is masked


@dataclass(frozen=True, slots=True)
class Example:
    text: str
    reading: str  # an Intent of tribrid.question, or NO_RELATION


def load_examples(path: Path = EXAMPLES) -> list[Example]:
    with path.open(encoding="utf-8") as lines:
        return [Example(row["text"], row["reading"]) for row in map(json.loads, lines)]


def _tuning_tables() -> list[dict[str, tuple[tuple[str, str], ...]]]:
    held_out = set(unseen_sets.HELD_OUT) | set(lang_sets.HELD_OUT)
    tables = [unseen_sets.PHRASINGS, lang_sets.EXTRA_PHRASINGS]
    tables += [t for name, t in unseen_sets.REWORDED_TABLES.items() if name not in held_out]
    tables += [t for name, (_corpus, t) in lang_sets.REWORDED_SETS.items() if name not in held_out]
    unique: dict[int, dict[str, tuple[tuple[str, str], ...]]] = {id(t): t for t in tables}
    return list(unique.values())


def _queries(path: Path) -> list[str]:
    with path.open(encoding="utf-8") as lines:
        return [json.loads(line)["query"] for line in lines]


def bank(name: str) -> list[Example]:
    """A question bank's rows, the name still written `{x}`."""
    with (QUESTIONS_DIR / f"{name}.jsonl").open(encoding="utf-8") as lines:
        return [Example(row["text"], row["reading"]) for row in map(json.loads, lines)]


def build(banks: tuple[str, ...] = QUESTION_BANKS) -> list[Example]:
    """The examples, masked; `banks`: the question banks among them (all, but in a lab that holds
    one out)."""
    examples: dict[str, Example] = {}

    def add(text: str, reading: str) -> None:
        masked = mask_names(text)
        examples.setdefault(masked, Example(masked, reading))

    for table in _tuning_tables():
        for relation, wordings in table.items():
            for _family, wording in wordings:
                add(wording.format(x=NAME), relation)
    prose = _queries(HOWTO) + [q for name in NO_RELATION_SETS for q in _queries(SETS_DIR / f"{name}.jsonl")]
    for query in prose:
        add(query, NO_RELATION)
    for name in banks:
        for row in bank(name):
            add(row.text.format(x=NAME), row.reading)
    return list(examples.values())


def main() -> None:
    examples = build()
    EXAMPLES.parent.mkdir(parents=True, exist_ok=True)
    with EXAMPLES.open("w", encoding="utf-8") as out:
        for example in examples:
            out.write(json.dumps({"text": example.text, "reading": example.reading}) + "\n")
    counts = Counter(e.reading for e in examples)
    print(f"{len(examples)} examples -> {EXAMPLES}: {dict(sorted(counts.items()))}")


if __name__ == "__main__":
    main()
