"""benchmarks/gpu/probe_record.py on the CPU (the device name stubbed): the results file names the command that
made it, the device, the versions and the method, keeps a script's own fields, and ends with its rows."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from tests.benchmarks.hopper_probe import load_probe


def test_record_names_command_device_versions_method(tmp_path: Path, monkeypatch):
    record = load_probe("probe_record")
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "NVIDIA H200")
    out = tmp_path / "r.json"
    record.write_record(str(out), "/any/where/benchmarks/gpu/some_probe.py", ["--runs", "3"], "do_bench, 3 runs",
                        [{"ms": 1.0}], l2_bytes=7)
    data = json.loads(out.read_text())
    assert data["command"] == "python3 benchmarks/gpu/some_probe.py --runs 3"
    assert data["device"] == "NVIDIA H200" and data["method"] == "do_bench, 3 runs" and data["l2_bytes"] == 7
    assert set(data["versions"]) == {"torch", "triton"} and data["versions"]["torch"] == torch.__version__
    assert list(data)[-1] == "rows" and data["rows"] == [{"ms": 1.0}]
