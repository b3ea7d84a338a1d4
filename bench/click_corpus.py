"""The corpus the self-contained benchmarks index by default: the installed `click` package, and
questions about it (prose, an identifier and a structural one)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from evaluation import REPO_ROOT

QUERIES = [
    "parse command line options",
    "prompt the user for confirmation",
    "how are environment variables read for options",
    "progress bar rendering",
    "shell completion for bash",
    "wrap text to a width",
    "convert a value to an integer type",
    "open a file lazily",
    "BadParameter",
    "who calls echo",
    "format the help page",
    "invoke a sub command",
]


def default_root() -> Path:
    """click's package directory (located, not imported), else the test fixtures."""
    spec = importlib.util.find_spec("click")
    return Path(spec.origin).parent if spec and spec.origin else REPO_ROOT / "tests"
