"""Per-step prompts: the knowledge sections from the KB plus the iteration sections from templates.

Usage: builder = PromptBuilder(kb, spec_source, accelerator="h200", backend="triton")
       step = builder.build(parent=node, failures=failed_nodes, best=best_node, index=1, total=4)
       step.text, step.cache_prefix_chars, step.system

The knowledge part (KnowledgeBase.prompt -> kb_server.prompt.build_prompt) is stable for a spec and
a bottleneck, so it is the cached prefix; the iteration part (parent code, verdict, failures) follows.
On an expansion the parent's measured bottleneck (agent_client.bottleneck) or its failure picks extra
retrieval queries. With `retrieval=False` the knowledge part holds the facts, rules and task only.
Tokens are counted with the knowledge base's tokenizer (kb_server.tokens) when it is installed.
Templates are data: agent_client/prompts/iteration.toml.
"""

from __future__ import annotations

import json
import math
import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from agent_client.bottleneck import classify
from agent_client.session.records import Node

TEMPLATE_PATH = Path(__file__).parent / "prompts" / "iteration.toml"
MAX_FAILURE_LINES = 8
REASON_CHARS = 240  # one failure reason, trimmed: enough to recognise it, short enough to list many


@cache
def load_templates(path: Path = TEMPLATE_PATH) -> dict:
    return tomllib.loads(path.read_text(encoding="utf-8"))


@cache
def _counter():
    try:
        from kb_server.tokens import get_counter

        counter = get_counter()
        counter.count("")  # loads the tokenizer now, so a missing one is found here
        return counter
    except Exception:  # noqa: BLE001  the KB package or its model is absent (a remote KB only): chars / 4
        return None


def estimate_tokens(text: str) -> int:
    """Tokens as the knowledge base counts them (kb_server.tokens), else ceil(chars / 4)."""
    counter = _counter()
    return counter.count(text) if counter is not None else math.ceil(len(text) / 4)


@dataclass(frozen=True)
class StepPrompt:
    system: str  # the system text (role, answer format)
    text: str  # the whole user prompt: knowledge part + iteration part
    cache_prefix_chars: int  # text[:cache_prefix_chars] is the stable knowledge part
    extra_queries: tuple[str, ...]  # what was retrieved for the parent's bottleneck
    tokens: int
    sources: dict[str, list[str]] = field(default_factory=dict)  # knowledge section -> the sources it used
    bottleneck: str | None = None  # the parent's bottleneck class (agent_client.bottleneck), on expansions


def bottleneck_queries(verdict: dict | None, backend: str) -> tuple[str, ...]:
    """Retrieval queries for what limited (or broke) a parent: its bottleneck class, or its failure class."""
    if not verdict:
        return ()
    q = load_templates()["bottleneck_queries"]
    status = verdict.get("status")
    out = []
    if status == "passed":
        kind = classify(verdict).kind
        if kind in q:
            out.append(q[kind])
    elif status in q:
        out.append(q[status].format(backend=backend))
        reasons = verdict.get("reasons") or []
        if reasons:
            out.append(str(reasons[0])[:160])
    return tuple(out)


