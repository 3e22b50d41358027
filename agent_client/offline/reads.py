"""What a route's candidate does at the spec's shapes, found without running a kernel: which TUNABLES its
launchers read and which launches they make.

Usage: probe = LaunchProbe(candidate_source, spec_path, device="cuda:0")
       trace = probe.trace({"BLOCK_LOOP": 8192})   # None when the dry run could not finish
       trace.read       # {"MAX_FUSED_N", "BLOCK_LOOP", "num_warps_loop", "PROGRAMS_PER_SM"}
       trace.launches   # ((kernel name, grid, scalar and constexpr arguments), ...)
       run = probe.dry_run({"BLOCK_LOOP": 8192})   # the launches kept whole, and why a dry run stopped
       run.calls        # (Launch(fn=<JITFunction>, grid, args, kwargs), ...), made before any stop

A library kernel declares every tunable of every path (a row kept in registers, a looped row, a split
row, 16-bit word pairs...), but one spec takes one path: most of a family's space changes nothing for
it. The dry run tells the search which tunables this spec's path reads, and two points whose launches
are the same (same kernels, grids, block sizes, warps) are one candidate, however their TUNABLES differ.

How: the candidate's module is executed afresh for each point (its launchers may cache plans per
shape), its TUNABLES replaced by a dict that records reads, and `ModelNew.forward` called under
FakeTensorMode on the spec's inputs (shapes, dtypes and device without memory), with every Triton
launch replaced by a recorder. Anything that needs real data (`.item()`, a pointer) ends the dry run:
the search then treats every declared tunable as relevant, as it did without one.
"""

from __future__ import annotations

import hashlib
import sys
import tempfile
import types
import warnings
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Trace:
    read: frozenset  # TUNABLES names the forward read
    launches: tuple  # one entry per kernel launch: (kernel name, grid, arguments other than tensors' data)


@dataclass(frozen=True)
class Launch:
    """One launch kept whole, for tools that compile it (benchmarks/sm90_check.py): the launched object
    (a JITFunction, or an autotuner around one), its grid and its arguments as passed, tensors left fake."""

    fn: object
    name: str
    grid: object
    args: tuple
    kwargs: dict


@dataclass(frozen=True)
class DryRun:
    trace: Trace | None  # None when the dry run could not finish
    calls: tuple  # Launch per launch made, those before a stop included
    error: str | None = None  # why it stopped: the exception and the candidate's line that raised it
    refused: bool = False  # stopped as real tensors would stop it too (see LaunchProbe._genuine)


class _Reads(dict):
    """A TUNABLES dict that remembers which names were looked up (iterating it reads every name)."""

    def __init__(self, values: dict, seen: set):
        super().__init__(values)
        self.seen = seen

    def __getitem__(self, name):
        self.seen.add(name)
        return super().__getitem__(name)

    def get(self, name, default=None):
        self.seen.add(name)
        return super().get(name, default)

    def __contains__(self, name):
        self.seen.add(name)
        return super().__contains__(name)

    def _all(self):
        self.seen.update(super().keys())

    def items(self):
        self._all()
        return super().items()

    def values(self):
        self._all()
        return super().values()

    def __iter__(self):
        self._all()
        return super().__iter__()

    def copy(self):
        self._all()
        return dict(super().items())


def _summary(value):
    """A launch argument as a hashable summary: tensors by shape, strides and dtype; plain values as is."""
    import torch

    if isinstance(value, torch.Tensor):
        return ("tensor", tuple(value.shape), tuple(value.stride()), str(value.dtype))
    if isinstance(value, (int, float, str, bool, type(None))):
        return value
    if isinstance(value, (tuple, list)):
        return tuple(_summary(v) for v in value)
    return type(value).__name__  # descriptors and other objects: their kind only


