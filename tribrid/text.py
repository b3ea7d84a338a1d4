"""Code-aware tokens shared by the indexer (documents) and the sparse leg (queries).

`parseConfigFile`, `parse_config_file` and `parse-config-file` all yield the parts
`parse`, `config`, `file`; an identifier with several parts also yields its joined form
(`parseconfigfile`), so an exact identifier match scores an extra, rare term.
"""

from __future__ import annotations

import re

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


def tokenize(text: str) -> list[str]:
    """Lower-case terms in text order: each identifier's parts, then its joined form if it has several."""
    terms: list[str] = []
    for match in _WORD.finditer(text):
        parts = split_identifier(match.group())
        terms.extend(p for p in parts if len(p) <= MAX_TERM_LEN)
        if len(parts) > 1:
            joined = "".join(parts)
            if len(joined) <= MAX_TERM_LEN:
                terms.append(joined)
    return terms


def query_terms(query: str) -> list[str]:
    """Distinct query terms in first-seen order, stop words dropped."""
    seen: dict[str, None] = {}
    for term in tokenize(query):
        if term not in STOPWORDS:
            seen.setdefault(term, None)
    return list(seen)


def to_tsvector_literal(terms: list[str]) -> tuple[str, int]:
    """A tsvector literal keeping term frequency as positions, and the document length in terms.

    Terms are [a-z0-9_]+ by construction, so quoting is trivial; built here rather than with
    PostgreSQL's parser because that parser would split identifiers on '_' differently.
    """
    positions: dict[str, list[int]] = {}
    for pos, term in enumerate(terms, start=1):
        plist = positions.setdefault(term, [])
        if len(plist) < MAX_POSITIONS_PER_TERM:
            plist.append(min(pos, MAX_POSITION))
    # Positions must be distinct per lexeme once clamped.
    parts = [f"'{term}':{','.join(str(p) for p in sorted(set(plist)))}" for term, plist in positions.items()]
    return " ".join(parts), len(terms)
