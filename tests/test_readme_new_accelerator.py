"""The README's section on a new accelerator runs as written: its shell blocks, in order, on an empty store.

Usage: .venv/bin/python -m pytest -q tests/test_readme_new_accelerator.py

The blocks are read from README.md (so the section cannot drift from what runs), joined into one bash script
with `set -euo pipefail`, and run in an empty folder that has the repository's `examples/`; `kkb` is this
checkout's command line.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HEADING = "## A new accelerator, from its documents to a prompt"
pytestmark = pytest.mark.slow  # eight `kkb` processes, each loading torch and the embedding model


def section_blocks(readme: str) -> list[str]:
    """The ```bash blocks of the section, in order (a '## ' line inside a block is not the next heading)."""
    start = readme.index(HEADING) + len(HEADING)
    blocks, current, fenced = [], None, False
    for line in readme[start:].splitlines():
        if not fenced and line.startswith("## "):
            break
        if line.startswith("```"):
            if not fenced and line.strip() == "```bash":
                current = []
            elif fenced and current is not None:
                blocks.append("\n".join(current))
                current = None
            fenced = not fenced
        elif fenced and current is not None:
            current.append(line)
    return blocks


def test_the_section_has_the_steps_a_newcomer_takes():
    script = "\n".join(section_blocks((REPO / "README.md").read_text()))
    for step in ("accelerators: nova-x1", "kkb facts --template", "kkb ingest", "kkb facts nova-x1", "kkb search",
                 "kkb documents", "kkb prompt"):
        assert step in script, step


def test_the_readme_commands_run_as_written(tmp_path):
    script = "\n".join(section_blocks((REPO / "README.md").read_text()))
    (tmp_path / "examples").symlink_to(REPO / "examples")
    env = {**os.environ, "KKB_HOME": str(tmp_path / "home"), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "PYTHONPATH": str(REPO), "KKB_PYTHON": sys.executable}
    for name in ("KKB_KB_URL", "KKB_CORPUS_DIR", "KKB_API_KEY"):
        env.pop(name, None)
    prelude = 'set -euo pipefail\nkkb() { "$KKB_PYTHON" -m kernelkb_cli "$@"; }\n'
    done = subprocess.run(["bash", "-c", prelude + script], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=900, check=False)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-4000:]
    assert "Traceback" not in out and "warning:" not in out  # a newcomer's files, read as meant
    assert "warnings: 0" in done.stdout
    assert "wrote nova-x1/nova-x1.yaml" in done.stdout
    assert re.search(r"written: 1, unchanged: 0, deleted: 0, kernels: 0, facts: 1, .*errors: 0", done.stdout)
    assert "nova-x1 memory_bandwidth = 4 TB/s" in done.stdout and "nova-silicon.example/x1-datasheet" in done.stdout
    flat = " ".join(done.stdout.split())  # the search's hits wrap at the terminal's width
    assert "Tuning row-wise reductions on the Nova X1 > Softmax and normalisation over rows" in flat
    assert "nova-x1/nova-x1.yaml" in done.stdout and "nova-x1/row-ops.md" in done.stdout  # the listing, by name
    prompt = (tmp_path / "nova-x1" / "prompt.md").read_text()
    assert "## Target hardware: Nova Silicon X1 (Flux, nova-silicon)" in prompt
    assert "- memory bandwidth: 4 TB/s" in prompt and "https://nova-silicon.example/x1-datasheet" in prompt
    assert "### [1] Tuning row-wise reductions on the Nova X1 > Softmax and normalisation over rows" in prompt
