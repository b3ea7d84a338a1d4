"""The names a name that fits none may have meant (services/graph/near_names.py)."""

from __future__ import annotations

from services.graph.near_names import NearNames, folded

ENTITIES = [
    ("athos", ["Athos", "Comte de la Fere"], True),
    ("dartagnan", ["d\u2019Artagnan"], True),
    ("bonacieux", ["M. Bonacieux"], True),
    ("constance", ["Mme. Bonacieux", "Constance"], True),
    ("milady", ["Milady"], True),
    ("baochai", ["薛宝钗", "宝钗"], True),
    ("baoqin", ["薛宝琴"], True),
    # what a recognizer found in the text: longer spans, one letter
    ("council", ["THE COUNCIL OF THE MUSKETEERS As Athos"], False),
    ("monsieur-athos", ["Monsieur Athos"], False),
    ("i", ["I."], False),
]


def test_typos_parts_and_punctuation_find_the_name() -> None:
    near = NearNames(ENTITIES)
    assert near.nearest("Atos", 3)[0] == "athos"  # one edit in a short name
    assert near.nearest("Athoss", 3)[0] == "athos"
    assert near.nearest("Artagnan", 3) == ["dartagnan"]  # the name after its apostrophe
    assert near.nearest("d artagnan", 3) == ["dartagnan"]
    assert near.nearest("dartagnan", 3) == ["dartagnan"]
    assert near.nearest("Milday", 3) == ["milady"]
    assert set(near.nearest("薛宝差", 3)) == {"baochai", "baoqin"}  # one edit from each


def test_the_curated_name_comes_before_a_recognized_span_holding_it() -> None:
    ranked = NearNames(ENTITIES).nearest("Athoss", 5)
    assert ranked[0] == "athos"
    assert set(ranked[1:]) <= {"monsieur-athos", "council"}


def test_a_one_letter_name_is_offered_for_nothing() -> None:
    near = NearNames(ENTITIES)
    assert "i" not in near.nearest("Bonacieu", 10)
    assert set(near.nearest("Bonacieu", 2)) == {"bonacieux", "constance"}


def test_nothing_near_and_nothing_asked() -> None:
    near = NearNames(ENTITIES)
    assert near.nearest("Qwxyz", 5) == []
    assert near.nearest("   ", 5) == []
    assert near.nearest("Athos", 0) == []


def test_folding() -> None:
    assert folded("d\u2019Artagnan") == "d artagnan"
    assert folded("M. de Tréville") == "m de treville"
    assert folded("Flower-Feather  Clan") == "flower feather clan"
