"""Structural sets from TypeScript and Java code bases, ground truth from their own parsers.

    make eval-sets-langs                     # installs typescript into .state/, fetches, writes the sets
    .venv/bin/python -m evaluation.lang_sets [--sets-dir DIR] [--work-dir DIR]

* `unseen-rxjs`: the TypeScript sources that the npm package `rxjs` ships (`src/`, 251 files),
  fetched with `npm pack rxjs@<version>`. Read by evals/tools/ts_callsites.js with the
  TypeScript compiler API (npm `typescript`, installed into <work>/npm).
* `unseen-java-net-http`: the `java.net.http` module (the JDK's HTTP client, 144 files) from
  Debian's `openjdk-17-source` (`apt-get download` of the pinned version, its src.zip). Read by
  evals/tools/JavaCallSites.java with javac's tree API (parse only), compiled into <work>/tools.
* `unseen-mobx` (npm `mobx`, `src/`) and `unseen-jdk-jshell` (the JDK's `jdk.jshell` module, from
  the same src.zip), read the same way, asked in round 1 of the wordings (evals/wordings/round-1.jsonl);
* `unseen-three` (npm `three`, its JavaScript `src/`) and `unseen-jdk-httpserver` (the JDK's
  `jdk.httpserver`), asked in round 2.

rxjs and java.net.http were held out until session 8, which tuned on them. mobx and jdk.jshell
replaced them, then three and jdk.httpserver; each round was measured once held out and then tuned
on (evals/README.md, "Held-out rounds"). REWORDED_SETS asks three and jdk.httpserver again in
rounds 3 to 12 of the wordings (evals/wordings/, then tuned on), 13 and 14: those two are held out
now (HELD_OUT). Nothing may be tuned on a held-out set.

Neither tool is TriBridRAG's extractor. Each reports definitions (functions, methods,
constructors, classes), the names called in each function (`f()`, `x.f()`, `new X()`) and each
class's bases (`extends`; in Java `implements` too). The questions are built as for the Python
unseen sets (evaluation.unseen_sets.build_questions: only names defined once, 1..15 answers).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import tarfile
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluation import REPO_ROOT, unseen_sets
from evaluation.build_sets import SETS_DIR, write_jsonl
from evaluation.unseen_sets import Entity, build_questions

WORK_DIR = unseen_sets.WORK_DIR
TOOLS_DIR = REPO_ROOT / "evals" / "tools"
SEED = 20261124
TYPESCRIPT_VERSION = "5.9.3"
RXJS_VERSION = "7.8.2"
MOBX_VERSION = "6.16.1"
THREE_VERSION = "0.187.0"
JDK_SOURCE_PACKAGE = "openjdk-17-source"
JDK_SOURCE_VERSION = "17.0.19+10-1~deb12u2"
# each wording round asked over three and jdk.httpserver -> its wordings; the last is held out
REWORDED_ROUNDS = {n: table for n, table in unseen_sets.ROUNDS.items() if n >= 3}
REWORDED_CORPORA = ("unseen-three", "unseen-jdk-httpserver")
# a set asked in other wordings over a code base's corpus -> (that corpus, the wordings)
REWORDED_SETS: dict[str, tuple[str, dict[str, tuple[tuple[str, str], ...]]]] = {
    f"{corpus}-reworded-{round_}": (corpus, phrasings)
    for round_, phrasings in REWORDED_ROUNDS.items()
    for corpus in REWORDED_CORPORA
}
# rounds measured held out and never tuned on since
HELD_OUT_ROUNDS = (13, 14)
HELD_OUT = tuple(f"{corpus}-reworded-{round_}" for round_ in HELD_OUT_ROUNDS for corpus in REWORDED_CORPORA)

# The Python sets' families, then the ones users also type (issue 12): imperatives, possessives,
# "depends on", "based on", "extends".
EXTRA_PHRASINGS = unseen_sets.load_wordings("phrasings-extra")
PHRASINGS = {kind: unseen_sets.PHRASINGS[kind] + EXTRA_PHRASINGS[kind] for kind in unseen_sets.PHRASINGS}


@dataclass(frozen=True)
class Extracted:
    """What a parser reports for a tree: definitions, the names each function calls, class bases."""

    defs: list[Entity]
    calls: dict[str, set[str]]
    bases: dict[str, set[str]]


def parse_definitions(records: list[dict[str, Any]]) -> Extracted:
    """The tools' JSON (a list of {qualname, name, kind, path, start, end, calls, bases})."""
    defs = [
        Entity(r["qualname"], r["name"], r["kind"], r["path"], int(r["start"]), int(r["end"]))
        for r in records
    ]
    calls = {r["qualname"]: set(r["calls"]) for r in records if r["kind"] == "function"}
    bases = {r["qualname"]: set(r["bases"]) for r in records if r["kind"] == "class"}
    return Extracted(defs, calls, bases)


