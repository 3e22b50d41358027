"""The store: one interface over chromadb (dense vectors, metadata), the BM25 index and the facts.

Usage: store = Store(KBSettings(home=path)); store.upsert_document(doc_id, chunks, file_hash);
       hits = store.search("cp.async.bulk", k=8, filters=SearchFilters(accelerator="h100"))

Embedded chromadb under `$KKB_HOME/chroma` by default; a chroma server when KKB_CHROMA_URL is set.
Three collections: `<prefix>_chunks` (cosine, one record per chunk), `<prefix>_kernels` (one record
per kernel, the whole KernelRecord as JSON in its metadata) and `<prefix>_documents` (the ingest
registry: document id -> file hash; chromadb needs a vector per record, so these carry a 1-d
placeholder). A generation token in the registry changes on every write; the BM25 index is rebuilt
from the chunk collection whenever its generation differs, so several processes stay consistent.

BM25 staleness window: a search that finds the generation changed keeps ranking with the index it has
while a new one is built in a background thread (outside every lock searches take), then swapped in
atomically; a store of at most `lexical_inline_rebuild_max_chunks` chunks rebuilds in that search
instead (well under a second). Until the swap, which takes about one rebuild (~20 s at 100k chunks on
2 cores), BM25 does not find new chunks and filtered dense searches may miss them (they filter by the
index's metadata); unfiltered dense search finds them at once, and deleted chunks are never returned
(hits are read back from chromadb). No write is lost: chromadb holds it before it is acknowledged.
`refresh_lexical()` brings the index up to date synchronously.
"""

from __future__ import annotations

import datetime as dt
import difflib
import hashlib
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlparse

import chromadb
import numpy as np
from chromadb.config import Settings as ChromaSettings

from kb_server.config import KBSettings
from kb_server.embeddings import Embedder, get_embedder
from kb_server.facts import closest_accelerators, find_accelerator
from kb_server.facts_store import FACTS_TOKEN_ID, FactsCollection
from kb_server.kernel_store import KernelCollection
from kb_server.lexical import LexicalIndex
from kb_server.schemas import Chunk, DocumentSummary, Hit, KernelRecord, SearchFilters
from kb_server.search import (
    MODES,
    Mode,
    SearchRequest,
    UnknownAcceleratorFilter,
    UnknownKindFilter,
    UnknownVendorFilter,
    fuse_rrf,
)

log = logging.getLogger("kb_server")

_GENERATION_ID = "__kkb_generation__"  # reserved record in the documents collection
_PLACEHOLDER = [1.0]  # the documents collection's vector: it is never searched by similarity
_RESERVED = {_GENERATION_ID, FACTS_TOKEN_ID}  # state records of the registry, not documents
_PAGE = 5000  # records per chromadb get/add call (chromadb rejects much larger batches)


class StoreError(RuntimeError):
    """The store cannot be reached or used; the message says which store and what to do."""


@dataclass(frozen=True)
class DocumentWrite:
    """One document's new chunks, written by Store.upsert_documents."""

    document_id: str
    chunks: list[Chunk]
    file_hash: str
    source: str = ""
    chunking: str = ""  # the rules and sizes that cut these chunks: a document cut otherwise is re-ingested
    name: str = ""  # the name shown for it (a path, or an upload's own file name); "" : the source
    size_bytes: int | None = None  # of the file


def index_text(heading_path: list[str], text: str) -> str:
    """What is embedded and BM25-indexed for a chunk: its heading path, then its text."""
    return (" > ".join(heading_path) + "\n" + text) if heading_path else text


def chunk_id(document_id: str, heading_path: list[str], text: str, meta: Mapping[str, object],
             ordinal: int = 0) -> str:
    """A stable id: a hash of the chunk's content and metadata (and its ordinal among duplicates)."""
    payload = json.dumps([document_id, heading_path, text, dict(meta), ordinal], sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:32]


