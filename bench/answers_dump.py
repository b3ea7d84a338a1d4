"""Every leg's and the gateway's answers over the eval query mix, written canonically (no timings),
with a digest per leg and option variant: run it before and after a change that must not move any
answer, and compare.

    .venv/bin/python -m bench.answers_dump OUT.jsonl            # against the running services
    diff <(jq -c . before.jsonl) <(jq -c . after.jsonl)

Query embeddings computed in different micro-batches differ in the 7th digit (padding changes the
float sums), so for a byte-for-byte comparison start the services with
TRIBRID_VECTOR__QUERY_BATCH_MAX=1 both times.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message
from rich.console import Console
from rich.table import Table

from bench.load import SETS_DIR, search_call
from tribrid.config import load_config
from tribrid.legs import LEG_NAMES
from tribrid.options import set_option
from tribrid.v1 import common_pb2

console = Console()
GATEWAY = "fusion"
# Option variants: settings as `tribrid search -o` takes them; each leg also runs its own knobs.
FUSION_VARIANTS: dict[str, tuple[str, ...]] = {
    "default": (),
    "weighted_z": ("fusion.method=weighted", "fusion.normalization=z_score"),
    "expansion": ("fusion.enable_expansion=true", "fusion.expansion_top_n=3"),
    "knobs": (
        "vector.ef_search=60",
        "sparse.query_mode=phrase",
        "sparse.bm25_k1=0.9",
        "graph.direction=callers",
        "graph.max_hops=1",
    ),
    "weights": (
        "fusion.legs.vector.weight=0.5",
        "fusion.legs.sparse.weight=0.5",
        "fusion.legs.graph.enabled=false",
    ),
}
LEG_KNOBS: dict[str, tuple[str, ...]] = {
    "vector": ("vector.ef_search=60",),
    "sparse": ("sparse.query_mode=phrase", "sparse.bm25_k1=0.9"),
    "graph": ("graph.direction=callers", "graph.max_hops=1"),
}


def query_mix() -> list[tuple[str, str]]:
    manifest = json.loads((SETS_DIR / "manifest.json").read_text())
    mix = []
    for name, info in sorted(manifest["sets"].items()):
        for line in (SETS_DIR / f"{name}.jsonl").read_text(encoding="utf-8").splitlines():
            if line.strip():
                mix.append((str(info["corpus"]), str(json.loads(line)["query"])))
    return mix


def canonical(reply: Message) -> dict[str, Any]:
    body = json_format.MessageToDict(reply, preserving_proto_field_name=True)
    body.pop("took_ms", None)
    for report in body.get("legs", []):
        report.pop("latency_ms", None)
        report.pop("budget_ms", None)
    return body


async def dump(out: Path) -> dict[str, str]:
    cfg = load_config()
    mix = query_mix()
    jobs: list[tuple[str, str, tuple[str, ...], int]] = []
    for leg in LEG_NAMES:
        jobs += [(f"{leg}/default", leg, (), 20), (f"{leg}/knobs", leg, LEG_KNOBS.get(leg, ()), 20)]
    jobs += [(f"{GATEWAY}/{name}", GATEWAY, settings, 10) for name, settings in FUSION_VARIANTS.items()]
    channels = {name: grpc.aio.insecure_channel(cfg.services.address(name)) for name in {j[1] for j in jobs}}
    calls = {name: search_call(name, channel) for name, channel in channels.items()}
    gate = asyncio.Semaphore(8)
    lines: dict[tuple[int, int], str] = {}

    async def one(j: int, i: int) -> None:
        tag, target, settings, top_k = jobs[j]
        corpus, query = mix[i]
        request = common_pb2.SearchRequest(corpus_id=corpus, query=query, top_k=top_k)
        for setting in settings:
            set_option(request.options, setting)
        async with gate:
            try:
                answer: dict[str, Any] = canonical(await calls[target](request, timeout=30))
            except grpc.aio.AioRpcError as err:
                answer = {"error": err.code().name}
        lines[(j, i)] = json.dumps(
            {"tag": tag, "corpus": corpus, "query": query, "answer": answer}, sort_keys=True
        )

    try:
        await asyncio.gather(*(one(j, i) for j in range(len(jobs)) for i in range(len(mix))))
    finally:
        for channel in channels.values():
            await channel.close()
    ordered = [lines[key] for key in sorted(lines)]
    await asyncio.to_thread(out.write_text, "".join(f"{line}\n" for line in ordered))
    digests: dict[str, hashlib._Hash] = {}
    for line in ordered:
        digests.setdefault(json.loads(line)["tag"], hashlib.sha256()).update(line.encode())
    return {tag: digest.hexdigest()[:16] for tag, digest in digests.items()}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("out", type=Path, help="where the answers go (JSON lines)")
    args = parser.parse_args()
    digests = asyncio.run(dump(args.out))
    table = Table("answers", "sha256 (16)", title=f"{args.out}: {len(query_mix())} queries each")
    for tag, digest in digests.items():
        table.add_row(tag, digest)
    console.print(table)


if __name__ == "__main__":
    main()
