#!/usr/bin/env python3
"""Build the code-docs-jinja eval set from the Jinja2 sdist.

Usage:
    python build.py [path/to/jinja2-3.1.4.tar.gz] [--print]

Steps:
  1. Extract the sdist to a temp dir; copy src/jinja2/*.py -> corpus/jinja2/ and
     docs/*.rst -> corpus/docs/ byte-for-byte (changes.rst and license.rst are
     skipped: they only include the changelog / licence file).
  2. Index code definitions with `ast` (span = first decorator line .. end_lineno;
     @overload stubs skipped; module-level assignments indexed too).
  3. Index .rst sections (title line, or overline if any, .. line before the next
     title of the same or higher level, trailing blank lines and bare
     `.. _label:` anchors trimmed).
  4. Resolve the hand-written QUESTIONS below into line spans, verify that
     every docs section names (one of) the question's code targets and that
     every code target is named by one of the question's docs sections, then
     write questions.jsonl. Every question is split "held_out".
No search engine is used anywhere.
"""
import ast
import json
import os
import re
import shutil
import sys
import tarfile
import tempfile
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
SDIST_DEFAULT = "/tmp/code-docs-jinja-work/jinja2-3.1.4.tar.gz"
SDIST_SHA256 = "4a3aee7acbbe7303aede8e9648d13b8bf88a429282aa6122a993f0ac800cb369"
PKG = "jinja2"
SKIP_DOCS = {"changes.rst", "license.rst"}

# --------------------------------------------------------------------------
# Questions: (family, query, docs, code)
# docs: list of (rst file, section). The section is its title; when a title
#   occurs more than once in a file, use "Parent title/Title".
# code: list of targets
#   "module:Qual.name"              -> span of that def/class (or module-level
#                                      assignment)
#   "module:Qual.__init__#a,b"      -> span of that __init__; the documented
#                                      names are `a`, `b` (parameters /
#                                      attributes defined there); each must
#                                      occur in the span
#   "module:Qual.name=alias"        -> span of that def; the name the docs use
#                                      is `alias` (a registered filter / test /
#                                      global / extension import name / method
#                                      installed on the Environment). The
#                                      binding `alias ... name` is checked in
#                                      the package source.
#   "module:Qual.name~docname"      -> span of that def; the docs call it
#                                      `docname`, a name that does not exist
#                                      in the code (a wording slip in the
#                                      docs). Only pairs listed in DOC_WORDING
#                                      are accepted.
# --------------------------------------------------------------------------
A = "api.rst"
T = "templates.rst"
X = "extensions.rst"
S = "sandbox.rst"
N = "nativetypes.rst"
ENV_INIT = "environment:Environment.__init__"
# Docs names that do not match the 3.1.4 code. api.rst "Async Support" says
# "``render`` invokes ``async_render``"; the method is Template.render_async.
DOC_WORDING = {("environment:Template.render_async", "async_render")}

