"""Documentation linked to the code it names: a document chunk that writes `Context.invoke`,
`invoke()` or `BaseCommand` MENTIONS that definition, so the graph reaches the docs from the code
and the code from the docs (EntityChunks, ChunkEntities, expansion).

The forms a definition is named by in prose, each kept only when it names one definition of the
corpus (`get()` of ten classes names none of them):
- the last two parts of its qualified name, `Context.invoke` or `core.main` (and with `()`);
- its package's name and its own, `click.echo` for `click.utils.echo`: how libraries document
  what their package re-exports;
- its name with parentheses, `invoke()`, for functions and methods;
- its name in a code span, `` `echo` `` (Markdown, and reStructuredText roles such as
  :func:`echo`): the writer marked it as code;
- its bare name when that cannot be an English word: two capitals or more (`BaseCommand`,
  `HTTPServer`) or an underscore (`parse_args`); `Context` alone would be every "Context" that
  starts a sentence;
- its name in a Sphinx autodoc directive, `.. autofunction:: secho`, `.. autoclass:: File`,
  `.. autodata:: STRING` (a variable: the only form a variable is named by): the API reference of
  most Python projects, where the bare name is code whatever word it looks like. (A class's
  directive with `:members:` names its methods too, but a chunk linked to every method of a class
  becomes a hub the graph leg ranks first for any question about one of them: not linked.)
A function's keyword parameters name it as well: `multiple=True` in an example, ``expose_value``
in a code span, or the bare name when it cannot be an English word. Python documentation explains
an API by its parameters ("Boolean flags", `is_flag=True`), and a parameter documented for a class
is declared by its constructor, `Option.__init__`, which prose never writes. A parameter's form
never takes one a definition has, and like those it must name one definition.
A form that a public definition shares only with private ones (a part of their qualified names
starts with "_": `click._termui_impl.getchar` beside `click.termui.getchar`) names the public one:
documentation is written about the public API.
Matching is case-sensitive: code is written as it is named, and "basecommand" in prose is not it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping

from services.indexer.named_entities import MENTIONS
from tribrid.entity_linking import EntityLinker, KnownEntity
from tribrid.models import Entity, Relation

# Sphinx autodoc's directives by the kind of definition they document
AUTODOC = {
    "function": ("autofunction", "automethod", "autodecorator"),
    "class": ("autoclass", "autoexception"),
    "variable": ("autodata", "autoattribute"),
}
NAMED_KINDS = frozenset({"function", "class"})  # named in prose as well as by autodoc


def _distinctive(name: str) -> bool:
    return "_" in name.strip("_") or sum(c.isupper() for c in name) >= 2


def _public(entity: Entity) -> bool:
    """No part of its qualified name is private by Python's convention (`_termui_impl`, `_key`;
    a dunder such as `__init__` is not)."""
    return not any(
        part.startswith("_") and not (part.startswith("__") and part.endswith("__"))
        for part in entity.qualified_name.split(".")
    )


def surface_forms(entity: Entity) -> set[str]:
    """How prose names a definition (before the ambiguity cut)."""
    forms = {f"{directive}:: {entity.name}" for directive in AUTODOC.get(entity.type, ())}
    if entity.type not in NAMED_KINDS:
        return forms
    parts = entity.qualified_name.split(".")
    forms.add(f"`{entity.name}`")
    for dotted in {".".join(parts[-2:]), f"{parts[0]}.{parts[-1]}"} if len(parts) >= 2 else ():
        forms |= {dotted, f"{dotted}()"}
    if entity.type == "function":
        forms.add(f"{entity.name}()")
    if _distinctive(entity.name):
        forms.add(entity.name)
    return forms


def keyword_forms(keyword: str) -> set[str]:
    """How documentation names a function's keyword parameter (before the ambiguity cut)."""
    forms = {f"{keyword}=", f"`{keyword}`"}
    if _distinctive(keyword):
        forms.add(keyword)
    return forms


def _named(owners: Mapping[str, set[str]], public: set[str]) -> dict[str, str]:
    """form -> the one definition it names, or the one public definition beside private ones."""
    named = {}
    for form, ids in owners.items():
        chosen = ids if len(ids) == 1 else ids & public
        if len(chosen) == 1:
            named[form] = next(iter(chosen))
    return named


def code_linker(entities: Iterable[Entity], keywords: Mapping[str, tuple[str, ...]]) -> EntityLinker:
    """A linker over the definitions' forms, then their keyword parameters' forms that no
    definition has, each kept where it names exactly one definition, or exactly one public
    definition beside private ones. `keywords`: function entity id -> its keyword parameters."""
    owners: dict[str, set[str]] = defaultdict(set)
    by_keyword: dict[str, set[str]] = defaultdict(set)
    public: set[str] = set()
    for entity in entities:
        if entity.type in AUTODOC and entity.name:
            for form in surface_forms(entity):
                owners[form].add(entity.entity_id)
            for keyword in keywords.get(entity.entity_id, ()):
                for form in keyword_forms(keyword):
                    by_keyword[form].add(entity.entity_id)
            if _public(entity):
                public.add(entity.entity_id)
    named = _named(owners, public)
    named |= _named({f: ids for f, ids in by_keyword.items() if f not in owners}, public)
    forms: dict[str, list[str]] = defaultdict(list)
    for form, entity_id in sorted(named.items()):
        forms[entity_id].append(form)
    return EntityLinker(
        (KnownEntity(entity_id, tuple(names)) for entity_id, names in sorted(forms.items())),
        case_sensitive=True,
    )


def code_mentions(
    entities: Iterable[Entity], texts: Mapping[str, str], keywords: Mapping[str, tuple[str, ...]]
) -> list[Relation]:
    """MENTIONS from each document chunk (id -> text) to the definitions it names, with counts.
    `keywords`: function entity id -> the parameters a call may name."""
    linked = code_linker(entities, keywords).link(texts)
    return [
        Relation(chunk_id, entity_id, MENTIONS, count=count)
        for chunk_id, found in sorted(linked.items())
        for entity_id, count in sorted(found.items())
    ]
