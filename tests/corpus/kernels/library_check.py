"""Helpers shared by the memory-bound library tests (test_<family>.py): tiny spec copies, the harness
call on CPU, and the sidecar-vs-TUNABLES check.

Usage: from tests.corpus.kernels.library_check import family_tests, family_kernel, evaluate_tiny, ...
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest
import yaml

os.environ.setdefault("TRITON_INTERPRET", "1")  # direct kernel calls in the tests run in the interpreter

from harness import EvalConfig, Status, Verdict, evaluate
from ingest.bundle import bundled_source, import_bundled

KERNELS = Path(__file__).resolve().parents[3] / "corpus" / "kernels"
# correctness only: one trial per variant, no timing (wall-clock interpreter times mean nothing)
CPU_CONFIG = EvalConfig.for_cpu_tests(trials=1, time_candidate=False, time_eager_baseline=False)


def family_specs(family: str) -> list[Path]:
    return sorted((KERNELS / family / "specs").glob("*.py"))


def tiny_copy(spec: Path, tmp_path: Path) -> Path:
    """The spec with its size switch set to the interpreter-sized shapes."""
    source = spec.read_text()
    assert 'SIZE = "full"' in source, f"{spec}: no SIZE switch"
    out = tmp_path / spec.name
    out.write_text(source.replace('SIZE = "full"', 'SIZE = "tiny"', 1))
    return out


def kernel_source(family: str) -> str:
    """The family's candidate source: kernel.py with the shared helpers it imports inlined."""
    return bundled_source(KERNELS / family / "kernel.py")


def evaluate_tiny(family: str, spec: Path, tmp_path: Path) -> Verdict:
    """The harness's verdict on the family's kernel.py for the tiny copy of `spec` (every variant)."""
    source = kernel_source(family)
    return evaluate(tiny_copy(spec, tmp_path), source, backend="triton", device="cpu", config=CPU_CONFIG)


def tunables_literal(kernel: Path) -> dict:
    tree = ast.parse(kernel.read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "TUNABLES" for t in node.targets):
            return ast.literal_eval(node.value)
    raise AssertionError(f"{kernel}: no module-level TUNABLES dict literal")


def sidecar_reasons(family: str) -> list[str]:
    """What is wrong with kernel.yaml against kernel.py (empty = consistent)."""
    folder = KERNELS / family
    sidecar = yaml.safe_load((folder / "kernel.yaml").read_text())
    reasons = []
    for key in ("name", "op_family", "op_signature", "backend", "description", "tunables", "dtypes",
                "accelerators", "measurements"):
        if key not in sidecar:
            reasons.append(f"{family}/kernel.yaml: missing {key!r}")
    if sidecar.get("op_family") != family:
        reasons.append(f"{family}/kernel.yaml: op_family is {sidecar.get('op_family')!r}")
    if sidecar.get("backend") != "triton":
        reasons.append(f"{family}/kernel.yaml: backend is {sidecar.get('backend')!r}")
    tunables = tunables_literal(folder / "kernel.py")
    allowed = sidecar.get("tunables") or {}
    if set(tunables) != set(allowed):
        reasons.append(f"{family}: TUNABLES keys {sorted(tunables)} != kernel.yaml tunables {sorted(allowed)}")
    for name, value in tunables.items():
        if value not in allowed.get(name, []):
            reasons.append(f"{family}: TUNABLES[{name!r}] = {value!r} is not among kernel.yaml's {allowed.get(name)}")
    if len(family_specs(family)) < 2:
        reasons.append(f"{family}: fewer than 2 specs")
    try:  # the ingest's dependencies (pydantic): installed by the package, absent on a bare CUDA machine
        from ingest.frontmatter import FrontMatterError
        from ingest.kernels import read_kernel
    except ImportError:
        return reasons  # CI installs the package, so there the check below always runs
    try:  # what the knowledge base's ingest takes (its schema: tunables are lists of numbers and strings)
        read_kernel(folder / "kernel.py")
    except FrontMatterError as exc:
        reasons.append(f"{family}: the ingest refuses kernel.yaml: {exc}")
    return reasons


def set_tunables(monkeypatch, module, values: dict | None = None, **named) -> None:
    """Set some of a kernel module's TUNABLES for one test: monkeypatch puts every value back afterwards,
    whatever the outcome (modules from import_file are shared by every test in the process)."""
    for name, value in {**(values or {}), **named}.items():
        monkeypatch.setitem(module.TUNABLES, name, value)


def with_tunables(source: str, overrides: dict) -> str:
    """kernel.py source with its TUNABLES literal updated (what a tuner does)."""
    tree = ast.parse(source)
    node = next(n for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "TUNABLES")
    lines = source.splitlines(keepends=True)
    merged = {**ast.literal_eval(node.value), **overrides}
    return "".join(lines[: node.lineno - 1] + [f"TUNABLES = {merged!r}\n"] + lines[node.end_lineno:])


def evaluate_tiny_with(family: str, spec: Path, tmp_path: Path, overrides: dict) -> Verdict:
    """evaluate_tiny with some TUNABLES overridden (a non-default strategy)."""
    source = with_tunables(kernel_source(family), overrides)
    return evaluate(tiny_copy(spec, tmp_path), source, backend="triton", device="cpu", config=CPU_CONFIG)


def family_tests(family: str) -> tuple:
    """(test_kernel_passes_spec, test_sidecar_matches_kernel) for a family's test module, which binds them to
    those names: the tiny copy of each of the family's specs passes the harness on CPU (every variant), and
    kernel.yaml agrees with kernel.py."""

    @pytest.mark.parametrize("spec", family_specs(family), ids=lambda p: p.stem)
    def test_kernel_passes_spec(spec: Path, tmp_path: Path):
        verdict = evaluate_tiny(family, spec, tmp_path)
        assert verdict.status is Status.passed, verdict.reasons

    def test_sidecar_matches_kernel():
        assert sidecar_reasons(family) == []

    return test_kernel_passes_spec, test_sidecar_matches_kernel


def family_kernel(family: str, module_name: str = ""):
    """The family's candidate source imported as a module (its own name per caller that needs a fresh copy)."""
    return import_bundled(KERNELS / family / "kernel.py", module_name or f"test_{family}_kernel")
