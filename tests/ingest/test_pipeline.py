"""The ingest pipeline against a real embedded chromadb and real embeddings: idempotent
re-ingest, replacement of changed files, prune, and a failure part-way leaving the store whole."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ingest.pipeline import IngestError, IngestOptions, ingest_paths
from kb_server.schemas import SearchFilters

DOC = """---
title: "{title}"
accelerator: [{acc}]
vendor: {vendor}
kind: arch
---
# {title}

## Section one

{body}

## Section two

Second section about {title} register pressure and occupancy.
"""


def write_corpus(root: Path, n: int = 4) -> dict[str, Path]:
    root.mkdir(parents=True, exist_ok=True)
    paths = {}
    for i in range(n):
        p = root / f"doc{i}.md"
        p.write_text(DOC.format(title=f"Chip {i} notes", acc="h100", vendor="nvidia",
                                body=f"Marker token zorb{i} appears only in document {i}."))
        paths[f"doc{i}"] = p
    return paths


def texts(store, query: str, k: int = 8, **filters) -> list[str]:
    return [h.chunk.text for h in store.search(query, k=k, filters=SearchFilters(**filters) if filters else None)]


def test_reingest_of_unchanged_files_skips_everything(tmp_path, store, embedder):
    write_corpus(tmp_path / "docs")
    first = ingest_paths(store, [tmp_path / "docs"])
    assert len(first.written) == 4 and first.chunks_written == 8
    encoded = embedder.texts_encoded
    second = ingest_paths(store, [tmp_path / "docs"])
    assert second.unchanged == 4 and second.written == [] and second.chunks_written == 0
    assert embedder.texts_encoded == encoded  # nothing was re-embedded
    assert store.stats()["chunks"] == 8


def test_changed_file_is_replaced_and_only_new_chunks_embedded(tmp_path, store, embedder):
    paths = write_corpus(tmp_path / "docs")
    ingest_paths(store, [tmp_path / "docs"])
    paths["doc1"].write_text(paths["doc1"].read_text().replace("zorb1", "quax1"))
    encoded = embedder.texts_encoded
    report = ingest_paths(store, [tmp_path / "docs"])
    assert report.unchanged == 3 and len(report.written) == 1
    assert embedder.texts_encoded - encoded == 1  # section two did not change: its chunk is kept
    assert any("quax1" in t for t in texts(store, "quax1"))
    assert not any("zorb1" in t for t in texts(store, "zorb1"))  # the old chunk is gone
    assert store.stats()["chunks"] == 8


def test_prune_deletes_documents_whose_files_are_gone(tmp_path, store):
    paths = write_corpus(tmp_path / "docs")
    ingest_paths(store, [tmp_path / "docs"])
    paths["doc2"].unlink()
    kept = ingest_paths(store, [tmp_path / "docs"])  # without --prune: kept
    assert kept.deleted == [] and any("zorb2" in t for t in texts(store, "zorb2"))
    pruned = ingest_paths(store, [tmp_path / "docs"], IngestOptions(prune=True))
    assert pruned.deleted == [str(paths["doc2"])]
    assert not any("zorb2" in t for t in texts(store, "zorb2"))
    assert len(store.document_hashes()) == 3


@pytest.mark.parametrize(("old", "new", "expected"), [
    ("vendor: nvidia", "vendor: [nvidia, amd]", r"doc1\.md:4: field 'vendor'"),  # wrong type
    ("kind: arch", "kind: arch: oops", r"doc1\.md:5: not valid YAML"),  # malformed YAML
])
def test_a_bad_file_is_reported_and_the_others_still_ingest(tmp_path, store, old, new, expected):
    paths = write_corpus(tmp_path / "docs", n=3)
    paths["doc1"].write_text(paths["doc1"].read_text().replace(old, new))
    report = ingest_paths(store, [tmp_path / "docs"])
    assert len(report.errors) == 1 and re.search(expected, report.errors[0])
    assert sorted(Path(p).name for p in report.written) == ["doc0.md", "doc2.md"]
    assert any("zorb2" in t for t in texts(store, "zorb2"))
    assert not any("zorb1" in t for t in texts(store, "zorb1"))  # the bad file wrote nothing
    paths["doc1"].write_text(paths["doc1"].read_text().replace(new, old))  # fixed: it ingests next time
    again = ingest_paths(store, [tmp_path / "docs"])
    assert again.errors == [] and [Path(p).name for p in again.written] == ["doc1.md"]


def test_a_missing_path_is_an_error_before_anything_is_written(tmp_path, store):
    with pytest.raises(IngestError, match="no such file"):
        ingest_paths(store, [tmp_path / "nowhere"])


def test_changed_chunking_rules_reingest_unchanged_files(tmp_path, kb_settings, embedder):
    from kb_server.store import Store

    write_corpus(tmp_path / "docs", n=2)
    ingest_paths(Store(kb_settings, embedder=embedder), [tmp_path / "docs"])
    smaller = Store(kb_settings.model_copy(update={"chunk_max_tokens": 64}), embedder=embedder)
    report = ingest_paths(smaller, [tmp_path / "docs"])  # same bytes, other chunk sizes: written again
    assert report.unchanged == 0 and len(report.written) == 2
    assert ingest_paths(smaller, [tmp_path / "docs"]).unchanged == 2


def test_binary_and_unsupported_files_are_skipped_with_a_list(tmp_path, store):
    write_corpus(tmp_path / "docs", n=1)
    (tmp_path / "docs" / "blob.md").write_bytes(b"\x00\x01\x02binary")
    (tmp_path / "docs" / "image.png").write_bytes(b"\x89PNG")
    report = ingest_paths(store, [tmp_path / "docs"])
    skipped = dict(report.skipped)
    assert set(skipped) == {str(tmp_path / "docs" / "blob.md"), str(tmp_path / "docs" / "image.png")}
    assert "binary" in skipped[str(tmp_path / "docs" / "blob.md")]
    assert len(report.written) == 1


class _FailingChunks:
    """Wraps the real chunk collection; its add() fails on the n-th call (a crash mid-write)."""

    def __init__(self, inner, fail_on_call: int):
        self._inner, self._fail_on, self.calls = inner, fail_on_call, 0

    def add(self, **kwargs):
        self.calls += 1
        if self.calls == self._fail_on:
            raise RuntimeError("injected failure mid-ingest")
        return self._inner.add(**kwargs)

    def __getattr__(self, name):
        return getattr(self._inner, name)


def test_failed_ingest_leaves_the_previous_state_whole_and_searchable(tmp_path, kb_settings, embedder):
    from kb_server.store import Store

    store = Store(kb_settings.model_copy(update={"write_batch_size": 2}), embedder=embedder)
    paths = write_corpus(tmp_path / "docs", n=6)
    ingest_paths(store, [tmp_path / "docs"])
    before_hashes = store.document_hashes()
    before_chunks = store.stats()["chunks"]
    for i in range(6):  # every document changes: 6 new chunks, written 2 per add() call
        paths[f"doc{i}"].write_text(paths[f"doc{i}"].read_text().replace(f"zorb{i}", f"blip{i}"))
    store._chunks = _FailingChunks(store._chunks, fail_on_call=2)
    with pytest.raises(RuntimeError, match="injected failure"):
        ingest_paths(store, [tmp_path / "docs"])
    store._chunks = store._chunks._inner
    assert store.document_hashes() == before_hashes
    assert store.stats()["chunks"] == before_chunks  # the first batch's adds were rolled back
    for i in range(6):
        assert any(f"zorb{i}" in t for t in texts(store, f"zorb{i}")), f"doc{i} lost"
    assert not any("blip" in t for t in texts(store, "blip0 blip1 blip2"))
    # a fresh store (another process) rebuilding its BM25 index from the collection sees the same
    store._lexical_path.unlink(missing_ok=True)
    other = Store(kb_settings, embedder=embedder)
    assert any("zorb3" in h.chunk.text for h in other.search("zorb3", k=3, mode="lexical"))
    # and the next ingest completes the change
    report = ingest_paths(store, [tmp_path / "docs"])
    assert len(report.written) == 6
    assert any("blip4" in t for t in texts(store, "blip4"))


def test_same_relative_path_under_two_folders_is_two_documents(tmp_path, store):
    """Two teams' docs folders both holding doc0.md: the second ingest must not replace the first."""
    a, b = tmp_path / "vendor_a", tmp_path / "vendor_b"
    write_corpus(a, n=1)
    (b).mkdir()
    (b / "doc0.md").write_text(DOC.format(title="Other chip", acc="h100", vendor="nvidia",
                                          body="Marker token plimb appears only in vendor b."))
    ingest_paths(store, [a])
    ingest_paths(store, [b])
    assert len(store.document_hashes()) == 2
    assert any("zorb0" in t for t in texts(store, "zorb0")) and any("plimb" in t for t in texts(store, "plimb"))


