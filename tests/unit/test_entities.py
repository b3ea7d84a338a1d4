"""Named entities of documents: the recognizer on real text, canonical names and alias merges,
MENTIONS counts and RELATED_TO strengths (Jaccard over chunks, hand-computed), and min_confidence
with a beam NER (the NER cache in PostgreSQL: tests/integration/test_entity_cache.py)."""

from __future__ import annotations

import importlib
import random
import sys
from collections.abc import Iterator
from fractions import Fraction

import pytest

from services.indexer.named_entities import (
    MENTIONS,
    RELATED_TO,
    AliasMerge,
    DocumentGraph,
    build_document_graph,
    normalize_name,
)
from tests import REPO_ROOT
from tribrid.config import EntitiesConfig
from tribrid.models import stable_id
from tribrid.ner import EntityRecognizer, Mention, ScriptFilter

CORPUS = "ner-test"

# Real sentences with known entities (what en_core_web_sm finds in them is asserted below).
TEXTS = {
    "chunk-a": "Michael Dell founded Dell Technologies in Austin. "
    "Michael Dell still leads Dell Technologies.",
    "chunk-b": "Dell Technologies opened an office in Paris, and Dell hired engineers in Paris.",
    "chunk-c": "Ian Murdock founded Debian while a student at Purdue University in Indiana.",
    "chunk-d": "The weather was mild and 42 people came; nothing else happened.",
}


@pytest.fixture(scope="module")
def recognizer() -> EntityRecognizer:
    return EntityRecognizer(EntitiesConfig())


def named(type_: str, name: str) -> str:
    return stable_id(CORPUS, "named", type_, name)


def test_recognizer_finds_the_known_entities(recognizer: EntityRecognizer) -> None:
    found = recognizer.recognize(list(TEXTS.values()))
    assert found == [
        [
            Mention("GPE", "Austin", 1),
            Mention("ORG", "Dell Technologies", 2),
            Mention("PERSON", "Michael Dell", 2),
        ],
        [Mention("GPE", "Paris", 2), Mention("ORG", "Dell Technologies", 1), Mention("PERSON", "Dell", 1)],
        [
            Mention("GPE", "Indiana", 1),
            Mention("ORG", "Purdue University", 1),
            Mention("PERSON", "Ian Murdock", 1),
        ],
        [],  # "42" (CARDINAL) is not a kept label
    ]


# A paragraph of 红楼梦 (chapter 2, line 6 of the Chinese entity set's corpus) that en_core_web_sm
# labels, whole, PERSON
CHINESE = (REPO_ROOT / "evals/entities/zh/corpus/chapter-002.txt").read_text(encoding="utf-8").splitlines()[5]
# Chinese with English names: "Ian Murdock founded Debian; Debian later became a project of SPI",
# where the model labels the span from the first "Debian" to "SPI", Chinese and all, ORG
MIXED = (
    "Ian Murdock \u521b\u529e\u4e86 Debian\uff0c\u540e\u6765 Debian \u6210\u4e3a SPI \u7684\u9879\u76ee\u3002"
    "Ian Murdock lived in Indiana."
)


def test_an_english_model_reads_no_chinese(recognizer: EntityRecognizer) -> None:
    found = recognizer.recognize([CHINESE, MIXED, TEXTS["chunk-c"]])
    assert found[0] == []
    # the English names of a mixed text are kept, a span holding Chinese is not
    assert {m.text for m in found[1]} == {"Ian Murdock", "Indiana"}
    assert found[2] == [
        Mention("GPE", "Indiana", 1),
        Mention("ORG", "Purdue University", 1),
        Mention("PERSON", "Ian Murdock", 1),
    ]


def test_what_a_pipeline_reads_depends_on_its_language() -> None:
    english, russian = ScriptFilter.of("en"), ScriptFilter.of("ru")
    assert not english.readable(CHINESE) and english.readable("Z\u00fcrich Altstadt")
    assert english.in_script("\u03b1-synuclein") and english.in_script("Z\u00fcrich")
    assert not english.in_script(CHINESE[:8])
    assert not russian.readable(CHINESE) and russian.readable("\u041c\u043e\u0441\u043a\u0432\u0430")
    for reads_all in (ScriptFilter.of("zh"), ScriptFilter.of("xx")):
        assert reads_all.readable(CHINESE) and reads_all.in_script(CHINESE[:8])


def test_recognizer_loads_only_ner_and_keeps_configured_labels() -> None:
    only_people = EntityRecognizer(EntitiesConfig(types={"PERSON": "person"}))
    found = only_people.recognize([TEXTS["chunk-a"]])
    assert found == [[Mention("PERSON", "Michael Dell", 2)]]
    assert only_people.components == ["ner"]


