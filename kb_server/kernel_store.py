"""The kernel collection of the store: one record per kernel, searchable by what it does.

Mixed into kb_server.store.Store (which owns the chromadb collection `self._kernels` and the
embedder); see Store for usage. The whole KernelRecord travels as JSON in the record's metadata.
"""

from __future__ import annotations

import hashlib

from kb_server.schemas import KernelRecord


def kernel_id(source: str, backend: str) -> str:
    """The default id of a kernel: a hash of its backend and source."""
    return hashlib.sha256(f"{backend}\n{source}".encode()).hexdigest()[:32]


def kernel_text(record: KernelRecord) -> str:
    """What is embedded for a kernel: its name, family, signature, backend and description."""
    return (f"{record.name}: {record.op_family} kernel for {record.op_signature} ({record.backend}). "
            f"{record.description}")


def kernel_where(op_family: str | None = None, backend: str | None = None,
                 accelerator: str | None = None) -> dict | None:
    conds: list[dict] = []
    if op_family is not None:
        conds.append({"op_family": op_family})
    if backend is not None:
        conds.append({"backend": backend})
    if accelerator is not None:
        conds.append({"$or": [{f"acc_{accelerator}": True}, {"acc_any": True}]})
    if not conds:
        return None
    return conds[0] if len(conds) == 1 else {"$and": conds}


class KernelCollection:
    """add_kernel / get_kernel / list_kernels / search_kernels over `self._kernels`."""

    def add_kernel(self, record: KernelRecord) -> str:
        """Upsert a kernel by id (an empty id becomes the hash of its source); returns the id."""
        if not record.id:
            record = record.model_copy(update={"id": kernel_id(record.source, record.backend)})
        meta = {"record": record.model_dump_json(), "name": record.name, "op_family": record.op_family,
                "backend": record.backend}
        meta.update({f"acc_{acc}": True for acc in (record.accelerators or ["any"])})
        vector = self.embedder.encode([kernel_text(record)])[0]
        self._kernels.upsert(ids=[record.id], embeddings=[vector], documents=[kernel_text(record)],
                             metadatas=[meta])
        return record.id

    def get_kernel(self, kernel_id_: str) -> KernelRecord | None:
        got = self._kernels.get(ids=[kernel_id_], include=["metadatas"])
        return KernelRecord.model_validate_json(got["metadatas"][0]["record"]) if got["ids"] else None

    def list_kernels(self, op_family: str | None = None, backend: str | None = None,
                     accelerator: str | None = None) -> list[KernelRecord]:
        """Kernels matching every given filter, sorted by op family then name."""
        got = self._kernels.get(where=kernel_where(op_family, backend, accelerator), include=["metadatas"])
        records = [KernelRecord.model_validate_json(m["record"]) for m in got["metadatas"]]
        return sorted(records, key=lambda r: (r.op_family, r.name, r.id))

    def search_kernels(self, query: str, k: int = 4, op_family: str | None = None,
                       backend: str | None = None) -> list[KernelRecord]:
        """The `k` kernels whose description is nearest the query."""
        if self._kernels.count() == 0:
            return []
        res = self._kernels.query(query_embeddings=[self.embedder.encode_query(query)], n_results=k,
                                  where=kernel_where(op_family, backend), include=["metadatas"])
        return [KernelRecord.model_validate_json(m["record"]) for m in res["metadatas"][0]]