def test_one_file_through_two_folders_is_one_document(tmp_path, store):
    write_corpus(tmp_path / "docs" / "nvidia", n=2)
    ingest_paths(store, [tmp_path / "docs"])
    again = ingest_paths(store, [tmp_path / "docs" / "nvidia"])
    assert again.unchanged == 2 and again.written == []
    assert len(store.document_hashes()) == 2


def test_a_file_stored_under_an_older_id_keeps_one_record(tmp_path, store):
    """Stores written with the old rule (ids relative to the folder named on the command line)."""
    from ingest.pipeline import _hash_id

    paths = write_corpus(tmp_path / "docs", n=1)
    ingest_paths(store, [tmp_path / "docs"])
    [(new_id, source)] = store.document_sources().items()
    old = store._documents.get(ids=[new_id], include=["metadatas", "embeddings", "documents"])
    old_id = _hash_id("doc", "doc0.md")
    store._documents.upsert(ids=[old_id], embeddings=old["embeddings"], documents=old["documents"],
                            metadatas=[{**old["metadatas"][0], "file_hash": "stale"}])
    assert set(store.document_sources()) == {new_id, old_id} and source == str(paths["doc0"])
    ingest_paths(store, [tmp_path / "docs"])
    assert set(store.document_sources()) == {new_id}


