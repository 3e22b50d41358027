"""harness/verdict.py and the worker's exit status: one named exit code per status."""

from __future__ import annotations

import pytest

from harness.verdict import ExitCode, Status, Verdict
from harness.worker import _exit_code


@pytest.mark.parametrize("status", list(Status))
def test_every_status_has_an_exit_code(status):
    code = ExitCode.for_status(status)
    assert code.name == status.name.upper()
    assert _exit_code(status.value) == int(code)


def test_harness_error_is_not_the_candidates():
    assert _exit_code("harness_error") == ExitCode.HARNESS_ERROR
    assert ExitCode.PASSED == 0


def test_verdict_round_trip_and_passed_flag():
    v = Verdict(status=Status.wrong, reasons=["output: 3 of 10 elements ..."], latency_ms=None)
    data = v.to_dict()
    assert data["status"] == "wrong" and not v.passed
    assert Verdict.from_dict(data) == v
