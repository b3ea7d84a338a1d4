"""How well questions are read, on question banks the learned reader was not fit on.

Each bank of evals/questions/ (`question_examples.QUESTION_BANKS`, each written by a helper that
never saw the reader, in one style) is held out in turn: the learned reader is fit on the other
examples only, and the bank's questions (the name filled in from NAMES, round robin) are read
three ways:

- families: the phrasing families alone (`tribrid.question.reading.read_by_families`);
- learned: the learned reader alone (`tribrid.question.learned`), on the whole question;
- reader: what the services use (`tribrid.question.reading.read_question`: the families, checked and completed
  by the learned reader).

Per bank: the share of all questions read right, of the structural ones read right, and how many
of those that ask no relation were read as structural. No store is needed.

    .venv/bin/python -m evaluation.reader
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from rich.console import Console
from rich.progress import track
from rich.table import Table

from evaluation import REPO_ROOT
from evaluation.question_examples import QUESTION_BANKS, bank, build
from evaluation.reader_model import fit
from tribrid.question import learned
from tribrid.question.reading import read_by_families, read_question

# Names as questions write them: snake_case, CamelCase, dotted, and plain words the corpus defines.
NAMES = (
    "parse_args",
    "HTTPStatusError",
    "Context.invoke",
    "BaseCommand",
    "get_current_context",
    "Response",
    "urljoin",
    "AsyncClient",
    "format_help",
    "ParamType",
    "render",
    "Lexer",
)
CORPUS_NAMES = frozenset({n.lower() for n in NAMES} | {n.rsplit(".", 1)[-1].lower() for n in NAMES})
READERS = ("families", "learned", "reader")
console = Console(width=max(Console().width, 120))


@dataclass
class Score:
    questions: int = 0
    right: int = 0
    structural: int = 0
    structural_right: int = 0
    asking_none: int = 0
    none_read_as_structural: int = 0

    def add(self, label: str, reading: str) -> None:
        self.questions += 1
        self.right += reading == label
        if label == learned.NO_RELATION:
            self.asking_none += 1
            self.none_read_as_structural += reading != label
        else:
            self.structural += 1
            self.structural_right += reading == label


def _learned_alone(text: str) -> str | None:
    return learned.likeliest(learned.probabilities(text))


def _readers() -> dict[str, Callable[[str], str | None]]:
    return {
        "families": lambda text: read_by_families(text, CORPUS_NAMES).intent,
        "learned": _learned_alone,
        "reader": lambda text: read_question(text, CORPUS_NAMES).intent,
    }


def evaluate() -> dict[str, dict[str, Score]]:
    """Per held-out bank, per way of reading: its score."""
    scores: dict[str, dict[str, Score]] = {}
    try:
        for held in track(QUESTION_BANKS, description="fit without each bank, read it"):
            learned.load(fit(build(tuple(b for b in QUESTION_BANKS if b != held))))
            per_reader = {name: Score() for name in READERS}
            for i, row in enumerate(bank(held)):
                text = row.text.format(x=NAMES[i % len(NAMES)])
                for name, read in _readers().items():
                    per_reader[name].add(row.reading, read(text) or learned.NO_RELATION)
            scores[held] = per_reader
    finally:
        learned.load()  # the shipped weights again
    return scores


def show(scores: dict[str, dict[str, Score]]) -> None:
    table = Table(
        title="Question banks read by a reader not fit on them (right / structural right / none misread)"
    )
    table.add_column("bank")
    for name in READERS:
        table.add_column(name, justify="right")
    totals = {name: Score() for name in READERS}
    for held, per_reader in scores.items():
        table.add_row(held, *(_cell(per_reader[name]) for name in READERS))
        for name, score in per_reader.items():
            for field, value in asdict(score).items():
                setattr(totals[name], field, getattr(totals[name], field) + value)
    table.add_row("all", *(_cell(totals[name]) for name in READERS), style="bold")
    console.print(table)


def _cell(score: Score) -> str:
    return (
        f"{score.right / score.questions:.3f} / {score.structural_right / score.structural:.3f} / "
        f"{score.none_read_as_structural}/{score.asking_none}"
    )


def plot(scores: dict[str, dict[str, Score]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    banks = list(scores)
    fig, ax = plt.subplots(figsize=(8, 3.5))
    width = 0.8 / len(READERS)
    for k, name in enumerate(READERS):
        shares = [scores[b][name].right / scores[b][name].questions for b in banks]
        ax.bar([i + (k - 1) * width for i in range(len(banks))], shares, width, label=name)
    ax.set_xticks(list(range(len(banks))))
    ax.set_xticklabels(banks)
    ax.set_ylim(0, 1)
    ax.set_ylabel("share of questions read right")
    ax.set_title("Each bank read by a reader fit without it")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "evals" / "results")
    args = parser.parse_args()
    scores = evaluate()
    show(scores)
    args.out.mkdir(parents=True, exist_ok=True)
    result = {held: {name: asdict(s) for name, s in per.items()} for held, per in scores.items()}
    (args.out / "reader-latest.json").write_text(json.dumps(result, indent=1) + "\n")
    plot(scores, args.out / "reader-latest.png")
    console.print(f"wrote {args.out / 'reader-latest.json'} and reader-latest.png")


if __name__ == "__main__":
    main()
