"""What a person sees while a session runs: a rich Live panel, or plain lines when not on a terminal.

Usage: with make_view(console, live=True) as view: Tuner(..., view=view).run()

Both views take the loop's `summary()` dict: nodes evaluated, in flight, best speedup so far and
its basis, failures by class, and the latest events. On the CPU both say that times are the Triton
interpreter's. `kkb tune --json` shows no live panel (plain lines on stderr; stdout is the JSON).
"""

from __future__ import annotations

from typing import Self

from rich.console import Console, Group
from rich.live import Live
from rich.panel import Panel
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from agent_client.session.records import interpreter_note, speedup_text


def render(summary: dict) -> Panel:
    """The panel for one summary (also used by tests through a recording console)."""
    basis = {"compile": "torch.compile", "eager": "eager (compile baseline skipped)"}.get(
        summary.get("fitness_basis") or "", "-")
    head = Table.grid(padding=(0, 2))
    head.add_column(style="bold")
    head.add_column()
    head.add_row("candidates evaluated", Text(f"{summary['evaluated']} / {summary['budget']}"
                 f"  (in flight {summary['in_flight']}, passed {summary['passed']})"))
    head.add_row("", ProgressBar(total=max(1, summary["budget"]), completed=summary["evaluated"], width=40))
    best = summary.get("best_fitness") or 0.0
    head.add_row("best speedup", Text(f"{speedup_text(best)} vs {basis}  [{summary.get('best_node_id') or '-'}]"
                 if best > 0 else "none yet"))
    head.add_row("elapsed", Text(f"{summary['elapsed_s']:.0f} s"))
    failures = Table("failure class", "count", box=None, pad_edge=False)
    for name, count in sorted(summary.get("failures", {}).items(), key=lambda kv: -kv[1]):
        failures.add_row(Text(name), str(count))
    log = Text("\n".join(summary.get("log", [])[-6:]), style="dim")  # Text: no markup in model output
    note = interpreter_note(summary.get("device", "cpu"))
    parts = [head, failures, log] + ([Text(note, style="yellow")] if note else [])
    return Panel(Group(*parts), title=Text(f"kkb tune {summary['spec']} [{summary['session_id']}]"))


class LiveView:
    def __init__(self, console: Console):
        self.console = console
        self.live: Live | None = None

    def __enter__(self) -> Self:
        self.live = Live(console=self.console, refresh_per_second=4, transient=False)
        self.live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self.live is not None:
            self.live.__exit__(*exc)

    def update(self, summary: dict) -> None:
        if self.live is not None:
            self.live.update(render(summary))


class LineView:
    """One line per new event: for logs, pipes and CI."""

    def __init__(self, console: Console):
        self.console = console
        self._printed = 0  # events printed so far (the summary's log is a sliding window)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        return None

    def update(self, summary: dict) -> None:
        log, events = summary.get("log", []), summary.get("events", 0)
        new = min(len(log), events - self._printed)
        best = summary.get("best_fitness") or 0.0
        suffix = f"  (best {speedup_text(best)})" if best > 0 else ""
        for line in log[len(log) - new:] if new > 0 else []:
            self.console.print(f"[{summary['evaluated']}/{summary['budget']}] {line}{suffix}",
                               highlight=False, markup=False, soft_wrap=True)  # a log line: never wrapped
        self._printed = events


def make_view(console: Console, live: bool | None = None):
    if live is None:
        live = console.is_terminal
    return LiveView(console) if live else LineView(console)