class LaunchProbe:
    """Dry runs of one candidate source (a route's) at the shapes of one spec."""

    def __init__(self, source: str, spec_path: Path | str, device: str = "cpu"):
        self.source = source
        self.spec_path = Path(spec_path)
        self.device = "cpu" if str(device).startswith("cpu") else str(device)
        digest = hashlib.sha256(source.encode()).hexdigest()[:12]
        folder = Path(tempfile.gettempdir()) / "kkb-launch-probe"
        folder.mkdir(parents=True, exist_ok=True)
        self.path = folder / f"probe_{digest}.py"  # Triton reads a jit function's source from its file
        if not self.path.is_file():
            self.path.write_text(source, encoding="utf-8")
        self.module_name = f"kkb_probe_{digest}"
        self._code = None
        self._cache: dict[str, Trace | None] = {}
        self.refusals: dict[str, str] = {}  # point key -> why the candidate would fail on real tensors too

    def trace(self, point: dict) -> Trace | None:
        from agent_client.offline.tunables import key

        k = key(point)
        if k not in self._cache:
            try:
                self._cache[k] = self._trace(point)
            except Exception as exc:  # noqa: BLE001 - a failed dry run means "unknown", never an error
                self._cache[k] = None
                if self._genuine(exc):
                    self.refusals[k] = f"{type(exc).__name__}: {exc}"
        return self._cache[k]

    def dry_run(self, point: dict) -> DryRun:
        """A dry run at `point` (not cached) that keeps each launch whole and says why it stopped, if it did."""
        calls: list = []
        try:
            return DryRun(self._trace(point, calls), tuple(calls))
        except Exception as exc:  # noqa: BLE001 - reported, as in trace()
            return DryRun(None, tuple(calls), self._stop_reason(exc), self._genuine(exc))

    def _stop_reason(self, exc: BaseException) -> str:
        """`Type: message` and the last line of the candidate itself that the exception passed through."""
        where, tb = "", exc.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == str(self.path):
                where = f" (candidate line {tb.tb_lineno}, in {tb.tb_frame.f_code.co_name})"
            tb = tb.tb_next
        first = (str(exc).strip().splitlines() or [""])[0][:300]
        return f"{type(exc).__name__}: {first}{where}"

    def refusal(self, point: dict) -> str | None:
        """Why the candidate cannot run the spec at `point`, when a dry run shows it would fail on real
        tensors too (see _genuine), else None."""
        from agent_client.offline.tunables import key

        self.trace(point)
        return self.refusals.get(key(point))

    def _genuine(self, exc: BaseException) -> bool:
        """Whether a failure of the dry run would happen on real tensors too: a ValueError the candidate's own
        code raised (a launcher refusing the shapes), or a shape error of a torch call on one of its lines
        (a 3-D tensor transposed as a matrix). Fake tensors check shapes as real ones do; what they cannot do
        (read data, reach a backend this torch lacks) is no refusal."""
        from torch._subclasses import fake_tensor

        frames = []
        tb = exc.__traceback__
        while tb is not None:
            frames.append(tb.tb_frame.f_code.co_filename)
            tb = tb.tb_next
        ours = str(self.path)
        if isinstance(exc, ValueError):
            return bool(frames) and frames[-1] == ours
        names = ("DataDependentOutputException", "DynamicOutputShapeException", "UnsupportedOperatorException")
        limits = tuple(getattr(fake_tensor, n) for n in names if hasattr(fake_tensor, n))
        text = str(exc).lower()
        return (type(exc) is RuntimeError and not isinstance(exc, limits) and ours in frames
                and not any(word in text for word in ("cuda", "compiled with", "linked with", "data pointer",
                                                      "storage", "fake", "meta", "backend", "device",
                                                      # Module.to(dtype) in __init__ swaps parameters,
                                                      # which fake ones refuse
                                                      "couldn't swap")))

    def _trace(self, point: dict, calls: list | None = None) -> Trace:
        import torch
        from torch._subclasses.fake_tensor import FakeTensorMode

        from harness.spec import load_spec, make_inputs

        if self._code is None:
            self._code = compile(self.source, str(self.path), "exec")
        module = types.ModuleType(self.module_name)
        module.__file__ = str(self.path)
        sys.modules[self.module_name] = module  # dataclasses and pickling look a module up by name
        try:
            exec(self._code, module.__dict__)  # noqa: S102 - the candidate the harness will run anyway
            seen: set = set()
            if isinstance(getattr(module, "TUNABLES", None), dict):
                module.TUNABLES = _Reads({**module.TUNABLES, **point}, seen)
            launches: list = []
            spec = load_spec(self.spec_path)
            variant = spec.variants[0]
            with _launches_recorded(launches, calls), FakeTensorMode(allow_non_fake_inputs=True), torch.no_grad(), \
                    warnings.catch_warnings():
                warnings.simplefilter("ignore")  # e.g. a launcher reading a fake tensor's data pointer
                model = _fake_model(module.ModelNew, spec, variant, self.device)
                model(*make_inputs(spec, variant, 0, self.device))
            return Trace(frozenset(seen), tuple(launches))
        finally:
            sys.modules.pop(self.module_name, None)


