"""The published-size footprint table (benchmarks/footprint_table.py, committed under benchmarks/results/): its
estimates are what the harness's code computes from the recorded sizes, each stays within 3 x (inputs +
outputs + parameters) plus the reference's own workspace and fixed costs, every problem whose reference fits
a card fits as an evaluation, and the largest-10 list is the table's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness import EvalConfig
from harness.memory import MetaSizes, footprint_of
from tests.harness.harness_helpers import FIXED_BYTES

REPO = Path(__file__).resolve().parents[2]
TABLE = max((REPO / "benchmarks" / "results").glob("footprint-*.json"))  # the latest run (the only one kept)
DATA = json.loads(TABLE.read_text())
ROWS = DATA["rows"]


def test_the_table_covers_kernelbench_levels_1_and_2():
    assert DATA["problems"] == len(ROWS) == 200 and not DATA["errors"]
    assert sum(r["problem"].startswith("1/") for r in ROWS) == sum(r["problem"].startswith("2/") for r in ROWS) == 100


@pytest.mark.parametrize("row", ROWS, ids=[r["problem"] for r in ROWS])
def test_each_estimate_is_the_codes_and_within_the_bound(row):
    sizes = MetaSizes(**row["sizes"])
    fp = footprint_of(sizes, EvalConfig(), "cuda:0")
    assert {k: v for k, v in fp.to_dict().items() if k.endswith("_bytes")} == row["footprint"]  # not stale
    io = sizes.input_bytes + sizes.output_bytes + sizes.parameter_bytes
    assert fp.needed_bytes <= 3 * io + (sizes.reference_bytes - sizes.output_bytes) + FIXED_BYTES
    for card_id, card in DATA["cards"].items():
        fits = row["cards"][card_id]
        assert fits["fits"] == (fp.needed_bytes <= card["capacity_bytes"])
        assert fits["fits"] or not fits["reference_fits"], f"{row['problem']} fits {card_id} only as a reference"


def test_the_largest_ten_are_named_from_the_table():
    listed = [line for line in (REPO / "benchmarks" / "kernelbench_largest10.txt").read_text().splitlines()
              if line and not line.startswith("#")]
    ranked = sorted(ROWS, key=lambda r: (-r["needed_bytes"], r["problem"]))
    assert listed == [r["problem"] for r in ranked[:10]] == DATA["largest"]
    assert TABLE.name in (REPO / "benchmarks" / "kernelbench_largest10.txt").read_text()
