"""Probe: the general lowering's cooperative split rows (agent_client/lowering/kernels/coop.py), counted in on
a row counter, against its two-level form (the default), at KernelBench's published sizes where the tagged-
word exchange left NaN on an H100 (1/23 Softmax, 2/21's GroupNorm) and where it passed (1/40 LayerNorm).

Decides: whether "coop" is right on the GPU now (every output of every repeat within 1e-4 + 1e-4 |ref|, the
count of elements outside and of NaN recorded per repeat), and whether it is faster than "split" (the
default) by enough to become the default again.

Usage (a CUDA machine, repo root):
    python3 benchmarks/gpu/probe_coop.py --kernelbench /path/to/KernelBench --budget-s 150 --out DIR
    python3 benchmarks/gpu/probe_coop.py --kernelbench /path/to/KernelBench --device cpu --tiny --out /tmp/p
Each candidate is built as the offline mode builds it (lower_spec, TUNABLES set by name suffix), run REPEATS
times on the problem's inputs and checked each time, then timed with triton.testing.do_bench (median) when
every repeat passed; eager and the library's softmax are timed beside it. Items run in priority order and
stop cleanly at the deadline. Writes DIR/coop-probe-<card>-<UTC>.json; prints a table last.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
if "--device" in sys.argv and sys.argv[sys.argv.index("--device") + 1] == "cpu":
    os.environ.setdefault("TRITON_INTERPRET", "1")  # before triton is imported

import probe_rows  # the rows probe's problem, candidate and timing helpers

REPEATS = 3  # runs checked per candidate: the race the counter removes hit 4-7% of outputs in each run
COOP = {"_form": "coop"}
# (problem, variant, route, TUNABLES overrides by name suffix), in priority order
ITEMS = [
    ("1/23_Softmax", "coop", "lowering", COOP),
    ("1/23_Softmax", "split (default)", "lowering", {}),
    ("2/21_Conv2d_Add_Scale_Sigmoid_GroupNorm", "coop", "lowering", COOP),
    ("2/21_Conv2d_Add_Scale_Sigmoid_GroupNorm", "split (default)", "lowering", {}),
    ("1/40_LayerNorm", "coop", "lowering", COOP),
    ("1/40_LayerNorm", "split (default)", "lowering", {}),
    ("1/23_Softmax", "coop no prefetch", "lowering", {**COOP, "_coop_prefetch": False}),
    ("1/23_Softmax", "library", "library", {}),
    ("1/23_Softmax", "eager", "eager", {}),
    ("2/21_Conv2d_Add_Scale_Sigmoid_GroupNorm", "eager", "eager", {}),
    ("1/40_LayerNorm", "eager", "eager", {}),
    ("1/24_LogSoftmax", "coop", "lowering", COOP),
    ("1/24_LogSoftmax", "split (default)", "lowering", {}),
    ("2/21_Conv2d_Add_Scale_Sigmoid_GroupNorm", "coop no prefetch", "lowering", {**COOP, "_coop_prefetch": False}),
    ("1/23_Softmax", "coop x1/SM", "lowering", {**COOP, "_coop_per_sm": 1}),  # 128 registers, no spills
    ("1/23_Softmax", "coop 8192 w8 x4/SM", "lowering", {**COOP, "_CHUNK": 8192, "_coop_warps": 8,
                                                       "_coop_per_sm": 4}),
]
TINY_OVERRIDES = {"_CHUNK": 512}  # --tiny: several chunks a row in the interpreter (its 4 "SMs")


def _source(root: Path, name: str, tiny: bool) -> str:
    level, stem = name.split("/")
    path = root / f"level{level}" / f"{stem}.py"
    if not tiny:
        return path.read_text()
    shrunk = probe_rows._tiny_source(path)
    return re.sub(r"^height = width = \d+", "height = width = 20", shrunk, flags=re.MULTILINE)


def _outside(problem, out) -> tuple[int, int]:
    """(elements outside 1e-4 + 1e-4 |ref|, NaN elements) of a floating-point output."""
    import torch

    flat_o, flat_r = out.reshape(-1), problem.ref.reshape(-1)
    bad = nan = 0
    step = 1 << 26
    for i in range(0, flat_r.numel(), step):
        o, r = flat_o[i:i + step].float(), flat_r[i:i + step].float()
        bad += int(((o - r).abs() > 1e-4 + 1e-4 * r.abs()).sum()) + int((o.isnan() & ~r.isnan()).sum())
        nan += int(torch.isnan(o).sum())
    return bad, nan


def _item(problem, route: str, variant: str, overrides: dict, copy_gbps: float, workdir: Path, counter: list,
          tiny: bool) -> dict:
    import torch

    row = {"problem": problem.name, "kind": route, "variant": variant, "tunables": overrides}
    t0 = time.time()
    try:
        if route == "eager":
            runner = lambda: problem.model(*problem.inputs)
        else:
            if route == "library":
                source = probe_rows._library(problem.spec_path, problem.source)[1]
            else:
                asked = {**(TINY_OVERRIDES if tiny and overrides else {}), **overrides}
                source = probe_rows._lowered(problem.spec_path, problem.source, problem.device, {}, asked)
                if route == "lowering" and "_form" not in overrides:  # the default form, named
                    found = re.search(r"'(\w+_form)': '(\w+)'", source)
                    row["default_form"] = found.group(2) if found else None
            runner = probe_rows._candidate_runner(problem, source, workdir, counter)
        repeats = []
        with torch.no_grad():
            for _ in range(REPEATS):
                out = runner()
                if problem.device != "cpu":
                    torch.cuda.synchronize()
                bad, nan = _outside(problem, out)
                repeats.append({"outside": bad, "nan": nan, "max_abs_err": problem.check(out)[1]})
                del out
            row["repeats"] = repeats
            row["ok"] = all(r["outside"] == 0 for r in repeats)
            if row["ok"]:
                ms = problem.time_ms(runner)
                gbps = problem.bytes_moved / ms / 1e6
                row.update(latency_ms=ms, gbps=gbps, fraction_of_copy=gbps / copy_gbps if copy_gbps else None)
                out = runner()  # after the timing's hundreds of launches: still right?
                row["after_timing_outside"] = _outside(problem, out)[0]
                row["ok"] = row["after_timing_outside"] == 0
                del out
    except Exception as exc:  # noqa: BLE001 - a probe records the failure and moves on
        row.update(ok=False, error=f"{type(exc).__name__}: {str(exc)[:400]}",
                   trace=traceback.format_exc(limit=3)[-800:])
    row["wall_s"] = round(time.time() - t0, 2)
    counter[0] += 1
    return row


def _line(r: dict) -> str:
    reps = ",".join(str(x["outside"]) for x in r.get("repeats", []))
    return probe_rows._line(r) + (f"  outside per repeat: {reps}" if reps and not r.get("ok") else "")


def main() -> int:
    args, root, card, copy = probe_rows.start(__doc__.split("\n\n")[0], 150.0)
    deadline = time.time() + args.budget_s
    rows, counter, stopped, current = [], [0], None, None
    workdir = Path(tempfile.mkdtemp(prefix="probe_coop_"))
    items = [i for i in ITEMS if not args.problems or i[0] in args.problems]
    order = sorted(range(len(items)), key=lambda k: ([i[0] for i in items].index(items[k][0]), k))
    # problems one at a time (their tensors are large), in the order of their first item
    for k in order:
        name, variant, route, overrides = items[k]
        if time.time() > deadline:
            stopped = f"deadline reached before {name} {variant}"
            break
        if current is None or current.name != name:
            if current is not None:
                current.free()
            current = None
            try:
                source = _source(root, name, args.tiny)
                current = probe_rows.Problem.__new__(probe_rows.Problem)
                _load(current, root, name, source, args.device, args.tiny, workdir)
            except Exception as exc:  # noqa: BLE001
                rows.append({"problem": name, "kind": "reference", "variant": "", "ok": False,
                             "error": f"{type(exc).__name__}: {exc}"})
                current = None
                continue
        rows.append(_item(current, route, variant, overrides, copy, workdir, counter, args.tiny))
        print(_line(rows[-1]), flush=True)
    if current is not None:
        current.free()
    probe_rows.finish("coop", args, card, copy, stopped, rows, line=_line, repeats=REPEATS)
    return 0


def _load(problem, root: Path, name: str, source: str, device: str, tiny: bool, workdir: Path) -> None:
    """probe_rows.Problem's reference, inputs and bytes, from `source` (2/21's sizes shrunk too in --tiny)."""
    import torch

    from harness.redirect import tensors_on

    _, stem = name.split("/")
    problem.name, problem.device, problem.tiny, problem.source = name, device, tiny, source
    problem.spec_path = workdir / f"{stem}.py"
    problem.spec_path.write_text(source)
    problem.module = probe_rows._import_source(source, f"kb_ref_{stem}", workdir)
    torch.manual_seed(0)
    problem.init = list(problem.module.get_init_inputs())
    with tensors_on(device):
        problem.inputs = list(problem.module.get_inputs())
    torch.manual_seed(0)
    problem.model = problem.module.Model(*problem.init).to(device)
    with torch.no_grad():
        problem.ref = problem.model(*problem.inputs)
    tensors = [t for t in problem.inputs if isinstance(t, torch.Tensor)] + [problem.ref]
    problem.bytes_moved = sum(t.numel() * t.element_size() for t in tensors)


if __name__ == "__main__":
    sys.exit(main())
