"""The graph leg's question NER loads spaCy with torch hidden: the same entities, without torch in
the process (thinc imports it only to note that it is there)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tribrid.config import EntitiesConfig
from tribrid.ner import needs_torch

TEXT = "Michael Dell founded Dell Technologies in Austin, Texas, and Athos met d'Artagnan in Paris."

RECOGNIZE = """
import json, sys
from tribrid.config import EntitiesConfig
from tribrid.ner import EntityRecognizer
recognizer = EntityRecognizer(EntitiesConfig(), without_torch=sys.argv[1] == "hidden")
found = recognizer.recognize([sys.argv[2]])[0]
print(json.dumps({"mentions": [[m.label, m.text, m.count] for m in found], "torch": "torch" in sys.modules}))
"""


def recognize_in_a_new_process(how: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", RECOGNIZE, how, TEXT], check=True, capture_output=True, text=True, timeout=120
    )
    answer: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return answer


def test_the_same_entities_without_torch_in_the_process() -> None:
    hidden, plain = recognize_in_a_new_process("hidden"), recognize_in_a_new_process("plain")
    assert hidden["mentions"] == plain["mentions"]
    assert ["PERSON", "Michael Dell", 1] in hidden["mentions"]  # type: ignore[operator]
    assert hidden["torch"] is False
    assert plain["torch"] is True  # what the hiding saves: thinc's import of torch


def test_torch_is_importable_again_after_the_hiding() -> None:
    code = (
        "import sys\nfrom tribrid.ner import torch_hidden\n"
        "with torch_hidden():\n    import thinc.compat\n"
        "assert thinc.compat.has_torch is False\nimport torch\nprint(torch.__name__)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=120
    )
    assert out.stdout.strip() == "torch"


def test_the_default_pipeline_does_not_need_torch() -> None:
    assert needs_torch(EntitiesConfig().model) is False
    with pytest.raises(ValueError, match="no such package"):
        needs_torch("no_such_spacy_pipeline_package")
