"""The local embedding model on onnxruntime: LocalEmbedder's vectors at about half its CPU.

The .onnx file is made ahead of time from the installed model (`export_model`, run by
`python -m tribrid.onnx_embedding export`, i.e. `make onnx-model`), never downloaded and never
at service start. Its graph is the model plus sentence-transformers' mean pooling and
normalization, with onnxruntime's BERT fusions (`fuse`: one Attention op per layer instead of
about twenty small ones), so a call is: tokenize (the model folder's tokenizer.json), one session run.
A sidecar `<file>.json` records a fingerprint of the model folder it was exported from; a missing,
stale or unreadable file makes `local_embedder` fall back to the torch LocalEmbedder with a warning.
Export also writes an int8 copy, `<name>.int8.onnx` (`quantize_model`, from the graph before the
fusions), for the vector leg's questions when `vector.query_model = "int8"`; without it, those are
embedded by the full model.

Export needs torch, transformers and onnx (install time only); running needs only onnxruntime,
tokenizers and numpy.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import logging
import os
import sys
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tribrid.config import EmbeddingConfig
from tribrid.embedding import Embedder, LocalEmbedder, Vectors, bundled_model_path, model_identity

log = logging.getLogger(__name__)

OPSET = 17
INPUTS = ("input_ids", "attention_mask")
OUTPUT = "sentence_embedding"
# The model folder's files that decide the vectors (weights, architecture, tokenizer, pooling).
_FINGERPRINTED = (
    "config.json",
    "model.safetensors",
    "pytorch_model.bin",
    "tokenizer.json",
    "modules.json",
    "1_Pooling/config.json",
)


def model_dir(cfg: EmbeddingConfig) -> Path:
    return Path(cfg.model_path) if cfg.model_path else bundled_model_path()


def onnx_path(cfg: EmbeddingConfig) -> Path:
    """`embedding.onnx_path`, or by default <venv>/share/tribrid/models/<model_name>.onnx: the file
    is derived from packages installed in this environment, so it lives (and goes) with them."""
    if cfg.onnx_path:
        return Path(cfg.onnx_path).expanduser().absolute()
    return Path(sys.prefix) / "share" / "tribrid" / "models" / f"{cfg.model_name}.onnx"


def model_fingerprint(folder: Path) -> str:
    digest = hashlib.sha256()
    for name in _FINGERPRINTED:
        path = folder / name
        if path.is_file():
            digest.update(name.encode() + b"\0")
            with path.open("rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()


def _check_pooling(folder: Path) -> None:
    """The exported graph mean-pools and normalizes: refuse a model configured otherwise."""
    modules = json.loads((folder / "modules.json").read_text())
    kinds = [m["type"].rsplit(".", 1)[-1] for m in modules]
    if kinds[:2] != ["Transformer", "Pooling"] or any(k != "Normalize" for k in kinds[2:]):
        raise ValueError(f"{folder}: modules {kinds}, only Transformer, Pooling[, Normalize] can be exported")
    pooling = json.loads((folder / modules[1]["path"] / "config.json").read_text())
    modes = sorted(k for k, v in pooling.items() if k.startswith("pooling_mode") and v)
    if modes != ["pooling_mode_mean_tokens"]:
        raise ValueError(f"{folder}: pooling {modes}, only mean pooling can be exported")


def pooled_model(folder: Path, attn_implementation: str = "eager") -> Any:
    """The folder's transformer with mean pooling and normalization: one torch module (eval mode)
    from (input_ids, attention_mask) to unit vectors, as sentence-transformers computes them."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import torch
    from transformers import AutoModel

    _check_pooling(folder)
    encoder = AutoModel.from_pretrained(
        str(folder), attn_implementation=attn_implementation, local_files_only=True
    ).eval()

    class Pooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = encoder

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            tokens = self.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
            mean = (tokens * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(mean, p=2, dim=1)

    return Pooled().eval()


def export_model(dest: Path, folder: Path | None = None) -> Path:
    """Write the model in `folder` (default: the bundled one) with mean pooling and normalization
    as ONNX to `dest`, with onnxruntime's BERT fusions, and its int8 copy beside it (from the graph
    before the fusions: the quantizer knows no fused Attention); each atomically, with the
    fingerprint beside it. Returns dest."""
    import torch

    folder = folder or bundled_model_path()
    dest.parent.mkdir(parents=True, exist_ok=True)
    plain = dest.with_name(f".{dest.stem}.plain.{os.getpid()}{dest.suffix}")
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    int8 = quantized_path(dest)
    try:
        _export_plain(plain, folder)
        fused = fuse(plain, tmp, folder)
        for path in (dest, int8):  # no sidecar vouches for a file being replaced
            _sidecar(path).unlink(missing_ok=True)
        os.replace(tmp, dest)
        quantize_model(plain, int8)
    finally:
        plain.unlink(missing_ok=True)
        tmp.unlink(missing_ok=True)
    made = {"fingerprint": model_fingerprint(folder), "model_dir": str(folder), "torch": torch.__version__}
    _sidecar(dest).write_text(json.dumps(made | {"fused": fused}, indent=2) + "\n")
    quantized = made | {"quantized": "int8, per channel, weight products"}
    _sidecar(int8).write_text(json.dumps(quantized, indent=2) + "\n")
    return dest


def fuse(src: Path, dest: Path, folder: Path) -> dict[str, int]:
    """Write `src` with onnxruntime's BERT fusions (attention, skip layer norm, bias GELU) to
    `dest`: the same vectors (2.5e-7 apart), at about a tenth less CPU per question here, the
    small ops around each attention gone (docs/benchmarks.md). Python fusions only (opt_level 0):
    no graph tied to this CPU. Returns the fused operators counted."""
    from onnxruntime.transformers.optimizer import optimize_model  # type: ignore[import-untyped]

    config = json.loads((folder / "config.json").read_text())
    model = optimize_model(
        str(src),
        model_type="bert",
        num_heads=config["num_attention_heads"],
        hidden_size=config["hidden_size"],
        opt_level=0,
    )
    model.save_model_to_file(str(dest))
    return {op: n for op, n in model.get_fused_operator_statistics().items() if n}


def _export_plain(dest: Path, folder: Path) -> None:
    """The model in `folder` with mean pooling and normalization, as traced by torch's exporter."""
    import torch

    # eager attention: a plain graph (softmax of masked scores) that the legacy exporter traces
    model = pooled_model(folder, "eager")
    # traced on a padded batch, so the attention mask's path is the one recorded
    ids = torch.tensor([[101, 2023, 2003, 1037, 3231, 102], [101, 2023, 102, 0, 0, 0]])
    mask = (ids != 0).long()
    # the exporter's warnings (legacy exporter, traced shape checks) are expected: not shown
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            (ids, mask),
            str(dest),
            input_names=list(INPUTS),
            output_names=[OUTPUT],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "sequence"},
                "attention_mask": {0: "batch", 1: "sequence"},
                OUTPUT: {0: "batch"},
            },
            opset_version=OPSET,
            dynamo=False,
        )


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def quantized_path(path: Path) -> Path:
    """Where the int8 copy of the exported model at `path` lives."""
    return path.with_name(f"{path.stem}.int8{path.suffix}")


