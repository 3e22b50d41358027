"""What a run left behind: GPU memory still used, GPU processes, and harness processes still alive.

Usage: before = snapshot()                 # at the start of a run
       ...                                  # the run; its executor closed
       left = held_after(before)            # {"held": False, ...} when nothing of the run holds anything

GPUs are read through `nvidia-smi` (memory used per GPU, the compute processes and their memory), so this
process opens no CUDA context of its own. Harness processes are found under this process in /proc: workers
(forked by a fork server, or `harness.worker`) and Ray's evaluation actors of a cluster this process started.
The fork servers themselves (harness/zygote.py: CUDA never initialised) stay until this process exits and
are listed apart. `held` is true when a worker or actor is still alive or a GPU process that was not there
before (other than this one) still holds memory; `used_delta_bytes` per GPU is reported beside it (a CUDA
context this process opened itself, to read the card's name, counts there). Checked from outside a run
whose process has ended (`root=1`), its fork servers count too, and so does a GPU using 256 MiB more than
at the start (nvidia-smi in a container may not name the processes).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time

MIB = 1 << 20
GROWN_BYTES = 256 * MIB  # more used on a GPU than at the start, once the run's processes ended: held
MARKERS = ("harness.zygote", "harness.worker", "EvaluatorActor")  # in the command line of our processes


def _smi(query: str, what: str) -> list[list[str]] | None:
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        done = subprocess.run(["nvidia-smi", f"--query-{what}={query}", "--format=csv,noheader,nounits"],
                              capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return [[c.strip() for c in line.split(",")] for line in done.stdout.splitlines() if line.strip()]


def gpus() -> list[dict] | None:
    """Each GPU: index, name, uuid, used and total bytes; None without nvidia-smi."""
    rows = _smi("index,name,uuid,memory.used,memory.total", "gpu")
    if rows is None:
        return None
    return [{"index": int(r[0]), "name": r[1], "uuid": r[2], "used_bytes": int(float(r[3])) * MIB,
             "total_bytes": int(float(r[4])) * MIB} for r in rows if len(r) >= 5]


def gpu_processes() -> list[dict] | None:
    """Compute processes on the GPUs: pid, GPU uuid, bytes used; None without nvidia-smi."""
    rows = _smi("pid,gpu_uuid,used_memory", "compute-apps")
    if rows is None:
        return None
    out = []
    for r in rows:
        if len(r) >= 3 and r[0].isdigit():
            used = int(float(r[2])) * MIB if r[2].replace(".", "", 1).isdigit() else None
            out.append({"pid": int(r[0]), "gpu_uuid": r[1], "used_bytes": used})
    return out


def _children() -> dict[int, list[int]]:
    """Parent pid -> its live children, from /proc (Linux)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    after = f.read().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if after[0] != "Z":  # a zombie has exited; only its parent has not reaped it
                children.setdefault(int(after[1]), []).append(int(entry))
    return children


def _has_marker(pid: int, marker: str | None) -> bool:
    if marker is None:
        return True
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return marker.encode() in f.read().split(b"\0")
    except OSError:
        return False


def harness_processes(root: int | None = None, marker: str | None = None) -> list[dict]:
    """Harness processes alive under `root` (default: this process): pid, command line, and whether it is
    a fork server (which holds no GPU memory and waits for the next worker to fork). marker: only those
    whose environment holds this NAME=VALUE (one run's processes on a machine that others share)."""
    if not os.path.isdir("/proc"):
        return []
    children, found = _children(), []
    todo = [(root or os.getpid(), "")]
    while todo:
        parent, parent_cmd = todo.pop()
        for pid in children.get(parent, []):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
            except OSError:
                continue
            todo.append((pid, cmd))
            if any(m in cmd for m in MARKERS) and _has_marker(pid, marker):
                server = "harness.zygote" in cmd and "harness.zygote" not in parent_cmd
                found.append({"pid": pid, "command": cmd[:200], "fork_server": server})
    return found


def snapshot() -> dict:
    """GPUs and their processes now (nvidia-smi; None where there is none)."""
    return {"gpus": gpus(), "gpu_processes": gpu_processes()}


def held_after(before: dict | None = None, wait_s: float = 10.0, root: int | None = None,
               marker: str | None = None) -> dict:
    """What is still held now, against `before` (a snapshot taken at the start). Workers that are
    exiting get `wait_s` to go (a Ray actor's workers follow it when their fork server sees it gone).
    root: where to look for harness processes (default this process; 1: every process of the machine, for a
    run in a process that has ended, whose fork servers must be gone too); marker: see harness_processes."""
    ended = root is not None
    deadline = time.monotonic() + wait_s
    while True:
        left = [p for p in harness_processes(root, marker) if ended or not p["fork_server"]]
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    now = snapshot()
    earlier = {g["uuid"]: g for g in (before or {}).get("gpus") or []}
    old_pids = {p["pid"] for p in (before or {}).get("gpu_processes") or []}
    devices = []
    for g in now["gpus"] or []:
        was = earlier.get(g["uuid"])
        devices.append({**g, "used_delta_bytes": g["used_bytes"] - was["used_bytes"] if was else None})
    new = [p for p in now["gpu_processes"] or [] if p["pid"] not in old_pids and p["pid"] != os.getpid()]
    servers = [p["pid"] for p in harness_processes(root, marker) if p["fork_server"]]
    # memory grown counts only for a run whose process has ended (a live one may hold its own CUDA context),
    # and covers containers where nvidia-smi cannot name the processes
    grown = [g["index"] for g in devices if ended and (g["used_delta_bytes"] or 0) > GROWN_BYTES]
    return {"method": "nvidia-smi" if now["gpus"] is not None else "no nvidia-smi (no GPU): processes only",
            "gpus": devices, "new_gpu_processes": new, "this_process": os.getpid(),
            "harness_processes_left": left, "fork_servers": servers, "gpus_grown": grown,
            "held": bool(left or new or grown)}
