"""The evaluation indexes the package versions its sets were built on (evaluation/pinned.py)."""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import click

from evaluation import build_sets, pinned


def test_the_sets_pin_the_versions_their_manifest_records() -> None:
    recorded = json.loads(pinned.MANIFEST.read_text())["packages"]
    assert build_sets.pins() == {name: recorded[name] for name in build_sets.PACKAGES}


def test_an_installed_package_of_the_pinned_version_is_used_where_it_is(tmp_path: Path) -> None:
    version = importlib.metadata.version("click")
    found = pinned.package_dir("click", "click", version, cache=tmp_path)
    assert found == Path(str(click.__file__)).resolve().parent
    assert not any(tmp_path.iterdir())  # nothing fetched