def _run_json(command: list[str], env: dict[str, str] | None = None) -> Extracted:
    out = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
    return parse_definitions(json.loads(out.stdout))


# --- the parsers ----------------------------------------------------------------------------------


def typescript_modules(work_dir: Path = WORK_DIR) -> Path:
    """node_modules holding the pinned `typescript`, npm-installed under work_dir once."""
    prefix = work_dir / "npm"
    package = prefix / "node_modules" / "typescript" / "package.json"
    if not package.is_file() or json.loads(package.read_text())["version"] != TYPESCRIPT_VERSION:
        prefix.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                "npm",
                "install",
                "--prefix",
                str(prefix),
                "--no-audit",
                "--no-fund",
                "--no-save",
                f"typescript@{TYPESCRIPT_VERSION}",
            ],
            check=True,
            capture_output=True,
        )
    return prefix / "node_modules"


def typescript_definitions(root: Path, work_dir: Path = WORK_DIR) -> Extracted:
    env = {**os.environ, "NODE_PATH": str(typescript_modules(work_dir))}
    return _run_json(["node", str(TOOLS_DIR / "ts_callsites.js"), str(root)], env)


def java_tool(work_dir: Path = WORK_DIR) -> Path:
    """The class directory of JavaCallSites, compiled with javac when missing or stale."""
    source = TOOLS_DIR / "JavaCallSites.java"
    out = work_dir / "tools"
    compiled = out / "JavaCallSites.class"
    if not compiled.is_file() or compiled.stat().st_mtime < source.stat().st_mtime:
        out.mkdir(parents=True, exist_ok=True)
        subprocess.run(["javac", "-d", str(out), str(source)], check=True, capture_output=True)
    return out


def java_definitions(root: Path, work_dir: Path = WORK_DIR) -> Extracted:
    return _run_json(["java", "-cp", str(java_tool(work_dir)), "JavaCallSites", str(root)])


# --- the code bases -------------------------------------------------------------------------------


def fetch_npm_sources(package: str, version: str) -> Callable[[Path, Path], None]:
    """A fetcher of the TypeScript sources an npm package ships (`package/src/`) into target/<package>/."""

    def fetch(target: Path, downloads: Path) -> None:
        downloads.mkdir(parents=True, exist_ok=True)
        tarball = downloads / f"{package}-{version}.tgz"
        if not tarball.is_file():
            subprocess.run(
                ["npm", "pack", f"{package}@{version}"], cwd=downloads, check=True, capture_output=True
            )
        prefix = "package/src/"
        with tarfile.open(tarball) as archive, tempfile.TemporaryDirectory() as tmp:
            members = [m for m in archive.getmembers() if m.isfile() and m.name.startswith(prefix)]
            archive.extractall(tmp, members=members, filter="data")
            shutil.copytree(Path(tmp) / prefix, target / package)

    return fetch


def fetch_jdk_module(module: str) -> Callable[[Path, Path], None]:
    """A fetcher of one JDK module's sources, from Debian's openjdk-17-source, into target/<module>/."""

    def fetch(target: Path, downloads: Path) -> None:
        downloads.mkdir(parents=True, exist_ok=True)
        deb = downloads / f"{JDK_SOURCE_PACKAGE}_{JDK_SOURCE_VERSION.replace(':', '%3a')}_all.deb"
        if not deb.is_file():
            spec = f"{JDK_SOURCE_PACKAGE}={JDK_SOURCE_VERSION}"
            subprocess.run(["apt-get", "download", spec], cwd=downloads, check=True, capture_output=True)
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(["dpkg-deb", "-x", str(deb), tmp], check=True)
            (src_zip,) = Path(tmp).glob("usr/lib/jvm/*/lib/src.zip")
            with zipfile.ZipFile(src_zip) as archive:
                names = [n for n in archive.namelist() if n.startswith(f"{module}/") and n.endswith(".java")]
                archive.extractall(target, members=names)

    return fetch


@dataclass(frozen=True)
class CodeBase:
    corpus: str  # the set's and the corpus's id
    package: str  # the manifest's name for where the sources come from
    version: str
    reference: str  # the parser the ground truth comes from
    fetch: Callable[[Path, Path], None]
    parse: Callable[[Path, Path], Extracted]
    phrasings: dict[str, tuple[tuple[str, str], ...]]


