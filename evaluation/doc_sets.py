"""Document question sets: FAQ documents whose question headings are removed from the indexed
copy; the query is the question, the answer is the span under its heading (the CodeSearchNet
protocol applied to documents). Ground truth comes from the FAQ authors' own structure, never
from TriBridRAG's chunker or search.

- **faq-perl** (corpus `eval-perlfaq`): perlfaq1..9 from Debian's `perl-doc` package (version in
  the manifest; fetched with `apt-get download perl-doc=<version>` when not given). A question is
  a `=head2` line; its answer runs to the next `=head1`/`=head2`. The index of questions
  (perlfaq.pod) is left out, so no copy of a question stays in the corpus.
- **faq-sed** (corpus `eval-sedfaq`, **held out**: never used to tune anything): the sed FAQ that
  Debian's `sed` package ships (/usr/share/doc/sed/sedfaq.txt.gz). A question is a numbered
  `N.M.` heading paragraph after the table of contents; sub-sections (`N.M.K.`) belong to its
  answer. The table of contents is blanked too.

Removed lines are replaced by blank lines, so line numbers in the indexed copy are those of the
original. The indexed copies are plain text (`.txt`): the documents' prose as written.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PERL_DOC_VERSION = "5.36.0-7+deb12u3"
SEDFAQ = Path("/usr/share/doc/sed/sedfaq.txt.gz")
PERLFAQ_POD = "usr/share/perl/5.36.0/pod"
DOC_CORPUS_DIRS = {"eval-perlfaq": "perlfaq", "eval-sedfaq": "sedfaq"}
DOC_SET_CORPUS = {"faq-perl": "eval-perlfaq", "faq-sed": "eval-sedfaq"}
HELD_OUT = ("faq-sed",)
MIN_ANSWER_LINES = 3  # non-blank lines: shorter answers are pointers ("see perlfunc")


@dataclass(frozen=True, slots=True)
class Question:
    question: str
    path: str
    start_line: int  # 1-based, inclusive: the answer's first and last non-blank lines
    end_line: int


_POD_CODE = re.compile(r"[A-Z]<+\s*([^<>]*?)\s*>+")


def _pod_plain(text: str) -> str:
    for _ in range(3):  # nested codes: C<L<...>>
        text = _POD_CODE.sub(lambda m: m.group(1).split("|")[0], text)
    return " ".join(text.split())


def _answer_span(lines: list[str], start: int, end: int) -> tuple[int, int] | None:
    """First and last non-blank line numbers (1-based) within lines[start:end], if enough."""
    filled = [i for i in range(start, end) if lines[i].strip()]
    if len(filled) < MIN_ANSWER_LINES:
        return None
    return filled[0] + 1, filled[-1] + 1


def split_perlfaq(name: str, text: str) -> tuple[str, list[Question]]:
    """The indexed copy (question headings blanked) and the questions of one perlfaq page."""
    lines = text.split("\n")
    heads = [i for i, line in enumerate(lines) if line.startswith(("=head1", "=head2"))]
    questions: list[Question] = []
    for n, i in enumerate(heads):
        if not lines[i].startswith("=head2"):
            continue
        end = heads[n + 1] if n + 1 < len(heads) else len(lines)
        span = _answer_span(lines, i + 1, end)
        query = _pod_plain(lines[i][len("=head2") :])
        if span is not None and len(query.split()) >= 3:
            questions.append(Question(query, name, *span))
    for i in heads:
        if lines[i].startswith("=head2"):
            lines[i] = ""
    return "\n".join(lines), questions


_SED_HEAD = re.compile(r"^(\d+)\.(\d+)\.\s+\S")
_SED_SUBHEAD = re.compile(r"^\d+\.\d+\.\d+\.\s")
_SED_CHAPTER = re.compile(r"^\d+\.\s+[A-Z]")
# 2 basic sed, 3 technical, 4 examples, 5 why isn't this working, 6 other issues (1 is about the
# FAQ itself, 7 lists bugs per sed version: not questions)
ASKED_SED_CHAPTERS = range(2, 7)


def split_sedfaq(name: str, text: str) -> tuple[str, list[Question]]:
    lines = text.split("\n")
    chapters = [i for i, line in enumerate(lines) if line.startswith("1. GENERAL INFORMATION")]
    body = chapters[1]  # the first is in the table of contents
    heads: list[tuple[int, int]] = []  # (first line, line after the heading paragraph)
    for i in range(body, len(lines)):
        if _SED_HEAD.match(lines[i]) and not _SED_SUBHEAD.match(lines[i]):
            j = i + 1
            while j < len(lines) and lines[j].strip():
                j += 1
            heads.append((i, j))
    bounds = [i for i in range(body, len(lines)) if _SED_CHAPTER.match(lines[i])]
    questions: list[Question] = []
    for n, (i, after) in enumerate(heads):
        nxt = heads[n + 1][0] if n + 1 < len(heads) else len(lines)
        nxt = min([b for b in bounds if b > i] + [nxt])
        span = _answer_span(lines, after, nxt)
        query = " ".join(" ".join(lines[i:after]).split()[1:])
        chapter = int(lines[i].split(".", 1)[0])
        if span is not None and len(query.split()) >= 3 and chapter in ASKED_SED_CHAPTERS:
            questions.append(Question(query, name, *span))
    blank = set(range(body))  # the table of contents (and the preamble before it)
    for i, after in heads:
        blank.update(range(i, after))
    return "\n".join("" if k in blank else line for k, line in enumerate(lines)), questions


def perl_doc_deb(cache: Path) -> Path:
    """The perl-doc .deb of the pinned version, downloaded once with apt-get into cache."""
    debs = sorted(cache.glob(f"perl-doc_{PERL_DOC_VERSION.replace(':', '%3a')}_all.deb"))
    if debs:
        return debs[0]
    cache.mkdir(parents=True, exist_ok=True)
    subprocess.run(["apt-get", "download", f"perl-doc={PERL_DOC_VERSION}"], cwd=cache, check=True)
    return sorted(cache.glob("perl-doc_*_all.deb"))[0]


def _perlfaq_pages(work_dir: Path) -> dict[str, str]:
    deb = perl_doc_deb(work_dir / "debs")
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(["dpkg-deb", "-x", str(deb), tmp], check=True)
        pod = Path(tmp) / PERLFAQ_POD
        return {
            f"perlfaq{n}.txt": (pod / f"perlfaq{n}.pod").read_text(encoding="utf-8") for n in range(1, 10)
        }


def sed_version() -> str:
    out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "sed"], capture_output=True, text=True)
    return out.stdout.strip() or "unknown"


def build(work_dir: Path) -> tuple[dict[str, list[Question]], dict[str, Path], dict[str, str]]:
    """Write the indexed copies under work_dir; the questions per set, the corpus dirs, versions."""
    dirs = {corpus: work_dir / sub for corpus, sub in DOC_CORPUS_DIRS.items()}
    for target in dirs.values():
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
    sets: dict[str, list[Question]] = {"faq-perl": [], "faq-sed": []}
    for name, text in _perlfaq_pages(work_dir).items():
        copy, questions = split_perlfaq(name, text)
        (dirs["eval-perlfaq"] / name).write_text(copy, encoding="utf-8")
        sets["faq-perl"].extend(questions)
    copy, questions = split_sedfaq("sedfaq.txt", gzip.decompress(SEDFAQ.read_bytes()).decode("latin-1"))
    (dirs["eval-sedfaq"] / "sedfaq.txt").write_text(copy, encoding="utf-8")
    sets["faq-sed"] = questions
    versions = {"perl-doc (Debian)": PERL_DOC_VERSION, "sed (Debian)": sed_version()}
    (work_dir / "doc-versions.json").write_text(json.dumps(versions, indent=1) + "\n")
    return sets, dirs, versions


def corpus_dirs(work_dir: Path) -> dict[str, Path]:
    dirs = {corpus: work_dir / sub for corpus, sub in DOC_CORPUS_DIRS.items()}
    if not all(d.is_dir() for d in dirs.values()):
        return build(work_dir)[1]
    return dirs


def as_items(set_name: str, questions: list[Question]) -> list[dict[str, Any]]:
    """JSONL items; ids are unique (a question asked twice keeps both answers)."""
    items: dict[str, dict[str, Any]] = {}
    for q in questions:
        span = {"path": q.path, "start_line": q.start_line, "end_line": q.end_line}
        if q.question in items:
            items[q.question]["relevant"].append(span)
            continue
        items[q.question] = {
            "id": f"{set_name}-{q.path}:{q.start_line}",
            "query": q.question,
            "relevant": [span],
            "tags": ["document", set_name],
        }
    return list(items.values())
