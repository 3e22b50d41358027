"""Shared helpers for benchmark scripts: quantiles and the results file.

Usage: from benchmarks.common import write_results, quantiles_ms
       path = write_results("kb", {"search": ...}, packages=["chromadb", "torch"])
       path = write_results("export_kernel", payload, card="cuda:0")   # a GPU run: named by its card
Writes benchmarks/results/<name>-<UTC timestamp>.json with the machine, package versions, date and
the command that produced it, next to the payload. A run on a device (`card`: a device string or an
agent_client.card.CardPeaks) is named <name>-<card>-<UTC timestamp>.json by the card the device is (h100,
h200, ...: agent_client/card.py, read from the device), and the record carries the card's identity.
"""

from __future__ import annotations

import datetime as dt
import importlib.metadata
import json
import os
import platform
import shlex
import statistics
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def machine() -> dict:
    """What ran the benchmark: host, CPU model and count, memory, Python, GPU when torch sees one."""
    info = {"platform": platform.platform(), "python": platform.python_version(), "cpu_count": os.cpu_count()}
    try:
        cpuinfo = Path("/proc/cpuinfo").read_text()
        info["cpu_model"] = next(ln.split(":", 1)[1].strip() for ln in cpuinfo.splitlines()
                                 if ln.startswith("model name"))
        meminfo = Path("/proc/meminfo").read_text().split()
        info["memory_gib"] = round(int(meminfo[meminfo.index("MemTotal:") + 1]) / 2**20, 1)
    except (OSError, StopIteration, ValueError):
        pass
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        if torch.cuda.is_available():
            info["gpu"] = torch.cuda.get_device_name(0)
    return info


def _commit() -> str | None:
    """The checkout's HEAD (with "+changes" when the tree differs from it), or KKB_COMMIT where there is no git."""
    import subprocess

    repo = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True,
                              check=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=repo,
                               capture_output=True, text=True, check=True, timeout=10).stdout.strip()
        return head + ("+changes" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return os.environ.get("KKB_COMMIT")


def versions(packages: Iterable[str]) -> dict[str, str]:
    out = {}
    for name in packages:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def quantiles_ms(samples_s: Sequence[float]) -> dict:
    """p50/p90/p99/mean in milliseconds of samples given in seconds."""
    ms = sorted(s * 1000 for s in samples_s)
    pick = lambda q: ms[min(len(ms) - 1, round(q * (len(ms) - 1)))]
    return {"n": len(ms), "p50_ms": round(pick(0.5), 3), "p90_ms": round(pick(0.9), 3),
            "p99_ms": round(pick(0.99), 3), "mean_ms": round(statistics.fmean(ms), 3)}


def card_of(card) -> object | None:
    """The CardPeaks of a device string ("cuda:0", "cpu"), a CardPeaks as it is, None for None."""
    if card is None or not isinstance(card, str):
        return card
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from agent_client.card import card_peaks

    return card_peaks(card)


def results_name(name: str, card=None, now: dt.datetime | None = None) -> str:
    """<name>[-<card short id>]-<UTC timestamp>.json"""
    now = now or dt.datetime.now(dt.UTC)
    card = card_of(card)
    tag = f"-{card.short_id}" if card is not None else ""
    return f"{name}{tag}-{now.strftime('%Y%m%dT%H%M%SZ')}.json"


def write_results(name: str, payload: dict, packages: Iterable[str] = (), path: Path | None = None,
                  card=None, folder: Path | None = None) -> Path:
    """Write one results file and return its path (`path`: rewrite that file, for runs saved as they go;
    `card`: the device the run measured, which names the file and is recorded; `folder`: where a new file
    goes, default benchmarks/results/)."""
    now = dt.datetime.now(dt.UTC)
    card = card_of(card)
    record = {
        "name": name,
        **({"card": card.to_dict()} if card is not None else {}),
        "date": now.isoformat(timespec="seconds"),
        "command": shlex.join([Path(sys.executable).name, *sys.argv]),
        "commit": _commit(),
        "machine": machine(),
        "versions": versions(packages),
        **payload,
    }
    folder = folder or RESULTS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    path = path or folder / results_name(name, card, now)
    path.write_text(json.dumps(record, indent=2) + "\n")
    return path
