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
- its name in a Sphinx autodoc directive, `.. autofunction:: secho`, `.. autoclass:: File`: the
  API reference of most Python projects, where the bare name is code whatever word it looks like.
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

NAMED_KINDS = frozenset({"function", "class"})
# Sphinx autodoc's directives by the kind of definition they document
AUTODOC = {
    "function": ("autofunction", "automethod", "autodecorator"),
    "class": ("autoclass", "autoexception"),
}


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
    parts = entity.qualified_name.split(".")
    forms: set[str] = {f"`{entity.name}`"}
    for dotted in {".".join(parts[-2:]), f"{parts[0]}.{parts[-1]}"} if len(parts) >= 2 else ():
        forms |= {dotted, f"{dotted}()"}
    if entity.type == "function":
        forms.add(f"{entity.name}()")
    if _distinctive(entity.name):
        forms.add(entity.name)
    forms |= {f"{directive}:: {entity.name}" for directive in AUTODOC.get(entity.type, ())}
    return forms


def code_linker(entities: Iterable[Entity]) -> EntityLinker:
    """A linker over the definitions' forms that name exactly one definition, or exactly one
    public definition beside private ones."""
    owners: dict[str, set[str]] = defaultdict(set)
    public: set[str] = set()
    for entity in entities:
        if entity.type in NAMED_KINDS and entity.name:
            for form in surface_forms(entity):
                owners[form].add(entity.entity_id)
            if _public(entity):
                public.add(entity.entity_id)
    forms: dict[str, list[str]] = defaultdict(list)
    for form, ids in sorted(owners.items()):
        named = ids if len(ids) == 1 else ids & public
        if len(named) == 1:
            forms[next(iter(named))].append(form)
    return EntityLinker(
        (KnownEntity(entity_id, tuple(names)) for entity_id, names in sorted(forms.items())),
        case_sensitive=True,
    )


def code_mentions(entities: Iterable[Entity], texts: Mapping[str, str]) -> list[Relation]:
    """MENTIONS from each document chunk (id -> text) to the definitions it names, with counts."""
    linked = code_linker(entities).link(texts)
    return [
        Relation(chunk_id, entity_id, MENTIONS, count=count)
        for chunk_id, found in sorted(linked.items())
        for entity_id, count in sorted(found.items())
    ]
