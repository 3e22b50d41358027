"""The embedder loads and traces its query encoder quietly (no library warning on every command)."""

from __future__ import annotations

import logging


def test_tracing_the_query_encoder_logs_no_loss_type_warning(embedder, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the model loads here, offline, as every command loads it
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    from transformers.utils import logging as hf_logging

    from kb_server.embeddings import _trace

    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append
    hf_logging.warning_once.cache_clear()  # a warning already logged in this process would be skipped
    root = logging.getLogger("transformers")
    root.addHandler(handler)
    try:
        traced = _trace(embedder.model)
    finally:
        root.removeHandler(handler)
    assert traced is not None  # the quiet path is still the traced one
    noise = [r.getMessage() for r in records if r.levelno >= logging.WARNING]
    assert not noise, noise
