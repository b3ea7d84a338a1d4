"""Known entities found in chunk texts by name and alias: per chunk, how many times each entity
is mentioned (`EntityLinker.link`).

One Aho-Corasick automaton holds every name. Names and texts are folded the same way, one
character at a time (compatibility decomposition and case folding: "Zürich" -> "zu\u0308rich",
"ß" -> "ss", full-width "Dell" -> "dell"), and everything after folding (the match, its token
boundaries, the overlaps) is decided on the folded text. Only counts are returned, so no offset
ever maps back to the original text, and a fold that changes the length ("STRASSE" / "straße")
cannot shift one. A name is also known without its punctuation as people type it ("Mme
Bonacieux", "dartagnan", a straight apostrophe for a curly one and back); a text is never changed.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from functools import cache

import ahocorasick
import regex

# Scripts written without spaces between words: a name in them matches anywhere. Script
# extensions, so that "ー" and the kana voicing marks count as kana.
_CONTINUOUS_SCRIPT = regex.compile(
    r"[\p{scx=Han}\p{scx=Hiragana}\p{scx=Katakana}\p{scx=Thai}\p{scx=Lao}\p{scx=Khmer}\p{scx=Myanmar}]"
)
# Korean writes its particles on the noun (서울에서 "in Seoul", 서울은): a name ending in Hangul
# may be followed by more Hangul; its start still needs a boundary.
_HANGUL = regex.compile(r"\p{scx=Hangul}")
# Accents an unaccented spelling drops; not kana voicing marks or Indic vowel signs (a different
# word without them)
_DIACRITICS = re.compile("[\u0300-\u036f\u1ab0-\u1aff\u1dc0-\u1dff\u20d0-\u20ff\ufe20-\ufe2f]")
# What the fold table translates: non-ASCII runs, less the CJK Unified Ideographs (each folds to
# itself), so that a Chinese text makes few runs
_TO_TRANSLATE = re.compile(r"[^\x00-\x7f\u4e00-\u9fff]+")
_MIN_NAME_LENGTH = 2
# How people type a name without its punctuation: an abbreviation's period before a space ("Mme.
# Bonacieux" -> "Mme Bonacieux", "St. Cloud") and an apostrophe inside a word ("d'Artagnan" ->
# "dArtagnan", "O'Brien"). A period inside a word stays ("U.S." never becomes "us").
_ABBREVIATION_PERIOD = re.compile(r"(?<=\w)\.(?=\s)")
_INNER_APOSTROPHE = re.compile(r"(?<=\w)['\u2019\u02bc](?=\w)")
_TYPOGRAPHIC_APOSTROPHE = re.compile("[\u2019\u02bc]")


class _Kind(Enum):
    OTHER = 0  # punctuation, symbols, spaces: always a token boundary
    SPACED = 1  # a word character of a script that separates words by spaces
    CONTINUOUS = 2  # a word character of a script written without spaces


@dataclass(frozen=True, slots=True)
class KnownEntity:
    entity_id: str
    names: tuple[str, ...]  # the name first, then aliases


@dataclass(frozen=True, slots=True)
class _Surface:
    """What one folded name matches: its length and which of its ends need a token boundary."""

    length: int  # in UTF-8 bytes
    check_start: bool
    check_end: bool
    entity_ids: tuple[str, ...]


@cache
def _is_word_char(char: str) -> bool:
    # a combining mark continues the word of the letter it sits on
    return char.isalnum() or char == "_" or unicodedata.category(char).startswith("M")


@cache
def _kind(char: str) -> _Kind:
    if not _is_word_char(char):
        return _Kind.OTHER
    return _Kind.CONTINUOUS if _CONTINUOUS_SCRIPT.match(char) else _Kind.SPACED


def _fold_char(char: str) -> str:
    folded = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", char).casefold())
    # a compatibility form must not move token boundaries: "™" -> "tm" would glue a name to the
    # sign after it, "½" -> "1", fraction slash, "2" would split a number ("⼈", a Kangxi
    # radical, -> "人" is fine: Han has no token boundaries)
    kind, kinds = _kind(char), {_kind(c) for c in folded}
    glues = kind is not _Kind.SPACED and _Kind.SPACED in kinds
    splits = kind is not _Kind.OTHER and _Kind.OTHER in kinds
    return char if glues or splits else folded


class _FoldTable(dict[int, str]):
    """Code point -> its folded form, computed the first time the character is seen (the alphabet
    is bounded, so the table is too)."""

    def __missing__(self, code: int) -> str:
        folded = self[code] = _fold_char(chr(code))
        return folded


_FOLDED = _FoldTable()


def _translate(run: re.Match[str]) -> str:
    return run[0].translate(_FOLDED)


def _fold(text: str) -> str:
    """Case-folded, compatibility-decomposed, whitespace runs as one space (none at the ends)."""
    if text.isascii():
        folded = text.lower()  # what the per-character fold does to ASCII
    else:
        # the table for the runs that need it (a lookup per character is slow), lower() for
        # ASCII; NFD puts stacked combining marks in canonical order, however the text had them
        folded = unicodedata.normalize("NFD", _TO_TRANSLATE.sub(_translate, text).lower())
    return " ".join(folded.split())


def _spaced(text: str) -> str:
    """Whitespace runs as one space (none at the ends), nothing else changed."""
    return " ".join(text.split())


def _spellings(name: str) -> tuple[str, ...]:
    """The folded name, with a typographic apostrophe as a straight one and a straight one as a
    typographic one, without abbreviation periods and inner apostrophes, and for an accented name
    the unaccented spellings of those (in this order, so that the output does not depend on string
    hashing)."""
    if len(unicodedata.normalize("NFKC", name).strip()) < _MIN_NAME_LENGTH:
        return ()
    straight = _TYPOGRAPHIC_APOSTROPHE.sub("'", name)  # a curly apostrophe as a keyboard types it
    curly = straight.replace("'", "\u2019")  # and a straight one as an editor's smart quotes make it
    bare = _INNER_APOSTROPHE.sub("", _ABBREVIATION_PERIOD.sub("", name))
    folded = [_fold(name), _fold(straight), _fold(curly), _fold(bare)]
    return tuple(dict.fromkeys(s for f in folded for s in (f, _DIACRITICS.sub("", f)) if s))


def _exact_spellings(name: str) -> tuple[str, ...]:
    if len(unicodedata.normalize("NFKC", name).strip()) < _MIN_NAME_LENGTH:
        return ()
    return (_spaced(name),)


def _byte_chars(data: bytes) -> str:
    """UTF-8 bytes as one character each, what the automaton reads. It scans a node's children
    one by one: on characters, CJK names give the root thousands of children; on bytes, at most
    256."""
    return data.decode("latin-1")


def _boundary_ok(data: bytes, start: int, end: int, surface: _Surface) -> bool:
    """Whether data[start:end] (UTF-8) stands alone: a spaced-script end of the name is not glued
    to a spaced-script word character, and no end splits a letter from its combining mark."""
    # a match of whole UTF-8 names starts and ends on character boundaries; up to 4 bytes hold
    # the neighbouring character, and the partial ones "ignore" drops are further away
    if start > 0 and surface.check_start:
        before = data[max(0, start - 4) : start].decode(errors="ignore")[-1]
        if _kind(before) is _Kind.SPACED:
            return False
    if end < len(data):
        after = data[end : end + 4].decode(errors="ignore")[0]
        if unicodedata.category(after).startswith("M"):
            return False
        if surface.check_end and _kind(after) is _Kind.SPACED:
            return False
    return True


class EntityLinker:
    """Finds known entities' names and aliases in texts: case-insensitive, accent-aware, on
    token boundaries for scripts written with spaces, anywhere for CJK and Thai. With
    `case_sensitive`, as written (code names: `BaseCommand` is not the prose's "basecommand")."""

    def __init__(self, entities: Iterable[KnownEntity], *, case_sensitive: bool = False) -> None:
        self._normalize = _spaced if case_sensitive else _fold
        spellings = _exact_spellings if case_sensitive else _spellings
        # spelling -> the entities it names, in the order they came
        owners: dict[str, dict[str, None]] = {}
        for entity in entities:
            for name in entity.names:
                for spelling in spellings(name):
                    owners.setdefault(spelling, {})[entity.entity_id] = None
        self._automaton = ahocorasick.Automaton()
        for spelling, ids in owners.items():
            surface = _Surface(
                length=len(spelling.encode()),
                check_start=_kind(spelling[0]) is _Kind.SPACED,
                check_end=_kind(spelling[-1]) is _Kind.SPACED and not _HANGUL.match(spelling[-1]),
                entity_ids=tuple(ids),
            )
            self._automaton.add_word(_byte_chars(spelling.encode()), surface)
        self._empty = not owners
        if owners:
            self._automaton.make_automaton()

    def mentions(self, text: str) -> dict[str, int]:
        """entity_id -> how many times this text names it. Left to right, the longest match at a
        position wins and matches inside it are not counted; a spelling several entities share
        counts for each of them."""
        counts: dict[str, int] = {}
        last_end = 0
        for start, end, surface in self._matches(self._normalize(text)):
            if start < last_end:
                continue
            last_end = end
            for entity_id in surface.entity_ids:
                counts[entity_id] = counts.get(entity_id, 0) + 1
        return counts

    def named(self, text: str) -> list[str]:
        """The entities the whole text is a spelling of (a name or alias as typed: "zurich" for
        Zürich), in the order they came."""
        folded = self._normalize(text)
        whole = len(folded.encode())
        return [
            entity_id
            for start, end, surface in self._matches(folded)
            if start == 0 and end == whole
            for entity_id in surface.entity_ids
        ]

    def link(self, texts: Mapping[str, str]) -> dict[str, dict[str, int]]:
        """chunk_id -> (entity_id -> count), only for chunks that mention a known entity."""
        linked: dict[str, dict[str, int]] = {}
        for chunk_id, text in texts.items():
            if counts := self.mentions(text):
                linked[chunk_id] = counts
        return linked

    def _matches(self, folded: str) -> list[tuple[int, int, _Surface]]:
        """Every match on token boundaries as (start, end, surface) in UTF-8 byte offsets: by
        start, longest first."""
        if self._empty:  # an automaton without words refuses to search
            return []
        data = folded.encode()
        found: list[tuple[int, int, _Surface]] = []
        surface: _Surface
        for last, surface in self._automaton.iter(_byte_chars(data)):
            start, end = last + 1 - surface.length, last + 1
            if _boundary_ok(data, start, end, surface):
                found.append((start, end, surface))
        found.sort(key=lambda match: (match[0], -match[1]))
        return found


def _time_synthetic(n_entities: int = 10_000, n_chunks: int = 10_000, chunk_chars: int = 1_500) -> None:
    """Build and link times for random entities (a Latin name and alias with accents, a Chinese
    alias) and random Latin and Chinese chunks that mention a few of them."""
    import random
    import time

    rng = random.Random(0)
    name_han = [chr(code) for code in range(0x4E00, 0x5600)]
    filler_han = [chr(code) for code in range(0x5600, 0x5800)] + ["\uff0c", "。"]

    def word(syllables: tuple[str, ...]) -> str:
        return "".join(rng.choice(syllables) for _ in range(rng.randint(3, 5)))

    def latin_name() -> str:  # syllables the filler words do not use, so names are rare
        return word(("kar", "lom", "mir", "den", "süs", "vel", "tor", "ün", "ré", "quo", "ßa")).capitalize()

    entities = [
        KnownEntity(
            f"e{i}", (f"{latin_name()} {latin_name()}", latin_name(), "".join(rng.sample(name_han, 3)))
        )
        for i in range(n_entities)
    ]
    latin = [entity.names[rng.randint(0, 1)] for entity in entities]
    filler = [
        word(("a", "be", "ci", "do", "fu", "ga", "hi", "jo", "ku", "le", "mo", "ni")) for _ in range(2_000)
    ]

    def chunk(names: list[str], words: list[str], separator: str) -> str:
        parts: list[str] = []
        length = 0
        while length < chunk_chars:
            parts.append(rng.choice(names) if rng.random() < 0.03 else rng.choice(words))
            length += len(parts[-1]) + len(separator)
        return separator.join(parts)

    began = time.perf_counter()
    linker = EntityLinker(entities)
    elapsed = time.perf_counter() - began
    print(f"{n_entities} entities, {3 * n_entities} names: automaton built in {elapsed:.2f} s")
    chinese = [entity.names[2] for entity in entities]
    for script, texts in (
        ("Latin", {f"c{i}": chunk(latin, filler, " ") for i in range(n_chunks)}),
        ("Chinese", {f"c{i}": chunk(chinese, filler_han, "") for i in range(n_chunks)}),
    ):
        began = time.perf_counter()
        linked = linker.link(texts)
        elapsed = time.perf_counter() - began
        total = sum(sum(counts.values()) for counts in linked.values())
        print(
            f"{len(texts)} {script} chunks, {sum(map(len, texts.values())) / 1e6:.1f} M characters: "
            f"linked in {elapsed:.2f} s ({len(linked)} with mentions, {total} mentions)"
        )


if __name__ == "__main__":
    _time_synthetic()
