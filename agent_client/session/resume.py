"""What `kkb tune --resume` may change: how the session reaches its model and how far it goes, never what it
searches (spec, target, backend, provider, policy, harness settings stay as the session was started).

Usage: config, notes = resumed_config(store.config(), settings, ResumeChanges(base_url=URL, budget=24),
                                      candidates=12, spent_s=340.0)
       notes += endpoint_notes(provider.endpoint, store.runs())

The endpoint (base URL and model) is how to reach the model, not what the session is: a bad port given at the
start is mended on resume by `--base-url`, or by ANTHROPIC_BASE_URL (OPENAI_BASE_URL) set in the environment,
which then wins over the URL the session was started with; the key always comes from the environment. Budgets
are the session's totals, earlier runs included: `--budget 24` on a session of 16 candidates asks for 8 more.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from agent_client.session.records import SessionConfig

# provider -> its option -> the settings field that sets it from the environment (ANTHROPIC_BASE_URL, ...)
ENDPOINT_SETTINGS = {
    "anthropic": {"base_url": "anthropic_base_url", "model": "anthropic_model"},
    "openai": {"base_url": "openai_base_url", "model": "openai_model"},
}


@dataclass(frozen=True)
class ResumeChanges:
    """The flags of `kkb tune --resume` that may change a session (None: not given)."""

    base_url: str | None = None  # --base-url
    model: str | None = None  # --model
    budget: int | None = None  # --budget: candidates in all, those the session has included
    time_budget_s: float | None = None  # --time-budget: wall seconds in all, earlier runs included


def resumed_config(config: SessionConfig, settings: Any, changes: ResumeChanges, candidates: int,
                   spent_s: float) -> tuple[SessionConfig, list[str]]:
    """The config a resume runs with, and one line for each budget it changes.

    candidates: nodes the session has; spent_s: wall seconds its runs have used (both for the lines)."""
    options = dict(config.provider_options)
    for option, field in ENDPOINT_SETTINGS.get(config.provider, {}).items():
        given = getattr(changes, option)
        if given:
            options[option] = given
        elif field in settings.model_fields_set and getattr(settings, field):  # set in the environment now: it
            options.pop(option, None)  # wins over the flag the session was started with
    fields: dict[str, Any] = {"provider_options": options}
    notes = []
    if changes.budget is not None and changes.budget != config.budget:
        fields["budget"] = changes.budget
        more = max(0, changes.budget - candidates)
        notes.append(f"--budget {changes.budget}: the session's candidates in all (was {config.budget}; it has "
                     f"{candidates}, so {more} more)")
    if changes.time_budget_s is not None and changes.time_budget_s != config.time_budget_s:
        fields["time_budget_s"] = changes.time_budget_s
        was = "none" if config.time_budget_s is None else f"{config.time_budget_s:g} s"
        notes.append(f"--time-budget {changes.time_budget_s:g}: the session's seconds in all (was {was}; "
                     f"{spent_s:.0f} s spent, {max(0.0, changes.time_budget_s - spent_s):.0f} s left)")
    return dataclasses.replace(config, **fields), notes


def endpoint_text(endpoint: dict | None) -> str:
    """"the model M at URL", or "" for a provider without an endpoint (offline, replay)."""
    if not endpoint:
        return ""
    return f"the model {endpoint.get('model')} at {endpoint.get('base_url')}"


def endpoint_notes(endpoint: dict | None, runs: list[dict]) -> list[str]:
    """One line when this run reaches the model otherwise than the session's last run did."""
    last = next((r["endpoint"] for r in reversed(runs) if r.get("endpoint")), None)
    if not endpoint or not last or endpoint == last:
        return []
    return [f"resumed with {endpoint_text(endpoint)} (the last run used {endpoint_text(last)})"]


def runs_text(runs: list[dict]) -> str:
    """How each run reached the model, consecutive runs alike merged: "the model M at URL (runs 1-2); ... (run 3)"."""
    groups: list[tuple[int, int, dict]] = []
    for number, run in enumerate(runs, start=1):
        if not run.get("endpoint"):
            continue
        if groups and groups[-1][2] == run["endpoint"] and groups[-1][1] == number - 1:
            groups[-1] = (groups[-1][0], number, run["endpoint"])
        else:
            groups.append((number, number, run["endpoint"]))
    return "; ".join(f"{endpoint_text(e)} (" + (f"run {a}" if a == b else f"runs {a}-{b}") + ")" for a, b, e in groups)
