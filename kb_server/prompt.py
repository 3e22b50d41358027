"""The retrieval-augmented prompt builder: spec + accelerator + backend -> PromptBundle.

Usage: from kb_server.prompt import build_prompt; build_prompt(store, spec_source, "h100", "triton")

The spec is never executed: its ops are read from its AST (torch.* and F.* calls, nn.* modules,
tensor methods, the @ operator) and turned into retrieval queries. Templates are data in
kb_server/prompts/prompt.toml. Tokens are estimated with `estimate_tokens` (tiktoken's cl100k_base
when installed, else ceil(chars / 4)); when the prompt is over the budget the lowest-ranked passages
go first, then the lowest-ranked example kernels.
"""

from __future__ import annotations

import ast
import math
import re
import tomllib
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from kb_server.factlookup import fact_fields, resolve_accelerator
from kb_server.facts import AcceleratorFacts
from kb_server.schemas import Hit, KernelRecord, SearchFilters

if TYPE_CHECKING:  # the store imports heavy things (chromadb, torch); the builder only calls it
    from kb_server.store import Store

TEMPLATE_PATH = Path(__file__).parent / "prompts" / "prompt.toml"
BACKENDS = ("triton", "cuda", "cute", "hip")
PASSAGES_PER_QUERY = 4  # per op query; several ops share a budget, so a few each
EXAMPLE_KERNELS = 2
MAX_QUERIES = 8  # an op-heavy spec should not turn into dozens of searches


class PromptSection(BaseModel):
    name: str  # hardware_facts | passages | example_kernels | rules | task
    text: str
    sources: list[str]  # for passages: one per passage, in order
    tokens: int


class PromptBundle(BaseModel):
    text: str
    sections: list[PromptSection]
    tokens: int