def _document_record(d: DocumentWrite) -> dict:
    """The registry record of a document: what re-ingest compares, and what a listing shows."""
    first = d.chunks[0] if d.chunks else None
    record = {"file_hash": d.file_hash, "source": d.source, "type": "document", "n_chunks": len(d.chunks),
              "chunking": d.chunking, "name": d.name or d.source, "ingested_at": time.time()}
    if first is not None:
        record |= {"title": first.title, "accelerator": ",".join(first.accelerator), "vendor": first.vendor,
                   "kind": first.kind}
    if d.size_bytes is not None:
        record["size_bytes"] = d.size_bytes
    return record


def document_summary(document_id: str, meta: Mapping) -> DocumentSummary:
    """A registry record as a listing shows it; records written before names were kept show their source."""
    when = meta.get("ingested_at")
    accelerator = str(meta.get("accelerator") or meta.get("accelerator_id") or "")
    return DocumentSummary(
        document_id=document_id, name=str(meta.get("name") or meta.get("source", "")),
        type=str(meta.get("type", "document")), title=str(meta.get("title", "")),
        accelerator=[a for a in accelerator.split(",") if a], vendor=meta.get("vendor"), kind=meta.get("kind"),
        size_bytes=meta.get("size_bytes"), chunks=meta.get("n_chunks"), file_hash=str(meta.get("file_hash", "")),
        ingested_at=dt.datetime.fromtimestamp(float(when), dt.UTC).isoformat(timespec="seconds") if when else None)


def _chunk_meta(chunk: Chunk) -> dict:
    meta = {
        "document_id": chunk.document_id,
        "heading_path": json.dumps(chunk.heading_path),
        "source": chunk.source,
        "title": chunk.title,
        "accelerator_ids": ",".join(chunk.accelerator),
        "vendor": chunk.vendor,
        "kind": chunk.kind,
        "source_urls": json.dumps(chunk.source_urls),
        "metadata": json.dumps(chunk.metadata, sort_keys=True),
    }
    meta.update({f"acc_{acc}": True for acc in chunk.accelerator})  # filterable flags
    return meta


def _chunk_from(chunk_id_: str, text: str, meta: Mapping) -> Chunk:
    return Chunk(
        id=chunk_id_, document_id=meta["document_id"], text=text,
        heading_path=json.loads(meta["heading_path"]), source=meta["source"], title=meta["title"],
        accelerator=meta["accelerator_ids"].split(","), vendor=meta["vendor"], kind=meta["kind"],
        source_urls=json.loads(meta.get("source_urls", "[]")), metadata=json.loads(meta.get("metadata", "{}")),
    )


def chunk_where(filters: SearchFilters | None) -> dict | None:
    """The chromadb `where` clause of the filters (a chunk for "any" matches every accelerator)."""
    if filters is None:
        return None
    conds: list[dict] = []
    if filters.accelerator is not None:
        conds.append({"$or": [{f"acc_{filters.accelerator}": True}, {"acc_any": True}]})
    if filters.vendor is not None:
        conds.append({"vendor": filters.vendor})
    if filters.kind is not None:
        conds.append({"kind": filters.kind})
    if not conds:
        return None
    return conds[0] if len(conds) == 1 else {"$and": conds}


def connect(settings: KBSettings) -> chromadb.api.ClientAPI:
    """A chromadb client: HttpClient when settings.chroma_url is set, else PersistentClient."""
    chroma_settings = ChromaSettings(anonymized_telemetry=False)
    if settings.chroma_url:
        url = urlparse(settings.chroma_url)
        if url.scheme not in ("http", "https") or not url.hostname:
            raise StoreError(f"KKB_CHROMA_URL={settings.chroma_url!r} is not an http(s) address")
        try:
            client = chromadb.HttpClient(host=url.hostname, port=url.port or (443 if url.scheme == "https" else 8000),
                                         ssl=url.scheme == "https", settings=chroma_settings)
            client.heartbeat()
        except Exception as exc:  # chromadb raises several types for an unreachable server
            raise StoreError(f"cannot reach the chroma server at {settings.chroma_url}: {exc}. Start one with "
                             f"`chroma run --path DIR --port PORT`, or unset KKB_CHROMA_URL for the embedded store"
                             ) from exc
        return client
    settings.chroma_path.mkdir(parents=True, exist_ok=True)
    return chromadb.PersistentClient(path=str(settings.chroma_path), settings=chroma_settings)