def quantize_model(src: Path, dest: Path) -> None:
    """Write an int8 copy of the plain exported graph `src` to `dest`, atomically (its sidecar
    is the exporter's to write). Dynamic quantization, per output channel, of the matrix products
    with a weight operand: the products of two activations (attention's scores) stay float, which
    keeps the vectors nearer the full model's (cosine 0.994 on average, against 0.974 with every
    product quantized)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic  # type: ignore[import-untyped]

    model = onnx.load(str(src))
    weights = {init.name for init in model.graph.initializer}
    products = [n.name for n in model.graph.node if n.op_type == "MatMul" and n.input[1] in weights]
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    try:
        logging.getLogger().disabled = True  # its advice to pre-process the model: not for us
        try:
            quantize_dynamic(
                src, tmp, weight_type=QuantType.QInt8, per_channel=True, nodes_to_quantize=products
            )
        finally:
            logging.getLogger().disabled = False
        _sidecar(dest).unlink(missing_ok=True)
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)


def _fresh(path: Path, folder: Path, *, fused: bool = False) -> bool:
    """The file exists and its sidecar says it was made from the model in `folder` (and, with
    `fused`, by an exporter that fuses: an older export gives the same vectors, more slowly)."""
    sidecar = _sidecar(path)
    if not (path.is_file() and sidecar.is_file()):
        return False
    meta = json.loads(sidecar.read_text())
    return meta.get("fingerprint") == model_fingerprint(folder) and (not fused or "fused" in meta)


class OnnxEmbedder:
    """The exported model on an onnxruntime session: same `name` as LocalEmbedder (same vectors)."""

    def __init__(self, cfg: EmbeddingConfig, path: Path, folder: Path) -> None:
        import onnxruntime as ort  # type: ignore[import-untyped]
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        tokenizer.enable_truncation(cfg.max_seq_length)  # as sentence-transformers' max_seq_length
        tokenizer.no_padding()  # padded here, to the batch's longest
        self._tokenizer = tokenizer
        options = ort.SessionOptions()
        options.intra_op_num_threads = cfg.num_threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        # idle pool threads sleep instead of spinning: spinning costs CPU that other work needs
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self._session: Any = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self._batch_size = cfg.batch_size
        self.name = model_identity(cfg.model_name, cfg)
        self.dim = int(self.embed_sync(["warm up"]).shape[1])
        if self.dim != cfg.dim:
            raise ValueError(f"embedding.dim is {cfg.dim} but model {path} produces {self.dim}-d vectors")
        self._lock = asyncio.Lock()

    def _run(self, texts: Sequence[str]) -> Vectors:
        encodings = [self._tokenizer.encode(text) for text in texts]
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(texts), width), dtype=np.int64)
        mask = np.zeros((len(texts), width), dtype=np.int64)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        out = self._session.run([OUTPUT], {"input_ids": ids, "attention_mask": mask})[0]
        return np.asarray(out, dtype=np.float32)

    def embed_sync(self, texts: Sequence[str]) -> Vectors:
        if len(texts) <= self._batch_size:
            return self._run(texts)
        # longest first, batches of similar length (little padding), as sentence-transformers does
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(order), self._batch_size):
            rows = order[start : start + self._batch_size]
            out[rows] = self._run([texts[i] for i in rows])
        return out

    async def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        async with self._lock:
            return await asyncio.to_thread(self.embed_sync, texts)


def local_embedder(cfg: EmbeddingConfig, quantized: bool = False) -> Embedder:
    """The ONNX embedder when its file was exported from this model, else (warning) LocalEmbedder.
    `quantized`: the int8 copy's, else (warning) the full model's."""
    path, folder = onnx_path(cfg), model_dir(cfg)
    if quantized:
        try:
            if not _fresh(quantized_path(path), folder):
                raise FileNotFoundError(f"no up-to-date {quantized_path(path)}")
            return OnnxEmbedder(cfg, quantized_path(path), folder)
        except Exception as exc:
            log.warning("vector.query_model=int8: %s; using the full model (run `make onnx-model`)", exc)
    try:
        if not path.is_file():
            raise FileNotFoundError(f"no {path}")
        if not _fresh(path, folder):
            raise ValueError(f"{path} was exported from another model than {folder}")
        return OnnxEmbedder(cfg, path, folder)
    except Exception as exc:  # missing file or onnxruntime, stale export: the slower torch path
        log.warning("embedding.runtime=onnx: %s; using torch (run `make onnx-model`)", exc)
        return LocalEmbedder(cfg)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tribrid.onnx_embedding")
    sub = parser.add_subparsers(dest="command", required=True)
    export = sub.add_parser("export", help="export the configured local model to ONNX")
    export.add_argument("--dest", type=Path, help="default: embedding.onnx_path, else under <venv>/share")
    export.add_argument("--force", action="store_true", help="export even when the file is up to date")
    args = parser.parse_args(argv)
    from tribrid.config import load_config

    cfg = load_config().embedding
    dest, folder = args.dest or onnx_path(cfg), model_dir(cfg)
    if not args.force and _fresh(dest, folder, fused=True) and _fresh(quantized_path(dest), folder):
        print(f"{dest} and its int8 copy: up to date")
        return
    start = time.perf_counter()
    export_model(dest, folder)
    print(f"{dest} and its int8 copy: exported from {folder} in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