class PromptError(ValueError):
    """Bad input to the builder; `field` names the argument."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


@cache
def _tokenizer():
    try:
        import tiktoken
    except ImportError:
        return None
    try:
        return tiktoken.get_encoding("cl100k_base")
    except Exception:  # noqa: BLE001  (no cached encoding and no network: fall back to chars / 4)
        return None


def estimate_tokens(text: str) -> int:
    """Tokens of `text`: tiktoken cl100k_base if installed, else ceil(len / 4) (~English prose)."""
    enc = _tokenizer()
    return len(enc.encode(text)) if enc is not None else math.ceil(len(text) / 4)


@cache
def load_template(path: Path = TEMPLATE_PATH) -> dict:
    return tomllib.loads(path.read_text(encoding="utf-8"))


# ---- ops from the spec's AST -------------------------------------------------------------------

_INPUT_FUNCTIONS = {"get_inputs", "get_init_inputs"}
_CREATION = {"randn", "rand", "randint", "zeros", "ones", "empty", "full", "arange", "linspace", "tensor",
             "manual_seed", "randn_like", "rand_like", "zeros_like", "ones_like", "empty_like", "full_like",
             "device", "dtype", "no_grad", "Parameter", "Module", "Sequential", "ModuleList", "is_tensor"}
_NOT_OPS = {"size", "dim", "to", "cuda", "cpu", "item", "float", "half", "bfloat16", "double", "contiguous",
            "view", "reshape", "unsqueeze", "squeeze", "expand", "expand_as", "numel", "data_ptr", "type",
            "detach", "clone", "stride", "append", "extend", "items", "keys", "values", "format", "join",
            "register_buffer", "parameters", "forward", "__init__", "copy_", "fill_", "zero_", "flatten"}
_MODULE_NAMES = {"ReLU": "relu", "GELU": "gelu", "SiLU": "silu", "LeakyReLU": "leaky_relu", "ReLU6": "relu6",
                 "PReLU": "prelu", "ELU": "elu", "SELU": "selu", "GLU": "glu", "RMSNorm": "rms_norm",
                 "LSTM": "lstm", "GRU": "gru", "RNN": "rnn"}


def spec_ops(spec_source: str) -> list[str]:
    """The torch ops a KernelBench-format spec uses, in order of first appearance (never runs it)."""
    try:
        tree = ast.parse(spec_source)
    except SyntaxError as exc:
        raise PromptError("spec_source", f"the spec is not valid Python: line {exc.lineno}: {exc.msg}") from exc
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes; absurdly deep nesting
        raise PromptError("spec_source", f"the spec cannot be parsed: {type(exc).__name__}: {exc}") from exc
    aliases = _import_aliases(tree)
    ops: list[str] = []
    for node in _walk_skipping_inputs(tree):
        op = None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            op = "matmul"
        elif isinstance(node, ast.Call):
            op = _call_op(node.func, aliases)
        if op and op not in ops:
            ops.append(op)
    return ops


def _import_aliases(tree: ast.AST) -> dict[str, str]:
    aliases = {"torch": "torch", "F": "torch.nn.functional", "nn": "torch.nn"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                aliases[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("torch"):
            for a in node.names:
                aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    return aliases


def _walk_skipping_inputs(tree: ast.AST):
    stack = [tree]
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef) and node.name in _INPUT_FUNCTIONS:
            continue
        yield node
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _dotted(node: ast.expr) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def _call_op(func: ast.expr, aliases: dict[str, str]) -> str | None:
    parts = _dotted(func)
    if parts is None:  # e.g. (a + b).sum(): a method on an expression
        return _method_op(func.attr) if isinstance(func, ast.Attribute) else None
    head = aliases.get(parts[0])
    if head is None or not head.startswith("torch"):
        # a local name: x.softmax(...) is a tensor method; self.conv(x) / print(...) are not ops
        if len(parts) == 2 and parts[0] != "self":
            return _method_op(parts[1])
        return None
    full = ".".join([head, *parts[1:]])
    name = full.rsplit(".", 1)[-1]
    if name in _CREATION or name in _NOT_OPS:
        return None
    if full.startswith("torch.nn.") and not full.startswith("torch.nn.functional") and name[:1].isupper():
        return _MODULE_NAMES.get(name) or re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()
    if name[:1].isupper():  # a class of torch that is not a module (torch.Size, ...)
        return None
    return name


def _method_op(name: str) -> str | None:
    if name in _NOT_OPS or name.startswith("_"):
        return None
    return name.rstrip("_") or None


# ---- the builder ------------------------------------------------------------------------------


def build_prompt(store: Store, spec_source: str, accelerator: str, backend: str,
                 token_budget: int = 6000, extra_queries: list[str] | tuple[str, ...] = ()) -> PromptBundle:
    """A retrieval-augmented prompt for writing `backend` code for `spec_source` on `accelerator`."""
    if backend not in BACKENDS:
        raise PromptError("backend", f"unknown backend {backend!r}; one of: {', '.join(BACKENDS)}")
    if token_budget <= 0:
        raise PromptError("token_budget", f"token_budget must be positive, got {token_budget}")
    try:
        acc = resolve_accelerator(store.accelerators(), accelerator)
    except LookupError as exc:
        raise PromptError("accelerator", str(exc)) from exc
    tpl = load_template()
    ops = spec_ops(spec_source)
    queries = _queries(tpl, ops, acc, backend, list(extra_queries))
    hits = _ranked_hits(store, queries, acc.id)
    kernels = store.search_kernels(" ".join(ops) or spec_source[:200], k=EXAMPLE_KERNELS, backend=backend)

    fixed = {
        "hardware_facts": _hardware_section(tpl, acc),
        "rules": _rules_section(tpl, backend),
        "task": _task_section(tpl, spec_source, acc, backend, ops),
    }
    ops_text = ", ".join(ops) or "none found"
    sep = tpl["separator"]

    def assemble(n_hits: int, n_kernels: int) -> list[PromptSection]:
        parts = {**fixed, "passages": _passages_section(tpl, hits[:n_hits], ops_text),
                 "example_kernels": _kernels_section(tpl, kernels[:n_kernels], backend)}
        return [parts[name] for name in tpl["order"]]

    n_hits, n_kernels = len(hits), len(kernels)
    sections = assemble(n_hits, n_kernels)
    while estimate_tokens(sep.join(s.text for s in sections)) > token_budget:
        if n_hits:
            n_hits -= 1
        elif n_kernels:
            n_kernels -= 1
        else:
            need = estimate_tokens(sep.join(s.text for s in sections))
            raise PromptError("token_budget", f"token_budget {token_budget} is below the {need} tokens that "
                              "the hardware facts, rules and spec need; raise it")
        sections = assemble(n_hits, n_kernels)
    text = sep.join(s.text for s in sections)
    return PromptBundle(text=text, sections=sections, tokens=estimate_tokens(text))


def _queries(tpl: dict, ops: list[str], acc: AcceleratorFacts, backend: str, extra: list[str]) -> list[str]:
    q = tpl["queries"]
    out = [q["op"].format(op=op.replace("_", " "), backend=backend) for op in ops]
    out.append(q["hardware"].format(accelerator_name=acc.name))
    out += [e for e in extra if e.strip()]
    return list(dict.fromkeys(out))[:MAX_QUERIES]


def _ranked_hits(store: Store, queries: list[str], accelerator: str) -> list[Hit]:
    """Round-robin over the queries' result lists (rank 1 of each, then rank 2...), without repeats."""
    filters = SearchFilters(accelerator=accelerator)
    lists = [store.search(q, k=PASSAGES_PER_QUERY, filters=filters) for q in queries]
    seen: set[str] = set()
    out: list[Hit] = []
    for rank in range(PASSAGES_PER_QUERY):
        for hits in lists:
            if rank < len(hits) and hits[rank].chunk.id not in seen:
                seen.add(hits[rank].chunk.id)
                out.append(hits[rank])
    return out


