"""The HTTP API in process (FastAPI TestClient) over a real Store: routes, problem bodies, auth, limits,
uploads. The live-server cases (uvicorn, concurrency, SIGKILL, schemathesis) are in test_api_live.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from ingest.upload import PipelineIngestor
from kb_server.api.settings import ServerSettings
from kb_server.main import create_app
from tests.kb_server import kbdata

FIXTURES = Path(__file__).parent / "fixtures"
KEY = "test-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
DOC = """---
title: "Upload test: tensor memory accelerator"
accelerator: [h100]
vendor: nvidia
kind: arch
sources: [https://example.org/tma]
---
# TMA
## Bulk copies
The tensor memory accelerator moves whole tiles between global and shared memory with one
instruction, which frees the warps from address arithmetic; we call this the zebra-copy path.
"""


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    return tmp_path_factory.mktemp("kkb-home")


@pytest.fixture(scope="module")
def store(home):
    from kb_server.store import Store

    with kbdata.one_torch_thread():
        s = Store(ServerSettings(home=home, corpus_dir=FIXTURES))
        kbdata.seed(s)
        yield s


def make_client(home, store, **settings) -> TestClient:
    app = create_app(ServerSettings(home=home, corpus_dir=FIXTURES, **{"api_key": KEY, **settings}), store=store,
                     ingestor=PipelineIngestor())
    return TestClient(app)


@pytest.fixture(scope="module")
def client(home, store):
    with make_client(home, store, max_k=20, max_query_chars=300, max_request_bytes=64 * 1024,
                     max_upload_bytes=32 * 1024) as c:
        yield c


def assert_problem(response, status: int, field: str | None):
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/problem+json")
    body = response.json()
    assert {"type", "title", "status", "detail"} <= body.keys() and body["status"] == status
    if field is not None:
        assert body["field"] == field, body
    return body


def test_health_stats_and_docs(client):
    assert client.get("/health").json()["status"] == "ok"
    stats = client.get("/v1/stats").json()
    assert stats["chunks"] >= 5 and stats["kernels"] >= 2 and stats["mode"] == "embedded"
    assert {"documents", "model", "accelerators"} <= stats.keys()
    docs = client.get("/docs")
    assert docs.status_code == 200 and docs.headers["content-type"].startswith("text/html")
    # offline: the page loads nothing from elsewhere (no script, no stylesheet link) and documents every route
    assert "<script" not in docs.text and "<link" not in docs.text and "cdn" not in docs.text.lower()
    assert "<code>/v1/search</code>" in docs.text and "id='schema-SearchQuery'" in docs.text
    assert "maximum 100" in docs.text  # k's bound, as the server enforces it
    paths = client.get("/openapi.json").json()["paths"]
    assert {"/v1/search", "/v1/facts", "/v1/prompt", "/v1/kernels", "/v1/documents"} <= paths.keys()


def test_search_returns_hits_with_sources_and_scores(client):
    response = client.post("/v1/search", json={"query": "row softmax in shared memory", "k": 3})
    assert response.headers["server-timing"].startswith("store;dur=")  # the store's share of the latency
    body = response.json()
    assert 1 <= len(body["hits"]) <= 3
    hit = body["hits"][0]
    assert hit["chunk"]["heading_path"] and hit["chunk"]["source"] and hit["score"] > 0
    mi = client.post("/v1/search", json={"query": "softmax", "k": 10, "filters": {"accelerator": "mi300x"}})
    assert {tuple(h["chunk"]["accelerator"]) for h in mi.json()["hits"]} <= {("mi300x",), ("any",)}


@pytest.mark.parametrize(("body", "status", "field"), [
    ({"query": "x", "k": 21}, 422, "k"),  # over the setting max_k=20
    ({"query": "x", "k": 0}, 422, "k"),
    ({"query": "x" * 301}, 422, "query"),  # over max_query_chars=300
    ({"query": ""}, 422, "query"),
    ({"query": "   "}, 422, "query"),
    ({"query": "x", "filters": {"colour": "red"}}, 422, "filters.colour"),
    ({"query": "x", "mode": "psychic"}, 422, "mode"),
    ({"k": 3}, 422, "query"),
])
def test_search_bad_input_is_a_named_4xx(client, body, status, field):
    assert_problem(client.post("/v1/search", json=body), status, field)


def test_body_limits(client):
    assert_problem(client.post("/v1/search", content=b"{" * (65 * 1024),
                               headers={"content-type": "application/json"}), 413, "body")
    body = assert_problem(client.post("/v1/search", content=b'{"query": "x",\n "k" 3}',
                                      headers={"content-type": "application/json"}), 400, "body")
    assert (body["position"], body["line"], body["column"]) == (20, 2, 6)  # a position, not a "field" 20
    assert "line 2, column 6" in body["detail"] and "delimiter" in body["detail"]


def test_facts_routes(client):
    assert [a["id"] for a in client.get("/v1/accelerators").json()] == ["h100", "mi300x"]
    assert client.get("/v1/accelerators/h100-sxm").json()["id"] == "h100"  # by alias
    assert_problem(client.get("/v1/accelerators/tpu"), 404, "accelerator")
    answer = client.get("/v1/facts", params={"accelerator": "mi300x", "q": "LDS"}).json()
    best = answer["matches"][0]
    assert (best["field"], best["value"], best["unit"]) == ("shared_memory_per_unit", 64, "KiB")
    assert best["source"].startswith("https://www.amd.com/")
    miss = assert_problem(client.get("/v1/facts", params={"accelerator": "h100", "q": "espresso"}), 404, "q")
    assert "memory_bandwidth" in miss["fields"]


def test_prompt_route(client):
    body = {"spec_source": kbdata.SPEC, "accelerator": "h100", "backend": "triton", "token_budget": 4000}
    bundle = client.post("/v1/prompt", json=body).json()
    assert [s["name"] for s in bundle["sections"]] == ["hardware_facts", "passages", "example_kernels", "rules",
                                                       "task"]
    assert bundle["tokens"] <= 4000 and "softmax" in bundle["text"]
    assert_problem(client.post("/v1/prompt", json={**body, "backend": "verilog"}), 422, "backend")
    unknown = assert_problem(client.post("/v1/prompt", json={**body, "accelerator": "tpu"}), 404, "accelerator")
    assert unknown["known"] == ["h100", "mi300x"] and "known: h100, mi300x" in unknown["detail"]
    assert_problem(client.post("/v1/prompt", json={**body, "token_budget": 40}), 422, "token_budget")
    passages = bundle["sections"][1]["sources"]
    assert len(passages) >= 3 and "_softmax_kernel" in bundle["sections"][2]["text"]
    off = client.post("/v1/prompt", json={**body, "retrieval": False}).json()
    assert off["retrieval"] is False and off["sections"][1]["sources"] == [] and "_softmax_kernel" not in off["text"]
    assert_problem(client.post("/v1/prompt", json={**body, "spec_source": "def (:"}), 422, "spec_source")


def test_kernels_routes(client):
    record = {"name": "fused gelu", "op_family": "gelu", "op_signature": "gelu(x)", "backend": "triton",
              "source": "import triton\n# gelu\n", "accelerators": ["h100"],
              "measurements": [{"accelerator": "h100", "spec": "gelu_big", "shape": "8192x8192", "dtype": "bfloat16",
                                "latency_ms": 0.21, "speedup_vs_eager": 1.8}]}
    assert_problem(client.post("/v1/kernels", json=record), 401, "Authorization")
    assert_problem(client.post("/v1/kernels", json=record, headers={"Authorization": "Bearer nope"}), 401, None)
    created = client.post("/v1/kernels", json=record, headers=AUTH)
    assert created.status_code == 201, created.text
    kid = created.json()["id"]
    got = client.get(f"/v1/kernels/{kid}").json()
    assert got["measurements"][0]["latency_ms"] == 0.21 and got["op_family"] == "gelu"
    assert [k["id"] for k in client.get("/v1/kernels", params={"op_family": "gelu"}).json()["kernels"]] == [kid]
    assert {k["backend"] for k in client.get("/v1/kernels", params={"backend": "cuda"}).json()["kernels"]} == {"cuda"}
    found = client.post("/v1/kernels/search", json={"query": "softmax", "backend": "triton"}).json()["kernels"]
    assert found and {k["backend"] for k in found} == {"triton"}
    assert_problem(client.get("/v1/kernels/no-such-kernel"), 404, "kernel_id")
    assert_problem(client.post("/v1/kernels", json={**record, "measurements": [{"latency_ms": "fast"}]},
                               headers=AUTH), 422, None)


def test_upload_list_search_delete(client, home, store):
    files = {"file": ("../../../escape/tma.md", DOC.encode())}  # a hostile name: kept as a name, never a path
    created = client.post("/v1/documents", files=files, headers=AUTH)
    assert created.status_code == 201, created.text
    doc = created.json()
    assert doc["chunks"] >= 1 and not doc["unchanged"] and doc["name"] == "escape/tma.md"
    stored = list((home / "uploads").iterdir())
    assert [p.name for p in stored] == [doc["file_hash"] + ".md"]
    assert not (home.parent / "escape").exists()
    listed = {d["document_id"]: d for d in client.get("/v1/documents").json()["documents"]}
    entry = listed[doc["document_id"]]
    assert (entry["name"], entry["title"], entry["accelerator"], entry["kind"], entry["type"]) == (
        "escape/tma.md", "Upload test: tensor memory accelerator", ["h100"], "arch", "document")
    assert entry["size_bytes"] == len(DOC.encode()) and entry["ingested_at"].startswith("20")
    hits = client.post("/v1/search", json={"query": "zebra-copy path", "k": 3}).json()["hits"]
    assert hits[0]["chunk"]["document_id"] == doc["document_id"]
    assert hits[0]["chunk"]["source"] == "escape/tma.md"  # the user's name, not uploads/<sha256>.md
    assert hits[0]["chunk"]["source_urls"] == ["https://example.org/tma"]
    again = client.post("/v1/documents", files={"file": ("escape/tma.md", DOC.encode())}, headers=AUTH).json()
    assert again["unchanged"] and again["document_id"] == doc["document_id"]
    # the same name with new content replaces the earlier upload: its chunks and its stored file
    edited = DOC.replace("zebra-copy", "okapi-copy").encode()
    newer = client.post("/v1/documents", files={"file": ("escape/tma.md", edited)}, headers=AUTH).json()
    assert newer["replaced"] == [doc["document_id"]] and newer["document_id"] != doc["document_id"]
    assert [p.name for p in (home / "uploads").iterdir()] == [newer["file_hash"] + ".md"]
    assert not [h for h in client.post("/v1/search", json={"query": "zebra-copy path", "k": 5}).json()["hits"]
                if h["chunk"]["document_id"] == doc["document_id"]]
    assert client.delete(f"/v1/documents/{newer['document_id']}", headers=AUTH).status_code == 204
    assert not any((home / "uploads").iterdir())  # the stored file goes with its chunks
    assert newer["document_id"] not in {d["document_id"] for d in client.get("/v1/documents").json()["documents"]}
    assert not [h for h in client.post("/v1/search", json={"query": "okapi-copy path", "k": 5}).json()["hits"]
                if h["chunk"]["document_id"] == newer["document_id"]]
    assert_problem(client.delete(f"/v1/documents/{newer['document_id']}", headers=AUTH), 404, "document_id")


def test_content_ingested_locally_is_not_stored_again_by_an_upload(client, home, store, tmp_path):
    from ingest.pipeline import ingest_paths

    local = tmp_path / "notes" / "tma-local.md"
    local.parent.mkdir()
    local.write_text(DOC.replace("zebra-copy", "quokka-copy"))
    report = ingest_paths(store, [local])
    assert len(report.written) == 1
    local_id = next(d.document_id for d in store.documents() if d.name.endswith("tma-local.md"))
    before = store.stats()["chunks"]
    sent = client.post("/v1/documents", files={"file": ("tma-copy.md", local.read_bytes())}, headers=AUTH).json()
    assert sent["unchanged"] and sent["same_as"] == local_id and sent["document_id"] == local_id
    assert sent["name"].endswith("tma-local.md") and sent["chunks"] == 0
    assert store.stats()["chunks"] == before and not any((home / "uploads").iterdir())
    hits = client.post("/v1/search", json={"query": "quokka-copy path", "k": 5}).json()["hits"]
    assert len({h["chunk"]["document_id"] for h in hits if "quokka" in h["chunk"]["text"]}) == 1
    assert client.delete(f"/v1/documents/{local_id}", headers=AUTH).status_code == 204
    assert local.is_file()  # a local file is the user's: deleting its document never deletes it


@pytest.mark.parametrize("text", ["", "\n\n", "---\ntitle: Nothing yet\naccelerator: h100\n---\n"])
def test_an_empty_markdown_file_is_refused_alike_locally_and_by_the_server(client, home, store, tmp_path, text):
    from ingest.pipeline import NO_TEXT, ingest_paths

    path = tmp_path / "empty.md"
    path.write_text(text)
    before = store.stats()["chunks"], len(store.documents())
    local = ingest_paths(store, [path])
    assert local.written == [] and local.skipped == [(str(path), NO_TEXT)]
    body = assert_problem(client.post("/v1/documents", files={"file": ("empty.md", text.encode())}, headers=AUTH),
                          422, "file")
    assert "empty.md" in body["detail"] and "holds no text to index" in body["detail"]
    assert (store.stats()["chunks"], len(store.documents())) == before
    assert not any((home / "uploads").iterdir())


@pytest.mark.parametrize(("name", "data", "form", "status", "field"), [
    ("tool.exe", b"MZ", {}, 415, "file"),
    ("no-suffix", b"text", {}, 415, "file"),
    ("fake.pdf", b"hello, not a pdf", {}, 422, "file"),
    ("latin1.md", b"caf\xe9 " * 50, {}, 422, "file"),
    ("doc.md", b"# x\nsome text here", {"vendor": "?!"}, 422, "vendor"),  # nothing to keep of the name
    ("doc.md", b"# x\nsome text here", {"kind": "---"}, 422, "kind"),
    ("doc.md", b"# x\nsome text here", {"accelerator": "h100,../"}, 422, "accelerator"),
    ("bad.md", b"---\ntitle: ok title\naccelerator: [h100]\nvendor: nvidia\nkind: [a, b]\n---\n# x\ntext", {},
     422, "file"),  # a field of the wrong type in the front matter: the detail names the line and field
    ("big.md", b"a" * (33 * 1024), {}, 413, "file"),  # over max_upload_bytes=32 KiB
])
def test_bad_uploads_are_named_4xx_and_leave_nothing(client, home, name, data, form, status, field):
    body = assert_problem(client.post("/v1/documents", files={"file": (name, data)}, data=form, headers=AUTH),
                          status, field)
    if name == "bad.md":
        assert "kind" in body["detail"] and ":5:" in body["detail"]
    assert not [p for p in (home / "uploads").iterdir()] if (home / "uploads").exists() else True


def test_symlinked_uploads_dir_is_refused(tmp_path, store):
    from kb_server.api.errors import Problem

    home, outside = tmp_path / "home", tmp_path / "outside"
    home.mkdir()
    outside.mkdir()
    (home / "uploads").symlink_to(outside)
    with pytest.raises(Problem, match="is a symlink"), make_client(home, store):  # start-up refuses it ...
        pass
    (home / "uploads").unlink()
    with make_client(home, store) as c:
        (home / "uploads").rmdir()
        (home / "uploads").symlink_to(outside)  # ... and so does an upload, if it appears later
        r = c.post("/v1/documents", files={"file": ("a.md", DOC.encode())}, headers=AUTH)
    assert r.status_code == 503 and not any(outside.iterdir())


def test_reads_can_require_the_token(home, store):
    with make_client(home, store, read_requires_key=True) as c:
        assert_problem(c.get("/v1/accelerators"), 401, "Authorization")
        assert_problem(c.post("/v1/search", json={"query": "x"}), 401, "Authorization")
        assert c.get("/v1/accelerators", headers=AUTH).status_code == 200
        assert c.get("/health").status_code == 200  # liveness stays open


def test_without_a_token_writes_need_loopback(home, store):
    record = {"name": "n", "op_family": "f", "op_signature": "f()", "backend": "triton", "source": "x = 1\n"}
    settings = ServerSettings(home=home, corpus_dir=FIXTURES, api_key=None)
    with TestClient(create_app(settings, store=store, bound_host="0.0.0.0", ingestor=PipelineIngestor())) as c:
        assert_problem(c.post("/v1/kernels", json=record), 403, None)
        assert c.get("/v1/kernels").status_code == 200  # reads stay open
    with TestClient(create_app(settings, store=store, bound_host="127.0.0.1", ingestor=PipelineIngestor())) as c:
        assert c.post("/v1/kernels", json=record).status_code == 201


def test_streamed_body_over_the_limit_is_413(client):
    def chunks():  # no content-length: the limit is enforced while the body streams in
        for _ in range(70):
            yield b"{" * 1024

    assert_problem(client.post("/v1/search", content=chunks(), headers={"content-type": "application/json"}),
                   413, "body")


def test_pdf_and_html_uploads(client, tmp_path):
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("Helvetica", size=12)
    pdf.multi_cell(0, 8, "Warp specialisation: producer warps issue the pangolin loads while consumer warps "
                         "run the math on the previous stage.")
    html = ("<html><head><title>Swizzle notes</title></head><body><h1>Swizzle</h1><p>The armadillo swizzle "
            "permutes shared memory columns so that a warp's accesses hit distinct banks.</p></body></html>")
    for name, data, word in [("notes.pdf", bytes(pdf.output()), "pangolin"), ("page.html", html.encode(), "armadillo")]:
        r = client.post("/v1/documents", files={"file": (name, data)}, headers=AUTH,
                        data={"accelerator": "h100", "vendor": "nvidia", "kind": "arch"})
        assert r.status_code == 201, r.text
        hit = client.post("/v1/search", json={"query": f"{word}", "k": 1, "mode": "lexical"}).json()["hits"][0]
        assert word in hit["chunk"]["text"] and hit["chunk"]["accelerator"] == ["h100"]
        assert hit["chunk"]["kind"] == "arch"
        assert client.delete(f"/v1/documents/{r.json()['document_id']}", headers=AUTH).status_code == 204


def test_any_vendor_and_kind_upload_normalised(client):
    doc = b"---\nsource: https://lumenforge.example/a\nreview_state: draft\n---\n# Tile notes\n\nvorpq scratchpad.\n"
    created = client.post("/v1/documents", files={"file": ("lf.md", doc)}, headers=AUTH,
                          data={"vendor": "LumenForge", "accelerator": "LF-T4", "kind": "Datasheet"})
    assert created.status_code == 201, created.text
    hits = client.post("/v1/search", json={"query": "vorpq", "k": 3, "filters": {"vendor": "lumenforge"}}).json()
    chunk = hits["hits"][0]["chunk"]
    assert (chunk["vendor"], chunk["accelerator"], chunk["kind"]) == ("lumenforge", ["lf-t4"], "datasheet")
    assert chunk["title"] == "Tile notes" and chunk["metadata"] == {"review_state": "draft"}
    assert chunk["source_urls"] == ["https://lumenforge.example/a"]
    assert client.delete(f"/v1/documents/{created.json()['document_id']}", headers=AUTH).status_code == 204


def test_a_server_without_an_ingestor_answers_uploads_with_501(home, store):
    app = create_app(ServerSettings(home=home, corpus_dir=FIXTURES, api_key=KEY), store=store)
    with TestClient(app) as c:
        body = assert_problem(c.post("/v1/documents", files={"file": ("a.md", DOC.encode())}, headers=AUTH),
                              501, "file")
        assert "ingestor" in body["detail"]
        assert c.get("/v1/accelerators").status_code == 200  # reads are served


def test_an_unknown_accelerator_in_a_search_filter_is_a_422_listing_the_known_ids(client):
    body = assert_problem(client.post("/v1/search", json={"query": "softmax", "filters": {"accelerator": "tpuv5"}}),
                          422, "filters.accelerator")
    assert "tpuv5" in body["detail"] and {"h100", "mi300x"} <= set(body["known"])
    alias = client.post("/v1/search", json={"query": "row softmax", "k": 3, "filters": {"accelerator": "H100-SXM"}})
    assert alias.status_code == 200 and alias.json()["hits"]  # an alias reads as its id


def test_the_search_schema_bounds_k_as_the_server_does(client):
    from kb_server.config import KBSettings

    schema = client.get("/openapi.json").json()["components"]["schemas"]["SearchQuery"]["properties"]["k"]
    assert schema["maximum"] == KBSettings.model_fields["max_k"].default == 100
