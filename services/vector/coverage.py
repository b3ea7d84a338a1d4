"""How much of a question the embedding model can read: the share of its word pieces that are in
the model's vocabulary. all-MiniLM-L6-v2 was trained on English; it maps most Chinese characters
to [UNK] ("林黛玉是哪家的女儿" keeps 4 of 9), and the nearest chunks of such a vector answer a
question the model never saw. The gateway scales the vector leg's confidence by it."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from tokenizers import Tokenizer

from tribrid.config import EmbeddingConfig
from tribrid.onnx_embedding import model_dir


class Coverage:
    """The share of a text's word pieces (special tokens aside) that are not the unknown token."""

    def __init__(self, folder: Path) -> None:
        self._tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self._tokenizer.no_padding()  # the file pads to the model's length: count the text only
        self._unknown = self._tokenizer.token_to_id("[UNK]")

    @lru_cache(maxsize=4096)  # noqa: B019 - one instance per process, questions repeat
    def of(self, text: str) -> float:
        encoding = self._tokenizer.encode(text, add_special_tokens=False)
        if not encoding.ids or self._unknown is None:
            return 1.0
        unknown = sum(1 for token in encoding.ids if token == self._unknown)
        return 1.0 - unknown / len(encoding.ids)


def model_coverage(cfg: EmbeddingConfig) -> Coverage | None:
    """The local model's coverage; None for an endpoint or a model without a WordPiece vocabulary
    (nothing to tell: its leg is taken as reading every question)."""
    if cfg.provider != "local":
        return None
    folder = model_dir(cfg)
    if not (folder / "tokenizer.json").is_file():
        return None
    coverage = Coverage(folder)
    return coverage if coverage._unknown is not None else None
