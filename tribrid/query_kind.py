"""What kind of question a query is: read by the graph leg (which way to walk) and the gateway
(how much to trust each leg). Plain functions over the query text, no store, no model.

- structural: asks about code structure ("who calls X", "subclasses of Y", "methods of Z");
- identifier: names code and little else ("parse_args", "HTTPStatusError", "Context.invoke");
- natural: prose with no code-like token ("parse command line options");
- mixed: prose that names code ("how does parse_args handle defaults").
"""

from __future__ import annotations

import re
from typing import Literal

Intent = Literal["callers", "callees", "members", "subclasses", "bases"]
QueryKind = Literal["structural", "identifier", "natural", "mixed"]
QUERY_KINDS: tuple[QueryKind, ...] = ("structural", "identifier", "natural", "mixed")

_CALLERS = re.compile(
    r"\b(?:who|what|which\s+\w+)\s+(?:calls?|uses?|invokes?|references?|depends?\s+on)\b"
    r"|\b(?:callers?|usages?|uses|users)\s+of\b"
    r"|\b(?:functions?|methods?|code|places?)\s+(?:that|which)\s+(?:calls?|uses?|invokes?|references?)\b"
    r"|\bwhere\s+(?:is|are)\s+\S+\s+(?:called|used|invoked|referenced)\b"
    r"|\bis\s+\S+\s+(?:called|used)\b",
    re.IGNORECASE,
)
_CALLEES = re.compile(
    r"\b(?:what|which\s+\w+)\s+(?:does|do|did)\s+\S+\s+(?:call|use|invoke|depend\s+on|reference)\b"
    r"|\bcallees?\s+of\b"
    r"|\bdepends?\s+on\b"
    r"|\b(?:called|used|invoked)\s+(?:by|from|in)\b",
    re.IGNORECASE,
)
# What a class holds, what it inherits from, who inherits from it.
_MEMBERS = re.compile(
    r"\b(?:methods?|members?|attributes?|fields?)\s+(?:of|in|on)\b"
    r"|\bwhat\s+(?:methods|members|attributes|fields)\s+(?:does|do|has|have)\b"
    r"|\bwhat\s+does\s+(?:class\s+)?\S+\s+(?:contain|define|have)\b",
    re.IGNORECASE,
)
_BASES = re.compile(
    r"\b(?:base\s+class(?:es)?|superclass(?:es)?|parent\s+class(?:es)?)\s+of\b"
    r"|\bwhat\s+does\s+(?:class\s+)?\S+\s+(?:inherit|extend|derive)",
    re.IGNORECASE,
)
_SUBCLASSES = re.compile(
    r"\b(?:subclass(?:es)?|child\s+class(?:es)?|derived\s+class(?:es)?|implementations?)\s+of\b"
    r"|\b(?:inherits?|derives?|extends?)\s+from\b|\bwho\s+(?:inherits|extends|subclasses)\b"
    r"|\bclasses\s+(?:that|which)\s+(?:inherit|extend|derive|subclass)",
    re.IGNORECASE,
)

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*(?:\(\))?")
# snake_case, camelCase / PascalCase with an inner capital, dotted names, calls "f()".
_CODE_LIKE = re.compile(r"_|[a-z][A-Z]|[A-Z]{2,}[a-z]|\.|\(\)")


def detect_intent(query: str) -> Intent | None:
    """What a structural question asks for, if it says so (bases before subclasses: "what does X
    inherit from" asks for X's bases, "classes that inherit from X" for its subclasses)."""
    if _CALLERS.search(query):
        return "callers"
    if _CALLEES.search(query):
        return "callees"
    if _MEMBERS.search(query):
        return "members"
    if _BASES.search(query):
        return "bases"
    if _SUBCLASSES.search(query):
        return "subclasses"
    return None


def is_code_like(word: str) -> bool:
    return bool(_CODE_LIKE.search(word.strip("_") or word))


def classify_query(query: str, code_corpus: bool = True) -> QueryKind:
    """The query's kind; on a corpus of documents (code_corpus False) a question is never about
    code structure ("who is a member of the council" asks about people, not class members) and a
    lone plain word is a word, not a name."""
    if code_corpus and detect_intent(query) is not None:
        return "structural"
    words = _WORD.findall(query)
    code = [w for w in words if is_code_like(w)]
    if not words:
        return "natural"
    if len(code) == len(words) or (code_corpus and len(words) == 1):
        return "identifier"  # a lone word is most likely a name looked up as such
    return "mixed" if code else "natural"
