"""The web panel's files (cuzk/serve/web/) as shipped: served by the hook in cuzk.serve.http, self-
contained (nothing fetched from another origin), and built without HTML parsing of data.

The browser tests (test_web.py) show the page working; these checks run everywhere, without
a browser or a daemon, and fail on the mistakes a browser test would only catch by luck: a CDN
link, an inline script the Content-Security-Policy would block, innerHTML with server data.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from importlib import resources

import pytest

from cuzk.serve.http import HttpError, StaticFiles

WEB = resources.files("cuzk.serve").joinpath("web")
FILES = ("index.html", "app.js", "style.css")


class Tags(HTMLParser):
    """Every start tag with its attributes, and the text inside <script> and <style>."""

    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []
        self.inline: list[str] = []
        self._in = None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in = tag if tag in ("script", "style") else None

    def handle_endtag(self, tag):
        self._in = None

    def handle_data(self, data):
        if self._in and data.strip():
            self.inline.append(data)


def parse_index() -> Tags:
    t = Tags()
    t.feed(WEB.joinpath("index.html").read_text())
    return t


@pytest.mark.parametrize(
    "name,ctype",
    [("index.html", "text/html"), ("app.js", "text/javascript"), ("style.css", "text/css")],
)
def test_files_served_with_their_types(name, ctype):
    resp = StaticFiles().get(name)
    assert resp.status == 200
    assert resp.content_type.startswith(ctype)
    assert resp.headers["X-Content-Type-Options"] == "nosniff"
    assert resp.body == WEB.joinpath(name).read_bytes()


def test_only_same_origin_relative_assets():
    t = parse_index()
    refs = [
        (tag, a.get("src") or a.get("href"))
        for tag, a in t.tags
        if tag in ("script", "link", "img") and (a.get("src") or a.get("href"))
    ]
    assert ("script", "ui/app.js") in refs and ("link", "ui/style.css") in refs
    for tag, ref in refs:
        # relative to the page (so a reverse proxy may mount the panel under a prefix), or
        # the empty data: icon that keeps the browser from asking for /favicon.ico
        assert ref == "data:," or re.fullmatch(r"ui/[a-z]+\.(js|css)", ref), (tag, ref)
        if ref.startswith("ui/"):
            StaticFiles().get(ref.removeprefix("ui/"))  # each one exists
    for name in FILES:
        text = WEB.joinpath(name).read_text()
        assert not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/", text, re.I), (
            f"{name} refers to another origin"
        )
        assert "@import" not in text


def test_content_security_policy_allows_no_inline_code():
    t = parse_index()
    csp = [
        a["content"]
        for tag, a in t.tags
        if tag == "meta" and a.get("http-equiv", "").lower() == "content-security-policy"
    ]
    assert len(csp) == 1
    rules = dict((d.split()[0], d.split()[1:]) for d in csp[0].split(";") if d.strip())
    assert rules["default-src"] == ["'none'"]
    assert rules["script-src"] == ["'self'"] and rules["connect-src"] == ["'self'"]
    assert t.inline == [], "inline <script>/<style> would be blocked by the policy"
    assert not any(k.startswith("on") for _, a in t.tags for k in a), "inline event handler"
    assert not any("style" in a for _, a in t.tags), "inline style attribute"


def test_script_builds_dom_without_parsing_html():
    js = WEB.joinpath("app.js").read_text()
    code = re.sub(r"//[^\n]*", "", js)  # the header comment names what is not used
    for sink in (
        "innerHTML",
        "outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
        "new Function",
        'setAttribute("on',
        "localStorage",
    ):
        assert sink not in code, sink
    assert "textContent" in code
    # the token lives in sessionStorage only, under one key
    assert re.findall(r"sessionStorage\.(\w+)\(TOKEN_KEY", code) == [
        "getItem",
        "removeItem",
        "setItem",
    ]


def test_every_id_the_script_uses_exists():
    ids = {a["id"] for _, a in parse_index().tags if "id" in a}
    js = WEB.joinpath("app.js").read_text()
    used = set(re.findall(r"\$\(\"([\w-]+)\"\)", js))
    made = set(re.findall(r"\"stat-\" \+ key", js))  # ids the script creates itself
    assert used - ids == set(), used - ids
    assert made


@pytest.mark.parametrize(
    "name",
    [
        "../setup.cfg",
        "..",
        "web/../x.js",
        "/etc/passwd",
        "a b.js",
        "index.py",
        "app.js/",
        ".hidden.js",
        "nope.js",
    ],
)
def test_no_path_leaves_the_folder(name):
    with pytest.raises(HttpError) as e:
        StaticFiles().get(name)
    assert e.value.status == 404
