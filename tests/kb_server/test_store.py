"""The embedded store: filters in every mode, delete, facts, stats, and a second Store instance
(another process) noticing writes through the generation token."""

from __future__ import annotations

import pytest

from kb_server.schemas import Chunk, SearchFilters
from kb_server.store import DocumentWrite, Store, chunk_id


def make_chunk(doc: str, text: str, accelerator=("h100",), vendor="nvidia", kind="arch") -> Chunk:
    meta = {"source": f"{doc}.md", "title": doc, "accelerator": list(accelerator), "vendor": vendor, "kind": kind}
    return Chunk(id=chunk_id(doc, [doc], text, meta), document_id=doc, text=text, heading_path=[doc], **meta)


def fill(store: Store) -> Store:
    store.upsert_documents([
        DocumentWrite("h100", [make_chunk("h100", "H100 shared memory is 228 KB per SM; wgmma reads it.")], "1"),
        DocumentWrite("mi300x", [make_chunk("mi300x", "MI300X LDS is 64 KB per CU; shared memory by another name.",
                                            ("mi300x",), "amd", "arch")], "2"),
        DocumentWrite("tiling", [make_chunk("tiling", "Tiling into shared memory raises reuse on any GPU.",
                                            ("any",), "any", "guide")], "3"),
        DocumentWrite("ptx", [make_chunk("ptx", "cp.async.bulk copies tiles into shared memory.",
                                         ("h100", "h200"), "nvidia", "isa")], "4"),
    ])
    return store


@pytest.fixture(scope="module")
def filled(tmp_path_factory, embedder):
    """One filled store shared by the read-only tests of this module (embedding is the slow part)."""
    from kb_server.config import KBSettings

    return fill(Store(KBSettings(home=tmp_path_factory.mktemp("kkb-home")), embedder=embedder))


@pytest.fixture
def filled_rw(store):
    """A filled store of its own, for tests that write."""
    return fill(store)


def docs(hits) -> set[str]:
    return {h.chunk.document_id for h in hits}


@pytest.mark.parametrize("mode", ["hybrid", "dense", "lexical"])
@pytest.mark.parametrize("filters, expected", [
    (SearchFilters(accelerator="h100"), {"h100", "tiling", "ptx"}),  # "any" documents match every accelerator
    (SearchFilters(accelerator="mi300x"), {"mi300x", "tiling"}),
    (SearchFilters(vendor="amd"), {"mi300x"}),
    (SearchFilters(kind="isa"), {"ptx"}),
    (SearchFilters(accelerator="h200", kind="arch"), set()),  # filters combine with AND
    (None, {"h100", "mi300x", "tiling", "ptx"}),
])
def test_filters_apply_to_both_retrievers(filled, mode, filters, expected):
    assert docs(filled.search("shared memory", k=8, filters=filters, mode=mode)) == expected


def test_hits_carry_chunk_and_scores(filled):
    hit = filled.search("cp.async.bulk", k=1)[0]
    assert hit.chunk.document_id == "ptx" and hit.chunk.heading_path == ["ptx"]
    assert hit.chunk.accelerator == ["h100", "h200"] and hit.chunk.source == "ptx.md"
    assert hit.lexical_score > 0 and hit.dense_score is not None and hit.score > 0


def test_bad_search_arguments_are_named(filled):
    with pytest.raises(ValueError, match="mode 'fuzzy'"):
        filled.search("x", mode="fuzzy")
    with pytest.raises(ValueError, match="k=0"):
        filled.search("x", k=0)
    with pytest.raises(ValueError, match="empty"):
        filled.search("  ")


def test_delete_document(filled_rw):
    assert filled_rw.delete_document("ptx") is True
    assert "ptx" not in docs(filled_rw.search("cp.async.bulk", k=8))
    assert "ptx" not in filled_rw.document_hashes()
    assert filled_rw.delete_document("ptx") is False


def test_another_store_instance_notices_writes(filled_rw, kb_settings, embedder):
    other = Store(kb_settings, embedder=embedder)  # same chroma files, its own in-memory BM25
    assert docs(other.search("wgmma", k=8, mode="lexical")) == {"h100"}
    filled_rw.upsert_document("new", [make_chunk("new", "wgmma also appears in this new note.")], "5")
    assert docs(other.search("wgmma", k=8, mode="lexical")) == {"h100", "new"}  # generation changed: rebuilt
    filled_rw.delete_document("h100")
    assert docs(other.search("wgmma", k=8, mode="lexical")) == {"new"}


def test_lexical_index_is_persisted_and_reused(filled_rw, kb_settings, embedder):
    filled_rw.refresh_lexical()
    assert filled_rw._lexical_path.is_file()
    other = Store(kb_settings, embedder=embedder)
    index = other.lexical_index()
    assert index.generation == filled_rw.generation() and len(index) == 4


def test_empty_store_searches_to_nothing(store):
    assert store.search("anything", k=3) == []
    assert store.stats()["chunks"] == 0 and store.stats()["mode"] == "embedded"


def test_accelerator_facts_come_from_the_corpus(store, kb_settings, tmp_path):
    facts = store.accelerators()
    if (kb_settings.corpus_dir / "accelerators").is_dir() and any((kb_settings.corpus_dir / "accelerators").glob("*.yaml")):
        assert "h100" in facts and facts["h100"].vendor == "nvidia"
    empty = Store(kb_settings.model_copy(update={"corpus_dir": tmp_path / "nowhere"}), embedder=store.embedder)
    assert empty.accelerators() == {}  # no corpus yet: no facts, no error


class _QuerySpy:
    """Wraps the chunk collection and records whether each query used chromadb's `where`."""

    def __init__(self, inner):
        self._inner, self.used_where = inner, []

    def query(self, **kwargs):
        self.used_where.append(kwargs.get("where") is not None)
        return self._inner.query(**kwargs)

    def __getattr__(self, name):
        return getattr(self._inner, name)


@pytest.mark.parametrize("overfetch_max, uses_where", [
    (1000, False),  # filtered in memory from unfiltered neighbours
    (1, True),  # too small to find enough: chromadb's own `where` filter
])
def test_filtered_dense_paths_agree(filled, overfetch_max, uses_where, embedder):
    settings = filled.settings.model_copy(update={"dense_overfetch_max": overfetch_max})
    store = Store(settings, embedder=embedder)
    store._chunks = spy = _QuerySpy(store._chunks)
    hits = store.search("shared memory", k=8, filters=SearchFilters(accelerator="mi300x"), mode="dense")
    assert docs(hits) == {"mi300x", "tiling"}
    assert [h.dense_score for h in hits] == sorted((h.dense_score for h in hits), reverse=True)
    assert spy.used_where[-1] is uses_where
