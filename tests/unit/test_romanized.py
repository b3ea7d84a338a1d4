"""Chinese names spelled as English-language readers type them (services.graph.romanized)."""

from __future__ import annotations

from services.graph.romanized import RomanizedNames, romanized, with_romanized
from tribrid.entity_linking import EntityLinker, KnownEntity


def test_a_name_is_spelled_in_pinyin_with_its_surname_apart() -> None:
    spellings = romanized("王熙凤")
    assert spellings[:4] == ("wangxifeng", "wang xi feng", "wang xifeng", "wang xi-feng")
    assert "ouyang xiu" in romanized("欧阳修")  # a surname of two characters
    assert "xi'an" in romanized("西安")  # pinyin's apostrophe before a vowel


def test_a_surname_is_also_read_as_a_surname() -> None:
    assert {"ceng guofan", "zeng guofan"} <= set(romanized("曾国藩"))  # 曾 is "zeng" as a surname
    assert "lü bu" in romanized("吕布")


def test_only_names_written_in_han_characters_are_spelled() -> None:
    assert romanized("Chasca") == romanized("王") == romanized("恰斯卡Q") == ()
    assert with_romanized(("熙凤", "Xifeng"))[:6] == (
        "熙凤",
        "Xifeng",
        "xifeng",
        "xi feng",
        "yifeng",
        "yi feng",
    )


def test_a_name_is_spelled_in_wade_giles_too() -> None:
    assert {"chia pao-yü", "chia paoyü", "chia pao yü"} <= set(romanized("贾宝玉"))
    assert "pao-yü" in romanized("宝玉")  # a given name alone, hyphenated
    assert "hsüeh pao-ch'ai" in romanized("薛宝钗")  # ü, and the apostrophe inside a syllable
    assert "ou-yang hsiu" in romanized("欧阳修")
    assert "tseng kuo-fan" in romanized("曾国藩")  # the surname's reading


def test_the_linker_finds_wade_giles_as_people_type_it() -> None:
    linker = EntityLinker(
        [
            KnownEntity("baoyu", with_romanized(("贾宝玉", "宝玉"))),
            KnownEntity("baochai", with_romanized(("薛宝钗", "宝钗"))),
        ]
    )
    smart_quote = "\u2019"  # as an editor types the apostrophe
    assert linker.mentions(f"Chia Pao-yü meets Hsüeh Pao-ch{smart_quote}ai") == {"baoyu": 1, "baochai": 1}
    assert linker.mentions("Did Pao-yu see Hsueh Pao-chai? paoyu did.") == {"baoyu": 2, "baochai": 1}
    assert linker.mentions("a chia pao yu") == {"baoyu": 1}
    assert linker.mentions("the pao of yu") == {}


def test_the_linker_finds_the_spellings_in_any_case_and_without_the_apostrophe() -> None:
    linker = EntityLinker(
        [
            KnownEntity("p022", with_romanized(("王熙凤", "熙凤"))),
            KnownEntity("xian", with_romanized(("西安",))),
        ]
    )
    assert linker.mentions("Who is Wang Xifeng's husband?") == {"p022": 1}
    assert linker.mentions("Wang Xi-feng and XIFENG") == {"p022": 2}
    assert linker.mentions("from Xian to Xi'an") == {"xian": 2}
    assert linker.mentions("王熙凤") == {"p022": 1}
    assert linker.mentions("the wangxi fence") == {}  # a spelling ends on a word's end


def test_a_name_that_fits_none_is_offered_the_nearest_spellings() -> None:
    names = RomanizedNames(
        [
            ("baoyu", ("贾宝玉", "宝玉")),
            ("zheng", ("贾政",)),
            ("xifeng", ("王熙凤", "熙凤")),
            ("other", ("Other",)),
        ]
    )
    assert names.nearest("Jia", 10) == ["baoyu", "zheng"]  # a surname: each of the family, shorter first
    assert names.nearest("wang xifen", 10) == names.nearest("Xifen", 10) == ["xifeng"]  # one edit
    assert names.nearest("jia", 1) == ["baoyu"]
    assert names.nearest("Chia", 10) == ["zheng", "baoyu"]  # in Wade-Giles ("chia cheng" first)
    assert names.nearest("Qwxyz", 10) == names.nearest("贾", 10) == names.nearest("Oth", 10) == []
