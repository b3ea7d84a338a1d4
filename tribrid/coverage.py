"""How much of a text the embedding model can read: the share of its word pieces that are in the
model's vocabulary. all-MiniLM-L6-v2 was trained on English; it maps most Chinese characters to
[UNK] ("林黛玉是哪家的女儿" keeps 4 of 9), and the nearest chunks of such a vector answer a question
the model never saw. The same holds the other way: an English question's vector compared with
chunks the model read a third of. The indexer stores each chunk's share (`chunks.model_coverage`);
the vector leg reports the lesser of the question's and its answers' mean, and the gateway scales
the vector leg's confidence by it."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from tokenizers import Tokenizer

from tribrid.config import EmbeddingConfig
from tribrid.onnx_embedding import model_dir


class Coverage:
    """The share of a text's word pieces (special tokens aside) that are not the unknown token."""

    def __init__(self, tokenizer: Tokenizer, unknown: int) -> None:
        self._tokenizer = tokenizer
        self._unknown = unknown

    @lru_cache(maxsize=4096)  # noqa: B019 - one instance per process, questions repeat
    def of(self, text: str) -> float:
        return self._share(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def of_texts(self, texts: Sequence[str]) -> list[float]:
        """Each text's share, to two decimals (a few unknown pieces in a long English text read as
        whole), tokenized in one batch."""
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [round(self._share(encoding.ids), 2) for encoding in encodings]

    def _share(self, ids: Sequence[int]) -> float:
        if not ids:
            return 1.0
        return 1.0 - sum(1 for token in ids if token == self._unknown) / len(ids)


def model_coverage(cfg: EmbeddingConfig) -> Coverage | None:
    """The local model's coverage; None for an endpoint, or a model without a tokenizer file or
    an unknown token (nothing to tell: its leg is taken as reading every question)."""
    if cfg.provider != "local":
        return None
    path = model_dir(cfg) / "tokenizer.json"
    if not path.is_file():
        return None
    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.no_padding()  # the file pads to the model's length: count the text only
    unknown = tokenizer.token_to_id("[UNK]")
    return None if unknown is None else Coverage(tokenizer, unknown)
