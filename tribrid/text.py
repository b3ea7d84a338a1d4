"""Code-aware tokens shared by the indexer (documents) and the sparse leg (queries).

`parseConfigFile`, `parse_config_file` and `parse-config-file` all yield the parts
`parse`, `config`, `file`; an identifier with several parts also yields its joined form
(`parseconfigfile`), so an exact identifier match scores an extra, rare term.

File paths need nothing special: a chunk's indexed text starts with the header
`# file: shop/cart.py`, whose tokens are `file shop cart py`, so the queries `cart.py` and
`shop/cart` reach every chunk of that file.

The sparse leg reads queries three ways (see `parse_query`, `phrase_query`, `boolean_query`):
plain (every part required, joined identifiers a bonus), phrase (parts adjacent, in order,
checked on tsvector positions) and boolean (websearch syntax: "quoted phrases", OR, -exclusion).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_WORD = re.compile(r"[A-Za-z0-9_]+(?:-[A-Za-z0-9_]+)*")
# camelCase / PascalCase / acronym boundaries: "HTTPServerError2" -> HTTP, Server, Error, 2
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")

MAX_TERM_LEN = 64
# Positions in a tsvector are capped by PostgreSQL at 16383, and at 256 per lexeme.
MAX_POSITION = 16383
MAX_POSITIONS_PER_TERM = 255

STOPWORDS = frozenset(
    """a an and are as at be by do does for from how i in into is it its me my of on or that the
    their then there these this to was what when where which who why will with you your can get
    show find code function functions method""".split()
)


def split_identifier(word: str) -> list[str]:
    parts: list[str] = []
    for piece in re.split(r"[_\-]+", word):
        parts.extend(p.lower() for p in _PART.findall(piece))
    return parts


def _identifiers(text: str) -> list[tuple[list[str], str | None]]:
    """Each identifier of text as (its parts, its joined form or None), parts over MAX_TERM_LEN dropped."""
    out: list[tuple[list[str], str | None]] = []
    for match in _WORD.finditer(text):
        parts = split_identifier(match.group())
        kept = [p for p in parts if len(p) <= MAX_TERM_LEN]
        joined = "".join(parts) if len(parts) > 1 else None
        out.append((kept, joined if joined is not None and len(joined) <= MAX_TERM_LEN else None))
    return out


def tokenize(text: str) -> list[str]:
    """Lower-case terms in text order: each identifier's parts, then its joined form if it has several."""
    terms: list[str] = []
    for parts, joined in _identifiers(text):
        terms.extend(parts)
        if joined is not None:
            terms.append(joined)
    return terms


@dataclass(frozen=True, slots=True)
class QueryTerms:
    """A query's distinct terms: `required` parts (stop words dropped) and `bonus` joined identifiers."""

    required: tuple[str, ...]
    bonus: tuple[str, ...]

    @property
    def all(self) -> list[str]:
        return [*self.required, *self.bonus]


def parse_query(query: str) -> QueryTerms:
    """Plain-mode terms: a chunk should hold every required part; an exact identifier scores extra."""
    required: dict[str, None] = {}
    bonus: dict[str, None] = {}
    for parts, joined in _identifiers(query):
        for part in parts:
            if part not in STOPWORDS:
                required.setdefault(part, None)
        if joined is not None and joined not in STOPWORDS:
            bonus.setdefault(joined, None)
    return QueryTerms(tuple(required), tuple(t for t in bonus if t not in required))


def query_terms(query: str) -> list[str]:
    """Distinct query terms in first-seen order, stop words dropped."""
    seen: dict[str, None] = {}
    for term in tokenize(query):
        if term not in STOPWORDS:
            seen.setdefault(term, None)
    return list(seen)


def _quote(term: str) -> str:
    return f"'{term}'"  # terms are [a-z0-9_]+: nothing to escape


def _phrase(parts: list[str]) -> str:
    return " <-> ".join(_quote(p) for p in parts)