def test_min_confidence_needs_a_beam_ner() -> None:
    strict = EntityRecognizer(EntitiesConfig(min_confidence=0.5))
    with pytest.raises(ValueError, match=r"entities\.min_confidence"):
        strict.recognize(["Ian Murdock founded Debian."])


def test_document_graph_from_real_text(recognizer: EntityRecognizer) -> None:
    chunk_ids = list(TEXTS)
    found = dict(zip(chunk_ids, recognizer.recognize(list(TEXTS.values())), strict=True))
    graph = build_document_graph(CORPUS, found, EntitiesConfig())

    dell_tech = named("organization", "dell technologies")
    michael = named("person", "michael dell")
    counts = {(r.source_id, r.target_id): r.count for r in graph.mentions}
    assert counts == {
        ("chunk-a", named("location", "austin")): 1,
        ("chunk-a", dell_tech): 2,
        ("chunk-a", michael): 2,
        ("chunk-b", named("location", "paris")): 2,
        ("chunk-b", dell_tech): 1,
        ("chunk-b", michael): 1,  # "Dell" (PERSON) merged into the one longer PERSON name
        ("chunk-c", named("location", "indiana")): 1,
        ("chunk-c", named("organization", "purdue university")): 1,
        ("chunk-c", named("person", "ian murdock")): 1,
    }
    assert all(r.type == MENTIONS for r in graph.mentions)
    by_id = {e.entity_id: e for e in graph.entities}
    assert by_id[michael].name == "Michael Dell" and by_id[michael].aliases == ("Dell",)
    assert graph.merges == [AliasMerge("person", "Dell", "Michael Dell", michael)]
    # Dell Technologies and Michael Dell share chunks a and b, and appear nowhere else: 2 / 2.
    assert [(r.source_id, r.target_id, r.strength) for r in graph.related] == [
        (min(dell_tech, michael), max(dell_tech, michael), 1.0)
    ]


@pytest.mark.parametrize(
    ("surface", "normalized"),
    [
        ("The Free Software Foundation's", "free software foundation"),
        ("  Debian\u2019s ", "debian"),
        ("\uff21\uff23\uff2d\uff25\u00a0 Corp.", "acme corp"),  # NFKC: full-width letters, no-break space
        ('"Theodore Roosevelt"', "theodore roosevelt"),  # "the" only as a whole word
        ("the", "the"),
    ],
)
def test_normalize_name(surface: str, normalized: str) -> None:
    assert normalize_name(surface) == normalized


def test_display_name_is_the_most_frequent_form_ties_smallest() -> None:
    graph = build_document_graph(
        CORPUS,
        {
            "c1": [Mention("ORG", "Acme", 1), Mention("ORG", "ACME", 1), Mention("PERSON", "Ada", 1)],
            "c2": [Mention("ORG", "the Acme", 1), Mention("PERSON", "ada", 2)],
        },
        EntitiesConfig(),
    )
    by_type = {e.type: e for e in graph.entities}
    assert by_type["organization"].name == "ACME"  # three forms once each: the smallest
    assert by_type["organization"].aliases == ("Acme", "the Acme")
    assert by_type["person"].name == "ada"  # 2 mentions against 1
    assert by_type["person"].aliases == ("Ada",)


MERGE_FIXTURE: dict[str, list[Mention]] = {
    "c1": [Mention("ORG", "Dell Technologies", 1), Mention("ORG", "Dell", 2)],
    "c2": [
        Mention("PERSON", "Dell", 1),
        Mention("PERSON", "Michael Dell", 1),
        Mention("PERSON", "Adam Dell", 1),
    ],
    "c3": [
        Mention("PERSON", "Murdock", 1),
        Mention("PERSON", "Ian Murdock", 3),
        Mention("GPE", "Murdock", 1),
    ],
    "c4": [Mention("ORG", "Software in the Public Interest, Inc.", 1), Mention("ORG", "Public Interest", 1)],
}


def shuffled(mentions: dict[str, list[Mention]], seed: int) -> dict[str, list[Mention]]:
    rng = random.Random(seed)
    chunk_ids = list(mentions)
    rng.shuffle(chunk_ids)
    return {c: rng.sample(mentions[c], len(mentions[c])) for c in chunk_ids}


