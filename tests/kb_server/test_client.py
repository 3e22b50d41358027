"""KBClient against a real uvicorn server on loopback (typed results, problem bodies), and its retry
policy against small stdlib HTTP servers that fail on purpose (5xx/429 retried, 4xx not)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import httpx
import pytest

from kb_server.api.models import DocumentCreated
from kb_server.client import KBClient, KBError
from kb_server.factlookup import FactAnswer
from kb_server.facts import AcceleratorFacts
from kb_server.prompt import PromptBundle
from kb_server.schemas import Hit, KernelRecord
from tests.kb_server import kbdata
from tests.kb_server.serverproc import refused_port, seeded_app_in_thread

KEY = "client-key"


@pytest.fixture(scope="module")
def base_url(tmp_path_factory):
    """uvicorn serving the app in this process, on a free loopback port."""
    with seeded_app_in_thread(tmp_path_factory.mktemp("client-home"), KEY) as url:
        yield url


def test_reads_return_typed_records(base_url):
    with KBClient(base_url) as kb:
        hits = kb.search("row softmax", k=3, filters={"accelerator": "h100"})
        assert hits and all(isinstance(h, Hit) for h in hits)
        assert isinstance(kb.accelerator("h100"), AcceleratorFacts)
        assert [a.id for a in kb.accelerators()] == ["h100", "mi300x"]
        answer = kb.facts("h100", "HBM bandwidth")
        assert isinstance(answer, FactAnswer) and answer.matches[0].value == 3.35
        bundle = kb.prompt(kbdata.SPEC, "h100", "triton", token_budget=3000)
        assert isinstance(bundle, PromptBundle) and bundle.tokens <= 3000
        kernels = kb.kernels(backend="triton")
        assert kernels and all(isinstance(k, KernelRecord) and k.backend == "triton" for k in kernels)
        assert kb.kernel("softmax-triton").op_family == "softmax"
        assert kb.search_kernels("softmax", backend="cuda")[0].id == "softmax-cuda"
        assert kb.stats()["kernels"] >= 2


def test_writes_and_problem_bodies(base_url, tmp_path):
    with KBClient(base_url, api_key=KEY) as kb:
        record = KernelRecord(id="", name="client kernel", op_family="relu", op_signature="relu(x)",
                              backend="triton", source="# relu\n")
        kid = kb.add_kernel(record)
        assert kb.kernel(kid).name == "client kernel"
        path = tmp_path / "note.md"
        path.write_text("# Client note\n\nThe wombat scheduler hands out tiles in a swizzled order.\n")
        created = kb.add_document(path, accelerator=["h100"], vendor="nvidia", kind="playbook")
        assert isinstance(created, DocumentCreated) and created.chunks >= 1
        assert kb.search("wombat scheduler", k=1)[0].chunk.kind == "playbook"
        assert kb.delete_document(created.document_id) is True
        assert kb.delete_document(created.document_id) is False
        with pytest.raises(KBError) as info:
            kb.search("x", k=0)
        assert info.value.status == 422 and info.value.field == "k"
    with KBClient(base_url) as anon, pytest.raises(KBError) as info:
        anon.add_kernel(record)
    assert info.value.status == 401


class _Scripted(BaseHTTPRequestHandler):
    """Answers from a script of status codes, then 200 with {"status": "ok"}; counts the requests."""

    script: ClassVar[list[int]] = []
    hits: ClassVar[int] = 0

    def do_GET(self):
        cls = type(self)
        cls.hits += 1
        status = cls.script.pop(0) if cls.script else 200
        body = json.dumps({"status": "ok"} if status == 200 else
                          {"type": "about:blank", "title": "x", "status": status, "detail": f"scripted {status}"})
        self.send_response(status)
        self.send_header("content-type", "application/json")
        if status == 429:
            self.send_header("retry-after", "0")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args):
        pass


@pytest.fixture()
def scripted():
    handler = type("Handler", (_Scripted,), {"script": [], "hits": 0})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield handler, f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.mark.parametrize(("script", "retries", "ok", "hits"), [
    ([503, 502], 3, True, 3),  # two 5xx, then success
    ([429, 429], 3, True, 3),  # rate limited twice (Retry-After: 0)
    ([500, 500, 500], 2, False, 3),  # retries exhausted: 1 + 2 attempts
    ([404], 3, False, 1),  # 4xx: never retried
    ([422], 3, False, 1),
])
def test_retry_policy(scripted, script, retries, ok, hits):
    handler, url = scripted
    handler.script = list(script)
    with KBClient(url, retries=retries, backoff_s=0.01) as kb:
        if ok:
            assert kb.health() == {"status": "ok"}
        else:
            with pytest.raises(KBError) as info:
                kb.health()
            assert info.value.status == script[-1 if hits > 1 else 0]
    assert handler.hits == hits


def test_connect_errors_are_retried_until_the_server_is_up():
    handler = type("H", (_Scripted,), {"script": [], "hits": 0})
    # bound now (the port is ours), listening only later: until then connections are refused
    late = ThreadingHTTPServer(("127.0.0.1", 0), handler, bind_and_activate=False)
    late.server_bind()
    port = late.server_address[1]

    def start_late():
        time.sleep(0.6)
        late.server_activate()
        late.serve_forever()

    threading.Thread(target=start_late, daemon=True).start()
    try:
        with KBClient(f"http://127.0.0.1:{port}", retries=8, backoff_s=0.1, timeout=2) as kb:
            assert kb.health() == {"status": "ok"}
    finally:
        late.shutdown()
        late.server_close()
    with refused_port() as port, KBClient(f"http://127.0.0.1:{port}", retries=1, backoff_s=0.01) as kb, \
            pytest.raises(httpx.ConnectError):
        kb.health()
