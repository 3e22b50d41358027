"""What is checked before a session starts, each failure a ValueError naming the flag: the backend on the
device, the harness options; and what is only a warning: a backend the target chip does not run. The device
itself is checked by harness.executor.check_device, as `kkb bench` checks it.

Usage: check_session_id("relu-1"); check_backend("triton", "cpu"); check_eval_options({"trials": 2})
       warnings = pairing_warnings(facts, "triton", "cpu")
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kb_server.facts import AcceleratorFacts


def check_session_id(session_id: str) -> None:
    """A name for the session's folder: no path in it."""
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", session_id):
        raise ValueError(f"--session-id {session_id!r}: letters, digits, '.', '_' and '-' only (it names a folder)")


def check_eval_options(options: dict) -> None:
    """Harness settings (`--eval-option KEY=VALUE`) that EvalConfig has, each of its default's type."""
    import dataclasses

    from harness import EvalConfig

    defaults = EvalConfig()
    known = {f.name for f in dataclasses.fields(EvalConfig)}
    for key, value in options.items():
        if key not in known:
            raise ValueError(f"--eval-option {key}: not a harness setting; one of {', '.join(sorted(known))}")
        default = getattr(defaults, key)
        if default is None or value is None:
            continue
        number = isinstance(value, int | float) and not isinstance(value, bool)
        fits = (type(value) is type(default) or (isinstance(default, float) and number)
                or (isinstance(default, dict | list) and isinstance(value, type(default))))
        if not fits:
            kind = {"int": "an integer", "float": "a number", "bool": "true or false", "str": "a string"}.get(
                type(default).__name__, f"a {type(default).__name__}")
            raise ValueError(f"--eval-option {key}={value!r}: expected {kind} (default {default!r})")


def check_backend(backend: str, device: str) -> None:
    """A backend the harness knows and can run on `device`; else ValueError naming --backend."""
    from harness.backends import backend_names, get_backend

    if backend not in backend_names():
        raise ValueError(f"--backend {backend!r}: one of {', '.join(backend_names())}")
    why = get_backend(backend).available(device)
    if why:
        raise ValueError(f"--backend {backend} cannot run on {device}: {why}")


def pairing_warnings(facts: AcceleratorFacts, backend: str, device: str) -> list[str]:
    """Why candidates in `backend` may not serve the target chip. The run goes on (its prompts, its search
    and the verdicts on this device can still be useful), but the user is told."""
    problem = facts.backend_problem(backend)
    if problem is None:
        return []
    return [(f"--backend {backend} {problem}. The session goes on (prompts for {facts.id}, candidates judged "
             f"on {device}), but its kernels may not run on {facts.id}")]
