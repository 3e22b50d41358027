"""Accelerator facts in the store: the corpus's facts files plus the facts files ingested since.

Mixed into kb_server.store.Store (which owns the registry collection `self._documents`); see Store.
An ingested facts file is one registry record (type "facts") holding the validated AcceleratorFacts as
JSON, keyed by its document id like any document, so re-ingest skips it by hash and `--prune` removes it.
A facts token (a reserved registry record) changes on every facts write; each process re-reads the
facts when the token it last saw differs, so a running server answers with facts that another process
ingested a moment ago, without a restart and without rebuilding its BM25 index.

Which facts win: those ingested (the newest for an id) over the corpus files of the same id.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from pathlib import Path

from kb_server.facts import AcceleratorFacts, load_all_facts

_log = logging.getLogger("kb_server")

FACTS_TOKEN_ID = "__kkb_facts_generation__"  # reserved record in the documents collection
_PLACEHOLDER = [1.0]


class FactsCollection:
    """put_facts / accelerators over `self._documents` and the corpus's facts folder."""

    _facts_cache: tuple[str, dict[str, AcceleratorFacts]] | None = None
    _corpus_facts: dict[str, AcceleratorFacts] | None = None
    _facts_lock = threading.Lock()

    def corpus_facts(self) -> dict[str, AcceleratorFacts]:
        """The facts files under `<corpus_dir>/accelerators/` ({} without that folder); read once."""
        if self._corpus_facts is None:
            directory = Path(self.settings.corpus_dir) / "accelerators"
            self._corpus_facts = load_all_facts(directory) if directory.is_dir() else {}
        return self._corpus_facts

    def facts_token(self) -> str:
        got = self._documents.get(ids=[FACTS_TOKEN_ID], include=["metadatas"])
        return str(got["metadatas"][0]["token"]) if got["ids"] else "none"

    def put_facts(self, document_id: str, facts: AcceleratorFacts, file_hash: str, source: str, name: str = "",
                  size_bytes: int | None = None) -> None:
        """Store a validated facts file (replacing what that file held before) and tell other processes."""
        meta = {"file_hash": file_hash, "source": source, "type": "facts", "accelerator_id": facts.id,
                "facts": facts.model_dump_json(), "ingested_at": time.time(), "name": name or source,
                "title": facts.name, "vendor": facts.vendor, "kind": "facts"}
        if size_bytes is not None:
            meta["size_bytes"] = size_bytes
        self._documents.upsert(ids=[document_id], embeddings=[_PLACEHOLDER], documents=[""], metadatas=[meta])
        self.bump_facts_token()

    def bump_facts_token(self) -> None:
        self._documents.upsert(ids=[FACTS_TOKEN_ID], embeddings=[_PLACEHOLDER], documents=[""],
                               metadatas=[{"token": uuid.uuid4().hex, "type": "state"}])

    def ingested_facts(self) -> dict[str, AcceleratorFacts]:
        """Facts that came through ingest, by accelerator id (the newest file for an id)."""
        got = self._documents.get(where={"type": "facts"}, include=["metadatas"])
        newest: dict[str, tuple[float, AcceleratorFacts]] = {}
        for meta in got["metadatas"]:
            try:
                facts = AcceleratorFacts.model_validate_json(meta["facts"])
            except ValueError as exc:  # stored before a rule it breaks (a unit now refused): said, not fatal
                _log.warning("facts from %s are left out: %s; fix the file and run `kkb ingest` on it again",
                             meta.get("source", "an earlier ingest"), str(exc).splitlines()[0])
                continue
            when = float(meta.get("ingested_at", 0.0))
            if facts.id not in newest or when >= newest[facts.id][0]:
                newest[facts.id] = (when, facts)
        return {k: v for k, (_, v) in newest.items()}

    def accelerators(self) -> dict[str, AcceleratorFacts]:
        """Every accelerator's facts by id: the corpus files, overridden by ingested facts of the same id."""
        token = self.facts_token()
        cached = self._facts_cache
        if cached is not None and cached[0] == token:
            return cached[1]
        with self._facts_lock:
            merged = {**self.corpus_facts(), **self.ingested_facts()}
            self._facts_cache = (token, dict(sorted(merged.items())))
            return self._facts_cache[1]
