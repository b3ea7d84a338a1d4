"""The unseen-library sets' ground truth: every call site by name, from ast, in every phrasing."""

from __future__ import annotations

import random
import textwrap
from pathlib import Path

from evaluation.unseen_sets import PHRASINGS, build_set, called_names, definitions

LIB = """
    class ShopError(Exception):
        pass


    class Basket:
        def add_item(self, item):
            return item


    def register(fn):
        return fn


    @register
    def fill(basket):
        basket.add_item(1)
        raise ShopError("full")


    def make():
        return Basket()


    class SpecialBasket(Basket):
        pass
    """


def test_call_sites_count_instantiation_raise_attribute_calls_and_decorators(tmp_path: Path) -> None:
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "core.py").write_text(textwrap.dedent(LIB).lstrip("\n"))
    defs = {d.qualname: d for d in definitions(tmp_path)}
    assert called_names(defs["shop.core.fill"]) == {"add_item", "ShopError", "register"}
    assert called_names(defs["shop.core.make"]) == {"Basket"}
    items = build_set(tmp_path, random.Random(0))
    by_id = {item["id"]: item for item in items}
    # each question is asked in every phrasing of its kind, with the same answers
    callers_of_basket = [by_id[f"callers-Basket-{family}"] for family, _ in PHRASINGS["callers"]]
    assert [item["query"] for item in callers_of_basket] == [
        template.format(x="Basket") for _, template in PHRASINGS["callers"]
    ]
    for item in callers_of_basket:
        assert item["relevant"] == [{"path": "shop/core.py", "start_line": 20, "end_line": 21}]
        assert item["tags"][:2] == ["structural", "callers"]
    assert by_id["callers-add_item-question"]["relevant"] == [
        {"path": "shop/core.py", "start_line": 15, "end_line": 17}  # from the def line, as ast has it
    ]
    assert by_id["subclasses-Basket-noun"]["relevant"] == [
        {"path": "shop/core.py", "start_line": 24, "end_line": 25}
    ]
    assert {s["start_line"] for s in by_id["callees-fill-question"]["relevant"]} == {1, 6, 10}
