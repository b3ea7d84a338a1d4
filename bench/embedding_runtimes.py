"""CPU and wall time of one query embedding on each runtime of the bundled model, and whether its
vectors are today's: `python -m bench.embedding_runtimes [--calls 300]`.

Candidates: today's path (LocalEmbedder: SentenceTransformer.encode) at 1 and 2 threads; raw torch
(inference_mode, mean pooling + normalize) with eager and sdpa attention, and jit trace + freeze;
onnxruntime fp32 (tribrid.onnx_embedding, exported here into a temporary folder) at 1 and 2 threads;
onnxruntime with dynamic int8 quantization (for information).

Timing: batches of 1 and of 8 real questions, median wall and CPU (time.process_time: every thread
of the process) over `--calls` calls, candidates interleaved in rounds (the machine is shared).
Quality, against today's path: max abs difference and min cosine over every text (questions alone,
code chunks in batches of 64), and for how many questions the top-10 chunks (cosine against today's
chunk vectors) are identical, same ids in the same order, when only the question is the candidate's.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import numpy as np

from evaluation import REPO_ROOT
from tribrid.config import EmbeddingConfig
from tribrid.embedding import LocalEmbedder, Vectors
from tribrid.onnx_embedding import OnnxEmbedder, export_model, model_dir, pooled_model

PACKAGES = ("click", "httpx", "starlette", "pydantic_settings", "typer", "rich")


def questions(limit: int) -> list[str]:
    """Real questions: the docstring set's and the how-to sets' (5-30 words)."""
    texts: list[str] = []
    for rel in ("evals/sets/docstring.jsonl", "evals/howto/questions.jsonl", "evals/howto/questions-2.jsonl"):
        for line in (REPO_ROOT / rel).read_text().splitlines():
            if line.strip():
                texts.append(json.loads(line)["query"])
    return list(dict.fromkeys(texts))[:limit]


def code_chunks(limit: int) -> list[str]:
    """Installed packages' modules split before each `def`: chunks of every length, some far past
    the 256-token truncation."""
    import importlib.util

    chunks: list[str] = []
    for package in PACKAGES:
        spec = importlib.util.find_spec(package)
        if not spec or not spec.origin:
            continue
        for path in sorted(Path(spec.origin).parent.glob("*.py")):
            parts = re.split(r"\n(?=[ \t]*(?:async[ \t]+)?def[ \t])", path.read_text(errors="replace"))
            chunks.extend(p.strip() for p in parts if len(p.strip()) > 20)
    return chunks[:limit]


Encode = Callable[[Sequence[str]], Vectors]


@dataclass
class Candidate:
    name: str
    encode: Encode
    threads: int  # torch threads to set before each use (ORT sessions keep their own)
    wall1: list[float] = field(default_factory=list)
    cpu1: list[float] = field(default_factory=list)
    wall8: list[float] = field(default_factory=list)
    cpu8: list[float] = field(default_factory=list)
    note: str = ""


def _tokenizer(folder: Path, max_len: int) -> Any:
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.enable_truncation(max_len)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    return tokenizer


def torch_encoder(module: Any, tokenizer: Any, batch_size: int) -> Encode:
    import torch

    def run(texts: Sequence[str]) -> Vectors:
        encodings = tokenizer.encode_batch(list(texts)) if len(texts) > 1 else [tokenizer.encode(texts[0])]
        ids = torch.tensor([e.ids for e in encodings])
        mask = torch.tensor([e.attention_mask for e in encodings])
        with torch.inference_mode():
            return np.asarray(module(ids, mask).numpy(), dtype=np.float32)

    def encode(texts: Sequence[str]) -> Vectors:
        if len(texts) <= batch_size:
            return run(texts)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out = np.empty((len(texts), 384), dtype=np.float32)
        for start in range(0, len(order), batch_size):
            rows = order[start : start + batch_size]
            out[rows] = run([texts[i] for i in rows])
        return out

    return encode


def build_candidates(cfg: EmbeddingConfig, workdir: Path) -> tuple[list[Candidate], list[str]]:
    import torch

    notes: list[str] = []
    folder = model_dir(cfg)
    today = LocalEmbedder(cfg.model_copy(update={"num_threads": 1}))
    cands = [
        Candidate("today: ST.encode 1t", today.embed_sync, 1),
        Candidate("today: ST.encode 2t", today.embed_sync, 2),
    ]
    tokenizer = _tokenizer(folder, cfg.max_seq_length)
    texts = questions(300) + code_chunks(2000)
    ours = [tokenizer.encode(t).ids for t in texts]
    theirs = [today._model.tokenize([t])["input_ids"][0].tolist() for t in texts]
    differ = sum(a != b for a, b in zip(ours, theirs, strict=True))
    notes.append(
        f"tokens, tokenizer.json truncated at {cfg.max_seq_length} vs sentence-transformers': "
        f"{differ}/{len(texts)} texts differ"
    )
    for attn in ("eager", "sdpa"):
        module = pooled_model(folder, attn)
        cands.append(Candidate(f"torch {attn} 1t", torch_encoder(module, tokenizer, cfg.batch_size), 1))
    try:
        module = pooled_model(folder, "eager")
        ids = torch.tensor([[101, 2023, 2003, 1037, 3231, 102], [101, 2023, 102, 0, 0, 0]])
        with torch.inference_mode(False), torch.no_grad():
            example = (ids, (ids != 0).long())
            traced = torch.jit.freeze(torch.jit.trace(module, example, check_trace=False))  # type: ignore[no-untyped-call]
        cands.append(Candidate("torch jit+freeze 1t", torch_encoder(traced, tokenizer, cfg.batch_size), 1))
    except Exception as exc:
        notes.append(f"torch jit trace+freeze failed: {type(exc).__name__}: {exc}"[:300])

    fp32 = workdir / "model.onnx"
    start = time.perf_counter()
    export_model(fp32, folder)
    notes.append(f"ONNX export: {time.perf_counter() - start:.1f} s wall, {fp32.stat().st_size / 1e6:.0f} MB")
    for threads in (1, 2):
        ort = OnnxEmbedder(cfg.model_copy(update={"num_threads": threads}), fp32, folder)
        cands.append(Candidate(f"onnxruntime fp32 {threads}t", ort.embed_sync, 1))
    try:
        from onnxruntime.quantization import (  # type: ignore[import-untyped]
            QuantType,
            quantize_dynamic,
        )

        int8 = workdir / "model.int8.onnx"
        start = time.perf_counter()
        quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8)
        notes.append(
            f"int8 quantization: {time.perf_counter() - start:.1f} s, {int8.stat().st_size / 1e6:.0f} MB"
        )
        ort8 = OnnxEmbedder(cfg.model_copy(update={"num_threads": 1}), int8, folder)
        cands.append(Candidate("onnxruntime int8 1t (info)", ort8.embed_sync, 1))
    except Exception as exc:
        notes.append(f"int8 quantization failed: {type(exc).__name__}: {exc}"[:300])
    return cands, notes


def _timed(encode: Encode, texts: Sequence[str]) -> tuple[float, float]:
    w0, c0 = time.perf_counter(), time.process_time()
    encode(texts)
    return (time.perf_counter() - w0) * 1000, (time.process_time() - c0) * 1000


def measure(cands: list[Candidate], qs: list[str], calls: int, rounds: int) -> None:
    import torch

    per_round = max(1, calls // rounds)
    for cand in cands:  # warm up (first calls allocate, ORT plans its buffers)
        torch.set_num_threads(cand.threads)
        for text in qs[:20]:
            cand.encode([text])
        cand.encode(qs[:8])
    cursor = 0
    for _ in range(rounds):
        for cand in cands:
            torch.set_num_threads(cand.threads)
            for i in range(per_round):
                wall, cpu = _timed(cand.encode, [qs[(cursor + i) % len(qs)]])
                cand.wall1.append(wall)
                cand.cpu1.append(cpu)
            for i in range(max(1, per_round // 3)):
                start = ((cursor + i) * 8) % (len(qs) - 8)
                wall, cpu = _timed(cand.encode, qs[start : start + 8])
                cand.wall8.append(wall)
                cand.cpu8.append(cpu)
        cursor += per_round


def top10(chunk_vectors: Vectors, query_vectors: Vectors) -> np.ndarray:
    scores = query_vectors @ chunk_vectors.T
    return np.argsort(-scores, axis=1, kind="stable")[:, :10]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.embedding_runtimes")
    parser.add_argument("--calls", type=int, default=300, help="timed calls of batch 1 per candidate")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--chunks", type=int, default=1700)
    args = parser.parse_args(argv)

    cfg = EmbeddingConfig()
    qs, chunks = questions(args.questions), code_chunks(args.chunks)
    words = [len(q.split()) for q in qs]
    print(
        f"{len(qs)} questions ({min(words)}-{max(words)} words, median {statistics.median(words)}),"
        f" {len(chunks)} code chunks"
    )
    with tempfile.TemporaryDirectory() as tmp:
        cands, notes = build_candidates(cfg, Path(tmp))
        for note in notes:
            print(note)

        import torch

        # today's vectors: each question alone (the hot path), chunks in batches of 64 (the indexer)
        torch.set_num_threads(1)
        today = cands[0].encode
        ref_q = np.vstack([today([q]) for q in qs])
        ref_c = today(chunks)
        ref_top = top10(ref_c, ref_q)
        floor_q = today(qs)
        print(
            "noise floor, today's path on questions in batches of 64 vs alone: max abs diff "
            f"{np.abs(floor_q - ref_q).max():.1e}, top-10 identical "
            f"{int((top10(ref_c, floor_q) == ref_top).all(axis=1).sum())}/{len(qs)}"
        )
        quality: dict[str, tuple[float, float, int]] = {}
        for cand in cands:
            torch.set_num_threads(cand.threads)
            cq = np.vstack([cand.encode([q]) for q in qs])
            cc = cand.encode(chunks)
            diff = max(np.abs(cq - ref_q).max(), np.abs(cc - ref_c).max())
            cos = min((cq * ref_q).sum(1).min(), (cc * ref_c).sum(1).min())
            same = int((top10(ref_c, cq) == ref_top).all(axis=1).sum())
            quality[cand.name] = (float(diff), float(cos), same)

        measure(cands, qs, args.calls, args.rounds)

    med = statistics.median
    header = (
        f"{'candidate':<28} {'b1 wall':>8} {'b1 CPU':>8} {'b8 wall':>8} {'b8 CPU':>8}"
        f" {'max|diff|':>10} {'min cos':>10} {'top-10 same':>12}"
    )
    print(f"\nmedian ms per call ({len(cands[0].wall1)} calls of 1 question, {len(cands[0].wall8)} of 8)")
    print(header)
    print("-" * len(header))
    for cand in cands:
        diff, cos, same = quality[cand.name]
        print(
            f"{cand.name:<28} {med(cand.wall1):8.2f} {med(cand.cpu1):8.2f} {med(cand.wall8):8.2f}"
            f" {med(cand.cpu8):8.2f} {diff:10.1e} {cos:10.7f} {same:>7}/{len(qs)}"
        )


if __name__ == "__main__":
    main()
