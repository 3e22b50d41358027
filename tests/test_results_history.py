"""scripts/results_history.py: how text cites a results file that left benchmarks/results/ (its name and the
commit that holds it), and whether a citation resolves.

Usage: .venv/bin/python -m pytest -q tests/test_results_history.py
"""

from __future__ import annotations

import pytest

from scripts import results_history as rh


def test_names_side_by_side_share_the_commit_cited_after_the_last():
    cited = "abc1234567"  # (set apart, so that this file does not cite a commit that lacks the files)
    text = (f"(`sweep-20261130T131458Z.json`, `sweep-20261130T131310Z.json` in commit {cited}) and "
            "benchmarks/results/kb-20261130T114150Z.json; `logs/sweep-20261130T131143Z.log`.")
    got = [(c.name, c.commit) for c in rh.citations(text)]
    assert got == [("sweep-20261130T131458Z.json", cited), ("sweep-20261130T131310Z.json", cited),
                   ("kb-20261130T114150Z.json", None), ("logs/sweep-20261130T131143Z.log", None)]


def test_a_citation_wrapped_in_a_comment_still_names_its_commit():
    text = "    # (benchmarks/results/sweep-20261201T084141Z.json in\n    # commit 225df4dcd)\n"
    assert [(c.name, c.commit) for c in rh.citations(text)] == [("sweep-20261201T084141Z.json", "225df4dcd")]


def test_paths_elsewhere_and_stamps_without_a_name_are_not_citations():
    text = ("--out /root/out/library-h200-attn-final1-20261201T172822Z.json; torch 2.11, NVIDIA H200, "
            "20261201T083634Z; 2026-12-01")
    assert rh.citations(text) == []


def test_patterns_expand_braces_and_ranges():
    assert rh._expand("ab{A,B}{1,2}-x.json") == ["abA1-x.json", "abA2-x.json", "abB1-x.json", "abB2-x.json"]
    assert rh._expand("run{1..3}.json") == ["run1.json", "run2.json", "run3.json"]


@pytest.mark.skipif(not rh.has_history(), reason="needs the git checkout")
def test_a_citation_resolves_only_in_a_commit_that_holds_the_file():
    first = rh._git("rev-list", "--max-parents=0", "HEAD").stdout.split()[0]
    name = "sweep-20261130T131458Z.json"  # removed from the tree; its commit is in the history
    commit = rh.commit_holding(name)
    assert rh.held(name, commit) and not rh.held(name, first)
    assert rh.unresolved(f"`{name}` in commit {commit}") == []
    assert rh.unresolved(f"`{name}` in commit {first}") == [f"{name}: commit {first} does not hold it"]
    assert "no commit cited" in rh.unresolved(f"`{name}`.")[0]
    assert rh.held("sweep-20261130T13*.json", commit) and not rh.held("sweep-20991130T13*.json", commit)
    with pytest.raises(rh.HistoryError, match="is in no commit"):
        rh.commit_holding("sweep-20991130T000000Z.json")


def test_a_file_in_the_tree_needs_no_commit():
    text = "`footprint-20261207T143551Z.json` and `logs/harness-h200-20261130T131003Z.log`"
    assert rh.unresolved(text) == []
