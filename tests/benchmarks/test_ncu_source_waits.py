"""The ncu source-page reader, on CPU: samples on each mbarrier wait's retry branch land on that barrier, a
branch on another predicate does not, and a file that is not a source page is named."""

from __future__ import annotations

import csv
import gzip
import importlib.util
import io
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("ncu_source_waits", REPO / "benchmarks" / "gpu" / "ncu_source_waits.py")
ncu_source_waits = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ncu_source_waits)

HEADER = ["Address", "Source", "Warp Stall Sampling (All Samples)", "Instructions Executed"]
ROWS = [
    ["0x10", "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R5+UR11+0x340c0], R4", "1", "100"],
    ["0x20", "UIADD3 UR7, UR9, UR18, URZ", "3", "100"],
    ["0x30", "@!P0  BRA 0x900", "40", "100"],  # the ring-slot wait: 40 samples
    ["0x40", "WARPGROUP.DEPBAR.LE gsb0, 0x1", "10", "100"],
    ["0x50", "SYNCS.PHASECHK.TRANS64.TRYWAIT P1, [UR9+0x34108], R4", "0", "8"],
    ["0x60", "@!P0  BRA 0x990", "7", "8"],  # another predicate's branch: not this wait's
    ["0x70", "@!P1  BRA 0x9a0", "5", "8"],
    ["0x80", "SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [R5+UR11+0x340c0], R4", "0", "1,000"],  # its retry
    ["0x90", "@!P0  BRA 0x900", "14", "1,000"],
]


def _write(path: Path, rows: list[list[str]], gz: bool = False) -> Path:
    out = io.StringIO()
    writer = csv.writer(out, quoting=csv.QUOTE_ALL)
    writer.writerow(["Kernel Name", "_gemm_epilogue_hopper_kernel"])
    writer.writerow(HEADER)
    writer.writerows(rows)
    path.write_bytes(gzip.compress(out.getvalue().encode()) if gz else out.getvalue().encode())
    return path


@pytest.mark.parametrize("gz", [False, True])
def test_samples_are_attributed_to_the_barrier_waited_on(tmp_path: Path, gz: bool):
    summary = ncu_source_waits.summarise(_write(tmp_path / ("s.csv.gz" if gz else "s.csv"), ROWS, gz))
    assert summary["samples"] == 80
    assert summary["waits"]["R5+UR11+0x340c0"] == {"samples": 54, "share": 0.675, "executed": 1100}
    assert summary["waits"]["UR9+0x34108"] == {"samples": 5, "share": 0.0625, "executed": 8}
    assert list(summary["waits"]) == ["R5+UR11+0x340c0", "UR9+0x34108"]  # most samples first
    assert summary["wgmma_wait_samples"] == 10 and summary["wgmma_wait_share"] == 0.125


def test_a_file_that_is_not_a_source_page_is_named(tmp_path: Path):
    bad = tmp_path / "details.csv"
    bad.write_text('"Kernel Name","x"\n"ID","Metric"\n')
    with pytest.raises(ValueError, match="details.csv"):
        ncu_source_waits.summarise(bad)
