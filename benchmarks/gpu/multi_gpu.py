"""Several GPUs of one host: KernelBench level 1 at its published sizes through `kkb bench --suite` on one GPU,
on all N, and through Ray, in one call; the throughput ratio, verdict identity, memory held and a resume.

Usage (repo root, a host of N >= 2 GPUs; KB = a copy of KernelBench, never committed):
    python3 benchmarks/gpu/multi_gpu.py --kernelbench KB --budget-s 560 --out DIR
    python3 benchmarks/gpu/multi_gpu.py --kernelbench KB --device cpu --tiny --budget-s 900   # CPU dry run
The Ray step needs `ray` (carry its wheels: benchmarks/gpu/ray_wheels.py); without it the step is skipped.

Problems and candidates: benchmarks/gpu/multi_gpu_problems.txt (the list, its rule and its cuts). Steps, each
`python3 -m kernelkb_cli bench --suite` in a subprocess stopped at its share of --budget-s (its rows kept):
  baselines  the problems' baselines on all N GPUs side by side (no candidates), into a cache every later
             step shares: each problem is profiled once, and no step pays for baselines the others do not
  one_gpu    every candidate on cuda:0 (compile workers: the default, 2 per GPU)
  all_gpus   the same candidates on cuda:0..N-1, one timing worker per GPU
  ray        the same candidates through `--ray local` (a Ray cluster on this host, one GPU per actor)
  resume     all_gpus over the first 2N+2 candidates into a fresh results file, killed (SIGKILL) once a row
             is written, then the same command again: every row once, the verdicts of one_gpu
Each judging step has a Triton cache of its own (every candidate is compiled in each). After each step the
GPUs are read (nvidia-smi): no process of the run may be left, nor memory held beyond the start's.
The bar: all_gpus' candidates a minute >= 0.85 x N x one_gpu's; the same status for every candidate in every
step; Ray's candidates a minute within 10% of all_gpus'; nothing held. NVLink multicast stays off
(NCCL_NVLS_ENABLE=0 and its siblings are set for every step); nothing here uses NCCL.
Writes DIR/multi-gpu-<card>-x<N>-<UTC>.json (default DIR: benchmarks/results) and prints a table last.
On the CPU (`--device cpu`): workers `cpu` and `cpu,cpu` stand for one and two GPUs, `--tiny` scales the
problems to 4096 elements and keeps those with committed candidates, through Triton's interpreter.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from harness.held_memory import gpus, held_after, snapshot

PROBLEMS_FILE = ROOT / "benchmarks" / "gpu" / "multi_gpu_problems.txt"
COMMITTED = ROOT / "benchmarks" / "kernelbench" / "level1"
NO_MULTICAST = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}
BAR_SCALING, BAR_RAY = 0.85, 0.10
TINY_ELEMENTS = 4096


def problem_list(path: Path) -> list[str]:
    return [ln.strip() for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#")]


def make_candidates(level1: Path, problems: list[str], work: Path, target: str, max_elements: int | None
                    ) -> tuple[Path, dict]:
    """WORK/candidates/<problem>/<name>.py: the committed candidates (none that hang) and the lowering's
    default for the spec as it runs (the scaled copy with --max-elements); what was dropped, and why."""
    from agent_client.lowering.lower import lower_spec
    from harness.suite import suite_problems

    folder, dropped = work / "candidates", {}
    specs = {p.name: p for p in suite_problems(level1, max_elements, work / "lowered.scaled", problems)}
    for name in problems:
        if name not in specs:
            dropped[name] = f"not in {level1}"
            continue
        committed = [c for c in sorted((COMMITTED / name).glob("*.py")) if "hang" not in c.stem]
        out = folder / name
        out.mkdir(parents=True, exist_ok=True)
        for c in committed:
            shutil.copy(c, out / c.name)
        try:
            (out / "lowered.py").write_text(lower_spec(specs[name].run_path, target=target).source)
        except Exception as exc:  # noqa: BLE001 - any failure of the lowering: the problem keeps the others
            if not committed:
                shutil.rmtree(out)
                dropped[name] = f"the lowering failed ({type(exc).__name__}: {str(exc)[:200]}) and none is committed"
    return folder, dropped


def subset(folder: Path, keep: set[tuple[str, str]], dest: Path) -> Path:
    """A candidates folder holding only `keep` ((problem, "problem/file.py") pairs)."""
    for problem, cand in sorted(keep):
        (dest / problem).mkdir(parents=True, exist_ok=True)
        shutil.copy(folder / cand, dest / cand)
    return dest


def run_step(name: str, cmd: list[str], env: dict, limit_s: float, results: Path | None = None,
             kill_at_first_row: bool = False) -> dict:
    """Run one step; SIGTERM at its limit (the harness stops its workers, the rows stay), SIGKILL 30 s later.
    kill_at_first_row: SIGKILL as soon as the results file holds a row (the resume check)."""
    print(f"== {name}: {' '.join(cmd)} (limit {limit_s:.0f} s)", flush=True)
    t0 = time.monotonic()
    log = Path(env["KKB_STEP_LOG"])
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
        stopped = killed = False
        while proc.poll() is None:
            if time.monotonic() - t0 > limit_s and not stopped:
                proc.terminate()
                stopped = True
            if stopped and time.monotonic() - t0 > limit_s + 30:
                proc.kill()
            if kill_at_first_row and results is not None and rows_of(results):
                proc.kill()
                killed = True
            time.sleep(0.05)
    text = log.read_text(errors="replace")
    seconds = round(time.monotonic() - t0, 1)
    print(text[-3000:], flush=True)
    print(f"== {name}: exit {proc.returncode} after {seconds} s{' (stopped at its limit)' if stopped else ''}"
          f"{' (killed at its first row)' if killed else ''}", flush=True)
    return {"command": cmd, "exit_code": proc.returncode, "seconds": seconds, "stopped_at_limit": stopped,
            "killed_at_first_row": killed, "output_tail": text[-2000:]}


def rows_of(path: Path) -> list[dict]:
    try:
        return json.loads(path.read_text()).get("rows") or []
    except (OSError, ValueError):
        return []


def verdicts(path: Path) -> dict[tuple[str, str], str]:
    return {(r["spec"], r["candidate"]): r["status"] for r in rows_of(path) if r.get("candidate")}


def digest(path: Path) -> dict:
    """What a step's results file says: its run (throughput, per device), statuses and memory held."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        return {"error": f"no results at {path}: {exc}"}
    statuses: dict[str, int] = {}
    for status in verdicts(path).values():
        statuses[status] = statuses.get(status, 0) + 1
    return {"run": data.get("run"), "statuses": statuses, "held_after": data.get("held_after"),
            "executor_startup_s": data.get("executor_startup_s"),
            "median_evaluation_s": (data.get("summary") or {}).get("median_evaluation_s")}


