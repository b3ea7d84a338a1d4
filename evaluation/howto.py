"""How often the question reader takes a how-to question on code for a structural one.

evals/howto/questions.jsonl holds 120 how-to and debugging questions about starlette, three.js and
jdk.httpserver (40 each: "why does my websocket close right after accept", "how does
Object3D.updateMatrixWorld handle children"), written (session 14) by a helper that had never seen
the reader, the eval sets or this repository. None asks for a relation of code (callers, callees,
members, bases, subclasses, importers), so every structural reading is a false positive: the
gateway would give the graph leg the structural profile's weight for a question it cannot answer.
Each question is read as the gateway reads it, with the corpus's definition names
(`CorpusProfile.definition_names`), and without them.

    .venv/bin/python -m evaluation.howto      # the stores up and the corpora indexed (make eval)
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from evaluation import REPO_ROOT
from tribrid.config import load_config
from tribrid.corpus_profile import CorpusProfile, CorpusProfiles
from tribrid.question.reading import read_question
from tribrid.stores.postgres import create_pool

QUESTIONS = REPO_ROOT / "evals" / "howto" / "questions.jsonl"
console = Console(width=max(Console().width, 120))


async def _profiles(corpora: set[str]) -> dict[str, CorpusProfile | None]:
    cfg = load_config()
    pool = await create_pool(cfg.postgres, cfg.embedding.dim, cfg.vector)
    try:
        known = CorpusProfiles(pool)
        return {corpus: await known.get(corpus) for corpus in sorted(corpora)}
    finally:
        await pool.close()


def read_all(rows: list[dict[str, str]], profiles: dict[str, CorpusProfile | None]) -> dict[str, Any]:
    """Per corpus: questions, structural readings with and without its names, and the misread ones."""
    out: dict[str, Any] = {}
    for row in rows:
        corpus, query = row["corpus"], row["query"]
        profile = profiles[corpus]
        if profile is None:
            raise SystemExit(f"corpus {corpus} is not indexed: run `make eval` first")
        names = profile.definition_names
        entry = out.setdefault(corpus, {"questions": 0, "with_names": 0, "without_names": 0, "misread": []})
        entry["questions"] += 1
        intent_with = read_question(query, names).intent
        intent_without = read_question(query).intent
        entry["with_names"] += intent_with is not None
        entry["without_names"] += intent_without is not None
        if intent_with or intent_without:
            intent = intent_with or intent_without
            entry["misread"].append({"query": query, "intent": intent, "with_names": intent_with is not None})
    return out


def show(result: dict[str, Any]) -> None:
    table = Table(title="How-to questions read as structural (false positives)")
    for column in ("corpus", "questions", "with the corpus's names", "without them"):
        table.add_column(column, justify="left" if column == "corpus" else "right")
    for corpus, entry in result.items():
        n = entry["questions"]
        table.add_row(
            corpus,
            str(n),
            f"{entry['with_names']} ({entry['with_names'] / n:.1%})",
            f"{entry['without_names']} ({entry['without_names'] / n:.1%})",
        )
    console.print(table)
    for corpus, entry in result.items():
        for miss in entry["misread"]:
            how = "with names" if miss["with_names"] else "without names only"
            console.print(f"  {corpus}: read as {miss['intent']} ({how}): {miss['query']}")


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    corpora = list(result)
    fig, ax = plt.subplots(figsize=(7, 3.5))
    for offset, key, label in (
        (-0.2, "with_names", "with the corpus's names"),
        (0.2, "without_names", "without"),
    ):
        shares = [result[c][key] / result[c]["questions"] for c in corpora]
        ax.bar([i + offset for i in range(len(corpora))], shares, 0.4, label=label)
    ax.set_xticks(list(range(len(corpora))))
    ax.set_xticklabels(corpora)
    ax.set_ylabel("share read as structural")
    ax.set_title("How-to questions misread as structural")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "evals" / "results")
    args = parser.parse_args()
    rows = [json.loads(line) for line in args.questions.read_text().splitlines() if line.strip()]
    result = read_all(rows, asyncio.run(_profiles({row["corpus"] for row in rows})))
    show(result)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "howto-latest.json").write_text(json.dumps(result, indent=1) + "\n")
    plot(result, args.out / "howto-latest.png")
    console.print(f"wrote {args.out / 'howto-latest.json'} and howto-latest.png")


if __name__ == "__main__":
    main()
