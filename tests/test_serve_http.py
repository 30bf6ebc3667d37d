"""Unit tests of the HTTP layer of `cuzk serve` (no daemon): routing and the static-file hook
that serves the web panel (issue 10) from a package folder."""

from __future__ import annotations

import sys

import pytest

from cuzk.serve.http import HttpError, Router, StaticFiles


@pytest.fixture
def web_package(tmp_path, monkeypatch):
    """A throwaway package `panelpkg` with a web/ folder, standing in for cuzk/serve/web/."""
    pkg = tmp_path / "panelpkg"
    (pkg / "web" / "img").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "web" / "index.html").write_text("<!doctype html><title>cuzk</title>")
    (pkg / "web" / "app.js").write_text("console.log(1)")
    (pkg / "web" / "img" / "logo.svg").write_text("<svg/>")
    (pkg / "web" / "notes.exe").write_text("no")
    (tmp_path / "secret.txt").write_text("outside")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield StaticFiles("panelpkg", "web")
    sys.modules.pop("panelpkg", None)


def test_static_files_serve_the_folder_and_nothing_else(web_package):
    r = web_package.index(None)
    assert r.status == 200 and r.content_type.startswith("text/html")
    assert r.body.startswith(b"<!doctype html>")
    assert web_package.get("app.js").content_type.startswith("text/javascript")
    assert web_package.get("img/logo.svg").body == b"<svg/>"
    for name in (
        "../secret.txt",
        "img/../../secret.txt",
        "/etc/passwd",
        "notes.exe",
        "missing.js",
        ".hidden.js",
        "a/b/c.js",
        "img",
        "",
    ):
        with pytest.raises(HttpError) as e:
            web_package.get(name)
        assert e.value.status == 404, name


def test_static_files_without_a_panel_say_so():
    with pytest.raises(HttpError) as e:
        StaticFiles("cuzk", "no-such-folder").get("index.html")
    assert e.value.status == 404 and "not installed" in e.value.message


def test_router_matches_params_and_reports_405_and_404():
    r = Router()
    r.add("GET", "/v1/jobs/{job_id}", "get")
    r.add("POST", "/v1/jobs/{job_id}/cancel", "cancel")
    r.add("GET", "/v1/jobs", "list", auth=False)
    route, params = r.match("GET", "/v1/jobs/ab%20c")
    assert route.handler == "get" and params == {"job_id": "ab c"}
    route, params = r.match("HEAD", "/v1/jobs")
    assert route.handler == "list" and not route.auth
    with pytest.raises(HttpError) as e:
        r.match("DELETE", "/v1/jobs/x")
    assert e.value.status == 405 and e.value.headers == {"Allow": "GET"}
    for path in ("/v1/jobs/x/y", "/v1/jobs/", "/v1/job", "/v1/jobs/x/cancel/"):
        with pytest.raises(HttpError) as e:
            r.match("GET", path)
        assert e.value.status in (404, 405), path
