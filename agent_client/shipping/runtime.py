"""The dispatch of an exported kernel: the kernel where its measurements say it wins, the reference elsewhere.

Usage (the code `kkb export-kernel` writes after the candidate; nothing else imports this module):
    _DISPATCH = KkbDispatch(Model, ModelNew, "kkb_export::name_1a2b", DISPATCH, STATE_PATHS, MIN_SPEEDUP,
                            logging.getLogger(__name__))
    out = _DISPATCH.run(inputs, state, init)         # the custom op's implementation
    out = _DISPATCH.reference(inputs, state, init)   # its fake implementation (fake tensors, for torch.compile)

This file is copied as it is into every exported module, so it imports only the standard library and torch.
The op reads no module attributes: parameters and buffers come in as `state` (in STATE_PATHS order), and
`init` names the constructor arguments. A template of the module (built on the meta device, its tensors
removed) gives the forward its structure; the passed tensors are bound to it for the call.

A dispatch key is the constructor arguments, each input's shape, dtype and strides (a plain argument's
value), each parameter's and buffer's shape, dtype and strides (a kernel of the general lowering indexes its
tensors by the strides it was traced with, so another layout of the same shape is another key), and the device name ("NVIDIA H200", "cpu"). The kernel runs where
the table holds a correct measurement of that key on this device whose speedup is at least MIN_SPEEDUP (a
measurement that was only checked, not timed, counts when MIN_SPEEDUP <= 0). Every other key runs the
reference's own forward and says why once at DEBUG level; a key measured only on other devices says so once
per device at WARNING level.
"""

from __future__ import annotations

import ast
import collections
import inspect
import os
import threading

import torch


def _dtype_name(dtype) -> str:
    return str(dtype).removeprefix("torch.")


def _layout(shape, stride) -> tuple:
    """The strides that matter: a dim of size 1 is never stepped along, whatever its stride."""
    return tuple(int(s) if n != 1 else 0 for n, s in zip(shape, stride))


def _contiguous(shape) -> tuple:
    out, step = [], 1
    for n in reversed(tuple(shape)):
        out.append(step)
        step *= max(int(n), 1)
    return tuple(reversed(out))


def _arg_key(value) -> tuple:
    if isinstance(value, torch.Tensor):
        return (tuple(value.shape), _dtype_name(value.dtype), _layout(value.shape, value.stride()))
    return ("value", repr(value))


def _entry_arg_key(desc: dict) -> tuple:
    if "shape" in desc:  # a table written before strides were recorded measured contiguous tensors
        shape = tuple(desc["shape"])
        return (shape, desc["dtype"], _layout(shape, desc.get("stride") or _contiguous(shape)))
    return ("value", repr(desc.get("value")))


def init_key(args: tuple, kwargs: dict, model_cls=None) -> str:
    """The text of constructor arguments as the dispatch table names them: with `model_cls`, every argument
    of its constructor in order, defaults filled in (so `Model(64)` and `Model(64, eps=1e-5)` are one key)."""
    if model_cls is not None:
        try:
            sig = inspect.signature(model_cls.__init__)
            bound = sig.bind(None, *args, **kwargs)
            bound.apply_defaults()
            params = list(sig.parameters.values())[1:]
            if all(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params):
                args, kwargs = tuple(bound.arguments[p.name] for p in params), {}
        except (TypeError, ValueError):  # a constructor these arguments do not fit: named as given
            pass
    return repr((tuple(args), dict(sorted(kwargs.items()))))