# ---------------------------------------------------------------- a newcomer's front matter
NEWCOMER = """---
title: Gaudi 3 memory
accelerators: gaudi3
vendor: Intel
kind: architecture
---
# Gaudi 3 memory

The matrix engines read their operands from a 96 MB on-die SRAM; the wombat prefetcher fills it.
"""


def test_a_plural_key_and_a_kind_synonym_tag_the_document_as_meant(tmp_path, store):
    doc = tmp_path / "docs" / "gaudi3-memory.md"
    doc.parent.mkdir()
    doc.write_text(NEWCOMER)
    report = ingest_paths(store, [doc.parent])
    assert len(report.written) == 1 and report.errors == []
    # the chip has no facts yet: named with the file, the line and the key as written, ingested all the same
    assert report.warnings[0].startswith(f"{doc}:3: field 'accelerators': accelerator 'gaudi3' has no facts")
    assert "known: a100, b200, h100" in report.warnings[0] and "kkb facts --template gaudi3" in report.warnings[0]
    assert not texts(store, "wombat prefetcher", accelerator="h100")  # no longer "any accelerator"
    hit = store.search("wombat prefetcher", k=1, filters=SearchFilters(accelerator="gaudi3", kind="arch"))[0]
    assert (hit.chunk.accelerator, hit.chunk.kind, hit.chunk.vendor) == (["gaudi3"], "arch", "intel")
    assert store.search("wombat", k=1, filters=SearchFilters(kind="architecture"))  # the filter reads it too


def test_an_alias_is_read_as_the_accelerator_id_and_a_vendor_at_odds_with_the_facts_is_named(tmp_path, store):
    doc = tmp_path / "sxm.md"
    doc.write_text("---\naccelerator: [H100-SXM]\nvendor: amd\n---\n# H100 notes\n\nThe zeppelin path.\n")
    report = ingest_paths(store, [doc])
    assert [h.chunk.accelerator for h in store.search("zeppelin", k=1)] == [["h100"]]
    assert report.warnings == [f"{doc}:3: field 'vendor': vendor 'amd' differs from the facts of h100 (nvidia)"]


def test_strict_refuses_a_file_with_warnings_and_keeps_what_was_stored(tmp_path, store):
    doc = tmp_path / "g3.md"
    doc.write_text(NEWCOMER)
    first = ingest_paths(store, [doc])
    assert first.written and first.warnings
    doc.write_text(NEWCOMER.replace("wombat", "numbat").replace("kind: architecture", "kind: architecture\nowner: me"))
    refused = ingest_paths(store, [doc], IngestOptions(strict=True))
    assert refused.written == [] and len(refused.errors) == 3  # the field, the chip without facts, the vendor
    assert refused.errors[0].startswith(f"{doc}:6: field 'owner': not a field of the front matter")
    assert all(e.endswith("(refused: --strict)") for e in refused.errors)
    assert texts(store, "wombat prefetcher", accelerator="gaudi3")  # the earlier version stays whole
    assert not any("numbat" in t for t in texts(store, "numbat", accelerator="gaudi3"))


def test_a_duplicated_key_is_an_error_and_the_rest_ingests(tmp_path, store):
    write_corpus(tmp_path / "docs", n=1)
    (tmp_path / "docs" / "twice.md").write_text("---\ntitle: A\nkind: arch\nkind: guide\n---\n# A\n\ntext\n")
    report = ingest_paths(store, [tmp_path / "docs"])
    assert report.errors == [(f"{tmp_path / 'docs' / 'twice.md'}:4: field 'kind': written twice (lines 3 and 4); "
                             "keep one")]
    assert len(report.written) == 1


def test_the_same_content_is_stored_once(tmp_path, store):
    write_corpus(tmp_path / "a", n=1)
    write_corpus(tmp_path / "b", n=1)  # the same bytes under another folder
    report = ingest_paths(store, [tmp_path / "a", tmp_path / "b"])
    assert len(report.written) == 1 and report.unchanged == 1
    assert report.duplicates == [(str(tmp_path / "b" / "doc0.md"), store.documents()[0].document_id)]
    assert store.stats()["chunks"] == 2
