"""benchmarks/gpu/tests.sh and tests/gpu_log.py on the CPU: a GPU test log names its command, commit, source
digest and versions; the digest pins the code; a test marked gpu says why it is skipped without a GPU."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.gpu_log import REPO, commit, source_digest

SCRIPT = REPO / "benchmarks" / "gpu" / "tests.sh"


def _tree(root):
    for rel, text in {"harness/a.py": "x = 1\n", "tests/b.py": "y = 2\n", "benchmarks/c.sh": "echo\n",
                      "pyproject.toml": "[project]\n"}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_source_digest_pins_the_code_and_ignores_generated_files(tmp_path):
    _tree(tmp_path)
    first = source_digest(tmp_path)
    (tmp_path / "harness" / "__pycache__").mkdir()
    (tmp_path / "harness" / "__pycache__" / "a.cpython-311.pyc").write_bytes(b"\0")
    (tmp_path / "benchmarks" / "results").mkdir()
    (tmp_path / "benchmarks" / "results" / "run.py").write_text("z = 3\n")
    assert source_digest(tmp_path) == first
    (tmp_path / "harness" / "a.py").write_text("x = 2\n")
    assert source_digest(tmp_path) != first
    (tmp_path / "harness" / "a.py").write_text("x = 1\n")
    (tmp_path / "tests" / "b.py").rename(tmp_path / "tests" / "b2.py")  # a rename is a change too
    assert source_digest(tmp_path) != first


def test_commit_without_git_comes_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path.parent))  # no repository above tmp_path
    monkeypatch.setenv("KKB_COMMIT", "0123abcd")
    assert commit(tmp_path) == "0123abcd (from KKB_COMMIT)"
    monkeypatch.delenv("KKB_COMMIT")
    assert commit(tmp_path).startswith("unknown")


def _run(tmp_path, *pytest_args):
    env = {**os.environ, "KKB_GPU_LOG_DIR": str(tmp_path), "KKB_COMMIT": "feedbeef", "PYTHON": sys.executable,
           "PYTHONPATH": str(REPO)}
    env.pop("KKB_COPY_RESULTS_TO", None)
    out = subprocess.run(["bash", str(SCRIPT), "probe", *pytest_args], cwd=REPO, env=env, capture_output=True,
                         text=True, timeout=300, check=False)
    logs = sorted(tmp_path.glob("gpu-tests-probe-*.log"))
    assert len(logs) == 1, (out.stdout[-2000:], out.stderr[-2000:])
    text = logs[0].read_text()
    logs[0].unlink()
    return out.returncode, text


@pytest.mark.slow
def test_the_log_opens_with_its_provenance(tmp_path):
    status, text = _run(tmp_path, "tests/harness/test_verdict_codes.py", "-q")
    assert status == 0
    head = text.split("\n\n", 1)[0]
    command = "KKB_COMMIT=feedbeef bash benchmarks/gpu/tests.sh probe tests/harness/test_verdict_codes.py -q"
    assert f"command: {command}" in head
    assert "commit: " in head and f"source digest: {source_digest()}" in head
    for name in ("python", "torch", "cuda", "triton", "numpy"):
        assert f"\n{name}: " in head, head
    assert "PASSED tests/harness/test_verdict_codes.py::" in text and text.rstrip().endswith("pytest exit: 0")
    status, text = _run(tmp_path, "tests/harness/test_verdict_codes.py", "-k", "no_such_test")
    assert status == 5 and "pytest exit: 5" in text  # pytest's own status comes back (5: nothing ran)


def test_a_gpu_test_without_a_gpu_says_why(tmp_path):
    test = tmp_path / "test_needs_gpu.py"
    test.write_text("import pytest\n\n\n@pytest.mark.gpu\ndef test_x():\n    pass\n")
    out = subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider",
                          "-rs", "-q", str(test)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         check=False, env={**os.environ, "PYTHONPATH": str(REPO)})
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the test would run")
    assert "1 skipped" in out.stdout and "marked gpu: needs a CUDA GPU" in out.stdout, out.stdout[-2000:]
