"""Clean stops: SIGTERM and SIGHUP end a command as Ctrl-C does, so every worker it started is killed.

Usage (a command's entry point, in the main thread): install_stop_signals()

The workers lead their own sessions (a candidate's hang and its children are killed as a group), so a
terminal's Ctrl-C does not reach them, and a plain SIGTERM would end Python without its `finally` blocks
and exit handlers. With these handlers both raise KeyboardInterrupt in the main thread: the pools'
context managers kill their workers (harness.process.kill_all) and the exit handler kills whatever is
left. A parent killed outright (SIGKILL) is covered by the fork server, which kills its workers when the
parent's end of its control socket closes, and by the workers' parent-death signal.
"""

from __future__ import annotations

import signal
import threading

# SIGINT too: a process started with SIGINT ignored (a test runner's worker, nohup) would otherwise never see Ctrl-C
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _raise_interrupt(signum: int, _frame) -> None:
    raise KeyboardInterrupt(f"stopped by {signal.Signals(signum).name}")


def install_stop_signals() -> bool:
    """Map SIGINT, SIGTERM and SIGHUP to KeyboardInterrupt; False where that is impossible (not the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return False
    for sig in STOP_SIGNALS:
        signal.signal(sig, _raise_interrupt)
    return True
