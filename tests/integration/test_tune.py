"""`tribrid tune` end to end against the test stack: judged questions written from the sample corpus's
own chunks, the legs' lists fetched once, the gateway's answer re-fused offline, and a snippet that
loads as the fusion section."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from evaluation.tune import TuneArgs, tune
from tests.stack import SAMPLE_CORPUS, Stack
from tribrid.config import FusionConfig, TriBridConfig
from tribrid.v1 import indexer_pb2


def _config(stack: Stack) -> TriBridConfig:
    """The stack's config, every service at the port it runs on."""
    update = {f"{name}_address": f"127.0.0.1:{server.port}" for name, server in stack.servers.items()}
    return stack.cfg.model_copy(update={"services": stack.cfg.services.model_copy(update=update)})


async def _judged(stack: Stack, tmp_path: Path) -> tuple[Path, Path]:
    """Each named definition asked for by its name (chunk ids) and, in another file, by a question
    about what it is (file and line spans)."""
    pool = await stack.resources.pool()
    rows = await pool.fetch(
        "SELECT chunk_id, file_path, start_line, end_line, symbol FROM chunks"
        " WHERE corpus_id = $1 AND symbol <> '' ORDER BY file_path, start_line",
        SAMPLE_CORPUS,
    )
    assert len(rows) >= 8
    by_name = tmp_path / "names.jsonl"
    by_name.write_text(
        "".join(
            json.dumps({"query": row["symbol"].rsplit(".", 1)[-1], "relevant_chunk_ids": [row["chunk_id"]]})
            + "\n"
            for row in rows
        )
    )
    by_span = tmp_path / "questions.jsonl"
    by_span.write_text(
        "".join(
            json.dumps(
                {
                    "query": f"where is {row['symbol'].rsplit('.', 1)[-1].replace('_', ' ')} defined",
                    "relevant": [
                        {
                            "path": row["file_path"],
                            "start_line": row["start_line"],
                            "end_line": row["end_line"],
                        }
                    ],
                }
            )
            + "\n"
            for row in rows
        )
    )
    return by_name, by_span


async def test_tune_end_to_end(
    stack: Stack, sample_corpus: indexer_pb2.IndexProgress, tmp_path: Path
) -> None:
    by_name, by_span = await _judged(stack, tmp_path)
    out = tmp_path / "out" / "tuned.toml"
    args = TuneArgs(
        files=[by_name, by_span],
        corpora=[SAMPLE_CORPUS],
        out=out,
        held_out=[by_span],
        held_out_corpora=[SAMPLE_CORPUS],
        folds=3,
        step=0.25,
        rrf_ks=[10.0],
        min_queries=3,
        check=4,
    )
    cfg = _config(stack)
    result = await tune(cfg, args)

    # the offline re-fusion is the gateway's own answer (4 questions of the tuning files, 4 held out)
    same, asked, differed = result.gateway_check
    assert asked == 8 and same == asked, differed
    assert result.errors == 0
    assert len(result.cv.folds) == 3
    assert sum(f.queries for f in result.cv.folds) == len(result.kinds)
    assert all(0.0 <= v <= 1.0 for v in (*result.cv.before, *result.cv.after))
    # the names are found: the running config already answers most of them
    assert max(result.cv.before) == 1.0

    text = out.read_text()
    assert text == result.snippet
    loaded = FusionConfig(**tomllib.loads(text)["fusion"])
    assert set(loaded.query_kind_weights) == {"structural", "identifier", "natural", "mixed"}
    kept = result.learned.kept
    for kind in kept:  # a kind with too few questions keeps the running weights
        running = cfg.fusion.query_kind_weights[kind]  # type: ignore[index]
        assert loaded.query_kind_weights[kind] == running  # type: ignore[index]

    report = json.loads((out.parent / "tuned.json").read_text())
    assert len(report["folds"]) == 3 and report["held_out"][0]["name"] == "questions.jsonl"
    assert (out.parent / "tuned.png").stat().st_size > 0
