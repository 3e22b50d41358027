"""The records of a tuning session: its config, its nodes, and the fitness of a verdict.

Usage: config = SessionConfig(session_id="s1", spec_path="examples/specs/relu.py", budget=8)
       fit, basis = fitness(verdict.to_dict())
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field

from agent_client.proposals import NodeView

# Why a session stopped, in the words every view uses (the short code stays in result.json and the store).
STOP_REASONS = {
    "budget": "the candidate budget (--budget) was spent",
    "time": "the time budget (--time-budget) was spent",
    "stalled": "no better candidate came in the last --stall candidates",
    "target": "the best candidate reached --target-speedup",
    "provider_exhausted": "the provider had no new candidates",
    "provider_failed": "the provider failed",
    "interrupted": "it was interrupted",
    "running": "not finished: it is running, or its process was killed (kkb tune --resume continues it)",
}


def stop_text(reason: str | None, detail: str | None = None) -> str:
    """The stop reason in plain words, with what the provider said where there is a detail."""
    text = STOP_REASONS.get(reason or "running", reason or "")
    return f"{text}: {detail}" if detail else text


def interpreter_note(device: str) -> str:
    """What times mean where the harness runs Triton's interpreter (empty on a GPU)."""
    if str(device).startswith("cuda"):
        return ""
    return ("times on the CPU are the Triton interpreter's: they compare candidates with each other and "
            "are not GPU times")


FAILED_STATUSES = ("wrong", "compile_error", "runtime_error", "illegal_memory_access", "timeout",
                   "crashed", "rejected", "malformed", "eval_error")


@dataclass
class SessionConfig:
    """Everything `kkb tune --resume ID` needs to continue a session without other flags."""

    session_id: str
    spec_path: str  # absolute path of the KernelBench-format spec
    backend: str = "triton"
    target: str = "h200"  # accelerator id whose facts shape the prompts (and peaks, on a GPU)
    device: str = "cpu"  # where the harness evaluates: "cpu" (Triton interpreter) or "cuda:N"
    devices: list[str] | None = None  # several devices of this host (one timing worker each); None = [device]
    ray_address: str | None = None  # evaluate on the Ray cluster there instead of this host's devices
    provider: str = "offline"
    provider_options: dict = field(default_factory=dict)  # e.g. replay's {"source": "SESSION_ID"}
    policy: str = "greedy"
    policy_options: dict = field(default_factory=dict)
    budget: int = 16  # candidates (nodes) in all, drafts included
    time_budget_s: float | None = None  # wall time of the session, over all its runs (a resume continues it)
    stall_nodes: int | None = None  # stop after this many evaluated nodes without a new best (or any pass)
    target_speedup: float | None = None  # stop once the best fitness reaches it
    drafts: int = 4  # independent candidates before the first expansion
    proposals_per_step: int = 2  # candidates asked of the provider per request
    eval_workers: int = 1  # candidates in the harness at once (waiting, compiling or being timed)
    compile_workers: int = 0  # harness processes compiling candidates ahead of timing (GPU: 2)
    token_budget: int = 6000  # knowledge part of each prompt
    retrieval: bool = True  # False: prompts without passages and library kernels (`kkb tune --no-retrieval`)
    peaks: str = "facts"  # the harness's peaks: "facts" of the target, or "measured" on the device
    iteration_token_budget: int = 3000  # parent code, diagnostics, failure summaries
    seed: int = 0
    kb_url: str | None = None
    home: str | None = None  # KKB_HOME of the embedded store, when kb_url is None
    write_back: bool = True
    write_back_min_speedup: float = 1.0  # winners must beat the baseline (torch.compile, else eager)
    eval_options: dict = field(default_factory=dict)  # EvalConfig fields passed to the harness
    command: str = ""  # the command line that started the session

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> SessionConfig:
        raw = json.loads(text)
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in raw.items() if k in known})


