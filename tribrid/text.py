"""Tokens shared by the indexer (documents) and the sparse leg (queries), for code and prose in any script.

Words are Unicode letters and digits (`regex`'s \\p classes), split code-style and case-folded:
`parseConfigFile`, `parse_config_file` and `parse-config-file` all yield the parts `parse`,
`config`, `file`; an identifier with several parts also yields its joined form
(`parseconfigfile`), so an exact identifier match scores an extra, rare term.

Latin-alphabet words are stemmed (English Snowball) in the index and in queries alike, so a
question's `parses`, `parsing` and `parsed` meet the code's `parse`: on every eval set BM25 ranked
as well or better with stems, most on prose questions about code (evals/README.md, "The sparse
leg's ranking"). Words
of other scripts, digits and mixed letter-digit words are kept as written.

Accents are kept (`café` stays `café`); with accent folding on (`sparse.fold_accents`, the
default) the indexer also writes each accented term's folded form (`cafe`, `zurich`) at the same
position, and a query requires the folded form and scores the accented one as a bonus: `Zürich`
and `zurich` find the same chunks, and the exact spelling ranks first.

Chinese is segmented with `jieba` (search mode: words and the dictionary words inside them), the
usual segmenter for Chinese BM25, pure Python, its dictionary inside the package; it loads once,
lazily, the first time Han text appears (`load_segmenter`, ~0.5-1 s: callers on an event loop run
it in a thread), or when the sparse leg starts and a corpus holds Chinese terms. Japanese (any kana
in the run) gets overlapping character bigrams instead: jieba's
dictionary is Chinese, and bigrams are the language-neutral CJK baseline that needs no dictionary.

File paths need nothing special: a chunk's indexed text starts with the header
`# file: shop/cart.py`, whose tokens are `file shop cart py`, so the queries `cart.py` and
`shop/cart` reach every chunk of that file.

Stop words apply to queries only, and depend on the corpus: `PROSE_STOPWORDS` (English function
words) always, `CODE_STOPWORDS` adds words like "function" and "method" that say nothing in a
question about code but are content in prose; the sparse leg picks per corpus (`stopwords_for`).

The sparse leg reads queries three ways (see `parse_query`, `phrase_query`, `boolean_query`):
plain (every part required, joined identifiers a bonus), phrase (parts adjacent, in order,
checked on tsvector positions) and boolean (websearch syntax: "quoted phrases", OR, -exclusion).
"""

from __future__ import annotations

import functools
import logging
import threading
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import regex
import snowballstemmer

_WORD = regex.compile(r"[\p{L}\p{M}\p{N}_]+(?:-[\p{L}\p{M}\p{N}_]+)*")
# camelCase / PascalCase / acronym boundaries: "HTTPServerError2" -> HTTP, Server, Error, 2;
# uncased scripts (Arabic, Thai, ...) and marks run with the lower-case letters
_PART = regex.compile(
    r"[\p{Lu}\p{Lt}]+(?=[\p{Lu}\p{Lt}][\p{Ll}])"
    r"|[\p{Lu}\p{Lt}]?[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
    r"|[\p{Lu}\p{Lt}][\p{Lu}\p{Lt}\p{M}]*"
    r"|\p{N}+"
)
_CJK_RUN = regex.compile(r"[\p{Han}\p{Hiragana}\p{Katakana}ー]+")
_KANA = regex.compile(r"[\p{Hiragana}\p{Katakana}]")
_SEPARATOR = regex.compile(r"[_\-]+")

MAX_TERM_LEN = 64
# Positions in a tsvector are capped by PostgreSQL at 16383, and at 256 per lexeme.
MAX_POSITION = 16383
MAX_POSITIONS_PER_TERM = 255

PROSE_STOPWORDS = frozenset(
    """a an and are as at be by do does for from how i in into is it its me my of on or that the
    their then there these this to was what when where which who why will with you your can get
    show find""".split()
)
# Words a question about code uses to say "in the code" ("the function that parses config").
CODE_STOPWORDS = PROSE_STOPWORDS | frozenset("code function functions method".split())
STOPWORDS = CODE_STOPWORDS  # the default for a code corpus
# Chunk languages that are prose, not code (the rest is code): decides a corpus's stop words.
PROSE_LANGUAGES = frozenset(
    {"text", "markdown", "rst", "restructuredtext", "html", "pdf", "docx", "asciidoc", "org"}
)


def stopwords_for(prose_share: float) -> frozenset[str]:
    """A corpus that is mostly prose keeps "function" and "method" as content words."""
    return PROSE_STOPWORDS if prose_share >= 0.5 else CODE_STOPWORDS


_english = snowballstemmer.stemmer("english")


@functools.lru_cache(maxsize=1 << 16)  # a corpus's vocabulary is small next to its word count
def stem(term: str) -> str:
    """The English stem of a case-folded term of ASCII letters (`parsing` -> `pars`); others as they are."""
    if not (term.isascii() and term.isalpha()):
        return term
    return str(_english.stemWord(term))


