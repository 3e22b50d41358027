"""Paths and candidate sources shared by the harness tests (a plain module: several test folders
have a conftest.py, and `from conftest import` would pick whichever was imported first)."""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
SPECS = HERE / "specs"
CANDIDATES = HERE / "candidates"
REPO = HERE.parents[1]


def _fixed_bytes() -> int:
    from harness.compare import CHUNK_ELEMENTS, WORKSPACE_BYTES_PER_ELEMENT
    from harness.config import EvalConfig
    from harness.guard import DIGEST_CHUNK, DIGEST_WORKSPACE_BYTES_PER_WORD
    from harness.memory import BANDWIDTH_PROBE_BYTES, CONTEXT_BYTES, SMALL_BYTES

    config = EvalConfig()
    return (config.l2_flush_bytes + config.clone_pool_bytes + BANDWIDTH_PROBE_BYTES + CONTEXT_BYTES + 2 * SMALL_BYTES
            + max(CHUNK_ELEMENTS * WORKSPACE_BYTES_PER_ELEMENT, DIGEST_CHUNK * DIGEST_WORKSPACE_BYTES_PER_WORD))


# What an evaluation on a GPU costs whatever its sizes: the flush buffer, the timing's pool of input clones, a
# chunk of the comparison or of a digest, the bandwidth probe of the baselines' worker and a CUDA context.
# The memory tests bound an estimate by 3 x (inputs + outputs + parameters) + the reference's workspace + this.
FIXED_BYTES = _fixed_bytes()


def candidate(name: str) -> str:
    return (CANDIDATES / f"{name}.py").read_text()


def descendants(pid: int) -> set[int]:
    """Every process below `pid` (children, their children...), from /proc (Linux)."""
    import os

    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def alive(pids: set[int]) -> set[int]:
    """The pids that still run (a zombie counts as gone: it has exited, only its parent has not reaped it)."""
    out = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            out.add(pid)
    return out


def wait_gone(pids: set[int], timeout_s: float) -> set[int]:
    """Wait until none of `pids` runs; the ones still running after timeout_s."""
    import time

    deadline = time.monotonic() + timeout_s
    while alive(pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return alive(pids)


def harness_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """Environment of a `python -m harness.cli` subprocess: the repo importable, the interpreter on, a cache
    folder of its own."""
    import os

    return {**os.environ, "PYTHONPATH": str(REPO), "TRITON_INTERPRET": "1", "PYTHONUNBUFFERED": "1",
            "KKB_HARNESS_CACHE": str(tmp_path / "cache"), **extra}
