"""The store against a real chroma server (`chroma run`), as a team deployment uses it: ingest
through one Store, search from another with its own BM25 index rebuilt from the server."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from ingest.pipeline import IngestOptions, ingest_paths
from kb_server.schemas import SearchFilters
from kb_server.store import Store, StoreError
from tests.kb_server.serverproc import refused_port, wait_for_port


@pytest.fixture(scope="module")
def chroma_url(tmp_path_factory):
    exe = Path(sys.executable).with_name("chroma")
    exe = str(exe) if exe.exists() else shutil.which("chroma")
    if exe is None:
        pytest.skip("the chroma server binary is not installed")
    data = tmp_path_factory.mktemp("chroma-server")
    proc = subprocess.Popen([exe, "run", "--path", str(data), "--host", "127.0.0.1", "--port", "0"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # port 0: the OS picks
    try:
        port = wait_for_port(proc, 30, "chroma run")
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{url}/api/v2/heartbeat", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"chroma run did not start on port {port}")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_server_mode_ingest_and_search(tmp_path, chroma_url, kb_settings, embedder):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# Hopper\n\n## TMA\n\ncp.async.bulk.tensor moves tiles with the TMA unit.\n")
    (docs / "b.md").write_text("# CDNA\n\n## LDS\n\nds_read_b128 reads 16 bytes per lane from the LDS.\n")
    writer = Store(kb_settings.model_copy(update={"chroma_url": chroma_url, "home": tmp_path / "w"}),
                   embedder=embedder)
    assert writer.mode == "server"
    ingest_paths(writer, [docs / "a.md"], IngestOptions(accelerator=("h100",)))
    ingest_paths(writer, [docs / "b.md"], IngestOptions(accelerator=("mi300x",)))
    # a reader on another machine: its own home, so its BM25 index comes from the server's documents
    reader = Store(kb_settings.model_copy(update={"chroma_url": chroma_url, "home": tmp_path / "r"}),
                   embedder=embedder)
    hit = reader.search("ds_read_b128", k=1)[0]
    assert hit.chunk.heading_path == ["CDNA", "LDS"] and hit.lexical_score > 0
    assert reader.search("cp.async.bulk.tensor", k=2, filters=SearchFilters(accelerator="mi300x"),
                         mode="lexical") == []
    assert reader.stats()["chunks"] == 2 and reader.stats()["mode"] == "server"
    # a write by the writer is seen by the reader's lexical index (generation changed)
    (docs / "a.md").write_text("# Hopper\n\n## TMA\n\nThe tensor memory accelerator uses mbarrier waits.\n")
    ingest_paths(writer, [docs], IngestOptions(accelerator=("h100",)))
    assert reader.search("mbarrier", k=1, mode="lexical")[0].chunk.heading_path == ["Hopper", "TMA"]
    assert not any("cp.async.bulk.tensor" in h.chunk.text for h in reader.search("cp.async.bulk.tensor", k=4))


def test_unreachable_server_is_named(kb_settings):
    with refused_port() as port, pytest.raises(StoreError, match=f"127.0.0.1:{port}"):
        Store(kb_settings.model_copy(update={"chroma_url": f"http://127.0.0.1:{port}"}))
