"""Named entities of document chunks and the document graph they make: spaCy NER per chunk
(`EntityRecognizer`), then canonical entities, MENTIONS (chunk -> entity, with a count) and
RELATED_TO (entity <-> entity, co-occurrence strength) for a whole corpus (`build_document_graph`).

Pure and synchronous: no database, no gRPC. The indexer runs `recognize` in a thread and caches
its answers by text (`services.indexer.entity_cache`).
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
import threading
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import regex

from tribrid.config import EntitiesConfig

# Bumped when what `recognize` keeps changes (junk rules, normalization): cached answers made
# under another version are not reused.
RECOGNIZER_FORMAT = 2

# Chinese, Japanese, Korean and Southeast Asian scripts, which a pipeline of another language never
# learned to read, and whose unspaced text its tokenizer cannot cut: en_core_web_sm, given a Chinese
# paragraph, labels the whole of it ORG, PERSON or GPE (297 such "entities" in the graph of the
# Chinese entity set's 60 chapters, measured here).
_ASIAN = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}\p{Thai}\p{Lao}\p{Khmer}\p{Myanmar}\p{Tibetan}"
_ASIAN_LETTER = regex.compile(f"[{_ASIAN}]")
_OTHER_LETTER = regex.compile(f"(?V1)[\\p{{L}}--[{_ASIAN}]]")
# spaCy's languages written in those scripts, and its multi-language pipelines ("xx")
ASIAN_SCRIPT_LANGUAGES = frozenset({"zh", "ja", "ko", "th", "xx"})

# Components that compute the token vectors another component may listen to.
_EMBEDDING_FACTORIES = frozenset({"tok2vec", "transformer", "curated_transformer"})
_NER_FACTORIES = frozenset({"ner", "beam_ner"})


@dataclass(frozen=True, slots=True)
class Mention:
    """An entity as one chunk names it: its NER label, its surface form (whitespace collapsed) and
    how many times the chunk says it."""

    label: str
    text: str
    count: int


@dataclass(frozen=True, slots=True)
class EntitySpan:
    """One entity where the text says it: NER label, character offsets, surface form (whitespace
    collapsed)."""

    label: str
    start: int
    end: int
    text: str


def collapse_whitespace(text: str) -> str:
    return " ".join(text.split())


def is_junk(text: str) -> bool:
    """Spans the small model labels that are no name: one character, or no letter at all
    (numbers, punctuation)."""
    return len(text) <= 1 or not any(ch.isalpha() for ch in text)


@dataclass(frozen=True, slots=True)
class ScriptFilter:
    """What a pipeline of one language can read: a pipeline of a language written in none of the
    Asian scripts above skips a text with no letter of another script, and names no span holding
    one of theirs (a Greek letter, as in alpha-synuclein written with one, it reads)."""

    reads_asian: bool

    @classmethod
    def of(cls, lang: str) -> ScriptFilter:
        return cls(lang in ASIAN_SCRIPT_LANGUAGES)

    def readable(self, text: str) -> bool:
        return self.reads_asian or _OTHER_LETTER.search(text) is not None

    def in_script(self, span: str) -> bool:
        return self.reads_asian or _ASIAN_LETTER.search(span) is None


def pipeline_data_dir(module: Any) -> Path:
    """A spaCy model package's data directory (what its `load()` reads): the one folder beside
    its `__init__.py` holding a config.cfg."""
    package_dir = Path(module.__file__).parent
    found = sorted(p.parent for p in package_dir.glob("*/config.cfg"))
    if len(found) != 1:
        raise ValueError(f"entities.model {module.__name__}: expected one pipeline in {package_dir}")
    return found[0]


def components_to_exclude(config: Mapping[str, Any]) -> list[str]:
    """The pipeline's components that NER does not need: everything but the NER components and
    the embedding components they listen to (none in en_core_web_sm, whose `ner` has its own
    tok2vec)."""
    pipeline: list[str] = list(config["nlp"]["pipeline"])
    components: Mapping[str, Any] = config["components"]
    ner_names = [name for name in pipeline if components[name].get("factory") in _NER_FACTORIES]
    if not ner_names:
        raise ValueError("entities.model: the pipeline has no ner or beam_ner component")
    keep = set(ner_names)
    for name in ner_names:
        tok2vec = components[name].get("model", {}).get("tok2vec", {})
        if "Listener" not in str(tok2vec.get("@architectures", "")):
            continue
        upstream = str(tok2vec.get("upstream", "*"))
        keep |= {
            other
            for other in pipeline
            if (upstream == "*" and components[other].get("factory") in _EMBEDDING_FACTORIES)
            or other == upstream
        }
    return [name for name in pipeline if name not in keep]


def needs_torch(model: str) -> bool:
    """Whether an installed spaCy pipeline package runs on torch: it requires a transformers
    package (spacy-transformers, spacy-curated-transformers) in its meta.json, read without
    importing spaCy."""
    spec = importlib.util.find_spec(model)
    if spec is None or spec.origin is None:
        raise ValueError(f"entities.model {model}: no such package is installed")
    meta = json.loads((Path(spec.origin).parent / "meta.json").read_text(encoding="utf-8"))
    return any("transformers" in str(r) for r in meta.get("requirements", []))


@contextmanager
def torch_hidden() -> Iterator[None]:
    """Imports inside see no torch (a None entry in sys.modules makes `import torch` raise
    ImportError), unless it is loaded already. thinc imports torch only to note that it is there:
    1.9 s and 180 MB of a process that never runs it (measured here)."""
    if "torch" in sys.modules:
        yield
        return
    sys.modules["torch"] = None  # type: ignore[assignment]
    try:
        yield
    finally:
        if "torch" in sys.modules and sys.modules["torch"] is None:
            del sys.modules["torch"]


class EntityRecognizer:
    """spaCy NER over chunk texts. The pipeline loads on first use, with only the components NER
    needs."""

    def __init__(self, cfg: EntitiesConfig, *, without_torch: bool = False) -> None:
        """`without_torch`: load spaCy with torch hidden unless the pipeline needs it, only in a
        process where nothing else imports torch (the graph leg alone): an `import torch` in
        another thread while spaCy loads would fail."""
        self.cfg = cfg
        self._without_torch = without_torch
        self._nlp: Any = None
        self._ner_name = ""
        # recognize runs in worker threads: the first calls must not load the pipeline twice
        self._loading = threading.Lock()

    @property
    def identity(self) -> str:
        """What the answers depend on (the cache key): the model package and version, the labels
        kept, the confidence floor and the recognizer format."""
        version = getattr(importlib.import_module(self.cfg.model), "__version__", "")
        labels = ",".join(sorted(self.cfg.types))
        return (
            f"{self.cfg.model}=={version};labels={labels};"
            f"min_confidence={self.cfg.min_confidence};format={RECOGNIZER_FORMAT}"
        )

    @property
    def components(self) -> list[str]:
        """The loaded pipeline's components (it loads if it has not yet)."""
        return list(self._load().pipe_names)

    def _load(self) -> Any:
        with self._loading:
            if self._nlp is None:
                self._nlp = self._load_pipeline()
            return self._nlp

    def _load_pipeline(self) -> Any:
        hide = self._without_torch and not needs_torch(self.cfg.model)
        with torch_hidden() if hide else nullcontext():
            from spacy.util import load_config

            module = importlib.import_module(self.cfg.model)
        config = load_config(pipeline_data_dir(module) / "config.cfg")
        nlp = module.load(exclude=components_to_exclude(config))
        self._ner_name = next(
            n for n in nlp.pipe_names if config["components"][n]["factory"] in _NER_FACTORIES
        )
        beam = config["components"][self._ner_name]["factory"] == "beam_ner"
        if self.cfg.min_confidence > 0 and not beam:
            # A greedy `ner` (en_core_web_sm's) has no per-entity probability: its beam search,
            # run anyway, puts its mass on spans the greedy parse never makes ("Sam Hocevar was"
            # as a PERSON with p=0.99), because the model was never trained with a global
            # objective. Refuse rather than filter on numbers that mean nothing.
            raise ValueError(
                f"entities.min_confidence is {self.cfg.min_confidence} but the NER of "
                f"entities.model {self.cfg.model} is a greedy 'ner': per-entity confidence needs a "
                "pipeline whose NER is a 'beam_ner'; set entities.min_confidence to 0"
            )
        return nlp

    def recognize_spans(self, texts: Sequence[str]) -> list[list[EntitySpan]]:
        """The entities of each text, in text order: labels of `cfg.types` only, in a script the
        model reads (`ScriptFilter`), junk dropped, and (with `cfg.min_confidence` > 0) those the model
        is less sure of."""
        nlp = self._load()
        scripts = ScriptFilter.of(nlp.lang)  # a set lookup: nothing to keep
        # texts with nothing in a script the model reads are not given to it (no answer, no time)
        read = [i for i, text in enumerate(texts) if scripts.readable(text)]
        docs = list(nlp.pipe((texts[i] for i in read), batch_size=self.cfg.batch_size))
        confidences = self._confidences(docs) if self.cfg.min_confidence > 0 and docs else None
        answers: list[list[EntitySpan]] = [[] for _ in texts]
        for i, doc in enumerate(docs):
            spans: list[EntitySpan] = []
            for ent in doc.ents:
                if ent.label_ not in self.cfg.types or not scripts.in_script(ent.text):
                    continue
                if confidences is not None:
                    confidence = confidences[i].get((ent.start, ent.end, ent.label_), 0.0)
                    if confidence < self.cfg.min_confidence:
                        continue
                text = collapse_whitespace(ent.text)
                if not is_junk(text):
                    spans.append(EntitySpan(ent.label_, ent.start_char, ent.end_char, text))
            answers[read[i]] = spans
        return answers

    def recognize(self, texts: Sequence[str]) -> list[list[Mention]]:
        """The mentions of each text (`recognize_spans` counted by label and surface form),
        sorted by (label, text)."""
        answers: list[list[Mention]] = []
        for spans in self.recognize_spans(texts):
            counts = Counter((span.label, span.text) for span in spans)
            answers.append([Mention(label, text, n) for (label, text), n in sorted(counts.items())])
        return answers

    def _confidences(self, docs: list[Any]) -> list[dict[tuple[int, int, str], float]]:
        """Each entity's probability: the share of the beam's probability mass on parses that
        contain it. Costs a second beam pass over the texts (about the NER time again, times the
        beam width's extra states), so only when a floor is set."""
        ner = self._nlp.get_pipe(self._ner_name)
        fresh = [self._nlp.make_doc(doc.text) for doc in docs]
        beams = ner.beam_parse(fresh, beam_width=ner.cfg["beam_width"], beam_density=ner.cfg["beam_density"])
        scores: list[dict[tuple[int, int, str], float]] = ner.scored_ents(beams)
        return scores
