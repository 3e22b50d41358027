"""The live terminal view: candidates evaluated, best speedup, failures by class."""

from __future__ import annotations

import io

from rich.console import Console

from agent_client.live import LineView, render

SUMMARY = {"session_id": "s1", "spec": "scaled_relu", "budget": 8, "nodes": 5, "evaluated": 4, "in_flight": 1,
           "best_node_id": "n0003", "best_fitness": 1.84, "fitness_basis": "compile",
           "failures": {"wrong": 2, "compile_error": 1}, "passed": 1, "elapsed_s": 12.0,
           "log": ["n0002 wrong", "n0003 passed 1.840x"], "events": 2}


def test_panel_shows_counts_best_and_failures():
    console = Console(record=True, width=100, file=io.StringIO())
    console.print(render(SUMMARY))
    text = console.export_text()
    assert "4 / 8" in text and "1.84x vs torch.compile" in text and "[n0003]" in text
    assert "wrong" in text and "compile_error" in text and "n0003 passed" in text


def test_line_view_prints_each_event_once():
    out = io.StringIO()
    view = LineView(Console(file=out, width=200))
    view.update(SUMMARY)
    view.update(SUMMARY)  # nothing new
    view.update({**SUMMARY, "log": [*SUMMARY["log"], "n0004 timeout"], "events": 3})
    lines = out.getvalue().splitlines()
    assert len(lines) == 3 and lines[-1].startswith("[4/8] n0004 timeout")


def test_panel_says_cpu_times_are_the_interpreters():
    def text_of(summary):
        console = Console(record=True, width=100, file=io.StringIO())
        console.print(render(summary))
        return " ".join(console.export_text().split())

    assert "Triton interpreter's" in text_of({**SUMMARY, "device": "cpu"})
    assert "interpreter" not in text_of({**SUMMARY, "device": "cuda:0"})


def test_line_view_keeps_a_long_notice_on_one_line_without_a_best_yet():
    out = io.StringIO()
    notice = "provider anthropic (model m): cannot reach http://127.0.0.1:9/v1/messages; retrying for up to 60 s"
    view = LineView(Console(file=out, width=80))  # a log file: rich's default width
    view.update({**SUMMARY, "best_fitness": 0.0, "evaluated": 0, "log": [notice], "events": 1})
    assert out.getvalue() == f"[0/8] {notice}\n"