def fold(term: str) -> str:
    """The term without accents (NFKD, combining marks dropped): `zürich` -> `zurich`.

    Chinese and Japanese terms are kept whole: a kana's voicing mark (が) is not an accent."""
    if term.isascii() or _CJK_RUN.search(term):
        return term
    decomposed = unicodedata.normalize("NFKD", term)
    folded = unicodedata.normalize("NFC", "".join(c for c in decomposed if not unicodedata.combining(c)))
    # a term of combining marks alone has nothing to fold to: it stays as written (an empty term
    # would be an empty lexeme, which PostgreSQL rejects in a tsvector)
    return folded or term


_segmenter_lock = threading.Lock()
_jieba: Any = None


def load_segmenter() -> None:
    """Load jieba and its dictionary once (about a second); quiet, thread-safe."""
    global _jieba
    if _jieba is not None:
        return
    with _segmenter_lock:
        if _jieba is None:
            import jieba

            jieba.setLogLevel(logging.WARNING)
            jieba.initialize()
            _jieba = jieba


def needs_segmenter(text: str) -> bool:
    """Whether text has Han characters (and the segmenter is not loaded yet)."""
    return _jieba is None and regex.search(r"\p{Han}", text) is not None


def _segment_cjk(run: str) -> list[str]:
    if _KANA.search(run):
        return [run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)]
    load_segmenter()
    return [w for w in _jieba.lcut_for_search(run) if w.strip()]


def split_identifier(word: str) -> list[str]:
    """Case-folded code-style parts of one word without CJK (`HTTPServer` -> http, server)."""
    parts: list[str] = []
    for piece in _SEPARATOR.split(word):
        parts.extend(p.casefold() for p in _PART.findall(piece))
    return parts


def _identifiers(text: str) -> list[tuple[list[str], str | None]]:
    """Each identifier of text as (its parts, its joined form or None), parts over MAX_TERM_LEN dropped.

    A Chinese or Japanese run is its own identifier whose parts are its words, with no joined form.
    """
    out: list[tuple[list[str], str | None]] = []
    for match in _WORD.finditer(unicodedata.normalize("NFC", text)):
        word = match.group()
        pieces: list[tuple[str, bool]] = []
        last = 0
        for run in _CJK_RUN.finditer(word):
            pieces.append((word[last : run.start()], False))
            pieces.append((run.group(), True))
            last = run.end()
        pieces.append((word[last:], False))
        for piece, cjk in pieces:
            if not piece:
                continue
            parts = _segment_cjk(piece) if cjk else split_identifier(piece)
            kept = [p for p in parts if len(p) <= MAX_TERM_LEN]
            if not kept and not parts:
                continue
            joined = "".join(parts) if len(parts) > 1 and not cjk else None
            out.append((kept, joined if joined is not None and len(joined) <= MAX_TERM_LEN else None))
    return out


def index_tokens(text: str, fold_accents: bool = True) -> list[tuple[str, bool]]:
    """(term, shares the previous term's position) in text order, as the indexer writes them:
    the stems of `word_tokens`."""
    return [(stem(term), same_position) for term, same_position in word_tokens(text, fold_accents)]


def word_tokens(text: str, fold_accents: bool = True) -> list[tuple[str, bool]]:
    """(word, shares the previous word's position) in text order, before stemming.

    Each identifier's parts, then its joined form if it has several (at its last part's position,
    so phrase queries see the parts adjacent to the words around it); with fold_accents, each
    accented term is followed by its folded form at the same position.
    """
    tokens: list[tuple[str, bool]] = []

    def add(term: str, same_position: bool) -> None:
        tokens.append((term, same_position))
        if fold_accents:
            folded = fold(term)
            if folded != term:
                tokens.append((folded, True))

    for parts, joined in _identifiers(text):
        for part in parts:
            add(part, False)
        if joined is not None:
            add(joined, bool(parts))
    return tokens


def tokenize(text: str, fold_accents: bool = True) -> list[str]:
    """Case-folded words in text order: each identifier's parts, then its joined form if it has
    several (unstemmed: the indexer writes their stems, `index_tokens`)."""
    return [term for term, _ in word_tokens(text, fold_accents)]


@dataclass(frozen=True, slots=True)
class QueryTerms:
    """A query's distinct terms: `required` parts (stop words dropped) and `bonus` joined identifiers."""

    required: tuple[str, ...]
    bonus: tuple[str, ...]

    @property
    def all(self) -> list[str]:
        return [*self.required, *self.bonus]


def _query_form(term: str, fold_accents: bool) -> str:
    """What a query requires for a term: its stem, of its folded form when the index holds folded forms."""
    return stem(fold(term) if fold_accents else term)


def parse_query(query: str, stopwords: frozenset[str] = STOPWORDS, fold_accents: bool = True) -> QueryTerms:
    """Plain-mode terms: a chunk should hold every required part; an exact identifier or an exact
    accented spelling scores extra."""
    required: dict[str, None] = {}
    bonus: dict[str, None] = {}
    for parts, joined in _identifiers(query):
        for part in parts:
            if part not in stopwords:
                required.setdefault(_query_form(part, fold_accents), None)
                bonus.setdefault(stem(part), None)
        if joined is not None and joined not in stopwords:
            bonus.setdefault(_query_form(joined, fold_accents), None)
            bonus.setdefault(stem(joined), None)
    return QueryTerms(tuple(required), tuple(t for t in bonus if t not in required))