class Store(KernelCollection, FactsCollection):
    """The knowledge base's one interface over chromadb, the BM25 index and the facts."""

    def __init__(self, settings: KBSettings, embedder: Embedder | None = None):
        self.settings = settings
        self._embedder = embedder
        self._lexical: LexicalIndex | None = None  # replaced whole, never changed in place
        self._build_lock = threading.Lock()  # one BM25 build at a time (searches with an index never wait)
        self._rebuild_lock = threading.Lock()  # guards _rebuild_thread
        self._rebuild_thread: threading.Thread | None = None
        self.client = connect(settings)
        prefix = settings.collection_prefix
        self._chunks = self.client.get_or_create_collection(
            f"{prefix}_chunks", metadata={"hnsw:space": "cosine"}, embedding_function=None)
        self._kernels = self.client.get_or_create_collection(
            f"{prefix}_kernels", metadata={"hnsw:space": "cosine"}, embedding_function=None)
        self._documents = self.client.get_or_create_collection(f"{prefix}_documents", embedding_function=None)
        where = settings.chroma_url or str(settings.chroma_path)
        key = hashlib.sha256(f"{where}|{prefix}".encode()).hexdigest()[:16]
        self._lexical_path = settings.lexical_dir / f"{prefix}-{key}.pkl"

    @property
    def mode(self) -> str:
        return "server" if self.settings.chroma_url else "embedded"

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = get_embedder(self.settings.model, self.settings.embed_batch_size)
        return self._embedder

    # ---------------------------------------------------------------- generation (change token)
    def generation(self) -> str:
        got = self._documents.get(ids=[_GENERATION_ID], include=["metadatas"])
        return str(got["metadatas"][0]["token"]) if got["ids"] else "empty"

    def _bump_generation(self) -> None:
        # the BM25 index in memory stays: searches rank with it until its successor is built
        self._documents.upsert(ids=[_GENERATION_ID], embeddings=[_PLACEHOLDER], documents=[""],
                               metadatas=[{"token": uuid.uuid4().hex, "type": "state"}])

    # ---------------------------------------------------------------- documents
    def document_hashes(self) -> dict[str, str]:
        """document_id -> file hash of every ingested document (and kernel file)."""
        return {i: m["file_hash"] for i, m in self._registry().items()}

    def document_chunking(self) -> dict[str, str]:
        """document_id -> the chunking signature its chunks were cut with ("" when not recorded)."""
        return {i: m.get("chunking", "") for i, m in self._registry().items()}

    def document_sources(self) -> dict[str, str]:
        """document_id -> source path, for pruning documents whose files are gone."""
        return {i: m.get("source", "") for i, m in self._registry().items()}

    def registry(self) -> dict[str, dict]:
        """document_id -> its registry record (file_hash, source, type, name, title, ...), every document."""
        return self._registry()

    def documents(self) -> list[DocumentSummary]:
        """Every document, kernel file and facts file in the store, by name."""
        out = [document_summary(i, m) for i, m in self._registry().items()]
        return sorted(out, key=lambda d: (d.name, d.document_id))

    def _registry(self) -> dict[str, dict]:
        out: dict[str, dict] = {}
        for offset in range(0, self._documents.count(), _PAGE):
            got = self._documents.get(include=["metadatas"], limit=_PAGE, offset=offset)
            out.update({i: m for i, m in zip(got["ids"], got["metadatas"]) if i not in _RESERVED})
        return out

    def missing_chunk_ids(self, ids: Iterable[str]) -> set[str]:
        """Those of `ids` not in the store: only they need embedding."""
        ids = list(dict.fromkeys(ids))
        present: set[str] = set()
        for start in range(0, len(ids), _PAGE):
            present.update(self._chunks.get(ids=ids[start : start + _PAGE], include=[])["ids"])
        return set(ids) - present

    def upsert_document(self, document_id: str, chunks: list[Chunk], file_hash: str) -> None:
        self.upsert_documents([DocumentWrite(document_id, chunks, file_hash, chunks[0].source if chunks else "")])

    def upsert_documents(self, docs: list[DocumentWrite], embeddings: Mapping[str, np.ndarray] | None = None,
                         progress: Callable[[int], None] | None = None) -> None:
        """Replace these documents' chunks; all or nothing as far as searches can tell.

        New chunks are added under their own ids first; only when every add succeeded are the
        documents' stale chunks deleted and their file hashes recorded. A failure part-way deletes
        what this call added, so the previous chunks stay whole and searchable.
        `embeddings` (chunk id -> vector) skips embedding, e.g. for the benchmark's bulk build.
        """
        if not docs:
            return
        new = {c.id: c for d in docs for c in d.chunks}
        to_add = sorted(self.missing_chunk_ids(new))
        vectors = dict(embeddings or {})
        need = [i for i in to_add if i not in vectors]
        if need:  # embed before writing anything
            vecs = self.embedder.encode([index_text(new[i].heading_path, new[i].text) for i in need],
                                        progress=progress)
            vectors.update(zip(need, vecs))
        old = self._chunk_ids_of([d.document_id for d in docs])
        added: list[str] = []
        try:
            for start in range(0, len(to_add), self.settings.write_batch_size):
                batch = to_add[start : start + self.settings.write_batch_size]
                self._chunks.add(ids=batch, embeddings=np.stack([vectors[i] for i in batch]),
                                 documents=[new[i].text for i in batch],
                                 metadatas=[_chunk_meta(new[i]) for i in batch])
                added.extend(batch)
        except BaseException:
            for start in range(0, len(added), _PAGE):  # roll back: the old chunks were never touched
                self._chunks.delete(ids=added[start : start + _PAGE])
            raise
        stale = sorted(old - set(new))
        for start in range(0, len(stale), _PAGE):
            self._chunks.delete(ids=stale[start : start + _PAGE])
        for start in range(0, len(docs), _PAGE):
            batch_docs = docs[start : start + _PAGE]
            self._documents.upsert(
                ids=[d.document_id for d in batch_docs], embeddings=[_PLACEHOLDER] * len(batch_docs),
                documents=[""] * len(batch_docs), metadatas=[_document_record(d) for d in batch_docs])
        if to_add or stale:  # the chunks changed: other processes must rebuild their BM25 index
            self._bump_generation()

    def chunk_ids_of(self, document_ids: list[str]) -> set[str]:
        """The ids of the chunks these documents hold now."""
        return self._chunk_ids_of(document_ids)

    def _chunk_ids_of(self, document_ids: list[str]) -> set[str]:
        ids: set[str] = set()
        for start in range(0, len(document_ids), 500):
            where = {"document_id": {"$in": document_ids[start : start + 500]}}
            ids.update(self._chunks.get(where=where, include=[])["ids"])
        return ids

    def delete_document(self, document_id: str) -> bool:
        """Delete a document's chunks (or its kernel) and its registry entry; False if unknown."""
        record = self._documents.get(ids=[document_id], include=["metadatas"])
        chunk_ids = sorted(self._chunk_ids_of([document_id]))
        if not record["ids"] and not chunk_ids:
            return False
        for start in range(0, len(chunk_ids), _PAGE):
            self._chunks.delete(ids=chunk_ids[start : start + _PAGE])
        was_facts = False
        if record["ids"]:
            kernel_id = record["metadatas"][0].get("kernel_id")
            if kernel_id:
                self._kernels.delete(ids=[kernel_id])
            was_facts = record["metadatas"][0].get("type") == "facts"
            self._documents.delete(ids=[document_id])
        if was_facts:
            self.bump_facts_token()
        else:
            self._bump_generation()
        return True

    def register_kernel_file(self, document_id: str, record: KernelRecord, file_hash: str, source: str,
                             name: str = "") -> str:
        """Add a kernel that came from a file, replacing the kernel that file held before."""
        previous = self._documents.get(ids=[document_id], include=["metadatas"])
        kernel_id = self.add_kernel(record)
        old_id = previous["metadatas"][0].get("kernel_id") if previous["ids"] else None
        if old_id and old_id != kernel_id:
            self._kernels.delete(ids=[old_id])
        self._documents.upsert(ids=[document_id], embeddings=[_PLACEHOLDER], documents=[""],
                               metadatas=[{"file_hash": file_hash, "source": source, "type": "kernel",
                                           "kernel_id": kernel_id, "name": name or source, "title": record.name,
                                           "kind": "kernel", "accelerator": ",".join(record.accelerators),
                                           "ingested_at": time.time()}])
        return kernel_id

    # ---------------------------------------------------------------- lexical index
    def lexical_index(self) -> LexicalIndex:
        """The BM25 index to rank with: the current generation's when it is in memory or on disk.

        When the chunks changed since the index in memory was built, a small store rebuilds here; a
        larger one returns that (stale) index at once and rebuilds in a background thread (see the
        module docstring). With no index in memory yet, it is loaded or built here.
        """
        generation = self.generation()
        current = self._lexical
        if current is not None and current.generation == generation:
            return current
        if current is None or len(current) <= self.settings.lexical_inline_rebuild_max_chunks:
            return self._build_lexical(generation)
        self._rebuild_in_background()
        return current

    def refresh_lexical(self) -> None:
        """Bring the BM25 index up to date now, waiting for it (ingest calls this so searches start warm)."""
        self._build_lexical(self.generation())

    def wait_for_lexical(self, timeout: float | None = None) -> bool:
        """Wait for a background rebuild to finish; False if one is still running after `timeout` s."""
        with self._rebuild_lock:
            thread = self._rebuild_thread
        if thread is not None:
            thread.join(timeout)
            return not thread.is_alive()
        return True

    @property
    def lexical_rebuilding(self) -> bool:
        """Whether a background BM25 rebuild is running."""
        with self._rebuild_lock:
            return self._rebuild_thread is not None and self._rebuild_thread.is_alive()

    def _rebuild_in_background(self) -> None:
        with self._rebuild_lock:
            if self._rebuild_thread is not None and self._rebuild_thread.is_alive():
                return  # it re-reads the generation when done, so this write is covered too
            self._rebuild_thread = threading.Thread(target=self._rebuild_until_current, name="kkb-bm25-rebuild",
                                                    daemon=True)
            self._rebuild_thread.start()

    def _rebuild_until_current(self) -> None:
        try:
            while True:
                generation = self.generation()
                current = self._lexical
                if current is not None and current.generation == generation:
                    return
                self._build_lexical(generation)
        except Exception:  # searches keep the previous index; the next one tries again
            log.exception("rebuilding the BM25 index in the background failed")

    def _build_lexical(self, generation: str) -> LexicalIndex:
        """The index of `generation` (read before the chunks, so it never claims more than it holds):
        from memory, from disk, or built from the chunk collection; then persisted and swapped in."""
        with self._build_lock:
            current = self._lexical
            if current is not None and current.generation == generation:
                return current
            cached = LexicalIndex.load(self._lexical_path)
            if cached is not None and cached.generation == generation:
                self._lexical = cached
                return cached
            t0 = time.perf_counter()
            ids: list[str] = []
            texts: list[str] = []
            metas: list[dict] = []
            for offset in range(0, self._chunks.count(), _PAGE):
                got = self._chunks.get(include=["documents", "metadatas"], limit=_PAGE, offset=offset)
                for i, doc, meta in zip(got["ids"], got["documents"], got["metadatas"]):
                    ids.append(i)
                    texts.append(index_text(json.loads(meta["heading_path"]), doc))
                    metas.append(meta)
            index = LexicalIndex.build(generation, ids, texts, metas)
            index.save(self._lexical_path)
            self._lexical = index  # one assignment: searches see the old index or the new one, never a mix
            log.info("BM25 index rebuilt: %d chunks in %.1f s", len(ids), time.perf_counter() - t0)
            return index

    # ---------------------------------------------------------------- search
    def check_search(self, request: SearchRequest, resolved: dict | None = None) -> SearchRequest:
        """The request with its filters resolved (resolve_filters); ValueError naming a bad argument.
        `resolved` caches the filters already resolved in a batch."""
        if request.mode not in MODES:
            raise ValueError(f"search mode {request.mode!r} is not one of {', '.join(MODES)}")
        if not 1 <= request.k <= self.settings.max_k:
            raise ValueError(f"k={request.k} must be between 1 and {self.settings.max_k}")
        if not request.query.strip():
            raise ValueError("the search query is empty")
        resolved = {} if resolved is None else resolved
        if request.filters not in resolved:
            resolved[request.filters] = self.resolve_filters(request.filters)
        return SearchRequest(request.query, request.k, resolved[request.filters], request.mode)

    def resolve_filters(self, filters: SearchFilters | None) -> SearchFilters | None:
        """The filters with an accelerator alias or name read as its id (h100-sxm, "H100 SXM": h100); an
        UnknownFilter (a ValueError listing the known values) for an accelerator, vendor or kind that
        neither the facts nor any document knows."""
        if filters is None or (filters.accelerator, filters.vendor, filters.kind) == (None, None, None):
            return filters
        try:
            facts = self.accelerators()
        except ValueError:  # a broken facts file (reported where facts are asked for): nothing is refused
            return filters
        index = self.lexical_index()
        if filters.vendor not in (None, "any"):
            known = set(index.vendors) | {f.vendor for f in facts.values()}
            if filters.vendor not in known:
                raise UnknownVendorFilter(filters.vendor, sorted(known - {"any"}),
                                          difflib.get_close_matches(filters.vendor, known, n=2))
        if filters.kind is not None:
            known = set(index.kinds)  # the kinds documents hold: a usual kind that none holds finds nothing too
            if filters.kind not in known:
                raise UnknownKindFilter(filters.kind, sorted(known - {""}),
                                        difflib.get_close_matches(filters.kind, known, n=2))
        wanted = filters.accelerator
        if wanted is None or wanted == "any":
            return filters
        found = find_accelerator(facts, wanted)
        if found is not None:
            return filters if found == wanted else filters.model_copy(update={"accelerator": found})
        tagged = index.tagged_accelerators
        if wanted in tagged:
            return filters
        raise UnknownAcceleratorFilter(wanted, sorted((set(facts) | tagged) - {"any"}),
                                       closest_accelerators(facts, wanted))

    def search(self, query: str, k: int = 8, filters: SearchFilters | None = None,
               mode: Mode = "hybrid") -> list[Hit]:
        """The best `k` chunks for `query`: dense, lexical (BM25), or both fused by reciprocal rank."""
        return self.search_many([SearchRequest(query, k, filters, mode)])[0]

    def embed_queries(self, requests: Sequence[SearchRequest]) -> list[np.ndarray | None]:
        """The query vector of each request that needs one (None for lexical ones), in one model call."""
        dense = [r.query for r in requests if r.dense]
        vectors = iter(self.embedder.encode_queries(dense) if dense else [])
        return [next(vectors) if r.dense else None for r in requests]

    def search_many(self, requests: Sequence[SearchRequest],
                    vectors: Sequence[np.ndarray | None] | Callable[[], Sequence[np.ndarray | None]] | None = None,
                    ) -> list[list[Hit]]:
        """Several searches at once, each with the hits it gets alone (Store.search is a batch of one).

        The batch shares one generation check, one embedding forward, one chromadb query for the
        unfiltered dense searches and one read of the winners' text. `vectors` (as from embed_queries)
        skips the embedding; a callable is called for them after the BM25 rankings are made, so a
        caller can run the model in another thread meanwhile (SearchBatcher does).
        """
        resolved: dict = {}
        requests = [self.check_search(r, resolved) for r in requests]
        if not requests:
            return []
        needs_index = any(r.mode != "dense" or chunk_where(r.filters) is not None for r in requests)
        index = self.lexical_index() if needs_index else None
        depths = [max(self.settings.candidates_per_retriever, r.k) for r in requests]
        lexical = [dict(index.top(r.query, depth, r.filters)) if r.mode != "dense" else {}
                   for r, depth in zip(requests, depths)]
        if vectors is None:
            vectors = self.embed_queries(requests)
        elif callable(vectors):
            vectors = vectors()
        dense = self._dense_many(requests, vectors, depths, index)
        fused = [fuse_rrf([list(near), list(lex)], self.settings.rrf_k)[: r.k]
                 for r, near, lex in zip(requests, dense, lexical)]
        winners = list(dict.fromkeys(i for ranked in fused for i, _ in ranked))
        chunks: dict[str, Chunk] = {}
        if winners:  # one read for every winner's text and metadata
            got = self._chunks.get(ids=winners, include=["documents", "metadatas"])
            chunks = {i: _chunk_from(i, d, m) for i, d, m in zip(got["ids"], got["documents"], got["metadatas"])}
        return [[Hit(chunk=chunks[i], score=score, dense_score=near.get(i), lexical_score=lex.get(i))
                 for i, score in ranked if i in chunks]
                for ranked, near, lex in zip(fused, dense, lexical)]

    def _dense_many(self, requests: Sequence[SearchRequest], vectors: Sequence[np.ndarray | None],
                    depths: list[int], index: LexicalIndex | None) -> list[dict[str, float]]:
        """Each request's dense ranking ({} for lexical ones); the unfiltered ones of equal depth share one query."""
        out: list[dict[str, float]] = [{} for _ in requests]
        plain: dict[int, list[int]] = {}  # depth -> positions of unfiltered dense requests
        for pos, (request, vector, depth) in enumerate(zip(requests, vectors, depths)):
            if not request.dense:
                continue
            if index is None or index.mask(request.filters) is None:
                plain.setdefault(depth, []).append(pos)
            else:
                out[pos] = self._dense(vector, depth, request.filters, index)
        for depth, positions in plain.items():
            res = self._chunks.query(query_embeddings=[vectors[p] for p in positions], n_results=depth,
                                     include=["distances"])
            for p, ids, distances in zip(positions, res["ids"], res["distances"]):
                out[p] = {i: 1.0 - float(d) for i, d in zip(ids, distances)}
        return out

    def _dense(self, vector: np.ndarray, depth: int, filters: SearchFilters | None,
               index: LexicalIndex | None) -> dict[str, float]:
        """chunk id -> cosine similarity of the `depth` nearest chunks that pass the filters, best first.

        With filters, nearest neighbours are over-fetched without a filter and filtered in memory by
        the BM25 index's metadata (same generation); chromadb's `where` is the fallback when the
        filter is too selective for that to find `depth` of them.
        """
        def query(n: int, where: dict | None = None) -> list[tuple[str, float]]:
            res = self._chunks.query(query_embeddings=[vector], n_results=n, where=where, include=["distances"])
            return [(i, 1.0 - float(d)) for i, d in zip(res["ids"][0], res["distances"][0])]

        mask = index.mask(filters) if index is not None else None
        if mask is None:
            return dict(query(depth))
        passing = int(mask.sum())
        if passing == 0:
            return {}
        want = min(depth, passing)
        fetch = int(depth * len(mask) / passing * 1.5) + 1  # enough if passing chunks were spread evenly
        cap = self.settings.dense_overfetch_max
        limit = min(cap, len(mask))
        positions = index.positions
        # neighbours cluster by topic (and so by accelerator): if the even-spread guess finds too few,
        # widen once to the limit before paying for chromadb's filtered query
        attempts = dict.fromkeys((min(fetch, limit), limit)) if fetch <= 4 * cap else {}
        for n in attempts:
            kept = [(i, sim) for i, sim in query(n) if i in positions and mask[positions[i]]]
            if len(kept) >= want:
                return dict(kept[:depth])
        return dict(query(depth, chunk_where(filters)))

    # ---------------------------------------------------------------- stats
    def stats(self) -> dict:
        return {
            "documents": len(self._registry()), "chunks": self._chunks.count(), "kernels": self._kernels.count(),
            "model": self.settings.model, "mode": self.mode,
            "location": self.settings.chroma_url or str(self.settings.chroma_path),
            "generation": self.generation(),
        }