def _fake_model(cls: type, spec, variant, device: str):
    """`cls(*init_inputs)` built on `device` with fake parameters, cast to the spec's DTYPE. As
    harness.spec.build_model does, but without `Module.to`, which cannot swap fake parameters."""
    import torch

    from harness.spec import make_init_inputs

    with torch.device(device):
        model = cls(*make_init_inputs(spec, variant))
    if spec.dtype and isinstance(model, torch.nn.Module):
        dtype = getattr(torch, spec.dtype)
        for sub in model.modules():
            for name, p in list(sub._parameters.items()):
                if p is not None and p.is_floating_point():
                    sub._parameters[name] = torch.nn.Parameter(p.detach().to(dtype), p.requires_grad)
            for name, b in list(sub._buffers.items()):
                if b is not None and b.is_floating_point():
                    sub._buffers[name] = b.to(dtype)
    return model


class _launches_recorded:
    """Within it, a Triton launch (`kernel[grid](...)`, `kernel.run(...)`) records itself and runs nothing."""

    def __init__(self, launches: list, calls: list | None = None):
        self.launches = launches
        self.calls = calls  # Launch records, when the caller keeps them
        self.saved: list = []

    def __enter__(self):
        from triton.runtime import autotuner, jit

        classes = [jit.KernelInterface, jit.JITFunction, autotuner.Autotuner, autotuner.Heuristics]
        try:
            from triton.runtime.interpreter import InterpretedFunction
            classes.append(InterpretedFunction)
        except ImportError:
            pass
        record = self._record
        for cls in classes:
            for attr, stub in (("__getitem__", lambda fn, grid: (lambda *a, **kw: record(fn, grid, a, kw))),
                               ("run", lambda fn, *a, grid=None, **kw: record(fn, grid, a, kw))):
                if attr in cls.__dict__:
                    self.saved.append((cls, attr, cls.__dict__[attr]))
                    setattr(cls, attr, stub)
        return self

    def __exit__(self, *exc):
        for cls, attr, original in reversed(self.saved):
            setattr(cls, attr, original)
        return False

    def _record(self, fn, grid, args, kwargs) -> None:
        inner = getattr(fn, "fn", fn)
        name = getattr(inner, "__name__", type(fn).__name__)
        meta = {k: _summary(v) for k, v in kwargs.items() if k not in ("warmup",)}
        if callable(grid):
            try:
                grid = grid(dict(kwargs))
            except Exception:  # noqa: BLE001 - a grid of the autotuner's choice: unknown here
                grid = "?"
        self.launches.append((name, _summary(grid), tuple(_summary(a) for a in args),
                              tuple(sorted(meta.items()))))
        if self.calls is not None:
            self.calls.append(Launch(fn, name, grid, tuple(args), {k: v for k, v in kwargs.items() if k != "warmup"}))
