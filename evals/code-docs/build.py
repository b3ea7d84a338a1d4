#!/usr/bin/env python3
"""Build the code-docs eval set from the click sdist.

Usage:
    python build.py [path/to/click-8.1.8.tar.gz] [--print]

Steps:
  1. Extract the sdist to a temp dir; copy src/click/*.py -> corpus/click/ and
     docs/*.rst -> corpus/docs/ byte-for-byte (changes.rst and license.rst are
     skipped: they only `.. include::` the changelog / licence file).
  2. Index code definitions with `ast` (span = first decorator line .. end_lineno).
  3. Index .rst sections (title line, or overline if any, .. line before the next
     title of the same or higher level, trailing blank lines trimmed).
  4. Resolve the hand-written QUESTIONS below into line spans, verify that
     every docs section mentions the API it is paired with and that every
     code target is named by one of the question's docs sections, then write
     questions.jsonl (one third held_out, random.Random(SEED)).
No search engine is used anywhere.
"""
import ast
import json
import os
import random
import re
import shutil
import sys
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SDIST_DEFAULT = "/tmp/code-docs-work/click-8.1.8.tar.gz"
SEED = 20240607
SKIP_DOCS = {"changes.rst", "license.rst"}

# --------------------------------------------------------------------------
# Questions. docs: list of (rst file, section title). code: list of targets
#   "module:Qual.name"            -> span of that def/class (or module-level
#                                    assignment, e.g. types:UNPROCESSED)
#   "module:Qual.__init__#attr"   -> span of that __init__; the documented
#                                    name is `attr` (an attribute/parameter
#                                    defined there), used for the mention check
# --------------------------------------------------------------------------
A = "api.rst"
QUESTIONS = [
    # ---------------- docs_for_code ----------------
    ("docs_for_code", "click.progressbar parameters like item_show_func, length and label - where are they explained?",
     [("utils.rst", "Showing Progress Bars"), (A, "Utilities")], ["termui:progressbar"]),
    ("docs_for_code", "what do the docs say about atomic=True and lazy opening for click.File",
     [("handling-files.rst", "File Opening Behaviors"), ("parameters.rst", "Parameter Types"), (A, "Types")],
     ["types:File"]),
    ("docs_for_code", "ParameterSource enum members COMMANDLINE ENVIRONMENT DEFAULT DEFAULT_MAP docs",
     [("advanced.rst", "Detecting the Source of a Parameter"), (A, "Context")], ["core:ParameterSource"]),
    ("docs_for_code", "Context.call_on_close - what is it for",
     [("advanced.rst", "Managing Resources"), (A, "Context")], ["core:Context.call_on_close"]),
    ("docs_for_code", "get_app_dir roaming and force_posix arguments",
     [("utils.rst", "Finding Application Folders"), (A, "Utilities")], ["utils:get_app_dir"]),
    ("docs_for_code", "click.launch locate=True open file manager",
     [("utils.rst", "Launching Applications"), (A, "Utilities")], ["termui:launch"]),
    ("docs_for_code", "docs for format_filename shorten option",
     [("utils.rst", "Printing Filenames"), ("handling-files.rst", "File Path Arguments"), (A, "Utilities")],
     ["utils:format_filename"]),
    ("docs_for_code", "open_file with '-' filename reads stdin? reference",
     [("utils.rst", "Intelligent File Opening"), ("commands.rst", "Multi Command Pipelines"), (A, "Utilities")],
     ["utils:open_file"]),
    ("docs_for_code", "get_text_stream vs get_binary_stream documentation",
     [("utils.rst", "Standard Streams"), ("wincmd.rst", "Unicode Output and Input"), (A, "Utilities")],
     ["utils:get_text_stream", "utils:get_binary_stream"]),
    ("docs_for_code", "make_pass_decorator ensure parameter explained",
     [("complex.rst", "Interleaved Commands"), ("complex.rst", "Ensuring Object Creation"), (A, "Decorators")],
     ["decorators:make_pass_decorator"]),
    ("docs_for_code", "where is Context.find_object described",
     [("complex.rst", "Interleaved Commands"), ("complex.rst", "Ensuring Object Creation"), (A, "Context")],
     ["core:Context.find_object"]),
    ("docs_for_code", "ParamType.split_envvar_value docs - how env var strings get split",
     [("options.rst", "Multiple Values from Environment Values"), (A, "Types")],
     ["types:ParamType.split_envvar_value"]),
    ("docs_for_code", "add_completion_class reference",
     [("shell-completion.rst", "Adding Support for a Shell"), (A, "Shell Completion")],
     ["shell_completion:add_completion_class"]),
    ("docs_for_code", "CompletionItem type field values plain / file / dir",
     [("shell-completion.rst", "Custom Type Completion"), ("shell-completion.rst", "Overriding Value Completion"),
      ("shell-completion.rst", "Adding Support for a Shell"), (A, "Shell Completion")],
     ["shell_completion:CompletionItem"]),
    ("docs_for_code", "confirmation_option decorator docs",
     [("options.rst", "Yes Parameters"), (A, "Decorators")], ["decorators:confirmation_option"]),
    ("docs_for_code", "ClickException show() and exit_code documentation",
     [("exceptions.rst", "Where are Errors Handled?"), ("exceptions.rst", "Which Exceptions Exist?"),
      (A, "Exceptions")], ["exceptions:ClickException"]),
    ("docs_for_code", "MultiCommand.result_callback what does the documentation say",
     [("commands.rst", "Multi Command Pipelines"), ("commands.rst", "Command Return Values"),
      ("upgrading.rst", "Multicommand Chaining API"), (A, "Commands")],
     ["core:MultiCommand.result_callback"]),
    ("docs_for_code", "ctx.invoked_subcommand attribute meaning",
     [("commands.rst", "Group Invocation Without Command"), ("commands.rst", "Multi Command Chaining"),
      ("upgrading.rst", "Multicommand Chaining API"), (A, "Context")],
     ["core:Context.__init__#invoked_subcommand"]),
    ("docs_for_code", "get_current_context silent=True docs",
     [("advanced.rst", "Global Context Access"), (A, "Context")], ["globals:get_current_context"]),
    ("docs_for_code", "click.Path exists file_okay dir_okay readable options",
     [("handling-files.rst", "File Path Arguments"), ("parameters.rst", "Parameter Types"), (A, "Types")],
     ["types:Path"]),
    ("docs_for_code", "BaseCommand.main standalone_mode=False documentation",
     [("exceptions.rst", "What if I don't want that?"), ("commands.rst", "Command Return Values"), (A, "Commands")],
     ["core:BaseCommand.main"]),
    ("docs_for_code", "click.UNPROCESSED type where is it used in docs",
     [("advanced.rst", "Forwarding Unknown Options"), ("options.rst", "Callbacks for Validation"), (A, "Types")],
     ["types:UNPROCESSED"]),
    ("docs_for_code", "Group.add_command docs",
     [("quickstart.rst", "Nesting Commands"), ("quickstart.rst", "Registering Commands Later"), (A, "Commands")],
     ["core:Group.add_command"]),
    ("docs_for_code", "click.Abort exception - when is it raised, what exit code",
     [("exceptions.rst", "Where are Errors Handled?"), ("exceptions.rst", "Which Exceptions Exist?"),
      (A, "Exceptions")], ["exceptions:Abort"]),
    ("docs_for_code", "Context.ensure_object reference",
     [("complex.rst", "Ensuring Object Creation"), ("commands.rst", "Nested Handling and Contexts"), (A, "Context")],
     ["core:Context.ensure_object"]),
    ("docs_for_code", "secho function docs, style kwargs",
     [("utils.rst", "ANSI Colors"), (A, "Utilities")], ["termui:secho"]),
    ("docs_for_code", "ShellComplete.source_template and complete_var, complete_func",
     [("shell-completion.rst", "Adding Support for a Shell"), (A, "Shell Completion")],
     ["shell_completion:ShellComplete.source"]),
    ("docs_for_code", "Context.forward docs",
     [("advanced.rst", "Invoking Other Commands"), ("commands.rst", "Command Return Values"), (A, "Context")],
     ["core:Context.forward"]),
    ("docs_for_code", "click.FloatRange min_open max_open",
     [("options.rst", "Range Options"), ("parameters.rst", "Parameter Types"), (A, "Types")], ["types:FloatRange"]),
    ("docs_for_code", "pass_obj decorator documentation",
     [("complex.rst", "The First Child Command"), ("complex.rst", "Interleaved Commands"),
      ("commands.rst", "Decorating Commands"), ("advanced.rst", "Managing Resources"), (A, "Decorators")],
     ["decorators:pass_obj"]),

    # ---------------- code_for_docs ----------------
    ("code_for_docs", "subclass Group to import subcommands lazily only when they are needed",
     [("complex.rst", "Defining the Lazy Group")], ["core:Group"]),
    ("code_for_docs", "eager parameters that run their callback before the others, e.g. print version and exit",
     [("options.rst", "Callbacks and Eager Options")],
     ["core:Parameter.__init__#is_eager", "decorators:version_option"]),
    ("code_for_docs", "passing through options the command doesn't know to a wrapped program",
     [("advanced.rst", "Forwarding Unknown Options")], ["core:Context.__init__#ignore_unknown_options"]),
    ("code_for_docs", "which errors click catches in main and how they map to exit codes 1 and 0",
     [("exceptions.rst", "Where are Errors Handled?")],
     ["core:BaseCommand.main", "exceptions:ClickException.show", "exceptions:Abort"]),
    ("code_for_docs", "implementing your own parameter type: convert value and report failure",
     [("parameters.rst", "How to Implement Custom Types")],
     ["types:ParamType.convert", "types:ParamType.fail"]),
    ("code_for_docs", "completion suggestions provided by a custom type",
     [("shell-completion.rst", "Custom Type Completion")],
     ["types:ParamType.shell_complete", "shell_completion:CompletionItem"]),
    ("code_for_docs", "completing argument values with a custom function (ctx, param, incomplete)",
     [("shell-completion.rst", "Overriding Value Completion")],
     ["core:Parameter.__init__#shell_complete", "shell_completion:CompletionItem"]),
    ("code_for_docs", "loading default values for options from a config file via the context",
     [("commands.rst", "Overriding Defaults"), ("commands.rst", "Context Defaults")],
     ["core:Context.__init__#default_map"]),
    ("code_for_docs", "run several subcommands in one call, like setup.py sdist bdist_wheel upload",
     [("commands.rst", "Multi Command Chaining")],
     ["core:MultiCommand.__init__#chain"]),
    ("code_for_docs", "chained commands that pass a stream of items through processors",
     [("commands.rst", "Multi Command Pipelines")],
     ["core:MultiCommand.result_callback", "utils:open_file"]),
    ("code_for_docs", "each command gets its own context linked to a parent context",
     [("commands.rst", "Nested Handling and Contexts")],
     ["decorators:pass_context", "core:Context.__init__#parent"]),
    ("code_for_docs", "writing your own decorator that wraps a command and passes the context object",
     [("commands.rst", "Decorating Commands")], ["decorators:pass_obj", "core:Context.invoke"]),
    ("code_for_docs", "run group callback even if no subcommand given",
     [("commands.rst", "Group Invocation Without Command")],
     ["core:MultiCommand.__init__#invoke_without_command"]),
    ("code_for_docs", "what happens to the return value of a command callback",
     [("commands.rst", "Command Return Values")],
     ["core:BaseCommand.main", "core:BaseCommand.invoke", "core:MultiCommand.result_callback"]),
    ("code_for_docs", "multi command that loads commands from python files in a plugin folder",
     [("commands.rst", "Custom Multi Commands")],
     ["core:MultiCommand.list_commands", "core:MultiCommand.get_command"]),
    ("code_for_docs", "git-style command aliases and prefix matching of subcommand names",
     [("advanced.rst", "Command Aliases")], ["core:Group.get_command", "core:MultiCommand.list_commands"]),
    ("code_for_docs", "change help flag names to accept -h too",
     [("documentation.rst", "Help Parameter Customization")], ["core:Context.__init__#help_option_names"]),
    ("code_for_docs", "short description shown next to each subcommand in the group help listing",
     [("documentation.rst", "Command Short Help")], ["core:Command.__init__#short_help"]),
    ("code_for_docs", "text printed at the end of the help page after the options",
     [("documentation.rst", "Command Epilog Help")], ["core:Command.__init__#epilog"]),
    ("code_for_docs", "change the placeholder shown for option values in usage/help output",
     [("documentation.rst", "Meta Variables")], ["core:Parameter.__init__#metavar"]),
    ("code_for_docs", "automatically read every option from environment variables with a prefix",
     [("options.rst", "Values from Environment Variables")], ["core:Context.__init__#auto_envvar_prefix"]),
    ("code_for_docs", "case insensitive option names and choices by normalizing tokens",
     [("advanced.rst", "Token Normalization")], ["core:Context.__init__#token_normalize_func"]),
    ("code_for_docs", "hide a parameter from the callback or inject extra values into ctx.params",
     [("advanced.rst", "Parameter Modifications")],
     ["core:Context.__init__#params", "core:Parameter.__init__#expose_value"]),
    ("code_for_docs", "ctx.invoke behaviour change in click 3.2 when calling another command",
     [("upgrading.rst", "Context Invokes")], ["core:Context.invoke"]),
    ("code_for_docs", "context object is created by the root group and carries state to subcommands",
     [("complex.rst", "The Root Command")], ["decorators:pass_context", "core:Context.__init__#obj"]),
    ("code_for_docs", "why lazy loading still imports the subcommand when showing help",
     [("complex.rst", "What triggers Lazy Loading?")], ["core:MultiCommand.get_command"]),
    ("code_for_docs", "defer expensive imports until the command actually runs, short help string",
     [("complex.rst", "Further Deferring Imports")], ["core:Command.get_short_help_str"]),

    # ---------------- usage ----------------
    ("usage", "how do I print colored / bold text to the terminal",
     [("utils.rst", "ANSI Colors")], ["termui:style", "termui:secho"]),
    ("usage", "how to ask the user yes or no before continuing",
     [("prompts.rst", "Confirmation Prompts")], ["termui:confirm"]),
    ("usage", "how do I prompt for a value in the middle of a command and convert it to int",
     [("prompts.rst", "Input Prompts")], ["termui:prompt"]),
    ("usage", "how do I add a password option with hidden input and confirmation",
     [("options.rst", "Password Prompts")], ["decorators:password_option"]),
    ("usage", "how to limit an option to a fixed list of allowed values",
     [("options.rst", "Choice Options")], ["types:Choice"]),
    ("usage", "how do I accept only numbers between 0 and 10 and clamp out-of-range values",
     [("options.rst", "Range Options")], ["types:IntRange"]),
    ("usage", "how to validate option value in a callback and show an error",
     [("options.rst", "Callbacks for Validation")], ["exceptions:BadParameter"]),
    ("usage", "how do I unit test a click command and check its output and exit code",
     [("testing.rst", "Basic Testing")], ["testing:CliRunner.invoke", "testing:Result"]),
    ("usage", "how do I feed stdin input to prompts in tests",
     [("testing.rst", "Input Streams")], ["testing:CliRunner.invoke"]),
    ("usage", "how do I run my CLI test in a temporary directory",
     [("testing.rst", "File System Isolation")], ["testing:CliRunner.isolated_filesystem"]),
    ("usage", "how do I accept an input file and output file argument, with - for stdin/stdout",
     [("handling-files.rst", "File Arguments")], ["types:File"]),
    ("usage", "how do I open a database in a group and make sure it's closed after the subcommand",
     [("advanced.rst", "Managing Resources")], ["core:Context.with_resource"]),
    ("usage", "how to call one command from another command",
     [("advanced.rst", "Invoking Other Commands")], ["core:Context.invoke", "core:Context.forward"]),
    ("usage", "how can I tell if a value came from the command line, an env var or the default",
     [("advanced.rst", "Detecting the Source of a Parameter")],
     ["core:Context.get_parameter_source", "core:ParameterSource"]),
    ("usage", "how do I attach commands to a group defined in another module",
     [("quickstart.rst", "Registering Commands Later")], ["core:Group.add_command"]),
    ("usage", "how to read a single keypress without waiting for enter",
     [("utils.rst", "Getting Characters from Terminal")], ["termui:getchar"]),
    ("usage", "open the user's text editor to write a commit message",
     [("utils.rst", "Launching Editors")], ["termui:edit"]),
    ("usage", "how do I page long output through less",
     [("utils.rst", "Pager Support")], ["termui:echo_via_pager"]),
    ("usage", "how to collect repeated -m options into a list",
     [("options.rst", "Multiple Options")], ["core:Option.__init__#multiple"]),
    ("usage", "how to count -vvv for verbosity level",
     [("options.rst", "Counting")], ["core:Option.__init__#count"]),
    ("usage", "how do I create a --shout/--no-shout on off flag",
     [("options.rst", "Boolean Flags")], ["core:Option.__init__#is_flag"]),
    ("usage", "combine commands from several groups into one CLI",
     [("commands.rst", "Merging Multi Commands")], ["core:CommandCollection"]),
    ("usage", "how do I add completion support for a shell click doesn't support yet",
     [("shell-completion.rst", "Adding Support for a Shell")],
     ["shell_completion:ShellComplete", "shell_completion:add_completion_class"]),
    ("usage", "option that can be given with or without a value, using a default when only the flag is passed",
     [("options.rst", "Optional Value")], ["core:Option.__init__#flag_value"]),
    ("usage", "how to pass a pair like --item name 3 with different types",
     [("options.rst", "Tuples as Multi Value Options")], ["types:Tuple"]),
    ("usage", "how do I write messages to stderr instead of stdout",
     [("utils.rst", "Printing to Stdout")], ["utils:echo"]),
    ("usage", "clear the terminal screen",
     [("utils.rst", "Screen Clearing")], ["termui:clear"]),
    ("usage", "how to show 'press any key to continue' and wait",
     [("utils.rst", "Waiting for Key Press")], ["termui:pause"]),
    ("usage", "how do I take a variable number of file names as arguments",
     [("arguments.rst", "Multiple Arguments")], ["core:Parameter.__init__#nargs"]),
    ("usage", "how to fill an argument from an environment variable",
     [("arguments.rst", "Environment Variables")], ["core:Parameter.__init__#envvar"]),
    ("usage", "ask for the option value interactively when it isn't passed on the command line",
     [("options.rst", "Prompting")], ["core:Option.__init__#prompt"]),
    ("usage", "several flags like --upper / --lower that set the same variable to different values",
     [("options.rst", "Feature Switches")], ["core:Option.__init__#flag_value"]),
]

