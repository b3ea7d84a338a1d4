"""The keys the graph leg's index of unresolved references looks a name up by."""

from __future__ import annotations

from services.graph.external import lookup_keys


def test_lookup_keys_are_the_name_and_its_dotted_tails() -> None:
    assert lookup_keys("Requests.Session.get") == ["requests.session.get", "session.get", "get"]
    assert lookup_keys("dumps") == ["dumps"]
