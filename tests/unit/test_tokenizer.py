"""Code-aware tokens (tribrid.text): one tokenizer for documents and queries."""

from __future__ import annotations

import pytest

from tribrid.text import (
    CODE_STOPWORDS,
    PROSE_STOPWORDS,
    boolean_query,
    fold,
    has_terms,
    index_tokens,
    parse_query,
    phrase_query,
    query_terms,
    stem,
    stopwords_for,
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
    assert query.required == ("pars", "config", "file") and query.bonus == ()  # English stems
    for form in ("parseConfigFile", "parse_config_file", "parse-config-file"):
        assert set(query.required) <= {term for term, _ in index_tokens(form)}
    # the identifier itself adds its joined form as a bonus term, not a requirement
    assert parse_query("parseConfigFile") == parse_query("parse_config_file")
    assert parse_query("parseConfigFile").bonus == ("parseconfigfil",)


def test_index_and_queries_share_english_stems_of_latin_words_only() -> None:
    assert parse_query("parsing the configs") == parse_query("parse config")
    assert [t for t, _ in index_tokens("Parsed Configs: parses")] == ["pars", "config", "pars"]
    assert parse_query("connections").required == parse_query("connected").required == ("connect",)
    # other scripts, digits and letter-digit words stay as written
    assert [t for t, _ in index_tokens("sha256 Zürich 读取文件", fold_accents=False)] == [
        "sha",
        "256",
        "sha256",
        "zürich",
        "读取",
        "文件",
    ]
    # the words themselves (what `tokenize` gives) are unstemmed
    assert tokenize("parsing configs") == ["parsing", "configs"]
    assert stem("running") == "run" and stem("x2") == "x2"


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
    assert parse_query("get_user").required == ("user",) and parse_query("get_user").bonus == ("getus",)


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
    assert phrase.tsquery == "'pars' <-> 'the' <-> 'config'" and phrase.terms == ("pars", "config")
    boolean = boolean_query('"sad cat" OR fat_rat -dog -"bad thing" the')
    assert boolean is not None
    assert boolean.tsquery == ("(('sad' <-> 'cat')) | (('fat' <-> 'rat') & !('dog') & !('bad' <-> 'thing'))")
    assert boolean.terms == ("sad", "cat", "fat", "rat", "fatrat")
    assert boolean_query("-dog") is None  # exclusions alone find nothing to rank


# Any language: Unicode words, case-folded, accents kept with a folded form beside them.
@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("Zürich café", ["zürich", "zurich", "café", "cafe"]),
        ("ZÜRICH", ["zürich", "zurich"]),
        ("Straße", ["strasse"]),  # case folding, not accent folding: ß is "ss" in any case
        ("naïveBayes", ["naïve", "naive", "bayes", "naïvebayes", "naivebayes"]),
        ("Ελληνικά", ["ελληνικά", "ελληνικα"]),
        ("Привет мир", ["привет", "мир"]),
        ("e\u0301te\u0301", ["été", "ete"]),  # decomposed input is composed first
        ("über_config", ["über", "uber", "config", "überconfig", "uberconfig"]),
    ],
)
def test_accented_and_other_scripts(text: str, terms: list[str]) -> None:
    assert tokenize(text) == terms


def test_accents_kept_without_folding() -> None:
    assert tokenize("Zürich café", fold_accents=False) == ["zürich", "café"]
    assert parse_query("Zürich", fold_accents=False).required == ("zürich",)


def test_queries_require_the_folded_form_and_score_the_accented_one() -> None:
    accented, plain = parse_query("Zürich Café"), parse_query("zurich cafe")
    assert accented.required == plain.required == ("zurich", "cafe")
    assert accented.bonus == ("zürich", "café") and plain.bonus == ()
    phrase = phrase_query("Zürich café")
    assert phrase is not None and phrase.tsquery == "'zurich' <-> 'cafe'"


@pytest.mark.parametrize(
    ("text", "terms"),
    [
        ("读取文件", ["读取", "文件"]),  # jieba words
        ("数据库", ["数据", "据库", "数据库"]),  # search mode: the word and the dictionary words in it
        ("文件file读取", ["文件", "file", "读取"]),  # mixed scripts split at the script boundary
        ("日本語テキスト", ["日本", "本語", "語テ", "テキ", "キス", "スト"]),  # kana: character bigrams
        ("ね", ["ね"]),
        ("openFile打开", ["open", "file", "openfile", "打开"]),
    ],
)
def test_cjk_segmentation(text: str, terms: list[str]) -> None:
    assert tokenize(text) == terms


def test_kana_voicing_is_not_folded() -> None:
    assert tokenize("ガラス") == ["ガラ", "ラス"]


def test_has_terms() -> None:
    assert has_terms("读取文件") and has_terms("function", PROSE_STOPWORDS)
    assert not has_terms("function") and not has_terms("the of ?!", PROSE_STOPWORDS)


def test_cjk_query_terms() -> None:
    assert parse_query("读取文件").required == ("读取", "文件")
    assert query_terms("读取文件") == ["读取", "文件"]


def test_folded_forms_share_the_position_and_leave_the_length() -> None:
    literal, length = to_tsvector_literal(index_tokens("Zürich café parseConfig"))
    assert literal == "'zürich':1 'zurich':1 'café':2 'cafe':2 'pars':3 'config':4 'parseconfig':4"
    assert length == 5  # the same as without folding
    assert to_tsvector_literal(index_tokens("Zürich café parseConfig", fold_accents=False))[1] == 5


def test_stop_words_depend_on_the_corpus() -> None:
    question = "which function reads the method table"
    assert parse_query(question, stopwords_for(0.1)).required == ("read", "tabl")
    assert parse_query(question, stopwords_for(0.9)).required == ("function", "read", "method", "tabl")
    assert "function" in CODE_STOPWORDS and "function" not in PROSE_STOPWORDS


def test_combining_marks_alone_make_no_empty_term() -> None:
    """jinja2's _identifier.py holds runs of combining marks: every term and folded form is non-empty."""
    marks = "\u0300\u0301\u0302 a\u0308b \u0903\u093c"
    tokens = index_tokens(marks)
    assert tokens and all(term for term, _ in tokens)
    assert fold("\u0300\u0301") == "\u0300\u0301" and fold("a\u0308b") == "ab"
    literal, length = to_tsvector_literal(tokens)
    assert "''" not in literal and length == 3
