"""Baselines once: a spec's profile (eager and torch.compile timings, bytes, FLOPs, what its inputs cost)
measured once per spec, device and software version, kept in memory and on disk, shared by every
candidate, pool and session on the machine.

Usage: cache = BaselineCache()                       # $KKB_HARNESS_CACHE/baselines/
       key = baseline_key(spec, worker_info, config)  # worker_info: a worker's ready message
       profile = cache.get(key) or cache.put(key, measured_profile)

The key holds the spec's source hash, the device's name (so two H200s share one entry, and a Ray
cluster's hosts share theirs when the cache folder is shared), the versions of Python, torch, triton and
CUDA, and the timing settings the numbers depend on (EvalConfig.baseline_fields()).

Reference outputs are not cached: each evaluation draws its inputs from a secret seed, so no output
computed ahead can serve it, and a file of fixed inputs and outputs would be readable by a candidate.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import threading
from pathlib import Path

from harness.config import EvalConfig, cache_dir
from harness.spec import Spec

FORMAT = 1  # bump when the profile's fields change meaning


def baseline_key(spec: Spec, worker_info: dict, config: EvalConfig, need_bandwidth: bool = False) -> str:
    parts = {
        "format": FORMAT, "spec_sha": spec.sha256, "spec": spec.name,
        "device_name": worker_info.get("device_name"), "python": worker_info.get("python"),
        "torch": worker_info.get("torch"), "triton": worker_info.get("triton"), "cuda": worker_info.get("cuda"),
        "settings": config.baseline_fields(), "bandwidth": need_bandwidth,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:24]


class BaselineCache:
    """Profiles by key: a dict in memory over one JSON file per key on disk (atomic writes)."""

    def __init__(self, folder: Path | None = None, use_disk: bool = True) -> None:
        self.folder = Path(folder) if folder else cache_dir() / "baselines"
        self.use_disk = use_disk
        self._memory: dict[str, dict] = {}
        self._lock = threading.Lock()
        self._key_locks: dict[str, threading.Lock] = {}
        self.hits = 0  # lookups answered without measuring (memory or disk)
        self.measured = 0  # profiles stored after a measurement

    def lock_for(self, key: str) -> threading.Lock:
        """One lock per key: the first thread measures, the others wait for its result."""
        with self._lock:
            return self._key_locks.setdefault(key, threading.Lock())

    def get(self, key: str) -> dict | None:
        with self._lock:
            found = self._memory.get(key)
        if found is None and self.use_disk:
            try:
                found = json.loads((self.folder / f"{key}.json").read_text())["profile"]
            except (OSError, ValueError, KeyError, TypeError):
                found = None
            if found is not None:
                with self._lock:
                    self._memory[key] = found
        if found is not None:
            self.hits += 1
        return found

    def put(self, key: str, profile: dict, about: dict | None = None) -> dict:
        with self._lock:
            self._memory[key] = profile
        self.measured += 1
        if self.use_disk:
            try:
                self.folder.mkdir(parents=True, exist_ok=True)
                handle, tmp = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
                with os.fdopen(handle, "w") as f:
                    json.dump({"about": about or {}, "profile": profile}, f)
                os.replace(tmp, self.folder / f"{key}.json")
            except OSError:
                pass  # a read-only cache folder: measured again next time, nothing else changes
        return profile
