"""Named-entity extraction throughput next to the embedding rate, on the same document chunks.

The chunks are those the indexer makes of real documents (default: the dataset descriptions
scikit-learn ships, the demo's document collection). NER reads a chunk's content (what the
indexer will analyse), the embedder its embedding text; both run in this process, one after
the other, each `--runs` times after a warm-up; the median run is reported. NER runs on one
core (spaCy's greedy parser is single-threaded); the embedder with embedding.num_threads.

    make bench-ner
    .venv/bin/python -m bench.bench_ner --path some/docs --runs 5

Prints a table and writes bench/results/bench_ner.json and bench_ner.png.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from bench.report import write_report
from evaluation import REPO_ROOT
from services.indexer.chunker import chunk_file
from services.indexer.doc_chunks import DOCUMENT_CHUNK_KIND
from services.indexer.walker import SourceFile, walk_corpus
from tribrid.config import load_config
from tribrid.embedding import LocalEmbedder
from tribrid.models import Chunk
from tribrid.ner import EntityRecognizer

RESULTS = REPO_ROOT / "bench" / "results"
console = Console()


def default_path() -> Path:
    spec = importlib.util.find_spec("sklearn")  # located, not imported
    if spec is None or spec.origin is None:
        raise SystemExit("scikit-learn is missing: pass --path to a directory of documents")
    return Path(spec.origin).resolve().parent / "datasets" / "descr"


def document_chunks(root: Path) -> list[Chunk]:
    cfg = load_config()
    chunks: list[Chunk] = []
    for item in walk_corpus(root, cfg.indexer):
        if isinstance(item, SourceFile):
            chunks.extend(
                c for c in chunk_file("bench", item, cfg.indexer).chunks if c.kind == DOCUMENT_CHUNK_KIND
            )
    return chunks


def timed_runs(work: Callable[[], object], runs: int) -> list[float]:
    work()  # warm-up: loading, first allocations
    seconds = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        seconds.append(time.perf_counter() - started)
    return seconds


def rates(name: str, texts: Sequence[str], seconds: list[float], threads: int) -> dict[str, Any]:
    median = statistics.median(seconds)
    return {
        "what": name,
        "threads": threads,
        "chunks": len(texts),
        "chars": sum(map(len, texts)),
        "runs_s": [round(s, 3) for s in seconds],
        "median_s": round(median, 3),
        "chunks_per_s": round(len(texts) / median, 1),
        "chars_per_s": round(sum(map(len, texts)) / median),
    }


def run(root: Path, runs: int) -> dict[str, Any]:
    cfg = load_config()
    chunks = document_chunks(root)
    if not chunks:
        raise SystemExit(f"no document chunks under {root}")
    contents = [c.content for c in chunks]
    embed_texts = [c.embed_text for c in chunks]

    recognizer = EntityRecognizer(cfg.entities)
    started = time.perf_counter()
    recognizer.recognize(contents[:1])  # loads the pipeline
    load_s = time.perf_counter() - started
    ner = rates(
        "NER (spaCy, ner only)", contents, timed_runs(lambda: recognizer.recognize(contents), runs), 1
    )
    ner["load_s"] = round(load_s, 2)
    ner["mentions"] = sum(m.count for ms in recognizer.recognize(contents) for m in ms)

    embedder = LocalEmbedder(cfg.embedding)
    embedding = rates(
        f"embedding ({cfg.embedding.model_name})",
        embed_texts,
        timed_runs(lambda: embedder.embed_sync(embed_texts), runs),
        cfg.embedding.num_threads,
    )
    return {
        "path": str(root),
        "model": recognizer.identity,
        "files": len({c.file_path for c in chunks}),
        "runs": runs,
        "ner": ner,
        "embedding": embedding,
        # Indexing embeds every chunk and (for documents) runs NER on it: NER adds this share of
        # the embedding time when the two run one after the other.
        "ner_time_vs_embedding": round(ner["median_s"] / embedding["median_s"], 3),
    }


def show(result: dict[str, Any]) -> None:
    table = Table(
        title=f"NER vs embedding on {result['ner']['chunks']} document chunks of {result['files']} files "
        f"({result['path']}), median of {result['runs']} runs"
    )
    for col in ("what", "threads", "chunks", "chars", "median s", "chunks/s", "chars/s"):
        table.add_column(col, justify="left" if col == "what" else "right")
    for key in ("ner", "embedding"):
        r = result[key]
        table.add_row(
            r["what"],
            str(r["threads"]),
            str(r["chunks"]),
            str(r["chars"]),
            f"{r['median_s']:.2f}",
            f"{r['chunks_per_s']:.1f}",
            f"{r['chars_per_s']:,}",
        )
    console.print(table)
    console.print(
        f"NER pipeline load {result['ner']['load_s']} s; {result['ner']['mentions']} mentions kept; "
        f"NER time = {result['ner_time_vs_embedding']:.2f} x the embedding time"
    )


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [result["ner"]["what"], result["embedding"]["what"]]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 4))
    ax1.bar(names, [result["ner"]["chunks_per_s"], result["embedding"]["chunks_per_s"]], color=["C0", "C1"])
    ax1.set_ylabel("chunks/s")
    ax1.set_title(f"{result['ner']['chunks']} document chunks")
    ax2.bar(names, [result["ner"]["chars_per_s"], result["embedding"]["chars_per_s"]], color=["C0", "C1"])
    ax2.set_ylabel("chars/s")
    ax2.set_title(f"median of {result['runs']} runs")
    for ax in (ax1, ax2):
        ax.tick_params(axis="x", labelsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--path", type=Path, default=None, help="documents (default: scikit-learn's descr)")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    result = run(args.path or default_path(), args.runs)
    show(result)
    write_report(RESULTS, "bench_ner", result, plot, console)


if __name__ == "__main__":
    main()
