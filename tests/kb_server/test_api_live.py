"""The server as it runs: a real uvicorn process on loopback (kkb serve), with concurrent clients,
a SIGKILL in the middle of an upload, and a bounded schemathesis run over its OpenAPI schema."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from kb_server.client import KBClient
from tests.kb_server.serverproc import FIXTURE_CORPUS, start_server

pytestmark = pytest.mark.slow  # starts server processes: tens of seconds on 2 busy cores
KEY = "live-key"
SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")


def doc(n: int, paragraphs: int = 1) -> bytes:
    body = "\n\n".join(f"Paragraph {i} of note {n}: tile {n * 7 + i} rows through shared memory, marker "
                       f"quokka{n}x." for i in range(paragraphs))
    return (f"---\ntitle: \"Concurrency note {n}\"\naccelerator: [h100]\nvendor: nvidia\nkind: guide\n---\n"
            f"# Note {n}\n\n{body}\n").encode()


def kernel(n: int) -> dict:
    return {"name": f"kernel {n}", "op_family": "softmax", "op_signature": "softmax(dim=-1)", "backend": "triton",
            "source": f"# kernel number {n}\nimport triton\n", "accelerators": ["h100"]}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    home = tmp_path_factory.mktemp("live") / "home"
    home.mkdir()
    s = start_server(home, env={"KKB_API_KEY": KEY})
    yield s
    s.stop()


def test_live_server_answers_and_guards_writes(server):
    with KBClient(server.base_url) as anon, KBClient(server.base_url, api_key=KEY) as kb:
        assert anon.health()["store"] == "open"
        assert anon.facts("h100", "bf16 peak").matches[0].value == 989.4
        with pytest.raises(Exception, match="401"):
            anon.add_kernel(kernel(-1))
        kid = kb.add_kernel(kernel(-1))
        assert anon.kernel(kid).name == "kernel -1"
    assert httpx.get(f"{server.base_url}/docs").status_code == 200


def test_concurrent_writes_and_searches_lose_nothing(server, tmp_path):
    """6 writers (kernels and documents) and 4 searchers at once; every acknowledged write is there."""
    acked_kernels: list[str] = []
    acked_docs: list[str] = []
    errors: list[BaseException] = []
    done = threading.Event()
    lock = threading.Lock()

    def write_kernels(w: int) -> None:
        with KBClient(server.base_url, api_key=KEY) as kb:
            for i in range(8):
                kid = kb.add_kernel(kernel(w * 100 + i))
                with lock:
                    acked_kernels.append(kid)

    def write_docs(w: int) -> None:
        with KBClient(server.base_url, api_key=KEY) as kb:
            for i in range(3):
                path = tmp_path / f"note-{w}-{i}.md"
                path.write_bytes(doc(w * 10 + i))
                created = kb.add_document(path, accelerator=["h100"])
                with lock:
                    acked_docs.append(created.document_id)

    def search() -> int:
        n = 0
        with KBClient(server.base_url) as kb:
            while not done.is_set():
                kb.search("tile rows through shared memory", k=5)
                kb.kernels(op_family="softmax")
                n += 1
        return n

    with ThreadPoolExecutor(max_workers=10) as pool:
        searchers = [pool.submit(search) for _ in range(4)]
        writers = [pool.submit(write_kernels, w) for w in range(4)] + [pool.submit(write_docs, w) for w in (1, 2)]
        for f in writers:
            try:
                f.result()
            except BaseException as exc:  # noqa: BLE001  collected, asserted below
                errors.append(exc)
        done.set()
        searches = sum(f.result() for f in searchers)
    assert not errors, errors
    assert len(acked_kernels) == 32 and len(acked_docs) == 6 and searches > 0
    with KBClient(server.base_url) as kb:
        present = {k.id for k in kb.kernels(op_family="softmax")}
        assert set(acked_kernels) <= present
        assert set(acked_docs) <= set(_hashes(kb))
        for n in (10, 12, 20, 22):  # each acknowledged document is searchable by its own marker
            hits = kb.search(f"quokka{n}x", k=3, mode="lexical")
            assert hits and f"quokka{n}x" in hits[0].chunk.text


def _hashes(kb) -> dict[str, str]:
    """document id -> file hash of every document the server lists."""
    return {d.document_id: d.file_hash for d in kb.documents()}


def test_invalid_facts_file_stops_kkb_serve(tmp_path):
    corpus = tmp_path / "corpus"
    shutil.copytree(FIXTURE_CORPUS / "accelerators", corpus / "accelerators")
    bad = corpus / "accelerators" / "mi300x.yaml"
    bad.write_text(bad.read_text().replace("unit: KiB", "unit: ''"))
    (tmp_path / "home").mkdir()
    with pytest.raises(RuntimeError, match="exited with 2") as info:
        start_server(tmp_path / "home", corpus_dir=corpus, timeout_s=120)
    assert "mi300x.yaml" in str(info.value) and "shared_memory_per_unit.unit" in str(info.value)


@pytest.mark.skipif(not SCHEMATHESIS.exists(), reason="schemathesis is not installed")
def test_schemathesis_finds_no_server_errors(server, tmp_path):
    with KBClient(server.base_url, api_key=KEY) as kb:  # something to find
        kb.add_kernel(kernel(5000))
    cmd = [str(SCHEMATHESIS), "run", f"{server.base_url}/openapi.json", "--checks", "not_a_server_error",
           "--max-examples", "10", "--max-time", "30", "--seed", "1", "-H", f"Authorization: Bearer {KEY}",
           "--request-timeout", "20", "--no-color"]
    out = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=120,
                         cwd=tmp_path,  # schemathesis writes a .schemathesis/ cache in its working directory
                         env={**os.environ, "SCHEMATHESIS_HOOKS": ""})
    assert out.returncode == 0, out.stdout[-6000:] + out.stderr[-2000:] + server.log()[-3000:]
    passed = re.search(r"(\d+) passed", out.stdout)
    assert passed and int(passed.group(1)) >= 10, out.stdout[-3000:]  # it did reach the operations
    print(out.stdout[-1500:])


def test_sigkill_mid_upload_restarts_consistent(server, tmp_path):
    """Last in this module: it kills the module's server (after the other tests' writes, which must
    survive too) and restarts one on the same store."""
    home, env = server.home, server.env
    with KBClient(server.base_url) as kb:
        acked_before = _hashes(kb)
        kernels_before = {k.id for k in kb.kernels()}
    acked_kernels, acked_docs = [], []
    try:
        with KBClient(server.base_url, api_key=KEY, retries=0) as kb:
            for i in range(3):
                acked_kernels.append(kb.add_kernel(kernel(9000 + i)))
            small = tmp_path / "small.md"
            small.write_bytes(doc(900))
            acked_docs.append(kb.add_document(small).document_id)
        # The server is killed as soon as the upload's file lands, while its chunks are embedded and written.
        # A machine that finishes a whole upload within one poll gets a bigger one: no assumption of speed.
        interrupted = None
        for attempt, paragraphs in enumerate((600, 2400, 9600)):  # 600 paragraphs: ~600 chunks
            marker = 901 + attempt
            big = tmp_path / f"big{marker}.md"
            big.write_bytes(doc(marker, paragraphs=paragraphs))
            outcome: list = []

            def upload_big(path=big, outcome=outcome, url=server.base_url):
                try:
                    with KBClient(url, api_key=KEY, retries=0, timeout=600) as kb:
                        outcome.append(kb.add_document(path).document_id)
                except Exception as exc:  # noqa: BLE001  the server dies under it: no acknowledgement
                    outcome.append(exc)

            stored = home / "uploads" / (hashlib.sha256(big.read_bytes()).hexdigest() + ".md")
            t = threading.Thread(target=upload_big)
            t.start()
            deadline = time.monotonic() + 120
            while not stored.exists() and t.is_alive() and time.monotonic() < deadline:
                time.sleep(0.01)
            assert stored.exists(), "the upload never reached the store"
            server.kill()
            t.join(60)
            assert outcome and not t.is_alive(), "the upload's client neither finished nor failed"
            if isinstance(outcome[0], Exception):
                interrupted = marker
                break
            acked_docs.append(outcome[0])  # acknowledged before the kill: it must survive; try a bigger one
            server = start_server(home, env=env)
        assert interrupted is not None, "every upload was acknowledged before the kill; nothing was interrupted"
    finally:
        server.stop()
    server = start_server(home, env=env)
    try:
        with KBClient(server.base_url) as kb:
            docs = _hashes(kb)
            assert set(acked_docs) <= set(docs) and acked_before.items() <= docs.items()
            assert kernels_before <= {k.id for k in kb.kernels()}
            assert all(kb.kernel(k).id == k for k in acked_kernels)
            stats = kb.stats()
            hits = kb.search(f"quokka{interrupted}x", k=50, mode="lexical")
            orphans = [h for h in hits if h.chunk.document_id not in docs]
            assert not orphans, "chunks of an unacknowledged upload outlived the restart"
            if any(h.chunk.document_id in docs for h in hits):  # finished before the kill: then whole
                assert stats["chunks"] >= 600
        uploads = [p.name for p in (home / "uploads").iterdir()]
        assert not [n for n in uploads if n.startswith(".tmp-")]
        assert {n.split(".")[0] for n in uploads} <= set(docs.values())
    finally:
        server.stop()
        print(server.log()[-2000:])