QUESTIONS = [
    # ---------------- docs_for_code ----------------
    ("docs_for_code", "select_autoescape - what do enabled_extensions, disabled_extensions, default_for_string and default mean?",
     [(A, "Autoescaping")], ["utils:select_autoescape"]),
    ("docs_for_code", "jinja2 PackageLoader: where does it look for the templates folder?",
     [(A, "Basics"), (A, "Loaders")], ["loaders:PackageLoader"]),
    ("docs_for_code", "ChoiceLoader vs PrefixLoader, what's the difference",
     [(A, "Loaders")], ["loaders:ChoiceLoader", "loaders:PrefixLoader"]),
    ("docs_for_code", "MemcachedBytecodeCache docs - which memcache clients are supported, prefix and timeout",
     [(A, "Bytecode Cache")], ["bccache:MemcachedBytecodeCache"]),
    ("docs_for_code", "Environment.overlay() - what does the overlay share with the original environment?",
     [(A, "High Level API")], ["environment:Environment.overlay"]),
    ("docs_for_code", "Undefined._fail_with_undefined_error and _undefined_hint when subclassing Undefined",
     [(A, "Undefined Types")], ["runtime:Undefined._fail_with_undefined_error", "runtime:Undefined.__init__#_undefined_hint"]),
    ("docs_for_code", "ChainableUndefined vs DebugUndefined vs StrictUndefined behaviour",
     [(A, "Undefined Types")],
     ["runtime:ChainableUndefined", "runtime:DebugUndefined", "runtime:StrictUndefined"]),
    ("docs_for_code", "@pass_context decorator on a filter - what gets passed as the first argument?",
     [(A, "Custom Filters"), (A, "Custom Tests"), (A, "Evaluation Context"), (A, "Utilities")],
     ["utils:pass_context"]),
    ("docs_for_code", "jinja2.runtime.Context get_exported and exported_vars",
     [(A, "The Context")], ["runtime:Context.get_exported", "runtime:Context.__init__#exported_vars"]),
    ("docs_for_code", "meta.find_referenced_templates reference",
     [(A, "The Meta API")], ["meta:find_referenced_templates"]),
    ("docs_for_code", "override SandboxedEnvironment.is_safe_attribute to restrict attribute access",
     [(S, "Security Considerations"), (S, "API")], ["sandbox:SandboxedEnvironment.is_safe_attribute"]),
    ("docs_for_code", "jinja2.sandbox unsafe decorator and modifies_known_mutable",
     [(S, "Security Considerations"), (S, "API")], ["sandbox:unsafe", "sandbox:modifies_known_mutable"]),
    ("docs_for_code", "Extension.filter_stream example",
     [(X, "Inline ``gettext``"), (X, "Extension")], ["ext:Extension.filter_stream"]),
    ("docs_for_code", "env.install_null_translations(newstyle=...) what does it do",
     [(X, "Environment Methods")],
     ["ext:InternationalizationExtension._install_null=install_null_translations"]),
    ("docs_for_code", "Environment.add_extension - adding an extension after the environment is created",
     [(X, "Adding Extensions"), (A, "High Level API")], ["environment:Environment.add_extension"]),
    ("docs_for_code", "truncate filter leeway argument and the truncate.leeway policy",
     [(A, "Policies")], ["filters:do_truncate=truncate"]),
    ("docs_for_code", "Parser.parse_statements end_tokens and drop_needle in an extension",
     [(X, "Parser")], ["parser:Parser.parse_statements"]),
    ("docs_for_code", "loop.previtem, loop.nextitem and loop.changed()",
     [(T, "For")],
     ["runtime:LoopContext.previtem", "runtime:LoopContext.nextitem", "runtime:LoopContext.changed"]),
    ("docs_for_code", "macro object attributes: arguments, catch_kwargs, catch_varargs, caller",
     [(T, "Macros")], ["runtime:Macro.__init__#catch_kwargs,catch_varargs"]),
    ("docs_for_code", "cycler() global - next(), reset() and current",
     [(T, "List of Global Functions"), ("switching.rst", "Cycle")], ["utils:Cycler=cycler"]),
    ("docs_for_code", "EvalContext autoescape and volatile attributes",
     [(A, "Evaluation Context")], ["nodes:EvalContext"]),
    ("docs_for_code", "TemplatesNotFound raised by Environment.select_template",
     [(A, "Exceptions"), (A, "High Level API")],
     ["exceptions:TemplatesNotFound", "environment:Environment.select_template"]),

    # ---------------- code_for_docs ----------------
    ("code_for_docs", "remove the newline after a block tag and the indentation in front of it",
     [(T, "Whitespace Control")], [ENV_INIT + "#trim_blocks,lstrip_blocks"]),
    ("code_for_docs", "render a template so the result is a real Python int or list instead of a string",
     [(N, "Examples"), (N, "API")], ["nativetypes:NativeEnvironment", "nativetypes:NativeTemplate.render"]),
    ("code_for_docs", "with async mode on, does rendering need an event loop, and are coroutines awaited automatically?",
     [(A, "Async Support")],
     ["environment:Template.render", "environment:Template.render_async~async_render", "filters:do_map=map"]),
    ("code_for_docs", "stop untrusted templates from using the ** power operator",
     [(S, "Operator Intercepting")], ["sandbox:SandboxedEnvironment.call_binop"]),
    ("code_for_docs", "keep templates from modifying the lists and dicts I pass in",
     [(S, "Security Considerations"), (S, "API")], ["sandbox:ImmutableSandboxedEnvironment"]),
    ("code_for_docs", "template helper that outputs a separator every time except the first",
     [(T, "List of Global Functions")], ["utils:Joiner=joiner"]),
    ("code_for_docs", "generate lorem ipsum placeholder text inside a template",
     [(T, "List of Global Functions")], ["utils:generate_lorem_ipsum=lipsum"]),
    ("code_for_docs", "a variable set inside a for loop is reset after the loop, how do I keep the value",
     [(T, "Assignments"), (T, "List of Global Functions")], ["utils:Namespace=namespace"]),
    ("code_for_docs", "log a warning whenever a template uses a missing variable",
     [(A, "Undefined Types")], ["runtime:make_logging_undefined"]),
    ("code_for_docs", "custom filter needs to know whether autoescaping is currently active",
     [(A, "Custom Filters"), (A, "Evaluation Context"), (A, "Utilities")], ["utils:pass_eval_context"]),
    ("code_for_docs", "precompile all templates ahead of time into python modules and load them from there",
     [(A, "High Level API"), (A, "Loaders")], ["environment:Environment.compile_templates", "loaders:ModuleLoader"]),
    ("code_for_docs", "store compiled template code in my own backend like redis",
     [(A, "Bytecode Cache")], ["bccache:BytecodeCache"]),
    ("code_for_docs", "find which variables a template expects from the context",
     [(A, "The Meta API")], ["meta:find_undeclared_variables", "environment:Environment.parse"]),
    ("code_for_docs", "evaluate an expression in a template without printing it, e.g. append to a list",
     [(X, "Expression Statement"), (T, "Expression Statement")], ["ext:ExprStmtExtension=do"]),
    ("code_for_docs", "dump the current template context plus available filters and tests while debugging",
     [(X, "Debug Extension"), (T, "Debug Statement")], ["ext:DebugExtension=debug"]),
    ("code_for_docs", "translation calls that take named placeholders directly instead of piping through |format",
     [(X, "New Style Gettext")], ["ext:InternationalizationExtension.__init__#newstyle_gettext"]),
    ("code_for_docs", "force child templates to override a block, otherwise rendering fails",
     [(T, "Required Blocks")], ["exceptions:TemplateRuntimeError"]),
    ("code_for_docs", "output the parent block's content inside an overriding block, or skip a level of inheritance",
     [(T, "Super Blocks"), (T, "Nesting extends")], ["runtime:BlockReference.super"]),
    ("code_for_docs", "difference between foo.bar and foo['bar'] lookups in templates",
     [(T, "Variables")], ["environment:Environment.getattr", "environment:Environment.getitem"]),
    ("code_for_docs", "mark a value as trusted HTML so autoescaping leaves it alone",
     [(T, "Working with Automatic Escaping")], ["filters:do_mark_safe=safe"]),

    # ---------------- usage ----------------
    ("usage", "how do I turn on autoescaping only for .html and .xml templates",
     [(A, "Autoescaping"), (A, "Basics")], ["utils:select_autoescape", ENV_INIT + "#autoescape"]),
    ("usage", "how do I make missing variables raise an error instead of rendering empty",
     [(A, "Undefined Types")], ["runtime:StrictUndefined", ENV_INIT + "#undefined"]),
    ("usage", "how do I register my own filter function",
     [(A, "Custom Filters")], [ENV_INIT + "#filters"]),
    ("usage", "how to add a custom test so I can write {% if value is prime %}",
     [(A, "Custom Tests")], [ENV_INIT + "#tests"]),
    ("usage", "how do I make a helper function available in every template without passing it to render",
     [(A, "The Global Namespace"), (A, "High Level API")], [ENV_INIT + "#globals"]),
    ("usage", "how do I load templates from a dict of strings in my unit tests",
     [(A, "Loaders")], ["loaders:DictLoader"]),
    ("usage", "how do I render a template from a string instead of a file",
     [(A, "Basics"), (A, "High Level API")], ["environment:Environment.from_string"]),
    ("usage", "how do I safely render templates that users wrote",
     [(S, "Sandbox")], ["sandbox:SandboxedEnvironment"]),
    ("usage", "how do I call a macro defined in a template from Python code",
     [(A, "High Level API")], ["environment:Template.module"]),
    ("usage", "how do I cache compiled templates on disk so they aren't reparsed after a restart",
     [(A, "Bytecode Cache"), ("faq.rst", "How fast is Jinja?")],
     ["bccache:FileSystemBytecodeCache", ENV_INIT + "#bytecode_cache"]),
    ("usage", "how do I use break and continue inside a for loop",
     [(X, "Loop Controls"), (T, "Loop Controls")], ["ext:LoopControlExtension=loopcontrols"]),
    ("usage", "how to change the template delimiters, e.g. to look like Mako's ${ } and <% %>",
     [("switching.rst", "Mako")], [ENV_INIT + "#block_start_string,variable_start_string"]),
    ("usage", "how do I write statements as lines starting with # instead of {% %} tags",
     [(T, "Line Statements"), (T, "Synopsis"), ("switching.rst", "Mako")], [ENV_INIT + "#line_statement_prefix"]),
    ("usage", "how do I set up gettext translations for my templates",
     [(X, "Environment Methods"), (X, "Adding Extensions")],
     ["ext:InternationalizationExtension._install=install_gettext_translations", "ext:i18n"]),
    ("usage", "how do I extract translatable messages from my templates",
     [("integration.rst", "Babel"), (X, "Environment Methods")],
     ["ext:babel_extract", "ext:InternationalizationExtension._extract=extract_translations"]),
    ("usage", "how do I iterate over a dict sorted by key in a template",
     [(T, "For")], ["filters:do_dictsort=dictsort"]),
    ("usage", "how to give table rows alternating odd/even css classes",
     [("tricks.rst", "Alternating Rows"), (T, "For"), ("switching.rst", "Cycle"), (T, "List of Global Functions")],
     ["runtime:LoopContext.cycle", "utils:Cycler=cycler"]),
    ("usage", "how do I write my own extension that adds a custom tag",
     [(X, "Writing Extensions"), (X, "Cache"), (X, "Extension")],
     ["ext:Extension", ENV_INIT + "#extensions"]),
    ("usage", "how do I render a large template piece by piece instead of one big string",
     [(A, "High Level API")], ["environment:Template.generate", "environment:Template.stream"]),
    ("usage", "how do I check in a template whether a variable is defined",
     [(T, "Tests")], ["tests:test_defined=defined"]),
    ("usage", "how do I chain filters, e.g. strip html tags and then title-case the text",
     [(T, "Template Designer Documentation/Filters")],
     ["filters:do_striptags=striptags", "filters:do_title=title"]),
]

