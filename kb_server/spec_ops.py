"""The ops of a KernelBench-format spec, read from its AST (never run), and the op family they suggest.

Usage: from kb_server.spec_ops import spec_ops, op_family; ops = spec_ops(source); op_family(source, rules)

Ops are torch.* and F.* calls, nn.* modules constructed in `__init__`, tensor methods, and the `@`
operator, in order of first appearance; `get_inputs`/`get_init_inputs` and the rest of `__init__` are
set-up, not the computation. With `arithmetic=True` the operators + - * / ** and unary minus count too
(add, sub, mul, div, pow, neg): they tell an RMS norm (mean, pow, rsqrt) from a layer norm (mean, sub,
pow). The family rules are data (kb_server/prompts/prompt.toml, [[families]]).
"""

from __future__ import annotations

import ast
import re
import threading


class PromptError(ValueError):
    """Bad input to the prompt builder; `field` names the argument."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


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


# floor division is left out: in specs it is index arithmetic (x.shape[-1] // 2)
_ARITHMETIC = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div", ast.Pow: "pow"}


# CPython 3.11's AST converter keeps one recursion counter for all threads, so two requests parsing at
# once can fail on valid source; the server's parses take turns (the harness does the same for its own)
_PARSE_LOCK = threading.Lock()


def parse_python(source: str, filename: str = "<unknown>") -> ast.Module:
    with _PARSE_LOCK:
        return ast.parse(source, filename=filename)


def parse_spec(spec_source: str) -> ast.Module:
    try:
        return parse_python(spec_source)
    except SyntaxError as exc:
        raise PromptError("spec_source", f"the spec is not valid Python: line {exc.lineno}: {exc.msg}") from exc
    except (ValueError, RecursionError, MemoryError) as exc:  # NUL bytes; absurdly deep nesting
        raise PromptError("spec_source", f"the spec cannot be parsed: {type(exc).__name__}: {exc}") from exc


def spec_ops(spec_source: str, arithmetic: bool = False) -> list[str]:
    """The torch ops a KernelBench-format spec uses, in order of first appearance (never runs it)."""
    tree = parse_spec(spec_source)
    aliases = _import_aliases(tree)
    ops: list[str] = []
    for node, in_init in _walk_computation(tree):
        op = None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
            op = "matmul"
        elif arithmetic and not in_init and isinstance(node, ast.BinOp | ast.AugAssign):
            op = _ARITHMETIC.get(type(node.op))
        elif arithmetic and not in_init and isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            op = None if isinstance(node.operand, ast.Constant) else "neg"
        elif isinstance(node, ast.Call):
            op = _call_op(node.func, aliases, modules_only=in_init)
        if op and op not in ops:
            ops.append(op)
    return ops


def op_family(ops: list[str], rules: list[dict]) -> str | None:
    """The first family whose rule the ops meet: `any_of` (one of these ops) or `all_of` (all of them)."""
    have = set(ops)
    for rule in rules:
        if have & set(rule.get("any_of", ())) or (rule.get("all_of") and set(rule["all_of"]) <= have):
            return rule["family"]
    return None


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


def _walk_computation(tree: ast.AST):
    """(node, inside __init__) in source order, without the input functions."""
    stack = [(tree, False)]
    while stack:
        node, in_init = stack.pop()
        if isinstance(node, ast.FunctionDef) and node.name in _INPUT_FUNCTIONS:
            continue
        yield node, in_init
        inner = in_init or (isinstance(node, ast.FunctionDef) and node.name == "__init__")
        stack.extend((child, inner) for child in reversed(list(ast.iter_child_nodes(node))))


def _dotted(node: ast.expr) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return None


def _call_op(func: ast.expr, aliases: dict[str, str], modules_only: bool = False) -> str | None:
    """The op a call makes; in `__init__` (modules_only) only the nn modules it constructs count."""
    parts = _dotted(func)
    if parts is None:  # e.g. (a + b).sum(): a method on an expression
        return _method_op(func.attr) if isinstance(func, ast.Attribute) and not modules_only else None
    head = aliases.get(parts[0])
    if head is None or not head.startswith("torch"):
        # a local name: x.softmax(...) is a tensor method; self.conv(x) / print(...) are not ops
        if len(parts) == 2 and parts[0] != "self" and not modules_only:
            return _method_op(parts[1])
        return None
    full = ".".join([head, *parts[1:]])
    name = full.rsplit(".", 1)[-1]
    if name in _CREATION or name in _NOT_OPS:
        return None
    if full.startswith("torch.nn.") and not full.startswith("torch.nn.functional") and name[:1].isupper():
        return _MODULE_NAMES.get(name) or re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()
    if name[:1].isupper() or modules_only:  # a class of torch that is not a module (torch.Size, ...); set-up
        return None
    return name


def _method_op(name: str) -> str | None:
    if name in _NOT_OPS or name.startswith("_"):
        return None
    return name.rstrip("_") or None