def card_tag(device: str, env: dict) -> str:
    if device == "cpu":
        return "cpu"
    done = subprocess.run([sys.executable, "benchmarks/gpu/cuda_device.py", "--id"], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    return done.stdout.strip().splitlines()[-1] if done.returncode == 0 and done.stdout.strip() else "gpu"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernelbench", type=Path, required=True, help="KernelBench (or its level1 folder)")
    parser.add_argument("--budget-s", type=float, default=560.0, help="wall-clock budget of every step")
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--gpus", type=int, default=None, help="GPUs to use (default: every visible one)")
    parser.add_argument("--workers", type=int, default=2, help="--device cpu: CPU workers standing for GPUs")
    parser.add_argument("--tiny", action="store_true", help="scaled to 4096 elements, committed problems only")
    parser.add_argument("--first", type=int, default=None, help="only the first N problems (CPU dry runs)")
    parser.add_argument("--problems", type=Path, default=PROBLEMS_FILE)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    parser.add_argument("--work-dir", type=Path, default=Path("/tmp/kkb_multi_gpu"))
    args = parser.parse_args()
    start = time.monotonic()
    deadline = start + args.budget_s
    os.environ.update(NO_MULTICAST)
    level1 = args.kernelbench / "level1" if (args.kernelbench / "level1").is_dir() else args.kernelbench
    work = args.work_dir
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    marker = f"KKB_RUN_TAG=multi-gpu-{os.getpid()}-{int(time.time())}"  # finds this run's processes later
    base_env = {**os.environ, **NO_MULTICAST, "PYTHONUNBUFFERED": "1", "KKB_HARNESS_CACHE": str(work / "cache"),
                marker.split("=")[0]: marker.split("=")[1],
                "PYTHONPATH": os.pathsep.join(p for p in [str(ROOT), os.environ.get("PYTHONPATH")] if p)}
    if args.device == "cpu":
        base_env["TRITON_INTERPRET"] = "1"
        n = args.workers
        one, every = "cpu", ",".join(["cpu"] * n)
    else:
        import torch

        n = args.gpus or torch.cuda.device_count()  # NVML: this process opens no CUDA context
        visible = torch.cuda.device_count()
        if not 2 <= n <= visible:
            print(f"multi_gpu: {visible} GPUs visible, {n} asked; this measurement needs 2 or more",
                  file=sys.stderr)
            return 2
        one, every = "cuda:0", ",".join(f"cuda:{i}" for i in range(n))
    max_elements = TINY_ELEMENTS if args.tiny else None
    before = snapshot()
    report: dict = {"benchmark": "multi_gpu", "gpus": n if args.device == "cuda" else 0, "workers": n,
                    "gpu_names": [g["name"] for g in gpus() or []],  # nvidia-smi: no CUDA context here
                    "device": args.device, "budget_s": args.budget_s,
                    "problems_file": str(args.problems.relative_to(ROOT)), "max_elements": max_elements,
                    "environment": NO_MULTICAST, "steps": {}}
    problems = problem_list(args.problems)
    if args.tiny:
        problems = [p for p in problems if (COMMITTED / p).is_dir()]
    problems = problems[: args.first] if args.first else problems
    t0 = time.monotonic()
    cands, dropped = make_candidates(level1, problems, work, "cpu" if args.device == "cpu" else "cuda",
                                     max_elements)
    report["lowering_s"] = round(time.monotonic() - t0, 1)
    planned = {(p.name, f"{p.name}/{c.name}") for p in sorted(cands.iterdir()) for c in sorted(p.glob("*.py"))}
    report.update(candidates_planned=len(planned), dropped=dropped)

    def bench(name: str, devices: str | None, folder: Path | None, limit_s: float, triton_cache: str,
              results: Path | None = None, **kw) -> tuple[Path, dict]:
        results = results or work / f"{name}.json"
        only = sorted({p for p, _ in planned} if folder is None else {d.name for d in folder.iterdir()})
        cmd = [sys.executable, "-m", "kernelkb_cli", "bench", "--suite", str(level1), "--only", ",".join(only),
               "--no-compile-baseline", "-o", str(results)]
        cmd += ["--ray", "local"] if devices is None else ["--devices", devices]
        cmd += ["--candidates", str(folder)] if folder is not None else []
        cmd += ["--max-elements", str(max_elements)] if max_elements else []
        env = {**base_env, "TRITON_CACHE_DIR": str(work / f"triton-{triton_cache}"),
               "KKB_STEP_LOG": str(work / f"{name}.log")}
        step = run_step(name, cmd, env, limit_s, results, **kw)
        step.update(digest(results), held_after_exit=held_after(before, root=1, marker=marker))
        report["steps"][name] = step
        return results, step

    # baselines: every problem profiled once, on all devices side by side
    left = deadline - time.monotonic()
    base_json, _ = bench("baselines", every, None, 0.3 * left, "baselines")
    profiled = {r["spec"] for r in rows_of(base_json) if r.get("status") == "baseline"}
    for p in sorted({p for p, _ in planned} - profiled):
        dropped[p] = "its baselines were not measured in the baselines step"
    planned = {(p, c) for p, c in planned if p in profiled}
    cands = subset(cands, planned, work / "candidates-profiled")
    # one GPU: its share of what is left, as if N GPUs then take 1 / (0.85 N) of it twice, plus Ray's start
    left = deadline - time.monotonic() - 40 - 45
    one_json, one_step = bench("one_gpu", one, cands, left / (1 + 2 / (BAR_SCALING * n)), "one")
    judged = verdicts(one_json)
    if one_step["stopped_at_limit"]:  # cut: later steps run what one_gpu judged
        cands = subset(cands, set(judged), work / "candidates-judged")
    report["candidates_used"] = len(judged)
    left = deadline - time.monotonic() - 45
    all_json, _ = bench("all_gpus", every, cands, left / 2, "all")
    if importlib.util.find_spec("ray") is None:
        report["steps"]["ray"] = {"skipped": "ray is not installed here (benchmarks/gpu/ray_wheels.py)"}
        ray_json = None
    else:
        ray_json, _ = bench("ray", None, cands, deadline - time.monotonic() - 45, "ray")
    # resume: a run killed at its first row, then the same command again
    few = set(sorted(judged)[: 2 * n + 2])
    if deadline - time.monotonic() > 30 and few:
        small = subset(cands, few, work / "candidates-resume")
        res_json = work / "resume.json"
        bench("resume_killed", every, small, max(10.0, min(60.0, (deadline - time.monotonic()) / 2)), "all",
              res_json, kill_at_first_row=True)
        kept = {(r["spec"], r["candidate"]): r for r in rows_of(res_json)}
        bench("resume", every, small, max(10.0, deadline - time.monotonic() - 5), "all", res_json)
        rows = rows_of(res_json)
        report["resume"] = {
            "rows_at_kill": len(kept), "rows_after": len(rows), "expected": len(few),
            "each_once": len(rows) == len({(r["spec"], r["candidate"]) for r in rows}) == len(few),
            "kept_rows_unchanged": all(kept[(r["spec"], r["candidate"])] == r for r in rows
                                       if (r["spec"], r["candidate"]) in kept),
            "said_resumed": f"resumed: {len(kept)} rows" in (work / "resume.log").read_text(errors="replace"),
            "same_verdicts_as_one_gpu": verdicts(res_json) == {k: judged[k] for k in few}}
    else:
        report["resume"] = {"skipped": "out of budget"}

    # the bar
    runs = {k: (report["steps"].get(k) or {}).get("run") or {} for k in ("one_gpu", "all_gpus", "ray")}
    cpm = {k: v.get("candidates_per_minute") for k, v in runs.items()}
    differences, missing = [], {}
    for name, path in (("all_gpus", all_json), ("ray", ray_json)):
        if path is None:
            continue
        theirs = verdicts(path)
        differences += [{"candidate": f"{p}::{c}", "one_gpu": judged[(p, c)], name: theirs[(p, c)]}
                        for p, c in sorted(set(judged) & set(theirs)) if judged[(p, c)] != theirs[(p, c)]]
        missing[name] = len(set(judged) - set(theirs))  # not judged within the step's limit
    ratio = cpm["all_gpus"] / cpm["one_gpu"] if cpm["all_gpus"] and cpm["one_gpu"] else None
    ray_vs = cpm["ray"] / cpm["all_gpus"] if cpm["ray"] and cpm["all_gpus"] else None
    held = [k for k, s in report["steps"].items() if (s.get("held_after_exit") or {}).get("held")
            or (s.get("held_after") or {}).get("held")]
    report["bar"] = {
        "candidates_per_minute": cpm, "throughput_ratio": ratio, "needed_ratio": BAR_SCALING * n,
        "scaling_met": ratio is not None and ratio >= BAR_SCALING * n,
        "verdicts_identical": not differences and not any(missing.values()) and bool(judged),
        "differences": differences[:50], "not_judged": missing,
        "ray_vs_local": ray_vs, "ray_within_10pct": ray_vs is not None and abs(ray_vs - 1) <= BAR_RAY,
        "steps_leaving_memory_or_processes": held,
        "resume_ok": all(report["resume"].get(k) for k in ("each_once", "kept_rows_unchanged", "said_resumed",
                                                           "same_verdicts_as_one_gpu")),
    }
    if args.device == "cpu":
        report["bar"]["note"] = ("a dry run of the script: CPU workers through Triton's interpreter stand for GPUs, on "
                                 "cores other work shares; the bar is for GPUs")
    report["total_seconds"] = round(time.monotonic() - start, 1)
    tag = card_tag(args.device, base_env)
    report["card"] = tag
    from benchmarks.common import write_results

    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    args.out.mkdir(parents=True, exist_ok=True)
    path = write_results("multi_gpu", report, packages=["torch", "triton", "ray"],
                         path=args.out / f"multi-gpu-{tag}-x{n}-{stamp}.json")
    print(f"wrote {path}")
    print(f"{'step':<14}{'exit':>5}{'seconds':>9}{'judged':>8}{'cand/min':>10}  statuses")
    for name, s in report["steps"].items():
        run = s.get("run") or {}
        print(f"{name:<14}{s.get('exit_code', '-')!s:>5}{s.get('seconds', '-')!s:>9}{run.get('candidates', '-')!s:>8}"
              f"{run.get('candidates_per_minute', '-')!s:>10}  {s.get('statuses') or s.get('skipped')}")
    bar = report["bar"]
    print(f"{tag} x{n}: ratio {bar['throughput_ratio']} (needed {bar['needed_ratio']:.2f}), verdicts identical "
          f"{bar['verdicts_identical']}, ray/local {bar['ray_vs_local']}, held after {held or 'nothing'}, "
          f"resume {bar['resume_ok']}; {report['candidates_used']} of {report['candidates_planned']} candidates, "
          f"{report['total_seconds']} s")
    return 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    sys.exit(main())
