"""The `kkb bench` verb: judge one candidate, or run a folder of problems (KernelBench level folders as published).

Usage:
    kkb bench SPEC.py CANDIDATE.py [--backend triton] [--device cuda:0] [--timeout S] [-o verdict.json] [--json]
    kkb bench --suite DIR [--candidates DIR] [--devices cuda:0,cuda:1 | --ray ADDRESS] [--max-elements N]
              [-o results.json] [--json]
    python -m harness.cli SPEC.py CANDIDATE.py --device cpu --no-compile-baseline

The hardware limits: `--bandwidth-gbps` / `--peak-tflops` where given (nominal numbers), else what the card
lookup that `kkb` hands in says of the device (agent_client/card.py: the device's name matched to the
facts files, nominal peaks), else (`python -m harness.cli` alone) a measured copy bandwidth and no compute
limit. The verdict's diagnostics["limits"] and a suite's results file name the card and the limits.

--json prints the verdict (a suite: its summary and rows) as JSON on stdout, the table going to stderr;
-o/--output writes the same to a file (a suite's results file, default bench-<folder>.json).

Exit status: 0 every candidate passed (a suite without candidates: every problem was profiled); 1 a
candidate got another verdict; 2 bad arguments (checked before anything runs); 3 a spec could not be run
(import error, too large for the device, its reference failed); 130 stopped by Ctrl-C or SIGTERM (its
workers were killed; a suite resumes from its results file when run again with the same command).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer

from harness.config import EvalConfig, HardwarePeaks
from harness.peaks import parse_peak_tflops
from harness.suite import BenchExit

SCALE_ELEMENTS = 1 << 18  # --scale: inputs of at most this many elements (Triton's interpreter on a CPU)


def _fmt(value, spec: str = ".4g") -> str:
    return "-" if value is None else format(value, spec)


def _print_table(rows: list[dict], title: str, file=None) -> None:
    """The rows as a table on `file` (default stdout; stderr where stdout carries --json)."""
    file = file or sys.stdout
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # plain text on a machine without rich
        for r in rows:
            print(r["spec"], r.get("candidate") or "", r["status"], _fmt(r.get("latency_ms")),
                  _fmt(r.get("eager_ms")), _fmt(r.get("compile_ms")), "; ".join(r.get("reasons") or [])[:200],
                  file=file)
        return
    table = Table(title=title)
    for col in ("spec", "candidate", "status", "latency ms", "eager ms", "compile ms", "x eager", "x compile",
                "of limit", "reasons"):
        table.add_column(col, overflow="fold")
    for r in rows:
        frac = r.get("fraction_of_limit")
        table.add_row(r["spec"], r.get("candidate") or "", r["status"], _fmt(r.get("latency_ms")),
                      _fmt(r.get("eager_ms")), _fmt(r.get("compile_ms")), _fmt(r.get("speedup_vs_eager"), ".2f"),
                      _fmt(r.get("speedup_vs_compile"), ".2f"),
                      "-" if frac is None else f"{100 * frac:.1f}% {r.get('limit_kind') or ''}",
                      "; ".join(r.get("reasons") or [])[:300])
    console = Console(file=file)
    if not console.is_terminal:  # logs and captured output: wide enough for every column
        console = Console(file=file, width=160)
    console.print(table)
    if "wall_clock" in {r.get("timing_method") for r in rows}:
        print("timings are wall-clock on CPU (Triton interpreter): not comparable with GPU numbers", file=file)


def _print_summary(summary: dict, file=None) -> None:
    fast = summary.get("fast_p") or {}
    for basis in ("eager", "compile"):
        values = fast.get(basis) or {}
        text = "  ".join(f"fast_{p}={_fmt(v, '.2f')}" for p, v in values.items())
        print(f"over {basis}: {text}  geomean speedup {_fmt(summary.get(f'geomean_speedup_vs_{basis}'), '.3f')}",
              file=file)
    print(f"{summary.get('candidates')} candidates ({summary.get('passed')} passed) on "
          f"{summary.get('problems')} problems; median time to a verdict "
          f"{_fmt(summary.get('median_time_to_verdict_s'), '.1f')} s; statuses {summary.get('statuses')}", file=file)


CardLookup = Callable[[str], HardwarePeaks]  # device ("cuda:0") -> its card's peaks (kernelkb_cli hands one in)


def _limits_line(peaks: HardwarePeaks, device: str = "cuda") -> str:
    if not device.startswith("cuda"):
        return "limits: none on the CPU (wall-clock timings; no fraction of a hardware limit)"
    if peaks.card or peaks.source:
        return f"limits: {peaks.card or 'given'} ({peaks.source or 'given on the command line'})"
    if peaks.memory_bandwidth_bytes_per_s or peaks.flops_per_s:
        return "limits: given on the command line"
    return "limits: measured device-copy bandwidth; compute limit unknown (no card facts)"


def _single(spec: Path, candidate: Path, backend: str, device: str, config: EvalConfig, peaks: HardwarePeaks,
            output: Path | None, json_out: bool) -> BenchExit:
    from harness.device import ProfileError
    from harness.evaluate import evaluate
    from harness.jobs import BackendUnavailable
    from harness.spec import SpecError
    from harness.suite import Problem, verdict_row

    try:
        verdict = evaluate(spec, candidate.read_text(), backend=backend, device=device, config=config, peaks=peaks)
    except BackendUnavailable as exc:
        raise typer.BadParameter(str(exc)) from exc
    except (SpecError, ProfileError) as exc:
        typer.echo(f"error: {exc}", err=True)
        return BenchExit.SPEC_ERROR
    human = sys.stderr if json_out else sys.stdout
    _print_table([verdict_row(Problem(spec.stem, spec, spec), candidate.name, verdict, 0.0)],
                 f"kkb bench ({backend} on {device})", human)
    text = json.dumps(verdict.to_dict(), indent=1, default=str)
    if output is not None:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text)
        print(f"wrote {output}", file=human)
    if json_out:
        print(text)
    return BenchExit.OK if verdict.passed else BenchExit.CANDIDATE_FAILED


def _suite(suite: Path, candidates: Path | None, backend: str, devices: list[str], ray: str | None,
           config: EvalConfig, peaks: HardwarePeaks, results: Path, max_elements: int | None, resume: bool,
           only: list[str] | None, compile_workers: int, json_out: bool) -> BenchExit:
    from harness.executor import open_executor
    from harness.held_memory import held_after, snapshot
    from harness.suite import annotate, run_suite, spec_files, suite_problems, unmatched_candidates

    problems = suite_problems(suite, max_elements, results.with_name(results.stem + ".scaled"), only)
    if not problems:
        raise typer.BadParameter(f"--suite {suite}: no problems (*.py) found")
    for warning in unmatched_candidates(candidates, [p.stem for p in spec_files(suite)]) if candidates else []:
        print(f"warning: {warning}", file=sys.stderr)
    identity = {"suite": str(suite.resolve()), "backend": backend, "max_elements": max_elements, "card": peaks.card,
                "candidates": str(candidates.resolve()) if candidates else None,
                "executor": f"ray {ray}" if ray else ",".join(devices), "trials": config.trials}
    before = snapshot()  # the GPUs' memory and processes, for what the run leaves held (held_memory.py)
    with open_executor(devices, config, peaks, compile_workers=compile_workers, ray_address=ray) as pool, \
            _progress(len(problems), json_out) as on_row:
        startup_s = pool.warm_up()  # every worker started: the run's throughput is the executor's steady state
        run = run_suite(problems, pool, results, identity, candidates=candidates, backend=backend, resume=resume,
                        max_inflight=2 * pool.parallelism,  # one queued behind each evaluation: no idle device
                        extra={"command": " ".join(sys.argv),
                               "limits": {**peaks.to_dict(), "line": _limits_line(peaks, devices[0])}},
                        on_row=on_row)
    annotate(results, held_after=held_after(before), executor_startup_s=round(startup_s, 3))
    if run.resumed_rows or run.rejudged_rows:
        print(f"resumed: {run.resumed_rows} rows from {results}"
              + (f"; {run.rejudged_rows} judged again, their spec or candidate file changed since"
                 if run.rejudged_rows else ""), file=sys.stderr)
    human = sys.stderr if json_out else sys.stdout
    _print_table(run.rows, f"kkb bench --suite {suite} ({backend} on {identity['executor']})", human)
    _print_summary(run.summary, human)
    print(f"wrote {results}", file=human)
    if json_out:  # the results file as written: identity, summary and rows
        print(results.read_text())
    return run.exit_code


def _peaks(card_lookup: CardLookup | None, device: str, bandwidth_gbps: float | None,
           flops_per_s: dict[str, float]) -> HardwarePeaks:
    """The card's peaks (on a GPU, where a lookup was handed in), with the numbers given on the command line
    in their place."""
    card = card_lookup(device) if card_lookup is not None and device.startswith("cuda") else HardwarePeaks()
    if bandwidth_gbps is None and not flops_per_s:
        return card
    return HardwarePeaks(bandwidth_gbps * 1e9 if bandwidth_gbps else card.memory_bandwidth_bytes_per_s,
                         flops_per_s or card.flops_per_s, card.card,
                         "given on the command line" + (f", the rest from {card.source}" if card.source else ""))


@contextmanager
def _progress(problems: int, json_out: bool):
    """What a suite shows as its rows come: a rich progress bar on a terminal, one line per row in a log,
    nothing under --json (the results go to stdout)."""
    if json_out:
        yield lambda row: None
        return
    try:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
    except ImportError:  # a bare CUDA machine without rich: one line per row
        console = None
    else:
        console = Console(stderr=True)
    if console is None or not console.is_terminal:
        yield lambda r: print(f"{r['spec']} {r.get('candidate') or ''}: {r['status']}", file=sys.stderr)
        return
    columns = (TextColumn("problems"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
               TextColumn("{task.description}"))
    with Progress(*columns, console=console, transient=True) as progress:
        task, seen = progress.add_task("", total=problems), set()

        def on_row(row: dict) -> None:
            seen.add(row["spec"])
            progress.update(task, completed=len(seen), description=f"{row['spec']}: {row['status']}")

        yield on_row


def make_bench(card_lookup: CardLookup | None = None):
    """The `kkb bench` command, judging by `card_lookup(device)`'s peaks where none are given."""

    def bench(
        spec: Annotated[Path | None, typer.Argument(help="spec file (KernelBench format)")] = None,
        candidate: Annotated[Path | None, typer.Argument(help="candidate file defining ModelNew")] = None,
        backend: Annotated[str, typer.Option(help="triton | cuda | torch | cute | hip")] = "triton",
        device: Annotated[str | None, typer.Option(help="cuda:0, cpu (default: cuda:0 when present)")] = None,
        devices: Annotated[str | None, typer.Option(help="with --suite: cuda:0,cuda:1,... (one timing worker each)")] = None,
        ray: Annotated[str | None, typer.Option(help="with --suite: evaluate on the Ray cluster at HOST:PORT, "
                                                     "ray://HOST:PORT, auto, or local")] = None,
        output: Annotated[Path | None, typer.Option("-o", "--output", help="write the verdict here (a suite: its "
                                                    "results file, default bench-<folder>.json, resumed when rerun)")
                          ] = None,
        json_out: Annotated[bool, typer.Option("--json", help="print the verdict (a suite: its results) as JSON; "
                                                              "the table goes to stderr")] = False,
        suite: Annotated[Path | None, typer.Option(help="run every problem in this folder")] = None,
        candidates: Annotated[Path | None, typer.Option(help="with --suite: NAME.py or NAME/*.py per problem")] = None,
        only: Annotated[str | None, typer.Option(help="with --suite: these problems only (comma-separated stems)")] = None,
        max_elements: Annotated[int | None, typer.Option(help="with --suite: scale each problem's size constants "
                                                              "so its inputs hold at most N elements")] = None,
        scale: Annotated[bool, typer.Option(help=f"with --suite: --max-elements {SCALE_ELEMENTS} (CPU sizes)")] = False,
        resume: Annotated[bool, typer.Option(help="with --suite: keep the rows of an earlier run's results file")] = True,
        trials: Annotated[int, typer.Option(help="correctness trials per variant")] = 3,
        compile_baseline: Annotated[bool, typer.Option(help="time torch.compile of the reference")] = True,
        timeout: Annotated[float | None, typer.Option(
            help="seconds per candidate (default: from the reference's measured time, at least 30 s)")] = None,
        compile_workers: Annotated[int | None, typer.Option(
            help="with --suite: processes compiling candidates ahead of timing (default 2 per GPU, 0 on CPU)")] = None,
        bandwidth_gbps: Annotated[float | None, typer.Option(help="peak memory bandwidth, GB/s")] = None,
        peak_tflops: Annotated[str, typer.Option(
            help="compute limits as DTYPE=TFLOPS,..., e.g. bfloat16=796,tf32=406,float32=51 (float32 also gets "
                 "tf32 / 3)")] = "",
    ) -> None:
        """Judge a candidate kernel against a spec (or a folder of problems) and print a table.

        Exit status: 0 all passed, 1 a candidate failed, 2 bad arguments, 3 a spec could not be run, 130 stopped.
        """
        from harness.executor import check_device, devices_from_cli
        from harness.jobs import default_device
        from harness.stopping import install_stop_signals

        install_stop_signals()
        try:  # every argument checked before the limits line and before anything runs
            flops_per_s = parse_peak_tflops(peak_tflops)
            device_list = devices_from_cli(devices, ray, device) or [
                check_device(device, here=not ray) if device else default_device()]
        except ValueError as exc:
            raise typer.BadParameter(str(exc)) from exc
        if suite is not None:
            if spec is not None:
                raise typer.BadParameter(f"--suite {suite} and a SPEC ({spec}): give one (-o PATH names the "
                                         "results file; --json is a flag)")
            if not suite.is_dir():
                raise typer.BadParameter(f"--suite {suite}: not a folder")
            if candidates is not None and not candidates.is_dir():
                raise typer.BadParameter(f"--candidates {candidates}: not a folder")
        else:
            if spec is None or candidate is None:
                raise typer.BadParameter("give SPEC and CANDIDATE, or --suite DIR")
            for what, path in (("spec", spec), ("candidate", candidate)):
                if not path.is_file():
                    raise typer.BadParameter(
                        f"{what} {path}: {'is a folder, not a file' if path.is_dir() else 'no such file'}")
        config = EvalConfig(trials=trials, time_compile_baseline=compile_baseline, timeout_s=timeout)
        peaks = _peaks(card_lookup, device_list[0], bandwidth_gbps, flops_per_s)
        print(_limits_line(peaks, device_list[0]), file=sys.stderr)
        try:
            if suite is not None:
                workers = compile_workers if compile_workers is not None else (  # two per GPU
                    2 * len(device_list) if device_list[0].startswith("cuda") and not ray else 0)
                code = _suite(suite, candidates, backend, device_list, ray, config, peaks,
                              output or Path(f"bench-{suite.resolve().name}.json"),
                              SCALE_ELEMENTS if scale and max_elements is None else max_elements, resume,
                              [s.strip() for s in only.split(",")] if only else None, workers, json_out)
            else:
                code = _single(spec, candidate, backend, device_list[0], config, peaks, output, json_out)
        except KeyboardInterrupt:
            where = f"; rerun the same command to resume from {output or 'its results file'}" if suite else ""
            typer.echo(f"interrupted: every harness worker was stopped{where}", err=True)
            raise typer.Exit(int(BenchExit.INTERRUPTED)) from None
        except ConnectionError as exc:  # an unreachable Ray cluster, named
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(int(BenchExit.USAGE)) from exc
        raise typer.Exit(int(code))

    return bench


bench = make_bench()  # `python -m harness.cli`: the harness alone, no card facts


if __name__ == "__main__":
    typer.run(bench)
