"""embedding.runtime = "onnx": the bundled model exported to ONNX gives today's (torch) vectors, the
same top-10 neighbours, and a missing or stale export falls back to torch."""

from __future__ import annotations

import importlib.util
import json
import logging
import re
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from evaluation import REPO_ROOT
from tribrid import embedding
from tribrid.config import EmbeddingConfig, TriBridConfig
from tribrid.embedding import LocalEmbedder, Vectors
from tribrid.onnx_embedding import (
    OnnxEmbedder,
    _fresh,
    export_model,
    local_embedder,
    model_dir,
    quantized_path,
)
from tribrid.resources import Resources

pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")

# one thread: on a busy 2-core machine two torch threads are much slower
CFG = EmbeddingConfig(runtime="onnx", num_threads=1)
LONG = "def f(x):\n" + "    total = compute(x, 'value', [1, 2, 3]) + other.attribute\n" * 60


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return export_model(tmp_path_factory.mktemp("onnx") / "model.onnx", model_dir(CFG))


@pytest.fixture(scope="module")
def torch_embedder() -> LocalEmbedder:
    return LocalEmbedder(CFG)


@pytest.fixture(scope="module")
def onnx_embedder(exported: Path) -> OnnxEmbedder:
    return OnnxEmbedder(CFG, exported, model_dir(CFG))


def _close(a: Vectors, b: Vectors) -> None:
    assert a.shape == b.shape
    assert np.abs(a - b).max() < 1e-5
    assert (a * b).sum(axis=1).min() > 0.99999


def test_vectors_equal_torch(
    torch_embedder: LocalEmbedder, onnx_embedder: OnnxEmbedder, exported: Path
) -> None:
    texts = [
        "how do I read a config file",
        "Zürich Altstadt 读取文件",
        "",
        "   padded   with spaces  ",
        LONG,  # far past max_seq_length: truncated alike
        "BadParameter",
    ]
    assert onnx_embedder.name == torch_embedder.name and onnx_embedder.dim == torch_embedder.dim == 384
    want = torch_embedder.embed_sync(texts)
    got = onnx_embedder.embed_sync(texts)  # one padded batch of mixed lengths
    assert got.dtype == np.float32
    _close(got, want)
    _close(np.vstack([onnx_embedder.embed_sync([t]) for t in texts]), want)  # alone, as queries are
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    # more texts than batch_size: sorted into batches and put back in order
    small = OnnxEmbedder(CFG.model_copy(update={"batch_size": 2}), exported, model_dir(CFG))
    _close(small.embed_sync(texts), want)


def _click_chunks(limit: int) -> list[str]:
    spec = importlib.util.find_spec("click")
    assert spec and spec.origin
    chunks: list[str] = []
    for path in sorted(Path(spec.origin).parent.glob("*.py")):
        parts = re.split(r"\n(?=[ \t]*def[ \t])", path.read_text())
        chunks.extend(p.strip()[:1200] for p in parts if len(p.strip()) > 20)
    return chunks[:limit]


def test_top10_identical(torch_embedder: LocalEmbedder, onnx_embedder: OnnxEmbedder) -> None:
    lines = (REPO_ROOT / "evals/sets/docstring.jsonl").read_text().splitlines()
    questions = [json.loads(line)["query"] for line in lines[:40]]
    chunks = torch_embedder.embed_sync(_click_chunks(100))
    today = np.vstack([torch_embedder.embed_sync([q]) for q in questions])
    onnx = np.vstack([onnx_embedder.embed_sync([q]) for q in questions])
    for want, got in zip(today, onnx, strict=True):
        assert list(np.argsort(-(chunks @ got), kind="stable")[:10]) == list(
            np.argsort(-(chunks @ want), kind="stable")[:10]
        )


async def test_async_embed(onnx_embedder: OnnxEmbedder) -> None:
    assert (await onnx_embedder.embed([])).shape == (0, 384)
    one = await onnx_embedder.embed(["open a file lazily"])
    assert one.shape == (1, 384)
    assert np.array_equal(one, onnx_embedder.embed_sync(["open a file lazily"]))


def test_the_exported_file_is_used(exported: Path) -> None:
    assert isinstance(local_embedder(CFG.model_copy(update={"onnx_path": str(exported)})), OnnxEmbedder)


def test_missing_or_stale_file_falls_back_to_torch(
    exported: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="tribrid.onnx_embedding"):
        missing = local_embedder(CFG.model_copy(update={"onnx_path": str(tmp_path / "none.onnx")}))
    assert isinstance(missing, LocalEmbedder)
    assert "using torch" in caplog.text
    # an export of another model (the sidecar's fingerprint differs): not used
    stale = tmp_path / "stale.onnx"
    stale.write_bytes(exported.read_bytes())
    (tmp_path / "stale.onnx.json").write_text(json.dumps({"fingerprint": "0" * 64}))
    assert isinstance(local_embedder(CFG.model_copy(update={"onnx_path": str(stale)})), LocalEmbedder)


