"""Mutation run over the checks that guard kernelkb: the harness's static and runtime anti-cheat checks, the
API's auth dependencies and the prompt builder. A mutant that no test kills is a gap in the tests.

Usage: python scripts/mutation_run.py [--files harness/static_checks.py ...] [--functions NAME ...] [--workdir DIR]
       [--resume | --rerun-survivors] [--reuse OLD_WORKDIR]
       (mutmut 3.8, in the dev extra: pip install -e '.[dev]'; hours on 2 busy cores for all five files)

1. Copies the working tree into --workdir (default: a new temporary folder) and has mutmut write its mutants
   of the five files there (`mutants/`): each function's variants behind a trampoline that picks one by the
   MUTANT_UNDER_TEST environment variable, which the harness's worker processes inherit.
2. Adds mutants mutmut does not make: each element of the static checks' rule tuples deleted in turn.
3. Runs, for each mutant, the tests that guard its file (TARGETS below) in a process forked from one that has
   imported torch and the test dependencies already, with -x and a timeout. Exit status 0: survived.
4. Writes benchmarks/results/mutation-<UTC time>.json (machine, versions, date, command; per file: killed,
   survived, timed out; every survivor with its diff and its explanation from
   benchmarks/mutation_explained.yaml, or "unexplained"). Prints the counts and the unexplained survivors
   last.
Progress goes to WORKDIR/progress.jsonl; --resume with the same --workdir continues a killed run, and
--rerun-survivors copies the current tests/ into it and runs the survivors again (after new tests), less those
benchmarks/mutation_explained.yaml explains (they stay survivors).
--reuse OLD_WORKDIR takes an earlier run's records for the mutants whose function and mutation are unchanged
(the original and the mutated function's code identical in both workdirs) and runs their survivors again with
today's tests; every other mutant runs. --no-new runs only mutants with a record (survivors, with
--rerun-survivors) and writes the results file from the records, counting the others as not run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.common import write_results

# file -> the pytest arguments of the tests that guard it (fast ones first: -x stops at the first failure).
# Tests are left out by node id, not by -k: `-k "not hang"` also drops every test whose name holds "changes".
HANG_TEST = "tests/harness/test_adversarial.py::test_hang_and_forked_children_are_killed"  # sleeps to its limit
TARGETS: dict[str, list[str]] = {
    "harness/static_checks.py": ["tests/harness/test_static_rules.py", "tests/harness/test_static_checks.py"],
    "harness/guard.py": ["tests/harness/test_runtime_guard.py", "tests/harness/test_adversarial.py",
                         "--deselect", HANG_TEST],
    "harness/checking.py": ["tests/harness/test_checking.py", "tests/harness/test_evaluate_cpu.py", "tests/harness/test_adversarial.py",
                            "tests/harness/test_published_specs.py", "--deselect", HANG_TEST,
                            "--deselect", "tests/harness/test_published_specs.py::test_profiles_in_a_worker",
                            "-m", "not slow"],
    "kb_server/api/deps.py": ["tests/kb_server/test_api_auth_routes.py", "tests/kb_server/test_api.py",
                              "-k", "route or token or loopback or reads or upload"],
    "kb_server/prompt.py": ["tests/kb_server/test_prompt.py", "tests/kb_server/test_api.py", "-k", "prompt"],
}
# file -> the only functions whose mutants run (deps.py: the auth guards, not the store plumbing; prompt.py: the
# passages' order across queries, a passage's cut to its cap, the choice of whole or cut passages, the kernel
# section's fit and its excerpts' assembly; not the budget's split (_fit, 287 mutants) or the rendering of
# sections, which one run on 2 busy cores could not also cover)
FUNCTIONS = {"kb_server/api/deps.py": ("_token_ok", "_unauthorized", "_bound_to_loopback", "require_read",
                                       "require_write"),
             "kb_server/prompt.py": ("_ranked_hits", "_passage_block", "_fit_passages", "_kernels_section",
                                     "_kernels_within")}
RULE_TUPLES = ("FORBIDDEN_IMPORTS", "FORBIDDEN_ATTRS", "FORBIDDEN_CALLS", "FORBIDDEN_NAMES", "PATCH_ROOTS")
EXPLAINED = ROOT / "benchmarks" / "mutation_explained.yaml"
MUTMUT_CFG = """[mutmut]
source_paths=
    harness
    kb_server
only_mutate=
{only}
also_copy=
    agent_client
    ingest
    corpus
    benchmarks
    examples
    kernelkb_cli.py
    constraints.txt
"""


def copy_tree(workdir: Path) -> None:
    """The working tree as git sees it (tracked and untracked, ignored files left out)."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                           capture_output=True).stdout.decode().split("\0")
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            dst = workdir / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)


