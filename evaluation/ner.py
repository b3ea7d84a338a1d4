"""NER quality on a hand-labelled sample of real text (evals/ner/, see its README): precision,
recall and F1 per type for the configured entity recognizer.

Two matches: exact (same character span and type) and lenient (same type, spans overlapping;
each gold entity matched at most once). Prints a table and writes evals/results/ner-latest.json
and ner-latest.png.

    python -m evaluation.ner [--gold evals/ner/debian-history.jsonl]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from evaluation import REPO_ROOT
from tribrid.config import load_config
from tribrid.ner import EntityRecognizer

GOLD = REPO_ROOT / "evals" / "ner" / "debian-history.jsonl"
RESULTS_DIR = REPO_ROOT / "evals" / "results"
TYPES = ("PERSON", "ORG", "GPE")

console = Console()


@dataclass(frozen=True, slots=True)
class Labelled:
    type: str
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Sample:
    sample_id: str
    text: str
    entities: tuple[Labelled, ...]


@dataclass(frozen=True, slots=True)
class Scores:
    gold: int
    predicted: int
    matched_gold: int
    matched_predicted: int

    @property
    def precision(self) -> float:
        return self.matched_predicted / self.predicted if self.predicted else 0.0

    @property
    def recall(self) -> float:
        return self.matched_gold / self.gold if self.gold else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def summary(self) -> dict[str, float | int]:
        return {
            **asdict(self),
            "precision": round(self.precision, 4),
            "recall": round(self.recall, 4),
            "f1": round(self.f1, 4),
        }


def load_gold(path: Path) -> list[Sample]:
    """The samples, each gold span checked against its text."""
    samples = []
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        text = row["text"]
        entities = []
        for ent in row["entities"]:
            if text[ent["start"] : ent["end"]] != ent["text"]:
                raise ValueError(
                    f"{path} {row['id']}: offsets {ent['start']}..{ent['end']} are not {ent['text']!r}"
                )
            entities.append(Labelled(ent["type"], ent["start"], ent["end"]))
        samples.append(Sample(row["id"], text, tuple(entities)))
    return samples


def _overlaps(first: Labelled, second: Labelled) -> bool:
    return first.start < second.end and second.start < first.end


def _matches(gold: Sequence[Labelled], predicted: Sequence[Labelled], lenient: bool) -> tuple[int, int]:
    """(gold entities matched, predictions matched) in one text. Exact: the same (type, span) on
    both sides. Lenient: one to one, each prediction in text order takes the first unmatched gold
    entity of its type that it overlaps."""
    if not lenient:
        common = set(gold) & set(predicted)
        return len(common), len(common)
    taken: set[int] = set()
    matched_predicted = 0
    for guess in sorted(predicted, key=lambda e: (e.start, e.end, e.type)):
        for i, truth in enumerate(gold):
            if i not in taken and truth.type == guess.type and _overlaps(truth, guess):
                taken.add(i)
                matched_predicted += 1
                break
    return len(taken), matched_predicted


def score(
    gold: Sequence[Sequence[Labelled]], predicted: Sequence[Sequence[Labelled]], *, lenient: bool
) -> dict[str, Scores]:
    """Scores per type of TYPES and "all" (micro-averaged) over texts paired in order.
    Predictions of other types are ignored."""
    totals: dict[str, list[int]] = {t: [0, 0, 0, 0] for t in (*TYPES, "all")}
    for gold_entities, predicted_entities in zip(gold, predicted, strict=True):
        for type_ in TYPES:
            truth = [e for e in gold_entities if e.type == type_]
            guesses = [e for e in predicted_entities if e.type == type_]
            matched_gold, matched_predicted = _matches(truth, guesses, lenient)
            for key in (type_, "all"):
                counts = totals[key]
                counts[0] += len(truth)
                counts[1] += len(guesses)
                counts[2] += matched_gold
                counts[3] += matched_predicted
    return {key: Scores(*counts) for key, counts in totals.items()}


def print_table(results: dict[str, dict[str, Scores]], title: str) -> None:
    table = Table(title=title)
    for col in ("match", "type", "gold", "predicted", "precision", "recall", "F1"):
        table.add_column(col, justify="left" if col in ("match", "type") else "right")
    for match, by_type in results.items():
        for type_, s in by_type.items():
            table.add_row(
                match,
                type_,
                str(s.gold),
                str(s.predicted),
                f"{s.precision:.3f}",
                f"{s.recall:.3f}",
                f"{s.f1:.3f}",
            )
        table.add_section()
    console.print(table)


def plot(results: dict[str, dict[str, Scores]], title: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results), figsize=(6 * len(results), 4), squeeze=False, sharey=True)
    for ax, (match, by_type) in zip(axes[0], results.items(), strict=True):
        names = list(by_type)
        for j, metric in enumerate(("precision", "recall", "f1")):
            xs = [i + (j - 1) * 0.27 for i in range(len(names))]
            ax.bar(xs, [getattr(by_type[n], metric) for n in names], 0.27, label=metric)
        ax.set_xticks(range(len(names)), [f"{n}\n(n={by_type[n].gold})" for n in names])
        ax.set_ylim(0, 1.15)
        ax.grid(axis="y", alpha=0.3)
        ax.set_title(f"{match} match")
        ax.legend(fontsize=8, loc="upper center", ncol=3)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--gold", type=Path, default=GOLD)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = parser.parse_args()

    cfg = load_config().entities
    samples = load_gold(args.gold)
    recognizer = EntityRecognizer(cfg)
    started = time.monotonic()
    found = recognizer.recognize_spans([s.text for s in samples])
    elapsed = time.monotonic() - started
    predicted = [[Labelled(span.label, span.start, span.end) for span in spans] for spans in found]
    gold = [list(s.entities) for s in samples]
    results = {
        "exact": score(gold, predicted, lenient=False),
        "lenient": score(gold, predicted, lenient=True),
    }
    title = f"NER {cfg.model} on {args.gold.name} ({len(samples)} texts, {sum(map(len, gold))} entities)"
    print_table(results, title)

    args.out.mkdir(parents=True, exist_ok=True)
    report: dict[str, Any] = {
        "model": recognizer.identity,
        "gold": str(args.gold.relative_to(REPO_ROOT) if args.gold.is_relative_to(REPO_ROOT) else args.gold),
        "texts": len(samples),
        "elapsed_s": round(elapsed, 2),
        "scores": {match: {t: s.summary() for t, s in by_type.items()} for match, by_type in results.items()},
        "errors": [
            {
                "id": sample.sample_id,
                "missed": sorted(
                    sample.text[e.start : e.end] + f" ({e.type})" for e in set(sample.entities) - set(guesses)
                ),
                "spurious": sorted(
                    sample.text[e.start : e.end] + f" ({e.type})"
                    for e in set(guesses) - set(sample.entities)
                    if e.type in TYPES
                ),
            }
            for sample, guesses in zip(samples, predicted, strict=True)
        ],
    }
    (args.out / "ner-latest.json").write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    plot(results, title, args.out / "ner-latest.png")
    console.print(f"wrote {args.out / 'ner-latest.json'} and ner-latest.png")


if __name__ == "__main__":
    main()