@pytest.fixture(scope="module")
def quantized(exported: Path) -> Path:
    return quantized_path(exported)  # written by the export


def test_the_export_is_fused_and_an_unfused_one_is_used_not_current(exported: Path, tmp_path: Path) -> None:
    """One Attention op per layer (onnxruntime's BERT fusions; its vectors equal torch's:
    test_vectors_equal_torch). An export from before the fusions still embeds (same vectors), and
    is not current for `make onnx-model`, which makes it again."""
    sidecar = json.loads((exported.parent / "model.onnx.json").read_text())
    assert sidecar["fused"]["Attention"] == 6 and sidecar["fused"]["SkipLayerNormalization"] == 12
    ops = {node.op_type for node in onnx.load(str(exported)).graph.node}
    assert "Attention" in ops and "Softmax" not in ops
    assert _fresh(exported, model_dir(CFG), fused=True)
    older = tmp_path / "older.onnx"
    older.write_bytes(exported.read_bytes())
    (tmp_path / "older.onnx.json").write_text(json.dumps({k: v for k, v in sidecar.items() if k != "fused"}))
    assert isinstance(local_embedder(CFG.model_copy(update={"onnx_path": str(older)})), OnnxEmbedder)
    assert not _fresh(older, model_dir(CFG), fused=True)


def test_the_int8_copy_embeds_near_the_full_model(exported: Path, quantized: Path) -> None:
    """vector.query_model = "int8": each question's vector within cosine 0.98 of the full model's
    (0.99 on average), not equal to it, and a copy a third the size of the full model's matrices."""
    assert quantized == quantized_path(exported) and quantized.name == "model.int8.onnx"
    lines = (REPO_ROOT / "evals/sets/docstring.jsonl").read_text().splitlines()
    questions = [json.loads(line)["query"] for line in lines[:40]]
    cfg = CFG.model_copy(update={"onnx_path": str(exported)})
    full, int8 = local_embedder(cfg), local_embedder(cfg, quantized=True)
    assert isinstance(full, OnnxEmbedder) and isinstance(int8, OnnxEmbedder)
    assert int8.name == full.name and int8.dim == 384
    want = np.vstack([full.embed_sync([q]) for q in questions])
    got = np.vstack([int8.embed_sync([q]) for q in questions])
    cosine = (want * got).sum(axis=1)
    assert cosine.min() > 0.98 and cosine.mean() > 0.99
    assert not np.allclose(want, got, atol=1e-4)
    assert quantized.stat().st_size < exported.stat().st_size


def test_a_missing_int8_copy_falls_back_to_the_full_model(
    exported: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    alone = tmp_path / "alone.onnx"
    alone.write_bytes(exported.read_bytes())
    (tmp_path / "alone.onnx.json").write_text((exported.parent / "model.onnx.json").read_text())
    cfg = CFG.model_copy(update={"onnx_path": str(alone)})
    with caplog.at_level(logging.WARNING, logger="tribrid.onnx_embedding"):
        embedder = local_embedder(cfg, quantized=True)
    assert isinstance(embedder, OnnxEmbedder)
    assert "using the full model" in caplog.text
    full = local_embedder(cfg)
    assert isinstance(full, OnnxEmbedder)
    text = ["open a file lazily"]
    assert np.array_equal(embedder.embed_sync(text), full.embed_sync(text))


@pytest.mark.parametrize("embedding", [{"provider": "openai"}, {"runtime": "torch"}])
def test_int8_questions_need_the_local_onnx_model(embedding: dict[str, str]) -> None:
    assert TriBridConfig(vector={"query_model": "int8"}).vector.query_model == "int8"
    with pytest.raises(ValidationError, match=r"vector.query_model = 'int8' .* embedding.provider = 'local'"):
        TriBridConfig(vector={"query_model": "int8"}, embedding=embedding)


def test_the_vector_legs_question_threads_give_the_same_vectors(
    exported: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`vector.query_threads` runs questions on their own thread count (the indexer keeps
    `embedding.num_threads`): a separate model in the process, the same vectors to the bit."""
    monkeypatch.setattr(embedding, "_shared", {})  # the process's models, made afresh here
    embedding_cfg = {"runtime": "onnx", "num_threads": 2, "onnx_path": str(exported)}
    cfg = TriBridConfig.model_validate({"embedding": embedding_cfg, "vector": {"query_threads": 1}})
    resources = Resources(cfg)
    questions, passages = resources.embedder(threads=cfg.vector.query_threads), resources.embedder()
    assert isinstance(questions, OnnxEmbedder) and isinstance(passages, OnnxEmbedder)
    assert questions is not passages
    assert questions._session.get_session_options().intra_op_num_threads == 1
    assert passages._session.get_session_options().intra_op_num_threads == 2
    texts = ["how do I read a file line by line", "Context.invoke with keyword arguments"]
    assert np.array_equal(questions.embed_sync(texts), passages.embed_sync(texts))