TYPESCRIPT_REFERENCE = f"TypeScript {TYPESCRIPT_VERSION} compiler API"
JAVA_REFERENCE = "javac's tree API (parse only)"
JDK_PACKAGE = f"{JDK_SOURCE_PACKAGE} (Debian), module"
CODE_BASES = (
    CodeBase(
        "unseen-rxjs",
        "rxjs (npm)",
        RXJS_VERSION,
        TYPESCRIPT_REFERENCE,
        fetch_npm_sources("rxjs", RXJS_VERSION),
        typescript_definitions,
        PHRASINGS,
    ),
    CodeBase(
        "unseen-java-net-http",
        f"{JDK_PACKAGE} java.net.http",
        JDK_SOURCE_VERSION,
        JAVA_REFERENCE,
        fetch_jdk_module("java.net.http"),
        java_definitions,
        PHRASINGS,
    ),
    CodeBase(
        "unseen-mobx",
        "mobx (npm)",
        MOBX_VERSION,
        TYPESCRIPT_REFERENCE,
        fetch_npm_sources("mobx", MOBX_VERSION),
        typescript_definitions,
        unseen_sets.ROUNDS[1],
    ),
    CodeBase(
        "unseen-jdk-jshell",
        f"{JDK_PACKAGE} jdk.jshell",
        JDK_SOURCE_VERSION,
        JAVA_REFERENCE,
        fetch_jdk_module("jdk.jshell"),
        java_definitions,
        unseen_sets.ROUNDS[1],
    ),
    CodeBase(
        "unseen-three",
        "three (npm)",
        THREE_VERSION,
        TYPESCRIPT_REFERENCE,
        fetch_npm_sources("three", THREE_VERSION),
        typescript_definitions,
        unseen_sets.ROUNDS[2],
    ),
    CodeBase(
        "unseen-jdk-httpserver",
        f"{JDK_PACKAGE} jdk.httpserver",
        JDK_SOURCE_VERSION,
        JAVA_REFERENCE,
        fetch_jdk_module("jdk.httpserver"),
        java_definitions,
        unseen_sets.ROUNDS[2],
    ),
)
SET_NAMES = tuple(code_base.corpus for code_base in CODE_BASES)
ALL_SET_NAMES = (*SET_NAMES, *REWORDED_SETS)


def corpus_dirs(work_dir: Path = WORK_DIR) -> dict[str, Path]:
    """Corpus id -> its directory, fetched when missing."""
    dirs: dict[str, Path] = {}
    for code_base in CODE_BASES:
        target = work_dir / code_base.corpus
        if not target.is_dir():
            staging = work_dir / f"{code_base.corpus}.partial"  # a failed fetch leaves no half corpus
            shutil.rmtree(staging, ignore_errors=True)
            code_base.fetch(staging, work_dir / "downloads")
            staging.rename(target)
        dirs[code_base.corpus] = target
    return dirs


def build_set(code_base: CodeBase, extracted: Extracted, rng: random.Random) -> list[dict[str, Any]]:
    return build_questions(extracted.defs, extracted.calls, extracted.bases, rng, code_base.phrasings)


def build(sets_dir: Path = SETS_DIR, work_dir: Path = WORK_DIR) -> dict[str, int]:
    """Write one set per code base and register them, held out, in the sets manifest."""
    manifest_path = sets_dir / "manifest.json"
    manifest = json.loads(manifest_path.read_text())
    counts: dict[str, int] = {}
    dirs = corpus_dirs(work_dir)
    parsed: dict[str, Extracted] = {}
    for code_base in CODE_BASES:
        extracted = parsed[code_base.corpus] = code_base.parse(dirs[code_base.corpus], work_dir)
        items = build_set(code_base, extracted, random.Random(SEED))
        write_jsonl(sets_dir / f"{code_base.corpus}.jsonl", items)
        manifest["sets"][code_base.corpus] = {"corpus": code_base.corpus, "queries": len(items)}
        manifest["packages"][code_base.package] = code_base.version
        counts[code_base.corpus] = len(items)
    for name, (corpus, phrasings) in REWORDED_SETS.items():
        extracted = parsed[corpus]
        items = build_questions(
            extracted.defs, extracted.calls, extracted.bases, random.Random(SEED), phrasings
        )
        write_jsonl(sets_dir / f"{name}.jsonl", items)
        manifest["sets"][name] = {"corpus": corpus, "queries": len(items)}
        counts[name] = len(items)
    manifest["packages"].pop("typescript (ground truth of unseen-rxjs)", None)
    manifest["packages"].pop("javac (ground truth of unseen-java-net-http)", None)
    manifest["packages"]["typescript (ground truth of the TypeScript sets)"] = TYPESCRIPT_VERSION
    javac = subprocess.run(["javac", "-version"], capture_output=True, text=True, check=True)
    manifest["packages"]["javac (ground truth of the Java sets)"] = javac.stdout.split()[-1]
    unseen_sets.register_held_out(manifest, ALL_SET_NAMES, HELD_OUT)
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    return counts


def main() -> None:
    unseen_sets.run_builder(__doc__ or "", build)


if __name__ == "__main__":
    main()