def test_alias_merge_is_unique_and_reported() -> None:
    graph = build_document_graph(CORPUS, MERGE_FIXTURE, EntitiesConfig())
    assert graph.merges == [
        AliasMerge("organization", "Dell", "Dell Technologies", named("organization", "dell technologies")),
        AliasMerge(
            "organization",
            "Public Interest",
            "Software in the Public Interest, Inc.",
            named("organization", "software in the public interest, inc"),
        ),
        AliasMerge("person", "Murdock", "Ian Murdock", named("person", "ian murdock")),
    ]
    names = sorted((e.type, e.name, e.aliases) for e in graph.entities)
    assert names == [
        ("location", "Murdock", ()),  # another type: not merged into the PERSON
        ("organization", "Dell Technologies", ("Dell",)),
        ("organization", "Software in the Public Interest, Inc.", ("Public Interest",)),
        ("person", "Adam Dell", ()),
        ("person", "Dell", ()),  # in both Michael Dell and Adam Dell: ambiguous, kept apart
        ("person", "Ian Murdock", ("Murdock",)),
        ("person", "Michael Dell", ()),
    ]
    counts = {(r.source_id, r.target_id): r.count for r in graph.mentions}
    assert counts[("c1", named("organization", "dell technologies"))] == 3
    assert counts[("c3", named("person", "ian murdock"))] == 4


def test_alias_merge_does_not_depend_on_input_order() -> None:
    reference = build_document_graph(CORPUS, MERGE_FIXTURE, EntitiesConfig())
    for seed in range(5):
        assert build_document_graph(CORPUS, shuffled(MERGE_FIXTURE, seed), EntitiesConfig()) == reference


def test_merge_aliases_off_keeps_every_name() -> None:
    graph = build_document_graph(CORPUS, MERGE_FIXTURE, EntitiesConfig(merge_aliases=False))
    assert graph.merges == []
    assert len(graph.entities) == 10


# Co-occurrence fixture: which chunks mention A, B, C, D.
CHUNKS_OF = {
    "A": {"c1", "c2", "c3", "c6"},
    "B": {"c1", "c2", "c4", "c6"},
    "C": {"c2", "c3", "c4"},
    "D": {"c4", "c5"},
}
NAMES = {
    "A": ("PERSON", "Ada Lovelace"),
    "B": ("ORG", "Analytical Society"),
    "C": ("GPE", "London"),
    "D": ("GPE", "Paris"),
}


def cooccurrence_graph(**cfg: object) -> DocumentGraph:
    by_chunk: dict[str, list[Mention]] = {f"c{i}": [] for i in range(1, 7)}
    for letter, chunk_ids in CHUNKS_OF.items():
        for chunk_id in chunk_ids:
            by_chunk[chunk_id].append(Mention(*NAMES[letter], count=1))
    return build_document_graph(CORPUS, by_chunk, EntitiesConfig(**cfg))  # type: ignore[arg-type]


def letter_id(letter: str) -> str:
    label, name = NAMES[letter]
    return named(EntitiesConfig().types[label], normalize_name(name))


def jaccard_by_hand(first: str, second: str) -> float:
    shared, either = CHUNKS_OF[first] & CHUNKS_OF[second], CHUNKS_OF[first] | CHUNKS_OF[second]
    return float(Fraction(len(shared), len(either)))


def edges(graph: DocumentGraph) -> dict[frozenset[str], float]:
    letters = {letter_id(letter): letter for letter in NAMES}
    assert all(r.type == RELATED_TO and r.source_id < r.target_id for r in graph.related)
    return {frozenset((letters[r.source_id], letters[r.target_id])): r.strength for r in graph.related}


def test_related_strength_is_jaccard_over_chunks() -> None:
    # min 2 shared chunks: A-B share c1, c2, c6 of 5 -> 0.6; A-C share c2, c3 of 5 -> 0.4;
    # B-C share c2, c4 of 5 -> 0.4. B-D and C-D share c4 only; A-D nothing.
    found = edges(cooccurrence_graph(related_floor=0.0))
    assert found == {
        frozenset("AB"): 0.6,
        frozenset("AC"): 0.4,
        frozenset("BC"): 0.4,
    }
    assert all(strength == jaccard_by_hand(*sorted(pair)) for pair, strength in found.items())


def test_related_min_chunks_one_keeps_single_cooccurrences() -> None:
    found = edges(cooccurrence_graph(related_min_chunks=1, related_floor=0.0))
    assert found[frozenset("BD")] == 0.2 == jaccard_by_hand("B", "D")  # c4 of c1, c2, c4, c5, c6
    assert found[frozenset("CD")] == 0.25 == jaccard_by_hand("C", "D")  # c4 of c2, c3, c4, c5
    assert frozenset("AD") not in found


