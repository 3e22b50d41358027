"""Checks before a session starts: the backend paired with the target chip, as the facts files say."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_client.preflight import pairing_warnings
from kb_server.facts import load_facts_file

REPO = Path(__file__).resolve().parents[2]

# a newcomer's chip, written as its vendor documents it: its kernels are TPC-C, no Triton
GAUDI3 = """\
id: gaudi3
name: Intel Gaudi 3
vendor: intel
architecture: Gaudi 3
compute_unit_name: TPC
backends: [tpc-c]
compute_units: {value: 64, unit: count, source: "https://www.intel.com/gaudi3-white-paper"}
memory_size: {value: 128, unit: GB, source: "https://www.intel.com/gaudi3-white-paper"}
memory_bandwidth: {value: 3.7, unit: TB/s, source: "https://www.intel.com/gaudi3-white-paper"}
sources: ["https://www.intel.com/gaudi3-white-paper"]
"""


def facts(name: str, tmp_path: Path, text: str | None = None):
    if text is None:
        return load_facts_file(REPO / "corpus" / "accelerators" / f"{name}.yaml")
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return load_facts_file(path)


@pytest.mark.parametrize("chip, backend", [("h100", "triton"), ("h200", "cuda"), ("mi300x", "hip"),
                                           ("mi300x", "triton"), ("mtia-v2", "triton")])
def test_real_pairings_say_nothing(tmp_path, chip, backend):
    assert pairing_warnings(facts(chip, tmp_path), backend, "cpu") == []


def test_triton_for_a_chip_without_it_is_a_warning_not_a_refusal(tmp_path):
    [warning] = pairing_warnings(facts("gaudi3", tmp_path, GAUDI3), "triton", "cpu")
    assert warning.startswith("--backend triton does not compile for gaudi3 (Intel Gaudi 3): its facts list tpc-c")
    assert "judged on cpu" in warning


def test_cuda_for_an_amd_chip_is_a_warning(tmp_path):
    [warning] = pairing_warnings(facts("mi300x", tmp_path), "cuda", "cuda:0")
    assert "does not compile for mi300x" in warning and "triton, hip" in warning


def test_facts_that_do_not_list_backends_say_so(tmp_path):
    text = GAUDI3.replace("backends: [tpc-c]\n", "")
    [warning] = pairing_warnings(facts("gaudi3", tmp_path, text), "triton", "cpu")
    assert "do not say which backends compile for it" in warning and "`backends: [...]`" in warning


def test_every_bundled_chip_lists_its_backends():
    for path in sorted((REPO / "corpus" / "accelerators").glob("*.yaml")):
        assert "triton" in load_facts_file(path).backends, path.name
