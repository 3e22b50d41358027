"""Replay a recorded session's responses, step by step, for reproducing and debugging.

Usage: kkb tune SPEC --provider replay --replay-from SESSION_ID
       provider = make_provider(settings, source="SESSION_ID")

Request k of the new session gets the proposals recorded for request k of the source session
(code, raw response, meta), whatever its prompt; when the recording runs out the provider returns
nothing and the session stops: "the provider had no new candidates".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_client.proposals import Proposal, ProposalRequest, ProviderError


class ReplayProvider:
    name = "replay"

    def __init__(self, by_step: dict[int, list[Proposal]], source: str):
        self.by_step = by_step
        self.source = source

    def propose(self, request: ProposalRequest) -> list[Proposal]:
        return [Proposal(p.code, p.response_text, {**p.meta, "replayed_from": self.source})
                for p in self.by_step.get(request.step, [])][: max(1, request.n)]


def load_recording(folder: Path) -> dict[int, list[Proposal]]:
    from agent_client.session.store import SessionStore

    store = SessionStore.open(folder)
    try:
        by_step: dict[int, list[Proposal]] = {}
        for node in store.nodes():
            meta = {k: v for k, v in node.meta.items() if k not in ("duplicate_of", "replayed_from")}
            by_step.setdefault(node.step, []).append(Proposal(node.code, node.response, meta))
        return by_step
    finally:
        store.close()


def make_provider(settings: Any, source: str | None = None, **_: Any) -> ReplayProvider:
    if not source:
        raise ProviderError("provider replay needs the session to replay: --replay-from SESSION_ID")
    folder = Path(source) if Path(source).is_dir() else Path(settings.sessions_dir) / source
    if not (folder / "session.sqlite").exists():
        raise ProviderError(f"provider replay: no recorded session {source!r} under {settings.sessions_dir}")
    return ReplayProvider(load_recording(folder), source)
