"""Code-aware tokens (tribrid.text): one tokenizer for documents and queries."""

from __future__ import annotations

import pytest

from tribrid.text import (
    boolean_query,
    parse_query,
    phrase_query,
    query_terms,
    to_tsvector_literal,
    tokenize,
)


@pytest.mark.parametrize(
    "form", ["parseConfigFile", "parse_config_file", "parse-config-file", "ParseConfigFile"]
)
def test_identifier_styles_share_parts_and_joined_form(form: str) -> None:
    assert tokenize(form) == ["parse", "config", "file", "parseconfigfile"]


def test_plain_words_match_every_identifier_style() -> None:
    query = parse_query("parse config file")
    assert query.required == ("parse", "config", "file") and query.bonus == ()
    for form in ("parseConfigFile", "parse_config_file", "parse-config-file"):
        assert set(query.required) <= set(tokenize(form))
    # the identifier itself adds its joined form as a bonus term, not a requirement
    assert parse_query("parseConfigFile") == parse_query("parse_config_file")
    assert parse_query("parseConfigFile").bonus == ("parseconfigfile",)


def test_acronyms_and_digits() -> None:
    assert tokenize("HTTPServer") == ["http", "server", "httpserver"]
    assert tokenize("HTTPServerError2") == ["http", "server", "error", "2", "httpservererror2"]
    assert tokenize("XMLHttpRequest") == ["xml", "http", "request", "xmlhttprequest"]
    assert tokenize("getHTTP") == ["get", "http", "gethttp"]
    assert tokenize("sha256") == ["sha", "256", "sha256"]
    assert tokenize("v2_api") == ["v", "2", "api", "v2api"]
    assert tokenize("ALL_CAPS_NAME") == ["all", "caps", "name", "allcapsname"]
    assert tokenize("__init__") == ["init"]
    assert tokenize("x") == ["x"]


def test_paths_and_extensions() -> None:
    # a chunk's indexed text starts with "# file: <path>": its path and extension are terms
    assert tokenize("# file: shop/cart.py\n") == ["file", "shop", "cart", "py"]
    assert tokenize("src/http_client/Pool.ts") == ["src", "http", "client", "httpclient", "pool", "ts"]
    assert parse_query("cart.py").required == ("cart", "py")
    assert parse_query("shop/cart").required == ("shop", "cart")


def test_stop_words_only_in_queries() -> None:
    assert tokenize("how does the parser work") == ["how", "does", "the", "parser", "work"]
    assert query_terms("how does the parser work") == ["parser", "work"]
    assert parse_query("the of and").all == []
    assert parse_query("?! ... ()").all == []
    assert phrase_query("the of") is None and boolean_query("the OR of") is None
    # a stop word inside an identifier keeps the identifier's joined form
    assert parse_query("get_user") == parse_query("getUser")
    assert parse_query("get_user").required == ("user",) and parse_query("get_user").bonus == ("getuser",)


def test_overlong_terms_are_dropped() -> None:
    assert tokenize("a" * 65) == []
    assert tokenize("a" * 64) == ["a" * 64]


def test_tsvector_positions_keep_identifier_parts_adjacent() -> None:
    literal, length = to_tsvector_literal(tokenize("call parseConfigFile now"))
    assert length == 6
    # the joined form shares its last part's position: "file now" stays adjacent
    assert literal == "'call':1 'parse':2 'config':3 'file':4 'parseconfigfile':4 'now':5"
    literal, _ = to_tsvector_literal(["x"] * 300)
    assert literal.count(",") == 254  # PostgreSQL keeps at most 256 positions per lexeme


def test_phrase_and_boolean_tsqueries() -> None:
    phrase = phrase_query("parse the config")
    assert phrase is not None
    assert phrase.tsquery == "'parse' <-> 'the' <-> 'config'" and phrase.terms == ("parse", "config")
    boolean = boolean_query('"sad cat" OR fat_rat -dog -"bad thing" the')
    assert boolean is not None
    assert boolean.tsquery == ("(('sad' <-> 'cat')) | (('fat' <-> 'rat') & !('dog') & !('bad' <-> 'thing'))")
    assert boolean.terms == ("sad", "cat", "fat", "rat", "fatrat")
    assert boolean_query("-dog") is None  # exclusions alone find nothing to rank
