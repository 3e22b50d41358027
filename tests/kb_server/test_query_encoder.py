"""The one-shot query encoder gives the embedding model's own vectors, and refuses a folder of another shape."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from kb_server.config import KBSettings
from kb_server.query_encoder import QueryEncoder, UnsupportedModel

QUERIES = ["shared memory per SM on H100", "How many bytes per cycle does one LDS bank deliver on CDNA3?",
           "MFMA", "wgmma " * 300]  # the last one past the 256-token window: truncated alike


def test_vectors_equal_the_models_own(embedder, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the full model loads here, offline, as every command loads it
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    light = QueryEncoder.load(KBSettings().model).encode(QUERIES)
    full = embedder.model.encode(QUERIES, normalize_embeddings=True, convert_to_numpy=True)
    assert light.shape == full.shape and light.dtype == np.float32
    assert np.abs(light - full).max() < 1e-5


def test_a_first_query_batch_does_not_load_the_full_model():
    from kb_server.embeddings import Embedder

    fresh = Embedder(KBSettings().model)
    vectors = fresh.encode_queries(QUERIES[:2])
    assert fresh._model is None and len(vectors) == 2
    assert abs(float(np.linalg.norm(vectors[0])) - 1.0) < 1e-5


def test_another_pooling_is_refused(tmp_path):
    folder = tmp_path / "model"
    shutil.copytree(KBSettings().model, folder)
    config = folder / "1_Pooling" / "config.json"
    pooling = json.loads(config.read_text())
    config.write_text(json.dumps({**pooling, "pooling_mode_mean_tokens": False, "pooling_mode_cls_token": True}))
    with pytest.raises(UnsupportedModel, match="not mean pooling"):
        QueryEncoder.load(folder)