@dataclass(frozen=True, slots=True)
class TsQuery:
    """A tsquery literal finding the candidate chunks, and the positive terms that score them by BM25."""

    tsquery: str
    terms: tuple[str, ...]


def _scoring_terms(identifiers: list[tuple[list[str], str | None]]) -> list[str]:
    seen: dict[str, None] = {}
    for parts, _ in identifiers:
        for part in parts:
            if part not in STOPWORDS:
                seen.setdefault(part, None)
    for _, joined in identifiers:
        if joined is not None and joined not in STOPWORDS:
            seen.setdefault(joined, None)
    return list(seen)


def phrase_query(query: str) -> TsQuery | None:
    """Every part of the query adjacent and in order (stop words keep their place); None if no terms."""
    identifiers = _identifiers(query)
    parts = [p for ps, _ in identifiers for p in ps]
    scoring = _scoring_terms(identifiers)
    if not scoring:
        return None
    return TsQuery(_phrase(parts), tuple(scoring))


_UNIT = re.compile(r'(-?)"([^"]*)"?|(\S+)')


def boolean_query(query: str) -> TsQuery | None:
    """Websearch syntax: words are ANDed, "quoted text" is a phrase, OR between clauses, -x excludes x.

    A multi-part identifier is a phrase of its parts. Stop words alone are ignored. AND binds
    tighter than OR, as in PostgreSQL's websearch_to_tsquery. None if nothing positive remains.
    """
    groups: list[list[str]] = [[]]
    positive: list[tuple[list[str], str | None]] = []
    for match in _UNIT.finditer(query):
        negate, quoted, bare = match.group(1) == "-", match.group(2), match.group(3)
        if bare is not None:
            if bare.upper() == "OR":
                if groups[-1]:
                    groups.append([])
                continue
            negate = bare.startswith("-") and len(bare) > 1
            text = bare[1:] if negate else bare
        else:
            text = quoted or ""
        identifiers = _identifiers(text)
        parts = [p for ps, _ in identifiers for p in ps]
        if not parts or all(p in STOPWORDS for p in parts):
            continue
        clause = _phrase(parts)
        if negate:
            groups[-1].append(f"!({clause})")
        else:
            groups[-1].append(f"({clause})")
            positive.extend(identifiers)
    scoring = _scoring_terms(positive)
    live = [g for g in groups if g]
    if not scoring or not live:
        return None
    tsquery = " | ".join("(" + " & ".join(g) + ")" for g in live)
    return TsQuery(tsquery, tuple(scoring))


def _is_joined(terms: list[str], i: int) -> bool:
    """Whether terms[i] is the joined form of the parts just before it (as `tokenize` emits it)."""
    term = terms[i]
    total = 0
    for k in range(1, min(i, 16) + 1):
        total += len(terms[i - k])
        if total > len(term):
            return False
        if total == len(term):
            return k >= 2 and "".join(terms[i - k : i]) == term
    return False


def to_tsvector_literal(terms: list[str]) -> tuple[str, int]:
    """A tsvector literal keeping term frequency as positions, and the document length in terms.

    A joined identifier (`parseconfigfile` after `parse config file`) shares the position of its
    last part, so phrase queries see the parts as adjacent to the words around the identifier.
    Terms are [a-z0-9_]+ by construction, so quoting is trivial; built here rather than with
    PostgreSQL's parser because that parser would split identifiers on '_' differently.
    """
    positions: dict[str, list[int]] = {}
    pos = 0
    for i, term in enumerate(terms):
        if not (pos and _is_joined(terms, i)):
            pos += 1
        plist = positions.setdefault(term, [])
        if len(plist) < MAX_POSITIONS_PER_TERM:
            plist.append(min(pos, MAX_POSITION))
    # Positions must be distinct per lexeme once clamped.
    parts = [f"'{term}':{','.join(str(p) for p in sorted(set(plist)))}" for term, plist in positions.items()]
    return " ".join(parts), len(terms)