class PromptBuilder:
    def __init__(self, kb, spec_source: str, accelerator: str, backend: str, token_budget: int = 6000,
                 iteration_token_budget: int = 3000, accelerator_name: str | None = None, tools: bool = False,
                 retrieval: bool = True):
        self.kb = kb
        self.retrieval = retrieval
        self.spec_source = spec_source
        self.accelerator = accelerator
        self.backend = backend
        self.token_budget = token_budget
        self.iteration_token_budget = iteration_token_budget
        self.tpl = load_templates()
        name = accelerator_name or accelerator
        self.system = self.tpl["system"]["text"].format(backend=backend, accelerator_name=name)
        if tools:
            self.system += "\n\n" + self.tpl["system"]["tools"]
        self._knowledge: dict[tuple[str, ...], tuple[str, dict[str, list[str]]]] = {}  # queries -> text, sources

    def knowledge(self, extra_queries: tuple[str, ...] = ()) -> str:
        return self._bundle(extra_queries)[0]

    def _bundle(self, extra_queries: tuple[str, ...]) -> tuple[str, dict[str, list[str]]]:
        if not self.retrieval:
            extra_queries = ()  # nothing is retrieved: one knowledge part for every step
        if extra_queries not in self._knowledge:
            kwargs = {} if self.retrieval else {"retrieval": False}  # the old KB interface had no switch
            bundle = self.kb.prompt(self.spec_source, self.accelerator, self.backend,
                                    token_budget=self.token_budget, extra_queries=extra_queries, **kwargs)
            sources = {s.name: list(s.sources) for s in bundle.sections if s.sources}
            self._knowledge[extra_queries] = (bundle.text, sources)
        return self._knowledge[extra_queries]

    def build(self, parent: Node | None = None, failures: list[Node] = (), best: Node | None = None,
              index: int = 1, total: int = 1) -> StepPrompt:
        extra = bottleneck_queries(parent.verdict if parent else None, self.backend) if self.retrieval else ()
        knowledge, sources = self._bundle(extra)
        b = self.tpl["blocks"]
        sep = self.tpl["separator"]
        head = [b["expand"].format(node_id=parent.id, goal=_goal(b, parent)) if parent
                else b["draft"].format(index=index, total=total)]
        tail = [b["answer"]]
        if best is not None and best.fitness > 0 and (parent is None or best.id != parent.id):
            tail.insert(0, b["best"].format(node_id=best.id, speedup=best.fitness,
                                            basis=_basis(best.fitness_basis)))
        budget = self.iteration_token_budget - estimate_tokens(sep.join(head + tail))
        middle: list[str] = []
        if parent is not None:
            diag = _diagnostics_block(b, parent)
            budget -= estimate_tokens(diag)
            middle.append(b["parent"].format(node_id=parent.id, code=_trim_code(parent.code, budget)))
            middle.append(diag)
            budget -= estimate_tokens(middle[0])
        failure_lines = _failure_lines(b, failures, exclude=parent.id if parent else None)
        while failure_lines and estimate_tokens(b["failures"].format(failure_lines="\n".join(failure_lines))) > budget:
            failure_lines.pop()
        if failure_lines:
            middle.append(b["failures"].format(failure_lines="\n".join(failure_lines)))
        iteration = sep.join(head + middle + tail)
        text = knowledge + sep + iteration
        bottleneck = classify(parent.verdict).kind if parent is not None else None
        return StepPrompt(system=self.system, text=text, cache_prefix_chars=len(knowledge) + len(sep),
                          extra_queries=extra, tokens=estimate_tokens(text), sources=sources, bottleneck=bottleneck)


def _basis(basis: str | None) -> str:
    return "torch.compile" if basis == "compile" else "eager PyTorch (compile baseline skipped)"


def _goal(b: dict, node: Node) -> str:
    v = node.verdict or {}
    if v.get("status") == "passed":
        bottleneck = classify(v)
        fraction = v.get("fraction_of_limit")
        why = bottleneck.reason if fraction is None else f"{fraction:.0%} of the hardware limit; {bottleneck.reason}"
        return b["goal_passed"].format(speedup=node.fitness, basis=_basis(node.fitness_basis),
                                       bottleneck=bottleneck.label, why=why)
    return b["goal_failed"].format(status=v.get("status", node.status))


def _diagnostics_block(b: dict, node: Node) -> str:
    v = node.verdict or {}
    # host_launch_ms: the host time of one call; past latency_ms the kernel is launch-bound in a loop
    keys = ("latency_ms", "host_launch_ms", "eager_ms", "compile_ms", "speedup_vs_eager", "speedup_vs_compile",
            "fraction_of_limit", "limit_kind")
    measurements = ", ".join(f"{k}={_fmt(v[k])}" for k in keys if v.get(k) is not None) or "(not timed)"
    reasons = "\n".join(f"- {str(r)[:600]}" for r in (v.get("reasons") or [])) or "- none"
    diagnostics = json.dumps(v.get("diagnostics") or {}, default=str)[:800]
    return b["diagnostics"].format(node_id=node.id, status=v.get("status", node.status),
                                   measurements=measurements, reasons=reasons, diagnostics=diagnostics)


def _fmt(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _trim_code(code: str, budget_tokens: int) -> str:
    budget_tokens = max(100, budget_tokens)
    if estimate_tokens(code) <= budget_tokens:
        return code
    counter = _counter()
    kept = counter.truncate(code, budget_tokens) if counter is not None else code[: budget_tokens * 4]
    return kept + "\n# ... (trimmed to fit the prompt budget)"


def _failure_lines(b: dict, failures: list[Node], exclude: str | None) -> list[str]:
    seen: set[str] = set()
    lines = []
    for node in reversed(list(failures)):  # most recent first
        if node.id == exclude:
            continue
        v = node.verdict or {}
        reason = str((v.get("reasons") or ["no reason given"])[0]).splitlines()[0][:REASON_CHARS]
        key = f"{v.get('status')}:{reason}"
        if key in seen:
            continue
        seen.add(key)
        lines.append(b["failure_line"].format(node_id=node.id, status=v.get("status", node.status), reason=reason))
        if len(lines) >= MAX_FAILURE_LINES:
            break
    return lines
