"""The names a graph holds that a name fitting none may have meant, as people type them.

"Atos" for Athos, "Artagnan" or "d artagnan" for d'Artagnan (curly apostrophe), "Bonacieu" for
M. Bonacieux, 薛宝差 for 薛宝钗: a typo, a part of the name, other punctuation. Names and aliases
are compared folded (case, accents, and apostrophes, hyphens and dots as spaces) by rapidfuzz's
weighted ratio, which scores a whole name, a part of one and a reordering alike; one edit also
counts in a short name, where a ratio says little (two Han characters of three).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from rapidfuzz import fuzz, process
from rapidfuzz.distance import Levenshtein

from tribrid.text import fold

# Below this weighted ratio (0-100) a name is not offered. 80 keeps one typo in a five-letter name
# ("Atos": 89) and a name's last word ("Artagnan" in "d artagnan": 90), and leaves a name that
# merely shares a few letters.
MIN_SCORE = 80.0
# apostrophes (straight, curly, grave, acute), hyphens, dots, middle dots
_SEPARATORS = re.compile("[\\s'\u2019\u2018`\u00b4.\\-_\u00b7\u30fb]+")


def folded(name: str) -> str:
    return _SEPARATORS.sub(" ", fold(name.casefold())).strip()


class NearNames:
    """A graph's named entities by their folded names and aliases."""

    def __init__(self, entities: Iterable[tuple[str, Iterable[str], bool]]) -> None:
        """`entities`: (id, names and aliases, imported)."""
        owners: dict[str, dict[str, bool]] = {}
        for entity_id, names, imported in entities:
            for name in names:
                # a one-letter name ("I.", a recognizer's slip) is in every typed name; a real
                # one is found by its exact spelling
                if len(key := folded(name)) >= 2:
                    owners.setdefault(key, {})[entity_id] = imported
        self._names = sorted(owners)
        self._owners = {name: sorted(owners[name].items()) for name in self._names}

    def nearest(self, name: str, limit: int) -> list[str]:
        """Entity ids, nearest first: by score, then an imported entity (a graph someone curated)
        before a recognized one, then the shorter name, then the name and the id (deterministic)."""
        typed = folded(name)
        if not typed or limit <= 0:
            return []
        scored: dict[str, float] = {
            choice: score
            for choice, score, _ in process.extract(
                typed, self._names, scorer=fuzz.WRatio, score_cutoff=MIN_SCORE, limit=None
            )
        }
        if len(typed) <= 5:  # one edit in a short name scores low by ratio
            one_edit = process.extract(
                typed, self._names, scorer=Levenshtein.distance, score_cutoff=1, limit=None
            )
            for choice, _, _ in one_edit:
                scored.setdefault(choice, MIN_SCORE)
        ranked = sorted(
            (-score, not imported, len(choice), choice, entity_id)
            for choice, score in scored.items()
            for entity_id, imported in self._owners[choice]
        )
        return list(dict.fromkeys(entity_id for *_, entity_id in ranked))[:limit]