# --------------------------------------------------------------------------
ADORN = re.compile(r"""^([=\-~^"`*+#:.'_])\1{2,}\s*$""")
LABEL = re.compile(r"^\.\. _[\w.-]+:\s*$")


def rst_sections(lines):
    """Return [(title, level, start, end)] with 1-based inclusive lines."""
    styles, heads = [], []
    i, n = 0, len(lines)
    while i < n:
        l = lines[i].rstrip("\n")
        if (ADORN.match(l) and i + 2 < n and lines[i + 1].strip()
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
        out.append((t, lv, s, e))
    return out


def code_index(path):
    """qualname -> (start incl. decorators, end). Overload stubs are skipped
    (the implementation wins); module-level assignments are indexed too."""
    tree = ast.parse(open(path, encoding="utf-8").read())
    idx = {}

    def is_overload(node):
        for d in getattr(node, "decorator_list", []):
            src = ast.unparse(d)
            if src.endswith("overload"):
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


def mentions(text, name):
    return re.search(r"(?<![\w])" + re.escape(name) + r"(?![\w])", text) is not None


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    show = "--print" in sys.argv
    sdist = args[0] if args else SDIST_DEFAULT
    out = HERE
    corpus = os.path.join(out, "corpus")

    tmp = tempfile.mkdtemp()
    with tarfile.open(sdist) as tf:
        tf.extractall(tmp)
    root = os.path.join(tmp, os.listdir(tmp)[0])

    if os.path.exists(corpus):
        shutil.rmtree(corpus)
    os.makedirs(os.path.join(corpus, "click"))
    os.makedirs(os.path.join(corpus, "docs"))
    src = os.path.join(root, "src", "click")
    for f in sorted(os.listdir(src)):
        if f.endswith(".py"):
            shutil.copy2(os.path.join(src, f), os.path.join(corpus, "click", f))
    dsrc = os.path.join(root, "docs")
    for f in sorted(os.listdir(dsrc)):
        if f.endswith(".rst") and f not in SKIP_DOCS:
            shutil.copy2(os.path.join(dsrc, f), os.path.join(corpus, "docs", f))

    def read(rel):
        return open(os.path.join(corpus, rel), encoding="utf-8").read().splitlines(keepends=True)

    codeidx = {}
    for f in os.listdir(os.path.join(corpus, "click")):
        codeidx[f[:-3]] = code_index(os.path.join(corpus, "click", f))

    secidx = {}
    for f in os.listdir(os.path.join(corpus, "docs")):
        secs = rst_sections(read("docs/" + f))
        titles = [s[0] for s in secs]
        secidx[f] = {s[0]: s for s in secs if titles.count(s[0]) == 1}

    def resolve_code(tgt):
        mod, rest = tgt.split(":")
        attr = None
        if "#" in rest:
            rest, attr = rest.split("#")
        if rest not in codeidx[mod]:
            raise SystemExit(f"code target not found: {tgt}")
        s, e = codeidx[mod][rest]
        path = f"click/{mod}.py"
        text = "".join(read(path)[s - 1:e])
        if attr and not mentions(text, attr):
            raise SystemExit(f"attr {attr} not in {tgt}")
        parts = rest.split(".")
        key = attr or (parts[-1] if parts[-1] != "__init__" else parts[0])
        return path, s, e, key, parts

    n = len(QUESTIONS)
    rng = random.Random(SEED)
    held = set()  # one third per family, stratified, fixed seed
    for fam in ("docs_for_code", "code_for_docs", "usage"):
        idx = [i for i, q in enumerate(QUESTIONS) if q[0] == fam]
        held |= set(rng.sample(idx, round(len(idx) / 3)))
    rows = []
    for i, (fam, query, docs, code) in enumerate(QUESTIONS):
        rel = []
        dtexts = []
        ctargets = [resolve_code(c) for c in code]
        for f, title in docs:
            if title not in secidx[f]:
                raise SystemExit(f"section not found/unique: {f} {title!r}")
            _t, _lv, s, e = secidx[f][title]
            text = "".join(read("docs/" + f)[s - 1:e])
            # every docs section must name (one of) the question's API(s)
            if f == A:
                ok = any(mentions(text, p) for c in ctargets for p in c[4] if p != "__init__")
            else:
                ok = any(mentions(text, c[3]) for c in ctargets)
            if not ok:
                raise SystemExit(f"[{i+1}] {f}:{title} does not mention {[c[3] for c in ctargets]}")
            rel.append({"path": "docs/" + f, "start_line": s, "end_line": e})
            dtexts.append((f, text))
        # every code target must be named by one of the non-api docs sections
        for c in ctargets:
            if not any(mentions(t, c[3]) for f, t in dtexts if f != A):
                raise SystemExit(f"[{i+1}] {c[3]} not named in the narrative docs sections")
            rel.append({"path": c[0], "start_line": c[1], "end_line": c[2]})
        rows.append({
            "id": f"cd-{i+1:03d}", "query": query, "relevant": rel,
            "tags": ["code-docs", fam], "split": "held_out" if i in held else "tune",
        })
        if show:
            print(f"\n######## cd-{i+1:03d} [{fam}] {query}")
            for r in rel:
                L = read(r["path"])
                seg = L[r["start_line"] - 1:r["end_line"]]
                print(f"--- {r['path']}:{r['start_line']}-{r['end_line']} ({len(seg)} lines)")
                head = seg if len(seg) <= 8 else seg[:4] + ["   ...\n"] + seg[-3:]
                print("".join(head), end="")
    with open(os.path.join(out, "questions.jsonl"), "w") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
    shutil.rmtree(tmp)
    from collections import Counter
    print("\nquestions:", len(rows))
    print(Counter((r["tags"][1], r["split"]) for r in rows))


if __name__ == "__main__":
    main()
