"""Known entities found in chunk texts (tribrid.entity_linking): CJK without word
boundaries, Latin on token boundaries, case and accent folding, longest match first, shared
aliases, and folds that change the length."""

from __future__ import annotations

import pytest

from tribrid.entity_linking import EntityLinker, KnownEntity

CHASCA = KnownEntity("chasca", ("恰斯卡", "Chasca"))
FLOWER_FEATHER = KnownEntity("flower-feather", ("花羽会",))
DELL = KnownEntity("dell", ("Dell",))
MICHAEL_DELL = KnownEntity("michael-dell", ("Michael Dell",))
ZURICH = KnownEntity("zurich", ("Zürich",))


def test_chinese_names_match_without_spaces() -> None:
    linker = EntityLinker([CHASCA, FLOWER_FEATHER])
    text = "恰斯卡是花羽会的成员。恰斯卡和伊法一起出发。"
    assert linker.mentions(text) == {"chasca": 2, "flower-feather": 1}


def test_latin_alias_in_chinese_text_and_any_case() -> None:
    linker = EntityLinker([CHASCA, FLOWER_FEATHER])
    # Han next to a Latin name is a token boundary
    assert linker.mentions("Chasca是花羽会的成员") == {"chasca": 1, "flower-feather": 1}
    assert linker.mentions("CHASCA joined.") == {"chasca": 1}
    assert linker.mentions("chasca joined, and so did Chasca.") == {"chasca": 2}


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("Dellwood is a town", 0),
        ("a modell of it", 0),
        ("Dell_2 and Dell2", 0),
        ("Dell's laptops", 1),
        ("(Dell)", 1),
        ("Dell-EMC", 1),
        ("DELL, dell; Dell.", 3),
    ],
)
def test_latin_names_match_on_token_boundaries(text: str, count: int) -> None:
    assert EntityLinker([DELL]).mentions(text).get("dell", 0) == count


def test_a_mixed_name_checks_only_its_latin_end() -> None:
    linker = EntityLinker([KnownEntity("a-shares", ("A股",))])
    assert linker.mentions("今年A股上涨") == {"a-shares": 1}
    assert linker.mentions("A股指数") == {"a-shares": 1}
    assert linker.mentions("AA股") == {}


def test_accented_name_matches_any_case_and_its_unaccented_spelling() -> None:
    linker = EntityLinker([ZURICH])
    decomposed = "Zu\u0308rich"  # the same name with a combining diaeresis
    text = f"Zürich, Zurich, ZÜRICH, zürich and {decomposed}"
    assert linker.mentions(text) == {"zurich": 5}
    assert linker.mentions("the Zürichsee and the Zurichsee") == {}


def test_longest_match_wins_and_the_shorter_inside_it_is_not_counted() -> None:
    linker = EntityLinker([DELL, MICHAEL_DELL])
    assert linker.mentions("Michael Dell founded Dell") == {"michael-dell": 1, "dell": 1}
    # whitespace runs and line breaks inside a name still match it
    assert linker.mentions("Michael\n  Dell") == {"michael-dell": 1}


def test_a_shared_alias_counts_for_every_entity_it_names() -> None:
    linker = EntityLinker(
        [
            KnownEntity("apple-inc", ("Apple Inc.", "Apple")),
            KnownEntity("apple-records", ("Apple Records", "Apple")),
        ]
    )
    assert linker.mentions("Apple sued Apple Records.") == {"apple-inc": 1, "apple-records": 2}


def test_a_fold_that_changes_the_length_keeps_later_matches_right() -> None:
    # "ß" folds to "ss": the fold is longer than the text, and the names after it still match
    linker = EntityLinker([KnownEntity("strasse", ("Straße",)), DELL])
    assert linker.mentions("STRASSE and Dell, straße and Dell, Strasse-Dell") == {
        "strasse": 3,
        "dell": 3,
    }
    assert linker.mentions("ßß Dell İİ Dell") == {"dell": 2}


def test_compatibility_forms_fold_without_moving_boundaries() -> None:
    linker = EntityLinker([DELL])
    # full-width letters fold to ASCII; "™" stays a sign instead of becoming the letters "tm"
    full_width = "\uff24\uff25\uff2c\uff2c"
    assert linker.mentions(f"{full_width} and Dell™") == {"dell": 2}


def test_kana_voicing_is_not_an_accent() -> None:
    linker = EntityLinker([KnownEntity("gundam", ("ガンダム",)), KnownEntity("suka", ("スカ",))])
    assert linker.mentions("新しいガンダムとスガ") == {"gundam": 1}
    assert linker.mentions("カンタム") == {}


def test_names_shorter_than_two_characters_are_ignored() -> None:
    linker = EntityLinker([KnownEntity("x", ("X", "", " ", "中")), KnownEntity("xy", ("XY",))])
    assert linker.mentions("X and XY, 中国") == {"xy": 1}
    assert EntityLinker([]).mentions("anything") == {}


def test_link_keeps_only_chunks_with_mentions() -> None:
    linker = EntityLinker([CHASCA, FLOWER_FEATHER, DELL])
    texts = {
        "c1": "恰斯卡是花羽会的成员。",
        "c2": "Nothing to see here.",
        "c3": "Dell and Chasca.",
        "c4": "",
    }
    assert linker.link(texts) == {
        "c1": {"chasca": 1, "flower-feather": 1},
        "c3": {"dell": 1, "chasca": 1},
    }


def test_a_korean_name_takes_the_particles_written_on_it() -> None:
    linker = EntityLinker([KnownEntity("seoul", ("서울",))])
    assert linker.mentions("서울에서 만나요. 서울은 크다.") == {"seoul": 2}  # "in Seoul", topic marker
    assert linker.mentions("대서울 지역") == {}  # its start still needs a boundary


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("Who carried off Mme Bonacieux?", {"bonacieux": 1}),  # the abbreviation's period left out
        ("Mme. Bonacieux came; so did mme bonacieux", {"bonacieux": 2}),
        ("d'Artagnan's sword and dartagnan's horse", {"dartagnan": 2}),  # straight, or no apostrophe
        ("d\u2019Artagnan at Meung", {"dartagnan": 1}),
        ("O\u2019Brien, O'Brien and OBrien", {"obrien": 3}),  # a name typed straight, a text curly
        ("the U.S. army", {"us": 1}),
        ("tell us about it", {}),  # a period inside a name stays: "U.S." is never "us"
        ("d artagnan", {}),  # a space is not an apostrophe left out
    ],
)
def test_names_typed_without_their_punctuation(text: str, found: dict[str, int]) -> None:
    linker = EntityLinker(
        [
            KnownEntity("bonacieux", ("Mme. Bonacieux",)),
            KnownEntity("dartagnan", ("d\u2019Artagnan",)),
            KnownEntity("us", ("U.S.",)),
            KnownEntity("obrien", ("O'Brien",)),
        ]
    )
    assert linker.mentions(text) == found