def generate(workdir: Path, files: list[str], only: tuple[str, ...] = ()) -> dict[str, list[str]]:
    """mutmut's mutants of `files` under workdir/mutants; file -> mutant names."""
    (workdir / "setup.cfg").write_text(MUTMUT_CFG.format(only="\n".join(f"    {f}" for f in files)))
    os.chdir(workdir)  # mutmut reads its settings from the working directory
    from mutmut.__main__ import create_mutants
    from mutmut.configuration import reset_config
    from mutmut.mutation.trampoline import set_mutant_under_test
    from mutmut.utils.file_utils import copy_also_copy_files, copy_src_dir

    reset_config()
    set_mutant_under_test("mutant_generation")
    copy_src_dir()
    copy_also_copy_files()
    create_mutants(1)
    set_mutant_under_test("")
    out = {}
    for f in files:
        names = list(json.loads((workdir / "mutants" / f"{f}.meta").read_text())["exit_code_by_key"])
        if only or f in FUNCTIONS:
            names = [n for n in names if function_of(n) in (only or FUNCTIONS[f])]
        out[f] = names
    return out


def function_of(mutant: str) -> str:
    """`kb_server.api.deps.x_require_read__mutmut_3` -> `require_read` (methods: `Class.method`)."""
    name = mutant.rpartition(".")[2].rsplit("__mutmut_", 1)[0]
    return name[2:] if name.startswith("x_") else name.lstrip("x").replace("\u01c1", ".").strip(".")


def function_code(workdir: Path, file: str, mutant: str, modules: dict) -> str | None:
    """The original and the mutated function of `mutant` as written in workdir/mutants (None: not there)."""
    import libcst as cst
    from mutmut.mutation.diff_apply import read_mutant_function, read_original_function

    if mutant.startswith("static_checks:"):  # a rule tuple's element: the tuple is the code
        path = workdir / "mutants" / file
        return mutant if path.is_file() else None
    key = (workdir, file)
    if key not in modules:
        path = workdir / "mutants" / file
        modules[key] = cst.parse_module(path.read_text()) if path.is_file() else None
    if modules[key] is None:
        return None
    try:
        return "\n".join(cst.Module([f]).code for f in (read_original_function(modules[key], mutant),
                                                        read_mutant_function(modules[key], mutant)))
    except Exception:  # noqa: BLE001  the function or the mutant is not in that module
        return None


def reused_records(old: Path, workdir: Path, mutants_by_file: dict[str, list[str]]) -> list[dict]:
    """The records of the run in `old` whose mutant is the same code in `workdir` (survivors included)."""
    records = {r["mutant"]: r for r in map(json.loads, (old / "progress.jsonl").read_text().splitlines())}
    modules: dict = {}
    out = []
    for file, names in mutants_by_file.items():
        if file == "harness/static_checks.py" and (old / file).read_bytes() != (workdir / file).read_bytes():
            names = [n for n in names if not n.startswith("static_checks:")]
        for name in names:
            if name in records and records[name]["status"] in ("killed", "survived"):
                code = function_code(workdir, file, name, modules)
                if code is not None and code == function_code(old, file, name, modules):
                    out.append({**records[name], "reused_from": str(old)})
    return out


def rule_mutants(workdir: Path) -> list[str]:
    """`static_checks:TUPLE:element` for every element of the static checks' rule tuples."""
    sys.path.insert(0, str(workdir))
    from harness import static_checks

    return [f"static_checks:{name}:{item}" for name in RULE_TUPLES for item in getattr(static_checks, name)]


def preload() -> None:
    """What every child would import: imported once here, before the forks."""
    import pytest  # noqa: F401
    import torch
    import triton  # noqa: F401
    from fastapi.testclient import TestClient  # noqa: F401

    import harness  # noqa: F401  (from mutants/: the trampolines pick a mutant when called)
    from kb_server.config import KBSettings
    from kb_server.embeddings import get_embedder

    torch.set_num_threads(1)  # no thread pool in the parent: the forks start clean
    get_embedder(KBSettings().model)


def run_one(mutant: str, args: list[str], timeout_s: float, log: Path) -> tuple[str, float]:
    """Fork, run the tests under `mutant` in the child, wait; (status, seconds)."""
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: its own process group, so a timeout takes its workers down with it
        os.setsid()
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        try:
            import pytest

            if mutant.startswith("static_checks:"):
                _, name, item = mutant.split(":", 2)
                from harness import static_checks

                setattr(static_checks, name, tuple(x for x in getattr(static_checks, name) if x != item))
                os.environ["MUTANT_UNDER_TEST"] = ""
            else:
                os.environ["MUTANT_UNDER_TEST"] = mutant
            code = pytest.main([*args, "-x", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                                "-W", "ignore"])
        except BaseException:  # noqa: BLE001  anything that stops the tests is a kill
            code = 99
        os._exit(int(code))
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            code = os.waitstatus_to_exitcode(status)
            break
        if time.monotonic() - t0 > timeout_s:
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "timeout", time.monotonic() - t0
        time.sleep(0.05)
    seconds = time.monotonic() - t0
    if code == 0:
        return "survived", seconds
    return ("killed" if code in (1, 2, 3, 99) or code < 0 else f"error {code}"), seconds


