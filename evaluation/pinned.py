"""A Python package's source at the version an evaluation set was built on (`evals/sets/manifest.json`):
the installed copy when it is that version, else that version's wheel, fetched once with pip into
`.state/eval/pinned/`. A fresh install that brought a newer release (httpx 0.29.0 for the sets' 0.28.1)
would otherwise index other code than the sets' answers point into."""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from evaluation import REPO_ROOT

MANIFEST = REPO_ROOT / "evals" / "sets" / "manifest.json"
CACHE = REPO_ROOT / ".state" / "eval" / "pinned"


def recorded_version(distribution: str) -> str | None:
    """The version the sets were built on, if the manifest records it."""
    if not MANIFEST.is_file():
        return None
    version: str | None = json.loads(MANIFEST.read_text())["packages"].get(distribution)
    return version


def installed_version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def package_dir(distribution: str, module: str, version: str | None = None, cache: Path = CACHE) -> Path:
    """`module`'s directory in `distribution` at `version` (default: the recorded one, else the
    installed one)."""
    version = version or recorded_version(distribution) or installed_version(distribution)
    if version is not None and version == installed_version(distribution):
        return Path(str(importlib.import_module(module).__file__)).resolve().parent
    target = cache / f"{distribution}-{version}"
    if not (target / module).is_dir():
        with tempfile.TemporaryDirectory() as downloads:
            pip = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:"]
            subprocess.run([*pip, "--dest", downloads, f"{distribution}=={version}"], check=True)
            (wheel,) = Path(downloads).glob("*.whl")
            with zipfile.ZipFile(wheel) as archive:
                archive.extractall(target)
    return target / module