# --------------------------------------------------------------------------
# Adornment: a run of one punctuation character. Two characters are allowed so
# that short titles such as "If" (underlined "~~") are found; an underline
# must still be at least as long as its title.
ADORN = re.compile(r"""^([=\-~^"`*+#:.'_])\1+\s*$""")
LABEL = re.compile(r"^\.\. _[\w.-]+:\s*$")
AUTODIRECTIVE = re.compile(r"^\s*\.\. auto(class|function|method|exception|attribute|data)::", re.M)


def rst_sections(lines):
    """Return [(title, level, start, end, path)] with 1-based inclusive lines;
    path is "Parent/…/Title"."""
    styles, heads = [], []
    i, n = 0, len(lines)
    while i < n:
        l = lines[i].rstrip("\n")
        if (ADORN.match(l) and len(l.strip()) >= 3 and i + 2 < n and lines[i + 1].strip()
                and ADORN.match(lines[i + 2].rstrip())
                and lines[i + 2].strip()[0] == l.strip()[0]
                and not ADORN.match(lines[i + 1].rstrip())):
            st = ("over", l.strip()[0])
            styles.append(st) if st not in styles else None
            heads.append((lines[i + 1].strip(), styles.index(st), i + 1))
            i += 3
            continue
        if (i + 1 < n and l.strip() and not l.startswith(" ") and not ADORN.match(l)
                and ADORN.match(lines[i + 1].rstrip())
                and len(lines[i + 1].rstrip()) >= len(l.rstrip())
                and (i == 0 or not lines[i - 1].strip())):
            st = ("under", lines[i + 1].strip()[0])
            styles.append(st) if st not in styles else None
            heads.append((l.strip(), styles.index(st), i + 1))
            i += 2
            continue
        i += 1
    out = []
    stack = []
    for k, (t, lv, s) in enumerate(heads):
        e = n
        for _t2, lv2, s2 in heads[k + 1:]:
            if lv2 <= lv:
                e = s2 - 1
                break
        # trim trailing blank lines and bare `.. _label:` anchors, which
        # belong to the following title
        while e > s and (not lines[e - 1].strip() or LABEL.match(lines[e - 1])):
            e -= 1
        while stack and stack[-1][1] >= lv:
            stack.pop()
        stack.append((t, lv))
        out.append((t, lv, s, e, "/".join(x[0] for x in stack)))
    return out


