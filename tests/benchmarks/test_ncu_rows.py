"""The DRAM-bytes probe's reading of Nsight Compute's CSV, on CPU: units scaled, kernels summed, the ratio to the
input and output bytes; a unit it does not know is named."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("ncu_rows", REPO / "benchmarks" / "gpu" / "ncu_rows.py")
ncu_rows = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ncu_rows)

HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
          '"Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')


def _row(kid: int, kernel: str, metric: str, unit: str, value: str) -> str:
    return (f'"{kid}","1","python3","host","{kernel}","1","7","(256, 1, 1)","(1024, 1, 1)","0","9.0",'
            f'"Command line profiler metrics","{metric}","{unit}","{value}"')


def test_two_kernels_are_summed_in_bytes_and_milliseconds():
    mark = ncu_rows.MARK + json.dumps({"target": "1/40_LayerNorm:library", "ok": True, "max_abs_err": 1e-6,
                                       "unique_bytes": 1_000_000})
    stdout = "\n".join([mark, "==PROF== Disconnected", HEADER,
                        _row(0, "stats", "dram__bytes_read.sum", "Mbyte", "1.00"),
                        _row(0, "stats", "dram__bytes_write.sum", "byte", "0"),
                        _row(0, "stats", "gpu__time_duration.sum", "us", "1.5"),
                        _row(1, "apply", "dram__bytes_read.sum", "KB", "500"),
                        _row(1, "apply", "dram__bytes_write.sum", "Mbyte", "1.00"),
                        _row(1, "apply", "gpu__time_duration.sum", "ns", "2,500")])
    row = ncu_rows._parse(stdout)
    assert [k["name"] for k in row["kernels"]] == ["stats", "apply"]
    assert row["dram_read_bytes"] == pytest.approx(1.5e6) and row["dram_write_bytes"] == pytest.approx(1e6)
    assert row["duration_ms"] == pytest.approx(0.004)
    assert row["dram_over_unique"] == pytest.approx(2.5)
    assert row["dram_gbps"] == pytest.approx(2.5e6 / 0.004 / 1e6)


def test_no_mark_means_no_row_and_an_unknown_unit_is_named():
    assert ncu_rows._parse(HEADER) is None
    mark = ncu_rows.MARK + json.dumps({"target": "t:lowering", "ok": True, "max_abs_err": 0, "unique_bytes": 8})
    with pytest.raises(ValueError, match="unknown unit 'parsec'"):
        ncu_rows._parse("\n".join([mark, HEADER, _row(0, "k", "dram__bytes_read.sum", "parsec", "1")]))
