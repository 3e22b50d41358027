"""KernelBench level 1 at its published sizes on one GPU: `kkb bench --suite` with several candidates per
problem, the small-candidate throughput, and offline `kkb tune` sessions; one results file.

Usage (from the repo root on a CUDA machine; LEVEL1 = a copy of KernelBench's level1 folder, never committed):
    python3 benchmarks/gpu/kernelbench_suite.py LEVEL1 [--budget-s 500] [--out-dir DIR]
    python3 benchmarks/gpu/kernelbench_suite.py LEVEL1 --device cpu --max-elements 65536 --skip tune,throughput
        (a CPU check of the script: the same problems scaled down, through Triton's interpreter)

Steps, each a subprocess with its own time limit inside --budget-s (a hang or crash of one leaves the others;
the defaults fit one 10-minute call):
  suite       python3 -m kernelkb_cli bench --suite LEVEL1 --only PROBLEMS --candidates benchmarks/kernelbench/level1
              --device cuda:0 -o WORK/kernelbench-suite.json (`kkb bench --suite`: the card's nominal peaks,
              agent_client/card.py): 7 problems at their published sizes (ReLU and Softmax 6.4 GB of input,
              RMSNorm 7.5 GB, MSELoss 8.6 GB), 16 candidates: honest ones, a wrong one, one calling PyTorch,
              one with TF32 products on an fp32 problem, one that hangs after an honest launch
  tune        python3 -m kernelkb_cli tune PROBLEM --provider offline --budget 4 for two problems, after
              `kkb ingest corpus/kernels corpus/accelerators` into a fresh KKB_HOME (needs pydantic,
              pydantic-settings and chromadb: skipped, with the reason, where they are missing)
  throughput  python3 benchmarks/bench_harness.py --sections throughput: 50 small candidates through a pool
After each step the GPU's compute processes are listed (nvidia-smi): none may be left holding memory.
Writes benchmarks/results/kernelbench-level1-suite-<card>-<UTC>.json (the card that ran it: h100, h200, cpu;
rows hold problem names and numbers only; `median_time_to_verdict_s` at its top) and copies it, and the suite's
own results file as kkb-bench-suite-<card>-<UTC>.json, to --out-dir.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CANDIDATES = ROOT / "benchmarks" / "kernelbench" / "level1"
PROBLEMS = ["1_Square_matrix_multiplication_", "19_ReLU", "23_Softmax", "36_RMSNorm_", "42_Max_Pooling_2D",
            "47_Sum_reduction_over_a_dimension", "94_MSELoss"]
SUITE_S = 360  # the suite step's limit (its rows are kept if it is stopped), within the default budget
THROUGHPUT_S = 60
TUNE_PROBLEMS = ["23_Softmax", "19_ReLU"]


def run_step(name: str, cmd: list[str], timeout_s: float, env: dict | None = None) -> dict:
    """Run one step; SIGTERM at its limit (the harness stops its workers), SIGKILL 30 s later."""
    print(f"== {name}: {' '.join(cmd)} (limit {timeout_s:.0f} s)", flush=True)
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, **(env or {}), "PYTHONUNBUFFERED": "1"},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = proc.communicate(timeout=max(5.0, timeout_s))
        stopped = False
    except subprocess.TimeoutExpired:
        proc.terminate()
        try:
            out, _ = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        stopped = True
    seconds = round(time.monotonic() - t0, 1)
    print(out[-4000:], flush=True)
    print(f"== {name}: exit {proc.returncode} after {seconds} s{' (stopped at its limit)' if stopped else ''}",
          flush=True)
    return {"command": cmd, "exit_code": proc.returncode, "seconds": seconds, "stopped_at_limit": stopped,
            "output_tail": out[-2500:]}


def gpu_processes() -> list[str] | None:
    """Compute processes on the GPU now (pid, memory), or None without nvidia-smi."""
    if shutil.which("nvidia-smi") is None:
        return None
    done = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,used_memory", "--format=csv,noheader"],
                          capture_output=True, text=True, timeout=30, check=False)
    return [line.strip() for line in done.stdout.splitlines() if line.strip()]


def card_tag(device: str) -> str:
    """The card that runs it (h100, h200, ...; agent_client/card.py), "cpu" on the CPU."""
    sys.path.insert(0, str(ROOT))
    from agent_client.card import card_peaks

    return card_peaks(device).short_id


def suite_digest(path: Path) -> dict:
    """What the results file says, trimmed to numbers per row."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        return {"error": f"no suite results at {path}: {exc}"}
    rows = []
    for r in data.get("rows", []):
        memory = r.get("memory") or {}
        rows.append({k: r.get(k) for k in ("spec", "candidate", "status", "latency_ms", "eager_ms", "compile_ms",
                                            "speedup_vs_eager", "speedup_vs_compile", "fraction_of_limit",
                                            "time_limit_s", "evaluation_s", "time_to_verdict_s", "oom")}
                    | {"reason": (r.get("reasons") or [""])[0][:300],
                       "estimate_bytes": memory.get("evaluation_bytes"),
                       "peak_reserved_bytes": memory.get("peak_reserved_bytes"),
                       "reserved_after_bytes": memory.get("reserved_after_bytes")})
    return {"summary": data.get("summary"), "rows": rows}