def query_terms(query: str, stopwords: frozenset[str] = STOPWORDS) -> list[str]:
    """Distinct query terms in first-seen order, stop words dropped (accents kept)."""
    seen: dict[str, None] = {}
    for term in tokenize(query, fold_accents=False):
        if term not in stopwords:
            seen.setdefault(term, None)
    return list(seen)


def has_terms(query: str, stopwords: frozenset[str] = STOPWORDS) -> bool:
    """Whether the query holds a term that is not a stop word (CJK text always does; checked
    without segmenting it, so no caller has to load the segmenter for this)."""
    if _CJK_RUN.search(query):
        return True
    return bool(query_terms(query, stopwords))


def _quote(term: str) -> str:
    escaped = term.replace("\\", "\\\\").replace("'", "''")  # terms are letters and digits: defensive
    return f"'{escaped}'"


def _phrase(parts: list[str]) -> str:
    return " <-> ".join(_quote(p) for p in parts)


@dataclass(frozen=True, slots=True)
class TsQuery:
    """A tsquery literal finding the candidate chunks, and the positive terms that score them by BM25."""

    tsquery: str
    terms: tuple[str, ...]


def _scoring_terms(
    identifiers: list[tuple[list[str], str | None]], stopwords: frozenset[str], fold_accents: bool
) -> list[str]:
    seen: dict[str, None] = {}
    for parts, _ in identifiers:
        for part in parts:
            if part not in stopwords:
                seen.setdefault(_query_form(part, fold_accents), None)
                seen.setdefault(stem(part), None)
    for _, joined in identifiers:
        if joined is not None and joined not in stopwords:
            seen.setdefault(_query_form(joined, fold_accents), None)
            seen.setdefault(stem(joined), None)
    return list(seen)


def phrase_query(
    query: str, stopwords: frozenset[str] = STOPWORDS, fold_accents: bool = True
) -> TsQuery | None:
    """Every part of the query adjacent and in order (stop words keep their place); None if no terms."""
    identifiers = _identifiers(query)
    parts = [_query_form(p, fold_accents) for ps, _ in identifiers for p in ps]
    scoring = _scoring_terms(identifiers, stopwords, fold_accents)
    if not scoring:
        return None
    return TsQuery(_phrase(parts), tuple(scoring))


_UNIT = regex.compile(r'(-?)"([^"]*)"?|(\S+)')


def boolean_query(
    query: str, stopwords: frozenset[str] = STOPWORDS, fold_accents: bool = True
) -> TsQuery | None:
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
        if not parts or all(p in stopwords for p in parts):
            continue
        clause = _phrase([_query_form(p, fold_accents) for p in parts])
        if negate:
            groups[-1].append(f"!({clause})")
        else:
            groups[-1].append(f"({clause})")
            positive.extend(identifiers)
    scoring = _scoring_terms(positive, stopwords, fold_accents)
    live = [g for g in groups if g]
    if not scoring or not live:
        return None
    tsquery = " | ".join("(" + " & ".join(g) + ")" for g in live)
    return TsQuery(tsquery, tuple(scoring))


def _is_joined(terms: Sequence[str], i: int) -> bool:
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


def _positioned(terms: Sequence[str]) -> Iterable[tuple[str, bool]]:
    """Plain terms (no folded forms) with the joined forms' shared positions recovered."""
    for i, term in enumerate(terms):
        yield term, i > 0 and _is_joined(terms, i)


def to_tsvector_literal(tokens: Sequence[str] | Sequence[tuple[str, bool]]) -> tuple[str, int]:
    """A tsvector literal keeping term frequency as positions, and the document length in terms.

    tokens are `index_tokens` (term, shares the previous position) or plain `tokenize(...,
    fold_accents=False)` terms. A joined identifier (`parseconfigfile` after `parse config file`)
    shares the position of its last part, so phrase queries see the parts as adjacent to the words
    around the identifier; a folded form shares its accented term's position and does not count in
    the length (BM25 sees the same document length with folding on or off). Built here rather than
    with PostgreSQL's parser because that parser would split identifiers on '_' differently.
    """
    pairs: Iterable[tuple[str, bool]] = (
        _positioned(tokens)  # type: ignore[arg-type]
        if tokens and isinstance(tokens[0], str)
        else tokens  # type: ignore[assignment]
    )
    positions: dict[str, list[int]] = {}
    pos = 0
    length = 0
    previous = ""
    for term, same_position in pairs:
        if not (pos and same_position):
            pos += 1
        if not (same_position and term != previous and term == fold(previous)):
            length += 1
        previous = term
        plist = positions.setdefault(term, [])
        if len(plist) < MAX_POSITIONS_PER_TERM:
            plist.append(min(pos, MAX_POSITION))
    # Positions must be distinct per lexeme once clamped.
    parts = [
        f"{_quote(term)}:{','.join(str(p) for p in sorted(set(plist)))}" for term, plist in positions.items()
    ]
    return " ".join(parts), length