STRING = re.compile(r"""(?P<q>["'])(?P<s>(?:\\.|(?!(?P=q)).)*)(?P=q)""")


def category(diff: str) -> str | None:
    """"message" where only the wording of messages changes (a string with a space wrapped in XX or its case
    changed), "passing reason" where only the empty reason of a passing check does; else None."""
    old = [line[1:] for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    new = [line[1:] for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    if not old or len(old) != len(new):
        return None
    kinds = set()
    for a, b in zip(old, new):
        sa, sb = STRING.findall(a), STRING.findall(b)
        if STRING.sub('""', a) != STRING.sub('""', b) or len(sa) != len(sb):
            return None
        for (_, x), (_, y) in zip(sa, sb):
            if x == y:
                continue
            if x == "" and y == "XXXX" and re.search(r"return True, |\"\" if ", a):
                kinds.add("passing reason")
            elif " " in x and y in (f"XX{x}XX", x.upper(), x.lower()):
                kinds.add("message")
            else:
                return None
    return kinds.pop() if len(kinds) == 1 else None


def diff_of(workdir: Path, file: str, mutant: str) -> str:
    if mutant.startswith("static_checks:"):
        _, name, item = mutant.split(":", 2)
        return f"{name} without {item!r}"
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    return get_diff_for_mutant(mutant, path=Path(file))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--files", nargs="+", default=list(TARGETS), choices=list(TARGETS))
    parser.add_argument("--workdir", type=Path, help="scratch folder (default: a new temporary one)")
    parser.add_argument("--resume", action="store_true", help="continue the run recorded in --workdir")
    parser.add_argument("--rerun-survivors", action="store_true",
                        help="with --workdir: copy the current tests/ there and run its survivors again")
    parser.add_argument("--reuse", type=Path, metavar="OLD_WORKDIR",
                        help="take an earlier run's records of unchanged mutants; their survivors run again")
    parser.add_argument("--no-new", action="store_true",
                        help="run no mutant without a record in --workdir (the results file counts them not run)")
    parser.add_argument("--functions", nargs="+", default=[], metavar="NAME",
                        help="only these functions' mutants (instead of FUNCTIONS' choice for the files)")
    parser.add_argument("--limit", type=int, default=0, help="at most this many mutants per file (0: all)")
    args = parser.parse_args()
    try:
        import mutmut
    except ImportError:
        parser.error("mutmut is not installed: pip install -e '.[dev]' (mutmut 3.8)")
    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="kkb-mutation-"))).resolve()
    progress = workdir / "progress.jsonl"
    workdir.mkdir(parents=True, exist_ok=True)
    with (workdir / "commands.txt").open("a") as f:  # every invocation on this workdir, for the results file
        f.write(f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {shlex.join(sys.argv)}\n")
    again = args.resume or args.rerun_survivors
    if not (again and (workdir / "mutants").is_dir()):
        workdir.mkdir(parents=True, exist_ok=True)
        copy_tree(workdir)
    if args.rerun_survivors:
        for target in (workdir / "tests", workdir / "mutants" / "tests"):
            shutil.copytree(ROOT / "tests", target, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("__pycache__"))
    mutants_by_file = generate(workdir, args.files, tuple(args.functions))
    if "harness/static_checks.py" in args.files:
        mutants_by_file["harness/static_checks.py"] += rule_mutants(workdir / "mutants")
    done: dict = {}
    if again and progress.is_file():
        done = {r["mutant"]: r for r in map(json.loads, progress.read_text().splitlines())}
    if args.reuse:
        taken = [r for r in reused_records(args.reuse.resolve(), workdir, mutants_by_file) if r["mutant"] not in done]
        with progress.open("a") as f:
            f.writelines(json.dumps(r) + "\n" for r in taken)
        done.update({r["mutant"]: r for r in taken})
        print(f"reused {len(taken)} records from {args.reuse} ({sum(r['status'] == 'survived' for r in taken)} "
              "survivors, run again)", flush=True)
    recorded = set(done)
    # a survivor runs again when taken from an earlier run, and after new tests (--rerun-survivors) unless it
    # is explained
    explained = (yaml.safe_load(EXPLAINED.read_text()) if EXPLAINED.is_file() else None) or {}
    by_name, by_category = explained.get("mutants") or {}, explained.get("categories") or {}

    def again_now(r: dict) -> bool:
        if r["status"] != "survived":
            return False
        if "reused_from" in r:
            return True
        return args.rerun_survivors and r["mutant"] not in by_name and \
            category(diff_of(workdir, r["file"], r["mutant"])) not in by_category

    done = {name: r for name, r in done.items() if not again_now(r)}

    mutants_dir = workdir / "mutants"
    os.chdir(mutants_dir)
    sys.path[:] = [str(mutants_dir)] + [p for p in sys.path if Path(p or ".").resolve() != ROOT]
    # the harness's workers import the mutated modules too, and those import mutmut's trampoline
    mutmut_site = str(Path(mutmut.__file__).resolve().parents[1])
    os.environ["PYTHONPATH"] = os.pathsep.join([str(mutants_dir), mutmut_site,
                                                os.environ.get("PYTHONPATH", "")])
    os.environ.update({"TRITON_INTERPRET": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
                       "TOKENIZERS_PARALLELISM": "false", "MUTANT_UNDER_TEST": ""})
    preload()
    logs = workdir / "logs"
    logs.mkdir(exist_ok=True)
    report: dict = {"workdir": str(workdir), "invocations": (workdir / "commands.txt").read_text().splitlines(),
                    "files": {}}
    for file in args.files:
        targets = TARGETS[file]
        names = mutants_by_file[file][: args.limit or None]
        todo = {n for n in names if n not in done and not (args.no_new and n not in recorded)}
        clean_s = None
        if todo:
            status, clean_s = run_one("", targets, 1800, logs / "clean.log")
            if status != "survived":  # the clean run must pass, else every mutant "dies"
                print(f"{file}: the tests fail without any mutant; see {logs / 'clean.log'}", file=sys.stderr)
                return 1
            timeout_s = max(60.0, 4 * clean_s)
            print(f"{file}: {len(names)} mutants, {len(todo)} to run, clean run {clean_s:.1f} s, "
                  f"timeout {timeout_s:.0f} s", flush=True)
        for i, name in enumerate(names):
            if name not in todo:
                continue
            status, seconds = run_one(name, targets, timeout_s, logs / "last.log")
            done[name] = {"mutant": name, "file": file, "status": status, "seconds": round(seconds, 2)}
            with progress.open("a") as f:
                f.write(json.dumps(done[name]) + "\n")
            if status == "survived":
                shutil.copy(logs / "last.log", logs / f"survived-{i}.log")
            print(f"  [{i + 1}/{len(names)}] {status:<9} {seconds:6.1f} s  {name}", flush=True)
        report["files"][file] = {"tests": targets, "functions": args.functions or list(FUNCTIONS.get(file, ["all"])),
                                 "clean_run_s": clean_s and round(clean_s, 1), "mutants": len(names)}
    os.chdir(workdir)
    for file, entry in report["files"].items():
        records = [done[n] for n in mutants_by_file[file][: args.limit or None] if n in done]
        for status in ("killed", "survived", "timeout"):
            entry[status] = sum(r["status"] == status for r in records)
        entry["errors"] = sum(r["status"].startswith("error") for r in records)
        entry["not_run"] = len(mutants_by_file[file][: args.limit or None]) - len(records)
        entry["killed_in_earlier_run"] = sum(r["status"] == "killed" and "reused_from" in r for r in records)
        entry["by_function"] = {}
        for name in mutants_by_file[file][: args.limit or None]:
            counts = entry["by_function"].setdefault(
                "rule tuples" if name.startswith("static_checks:") else function_of(name),
                {"mutants": 0, "killed": 0, "survived": 0, "timeout": 0, "errors": 0, "not_run": 0})
            counts["mutants"] += 1
            status = done[name]["status"] if name in done else "not_run"
            counts[status if status in counts else "errors"] += 1
        entry["survivors"] = []
        for r in records:
            if r["status"] != "survived":
                continue
            diff = diff_of(workdir, file, r["mutant"])
            kind = category(diff)
            reason = by_name.get(r["mutant"])
            if reason is None and kind in by_category:
                reason = f"{kind}: {by_category[kind]}"
            entry["survivors"].append({"mutant": r["mutant"], "diff": diff, "category": kind,
                                       "explanation": reason or "unexplained"})
    os.chdir(ROOT)
    path = write_results("mutation", report, packages=["mutmut", "pytest", "torch", "triton", "fastapi"])
    unexplained = [s["mutant"] for e in report["files"].values() for s in e["survivors"]
                   if s["explanation"] == "unexplained"]
    for file, e in report["files"].items():
        print(f"{file}: {e['mutants']} mutants, {e['killed']} killed, {e['timeout']} timed out, "
              f"{len(e['survivors'])} survived, {e['errors']} errors, {e['not_run']} not run")
    print(f"unexplained survivors: {len(unexplained)}" + "".join(f"\n  {n}" for n in unexplained))
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
