"""The provider interface: what a tuning session asks of a model (or of the offline library).

Usage: from agent_client.proposals import Provider, ProposalRequest, Proposal, NodeView

The session (agent_client/session/) and the providers (agent_client/providers/, agent_client/offline/)
meet here: both import these types, and the session imports no provider.

A provider turns one ProposalRequest (the assembled prompt, the spec, the parent node) into a few
Proposals (candidate sources defining `ModelNew`). Providers never evaluate, never write the
session: the session loop does both. Concrete providers: anthropic.py, openai_compat.py,
replay.py, and the offline one in agent_client/offline/; they are registered by name in
agent_client/providers/__init__.py.

Registry contract: each provider module offers `make_provider(settings, **options) -> Provider`
(settings: agent_client.config.ClientSettings). The offline one is `agent_client.offline.make_provider`
(a class named `*Provider` taking no required arguments also works).

A reply with no usable candidate is still a Proposal: `code=""` and `meta["error"]` set to a
short reason; the session records it as a node with status "malformed" and never evaluates it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:  # the kb interface pulls in pydantic schemas; providers only need its shape
    from agent_client.kb import KnowledgeBase


@dataclass(frozen=True)
class NodeView:
    """What a provider may see of a parent node: its code, its verdict and its tunables."""

    node_id: str
    code: str
    verdict: dict  # harness Verdict.to_dict(): status, reasons, latency_ms, speedups, limit_kind, ...
    tunables: dict = field(default_factory=dict)  # the candidate's TUNABLES, e.g. {"BLOCK_N": 1024}
    meta: dict = field(default_factory=dict)  # the parent's Proposal.meta (kernel_id, usage, ...)
    fitness: float = 0.0  # the session's fitness of the parent (speedup; 0 for failed candidates)


@dataclass
class ProposalRequest:
    """One request for candidates: drafts have no parent, expansions refine `parent`."""

    spec_path: Path
    spec_source: str
    backend: str  # "triton" | "cuda" | ...
    accelerator: str  # accelerator id, e.g. "h200"
    prompt: str  # the assembled prompt text for this step
    parent: NodeView | None  # the parent node, or None for a draft
    n: int  # how many candidates are wanted (a provider may return fewer)
    kb: KnowledgeBase
    device: str = "cpu"  # where the harness evaluates (for tools that run a candidate)
    session_id: str = ""  # the session asking (replay uses it to find recorded responses)
    step: int = 0  # the index of this request within the session (replay keys on it)
    history: list[NodeView] = field(default_factory=list)  # recently evaluated nodes, best first
    system: str = ""  # the system text (role and answer format) for chat providers
    cache_prefix_chars: int = 0  # prompt[:cache_prefix_chars] is the stable knowledge part (cacheable)
    # where a provider says what it is doing while the request runs (e.g. that it starts retrying); the
    # session shows it at once
    notify: Callable[[str], None] | None = None


@dataclass
class Proposal:
    """One candidate: its source and where it came from."""

    code: str  # candidate source defining ModelNew ("" when the reply held none: see meta["error"])
    response_text: str  # raw model output (or a description, for offline)
    meta: dict = field(default_factory=dict)  # e.g. {"kernel_id":..., "tunables": {...}, "usage": {...}}


@runtime_checkable
class Provider(Protocol):
    """A source of candidates. `name` is the registry name ("anthropic", "openai", "replay", "offline")."""

    name: str

    def propose(self, request: ProposalRequest) -> list[Proposal]: ...


class ProviderError(RuntimeError):
    """A provider has no proposal for this request (e.g. the offline mode has no route for the spec, a
    replay's recording is missing); the message says why in one line."""


class EndpointError(ProviderError):
    """A model's endpoint cannot be used: no key or base URL set, the key or the request refused, or the
    endpoint unreachable or failing after the bounded retries. The message names the setting to check."""