class KkbDispatch:
    def __init__(self, model_cls, kernel_cls, op_name: str, table: list[dict], state_paths, min_speedup: float,
                 logger) -> None:
        self.model_cls, self.kernel_cls, self.op_name = model_cls, kernel_cls, op_name
        self.state_paths = tuple(state_paths)
        self.min_speedup = float(min_speedup)
        self.log = logger
        self.table = list(table)
        self.paths_taken: collections.Counter = collections.Counter()  # "kernel" / "reference" -> calls
        self.last_path: str | None = None  # "kernel" or "reference": what the last call ran
        self.last_reason: str = ""
        self._choices: dict = {}  # (key, device name) -> (use the kernel, why)
        self._templates: dict = {}  # init text -> (template module, binders)
        self._objects: dict = {}  # init text -> (args, kwargs) of constructors not written as literals
        self._warned: set = set()
        self._devices: dict = {}
        self._lock = threading.RLock()

    # -- the op's two implementations
    def run(self, inputs: tuple, state: list, init: str):
        use_kernel, why = self.choose(inputs, state, init)
        path = "kernel" if use_kernel else "reference"
        self.paths_taken[path] += 1
        self.last_path, self.last_reason = path, why
        cls = self.kernel_cls if use_kernel else self.model_cls
        return self._fresh(self._call(cls, inputs, state, init), inputs, state)

    def reference(self, inputs: tuple, state: list, init: str):
        out = self._call(self.model_cls, inputs, state, init)
        if isinstance(out, tuple):
            return tuple(t.clone(memory_format=torch.contiguous_format) for t in out)
        return out.clone(memory_format=torch.contiguous_format)

    def where(self) -> dict[str, list[str]]:
        """The table for people: where the kernel wins, where it loses, where it is untested."""
        out: dict[str, list[str]] = {"wins": [], "loses": [], "untested": []}
        for e in self.table:
            shapes = self._shapes(tuple(_entry_arg_key(x) for x in e.get("inputs", ())))
            line = f"{e.get('variant')} init {e.get('init')} [{shapes}] on {e.get('device_name')}"
            if not e.get("correct"):
                out["loses"].append(line + ": wrong")
            elif e.get("speedup") is None:
                out["untested"].append(line + ": checked, not timed")
            else:
                kind = "wins" if e["speedup"] >= 1.0 else "loses"
                out[kind].append(line + f": {e['speedup']:.3g}x over {e.get('basis')}")
        out["untested"].append("any other shape, dtype or device: the reference runs")
        return out

    # -- constructor arguments
    def register_init(self, args: tuple, kwargs: dict) -> str:
        """The init text of a module's constructor arguments (kept in-process when they are not literals)."""
        text = init_key(args, kwargs, self.model_cls)
        try:
            ast.literal_eval(text)
        except (ValueError, SyntaxError):
            text = f"object:{len(self._objects)}:{text[:80]}"
            self._objects[text] = (tuple(args), dict(kwargs))
        return text

    def _init_args(self, init: str) -> tuple[tuple, dict]:
        if init in self._objects:
            return self._objects[init]
        try:
            args, kwargs = ast.literal_eval(init)
        except (ValueError, SyntaxError) as exc:
            raise ValueError(f"{self.op_name}: init {init!r} is not ((args...), {{kwargs}}) as literals") from exc
        return tuple(args), dict(kwargs)

    # -- dispatch
    def device_name(self, device: torch.device) -> str:
        name = self._devices.get(device)
        if name is None:
            name = torch.cuda.get_device_name(device) if device.type == "cuda" else device.type
            self._devices[device] = name
        return name

    def choose(self, inputs: tuple, state: list, init: str) -> tuple[bool, str]:
        """(run the kernel, why) for these arguments; decided once per key and device, then remembered."""
        tensors = [t for t in list(inputs) + list(state) if isinstance(t, torch.Tensor)]
        device = self.device_name(tensors[0].device) if tensors else "cpu"
        key = (init, tuple(_arg_key(x) for x in inputs),
               tuple((p, *_arg_key(t)) for p, t in zip(self.state_paths, state)))
        choice = self._choices.get((key, device))
        if choice is None:
            choice = self._choices[(key, device)] = self._decide(key, device)
        return choice

    def _decide(self, key: tuple, device: str) -> tuple[bool, str]:
        init, inputs, state = key
        here = f"init {init}, inputs [{self._shapes(inputs)}], parameters [{self._shapes(state)}]"
        matches = [e for e in self.table if e.get("init") == init
                   and tuple(_entry_arg_key(x) for x in e.get("inputs", ())) == inputs
                   and tuple((x["path"], *_entry_arg_key(x)) for x in e.get("state", ())) == state]
        if not matches:
            return self._say(False, f"not measured at {here}: the reference runs")
        on_device = [e for e in matches if e.get("device_name") == device]
        if not on_device:
            names = sorted({str(e.get("device_name")) for e in matches})
            why = (f"{self.op_name}: the dispatch table was measured on {', '.join(names)}, not on this {device}: "
                   f"the reference runs (measure here with `kkb bench` on this module)")
            if device not in self._warned:
                self._warned.add(device)
                self.log.warning(why)
            return False, why
        entry = on_device[-1]  # the latest measurement of this key on this device
        if not entry.get("correct"):
            return self._say(False, f"the kernel was wrong at {here} on {device}: the reference runs")
        if device == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
            return self._say(False, "Triton runs on the CPU only through its interpreter (TRITON_INTERPRET=1 "
                                    "before triton is imported): the reference runs")
        speedup = entry.get("speedup")
        if speedup is None:
            ok = self.min_speedup <= 0
            return self._say(ok, f"checked, not timed, at {here} on {device}; MIN_SPEEDUP {self.min_speedup:g}: "
                                 + ("the kernel runs" if ok else "the reference runs"))
        ok = speedup >= self.min_speedup
        return self._say(ok, f"measured {speedup:.3g}x over {entry.get('basis')} at {here} on {device} "
                             f"(MIN_SPEEDUP {self.min_speedup:g}): " + ("the kernel runs" if ok else
                                                                       "the reference runs"))

    def _say(self, use_kernel: bool, why: str) -> tuple[bool, str]:
        self.log.debug("%s: %s", self.op_name, why)
        return use_kernel, why

    @staticmethod
    def _shapes(keys: tuple) -> str:
        parts = []
        for k in keys:
            k = k[1:] if len(k) == 4 else k  # (path, shape, dtype, layout) -> (shape, dtype, layout)
            if k[0] == "value":
                parts.append(k[1])
                continue
            odd = "" if _layout(k[0], _contiguous(k[0])) == k[2] else f" strides {k[2]}"
            parts.append("x".join(map(str, k[0])) + f" {k[1]}{odd}")
        return ", ".join(parts)

    # -- templates: the module's structure without its tensors
    def _template(self, init: str):
        found = self._templates.get(init)
        if found is None:
            args, kwargs = self._init_args(init)
            try:
                with torch.device("meta"):
                    module = self.kernel_cls(*args, **kwargs)
            except Exception:  # noqa: BLE001 - constructors that cannot run on meta run on the CPU
                module = self.kernel_cls(*args, **kwargs)
            binders = []
            for path in self.state_paths:
                *owner_path, leaf = path.split(".")
                owner = module.get_submodule(".".join(owner_path))
                kind = "_parameters" if leaf in owner._parameters else "_buffers"
                getattr(owner, kind)[leaf] = None
                binders.append((getattr(owner, kind), leaf))
            found = self._templates[init] = (module, binders)
        return found

    def _call(self, cls, inputs: tuple, state: list, init: str):
        module, binders = self._template(init)
        with self._lock:
            for (slots, leaf), tensor in zip(binders, state):
                slots[leaf] = tensor
            try:
                return cls.forward(module, *inputs)
            finally:
                for slots, leaf in binders:
                    slots[leaf] = None

    @staticmethod
    def _fresh(out, inputs: tuple, state: list):
        """Outputs as the op promises them: contiguous, and never sharing memory with an argument."""
        ptrs = {t.untyped_storage().data_ptr() for t in list(inputs) + list(state)
                if isinstance(t, torch.Tensor) and t.numel()}

        def own(t):
            if t.numel() and t.untyped_storage().data_ptr() in ptrs:
                return t.clone(memory_format=torch.contiguous_format)
            return t.contiguous()

        return tuple(own(t) for t in out) if isinstance(out, tuple) else own(out)
