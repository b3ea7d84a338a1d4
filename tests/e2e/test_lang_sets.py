"""The TypeScript and Java sets' ground truth: the TypeScript compiler API and javac's tree API,
run on tiny fixtures whose call sites, bases and spans are known."""

from __future__ import annotations

import random
import textwrap
from pathlib import Path

from evaluation.lang_sets import (
    CODE_BASES,
    PHRASINGS,
    WORK_DIR,
    Extracted,
    build_set,
    java_definitions,
    typescript_definitions,
)

SHOP_TS = """
    import { log } from "./log";

    export class ShopError extends Error {}

    /** A basket. */
    export class Basket {
      constructor(private readonly owner: string) {
        log("new basket");
      }

      addItem(item: number): number {
        return item;
      }
    }

    export function fill(basket: Basket): void {
      basket.addItem(1);
      [2, 3].forEach((n) => basket?.addItem(n));
      throw new ShopError("full");
    }

    export function fill(): void;

    export const makeBasket = (owner: string) => new Basket(owner);

    export class SpecialBasket extends Basket {
      handler = () => fill(this);
    }
    """

QUEUE_JS = """
    "use strict";
    class Queue extends events.EventEmitter {
      push(item) {
        this.emit("push", item);
        return new Node(item);
      }
    }
    function drain(queue) {
      queue.push(1);
    }
    module.exports = { Queue, drain };
    """

SHOP_JAVA = """
    package shop;

    import java.util.List;

    public class Basket {
        /** A basket. */
        public Basket(String owner) {
            this(owner, List.of());
        }

        Basket(String owner, List<Integer> items) {}

        @Override
        public String toString() {
            return "basket";
        }

        void addItem(int item) {}

        static void fill(Basket basket) {
            basket.addItem(1);
            Runnable later = () -> basket.addItem(2);
            throw new ShopError("full");
        }

        interface Priced {
            int price();
        }

        static final class SpecialBasket extends Basket implements Priced, Comparable<SpecialBasket> {
            SpecialBasket() {
                super("special");
            }

            public int price() {
                return new Object() {
                    int twice() { return Math.multiplyExact(2, 1); }
                }.twice();
            }

            public int compareTo(SpecialBasket other) {
                return 0;
            }
        }
    }

    class ShopError extends RuntimeException {
        ShopError(String message) {
            super(message);
        }
    }
    """


def _read(got: Extracted, prefix: str) -> dict[str, tuple[str, int, int, set[str], set[str]]]:
    """qualname (file prefix cut) -> kind, first and last line, names called, bases."""
    return {
        d.qualname.removeprefix(prefix): (
            d.kind,
            d.start,
            d.end,
            got.calls.get(d.qualname, set()),
            got.bases.get(d.qualname, set()),
        )
        for d in got.defs
    }


def test_typescript_compiler_api_reports_definitions_call_sites_and_bases(tmp_path: Path) -> None:
    (tmp_path / "shop.ts").write_text(textwrap.dedent(SHOP_TS).lstrip("\n"))
    got = typescript_definitions(tmp_path, WORK_DIR)
    assert _read(got, "shop.ts:") == {
        "ShopError:3": ("class", 3, 3, set(), {"Error"}),
        "Basket:6": ("class", 6, 14, set(), set()),  # from `export`, the JSDoc left out
        "Basket.<init>:7": ("function", 7, 9, {"log"}, set()),
        "Basket.addItem:11": ("function", 11, 13, set(), set()),
        # attribute, optional and callback calls and `new` count by name; the overload is no definition
        "fill:16": ("function", 16, 20, {"addItem", "forEach", "ShopError"}, set()),
        "makeBasket:24": ("function", 24, 24, {"Basket"}, set()),
        "SpecialBasket:26": ("class", 26, 28, set(), {"Basket"}),
        "SpecialBasket.handler:27": ("function", 27, 27, {"fill"}, set()),
    }


def test_plain_javascript_is_read_too(tmp_path: Path) -> None:
    (tmp_path / "queue.js").write_text(textwrap.dedent(QUEUE_JS).lstrip("\n"))
    got = typescript_definitions(tmp_path, WORK_DIR)
    assert _read(got, "queue.js:") == {
        "Queue:2": ("class", 2, 7, set(), {"EventEmitter"}),
        "Queue.push:3": ("function", 3, 6, {"emit", "Node"}, set()),
        "drain:8": ("function", 8, 10, {"push"}, set()),
    }


def test_javac_tree_api_reports_definitions_call_sites_and_bases(tmp_path: Path) -> None:
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "Basket.java").write_text(textwrap.dedent(SHOP_JAVA).lstrip("\n"))
    got = java_definitions(tmp_path, WORK_DIR)
    assert _read(got, "shop/Basket.java:") == {
        "Basket:5": ("class", 5, 45, set(), set()),
        "Basket.<init>:7": ("function", 7, 9, {"this", "of"}, set()),  # the Javadoc left out
        "Basket.<init>:11": ("function", 11, 11, set(), set()),  # an overload: its own entry
        "Basket.toString:13": ("function", 13, 16, set(), set()),  # from the annotation
        "Basket.addItem:18": ("function", 18, 18, set(), set()),
        "Basket.fill:20": ("function", 20, 24, {"addItem", "ShopError"}, set()),  # lambda and `new`
        "Basket.Priced:26": ("class", 26, 28, set(), set()),
        "Basket.Priced.price:27": ("function", 27, 27, set(), set()),
        "Basket.SpecialBasket:30": ("class", 30, 44, set(), {"Basket", "Priced", "Comparable"}),
        "Basket.SpecialBasket.<init>:31": ("function", 31, 33, {"super"}, set()),
        # an anonymous class's calls belong to the method that writes it
        "Basket.SpecialBasket.price:35": ("function", 35, 39, {"Object", "multiplyExact", "twice"}, set()),
        "Basket.SpecialBasket.compareTo:41": ("function", 41, 43, set(), set()),
        "ShopError:47": ("class", 47, 51, set(), {"RuntimeException"}),
        "ShopError.<init>:48": ("function", 48, 50, {"super"}, set()),
    }


def test_questions_ask_names_defined_once_in_every_phrasing(tmp_path: Path) -> None:
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "Basket.java").write_text(textwrap.dedent(SHOP_JAVA).lstrip("\n"))
    java_net_http = next(c for c in CODE_BASES if c.corpus == "unseen-java-net-http")
    items = build_set(java_net_http, java_definitions(tmp_path, WORK_DIR), random.Random(0))
    by_id = {item["id"]: item for item in items}
    fill = {"path": "shop/Basket.java", "start_line": 20, "end_line": 24}
    for family, template in PHRASINGS["callers"]:
        assert by_id[f"callers-ShopError-{family}"]["query"] == template.format(x="ShopError")
        assert by_id[f"callers-ShopError-{family}"]["relevant"] == [fill]  # `new ShopError(...)`
        assert by_id[f"callers-ShopError-{family}"]["tags"] == ["structural", "callers", family]
    assert by_id["callees-fill-possessive"]["query"] == "fill's callees"
    assert by_id["callees-fill-possessive"]["relevant"] == [
        {"path": "shop/Basket.java", "start_line": 18, "end_line": 18},
        {"path": "shop/Basket.java", "start_line": 47, "end_line": 51},
    ]
    assert by_id["subclasses-Priced-based"]["relevant"] == [
        {"path": "shop/Basket.java", "start_line": 30, "end_line": 44}  # `implements` counts
    ]
    # `price` is defined twice and `<init>` is no name a user types: never asked
    assert not [item for item in items if "price" in item["id"] or "<init>" in item["id"]]
