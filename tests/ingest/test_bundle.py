"""A library kernel's candidate source: the shared helpers it imports inlined (ingest/bundle.py).

Usage: .venv/bin/python -m pytest -q tests/ingest/test_bundle.py
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ingest.bundle import MODULE_PREFIX, BundleError, bundled_source, import_bundled
from ingest.kernels import read_kernel

REPO = Path(__file__).resolve().parents[2]
KERNELS = sorted((REPO / "corpus" / "kernels").glob("*/kernel.py"))


def _corpus(tmp_path: Path, kernel: str, helpers: dict[str, str]) -> Path:
    (tmp_path / "kernels" / "_shared").mkdir(parents=True)
    (tmp_path / "kernels" / "fam").mkdir()
    for name, text in helpers.items():
        (tmp_path / "kernels" / "_shared" / f"{name}.py").write_text(text)
    path = tmp_path / "kernels" / "fam" / "kernel.py"
    path.write_text(kernel)
    return path


def test_a_module_of_the_family_folder_is_inlined(tmp_path: Path):
    path = _corpus(tmp_path, "from corpus.kernels.fam.part import f\n\nY = f()\n", {})
    (path.parent / "part.py").write_text("def f():\n    return 3\n")
    source = bundled_source(path)
    assert "inlined from corpus/kernels/fam/part.py" in source and MODULE_PREFIX not in source


def test_a_kernel_without_shared_imports_is_its_file(tmp_path: Path):
    path = _corpus(tmp_path, "import math\n\nX = math.pi\n", {})
    assert bundled_source(path) == path.read_text()


def test_helpers_are_inlined_once_with_the_imports_they_need(tmp_path: Path):
    helpers = {
        "base": '"""Doc."""\n\nimport math\n\nTWO = 2\n\n\ndef twice(x):\n    return TWO * x\n',
        "top": "import functools\nimport math\n\nfrom corpus.kernels._shared.base import twice\n\n\n"
               "@functools.cache\ndef four(x):\n    return twice(twice(x)) + math.floor(0.5)\n",
    }
    kernel = ("import math\n\nfrom corpus.kernels._shared.base import TWO\nfrom corpus.kernels._shared.top import four"
              "\n\nY = four(3) + TWO\n")
    source = bundled_source(_corpus(tmp_path, kernel, helpers))
    assert MODULE_PREFIX not in source and '"""Doc."""' not in source
    assert source.count("def twice(") == 1 and source.count("import math") == 1
    assert source.count("import functools") == 1
    namespace: dict = {}
    exec(compile(source, "bundled", "exec"), namespace)  # noqa: S102 - our own test source
    assert namespace["Y"] == 14


@pytest.mark.parametrize("kernel, helpers, expected", [
    ("from corpus.kernels._shared.nothere import f\n", {}, "kernel.py:1: imports corpus.kernels._shared.nothere"),
    ("from corpus.kernels.fam.kernel import X\n", {}, "kernel.py:1: imports corpus.kernels.fam.kernel"),
    ("\nfrom corpus.kernels._shared.base import g\n", {"base": "def f():\n    pass\n"}, ":2: base.py defines no g"),
    ("from corpus.kernels._shared.base import f\n", {"base": "from __future__ import annotations\n\n\ndef f(): ..."},
     "cannot use __future__ imports"),
], ids=["missing-module", "a-kernel-file", "missing-name", "future-import"])
def test_what_cannot_be_inlined_is_named(tmp_path: Path, kernel: str, helpers: dict, expected: str):
    with pytest.raises(BundleError, match=expected.replace(".", r"\.")):
        bundled_source(_corpus(tmp_path, kernel, helpers))


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda p: p.parent.name)
def test_every_library_kernel_is_one_self_contained_source(kernel: Path):
    source = bundled_source(kernel)
    tree = ast.parse(source)
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("corpus")]
    assert "class ModelNew(" in source
    assert read_kernel(kernel).source == source  # what the knowledge base stores as the record's source


def test_an_imported_bundle_is_one_module(tmp_path: Path):
    path = _corpus(tmp_path, "from corpus.kernels._shared.base import f\n\nY = f()\n",
                   {"base": "def f():\n    return 7\n"})
    module = import_bundled(path, "test_bundle_import")
    assert module.Y == 7 and module.f.__module__ == module.__name__
    assert import_bundled(path, "test_bundle_import") is module
