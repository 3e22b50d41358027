"""What a run leaves held (harness/held_memory.py). No GPU here: `nvidia-smi` is a stand-in script printing what
the real one prints for `--query-gpu` and `--query-compute-apps` (CSV, no header, no units), read from a file
the test rewrites between the snapshot and the check."""

from __future__ import annotations

import os
import stat

from harness.held_memory import held_after, snapshot

STAND_IN = """#!/bin/sh
case "$1" in
  --query-gpu=*) cat "$SMI_STATE/gpus" ;;
  --query-compute-apps=*) cat "$SMI_STATE/apps" ;;
esac
"""


def _state(folder, gpus: str, apps: str) -> None:
    (folder / "gpus").write_text(gpus)
    (folder / "apps").write_text(apps)


def _stand_in(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(STAND_IN)
    smi.chmod(smi.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("SMI_STATE", str(tmp_path))


def test_nothing_held_when_the_gpus_are_as_at_the_start(tmp_path, monkeypatch):
    _stand_in(tmp_path, monkeypatch)
    _state(tmp_path, "0, NVIDIA H100 80GB HBM3, GPU-a, 3, 81559\n1, NVIDIA H100 80GB HBM3, GPU-b, 3, 81559\n", "")
    before = snapshot()
    assert [g["name"] for g in before["gpus"]] == ["NVIDIA H100 80GB HBM3"] * 2
    left = held_after(before, wait_s=0, root=1, marker="KKB_TEST_MARK=none")
    assert not left["held"] and [g["used_delta_bytes"] for g in left["gpus"]] == [0, 0]


def test_a_new_gpu_process_or_grown_memory_is_held(tmp_path, monkeypatch):
    _stand_in(tmp_path, monkeypatch)
    _state(tmp_path, "0, NVIDIA H100 80GB HBM3, GPU-a, 3, 81559\n1, NVIDIA H100 80GB HBM3, GPU-b, 3, 81559\n",
           "77, GPU-a, 500\n")  # a process of someone else's, there before the run
    before = snapshot()
    _state(tmp_path, "0, NVIDIA H100 80GB HBM3, GPU-a, 503, 81559\n1, NVIDIA H100 80GB HBM3, GPU-b, 1203, 81559\n",
           "77, GPU-a, 500\n4242, GPU-b, 1200\n")
    left = held_after(before, wait_s=0, root=1, marker="KKB_TEST_MARK=none")
    assert left["held"] and [p["pid"] for p in left["new_gpu_processes"]] == [4242]  # not 77: it was there
    assert left["gpus_grown"] == [0, 1] and left["gpus"][1]["used_delta_bytes"] == 1200 << 20
    # a run still alive (its own CUDA context may be counted): grown memory alone is reported, not held
    _state(tmp_path, "0, NVIDIA H100 80GB HBM3, GPU-a, 503, 81559\n1, NVIDIA H100 80GB HBM3, GPU-b, 3, 81559\n",
           "77, GPU-a, 500\n")
    alive = held_after(before, wait_s=0)
    assert not alive["held"] and alive["gpus_grown"] == [] and alive["gpus"][0]["used_delta_bytes"] == 500 << 20


def test_without_nvidia_smi_only_processes_count(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi on it
    before = snapshot()
    assert before == {"gpus": None, "gpu_processes": None}
    left = held_after(before, wait_s=0)
    assert left["method"].startswith("no nvidia-smi") and not left["held"]