def code_index(path):
    """qualname -> (start incl. decorators, end). Overload stubs are skipped
    (the implementation wins); module-level assignments are indexed too."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    idx = {}

    def is_overload(node):
        for d in getattr(node, "decorator_list", []):
            if ast.unparse(d).endswith("overload"):
                return True
        return False

    def walk(body, prefix):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if is_overload(node):
                    continue
                q = prefix + node.name
                start = min([node.lineno] + [d.lineno for d in node.decorator_list])
                idx[q] = (start, node.end_lineno)
                if isinstance(node, ast.ClassDef):
                    walk(node.body, q + ".")
            elif prefix == "" and isinstance(node, (ast.Assign, ast.AnnAssign)):
                tgts = node.targets if isinstance(node, ast.Assign) else [node.target]
                for tg in tgts:
                    if isinstance(tg, ast.Name):
                        idx[tg.id] = (node.lineno, node.end_lineno)
    walk(tree.body, "")
    return idx


def _word(text, name):
    return re.search(r"(?<![\w])" + re.escape(name) + r"(?![\w])", text) is not None


def mentions(text, name):
    """Whole-word mention. Underscores count as spaces on both sides, so
    `line_statement_prefix` is found in "line statement prefix" and
    `getitem` in "__getitem__"."""
    return _word(text, name) or _word(text.replace("_", " "), name.replace("_", " ").strip())


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    show = "--print" in sys.argv
    sdist = args[0] if args else SDIST_DEFAULT
    out = HERE
    corpus = os.path.join(out, "corpus")

    import hashlib
    digest = hashlib.sha256(open(sdist, "rb").read()).hexdigest()
    assert digest == SDIST_SHA256, f"sdist sha256 mismatch: {digest}"

    tmp = tempfile.mkdtemp()
    with tarfile.open(sdist) as tf:
        tf.extractall(tmp)
    root = os.path.join(tmp, os.listdir(tmp)[0])

    if os.path.exists(corpus):
        shutil.rmtree(corpus)
    os.makedirs(os.path.join(corpus, PKG))
    os.makedirs(os.path.join(corpus, "docs"))
    src = os.path.join(root, "src", PKG)
    for f in sorted(os.listdir(src)):
        if f.endswith(".py"):
            shutil.copy2(os.path.join(src, f), os.path.join(corpus, PKG, f))
    dsrc = os.path.join(root, "docs")
    for f in sorted(os.listdir(dsrc)):
        if f.endswith(".rst") and f not in SKIP_DOCS:
            shutil.copy2(os.path.join(dsrc, f), os.path.join(corpus, "docs", f))

    def read(rel):
        return open(os.path.join(corpus, rel), encoding="utf-8").read().splitlines(keepends=True)

    codeidx = {}
    pkgtext = {}
    for f in os.listdir(os.path.join(corpus, PKG)):
        codeidx[f[:-3]] = code_index(os.path.join(corpus, PKG, f))
        pkgtext[f[:-3]] = open(os.path.join(corpus, PKG, f), encoding="utf-8").read()

    secidx = {}
    for f in os.listdir(os.path.join(corpus, "docs")):
        secs = rst_sections(read("docs/" + f))
        titles = [s[0] for s in secs]
        d = {s[4]: s for s in secs}                       # full path
        d.update({"/".join(s[4].split("/")[-2:]): s for s in secs
                  if sum(1 for x in secs if x[4].endswith("/".join(s[4].split("/")[-2:]))) == 1})
        d.update({s[0]: s for s in secs if titles.count(s[0]) == 1})
        secidx[f] = d

    def alias_bound(name, alias):
        """`alias` is bound to `name` somewhere in the package:
        "alias": name  |  alias=self.name  |  alias = name   (module level),
        or, for sync_do_X filters, "alias": do_X with @async_variant(sync_do_X)."""
        pats = [rf"""["']{re.escape(alias)}["']\s*:\s*{re.escape(name)}\b""",
                rf"""\b{re.escape(alias)}\s*=\s*(self\.)?{re.escape(name)}\b"""]
        for txt in pkgtext.values():
            if any(re.search(p, txt, re.M) for p in pats):
                return True
        if name.startswith("sync_"):
            short = name[len("sync_"):]
            for txt in pkgtext.values():
                if (re.search(rf"""["']{re.escape(alias)}["']\s*:\s*{re.escape(short)}\b""", txt)
                        and f"@async_variant({name})" in txt):
                    return True
        return False

    def resolve_code(tgt):
        mod, rest = tgt.split(":")
        attrs, alias, docname = [], None, None
        if "=" in rest:
            rest, alias = rest.split("=")
        if "~" in rest:
            rest, docname = rest.split("~")
            if (f"{mod}:{rest}", docname) not in DOC_WORDING:
                raise SystemExit(f"{tgt}: docs name not listed in DOC_WORDING")
            if any(_word(txt, docname) for txt in pkgtext.values()):
                raise SystemExit(f"{tgt}: {docname} exists in the code, use '=' instead")
        if "#" in rest:
            rest, a = rest.split("#")
            attrs = a.split(",")
        if rest not in codeidx[mod]:
            raise SystemExit(f"code target not found: {tgt}")
        s, e = codeidx[mod][rest]
        path = f"{PKG}/{mod}.py"
        text = "".join(read(path)[s - 1:e])
        for a in attrs:
            if not _word(text, a):
                raise SystemExit(f"attr {a} not in {tgt}")
        parts = rest.split(".")
        if alias and not alias_bound(parts[-1], alias):
            raise SystemExit(f"alias {alias} is not bound to {parts[-1]} in the package")
        keys = attrs or [alias or docname or (parts[-1] if parts[-1] != "__init__" else parts[0])]
        return path, s, e, keys, parts

    rows = []
    nspans = Counter()
    for i, (fam, query, docs, code) in enumerate(QUESTIONS):
        qid = f"cdj-{i+1:03d}"
        rel = []
        dtexts = []
        ctargets = [resolve_code(c) for c in code]
        for f, title in docs:
            if title not in secidx[f]:
                raise SystemExit(f"[{qid}] section not found/unique: {f} {title!r}")
            _t, _lv, s, e, _p = secidx[f][title]
            text = "".join(read("docs/" + f)[s - 1:e])
            # every docs section must name (one of) the question's API(s);
            # reference sections (with .. auto*:: directives) may name the
            # class/function instead of the documented parameter
            ok = any(mentions(text, k) for c in ctargets for k in c[3])
            if not ok and AUTODIRECTIVE.search(text):
                ok = any(_word(text, p) for c in ctargets for p in c[4] if p != "__init__")
            if not ok:
                raise SystemExit(f"[{qid}] {f}:{title} does not mention {[c[3] for c in ctargets]}")
            rel.append({"path": "docs/" + f, "start_line": s, "end_line": e})
            dtexts.append((f, text))
        # every documented name of every code target must be named by one of
        # the question's docs sections
        for c in ctargets:
            for k in c[3]:
                if not any(mentions(t, k) for _f, t in dtexts):
                    raise SystemExit(f"[{qid}] {k} not named in the question's docs sections")
            r = {"path": c[0], "start_line": c[1], "end_line": c[2]}
            if r not in rel:
                rel.append(r)
        assert len(rel) == len({(r["path"], r["start_line"], r["end_line"]) for r in rel})
        nspans[len(rel)] += 1
        rows.append({
            "id": qid, "query": query, "relevant": rel,
            "tags": ["code-docs", fam], "split": "held_out",
        })
        if show:
            print(f"\n######## {qid} [{fam}] {query}")
            for r in rel:
                L = read(r["path"])
                seg = L[r["start_line"] - 1:r["end_line"]]
                print(f"--- {r['path']}:{r['start_line']}-{r['end_line']} ({len(seg)} lines)")
                head = seg if len(seg) <= 8 else seg[:4] + ["   ...\n"] + seg[-3:]
                print("".join(head), end="")
    assert len({r["query"] for r in rows}) == len(rows), "duplicate query"
    with open(os.path.join(out, "questions.jsonl"), "w") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
    shutil.rmtree(tmp)
    print("\nquestions:", len(rows))
    print("per family:", dict(Counter(r["tags"][1] for r in rows)))
    print("spans per question:", dict(sorted(nspans.items())))


if __name__ == "__main__":
    main()