def tune_step(args, deadline: float, env: dict) -> dict:
    missing = [m for m in ("pydantic", "pydantic_settings", "chromadb") if importlib.util.find_spec(m) is None]
    if missing:
        return {"skipped": f"kkb tune needs {missing} here (carry their wheels to run it)"}
    home = Path(args.work_dir) / "kkb_home"
    tune_env = {**env, "KKB_HOME": str(home), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    out: dict = {"ingest": run_step("ingest", [sys.executable, "-m", "kernelkb_cli", "ingest", "corpus/kernels",
                                               "corpus/accelerators"], min(150.0, deadline - time.monotonic()),
                                    tune_env), "sessions": []}
    for name in TUNE_PROBLEMS:
        left = deadline - time.monotonic()
        if left < 40:
            out["sessions"].append({"problem": name, "skipped": "out of time budget"})
            continue
        result = Path(args.work_dir) / f"tune-{name}.json"
        scaled = Path(args.work_dir) / "kernelbench-suite.scaled" / f"{name}.py"  # the suite's copy, if scaled
        spec = scaled if args.max_elements and scaled.is_file() else Path(args.level1) / f"{name}.py"
        cmd = [sys.executable, "-m", "kernelkb_cli", "tune", str(spec), "--provider",
               "offline", "--budget", "4", "--drafts", "2", "--time-budget", str(min(60, int(left) - 20)),
               "--device", args.device, "--no-live", "--no-write-back", "-o", str(result)]
        step = run_step(f"tune {name}", cmd, left - 5, tune_env)
        try:
            step["result"] = json.loads(result.read_text())
        except (OSError, ValueError):
            step["result"] = None
        out["sessions"].append({"problem": name, **step})
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("level1", help="KernelBench's level1 folder (a copy carried to this machine)")
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--budget-s", type=float, default=500.0, help="wall-clock budget of all steps")
    parser.add_argument("--max-elements", type=int, default=None, help="scale the problems (CPU checks)")
    parser.add_argument("--skip", default="", help="steps to leave out: suite,throughput,tune")
    parser.add_argument("--out-dir", type=Path, default=None, help="also copy the results into this folder")
    parser.add_argument("--work-dir", default="/tmp/kkb_kernelbench")
    args = parser.parse_args()
    start = time.monotonic()
    deadline = start + args.budget_s
    skip = {s for s in args.skip.split(",") if s}
    work = Path(args.work_dir)
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    env = {"PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep),
           "KKB_HARNESS_CACHE": str(work / "harness_cache")}  # cold baselines: each is measured in this run
    if args.device == "cpu":
        env["TRITON_INTERPRET"] = "1"
    report: dict = {"benchmark": "kernelbench", "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                    "command": " ".join([Path(sys.executable).name, *sys.argv]), "machine": platform.node(),
                    "device": args.device, "problems": PROBLEMS, "max_elements": args.max_elements, "steps": {}}
    suite_json = work / "kernelbench-suite.json"
    if "suite" not in skip:
        cmd = [sys.executable, "-m", "kernelkb_cli", "bench", "--suite", args.level1, "--only", ",".join(PROBLEMS),
               "--candidates", str(CANDIDATES), "--device", args.device, "-o", str(suite_json)]
        if args.max_elements:
            cmd += ["--max-elements", str(args.max_elements)]
        if args.device == "cpu":  # the interpreter's derived limits are long (its slack): the hang ends sooner
            cmd += ["--timeout", "60"]
        step = run_step("suite", cmd, min(SUITE_S, deadline - time.monotonic() - THROUGHPUT_S - 20), env)
        report["steps"]["suite"] = {**step, **suite_digest(suite_json), "gpu_processes_after": gpu_processes()}
        summary = report["steps"]["suite"].get("summary") or {}
        report["median_time_to_verdict_s"] = summary.get("median_time_to_verdict_s")
        report["median_evaluation_s"] = summary.get("median_evaluation_s")
    if "tune" not in skip:
        report["steps"]["tune"] = {**tune_step(args, deadline - 75, env), "gpu_processes_after": gpu_processes()}
    if "throughput" not in skip:
        cmd = [sys.executable, "benchmarks/bench_harness.py", "--sections", "throughput", "--budget-s", str(THROUGHPUT_S),
               "--device", args.device, "--out-dir", str(work)] + (["--quick"] if args.device == "cpu" else [])
        step = run_step("throughput", cmd, max(10.0, deadline - time.monotonic()), env)
        found = sorted(work.glob("harness-*.json"))
        thr = json.loads(found[-1].read_text())["sections"].get("throughput", {}) if found else {}
        report["steps"]["throughput"] = {**step, "throughput": {k: thr.get(k) for k in (
            "candidates_per_minute", "n_completed_in_budget", "all_classified_as_expected", "status_counts",
            "errors", "batch_seconds")}, "gpu_processes_after": gpu_processes()}
    report["total_seconds"] = round(time.monotonic() - start, 1)
    tag = card_tag(args.device)
    report["card"] = tag
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    path = ROOT / "benchmarks" / "results" / f"kernelbench-level1-suite-{tag}-{stamp}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=1, default=str) + "\n")
    print(f"wrote {path}")
    if args.out_dir is not None:
        args.out_dir.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, args.out_dir / path.name)
        if suite_json.exists():
            shutil.copy(suite_json, args.out_dir / f"kkb-bench-suite-{tag}-{stamp}.json")
    summary = (report["steps"].get("suite") or {}).get("summary") or {}
    print(json.dumps({"suite": summary, "throughput": (report["steps"].get("throughput") or {}).get("throughput")},
                     indent=1, default=str))
    print(f"card {tag}: median time to a verdict {report.get('median_time_to_verdict_s')} s, "
          f"whole run {report['total_seconds']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
