"""The CPU lock (requirements/lock-cpu.txt): current against pyproject.toml, and dependencies only.

Usage: .venv/bin/python -m pytest -q tests/test_lock.py
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("kkb_lockcheck", REPO / "scripts" / "lockcheck.py")
lockcheck = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lockcheck)


def test_lock_is_current_and_holds_no_path_of_ours():
    assert lockcheck.main(["lockcheck.py"]) == 0
    assert not any(line.startswith(lockcheck.SELF) for line in lockcheck.LOCK.read_text().splitlines())


def test_the_project_line_and_its_comments_are_dropped():
    lines = ["jinja2==3.1.6", "    # via x", "kernelkb @ file:///somewhere", "    # via kernelkb (pyproject.toml)",
             "kernels==0.19.1", "    # via transformers"]
    assert lockcheck.without_self(lines) == ["jinja2==3.1.6", "    # via x", "kernels==0.19.1", "    # via transformers"]
