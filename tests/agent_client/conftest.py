"""Shared fixtures of the agent client's tests: one real store, a fake model server, tiny settings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]

from tests.agent_client.agent_helpers import FAST_EVAL, SPEC, client_settings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TRITON_INTERPRET", "1")

# Harness settings that keep one CPU evaluation to a few seconds (compile baseline skipped).

# Our own words: a few passages for the retrieval sections of the prompts.
PASSAGES = [
    ("relu-memory", ["any"], ["Playbook", "Pointwise ops"],
     ("A pointwise op such as relu reads each element once and writes it once, so it is memory bound: "
     "coalesced, vectorised loads and a grid large enough to cover the bandwidth decide its speed.")),
    ("h200-bandwidth", ["h200"], ["H200", "Memory"],
     "The H200 pairs Hopper SMs with HBM3e; a memory bound kernel should aim for most of the copy bandwidth."),
    ("triton-masks", ["any"], ["Triton", "Masks"],
     ("When the element count is not a multiple of BLOCK, load and store with a mask built from the offsets "
     "and the size, and give masked loads an `other` value that does not change the result.")),
]


@pytest.fixture(scope="session")
def kb_home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("kkb_home")


@pytest.fixture(scope="session")
def store(kb_home):
    """A real embedded store (chromadb + BM25 + the repo's accelerator facts) with a few passages."""
    from kb_server.config import KBSettings
    from kb_server.schemas import Chunk
    from kb_server.store import Store, chunk_id

    store = Store(KBSettings(home=kb_home, corpus_dir=REPO / "corpus"))
    for doc_id, accs, heading, text in PASSAGES:
        chunk = Chunk(id=chunk_id(doc_id, heading, text, {"accelerator": accs}), document_id=doc_id, text=text,
                      heading_path=heading, source=f"tests/{doc_id}.md", title=heading[-1], accelerator=accs,
                      vendor="any", kind="guide", source_urls=[])
        store.upsert_document(doc_id, [chunk], file_hash="h-" + doc_id)
    return store


@pytest.fixture(scope="session")
def kb(store):
    from agent_client.kb import LocalKB

    return LocalKB(store)


@pytest.fixture
def fake_server():
    from tests.agent_client.fake_anthropic import FakeModelServer

    servers = []

    def start(script):
        server = FakeModelServer(script).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()




@pytest.fixture(scope="session")
def tuned_session(kb, tmp_path_factory):
    """One real session, run once: the real anthropic SDK against the fake server, the CPU harness.

    Replies in call order: a 429 then a good draft; a malformed draft; a tool call that runs a wrong
    candidate through the harness, then that wrong draft; then two expansions of the best node (a
    faster block size, and a kernel that does not compile).
    """
    import io

    from rich.console import Console

    from agent_client.runner import new_config, run_session
    from tests.agent_client.candidate_sources import compile_error, good, wrong
    from tests.agent_client.fake_anthropic import FakeModelServer, Reply, text_with_code

    script = [
        Reply(status=429),
        text_with_code(good(128)),
        Reply(text="The best plan is a persistent kernel; I will write it next time."),
        Reply(tool_uses=[{"name": "evaluate_candidate", "input": {"code": wrong()}}]),
        text_with_code(wrong(), "The harness disagreed, but here it is."),
        text_with_code(good(64), "Smaller blocks: more programs."),
        text_with_code(compile_error(), "A fancier activation."),
    ]
    server = FakeModelServer(script).start()
    home = tmp_path_factory.mktemp("sessions_home")
    settings = client_settings(home, server.url)
    config = new_config(SPEC, settings, session_id="relu-one", eval_overrides=FAST_EVAL, target="h200",
                        backend="triton", budget=5, device="cpu", provider="anthropic", policy="greedy",
                        drafts=3, proposals_per_step=1, write_back_min_speedup=0.0)
    out = io.StringIO()
    try:
        result = run_session(config, settings, console=Console(file=out, width=120), live=False, kb=kb)
    finally:
        server.stop()
    return {"result": result, "settings": settings, "folder": settings.sessions_dir / "relu-one",
            "server": server, "console": out.getvalue(), "config": config}
