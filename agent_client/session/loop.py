"""The search loop of a tuning session: draft, evaluate, select, expand, until a stop condition.

Usage: result = Tuner(config, store, kb, provider, policy, evaluate, prompts).run()

Generation overlaps evaluation: the harness runs candidates on a thread pool (each in its own
worker process) while this thread asks the provider for the next proposals, up to
`eval_workers + proposals_per_step` candidates in flight. Every node is inserted as "pending" before
it is evaluated and committed with its verdict right after, from the evaluating thread, so a
session killed at any point resumes (`kkb tune --resume ID`) without losing an evaluated candidate.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_client.proposals import EndpointError, ProposalRequest, Provider, ProviderError
from agent_client.session.records import (
    Node,
    SessionConfig,
    conclusion,
    fitness,
    speedup_text,
    stand_in_verdict,
    stop_text,
)
from agent_client.session.store import SessionStore
from agent_client.session.writeback import tunables_of, write_back

MAX_PROVIDER_FAILURES = 3  # consecutive requests failing with an unexpected error before the session stops
_WAIT = object()  # "nothing to expand yet: wait for an evaluation"


@dataclass
class SessionResult:
    session_id: str
    stop_reason: str
    nodes: int  # nodes in the session (all runs)
    evaluated: int  # nodes with a verdict (including malformed ones)
    best_node_id: str | None
    best_fitness: float
    fitness_basis: str | None  # "compile" | "eager"
    best_speedup_vs_eager: float | None
    best_speedup_vs_compile: float | None
    time_to_best_s: float | None  # from the session's creation to the best node's verdict
    elapsed_s: float  # this run
    written_kernels: list[str] = field(default_factory=list)
    failures: dict[str, int] = field(default_factory=dict)  # outcome -> count, failed nodes only
    conclusion: str = ""  # what to use, with both timings (never a winner slower than torch.compile)
    stop_text: str = ""  # stop_reason in plain words, with what the provider said when it stopped the session
    provider_error: str | None = None  # the provider's last error, when it stopped the session
    candidates: int = 0  # nodes with a candidate's source (a reply without one is not a candidate)

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


class Tuner:
    def __init__(self, config: SessionConfig, store: SessionStore, kb: Any, provider: Provider, policy: Any,
                 evaluate: Callable[[str], dict], prompts: Any, view: Any = None):
        """prompts: the session's prompt builder (agent_client.prompting.PromptBuilder), made where the session
        is assembled (agent_client/runner.py)."""
        self.config = config
        self.store = store
        self.kb = kb
        self.provider = provider
        self.policy = policy
        self.evaluate = evaluate
        self.view = view
        self.spec_path = Path(config.spec_path)
        self.spec_source = self.spec_path.read_text(encoding="utf-8")
        self.prompts = prompts
        self.nodes: dict[str, Node] = {}
        self.inflight: dict[Future, str] = {}
        self.provider_failures = 0
        self.exhausted = False
        self.stop_note = ""  # why the provider proposed nothing more, when it says
        self.failed = False  # the provider's endpoint failed after its bounded retries
        self.provider_error: str | None = None  # what it said last (stays None while requests succeed)
        self.best: Node | None = None
        self.since_best = 0  # evaluated nodes since the best improved
        self.log: list[str] = []  # recent events for the live view
        self.events = 0  # events noted so far
        self._t0 = time.monotonic()
        self._run_id: int | None = None
        self._spent_before_s = 0.0  # wall time of earlier runs of this session (resumed sessions)

    # -- the loop
    def run(self) -> SessionResult:
        self._t0 = time.monotonic()
        self._run_id = self.store.begin_run(endpoint=getattr(self.provider, "endpoint", None))
        self._spent_before_s = self.store.spent_s(exclude_run=self._run_id)
        self.store.set_status("running")
        executor = ThreadPoolExecutor(max_workers=max(1, self.config.eval_workers), thread_name_prefix="eval")
        self._executor = executor
        reason = "interrupted"
        try:
            self._restore()
            reason = self._search()
            while self.inflight:
                self._harvest(block=True)
        finally:
            executor.shutdown(wait=reason != "interrupted", cancel_futures=True)
            self._refresh()
        written = write_back(self.kb, self.config, list(self.nodes.values())) if self.config.write_back else []
        self.store.touch_run(self._run_id)
        self.store.set_status("done", reason)
        result = self.result(reason, written)
        self._note(f"stopped: {stop_text(reason)}")
        self._refresh()
        return result

    def _search(self) -> str:
        max_inflight = max(1, self.config.eval_workers) + max(1, self.config.proposals_per_step)
        while True:
            self._harvest(block=False)
            reason = self._stop_reason()
            if reason:
                return reason
            if len(self.inflight) >= max_inflight:
                self._harvest(block=True)
                continue
            if len(self.nodes) >= self.config.budget:
                if not self.inflight:
                    return "budget"
                self._harvest(block=True)
                continue
            parent = self._choose_parent()
            if parent is _WAIT:
                self._harvest(block=True)
                continue
            self._request(parent)
            if self.failed or self.provider_failures >= MAX_PROVIDER_FAILURES:
                return "provider_failed"
            if self.exhausted:
                return "provider_exhausted"

    def _stop_reason(self) -> str | None:
        c = self.config
        if c.target_speedup is not None and self.best is not None and self.best.fitness >= c.target_speedup:
            return "target"
        if c.time_budget_s is not None and self._spent_before_s + time.monotonic() - self._t0 >= c.time_budget_s:
            return "time"
        if c.stall_nodes and self.since_best >= c.stall_nodes:  # counted from the start when nothing passed
            return "stalled"
        return None

    # -- resume
    def _restore(self) -> None:
        nodes = self.store.nodes()
        for node in nodes:
            self.nodes[node.id] = node
        for node in sorted((n for n in nodes if n.status != "pending"), key=lambda n: n.evaluated_at or 0):
            self.policy.observe(node)
            self._track_best(node)
        self.policy.restore([r["parent_id"] for r in self.store.requests() if r["kind"] == "expand"])
        for node in nodes:
            if node.status == "pending":  # killed before its verdict was committed: evaluate again
                self._note(f"{node.id}: re-evaluating (pending at resume)")
                self._submit(node)

    # -- generation
    def _choose_parent(self):
        evaluated = [n for n in self.nodes.values() if n.status != "pending"]
        drafts = sum(1 for n in self.nodes.values() if n.kind == "draft")
        if drafts < self.config.drafts:
            return None
        if not evaluated:
            return _WAIT if self.inflight else None
        parent = self.policy.select(evaluated)
        if parent is None and self.policy.waits_for_drafts and any(
                n.kind == "draft" and n.status == "pending" for n in self.nodes.values()):
            return _WAIT
        return parent

    def _request(self, parent: Node | None) -> None:
        c = self.config
        remaining = c.budget - len(self.nodes)
        drafts = sum(1 for n in self.nodes.values() if n.kind == "draft")
        n = min(c.proposals_per_step, remaining)
        if parent is None and drafts < c.drafts:
            n = min(n, c.drafts - drafts)
        kind = "expand" if parent else "draft"
        evaluated = [x for x in self.nodes.values() if x.status != "pending"]
        failures = sorted((x for x in evaluated if x.fitness <= 0), key=lambda x: x.evaluated_at or 0)
        prompt = self.prompts.build(parent=parent, failures=failures, best=self.best,
                                    index=drafts + 1, total=max(c.drafts, drafts + 1))
        step = self.store.next_step()
        self.store.add_request(step, kind, parent.id if parent else None, prompt.system, prompt.text,
                               prompt.cache_prefix_chars, self.provider.name, n, sources=prompt.sources)
        history = sorted(evaluated, key=lambda x: (-x.fitness, x.id))  # all of them, best first
        request = ProposalRequest(
            spec_path=self.spec_path, spec_source=self.spec_source, backend=c.backend, accelerator=c.target,
            prompt=prompt.text, parent=parent.view() if parent else None, n=n, kb=self.kb, device=c.device,
            session_id=c.session_id, step=step, history=[x.view() for x in history], system=prompt.system,
            cache_prefix_chars=prompt.cache_prefix_chars, notify=self._announce,
        )
        try:
            proposals = self.provider.propose(request)
        except ProviderError as exc:  # the provider's last word (after its bounded retries): stop the session
            self.failed, self.exhausted = isinstance(exc, EndpointError), not isinstance(exc, EndpointError)
            self.provider_error = str(exc)  # the session's result and `kkb tune` say it once, in full
            self.store.set_request_error(step, str(exc))
            return
        except Exception as exc:  # noqa: BLE001 - an unexpected error: record it, stop after a few in a row
            self.provider_failures += 1
            self.provider_error = f"provider {self.provider.name}: {type(exc).__name__}: {exc}"
            self.store.set_request_error(step, self.provider_error)
            self._note(f"step {step}: {self.provider_error}")
            return
        self.provider_failures, self.provider_error = 0, None
        if not proposals:
            self.exhausted = True
            note = getattr(self.provider, "stop_note", "")  # e.g. the offline search at the hardware limit
            self.store.set_request_error(step, "the provider returned no proposal" + (f": {note}" if note else ""))
            self.stop_note = note
            return
        for proposal in proposals[:remaining]:
            self._add_node(step, kind, parent, proposal)

    def _add_node(self, step: int, kind: str, parent: Node | None, proposal) -> None:
        meta = dict(proposal.meta or {})
        code = proposal.code or ""
        if code and "tunables" not in meta:
            meta["tunables"] = {k: v[0] for k, v in tunables_of(code).items() if len(v) == 1}
        node = Node(id=self.store.next_node_id(), step=step, parent_ids=[parent.id] if parent else [],
                    kind=kind, code=code, response=proposal.response_text or "", meta=meta,
                    created_at=time.time())
        if not code.strip():
            reason = meta.get("error") or "the reply held no ```python block defining ModelNew"
            node.status, node.evaluated_at = "evaluated", time.time()
            node.verdict = stand_in_verdict("malformed", [str(reason)])
            self.store.insert_node(node)
            self._settle(node)
            return
        twin = next((x for x in self.nodes.values() if x.code == code and x.status != "pending"), None)
        if twin is not None:  # the same source again: its verdict stands, no second evaluation
            node.meta["duplicate_of"] = twin.id
            node.status, node.verdict, node.evaluated_at = "evaluated", dict(twin.verdict or {}), time.time()
            node.fitness, node.fitness_basis = twin.fitness, twin.fitness_basis
            self.store.insert_node(node)
            self._settle(node)
            return
        self.store.insert_node(node)
        self.nodes[node.id] = node
        self._submit(node)

    # -- evaluation
    def _submit(self, node: Node) -> None:
        future = self._executor.submit(self._evaluate, node)
        self.inflight[future] = node.id
        self._refresh()

    def _evaluate(self, node: Node) -> Node:
        started = time.time()
        verdict = self.evaluate(node.code)
        fit, basis = fitness(verdict)
        done = dataclasses.replace(node, status="evaluated", verdict=verdict, fitness=fit, fitness_basis=basis,
                                   evaluated_at=time.time())
        self.store.record_evaluation(done, started)  # committed before anyone else sees it
        return done

    def _harvest(self, block: bool) -> None:
        if not self.inflight:
            return
        done, _ = wait(list(self.inflight), timeout=None if block else 0, return_when=FIRST_COMPLETED)
        for future in done:
            node_id = self.inflight.pop(future)
            try:
                node = future.result()
            except Exception as exc:  # noqa: BLE001 - only the store can fail here; keep the node pending for a resume
                self._note(f"{node_id}: could not record its evaluation: {exc}")
                continue
            self._settle(node)

    def _settle(self, node: Node) -> None:
        if self._run_id is not None:
            self.store.touch_run(self._run_id)
        self.nodes[node.id] = node
        self.policy.observe(node)
        self._track_best(node)
        v = node.verdict or {}
        self._note(f"{node.id} {v.get('status')}" + (f" {speedup_text(node.fitness)}" if node.fitness > 0 else ""))
        self._refresh()

    def _track_best(self, node: Node) -> None:
        if node.fitness > 0 and (self.best is None or node.fitness > self.best.fitness):
            self.best, self.since_best = node, 0
        else:
            self.since_best += 1

    # -- reporting
    def _announce(self, text: str) -> None:
        """A provider's word while a request runs (that it starts retrying): shown at once."""
        self._note(text)
        self._refresh()

    def _note(self, text: str) -> None:
        self.log = (self.log + [text])[-8:]
        self.events += 1

    def summary(self) -> dict:
        nodes = list(self.nodes.values())
        outcomes = Counter(n.outcome for n in nodes)
        return {
            "session_id": self.config.session_id, "spec": self.spec_path.stem, "budget": self.config.budget,
            "device": self.config.device,
            "nodes": len(nodes), "evaluated": sum(1 for n in nodes if n.status != "pending"),
            "in_flight": len(self.inflight), "best_node_id": self.best.id if self.best else None,
            "best_fitness": self.best.fitness if self.best else 0.0,
            "fitness_basis": self.best.fitness_basis if self.best else None,
            "failures": {k: v for k, v in outcomes.items() if k not in ("passed", "pending")},
            "passed": outcomes.get("passed", 0), "elapsed_s": time.monotonic() - self._t0, "log": list(self.log),
            "events": self.events,
        }

    def _refresh(self) -> None:
        if self.view is not None:
            self.view.update(self.summary())

    def result(self, reason: str, written: list[str]) -> SessionResult:
        nodes = list(self.nodes.values())
        best = self.best
        created = self.store.info()["created_at"]
        v = (best.verdict or {}) if best else {}
        outcomes = Counter(n.outcome for n in nodes)
        return SessionResult(
            session_id=self.config.session_id, stop_reason=reason, nodes=len(nodes),
            evaluated=sum(1 for n in nodes if n.status != "pending"), best_node_id=best.id if best else None,
            best_fitness=best.fitness if best else 0.0, fitness_basis=best.fitness_basis if best else None,
            best_speedup_vs_eager=v.get("speedup_vs_eager"), best_speedup_vs_compile=v.get("speedup_vs_compile"),
            time_to_best_s=(best.evaluated_at - created) if best and best.evaluated_at else None,
            elapsed_s=time.monotonic() - self._t0, written_kernels=written,
            failures={k: c for k, c in outcomes.items() if k not in ("passed", "pending")},
            conclusion=conclusion(best, nodes) + (f" The search stopped: {self.stop_note}." if self.stop_note else ""),
            stop_text=stop_text(reason, self.provider_error if reason.startswith("provider_") else None),
            provider_error=self.provider_error, candidates=sum(1 for n in nodes if n.code.strip()),
        )
