"""The calls_quality bench's own reference (written apart from services.indexer) and our extractor
agree on calls through receivers whose class the code states, and neither follows the others."""

from __future__ import annotations

import textwrap
from pathlib import Path

from bench.calls_quality import Reference, ours_split

MODELS = """
    class URL:
        def replace(self, **parts):
            return URL()


    class Router:
        def url_path_for(self, name):
            return name
    """

USE = """
    from typing import Optional

    from web.models import URL, Router


    def annotated(url: URL, other: Optional[URL], urls: list[URL]):
        url.replace()
        other.replace()
        urls.replace()


    def constructed(flag):
        fresh = URL()
        fresh.replace()
        URL().replace()
        mixed = URL()
        if flag:
            mixed = Router()
        mixed.replace()


    class App:
        def __init__(self, router: Router, debug):
            self.router = router
            self.debug = debug

        def url_for(self, name):
            self.router.url_path_for(name)
            return self.debug.url_path_for(name)
    """


def test_the_reference_and_our_proven_edges_agree_on_stated_receiver_classes(tmp_path: Path) -> None:
    package = tmp_path / "web"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "models.py").write_text(textwrap.dedent(MODELS))
    (package / "use.py").write_text(textwrap.dedent(USE))
    expected = {
        ("web.use.annotated", "web.models.URL.replace"),
        ("web.use.constructed", "web.models.URL"),
        ("web.use.constructed", "web.models.URL.replace"),
        ("web.use.constructed", "web.models.Router"),
        ("web.use.App.url_for", "web.models.Router.url_path_for"),
        ("web.models.URL.replace", "web.models.URL"),
    }
    assert Reference(tmp_path).pairs() == expected
    proven, _inferred = ours_split(tmp_path)
    assert proven == expected
