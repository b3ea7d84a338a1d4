"""Structural sets from libraries the graph was never tuned on, with every call site counted.

    .venv/bin/python -m evaluation.unseen_sets        # writes evals/sets/unseen-<library>.jsonl

Each installed library in LIBRARIES is copied to <work>/unseen/<library>/ (its own corpus,
`unseen-<library>`) and read with Python's `ast`, never with our extractor. The ground truth
counts call sites by name: a function calls X when its body (or a decorator) has a call whose
callee is the name X or an attribute `.X`, instantiation (`X(...)`, `raise X(...)`) included.
Only names the library defines once are asked about, so a name means one definition. Every
question is asked in each phrasing of its kind (PHRASINGS), tagged with the phrasing, so a
family of wordings that the question reader misses shows up on its own line. `rich` is never
used: it stays unseen.

HELD_OUT lists the sets no setting may be tuned on; the others are for tuning.

REWORDED_PHRASINGS .. REWORDED_PHRASINGS_14 are tables of wordings written (sessions 8 to 17) by
helpers that had never seen the question reader or any set, each committed before the reader was
changed after it. The first twelve were each measured once while held out (rounds 2-13 of
evals/README.md), then tuned on; the thirteenth and fourteenth are held out now (rounds 14 and 15:
`unseen-starlette-reworded-13`, `-14`, and lang_sets.REWORDED_SETS). Round 14 was measured once
(session 16) and never tuned on; the learned reading of session 17 was fit on neither.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import importlib.metadata
import json
import random
import shutil
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluation import REPO_ROOT
from evaluation.build_sets import (
    SETS_DIR,
    CodeBase,
    build_docstring,
    module_name,
    strip_docstrings,
    write_jsonl,
)

LIBRARIES = ("anyio", "starlette")  # jinja2: its _identifier.py breaks sparse indexing (see the report)
# a set asked in other wordings only -> the library whose corpus it searches
REWORDED_SETS = {
    "unseen-starlette-reworded": "starlette",
    "unseen-starlette-reworded-2": "starlette",
    "unseen-starlette-reworded-3": "starlette",
    "unseen-starlette-reworded-4": "starlette",
    "unseen-starlette-reworded-5": "starlette",
    "unseen-starlette-reworded-6": "starlette",
    "unseen-starlette-reworded-7": "starlette",
    "unseen-starlette-reworded-8": "starlette",
    "unseen-starlette-reworded-9": "starlette",
    "unseen-starlette-reworded-10": "starlette",
    "unseen-starlette-reworded-11": "starlette",
    "unseen-starlette-reworded-12": "starlette",
    "unseen-starlette-reworded-13": "starlette",
    "unseen-starlette-reworded-14": "starlette",
}
# docstring -> function sets of libraries nobody tuned on, each searched in its libraries'
# docstring-stripped copy. unseen-docstring was looked at while the confidence weights were chosen
# (session 9); unseen-docstring-2 was written before they were measured on it; unseen-docstring-3
# was written (session 11) before any change of that session was measured on it, and tuned on from
# session 14; unseen-docstring-4 was written (session 14) before the re-ranking of that session.
DOCSTRING_SETS = {
    "unseen-docstring": ("anyio", "starlette"),
    "unseen-docstring-2": ("docx", "pypdf"),
    "unseen-docstring-3": ("jinja2", "dateutil"),
    "unseen-docstring-4": ("werkzeug", "pyparsing"),
}
DOCSTRING_QUERIES = 150
HELD_OUT = (
    "unseen-starlette",
    "unseen-starlette-reworded-13",
    "unseen-starlette-reworded-14",
    "unseen-docstring-2",
    "unseen-docstring-4",
)
WORK_DIR = REPO_ROOT / ".state" / "eval-unseen"
SEED = 20261124
QUESTIONS = {"callers": 14, "callees": 8, "subclasses": 8}

# kind -> (phrasing family, template); every question is asked in each of its kind's phrasings
PHRASINGS: dict[str, tuple[tuple[str, str], ...]] = {
    "callers": (
        ("question", "who calls {x}"),
        ("relative", "functions that call {x}"),
        ("passive", "where is {x} called"),
        ("noun", "{x} usages"),
        ("uses", "what uses {x}"),
    ),
    "callees": (
        ("question", "what does {x} call"),
        ("passive", "functions called by {x}"),
        ("noun", "callees of {x}"),
    ),
    "subclasses": (
        ("noun", "subclasses of {x}"),
        ("relative", "classes that inherit from {x}"),
        ("derived", "classes derived from {x}"),
    ),
}

# Wordings nobody tuned the question reader on (see the module's docstring), verbatim.
REWORDED_PHRASINGS: dict[str, tuple[tuple[str, str], ...]] = {
    "callers": (
        ("keyword", "{x} call sites"),
        ("full-question", "Which functions call {x}?"),
        ("imperative", "Show me every place that invokes {x}"),
        ("passive-q", "Where is {x} being invoked from?"),
        ("gerund", "finding all callers of {x}"),
        ("noun-phrase", "incoming calls to {x}"),
        ("casual", "anything calling {x} in here?"),
        ("terse", "callers: {x}"),
    ),
    "callees": (
        ("keyword", "{x} outgoing calls"),
        ("full-question", "Which functions does {x} invoke?"),
        ("imperative", "Show me the methods called inside {x}"),
        ("passive-q", "What gets called when {x} runs?"),
        ("gerund", "listing the calls made by {x}"),
        ("noun-phrase", "functions invoked from within {x}"),
        ("casual", "what's {x} calling under the hood?"),
        ("terse", "callees: {x}"),
    ),
    "subclasses": (
        ("keyword", "{x} implementations"),
        ("full-question", "Which classes extend {x}?"),
        ("imperative", "Show all classes that implement {x}"),
        ("passive-q", "What classes is {x} inherited by?"),
        ("gerund", "finding every class inheriting from {x}"),
        ("noun-phrase", "child classes of {x}"),
        ("casual", "anything subclassing {x}?"),
        ("terse", "subclasses: {x}"),
    ),
}

# A second helper's wordings (see the module's docstring), verbatim.
REWORDED_PHRASINGS_2: dict[str, tuple[tuple[str, str], ...]] = {
    "callers": (
        ("how-q", "How do I find every function that invokes {x}?"),
        ("is-q", "Is {x} called from anywhere, or is it dead code?"),
        ("can-you", "Can you trace all the call paths that lead into {x}?"),
        ("need", "I need a list of every method that calls {x} before I change its signature."),
        ("please", "Please list each caller of {x} so we can assess the impact of this change."),
        ("instantiate", "Where in the codebase do we construct or instantiate {x}?"),
        ("fan-in", "fan-in of {x}: which functions call into it"),
        ("are-q", "Are there any remaining callers of {x} after the refactor?"),
    ),
    "callees": (
        ("how-q", "How does {x} fan out, i.e. which functions does it call?"),
        ("is-q", "Is {x} invoking any other methods internally, and if so which?"),
        ("can-you", "Can you trace the outgoing calls from {x} one level deep?"),
        ("need", "I need to know every method that {x} calls in its body."),
        ("please", "Please enumerate the functions that get called from inside {x}."),
        ("fan-out", "fan-out of {x}"),
        ("delegate", "Which helper functions does {x} delegate to?"),
        ("downstream", "downstream call graph of {x}"),
    ),
    "subclasses": (
        ("how-q", "How many classes inherit from {x}, and which ones are they?"),
        ("is-q", "Is {x} extended by any other class?"),
        ("can-you", "Can you show me the inheritance hierarchy below {x}?"),
        ("need", "I need every concrete class that implements the {x} interface."),
        ("please", "Please list every derived class of {x}."),
        ("override", "Which subclasses override methods inherited from {x}?"),
        ("british", "Which classes specialise {x} through inheritance?"),
        (
            "review",
            "Changing the constructor of {x} will break anything that subclasses it, so can someone"
            " find all of those classes?",
        ),
    ),
}
# A third helper's wordings (see the module's docstring), verbatim.
REWORDED_PHRASINGS_3: dict[str, tuple[tuple[str, str], ...]] = {
    "callers": (
        ("search-terse", "{x} invoked where"),
        ("backtick-question", "Which parts of the codebase end up calling `{x}`?"),
        ("delete-goal", "Before I delete {x}, I need to know every function that still makes a call to it."),
        (
            "pr-comment",
            "Did you check what else calls into {x}? Changing its signature could break the code"
            " that hits it.",
        ),
        (
            "slack-informal",
            "hey quick q, what code paths lead into {x}? grep is giving me way too much noise",
        ),
        (
            "non-native",
            "Please show me which methods are calling the {x}, I want understand who is using it.",
        ),
        (
            "long-chat",
            "I'm refactoring our error handling. Can you give me a complete list of methods across the repo"
            " that call {x}, including the ones in tests?",
        ),
        ("instantiation", "Where in the code do we create new instances of {x}?"),
    ),
    "callees": (
        ("search-terse", "{x} internal calls"),
        ("backtick-question", "What other functions does `{x}` reach out to when it executes?"),
        (
            "inline-goal",
            "Before I inline {x}, show me the helper functions it invokes so I know what I'm pulling in.",
        ),
        ("slack-informal", "yo does {x} hit any other functions or is it self-contained?"),
        (
            "non-native",
            "Which are the functions that {x} is calling inside of it? I want know what happen when I"
            " use it.",
        ),
        (
            "pr-comment",
            "Can you list what {x} calls out to? I'm worried it triggers a DB write somewhere further down.",
        ),
        (
            "long-chat",
            "I'm trying to understand {x} without reading the whole thing. Could you give me a rundown of the"
            " methods and functions it calls directly?",
        ),
        ("name-first", "{x}: which routines does it call into?"),
    ),
    "subclasses": (
        ("search-terse", "classes extending {x}"),
        ("backtick-question", "Which classes have `{x}` as their parent or base class?"),
        (
            "refactor-goal",
            "Before I add an abstract method to {x}, I need to know every class that has it as a superclass"
            " so I can update them all.",
        ),
        ("slack-informal", "anyone know what classes subclass {x}? wanna change the constructor"),
        ("non-native", "Please give me all the class which is extending from {x}, I need to modify them."),
        (
            "pr-comment",
            "This changes the contract of {x}. Have you checked all the classes built on top of it through"
            " inheritance?",
        ),
        ("interface", "Which structs or classes fulfill the {x} interface?"),
        (
            "long-chat",
            "I'm looking at the class hierarchy and want to see all the descendants of {x}, both the direct"
            " children and the ones further down.",
        ),
    ),
}
# Round 5 (session 9), written by a helper that saw neither the reader nor any set.
REWORDED_PHRASINGS_4: dict[str, tuple[tuple[str, str], ...]] = {
    "callers": (
        ("terse-find-usages", "find usages of {x}"),
        (
            "code-review-call-sites",
            "Before I approve this PR: where else in the codebase is {x} being called from?",
        ),
        (
            "bug-hunt-trace-origin",
            (
                "I'm seeing a crash caused by a bad argument reaching {x}. Which functions "
                "invoke it, so I can trace where the bad value comes from?"
            ),
        ),
        (
            "onboarding-who-uses",
            ("Hi, I'm new to this repo. Could you tell me which parts of the code end up calling {x}?"),
        ),
        (
            "long-context-what-breaks",
            (
                "We're cleaning up our public API for the next major release and I'd like to "
                "add a required keyword argument and drop the legacy positional one. I don't "
                "want to break anything downstream, so before I touch the signature: what "
                "breaks if I change {x}, i.e. which functions and methods call it and would "
                "need their call sites updated?"
            ),
        ),
        ("sloppy-typo-called-from", "whre is {x} getting called from?? cant find any refs"),
        (
            "non-native-doing-call",
            "Please, which methods are doing the call to {x} in this project?",
        ),
        (
            "name-first-who-relies",
            "{x} -- who relies on it? list every caller or place that instantiates it",
        ),
    ),
    "callees": (
        ("terse-callees-list", "callees of {x}"),
        (
            "code-review-under-the-hood",
            (
                "Reviewing this change, {x} seems to do a lot. Which other functions "
                "does it invoke under the hood?"
            ),
        ),
        (
            "bug-hunt-name-first-blocking",
            (
                "{x} hangs now and then; what functions and methods does it call, so I can "
                "check which of them blocks?"
            ),
        ),
        (
            "onboarding-step-through",
            (
                "I'm trying to understand how {x} works step by step. What helper "
                "functions and methods does it call?"
            ),
        ),
        (
            "long-context-downstream-deps",
            (
                "We're splitting our monolith into smaller packages and I've been asked to "
                "move one function into its own module. To avoid circular imports I need "
                "to know its downstream dependencies first. Concretely: which functions or "
                "methods are called from inside the body of {x}?"
            ),
        ),
        ("sloppy-lowercase-inside", "wat functions does {x} call inside it"),
        (
            "non-native-is-calling",
            "Which are the functions that {x} is calling inside of its implementation?",
        ),
        (
            "fan-out-name-at-end",
            "show me the fan-out: every function or method called directly by {x}",
        ),
    ),
    "subclasses": (
        ("terse-derived-classes", "derived classes {x}"),
        (
            "code-review-abstract-method",
            (
                "If this PR adds a new abstract method to {x}, which classes that inherit "
                "from it will have to implement it?"
            ),
        ),
        (
            "bug-hunt-bad-override",
            (
                "Some class is overriding a method wrongly and I suspect it's a child of "
                "{x}. Which classes inherit from it?"
            ),
        ),
        (
            "onboarding-implementations",
            "New here: what concrete implementations of the {x} base class exist in the code base?",
        ),
        (
            "long-context-hierarchy",
            (
                "I'm documenting our plugin architecture for the team wiki and want to "
                "draw the class hierarchy diagram. Each plugin type is supposed to derive "
                "from a common base, but people have added layers over time. Can you list "
                "all classes, direct and indirect, that extend {x}?"
            ),
        ),
        ("sloppy-typo-inherit", "wich classes inherit {x}? need full list incl indirect ones"),
        (
            "non-native-making-extension",
            "Which classes are making the extension of the class {x}?",
        ),
        (
            "implementors-name-at-end",
            "list every implementor or child class whose parent class is {x}",
        ),
    ),
}
# Round 6 (session 9), written by a fifth helper that saw neither the reader nor any set.
REWORDED_PHRASINGS_5: dict[str, tuple[tuple[str, str], ...]] = {
    "callers": (
        (
            "ide-debug-trace",
            "I'm stepping through a failing test and {x} keeps getting a None argument, "
            "which functions call it so I can trace where the None comes from?",
        ),
        (
            "manager-request",
            "Can someone pull together a list of every place in the codebase that invokes {x}? "
            "Need it for the deprecation plan.",
        ),
        (
            "long-context-blast-radius",
            "We're planning to change the signature of {x} so it takes a single options object "
            "instead of five positional arguments. Before I open the PR I want to understand the "
            "blast radius, because last time we changed something like this a couple of scripts in "
            "the tools folder broke silently and nobody noticed for a week. Could you list all the "
            "functions and methods that call it (or construct it, if it's a class), including tests?",
        ),
        ("terse-call-sites", "{x} call sites"),
        ("passive-where-from", "where in this repo is {x} being called from?"),
        ("code-formatted-paths", "what code paths end up calling `{x}()`?"),
        (
            "used-anywhere-else",
            "is {x} used anywhere else outside its own module? which functions use it?",
        ),
        ("typo-lowercase", "whihc functions instanciate or call {x}"),
    ),
    "callees": (
        (
            "ide-what-runs",
            "debugging this now: what ends up running when I call {x}? "
            "list the functions it calls internally",
        ),
        (
            "manager-dependencies",
            "Please summarise which other functions and methods {x} calls directly.",
        ),
        (
            "long-context-profiling",
            "I'm trying to figure out why {x} is so slow in production. The profiler flame graph is "
            "pretty noisy and mostly shows time spent somewhere below it, but the frames are all "
            "inlined wrappers so I can't tell which helper is actually responsible. Before I start "
            "adding timers everywhere, could you list the functions and methods that it calls from "
            "its body, so I know which downstream helpers are worth instrumenting first?",
        ),
        ("terse-outgoing", "outgoing calls from {x}"),
        (
            "passive-inside-body",
            "the functions that get called inside the body of {x}, which ones are they?",
        ),
        ("code-formatted-under-hood", "`{x}()` - what does it invoke under the hood?"),
        (
            "relies-on-helpers",
            "which helper functions does {x} rely on, i.e. what gets called from inside it?",
        ),
        ("typo-short", "funcs called by {x} in its implmentation"),
    ),
    "subclasses": (
        ("java-implementors", "Show me all implementors of {x} in this project."),
        ("go-satisfy-interface", "which types satisfy the {x} interface?"),
        ("csharp-derive", "What classes derive from {x} in this solution?"),
        (
            "python-overrides",
            "which classes inherit from {x} and override its methods?",
        ),
        (
            "built-on-top-base",
            "what's built on top of {x}? as in, which classes use it as their base class",
        ),
        (
            "long-context-abstract-base",
            "I need to add a new abstract method to {x} as part of the plugin refactor, and "
            "anything that inherits from it will have to implement the method or it will fail at "
            "instantiation time. I'd rather not discover the breakage in CI one class at a time. "
            "Could you list every concrete class that subclasses it, directly or through an "
            "intermediate parent, so I can update them all in the same change?",
        ),
        ("terse-child-classes", "{x} child classes"),
        ("typo-lowercase", "any clases that inhert from {x}??"),
    ),
}
# Round 7 (session 10), written by a sixth helper that saw neither the reader nor any set.
REWORDED_PHRASINGS_6: dict[str, tuple[tuple[str, str], ...]] = {
    "callers": (
        ("ide-find-usages", "find usages of {x}, only the places where it's actually invoked"),
        (
            "context-then-pronoun",
            (
                "I'm changing the signature of {x} to take a timeout argument. "
                "Which functions call it and will need updating?"
            ),
        ),
        ("non-native-english", "where is {x} being call from? i need list of the caller functions"),
        ("backtick-imperative", "list every function or method that invokes `{x}()`"),
        ("passive-voice", "In which places is {x} called?"),
        ("call-hierarchy-incoming", "show incoming calls in the call hierarchy for {x}"),
        ("rust-typo-terse", "whcih fns call {x}? want to see all the call sites"),
        ("noun-phrase", "call sites of {x} across the codebase"),
    ),
    "callees": (
        ("call-hierarchy-outgoing", "open the call hierarchy for {x} and show outgoing calls"),
        (
            "context-then-pronoun",
            ("I'm trying to figure out why {x} is so slow. What other functions does it call internally?"),
        ),
        (
            "non-native-english",
            "which functions are called inside of {x} body? i want know its dependencies",
        ),
        ("backtick-arrow-terse", "`{x}()` -> which functions does it invoke"),
        ("noun-phrase", "functions invoked from within {x}"),
        ("go-typo", "what funcs does {x} call into? trying to see what it delegates too"),
        ("passive-voice", "Which methods are called by {x}?"),
        (
            "long-imperative",
            (
                "list all the functions and methods that get called from the body of {x}, "
                "one level deep is fine"
            ),
        ),
    ),
    "subclasses": (
        ("ide-type-hierarchy", "show the type hierarchy for {x}, just the subtypes"),
        ("java-extends", "which classes extend {x}?"),
        ("csharp-derived", "find all derived classes of {x}, including indirect ones"),
        (
            "context-then-pronoun",
            (
                "I'm adding an abstract method to {x}. Which classes inherit from it "
                "and would have to override the new method?"
            ),
        ),
        (
            "non-native-english",
            "what are the classes that is inheriting from {x}? also the childs of childs",
        ),
        ("go-rust-implementors", "what types implement {x}? looking for all implementors"),
        ("js-extends-backtick", "anything in the repo that does `extends {x}`?"),
        ("passive-typo", "where is {x} subclased, directly or further down the hierarchy?"),
    ),
}
# A seventh helper's wordings (session 11; see the module's docstring), verbatim.
REWORDED_PHRASINGS_7: dict[str, tuple[tuple[str, str], ...]] = {
    "callers": (
        ("ide-imperative-backticks", "Find every place in the codebase where `{x}` gets invoked."),
        (
            "chat-context-it",
            "I'm about to change the signature of {x}. Which functions would break because they call it?",
        ),
        ("search-box-noun-phrase", "call sites of {x}()"),
        ("passive-voice-qualifier", "From where is the method {x} being called?"),
        ("non-native-typo", "please show me all the fonctions which are using {x} , i need to refactor it"),
        (
            "pr-review-consumers",
            (
                "Before we merge this: are there any consumers of `{x}()` outside this module "
                "that still pass the old arguments?"
            ),
        ),
        ("slack-terse-hit", "what code paths end up hitting {x}? wanna deprecate it"),
        ("java-instantiation", "List the methods that instantiate the {x} class with new."),
    ),
    "callees": (
        ("ide-imperative-parens", "Show me the functions that {x}() invokes internally."),
        (
            "chat-context-this",
            "Trying to figure out why {x} is so slow. Which other methods does this one call into?",
        ),
        ("search-box-noun-phrase", "outgoing calls from `{x}`"),
        ("passive-voice-qualifier", "Which functions are called by the method {x}?"),
        ("non-native-english", "what are the functions that {x} is calling inside of his body?"),
        (
            "issue-tracker-delegation",
            (
                "Stack trace ends inside {x} but I can't tell what it delegates to. "
                "Can someone list the helpers it calls?"
            ),
        ),
        ("search-box-typo", "functions calld from inside {x}"),
        ("trace-one-level-down", "Trace one level down from `{x}`: which methods does it dispatch to?"),
    ),
    "subclasses": (
        ("ide-imperative-backticks", "List all classes that extend `{x}`, including indirect descendants."),
        (
            "chat-context-it",
            (
                "I'm adding an abstract method to the {x} class. "
                "Which classes derive from it and will need to implement it?"
            ),
        ),
        ("search-box-noun-phrase", "implementations of interface {x}"),
        ("passive-voice", "Which classes are inherited from {x}, either directly or through another parent?"),
        ("non-native-typo", "how many child class has {x}? i want see all of them incluing the grand-childs"),
        (
            "pr-review-specialize",
            (
                "nit: adding a required ctor arg here breaks every class that specializes {x}, "
                "can you check which ones do?"
            ),
        ),
        ("java-implements-terse", "Who implements {x}? Need the full list of concrete classes."),
        ("python-mro", "what classes have {x} somewhere in their bases or MRO?"),
    ),
}
# An eighth helper's wordings (session 12; see the module's docstring), verbatim.
REWORDED_PHRASINGS_8: dict[str, tuple[tuple[str, str], ...]] = {
    "callers": (
        ("terse-search-box", "callers of {x}"),
        ("polite-full-question", "Could you please show me every function or method that calls {x}?"),
        (
            "chatty-context-first",
            "I'm about to change the signature of {x} and don't want to break anything, "
            "so where is it called or instantiated from?",
        ),
        ("non-native-typo", "which method are calling {x}? need find all caller of it befor refactor"),
        ("backtick-pronoun-later", "`{x}` - who invokes it? list the enclosing function of every call site"),
        ("passive-voice", "From which functions and methods is {x} called or instantiated?"),
        ("java-ide-call-hierarchy", "show incoming calls for {x}, like IntelliJ's Call Hierarchy view"),
        (
            "code-review-imperative",
            "Before merging, list all the methods that invoke ({x}) anywhere in the repo.",
        ),
    ),
    "callees": (
        ("terse-noun-phrase", "functions called by {x}"),
        ("polite-question", "Would you mind telling me which functions and methods {x} calls?"),
        ("ide-outgoing-calls", "outgoing calls from {x}"),
        (
            "chatty-debugging",
            "Stepping through {x} in the debugger is painful. "
            "What other functions or methods does it call directly?",
        ),
        ("non-native-typo", "what are the methods that {x} is invoking inside of his body?"),
        ("possessive-terse", "{x}'s callees pls"),
        ("go-rust-style", "in the `{x}` fn, which funcs/methods does it call out to?"),
        ("imperative-passive", "List every function or method that gets called from within the body of {x}."),
    ),
    "subclasses": (
        ("terse-search-box", "subclasses of {x}"),
        ("java-implementations", "all implementations of interface {x}, incl. indirect ones"),
        (
            "polite-full-question",
            "Could you show me every class that inherits from {x}, "
            "either directly or through intermediate classes?",
        ),
        (
            "typescript-extends",
            "which classes `extends {x}` anywhere in the codebase, including grandchildren?",
        ),
        ("non-native-typo", "give me all class what derive from {x}, also the indirectly ones"),
        (
            "chatty-context-first-pronoun",
            "{x} is getting a new abstract method. Which classes derive from it "
            "(at any depth) so I can update them?",
        ),
        ("csharp-derived-types", "Find derived types of ({x}) - the whole inheritance tree below it."),
        ("passive-voice", "By which classes is {x} extended or implemented, directly or transitively?"),
    ),
}
# written (session 14) by a helper that had never seen the reader, the sets or /work, committed
# before it was measured on: round 10, measured once held out, then tuned on (session 15)
REWORDED_PHRASINGS_9: dict[str, tuple[tuple[str, str], ...]] = {
    "callers": (
        ("search-box-fragment", "{x} call sites"),
        (
            "chatty-refactor-context",
            "I'm about to change the signature of {x} and I'm nervous about breaking stuff. Can you "
            "show me every function or method that invokes it?",
        ),
        ("non-native-typo", "where is {x} being call from? i need list of the functions that are using it"),
        ("ide-incoming-calls", "Call Hierarchy > Incoming Calls for `{x}`"),
        ("go-tooling-callers", "gopls-style callers: which funcs reach `{x}` directly?"),
        ("passive-voice", "By which methods is ({x}) invoked or instantiated?"),
        (
            "bug-hunt-mid-sentence",
            'the crash only happens with a null arg, so which functions end up hitting "{x}" in the '
            "first place? need the upstream callers",
        ),
        ("fan-in-metric", "fan-in of {x}: list the callers"),
    ),
    "callees": (
        ("search-box-fragment", "functions called by {x}"),
        ("ide-outgoing-calls", "Show Call Hierarchy -> Outgoing Calls for `{x}`"),
        (
            "chatty-onboarding",
            "New to this codebase. Before I step through `{x}` in the debugger I'd like a quick map of "
            "what it calls internally. Which functions/methods does it invoke?",
        ),
        ("non-native-grammar", "what function does {x} is calling inside of it body?"),
        ("fan-out-metric", "fan-out of {x} (direct callees)"),
        ("rust-dependency-phrasing", "which fns does `{x}` call into from its body? i.e. its callees"),
        ("imperative-list", "List everything {x} dispatches to: helpers, methods, constructors it calls."),
        (
            "pronoun-after-context",
            'Perf regression in "{x}". Which downstream routines does it reach out to when it runs? I '
            "want its callees, not its callers.",
        ),
    ),
    "subclasses": (
        ("search-box-fragment", "{x} subtypes"),
        ("java-implementers", "what implements / extends {x}? (all impls, incl. indirect)"),
        ("csharp-derived-types", "Show derived types of {x}, transitively, not just direct children."),
        ("non-native-grammar", "which class are inherit from {x}? also the one which inherit indirectly pls"),
        (
            "python-base-class-chat",
            "I'm changing a method on the base class `{x}` and want to know what will be affected. "
            "Which classes descend from it anywhere down the hierarchy?",
        ),
        ("rust-trait-impls", "which types impl the `{x}` trait?"),
        ("uncommon-verb-specialise", "Which classes specialise ({x}), directly or further down the tree?"),
        ("typescript-heritage", "TS: find every class whose extends/implements chain leads back to '{x}'"),
    ),
}
# written (session 15) by a helper that had never seen the reader, the sets or /work, committed
# before it was measured on: round 11, measured once held out, then tuned on (session 15)
REWORDED_PHRASINGS_10: dict[str, tuple[tuple[str, str], ...]] = {
    "callers": (
        ("terse-fragment", "callers of {x}"),
        ("stack-overflow-title", "How do I find every place where `{x}` is called from?"),
        (
            "non-native-english",
            "which function are using {x}? i need know who invoke it before i delete",
        ),
        ("ide-menu-path", "View Call Hierarchy > Calls To '{x}'"),
        (
            "code-review-comment",
            "nit: if we change the signature of `{x}`, which call sites break? pls list them",
        ),
        (
            "slack-message",
            'anyone know what actually hits "{x}"? trying to map the entry points into it',
        ),
        ("jira-ticket", "TASK: Audit all upstream invokers of ({x}) prior to deprecation"),
        (
            "long-chatty-with-context",
            (
                "I'm about to rename {x} in our billing service and I'm a bit nervous. "
                "Could you list every function or method that depends on it, either by "
                "running it or constructing it, so I know what to update?"
            ),
        ),
    ),
    "callees": (
        ("terse-fragment", "{x} callees"),
        (
            "passive-stack-overflow-title",
            "Get list of functions called by `{x}` (not the ones that use it)",
        ),
        (
            "non-native-english",
            "what are the function that {x} is calling inside of its body?",
        ),
        ("ide-menu-path", "Call Hierarchy > Outgoing Calls > {x}"),
        (
            "code-review-comment",
            (
                "This `{x}` looks way too big - what does it delegate to? "
                "Let's see its downstream dependencies before splitting it."
            ),
        ),
        ("go-jargon", "what funcs does {x} fan out to? not interested in who uses it"),
        ("cli-like", "calltree '{x}' --direction=out --depth=1"),
        (
            "long-chatty-with-context",
            (
                "I'm writing a unit test and want to mock everything {x} touches. Can you "
                "tell me which methods and constructors it invokes internally, so I know "
                "what to stub out?"
            ),
        ),
    ),
    "subclasses": (
        ("terse-fragment", "subclasses of {x}"),
        (
            "stack-overflow-title",
            "How to find all classes that extend `{x}`, including indirect ones?",
        ),
        (
            "non-native-english",
            "which class are inherit from {x}? also the child of child please",
        ),
        ("ide-menu-path", "Navigate > Type Hierarchy > Subtypes of {x}"),
        ("java-jargon", "list all implementors of interface {x} (concrete impls too)"),
        ("rust-jargon", "what types impl the {x} trait?"),
        (
            "code-review-comment",
            (
                'If we add an abstract method to "{x}", every descendant class will '
                "break - can we enumerate them first?"
            ),
        ),
        (
            "long-chatty-with-context",
            (
                "We're changing the constructor of the base class {x} in our game engine. "
                "Could you show me the full inheritance tree beneath it, i.e. every class "
                "that derives from it directly or transitively?"
            ),
        ),
    ),
}
# written (session 15) by another helper that had never seen the reader, the sets or /work,
# committed before it was measured on: round 12, measured held out, then tuned on (session 15)
REWORDED_PHRASINGS_11: dict[str, tuple[tuple[str, str], ...]] = {
    "callers": (
        ("terse-senior", "callers of {x}?"),
        (
            "sre-incident",
            (
                "prod is on fire, stack trace ends in {x}() -- what code paths invoke it?? "
                "need the blast radius asap"
            ),
        ),
        (
            "data-scientist",
            (
                "I changed the arguments of `{x}` in my notebook utils. Which other functions "
                "use it, so I don't break them?"
            ),
        ),
        (
            "voice-dictation",
            (
                "hey can you show me everywhere in the code that {x} gets called from like "
                "all the places upstream of it"
            ),
        ),
        (
            "ticket-template",
            (
                "Task: impact analysis\nSymbol: {x}\n"
                "Question: enumerate every function or method that references this symbol."
            ),
        ),
        ("lowercase-abbrev", ("pls which fns end up triggering {x}? need the upstream ones not downstream")),
        (
            "chinese-speaker",
            ('Which places in code are using "{x}"? I want delete it but afraid something will break.'),
        ),
        (
            "name-first-followup",
            ("'{x}' -- got it. and its incoming edges, i.e. which methods instantiate or invoke it?"),
        ),
    ),
    "callees": (
        ("terse-senior", "callees of {x}"),
        (
            "sre-incident",
            (
                "{x}() is hanging in prod. what does it call downstream? need to know "
                "which deps it hits (db? http?)"
            ),
        ),
        (
            "data-scientist",
            (
                "When I run `{x}`, which other functions does it use under the hood? "
                "Just trying to understand what it does."
            ),
        ),
        (
            "voice-dictation",
            ("what other functions does {x} run inside of it like what does it go and execute step by step"),
        ),
        (
            "portuguese-speaker",
            (
                "Hi, I would like to know which methods are invoked by '{x}' inside his "
                "body. Is for documentation."
            ),
        ),
        (
            "ticket-template",
            (
                "Summary: dependency review\nTarget: {x}\n"
                "Request: list the functions this one delegates to (direct dependencies "
                "of its body only)."
            ),
        ),
        ("lowercase-abbrev", "fn {x} - what does it fan out to? list the downstream fns pls"),
        (
            "name-first-followup",
            ('"{x}" -- and going the other direction now: what does that one invoke itself?'),
        ),
    ),
    "subclasses": (
        ("terse-senior", "subclasses of {x}"),
        (
            "student",
            (
                "In this project, which classes extend {x}? Our professor said to find all "
                "of them, including indirect ones."
            ),
        ),
        (
            "product-manager",
            (
                "Quick question for eng: how many different kinds of {x} do we have, "
                "i.e. which classes inherit from it?"
            ),
        ),
        (
            "voice-dictation",
            ("which classes inherit from {x} either directly or through some other parent class in between"),
        ),
        (
            "german-speaker",
            ('Which are all the derived classes of the class "{x}", also over several levels?'),
        ),
        (
            "ticket-template",
            (
                "Context: we are deprecating an interface.\nInterface: `{x}`\n"
                "Ask: list every concrete implementation of it (transitive)."
            ),
        ),
        ("lowercase-abbrev", "cls hierarchy under {x} pls, all child classes not just direct ones"),
        ("name-first-followup", "'{x}' -- ok, and what descends from that one? the whole subtree"),
    ),
}
# written (session 15) by a third helper that had never seen the reader, the sets or /work,
# committed before it was measured on: round 13, held out
REWORDED_PHRASINGS_12: dict[str, tuple[tuple[str, str], ...]] = {
    "callers": (
        (
            "refactor-signature-change",
            "I'm about to change the signature of {x}. Which functions call it, so I know what will break?",
        ),
        (
            "review-nit-invokers",
            "nit: before merging, can you check who else invokes `{x}()`? Want to be sure "
            "nothing depends on the old return value.",
        ),
        ("phone-terse", "who uses {x}"),
        (
            "debug-upstream",
            "Debugging a bad value returned by {x}: what's upstream of it, i.e. which functions trigger it?",
        ),
        ("mixed-spanish-greeting", "hola! ¿quién llama a `{x}`? need the list of callers pls"),
        ("todo-call-sites", 'TODO: find all call sites of "{x}" before deprecating it'),
        (
            "security-audit-entry-points",
            "Security audit: can user input reach {x}? List every method that invokes it "
            "directly, plus the entry points above those.",
        ),
        (
            "two-names-pick-one",
            "Ignore load_settings for now; for `{x}` specifically, which places instantiate or call it?",
        ),
    ),
    "callees": (
        ("onboarding-under-the-hood", "New to this repo - what does `{x}` call under the hood?"),
        (
            "perf-profiler",
            "{x} is slow in the profiler. Which functions does it invoke internally, so I "
            "can see where the time goes?",
        ),
        ("phone-terse", "{x} callees"),
        (
            "downstream-fan-out",
            "What's directly downstream of {x}() in the call graph - the functions it fans out to?",
        ),
        (
            "docs-helpers-used",
            "Writing docs for {x}: list the helper functions and methods it uses inside its body.",
        ),
        (
            "greeting-executed-inside",
            "Hi! Quick question: when '{x}' runs, which other methods get executed from inside it?",
        ),
        (
            "migration-outgoing-calls",
            'Migrating to the v3 SDK: list the outgoing calls made by "{x}" so I can spot '
            "any deprecated APIs.",
        ),
        (
            "todo-mixed-german",
            "TODO: herausfinden, welche Funktionen `{x}` aufruft (its dependencies in the "
            "call graph, one level down)",
        ),
    ),
    "subclasses": (
        (
            "refactor-abstract-method",
            "I'm changing an abstract method on {x}. Which classes inherit from it, directly "
            "or further down?",
        ),
        (
            "review-extends-check",
            "Before we add a field to `{x}`, have we checked every subclass that extends it?",
        ),
        ("phone-terse", "{x} subclasses"),
        (
            "family-tree-descendants",
            "Show me the family tree below {x} - all descendants, not just direct children.",
        ),
        ("interface-implementers", "Which classes implement the `{x}` interface?"),
        ("what-sits-under", "what sits under {x} in the class hierarchy?"),
        (
            "mixed-spanish-indirect",
            "oye, ¿qué clases heredan de {x}? including the indirect ones",
        ),
        (
            "is-there-any-test-coverage",
            'Is there any class deriving from "{x}" that our tests don\'t cover? List all '
            "derived classes, transitively.",
        ),
    ),
}

# Round 14 (session 16): written by a helper that never saw /work, committed before it was measured.
REWORDED_PHRASINGS_13: dict[str, tuple[tuple[str, str], ...]] = {
    "callers": (
        ("terse-call-sites", "call sites for `{x}`?"),
        (
            "signature-change-refactor",
            "I'm about to change the signature of `{x}()` - which functions would break because they "
            "invoke it?",
        ),
        (
            "frustrated-debugging",
            "ugh, something keeps triggering {x} twice per request. can someone show me every place that "
            "calls into it",
        ),
        (
            "indirect-upstream-callgraph",
            'Before I deprecate "{x}", I need everything directly upstream of it in the call graph.',
        ),
        ("german-mixed", "wo wird {x} aufgerufen? need the list of callers for the review"),
        (
            "formal-api-docs",
            "For the API reference, please enumerate all functions and methods that invoke {x}.",
        ),
        (
            "security-audit-paths",
            "Security audit: which functions reach `{x}` directly, i.e. contain a call to it? Want to "
            "check none of them pass unsanitized input.",
        ),
        (
            "test-writing-usage-examples",
            "writing tests for {x}() - which existing functions actually use it, so I can copy realistic "
            "call patterns",
        ),
    ),
    "callees": (
        ("terse-arrow-outgoing", "{x} -> outgoing calls"),
        (
            "onboarding-step-through",
            "New to this codebase. When `{x}` runs, what other functions does it invoke directly?",
        ),
        (
            "performance-profiling",
            "profiling shows {x}() eats 40% of the request time; which functions does its body call so I "
            "know where to dig next?",
        ),
        ("indirect-delegation", "what does '{x}' delegate its work to internally?"),
        (
            "non-native-spanish",
            "por favor, which methods are used inside of {x}? I want to know what it is calling",
        ),
        (
            "unit-test-mocking",
            "writing unit tests for `{x}` - what do I need to mock, i.e. which functions does it call?",
        ),
        (
            "code-review-side-effects",
            "PR review: does {x} call anything with side effects? show me the functions invoked from "
            "inside it",
        ),
        (
            "formal-body-enumeration",
            "Please provide the set of functions and methods invoked within the body of {x}.",
        ),
    ),
    "subclasses": (
        ("terse-implementors", "{x} implementors"),
        (
            "indirect-abstract-method",
            "If I add a new abstract method to `{x}`, which classes will be forced to implement it?",
        ),
        (
            "onboarding-concrete-kinds",
            "what are the concrete kinds of {x} in this repo? i.e. classes deriving from it",
        ),
        (
            "frustrated-breakage",
            "i changed one method on `{x}` and now random stuff is broken - which classes extend it??",
        ),
        ("german-mixed", "welche Klassen erben von {x}? need the child classes for the docs"),
        (
            "formal-hierarchy-diagram",
            "For the class hierarchy diagram, list all classes that derive directly or indirectly from {x}.",
        ),
        (
            "code-review-override",
            'reviewer here - is "{x}" subclassed anywhere, and by which classes? want to be sure nobody '
            "overrides the validation logic",
        ),
        (
            "migration-make-final",
            "We're marking {x} as final/sealed in the next major release. What currently inherits from it",
        ),
    ),
}

# Round 15 (session 17): written by a helper that never saw /work, committed before it was measured.
REWORDED_PHRASINGS_14: dict[str, tuple[tuple[str, str], ...]] = {
    "callers": (
        ("terse-two-word", "who calls {x}"),
        (
            "anxious-beginner-context-first",
            "I'm new to this repo and need to change `{x}`, but I'm scared of breaking stuff. "
            "Where is it being used from? Like which functions actually call it?",
        ),
        (
            "non-native-article-slip",
            "please tell me which functions are calling the {x}, i need know this before refactor",
        ),
        ("german-mixed-call-sites", "wo wird {x}() überall aufgerufen? brauche alle caller"),
        (
            "ide-incoming-hierarchy",
            "incoming call hierarchy for `{x}` - only the methods that invoke it, not imports or comments",
        ),
        (
            "code-review-signature-change",
            'Before we merge this signature change to "{x}", can someone list every function that '
            "invokes it? Each of those call sites will need updating.",
        ),
        (
            "formal-passive-with-instantiation",
            "Enumerate all functions and methods from which {x} is invoked, including locations "
            "where it is instantiated.",
        ),
        ("go-rust-fn-call-into", "which fns call into {x}? want the upstream side of the call graph"),
    ),
    "callees": (
        ("terse-noun", "{x} callees"),
        ("casual-question-parens", "what does {x}() call internally?"),
        (
            "non-native-word-order",
            "inside of {x} body which other functions it is calling? i want see what it depends on",
        ),
        ("spanish-mixed", "qué funciones llama {x} por dentro? need the list of calls it makes"),
        (
            "cpp-outgoing-explicit-direction",
            "Outgoing calls from `{x}` - just the functions it invokes directly in its own body, "
            "not the ones that invoke it.",
        ),
        (
            "perf-ticket-explain-then-ask",
            "Perf ticket: '{x}' gets slow on large inputs. First step is to enumerate every "
            "function/method it calls so we can profile them one by one.",
        ),
        ("senior-delegation-trace", "trace down from {x}: which helpers does it delegate to?"),
        (
            "formal-relative-clause",
            "Functions and methods that are invoked within the implementation of {x}.",
        ),
    ),
    "subclasses": (
        ("terse-noun", "subclasses of {x}"),
        (
            "java-extends-transitive",
            "which classes extend {x}? include indirect ones too, the whole hierarchy below it",
        ),
        (
            "csharp-ts-implements-interface",
            "who implements `{x}`? looking for every concrete class deriving from that base/interface",
        ),
        (
            "beginner-explains-structure",
            "I'm trying to get my head around the class structure. {x} looks like some kind of base "
            "class - what classes are built on top of it, i.e. inherit from it?",
        ),
        (
            "non-native-family-metaphor",
            "give me all child classes of {x} please, also the grandchildren ones",
        ),
        ("french-mixed", 'quelles classes héritent de "{x}" ? directement ou indirectement'),
        (
            "review-abstract-method-impact",
            "If we add an abstract method to `{x}`, every descendant breaks. Can you list the derived "
            "classes so we know what has to implement it?",
        ),
        ("cpp-derived-types-shorthand", "derived types of {x} (transitive)"),
    ),
}
# the wordings each reworded set is asked in
REWORDED_TABLES = {
    "unseen-starlette-reworded": REWORDED_PHRASINGS,
    "unseen-starlette-reworded-2": REWORDED_PHRASINGS_2,
    "unseen-starlette-reworded-3": REWORDED_PHRASINGS_3,
    "unseen-starlette-reworded-4": REWORDED_PHRASINGS_4,
    "unseen-starlette-reworded-5": REWORDED_PHRASINGS_5,
    "unseen-starlette-reworded-6": REWORDED_PHRASINGS_6,
    "unseen-starlette-reworded-7": REWORDED_PHRASINGS_7,
    "unseen-starlette-reworded-8": REWORDED_PHRASINGS_8,
    "unseen-starlette-reworded-9": REWORDED_PHRASINGS_9,
    "unseen-starlette-reworded-10": REWORDED_PHRASINGS_10,
    "unseen-starlette-reworded-11": REWORDED_PHRASINGS_11,
    "unseen-starlette-reworded-12": REWORDED_PHRASINGS_12,
    "unseen-starlette-reworded-13": REWORDED_PHRASINGS_13,
    "unseen-starlette-reworded-14": REWORDED_PHRASINGS_14,
}


@dataclass(frozen=True)
class Entity:
    """A definition as any parser sees it: the questions are built from these alone."""

    qualname: str
    name: str
    kind: str  # function | class
    path: str
    start: int
    end: int

    @property
    def span(self) -> dict[str, Any]:
        return {"path": self.path, "start_line": self.start, "end_line": self.end}


@dataclass(frozen=True)
class Def(Entity):
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def definitions(root: Path) -> list[Def]:
    """Top-level functions and classes and the methods of classes (not nested functions)."""
    found: list[Def] = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found.extend(_defs(tree.body, module_name(rel), rel.as_posix()))
    return found


def _defs(body: list[ast.stmt], prefix: str, path: str) -> Iterator[Def]:
    for stmt in _flat(body):
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            kind = "class" if isinstance(stmt, ast.ClassDef) else "function"
            qual = f"{prefix}.{stmt.name}"
            yield Def(qual, stmt.name, kind, path, stmt.lineno, stmt.end_lineno or stmt.lineno, stmt)
            if isinstance(stmt, ast.ClassDef):
                yield from _defs(stmt.body, qual, path)


def _flat(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    for stmt in body:
        yield stmt
        if isinstance(stmt, ast.If | ast.Try):
            blocks = [*stmt.body, *stmt.orelse]
            if isinstance(stmt, ast.Try):
                blocks += [s for h in stmt.handlers for s in h.body] + stmt.finalbody
            yield from _flat(blocks)


def called_names(fn: Def) -> set[str]:
    """Names a function calls: `f(...)`, `x.f(...)`, `C(...)`, `raise E(...)`, decorators."""
    assert not isinstance(fn.node, ast.ClassDef)
    callees: list[ast.expr] = [n.func for s in fn.node.body for n in ast.walk(s) if isinstance(n, ast.Call)]
    callees += [n.func for d in fn.node.decorator_list for n in ast.walk(d) if isinstance(n, ast.Call)]
    callees += [d for d in fn.node.decorator_list if not isinstance(d, ast.Call)]
    names = {
        c.id if isinstance(c, ast.Name) else c.attr
        for c in callees
        if isinstance(c, ast.Name | ast.Attribute)
    }
    return names - {fn.name}


def base_names(cls: Def) -> set[str]:
    assert isinstance(cls.node, ast.ClassDef)
    names = set()
    for base in cls.node.bases:
        expr = base.value if isinstance(base, ast.Subscript) else base
        if isinstance(expr, ast.Name):
            names.add(expr.id)
        elif isinstance(expr, ast.Attribute):
            names.add(expr.attr)
    return names


def build_set(
    root: Path, rng: random.Random, phrasings: dict[str, tuple[tuple[str, str], ...]] = PHRASINGS
) -> list[dict[str, Any]]:
    defs = definitions(root)
    calls = {fn.qualname: called_names(fn) for fn in defs if fn.kind == "function"}
    bases = {cls.qualname: base_names(cls) for cls in defs if cls.kind == "class"}
    return build_questions(defs, calls, bases, rng, phrasings)


def build_questions(
    defs: Sequence[Entity],
    calls: dict[str, set[str]],
    bases: dict[str, set[str]],
    rng: random.Random,
    phrasings: dict[str, tuple[tuple[str, str], ...]],
) -> list[dict[str, Any]]:
    """Callers, callees and subclasses questions, each in every phrasing of its kind.

    calls: a function's qualname -> the names it calls; bases: a class's qualname -> its bases' names.
    """
    counts = Counter(d.name for d in defs)
    unique = {d.name: d for d in defs if counts[d.name] == 1}

    def askable(name: str) -> bool:
        return name in unique and len(name) >= 4 and name.isidentifier() and not name.startswith("__")

    functions = [d for d in defs if d.kind == "function"]
    callers: dict[str, list[Entity]] = defaultdict(list)
    for fn in functions:
        for name in calls[fn.qualname]:
            if askable(name):
                callers[name].append(fn)
    subclasses: dict[str, list[Entity]] = defaultdict(list)
    for cls in (d for d in defs if d.kind == "class"):
        for name in bases[cls.qualname]:
            if askable(name) and unique[name].kind == "class":
                subclasses[name].append(cls)
    pools: dict[str, list[tuple[str, list[Entity]]]] = {
        "callers": [(x, v) for x, v in sorted(callers.items())],
        "callees": [
            (fn.name, [unique[n] for n in sorted(calls[fn.qualname]) if askable(n)])
            for fn in functions
            if askable(fn.name)
        ],
        "subclasses": [(x, v) for x, v in sorted(subclasses.items())],
    }
    items: list[dict[str, Any]] = []
    for kind, pool in pools.items():
        usable = [(x, answers) for x, answers in pool if 1 <= len(answers) <= 15]
        for x, answers in sorted(rng.sample(usable, min(QUESTIONS[kind], len(usable))), key=lambda p: p[0]):
            ordered = sorted(answers, key=lambda d: (d.path, d.start))
            for family, template in phrasings[kind]:
                items.append(
                    {
                        "id": f"{kind}-{x}-{family}",
                        "query": template.format(x=x),
                        "relevant": [d.span for d in ordered],
                        "tags": ["structural", kind, family],
                    }
                )
    return items


def package_dir(library: str) -> Path:
    module = importlib.import_module(library)
    return Path(str(module.__file__)).resolve().parent


def corpus_dirs(work_dir: Path = WORK_DIR) -> dict[str, Path]:
    """Corpus id -> its directory, copied from the installed library when missing."""
    dirs: dict[str, Path] = {}
    for library in LIBRARIES:
        target = work_dir / library
        if not (target / library).is_dir():
            shutil.copytree(
                package_dir(library), target / library, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
            )
        dirs[f"unseen-{library}"] = target
    return dirs


def docstring_corpus_dirs(set_name: str, work_dir: Path = WORK_DIR) -> tuple[Path, Path]:
    """(the set's libraries as installed, their copy with every docstring blanked), side by side
    under one root each as the set's paths expect; made when missing."""
    libraries = DOCSTRING_SETS[set_name]
    source, stripped = work_dir / f"{set_name}-source", work_dir / set_name
    if not all((stripped / library).is_dir() for library in libraries):
        for target in (source, stripped):
            shutil.rmtree(target, ignore_errors=True)
        for library in libraries:
            for target in (source, stripped):
                shutil.copytree(
                    package_dir(library),
                    target / library,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
                )
            for path in sorted((stripped / library).rglob("*.py")):
                path.write_text(strip_docstrings(path.read_text(encoding="utf-8")), encoding="utf-8")
    return source, stripped


def build(sets_dir: Path = SETS_DIR, work_dir: Path = WORK_DIR) -> dict[str, int]:
    """Write one set per library and register them (and their corpora) in the sets manifest."""
    manifest_path = sets_dir / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    counts: dict[str, int] = {}
    dirs = corpus_dirs(work_dir)
    for corpus, root in dirs.items():
        items = build_set(root, random.Random(SEED))
        write_jsonl(sets_dir / f"{corpus}.jsonl", items)
        manifest["sets"][corpus] = {"corpus": corpus, "queries": len(items)}
        manifest["packages"][corpus.removeprefix("unseen-")] = importlib.metadata.version(
            corpus.removeprefix("unseen-")
        )
        counts[corpus] = len(items)
    for name, library in REWORDED_SETS.items():
        corpus = f"unseen-{library}"
        items = build_set(dirs[corpus], random.Random(SEED), REWORDED_TABLES[name])
        write_jsonl(sets_dir / f"{name}.jsonl", items)
        manifest["sets"][name] = {"corpus": corpus, "queries": len(items)}
        counts[name] = len(items)
    for name in DOCSTRING_SETS:
        source, stripped = docstring_corpus_dirs(name, work_dir)
        items = build_docstring(CodeBase(source), CodeBase(stripped), random.Random(SEED), DOCSTRING_QUERIES)
        write_jsonl(sets_dir / f"{name}.jsonl", items)
        manifest["sets"][name] = {"corpus": name, "queries": len(items)}
        counts[name] = len(items)
    register_held_out(manifest, tuple(counts), HELD_OUT)
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    return counts


def register_held_out(manifest: dict[str, Any], own: Sequence[str], held_out: Sequence[str]) -> None:
    """List a builder's held-out sets under `unseen_held_out`, keeping the other builders' entries."""
    others = [name for name in manifest.get("unseen_held_out", []) if name not in own]
    manifest["unseen_held_out"] = sorted({*others, *held_out})


def run_builder(description: str, build_sets: Callable[[Path, Path], dict[str, int]]) -> None:
    """A set builder's command line: --sets-dir, --work-dir, then a line per set written."""
    parser = argparse.ArgumentParser(
        description=description, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sets-dir", type=Path, default=SETS_DIR)
    parser.add_argument("--work-dir", type=Path, default=WORK_DIR)
    args = parser.parse_args()
    for name, count in build_sets(args.sets_dir, args.work_dir).items():
        print(f"{name}: {count} queries -> {args.sets_dir / (name + '.jsonl')}")


def main() -> None:
    run_builder(__doc__ or "", build)


if __name__ == "__main__":
    main()