@dataclass
class Node:
    """One candidate in the search graph."""

    id: str  # "n0007": unique within the session, ordered by creation
    step: int  # the provider request that produced it
    parent_ids: list[str]
    kind: str  # "draft" | "expand"
    code: str
    response: str  # the provider's raw output
    meta: dict
    status: str = "pending"  # pending | evaluated | malformed
    verdict: dict | None = None  # harness Verdict.to_dict() (or a malformed/eval_error stand-in)
    fitness: float = 0.0  # speedup over the baseline; 0 for anything not passed
    fitness_basis: str | None = None  # "compile" | "eager" (compile baseline skipped) | None
    created_at: float = 0.0  # unix seconds
    evaluated_at: float | None = None

    @property
    def outcome(self) -> str:
        """The verdict's status ("passed", "wrong", ...), "malformed", or "pending"."""
        if self.status == "pending":
            return "pending"
        return str((self.verdict or {}).get("status", self.status))

    def view(self) -> NodeView:
        return NodeView(node_id=self.id, code=self.code, verdict=dict(self.verdict or {}),
                        tunables=dict(self.meta.get("tunables") or {}), meta=dict(self.meta),
                        fitness=self.fitness)


def fitness(verdict: dict) -> tuple[float, str | None]:
    """Speedup over torch.compile; over eager when the compile baseline was skipped; 0 unless passed."""
    if verdict.get("status") != "passed":
        return 0.0, None
    if verdict.get("speedup_vs_compile") is not None:
        return float(verdict["speedup_vs_compile"]), "compile"
    if verdict.get("speedup_vs_eager") is not None:
        return float(verdict["speedup_vs_eager"]), "eager"
    return 0.0, None


def speedup_text(value: float | None) -> str:
    """A speedup for people: 3 significant digits, so an interpreter's 0.00037x does not read 0.000x."""
    return "-" if value is None else f"{value:.3g}x"


def stand_in_verdict(status: str, reasons: list[str]) -> dict:
    """A verdict-shaped dict for a node the harness never judged (malformed reply, evaluator crash)."""
    return {"status": status, "reasons": reasons, "latency_ms": None, "speedup_vs_eager": None,
            "speedup_vs_compile": None, "limit_kind": None, "fraction_of_limit": None, "diagnostics": {}}


def against_baseline(latency_ms: float | None, compile_ms: float | None, eager_ms: float | None,
                     who: str) -> str:
    """One sentence with both times: `who` against torch.compile (against eager where compile was not timed)."""
    if latency_ms is not None and compile_ms is not None:
        if latency_ms <= compile_ms:
            return (f"{who} runs in {latency_ms:.4g} ms against torch.compile's {compile_ms:.4g} ms "
                    f"({speedup_text(compile_ms / latency_ms)}): use it.")
        return (f"torch.compile is faster: {compile_ms:.4g} ms against {who}'s {latency_ms:.4g} ms "
                f"({speedup_text(compile_ms / latency_ms)}); keep torch.compile.")
    if latency_ms is not None and eager_ms is not None:
        return (f"{who} runs in {latency_ms:.4g} ms against eager's {eager_ms:.4g} ms "
                f"({speedup_text(eager_ms / latency_ms)}); torch.compile was not timed here, so nothing is claimed "
                "against it.")
    return f"{who} was not timed."


def conclusion(best: Node | None, nodes: list[Node]) -> str:
    """What a user should do after the session, with both timings: never a winner slower than torch.compile."""
    routes = next((n.meta for n in nodes if n.meta.get("general_lowering_only") is not None), None)
    lowering_only = bool(routes and routes.get("general_lowering_only"))
    served = (" Served by the general lowering alone: no library kernel fits this spec ("
              + "; ".join(routes.get("unserved") or []) + ").") if lowering_only else ""
    if best is None:
        return "No candidate passed: keep the reference (or torch.compile)." + served
    v = best.verdict or {}
    route = best.meta.get("route_id")
    who = f"{best.id}" + (f" (route {route})" if route else "")
    if v.get("latency_ms") is None:
        return f"{who} is the best candidate ({speedup_text(best.fitness)})." + served
    return against_baseline(v.get("latency_ms"), v.get("compile_ms"), v.get("eager_ms"), who) + served