def test_related_floor_and_min_chunks_cut() -> None:
    assert edges(cooccurrence_graph(related_floor=0.5)) == {frozenset("AB"): 0.6}
    assert edges(cooccurrence_graph(related_floor=0.4)) == {
        frozenset("AB"): 0.6,
        frozenset("AC"): 0.4,
        frozenset("BC"): 0.4,
    }
    assert edges(cooccurrence_graph(related_min_chunks=3, related_floor=0.0)) == {frozenset("AB"): 0.6}


def test_related_top_n_keeps_an_edge_either_end_ranks() -> None:
    # top 1: A and B each keep A-B (0.6). C's two edges tie at 0.4: it keeps the one to the
    # smaller id, which neither A nor B ranks first but stays because C does.
    found = edges(cooccurrence_graph(related_floor=0.0, related_top_n=1))
    first_of_c = "A" if letter_id("A") < letter_id("B") else "B"
    assert found == {frozenset("AB"): 0.6, frozenset({"C", first_of_c}): 0.4}


# --- min_confidence with a beam-trained NER ------------------------------------------------

BEAM_TRAINING = [
    ("Ian Murdock founded Debian in Indiana.", [(0, 11, "PERSON"), (20, 26, "ORG"), (30, 37, "GPE")]),
    ("Bruce Perens led Debian from Berkeley.", [(0, 12, "PERSON"), (17, 23, "ORG"), (29, 37, "GPE")]),
    ("Bdale Garbee worked at HP in Colorado.", [(0, 12, "PERSON"), (23, 25, "ORG"), (29, 37, "GPE")]),
    ("Sam Hartman joined Debian in Boston.", [(0, 11, "PERSON"), (19, 25, "ORG"), (29, 35, "GPE")]),
]
BEAM_PACKAGE = "tiny_beam_ner_for_tests"


@pytest.fixture(scope="module")
def beam_package(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real (tiny) spaCy package whose NER is a `beam_ner`, trained here on four sentences,
    importable by name like en_core_web_sm."""
    import spacy
    from spacy.training import Example
    from thinc.api import fix_random_seed

    fix_random_seed(0)
    nlp = spacy.blank("en")
    nlp.add_pipe("beam_ner", config={"beam_width": 8})
    examples = [Example.from_dict(nlp.make_doc(t), {"entities": e}) for t, e in BEAM_TRAINING]
    optimizer = nlp.initialize(lambda: examples)
    for _ in range(30):
        nlp.update(examples, sgd=optimizer)
    root = tmp_path_factory.mktemp("beam")
    package = root / BEAM_PACKAGE
    package.mkdir()
    nlp.to_disk(package / "pipeline")
    (package / "__init__.py").write_text(
        "from pathlib import Path\n"
        "from typing import Any\n\n"
        "import spacy\n\n\n"
        "def load(**overrides: Any) -> Any:\n"
        "    return spacy.load(Path(__file__).parent / 'pipeline', **overrides)\n"
    )
    sys.path.insert(0, str(root))
    yield BEAM_PACKAGE
    sys.path.remove(str(root))
    sys.modules.pop(BEAM_PACKAGE, None)


def test_min_confidence_drops_what_the_beam_is_unsure_of(beam_package: str) -> None:
    texts = ["Chris Lamb led Debian from Cambridge.", "Steve McIntyre joined Debian in Cambridge."]
    everything = EntityRecognizer(EntitiesConfig(model=beam_package)).recognize_spans(texts)
    sure = EntityRecognizer(EntitiesConfig(model=beam_package, min_confidence=0.9))
    kept = sure.recognize_spans(texts)

    # The beam's own probabilities, read independently of the recognizer.
    nlp = importlib.import_module(beam_package).load()
    ner = nlp.get_pipe("beam_ner")
    docs = [nlp.make_doc(t) for t in texts]
    scores = ner.scored_ents(ner.beam_parse(docs, beam_width=8, beam_density=ner.cfg["beam_density"]))
    expected = []
    for doc, spans, by_span in zip(docs, everything, scores, strict=True):
        confident = []
        for span in spans:
            tokens = doc.char_span(span.start, span.end)
            assert tokens is not None
            if by_span.get((tokens.start, tokens.end, span.label), 0.0) >= 0.9:
                confident.append(span)
        expected.append(confident)
    assert kept == expected
    assert 0 < sum(map(len, kept)) < sum(map(len, everything))  # the floor cuts, but not all
    assert "min_confidence=0.9" in sure.identity
