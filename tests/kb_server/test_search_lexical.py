"""The in-memory BM25 index: its fast scoring equals bm25s's own, filters mask, persistence."""

from __future__ import annotations

import numpy as np

from kb_server.lexical import LexicalIndex, tokenize
from kb_server.schemas import SearchFilters

TEXTS = ["wgmma reads shared memory tiles", "LDS on MI300X holds 64 KB", "shared memory bank conflicts",
         "cp.async.bulk copies a tile", "tiles of shared memory and tiles of registers"]
METAS = [{"vendor": "nvidia", "kind": "isa", "accelerator_ids": "h100"},
         {"vendor": "amd", "kind": "arch", "accelerator_ids": "mi300x"},
         {"vendor": "any", "kind": "guide", "accelerator_ids": "any"},
         {"vendor": "nvidia", "kind": "isa", "accelerator_ids": "h100,h200"},
         {"vendor": "any", "kind": "guide", "accelerator_ids": "any"}]


def build() -> LexicalIndex:
    return LexicalIndex.build("g1", [f"c{i}" for i in range(len(TEXTS))], TEXTS, METAS)


def test_scores_match_bm25s():
    index = build()
    for query in ["shared memory tile", "cp.async.bulk", "64 KB LDS", "tiles"]:
        ours = dict(index.top(query, 5))
        theirs = index.bm25.get_scores([t for t in dict.fromkeys(tokenize(query)) if t in index.bm25.vocab_dict])
        for i, cid in enumerate(index.ids):
            assert np.isclose(ours.get(cid, 0.0), theirs[i], atol=1e-6), (query, cid)


def test_filters_mask_and_any_matches_every_accelerator():
    index = build()
    assert {cid for cid, _ in index.top("shared memory", 5, SearchFilters(accelerator="h200"))} == {"c2", "c4"}
    assert [cid for cid, _ in index.top("LDS", 5, SearchFilters(vendor="nvidia"))] == []
    assert index.top("unknownword", 5) == []


def test_save_and_load_round_trip(tmp_path):
    index = build()
    index.save(tmp_path / "bm25.pkl")
    loaded = LexicalIndex.load(tmp_path / "bm25.pkl")
    assert loaded.generation == "g1" and loaded.top("wgmma", 2) == index.top("wgmma", 2)
    (tmp_path / "broken.pkl").write_bytes(b"not a pickle")
    assert LexicalIndex.load(tmp_path / "broken.pkl") is None  # a broken cache is rebuilt, not fatal
    assert list(tmp_path.glob("*.tmp")) == []  # the atomic write left no temp file
