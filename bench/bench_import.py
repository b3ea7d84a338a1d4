"""`make bench-import`: import a 10k-node, 30k-edge graph into a corpus of about 10k document
chunks and link its names in every chunk, through a real stack (embedded stores, one process per
service), timed from the request to the committed generation.

The documents are real prose nobody here wrote: the docstrings of installed libraries (numpy,
scipy, sympy, scikit-learn, networkx, rich), one Markdown file per module with a section per
documented function or class, in a fixed order until the chunk count is reached. The graph's nodes
are names that occur in that prose (capitalised words, identifiers and long words, most frequent first), each
with an alias; the edges are seeded pseudo-random typed relations with properties. Indexing uses
the bench-only embedder (`bench-random`) and no NER, so the first index takes minutes, not an
hour; neither is part of what is timed (the import re-links and re-writes the graph, it embeds
nothing and the named entities are cached by text).

Prints a table and writes bench/results/bench-import.json and .png; the stack stays under
--state-dir (default /tmp/tribrid-bench-import) and a rerun skips the first index.

    make bench-import
    .venv/bin/python -m bench.bench_import --chunks 10000 --nodes 10000 --edges 30000
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import importlib.util
import json
import random
import re
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import grpc
from rich.console import Console
from rich.table import Table

from bench.procstack import ProcessStack, stack_config, vm_hwm_mb
from bench.report import write_report
from evaluation import REPO_ROOT
from tribrid.config import BENCH_SWITCH_ENV
from tribrid.v1 import indexer_pb2, indexer_pb2_grpc

RESULTS = REPO_ROOT / "bench" / "results"
CORPUS = "bench-import"
SOURCES = ("numpy", "scipy", "sympy", "sklearn", "networkx", "rich")
RELATIONS = ("MEMBER_OF", "PART_OF", "RELATED_TO_TOPIC", "USES", "LEADER_OF")
# About this many characters of prose per chunk (documents are chunked within 48..128 tokens).
CHARS_PER_CHUNK = 420
ENV = {
    BENCH_SWITCH_ENV: "1",
    "TRIBRID_EMBEDDING__PROVIDER": "bench-random",
    "TRIBRID_ENTITIES__ENABLED": "false",
}
# Names: capitalised words and CamelCase, snake_case identifiers, then any word of 7+ letters.
_NAME = re.compile(r"\b[A-Z][a-z]{3,}(?:[A-Z][a-z]+)*\b|\b[a-z]+_[a-z_]{3,}\b|\b[a-z]{7,}\b")
console = Console(width=max(Console().width, 120))


def docstring_files(chunks: int) -> dict[str, str]:
    """Path -> Markdown text of docstrings, until about `chunks` chunks' worth of prose."""
    files: dict[str, str] = {}
    budget = chunks * CHARS_PER_CHUNK
    for package in SOURCES:
        spec = importlib.util.find_spec(package)
        if spec is None or spec.origin is None:
            continue
        for path in sorted(Path(spec.origin).parent.rglob("*.py")):
            try:
                tree = ast.parse(path.read_text(encoding="utf-8"))
            except (SyntaxError, UnicodeDecodeError, ValueError):
                continue
            sections = [
                f"## {node.name}\n\n{doc.strip()}\n"
                for node in ast.walk(tree)
                if isinstance(node, ast.FunctionDef | ast.ClassDef)
                and (doc := ast.get_docstring(node))
                and len(doc) > 200
            ]
            if not sections:
                continue
            text = f"# {package} {path.stem}\n\n" + "\n".join(sections)
            files[f"{package}/{path.relative_to(Path(spec.origin).parent).with_suffix('.md')}"] = text
            budget -= len(text)
            if budget <= 0:
                return files
    return files


