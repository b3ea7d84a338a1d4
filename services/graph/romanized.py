"""Chinese names as English-language readers type them: the graph leg finds 王熙凤 in "Who is Wang
Xifeng's husband?" (Hanyu Pinyin without tones, the spelling of most English translations and
writing about Chinese texts since the 1980s) and in "Who is Wang Hsi-feng's husband?" (Wade-Giles,
the spelling of older translations and scholarship: "Chia Pao-yü", "Hsüeh Pao-ch'ai").

The spellings of a name of 2-6 Han characters, from the usual reading of each character
(pypinyin), in each romanization: all syllables joined ("xifeng", "wangxifeng"), all spaced ("xi
feng"), and the first one or two syllables, a surname, apart from the rest joined or hyphenated
("wang xifeng", "wang xi-feng", "ouyang xiu"); in Wade-Giles also every syllable hyphenated, its
usual form for a given name ("pao-yü"). The linker also knows each spelling without its accents and
inner apostrophes ("pao-yu", "hsueh pao-chai"). A surname can be read otherwise than the same
character in a word (曾 is "zeng" as a surname, "ceng" in 曾经): the first character's other
readings are spelled too. Only the graph leg's reading of questions and entity names uses these
spellings, never the linking of chunks, so an English text is never linked to a Chinese name by a
chance word.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Callable, Iterable
from functools import cache
from typing import Any

from rapidfuzz.distance import Levenshtein

_HAN_NAME = re.compile(r"[\u4e00-\u9fff]{2,6}")
_FIRST_READINGS = 3  # the surname's readings spelled: its reading in the name, then others
_VOWEL_START = ("a", "o", "e")


@cache
def _pinyin() -> Any:
    """pypinyin, loaded when a graph first has a Chinese name, without its dictionary of phrases:
    12 MB and 0.04 s instead of 56 MB and 0.2 s (the 234 names of evals/entities/zh: 2 read
    otherwise, both place or event words, 京都 and 省亲; no person's name)."""
    os.environ.setdefault("PYPINYIN_NO_PHRASES", "true")
    import pypinyin

    return pypinyin


def _joined(syllables: Iterable[str]) -> str:
    """Syllables written as one word, with pinyin's apostrophe before a syllable that starts with
    a vowel ("xi'an"); the linker also knows the word without it."""
    word = ""
    for syllable in syllables:
        word += f"'{syllable}" if word and syllable.startswith(_VOWEL_START) else syllable
    return word


def _spellings_of(
    syllables: list[str], join: Callable[[Iterable[str]], str] = _joined, wade_giles: bool = False
) -> list[str]:
    """A name's spellings from its syllables, written as one word by `join`. Wade-Giles also
    hyphenates every syllable ("pao-yü", its usual given name) and a surname of two ("ou-yang
    hsiu"), and has no pinyin apostrophe: its apostrophes are inside syllables ("ch'ai")."""
    forms = [join(syllables), " ".join(syllables), *(["-".join(syllables)] if wade_giles else [])]
    for cut in (1, 2):
        if len(syllables) - cut >= 1 and (cut == 1 or len(syllables) >= 3):
            head, rest = join(syllables[:cut]), syllables[cut:]
            forms += [f"{head} {join(rest)}", f"{head} {'-'.join(rest)}"]
            if wade_giles and cut == 2:
                forms.append(f"{'-'.join(syllables[:cut])} {'-'.join(rest)}")
    return forms


def _readings(name: str, style: Any) -> list[list[str]]:
    """The name's syllables in a style: the usual reading of each character, then the first
    character's other readings (a surname's) with the rest, at most _FIRST_READINGS in all."""
    pypinyin = _pinyin()
    usual = [s[0] for s in pypinyin.pinyin(name, style=style, v_to_u=True)]
    first = pypinyin.pinyin(name[0], style=style, heteronym=True, v_to_u=True)[0]
    readings = list(dict.fromkeys([usual[0], *first]))[:_FIRST_READINGS]
    return [[reading, *usual[1:]] for reading in readings]


def romanized(name: str) -> tuple[str, ...]:
    """The romanized spellings of a name written in 2-6 Han characters, most likely first (pinyin,
    then Wade-Giles); none for any other name."""
    name = name.strip()
    if not _HAN_NAME.fullmatch(name):
        return ()
    styles = _pinyin().Style
    pinyin = (_spellings_of(syllables) for syllables in _readings(name, styles.NORMAL))
    # pypinyin writes Wade-Giles's ü as "v", a letter the system does not have
    wade_giles = (
        _spellings_of([s.replace("v", "ü") for s in syllables], "".join, wade_giles=True)
        for syllables in _readings(name, styles.WADEGILES)
    )
    return tuple(dict.fromkeys(itertools.chain.from_iterable((*pinyin, *wade_giles))))


def with_romanized(names: Iterable[str]) -> tuple[str, ...]:
    """The names, then the romanized spellings of those written in Han characters."""
    names = tuple(names)
    return tuple(dict.fromkeys((*names, *(s for name in names for s in romanized(name)))))


class RomanizedNames:
    """The romanized spellings of a graph's Chinese names, to offer as candidates for a name that
    fits none: a spelling that starts with it word by word ("jia" -> "jia baoyu", "jia zheng"), or
    one edit from it ("wang xifen")."""

    def __init__(self, entities: Iterable[tuple[str, Iterable[str]]]) -> None:
        """`entities`: (id, names and aliases)."""
        owners: dict[str, dict[str, None]] = {}
        for entity_id, names in entities:
            for name in names:
                for spelling in romanized(name):
                    owners.setdefault(spelling.replace("'", ""), {})[entity_id] = None
        self._owners = {spelling: list(ids) for spelling, ids in sorted(owners.items())}

    def nearest(self, name: str, limit: int) -> list[str]:
        """Entity ids, nearest first: an exact start before an edit, then the shorter spelling, then
        the spelling and the id (deterministic)."""
        typed = " ".join(name.casefold().replace("'", "").split())
        if not typed or not typed.isascii():
            return []
        ranked: list[tuple[int, int, str, str]] = []
        for spelling, ids in self._owners.items():
            starts = spelling == typed or spelling.startswith(typed + " ")
            distance = 0 if starts else Levenshtein.distance(spelling, typed, score_cutoff=1)
            if distance <= 1:
                ranked += [(distance, len(spelling), spelling, entity_id) for entity_id in ids]
        return list(dict.fromkeys(entity_id for *_, entity_id in sorted(ranked)))[:limit]
