"""Tools a model may call during a proposal: search the KB, read hardware facts, run the harness.

Usage: TOOLS (Anthropic tool definitions); run_tool(name, args, request, state) -> (text, is_error)

Each tool answers with short text meant for the model. Evaluating a candidate is expensive, so a
proposal may do it at most `MAX_EVALUATIONS` times.
"""

from __future__ import annotations

import json

from agent_client.proposals import ProposalRequest

MAX_EVALUATIONS = 2  # harness runs one proposal's tool loop may ask for
PASSAGE_CHARS = 1200
KERNEL_CHARS = 3000

TOOLS = [
    {"name": "search_knowledge_base",
     "description": "Search the hardware knowledge base (architecture guides, ISA notes, tuning playbooks). "
                    "Returns the best passages with their sources.",
     "input_schema": {"type": "object", "properties": {
         "query": {"type": "string", "description": "what to look for, in a few words"},
         "k": {"type": "integer", "description": "how many passages (1-8)", "minimum": 1, "maximum": 8}},
         "required": ["query"]}},
    {"name": "hardware_facts",
     "description": "The structured, sourced numbers of one accelerator (bandwidth, peak FLOP/s, caches...).",
     "input_schema": {"type": "object", "properties": {
         "accelerator": {"type": "string", "description": "accelerator id, e.g. h200"}},
         "required": ["accelerator"]}},
    {"name": "search_kernels",
     "description": "Find winning kernels in the library that are close to a description.",
     "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}},
    {"name": "evaluate_candidate",
     "description": "Run a complete candidate file (defining ModelNew) through the benchmark harness on this "
                    "spec: correctness against the reference, then timing. Returns the verdict.",
     "input_schema": {"type": "object", "properties": {"code": {"type": "string"}}, "required": ["code"]}},
]


def run_tool(name: str, args: dict, request: ProposalRequest, state: dict) -> tuple[str, bool]:
    """(answer text, is_error). `state` carries counts across one proposal's turns."""
    try:
        if name == "search_knowledge_base":
            k = max(1, min(8, int(args.get("k", 4))))
            hits = request.kb.search(str(args["query"]), k=k)
            return "\n\n".join(
                f"[{i + 1}] {' > '.join(h.chunk.heading_path) or h.chunk.title} (source: {h.chunk.source})\n"
                f"{h.chunk.text[:PASSAGE_CHARS]}" for i, h in enumerate(hits)) or "no passages matched", False
        if name == "hardware_facts":
            facts = request.kb.accelerator(str(args.get("accelerator") or request.accelerator))
            return json.dumps(facts.model_dump(mode="json"), indent=None)[:6000], False
        if name == "search_kernels":
            kernels = request.kb.search_kernels(str(args["query"]), k=2, backend=request.backend)
            return "\n\n".join(f"### {k.name} ({k.op_family}: {k.op_signature})\n{k.source[:KERNEL_CHARS]}"
                               for k in kernels) or "no library kernel matched", False
        if name == "evaluate_candidate":
            state["evaluations"] = state.get("evaluations", 0) + 1
            if state["evaluations"] > MAX_EVALUATIONS:
                return f"evaluation limit reached ({MAX_EVALUATIONS} per answer); give your final answer", True
            from agent_client.session.evaluator import HarnessEvaluator, default_eval_options

            evaluate = HarnessEvaluator(request.spec_path, request.backend, request.device,
                                        default_eval_options(request.device), pool=False)
            verdict = evaluate(str(args["code"]))
            keep = ("status", "reasons", "latency_ms", "speedup_vs_eager", "speedup_vs_compile",
                    "fraction_of_limit", "limit_kind")
            return json.dumps({k: verdict.get(k) for k in keep}, default=str), False
        return f"unknown tool {name!r}; the tools are {[t['name'] for t in TOOLS]}", True
    except Exception as exc:  # noqa: BLE001 - a tool failure goes back to the model, it does not end the proposal
        return f"tool {name} failed: {type(exc).__name__}: {exc}", True
