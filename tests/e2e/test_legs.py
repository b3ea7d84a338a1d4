"""The leg table, as a process that hosts only the gateway sees it."""

from __future__ import annotations

import subprocess
import sys

from tests import REPO_ROOT


def test_a_gateway_alone_finds_every_leg_service_and_the_one_that_expands() -> None:
    # a fresh interpreter: nothing but the gateway's own imports have loaded the contract
    code = (
        "from services.fusion.gateway import EXPAND_METHOD, _offers\n"
        "from tribrid.legs import LEGS\n"
        "print([(leg.name, leg.service, _offers(leg, EXPAND_METHOD)) for leg in LEGS])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert out.strip() == str(
        [
            ("vector", "tribrid.v1.VectorSearch", False),
            ("sparse", "tribrid.v1.SparseSearch", False),
            ("graph", "tribrid.v1.GraphSearch", True),
        ]
    )