def _section(name: str, text: str, sources: list[str]) -> PromptSection:
    return PromptSection(name=name, text=text, sources=sources, tokens=estimate_tokens(text))


def _hardware_section(tpl: dict, acc: AcceleratorFacts) -> PromptSection:
    b = tpl["blocks"]
    lines, sources = [], []
    for field, fact in fact_fields(acc).items():
        note = f" ({fact.note})" if fact.note else ""
        source = str(fact.source)
        if source == "measured":
            source = f"measured {fact.measured_on}: {fact.method}"
        lines.append(b["fact_line"].format(label=field.replace("_", " "), value=f"{fact.value:g}",
                                           unit=fact.unit, note=note, source=source))
        if source not in sources:
            sources.append(source)
    text = b["hardware_facts"].format(accelerator_name=acc.name, architecture=acc.architecture,
                                      vendor=acc.vendor, fact_lines="\n".join(lines))
    return _section("hardware_facts", text, sources)


def _passage_source(hit: Hit) -> str:
    c = hit.chunk
    return c.source + (f" ({', '.join(c.source_urls)})" if c.source_urls else "")


def _passages_section(tpl: dict, hits: list[Hit], ops_text: str) -> PromptSection:
    b = tpl["blocks"]
    blocks = [b["passage"].format(rank=i + 1, heading=" > ".join(h.chunk.heading_path) or h.chunk.title,
                                  source=_passage_source(h), text=h.chunk.text.strip())
              for i, h in enumerate(hits)]
    text = b["passages"].format(ops=ops_text, passage_blocks="\n\n".join(blocks) or b["no_passages"])
    return _section("passages", text, [_passage_source(h) for h in hits])


def _kernels_section(tpl: dict, kernels: list[KernelRecord], backend: str) -> PromptSection:
    b = tpl["blocks"]
    blocks = [b["example_kernel"].format(name=k.name, op_signature=k.op_signature, op_family=k.op_family,
                                         backend=k.backend, description=k.description, source=k.source.strip())
              for k in kernels]
    text = b["example_kernels"].format(backend=backend, kernel_blocks="\n\n".join(blocks) or b["no_kernels"])
    return _section("example_kernels", text, [k.path or f"kernel:{k.id}" for k in kernels])


def _rules_section(tpl: dict, backend: str) -> PromptSection:
    rules = tpl["rules"]["common"] + tpl["rules"].get(backend, [])
    lines = "\n".join(tpl["blocks"]["rule_line"].format(rule=r) for r in rules)
    return _section("rules", tpl["blocks"]["rules"].format(rule_lines=lines), [])


def _task_section(tpl: dict, spec_source: str, acc: AcceleratorFacts, backend: str,
                  ops: list[str]) -> PromptSection:
    text = tpl["blocks"]["task"].format(backend=backend, accelerator_name=acc.name,
                                        ops=", ".join(ops) or "none found", spec_source=spec_source.strip())
    return _section("task", text, [])
