"""The GPU sweep tool's inputs, checked on CPU: each family's grid files (corpus/kernels/<family>/grids/) name
the family's specs and values its kernel.yaml allows for TUNABLES keys."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
import yaml

from benchmarks.sweep_library import load_grids

REPO = Path(__file__).resolve().parents[2]
GRIDS = sorted((REPO / "corpus" / "kernels").glob("*/grids/*.json"))


def _tunables(family: str) -> dict:
    source = (REPO / "corpus" / "kernels" / family / "kernel.py").read_text()
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "TUNABLES" for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"{family}/kernel.py has no TUNABLES literal")


def test_every_family_with_grids_is_swept():
    assert len({g.parent.parent.name for g in GRIDS}) >= 10


@pytest.mark.parametrize("grid", GRIDS, ids=[f"{g.parent.parent.name}-{g.stem}" for g in GRIDS])
def test_grid_names_existing_specs_and_tunables(grid: Path):
    folder = grid.parent.parent
    allowed = yaml.safe_load((folder / "kernel.yaml").read_text())["tunables"]
    for entry in load_grids([str(grid)]):
        family, spec = entry["family"], entry["spec"]
        assert family == folder.name, f"{grid}: names family {family!r}"
        assert (folder / "specs" / f"{spec}.py").is_file(), (grid.name, spec)
        keys = set(_tunables(family))
        for config in entry["configs"]:
            unknown = set(config) - keys
            assert not unknown, f"{grid}: {spec} config {config} has keys not in TUNABLES: {unknown}"
            refused = {k: v for k, v in config.items() if not isinstance(v, list) and v not in allowed[k]}
            assert not refused, f"{grid}: {spec} config {config}: values kernel.yaml does not list: {refused}"


def test_a_grid_entry_without_configs_is_named(tmp_path: Path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"family": "softmax", "spec": "softmax_bf16"}))
    with pytest.raises(SystemExit, match=r"bad\.json.*configs"):
        load_grids([str(bad)])
