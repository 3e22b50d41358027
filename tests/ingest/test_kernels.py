"""Kernel files with a sidecar become one KernelRecord each, in their own collection."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ingest.frontmatter import FrontMatterError
from ingest.kernels import read_kernel
from ingest.pipeline import ingest_paths

SOURCE = 'import torch\nTUNABLES = {"BLOCK_N": 1024}\n\n\nclass ModelNew(torch.nn.Module):\n    pass\n'
SIDECAR = """name: softmax_rowwise
op_family: softmax
op_signature: "softmax(dim=-1)"
backend: triton
description: One program per row; the row lives in registers.
tunables:
  BLOCK_N: [512, 1024, 2048]
dtypes: [float32]
accelerators: [h100]
"""


def write_kernel(root: Path, family: str, source: str = SOURCE, sidecar: str = SIDECAR) -> Path:
    folder = root / family
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kernel.py").write_text(source)
    (folder / "kernel.yaml").write_text(sidecar)
    (folder / "specs").mkdir(exist_ok=True)
    (folder / "specs" / "spec_a.py").write_text("# a spec: no sidecar, not a kernel\n")
    return folder / "kernel.py"


def test_read_kernel_keeps_the_source_whole(tmp_path):
    record = read_kernel(write_kernel(tmp_path, "softmax"))
    assert record.source == SOURCE and record.op_family == "softmax" and record.tunables["BLOCK_N"][-1] == 2048
    assert len(record.id) == 32


def test_bad_sidecar_names_file_line_and_field(tmp_path):
    path = write_kernel(tmp_path, "softmax", sidecar=SIDECAR.replace("backend: triton", "backend: fortran"))
    with pytest.raises(FrontMatterError) as info:
        read_kernel(path)
    assert info.value.path.endswith("kernel.yaml") and info.value.line == 4 and info.value.field == "backend"


def test_kernels_ingest_list_search_and_replace(tmp_path, store):
    write_kernel(tmp_path / "kernels", "softmax")
    write_kernel(tmp_path / "kernels", "layernorm", SOURCE.replace("1024", "256"),
                 SIDECAR.replace("softmax_rowwise", "layernorm_fused").replace("op_family: softmax",
                                 "op_family: layernorm").replace("softmax(dim=-1)", "layer_norm(-1)")
                 .replace("accelerators: [h100]", "accelerators: [mi300x]"))
    report = ingest_paths(store, [tmp_path / "kernels"])
    assert len(report.kernels) == 2 and report.written == []  # specs/*.py were not taken as kernels
    assert [r.name for r in store.list_kernels()] == ["layernorm_fused", "softmax_rowwise"]
    assert [r.name for r in store.list_kernels(op_family="softmax")] == ["softmax_rowwise"]
    assert [r.name for r in store.list_kernels(accelerator="mi300x")] == ["layernorm_fused"]
    assert store.search_kernels("fused layer norm", k=1)[0].op_family == "layernorm"
    old_id = store.list_kernels(op_family="softmax")[0].id
    (tmp_path / "kernels" / "softmax" / "kernel.py").write_text(SOURCE.replace("1024", "4096"))
    again = ingest_paths(store, [tmp_path / "kernels"])
    assert len(again.kernels) == 1
    assert store.get_kernel(old_id) is None  # the changed kernel replaced its old record
    assert "4096" in store.list_kernels(op_family="softmax")[0].source
    assert len(store.list_kernels()) == 2


def test_ingest_reports_a_bad_sidecar(tmp_path, store):
    write_kernel(tmp_path, "softmax", sidecar=SIDECAR.replace("name: softmax_rowwise\n", ""))
    report = ingest_paths(store, [tmp_path])
    assert len(report.errors) == 1 and re.search(r"kernel\.yaml:1: field 'name'", report.errors[0])
    assert report.kernels == [] and store.list_kernels() == []
