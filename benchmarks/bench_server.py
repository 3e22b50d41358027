"""HTTP server load benchmark: searches/s and p50/p99 latency at 1, 8 and 32 concurrent clients,
against the in-process Store.search measured in the same run on the same store.

Usage: .venv/bin/python benchmarks/bench_server.py [--size 100000] [--levels 1,8,32] [--requests 160]
       [--inprocess 100] [--torch-threads 1] [--build] [--rebuild-probe]

The store is the KB-core benchmark's cached one (benchmarks/.cache/kb-<size>/, built by
benchmarks/bench_kb.py); when it is missing, --build builds it the same way (bench_kb.write_tree paragraphs,
real embeddings plus noise, bulk upsert). The server is `kkb serve` (one uvicorn process: the store's
indexes and the write lock live in it; concurrent requests run in its thread pool) started as a
subprocess on loopback; the clients are threads of this process, one keep-alive connection each: by
default a plain http.client connection, which costs the shared 2 cores ~0.3 ms per search where an
httpx.Client costs ~2 ms (measured here), so the load generator takes less of the server's CPU;
`--client httpx` is the client of the results before 2026-11-30T13:40 (the KBClient's library).
Every query is distinct, so neither the server's nor the in-process query-embedding cache is hit.
The in-process baseline and the one-client HTTP run alternate in 5 rounds (same background load).
The store's ceiling is measured in-process with 8 threads twice: calling Store.search directly (as
before), and through SearchBatcher, the server's own search path (batched searches) without HTTP.
--rebuild-probe also writes one document to a copy of the store and measures searches while the BM25
index is rebuilt in the background, and how long until BM25 finds the new document.
Goals: HTTP adds <= 30% to p50 at one client; >= 100 searches/s at 8 clients (2 CPU cores).
Writes benchmarks/results/server-<UTC time>.json and prints a table last.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from benchmarks.common import quantiles_ms, write_results

_WORDS = ["shared memory tile", "warpgroup", "asynchronous copy", "persistent block", "L2 cache", "register tiling",
          "softmax epilogue", "split-k reduction", "TMA descriptor", "wavefront", "LDS buffer", "matrix core",
          "bank conflicts", "occupancy", "cp.async.bulk", "wgmma", "double-buffered loop", "row maximum"]


def queries(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [f"{rng.choice(_WORDS)} {rng.choice(_WORDS)} case {seed}-{i}" for i in range(n)]


def ensure_store(size: int, build: bool) -> Path:
    """benchmarks/.cache/kb-<size>, reused when it holds `size` chunks, else (--build) built like bench_kb."""
    from benchmarks.bench_kb import CACHE, build_store, write_tree
    from ingest.pipeline import IngestOptions, IngestReport, discover, read_document
    from kb_server.config import KBSettings
    from kb_server.embeddings import get_embedder
    from kb_server.store import Store, index_text

    home = CACHE / f"kb-{size}"
    settings = KBSettings(home=home)
    if home.exists() and Store(settings).stats()["chunks"] == size:
        return home
    if not build:
        raise SystemExit(f"{home} is missing or does not hold {size} chunks (bench_kb.py may be building it); "
                         f"wait, or pass --build to build it here")
    print(f"building the {size}-chunk store under {home} (bench_kb's method)", file=sys.stderr)
    embedder = get_embedder(settings.model)
    with tempfile.TemporaryDirectory() as tmp:
        write_tree(Path(tmp) / "tree", 1000)
        files = discover([Path(tmp) / "tree"], IngestReport())
        chunks = [c for f in files for c in read_document(f, IngestOptions(), "any", settings.chunk_max_tokens,
                                                          settings.chunk_overlap_tokens)]
    vectors = embedder.encode([index_text(c.heading_path, c.text) for c in chunks])
    store = build_store(size, chunks, vectors, embedder, rebuild=True)
    store.refresh_lexical()
    return home


def open_in_process(home: Path, torch_threads: int):
    import torch

    from kb_server.api.batching import BatchingEmbedder
    from kb_server.config import KBSettings
    from kb_server.store import Store

    torch.set_num_threads(torch_threads)
    settings = KBSettings(home=home)
    store = Store(settings, embedder=BatchingEmbedder(settings.model))  # the server's embedder, same code path
    store.refresh_lexical()
    for q in queries(10, seed=900):  # warm-up: model, index, caches of chromadb
        store.search(q, k=8)
    return store


def in_process_threads(store, threads: int, total: int, seed: int, batched: bool = False) -> dict:
    """The store's own ceiling: `threads` threads calling Store.search directly (or through the server's
    SearchBatcher when `batched`), no HTTP."""
    from kb_server.api.batching import SearchBatcher

    todo = queries(total, seed)
    lock = threading.Lock()
    search = SearchBatcher(store).search if batched else store.search

    def run() -> None:
        while True:
            with lock:
                if not todo:
                    return
                q = todo.pop()
            search(q, k=8)

    workers = [threading.Thread(target=run) for _ in range(threads)]
    t0 = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return {"threads": threads, "searches": total, "searches_per_s": round(total / (time.perf_counter() - t0), 1),
            "path": "SearchBatcher (the server's)" if batched else "Store.search"}


def rebuild_probe(home: Path, torch_threads: int, searches_s: float = 5.0) -> dict:
    """On a copy of the store: write one document, then search (one client, hybrid and lexical in turn)
    while the BM25 index is rebuilt in the background; time each search and until BM25 finds the document."""
    import shutil

    from kb_server.schemas import Chunk
    from kb_server.store import chunk_id

    with tempfile.TemporaryDirectory(dir=home.parent) as tmp:
        copy = Path(tmp) / home.name
        shutil.copytree(home, copy)
        store = open_in_process(copy, torch_threads)
        text = "The zorblax unit is described only in this document, written during the benchmark."
        meta = {"source": "probe.md", "title": "probe", "accelerator": ["any"], "vendor": "any", "kind": "guide"}
        chunk = Chunk(id=chunk_id("probe", ["probe"], text, meta), document_id="probe", text=text,
                      heading_path=["probe"], **meta)
        t_write = time.perf_counter()
        store.upsert_document("probe", [chunk], "probe-hash")
        write_s = time.perf_counter() - t_write
        during: list[float] = []
        found_s = None
        for i in range(100_000):
            t = time.perf_counter()
            hits = store.search(f"zorblax unit {i}" if i % 2 else "zorblax", k=8, mode="hybrid" if i % 2 else "lexical")
            during.append(time.perf_counter() - t)
            if i % 2 == 0 and any(h.chunk.document_id == "probe" and h.lexical_score for h in hits):
                found_s = time.perf_counter() - t_write
                break
            if time.perf_counter() - t_write > 600:
                break
        text2 = text + " Rewritten."  # a new chunk (new id), so the write really changes the chunks
        chunk2 = chunk.model_copy(update={"text": text2, "id": chunk_id("probe", ["probe"], text2, meta)})
        t = time.perf_counter()
        store.upsert_document("probe", [chunk2], "probe-hash-2")
        store.refresh_lexical()
        refresh_s = time.perf_counter() - t
        return {"chunks": len(store.lexical_index()), "write_s": round(write_s, 3),
                "bm25_finds_new_document_after_s": round(found_s, 2) if found_s else None,
                "searches_during_rebuild": quantiles_ms(during[:-1]) if len(during) > 1 else None,
                "write_then_refresh_lexical_s": round(refresh_s, 2),
                "note": "searches alternate lexical and hybrid, one client, in-process; each answered from the "
                        "previous BM25 index while a background thread built the next (store.py docstring)"}


def in_process(store, todo: list[str]) -> list[float]:
    samples = []
    for q in todo:
        t = time.perf_counter()
        store.search(q, k=8)
        samples.append(time.perf_counter() - t)
    return samples


def start_server(home: Path, port: int, torch_threads: int) -> subprocess.Popen:
    env = {**os.environ, "KKB_HOME": str(home), "KKB_TORCH_THREADS": str(torch_threads)}
    proc = subprocess.Popen([sys.executable, "-m", "kb_server.api_cli", "serve", "--host", "127.0.0.1", "--port",
                             str(port), "--log-level", "warning"], cwd=REPO, env=env)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the server exited with {proc.returncode}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200:
                return proc
        except httpx.TransportError:
            time.sleep(0.5)
    proc.kill()
    raise SystemExit("the server did not answer /health within 600 s")


def _httpx_searcher(base_url: str):
    http = httpx.Client(base_url=base_url, timeout=120)

    def post(q: str) -> tuple[int, str]:
        r = http.post("/v1/search", json={"query": q, "k": 8})
        return r.status_code, r.headers.get("server-timing", "")

    return post, http.close


def _plain_searcher(base_url: str):
    url = httpx.URL(base_url)
    conn = http.client.HTTPConnection(url.host, url.port, timeout=120)

    def post(q: str) -> tuple[int, str]:
        conn.request("POST", "/v1/search", body=json.dumps({"query": q, "k": 8}).encode(),
                     headers={"Content-Type": "application/json"})
        r = conn.getresponse()
        r.read()  # the whole body, as any client must before the next request on this connection
        return r.status, r.getheader("server-timing", "")

    return post, conn.close


CLIENTS = {"plain": _plain_searcher, "httpx": _httpx_searcher}


def load(base_url: str, clients: int, total: int, seed: int, client: str = "plain",
         ) -> tuple[list[float], float, int, list[float]]:
    """`clients` threads share `total` distinct searches; each thread has its own keep-alive connection.
    Returns (latencies in s, wall time in s, errors, server-side store times in s from Server-Timing)."""
    todo = queries(total, seed)
    lock = threading.Lock()
    samples: list[float] = []
    store_s: list[float] = []
    errors: list[str] = []

    def run() -> None:
        post, close = CLIENTS[client](base_url)
        try:
            while True:
                with lock:
                    if not todo:
                        return
                    q = todo.pop()
                t = time.perf_counter()
                status, timing = post(q)
                dt = time.perf_counter() - t
                with lock:
                    if status == 200:
                        samples.append(dt)
                        store_s.append(float(timing.split("dur=")[1]) / 1000)
                    else:
                        errors.append(f"{status}")
        finally:
            close()

    threads = [threading.Thread(target=run) for _ in range(clients)]
    t0, cpu0 = time.perf_counter(), time.process_time()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    CLIENT_CPU_S.append((time.process_time() - cpu0, len(samples) + len(errors)))
    return samples, time.perf_counter() - t0, len(errors), store_s


CLIENT_CPU_S: list[tuple[float, int]] = []  # (CPU seconds of this process, requests) of each load() call


def level(clients: int, samples: list[float], wall_s: float, errors: int, store_s: list[float],
          client_cpu: list[tuple[float, int]] | None = None) -> dict:
    """One load level; `outside_store` is each request's latency minus the store's own time (HTTP, queueing)."""
    cpu = client_cpu if client_cpu is not None else CLIENT_CPU_S[-1:]
    return {"clients": clients, "requests": len(samples) + errors, "errors": errors, "wall_s": round(wall_s, 2),
            "client_cpu_ms_per_search": round(1000 * sum(c for c, _ in cpu) / max(1, sum(n for _, n in cpu)), 2),
            "searches_per_s": round(len(samples) / wall_s, 1), **quantiles_ms(samples),
            "server_store_time": quantiles_ms(store_s),
            "outside_store": quantiles_ms([a - b for a, b in zip(samples, store_s)])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=100_000, help="chunks in the store")
    parser.add_argument("--levels", default="1,8,32", help="concurrent clients, comma-separated")
    parser.add_argument("--requests", type=int, default=160, help="searches per level above 1 (all distinct)")
    parser.add_argument("--inprocess", type=int, default=100,
                        help="in-process searches, and as many 1-client HTTP searches, alternating in 5 rounds")
    parser.add_argument("--torch-threads", type=int, default=1, help="torch threads, server and in-process")
    parser.add_argument("--port", type=int, default=8731)
    parser.add_argument("--build", action="store_true", help="build the store when it is missing or incomplete")
    parser.add_argument("--client", choices=sorted(CLIENTS), default="plain",
                        help="the load generator's HTTP client (see above)")
    parser.add_argument("--rebuild-probe", action="store_true",
                        help="also measure searches during a background BM25 rebuild (on a copy of the store)")
    args = parser.parse_args()
    home = ensure_store(args.size, args.build)
    load_before = os.getloadavg()
    store = open_in_process(home, args.torch_threads)
    server = start_server(home, args.port, args.torch_threads)
    base_url = f"http://127.0.0.1:{args.port}"
    rounds = 5  # in-process and one HTTP client alternate, so both see the same background load
    try:
        load(base_url, 2, 20, seed=1, client=args.client)  # warm-up over HTTP
        base, one_lat, one_wall, one_err, one_store, one_cpu = [], [], 0.0, 0, [], []
        per = max(1, args.inprocess // rounds)
        for r in range(rounds):
            print(f"round {r + 1}/{rounds}: in-process, then 1 HTTP client", file=sys.stderr)
            base += in_process(store, queries(per, seed=901 + r))
            lat, wall, err, srv = load(base_url, 1, per, seed=801 + r, client=args.client)
            one_lat, one_wall, one_err, one_store = one_lat + lat, one_wall + wall, one_err + err, one_store + srv
            one_cpu.append(CLIENT_CPU_S[-1])
        baseline = quantiles_ms(base)
        levels = [level(1, one_lat, one_wall, one_err, one_store, one_cpu)]
        for i, clients in enumerate(int(c) for c in args.levels.split(",") if int(c) != 1):
            print(f"{clients} concurrent clients", file=sys.stderr)
            levels.append(level(clients, *load(base_url, clients, args.requests, seed=100 + i, client=args.client)))
        stats = httpx.get(f"{base_url}/v1/stats").json()
        print("in-process, 8 threads (the store's ceiling)", file=sys.stderr)
        ceiling = in_process_threads(store, 8, args.requests, seed=700)
        ceiling_batched = in_process_threads(store, 8, args.requests, seed=701, batched=True)
    finally:
        server.terminate()
        server.wait(30)
    probe = None
    if args.rebuild_probe:
        print("BM25 rebuild probe (copy of the store)", file=sys.stderr)
        probe = rebuild_probe(home, args.torch_threads)
    one = next((lv for lv in levels if lv["clients"] == 1), None)
    eight = next((lv for lv in levels if lv["clients"] == 8), None)
    payload = {
        "store": {"home": str(home.relative_to(REPO)) if home.is_relative_to(REPO) else str(home),
                  "chunks": stats["chunks"], "mode": stats["mode"]},
        "server": {"process": "kkb serve: one uvicorn process, sync routes in its thread pool; concurrent "
                              "searches batched by SearchBatcher (one traced, GIL-free embedding forward, one "
                              "chromadb query and one read of the winners per batch)",
                   "torch_threads": args.torch_threads},
        "client": {"plain": "http.client.HTTPConnection", "httpx": "httpx.Client"}[args.client]
                  + " per client thread, keep-alive, in this (second) process",
        "search": {"k": 8, "mode": "hybrid", "queries": "distinct per request (no query-embedding cache hits)"},
        "in_process": baseline,
        "in_process_8_threads": ceiling,
        "in_process_8_threads_batched": ceiling_batched,
        "http": levels,
        "http_p50_overhead_at_1_client": round(one["p50_ms"] / baseline["p50_ms"] - 1, 3) if one else None,
        # the same, with the server's own store time (Server-Timing) in place of the in-process run:
        # immune to the two measurements seeing different background load
        "http_p50_overhead_at_1_client_vs_server_store_time":
            round(one["p50_ms"] / one["server_store_time"]["p50_ms"] - 1, 3) if one else None,
        "goals": {"http_p50_overhead_at_1_client": "<= 0.30", "searches_per_s_at_8_clients": ">= 100"},
        **({"bm25_rebuild_probe": probe} if probe else {}),
        "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "note": "2 shared CPU cores, clients and server on the same machine; other work may run at the same "
                "time (see the load averages). Ratios within this run are the meaningful numbers.",
    }
    path = write_results("server", payload, packages=["fastapi", "uvicorn", "httpx", "chromadb", "torch"])
    print(f"\nresults: {path.relative_to(REPO)}")
    print(f"{'measure':40} {'p50 ms':>9} {'p99 ms':>9} {'searches/s':>11}")
    print(f"{'in-process Store.search':40} {baseline['p50_ms']:>9.1f} {baseline['p99_ms']:>9.1f}")
    for lv in levels:
        print(f"{'HTTP, ' + str(lv['clients']) + ' clients':40} {lv['p50_ms']:>9.1f} {lv['p99_ms']:>9.1f} "
              f"{lv['searches_per_s']:>11.1f}")
    if one:
        print(f"HTTP overhead at p50, 1 client: {payload['http_p50_overhead_at_1_client']:+.1%} vs in-process, "
              f"{payload['http_p50_overhead_at_1_client_vs_server_store_time']:+.1%} vs the server's store time "
              f"(goal <= +30%)")
    if eight:
        print(f"searches/s at 8 clients: {eight['searches_per_s']} (goal >= 100); in-process with 8 threads, "
              f"no HTTP: {ceiling['searches_per_s']} (Store.search), {ceiling_batched['searches_per_s']} "
              f"(SearchBatcher)")
    if probe:
        print(f"BM25 rebuild after a write ({probe['chunks']} chunks): found after "
              f"{probe['bm25_finds_new_document_after_s']} s; searches meanwhile p50 "
              f"{probe['searches_during_rebuild']['p50_ms']:.1f} ms, p99 {probe['searches_during_rebuild']['p99_ms']:.1f} ms")


if __name__ == "__main__":
    main()
