"""The GPU sweep tool's inputs, checked on CPU: grid files name real specs and real TUNABLES keys."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from benchmarks.sweep_library import load_grids

REPO = Path(__file__).resolve().parents[2]
GRIDS = sorted((REPO / "benchmarks" / "grids").glob("*.json"))


def _tunables(family: str) -> dict:
    source = (REPO / "corpus" / "kernels" / family / "kernel.py").read_text()
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "TUNABLES" for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"{family}/kernel.py has no TUNABLES literal")


@pytest.mark.parametrize("grid", GRIDS, ids=[g.stem for g in GRIDS])
def test_grid_names_existing_specs_and_tunables(grid: Path):
    for entry in load_grids([str(grid)]):
        family, spec = entry["family"], entry["spec"]
        assert (REPO / "corpus" / "kernels" / family / "specs" / f"{spec}.py").is_file(), (grid.name, spec)
        keys = set(_tunables(family))
        for config in entry["configs"]:
            unknown = set(config) - keys
            assert not unknown, f"{grid.name}: {family}/{spec} config {config} has keys not in TUNABLES: {unknown}"


def test_a_grid_entry_without_configs_is_named(tmp_path: Path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"family": "softmax", "spec": "softmax_bf16"}))
    with pytest.raises(SystemExit, match=r"bad\.json.*configs"):
        load_grids([str(bad)])