def graph_lines(texts: list[str], nodes: int, edges: int, seed: int = 7) -> bytes:
    """JSON Lines: the `nodes` most frequent names of the prose, each with an alias, and `edges`
    seeded random typed edges with properties."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(_NAME.findall(text))
    names = [name for name, _ in counts.most_common(nodes)]
    rng = random.Random(seed)
    lines: list[dict[str, object]] = [
        {"id": f"n{i}", "type": rng.choice(("person", "organization", "topic")), "name": name,
         "aliases": [name.upper()], "properties": {"rank": i}}
        for i, name in enumerate(names)
    ]  # fmt: skip
    seen: set[tuple[int, str, int]] = set()
    while len(seen) < edges:
        a, b = rng.randrange(len(names)), rng.randrange(len(names))
        if a != b:
            seen.add((a, rng.choice(RELATIONS), b))
    lines += [
        {
            "source": f"n{a}",
            "relation": rel,
            "target": f"n{b}",
            "properties": {"weight": round(rng.random(), 3)},
        }
        for a, rel, b in sorted(seen)
    ]
    return "\n".join(json.dumps(line) for line in lines).encode()


async def import_graph(stack: ProcessStack, content: bytes) -> tuple[indexer_pb2.IndexProgress, float]:
    request = indexer_pb2.ImportGraphRequest(corpus_id=CORPUS, content=content, source="bench.jsonl")
    options = [("grpc.max_send_message_length", 64 * 1024 * 1024)]
    last = indexer_pb2.IndexProgress()
    started = time.perf_counter()
    async with grpc.aio.insecure_channel(stack.address("indexer"), options=options) as channel:
        async for event in indexer_pb2_grpc.IndexerStub(channel).ImportGraph(request, timeout=900):
            last = event
    return last, time.perf_counter() - started


async def run(args: argparse.Namespace) -> dict[str, Any]:
    state = Path(args.state_dir)
    root = state / "corpus"
    if not (root / ".complete").is_file():
        for rel, text in docstring_files(args.chunks).items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
        (root / ".complete").write_text("")
    texts = [p.read_text(encoding="utf-8") for p in sorted(root.rglob("*.md"))]
    content = graph_lines(texts, args.nodes, args.edges)
    stack = ProcessStack(stack_config(state / "stack", "tribrid_import", "tribrid_import_"), env=ENV)
    stack.stores_up()
    try:
        await stack.start_serving("indexer")
        first = await stack.index(CORPUS, root)
        if first.done:
            console.print(
                f"indexed {first.chunks_total:,} chunks of {first.files_seen:,} files"
                f" in {first.elapsed_s:.0f} s"
            )
        # a fresh indexer, so its peak (the kernel's VmHWM) is the import's, not the first index's
        stack.stop("indexer")
        await stack.start_serving("indexer")
        last, wall = await import_graph(stack, content)
        peak_mb = vm_hwm_mb(stack.procs["indexer"].pid)
    finally:
        stack.stop_all()
        stack.stores_down()
    return {
        "created": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "measured_with": "bench-random embeddings, NER off (neither is part of an import)",
        "chunks": last.chunks_total,
        "files": last.files_seen,
        "graph_bytes": len(content),
        "nodes": last.imported_nodes,
        "edges": last.imported_edges,
        "linked_mentions": last.linked_mentions,
        "entities": last.entities,
        "relationships": last.relationships,
        "import_s": round(wall, 2),
        "stage_seconds": {k: round(v, 2) for k, v in sorted(last.stage_seconds.items())},
        "indexer_peak_rss_mb": round(peak_mb),
        "target_s": 60,
        "target_met": wall <= 60,
    }


def show(result: dict[str, Any]) -> None:
    table = Table(title=f"bench-import, {result['created']} ({result['measured_with']})")
    for column in ("chunks", "nodes", "edges", "MENTIONS linked", "import s", "target", "indexer peak RSS"):
        table.add_column(column, justify="right")
    table.add_row(
        f"{result['chunks']:,}",
        f"{result['nodes']:,}",
        f"{result['edges']:,}",
        f"{result['linked_mentions']:,}",
        f"{result['import_s']:.1f}",
        f"≤ {result['target_s']} s: {'met' if result['target_met'] else 'NOT met'}",
        f"{result['indexer_peak_rss_mb']} MiB",
    )
    console.print(table)
    console.print("stages s: " + ", ".join(f"{k} {v}" for k, v in result["stage_seconds"].items()))


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stages = result["stage_seconds"]
    fig, ax = plt.subplots(figsize=(8, 4))
    ax.barh(list(stages), list(stages.values()))
    ax.set_xlabel("seconds")
    ax.set_title(
        f"Import of {result['nodes']:,} nodes / {result['edges']:,} edges over {result['chunks']:,} chunks:"
        f" {result['import_s']:.1f} s"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--edges", type=int, default=30_000)
    parser.add_argument("--state-dir", default="/tmp/tribrid-bench-import")
    args = parser.parse_args()
    result = asyncio.run(run(args))
    show(result)
    write_report(RESULTS, "bench-import", result, plot, console)


if __name__ == "__main__":
    main()
