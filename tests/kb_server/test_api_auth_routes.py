"""Auth by route table: the test walks the app's routes, so a new route is covered the day it is added.

- every write route (POST/PUT/PATCH/DELETE, less the reads sent by POST listed below) refuses a request
  without the token, or with a wrong one: 401 when KKB_API_KEY is set, 403 when none is set and the server
  is not bound to loopback;
- with `read_requires_key`, every route but the public ones refuses a request without the token: 401.
No store is opened: a guarded route refuses before it touches one (a route that reaches for the store has
lost its guard, and the test fails on its status).
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from kb_server.api import routes as routes_pkg
from kb_server.api.settings import ServerSettings
from kb_server.main import create_app

FIXTURES = Path(__file__).parent / "fixtures"
KEY = "route-table-key"
WRITE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
# reads that take a JSON body, so they are sent by POST; a new one is a decision: add it here
READS_BY_POST = {("POST", "/v1/search"), ("POST", "/v1/kernels/search"), ("POST", "/v1/prompt")}
PUBLIC = {("GET", "/health")}  # liveness: open whatever the settings
# routes the table must find, so that a rename cannot make this test vacuous
KNOWN_WRITES = {("POST", "/v1/documents"), ("DELETE", "/v1/documents/{document_id}"), ("POST", "/v1/kernels")}
KNOWN_READS = {("GET", "/v1/documents"), ("GET", "/v1/accelerators"), ("GET", "/v1/facts"),
               ("GET", "/v1/kernels"), ("GET", "/v1/kernels/{kernel_id}"), ("GET", "/v1/stats"),
               ("POST", "/v1/search"), ("POST", "/v1/prompt")}


def _app(tmp_path, bound_host: str | None = None, **settings):
    settings = ServerSettings(home=tmp_path / "home", corpus_dir=FIXTURES, **settings)
    return create_app(settings, store=None, bound_host=bound_host, open_store_at_startup=False)


def _routes(app) -> set[tuple[str, str]]:
    """(method, path) of every operation the app publishes (its OpenAPI table)."""
    return {(method.upper(), path) for path, operations in app.openapi()["paths"].items()
            for method in operations}


def _router_routes() -> set[tuple[str, str]]:
    """(method, path) of every APIRoute of every router under kb_server/api/routes/, found by listing it."""
    found = set()
    for info in pkgutil.iter_modules(routes_pkg.__path__):
        router = getattr(importlib.import_module(f"{routes_pkg.__name__}.{info.name}"), "router", None)
        for route in getattr(router, "routes", []):
            if isinstance(route, APIRoute):
                found |= {(method, route.path) for method in route.methods if method != "HEAD"}
    return found


def _writes(app) -> list[tuple[str, str]]:
    writes = sorted(r for r in _routes(app) if r[0] in WRITE_METHODS and r not in READS_BY_POST)
    assert KNOWN_WRITES <= set(writes)  # never an empty walk
    return writes


def _guarded(app) -> list[tuple[str, str]]:
    guarded = sorted(_routes(app) - PUBLIC)
    assert KNOWN_WRITES | KNOWN_READS <= set(guarded)
    return guarded


def _url(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "x", path)


def _send(client: TestClient, method: str, path: str, headers: dict | None = None):
    return client.request(method, _url(path), headers=headers or {})


def _assert_refused(response, status: int, method: str, path: str):
    assert response.status_code == status, f"{method} {path}: {response.status_code} {response.text[:200]}"
    body = response.json()
    assert body["status"] == status, body
    assert "KKB_API_KEY" in body["detail"], body  # the refusal says what to send or set
    if status == 401:
        assert body["field"] == "Authorization" and response.headers["www-authenticate"] == "Bearer"
        assert body["type"].endswith("/unauthorized"), body
    else:
        assert body["type"].endswith("/writes-disabled"), body


def test_the_table_finds_every_known_route(tmp_path):
    app = _app(tmp_path, api_key=KEY)
    routes = _routes(app)
    assert KNOWN_WRITES <= set(_writes(app)), routes
    assert KNOWN_READS <= routes and READS_BY_POST <= routes and PUBLIC <= routes, routes
    # a route hidden from the schema (include_in_schema=False) would escape the walk: there is none
    assert _router_routes() <= routes, _router_routes() - routes


@pytest.mark.parametrize("token", [None, "wrong-key", ""], ids=["no-token", "wrong-token", "empty-token"])
def test_every_write_route_needs_the_token(tmp_path, token):
    app = _app(tmp_path, api_key=KEY)
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    with TestClient(app, raise_server_exceptions=False) as client:
        for method, path in _writes(app):
            _assert_refused(_send(client, method, path, headers), 401, method, path)


@pytest.mark.parametrize("host", ["0.0.0.0", "10.1.2.3", None], ids=["any", "lan", "socket-address"])
def test_without_a_configured_token_every_write_route_needs_loopback(tmp_path, host):
    app = _app(tmp_path, bound_host=host, api_key=None)  # None: TestClient's socket is "testserver"
    with TestClient(app, raise_server_exceptions=False) as client:
        for method, path in _writes(app):
            response = _send(client, method, path, {"Authorization": f"Bearer {KEY}"})
            _assert_refused(response, 403, method, path)


@pytest.mark.parametrize("token", [None, "wrong-key"], ids=["no-token", "wrong-token"])
def test_read_requires_key_guards_every_route_but_liveness(tmp_path, token):
    app = _app(tmp_path, api_key=KEY, read_requires_key=True)
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    with TestClient(app, raise_server_exceptions=False) as client:
        for method, path in _guarded(app):
            _assert_refused(_send(client, method, path, headers), 401, method, path)
        for method, path in sorted(PUBLIC):
            assert _send(client, method, path).status_code == 200, (method, path)


def test_reads_stay_open_by_default(tmp_path):
    """The other side of the guard: without read_requires_key a read route does not answer 401."""
    app = _app(tmp_path, api_key=KEY)
    with TestClient(app, raise_server_exceptions=False) as client:
        for path in ("/v1/accelerators", "/v1/facts"):  # answered from the facts, no store needed
            assert _send(client, "GET", path).status_code not in (401, 403), path


@pytest.mark.parametrize(("server", "allowed"), [(("127.0.0.1", 8000), True), (("::1", 8000), True),
                                                 (("10.1.2.3", 8000), False), (None, False)],
                         ids=["ipv4-loopback", "ipv6-loopback", "lan", "no-socket"])
def test_without_a_bound_host_the_socket_address_decides(tmp_path, server, allowed):
    """Not told the bound host, a server without KKB_API_KEY takes writes on a loopback socket only."""
    import asyncio

    from starlette.requests import Request

    from kb_server.api.deps import require_write
    from kb_server.api.errors import Problem

    app = _app(tmp_path, bound_host=None, api_key=None)
    scope = {"type": "http", "method": "POST", "path": "/v1/kernels", "headers": [], "app": app}
    if server is not None:
        scope["server"] = server
    request = Request(scope)
    if allowed:
        assert asyncio.run(require_write(request, None)) is None
    else:
        with pytest.raises(Problem) as info:
            asyncio.run(require_write(request, None))
        assert info.value.status == 403 and "KKB_API_KEY" in info.value.detail
