"""Write docs/RESULTS.md, and the README's headline numbers, from the committed results files.

Usage: python3 scripts/results_md.py [--check]

Every table names the file it was read from (under benchmarks/results/), the command that wrote that file
(options that only name where its output went left out) and its date. --check writes nothing and exits 1
where docs/RESULTS.md or the README's headline block differ from what the files give
(tests/test_results_md.py runs the same comparison).
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from benchmarks.kernelbench_rows import BELOW, sample_problems
from scripts.library_table import COLUMNS_NOTE, load_table, table_text

RESULTS = REPO / "benchmarks" / "results"
DOC = REPO / "docs" / "RESULTS.md"
README = REPO / "README.md"
HEAD_START, HEAD_END = "<!-- headline:start -->", "<!-- headline:end -->"
COMPUTE_BOUND = ("attention", "gemm_epilogue")


def load(path: Path) -> dict:
    return json.loads(path.read_text())


def newest(pattern: str, where=lambda d: True) -> Path | None:
    """The results file matching the pattern whose "date" is latest (among those `where` accepts)."""
    found = [(load(Path(f)), Path(f)) for f in glob.glob(str(RESULTS / pattern))]
    found = [(d, f) for d, f in found if where(d)]
    return max(found, key=lambda df: (df[0].get("date", ""), df[1].name))[1] if found else None


def link(path: Path, up: str = "../") -> str:
    return f"[`{path.name}`]({up}{path.relative_to(REPO).as_posix()})"


def command(data: dict) -> str:
    """The command that wrote a file, without the options that only name where its output went."""
    cmd = re.sub(r"\s--(out|out-dir)(=|\s+)\S+", "", data.get("command") or "?")
    return re.sub(r"^\S*/python3?\s", "python3 ", cmd)


def source(path: Path, data: dict) -> str:
    commit = f" at commit `{data['commit'][:12]}`" if data.get("commit") else ""
    return f"From {link(path)}, written {data.get('date', '?')[:10]}{commit} by `{command(data)}`."


def f(x, spec: str) -> str:
    return "-" if x is None else format(x, spec)


def table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(str(c) for c in r) + " |" for r in rows])


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def knowledge_base() -> str:
    path = newest("kb-*.json")
    kb = load(path)
    ing, again = kb["ingest"], kb["reingest_unchanged"]
    rows = [[f"{int(n):,}", f(s["hybrid"]["p50_ms"], ".1f"), f(s["hybrid"]["p99_ms"], ".1f"),
             f(s["hybrid_filtered"]["p50_ms"], ".1f"), f(s["dense"]["p50_ms"], ".1f"),
             f(s["lexical"]["p50_ms"], ".1f"), f(s["query_embedding_only"]["p50_ms"], ".1f")]
            for n, s in sorted(kb["search"].items(), key=lambda t: int(t[0]))]
    return "\n".join([
        "## Knowledge base: ingest and search", "",
        source(path, kb) + f" {kb['machine']['cpu_count']} CPU cores.", "",
        (f"- Ingest: {ing['pipeline_chunks_per_s']} chunks/s through the pipeline against "
         f"{ing['raw_encode_chunks_per_s']} for the bare encoder ({ing['pipeline_vs_raw']} of it; goal "
         f"`{ing['goal']}`)."),
        (f"- Re-ingesting {again['files']:,} unchanged files: {again['in_process_s']} s in process, "
         f"{again['kkb_cli_s']} s through `kkb ingest` (goal {again['goal']})."),
        "", "Search latency, query embedding included (ms):", "",
        table(["chunks", "hybrid p50", "hybrid p99", "hybrid + accelerator filter p50", "dense p50", "BM25 p50",
               "query embedding p50"], rows)])


def retrieval() -> str:
    runs = sorted(((load(Path(p)), Path(p)) for p in glob.glob(str(RESULTS / "retrieval-*.json"))),
                  key=lambda dp: dp[0]["date"])
    latest = {d["questions_file"]: (d, p) for d, p in runs}  # the newest run of each question file
    parts = ["## Retrieval quality", "",
             ("Questions with the documents that answer them (`python3 benchmarks/bench_retrieval.py`); recall@5: "
              "the share whose answer is in the top 5, MRR: the mean reciprocal rank of the first answer.")]
    modes = (("hybrid", "hybrid"), ("lexical", "BM25 only"), ("dense", "dense only"))
    for qfile, (d, p) in sorted(latest.items()):
        rows = [[name, f(d["modes"][m]["recall@5"], ".3f"), f(d["modes"][m]["mrr"], ".3f"),
                 f(d["modes"][m]["latency"]["p50_ms"], ".1f")] for m, name in modes]
        parts += ["", f"### `{qfile}` ({d['n_questions']} questions, {d['ingest']['chunks']} chunks)", "",
                  source(p, d) + f" Each retriever {d['depth']} deep before the fusion.", "",
                  table(["mode", f"recall@{d['k']}", "MRR", "p50 ms"], rows)]
    rows = [[link(p), f"`{Path(d['questions_file']).name}`", d["ingest"]["chunks"],
             f(d["modes"]["hybrid"]["recall@5"], ".3f"), f(d["modes"]["hybrid"]["mrr"], ".3f")] for d, p in runs]
    return "\n".join(parts + ["", "Every committed run:", "",
                              table(["file", "questions", "chunks", "hybrid recall@5", "hybrid MRR"], rows)])


def server() -> str:
    rows = []
    for p in sorted(RESULTS.glob("server-*.json")):
        d = load(p)
        http = {r["clients"]: r for r in d["http"]}
        rows.append([link(p), f"`{command(d)}`", f(d["in_process"]["p50_ms"], ".1f"), f(http[1]["p50_ms"], ".1f"),
                     f(http[8]["searches_per_s"], ".1f"), f(http[32]["searches_per_s"], ".1f"),
                     d["client"].split(" ")[0]])
    parts = ["## The HTTP server", "",
             ("`kkb serve` over 100k chunks on loopback, the clients in a second process (`python3 "
              "benchmarks/bench_server.py`; 2 shared CPU cores: the ratios within one run are the meaningful "
              "numbers)."), "",
             table(["file", "command", "in-process p50 ms", "HTTP p50 ms (1 client)", "searches/s (8 clients)",
                    "searches/s (32 clients)", "client"], rows)]
    probe_file = newest("server-*.json", lambda d: "bm25_rebuild_probe" in d)
    if probe_file:
        probe = load(probe_file)["bm25_rebuild_probe"]
        during = probe["searches_during_rebuild"]
        parts += ["", (f"After a document write at {probe['chunks']:,} chunks ({link(probe_file)}): BM25 found the "
                       f"new document {probe['bm25_finds_new_document_after_s']} s later; the {during['n']:,} "
                       f"searches meanwhile had p50/p99 {during['p50_ms']:.1f}/{during['p99_ms']:.1f} ms; "
                       f"`refresh_lexical()` rebuilds synchronously in {probe['write_then_refresh_lexical_s']} s.")]
    return "\n".join(parts)


def harness_section() -> str:
    path = newest("harness-h200-*.json",
                  lambda d: {"timing", "crash", "throughput"} <= set(d.get("sections", {})))
    d = load(path)
    timing, crash, tp = (d["sections"][k] for k in ("timing", "crash", "throughput"))
    rows = [[op, f(t["harness_median_ms"], ".4f"), f(t["do_bench_median_ms"], ".4f"), f(t["ratio"], ".3f"),
             f(100 * t["spread"], ".2f") + "%", f(100 * t["do_bench_spread"], ".2f") + "%"]
            for op, t in timing.items() if isinstance(t, dict) and "ratio" in t]
    counts = ", ".join(f"{k} {v}" for k, v in sorted(tp["status_counts"].items()))
    return "\n".join([
        "## The harness on the H200", "",
        source(path, d) + f" {d['device_name']}, torch {d['torch']}, triton {d['triton']}, CUDA {d['cuda']}.", "",
        ("The harness's median against `triton.testing.do_bench` on the same op, three runs each, alternating "
         "(goals: within 3%, run-to-run spread at most 2%):"), "",
        table(["op", "harness ms", "do_bench ms", "ratio", "harness spread", "do_bench spread"], rows), "",
        (f"- An illegal-address Triton candidate, then an honest one in the same pool: "
         f"`{crash['triton_oob']['status']}`, then `{crash['honest_after_triton_crash']['status']}`."),
        (f"- Throughput: {tp['candidates_per_minute']:.1f} candidates/min for a batch of {tp['n_candidates']} "
         f"small candidates ({counts}).")])


def tune_section() -> str:
    parts = ["## Offline tuning sessions on the H200", "",
             "`kkb tune --provider offline`: the library's kernel for the spec, adapted and tuned through the harness."]
    for p in sorted(RESULTS.glob("tune-*.json")):
        d = load(p)
        rows = [[s["spec"], f(s.get("best_speedup_vs_compile"), ".2f"), f(s.get("best_speedup_vs_eager"), ".2f"),
                 f"{s['evaluated']} ({s['passed']})", f(s.get("time_to_best_s"), ".0f")] for s in d["specs"]]
        parts += ["", source(p, d) + f" {d['budget']} candidates per spec.", "",
                  table(["spec", "best x torch.compile", "best x eager", "evaluated (passed)", "seconds to best"],
                        rows)]
    return "\n".join(parts)


def library_section() -> str:
    lib = load_table()
    vendor: dict[str, tuple[dict, dict, Path]] = {}  # the newest vendor run of each spec
    for p in sorted(RESULTS.glob("vendor-h200-*.json")):
        d = load(p)
        for r in d["rows"]:
            if r["spec"] not in vendor or d["date"] > vendor[r["spec"]][1]["date"]:
                vendor[r["spec"]] = (r, d, p)
    rows = [[spec, f(r["speedup_vs"].get("cublas_linear"), ".3f"), f(r["speedup_vs"].get("cublaslt_bias_gelu"), ".3f"),
             f(r["speedup_vs"].get("sdpa"), ".3f"), f(r["speedup_vs"].get("eager_reference"), ".2f"), link(p)]
            for spec, (r, d, p) in sorted(vendor.items())]
    pick = "the row with the median latency" if lib["pick"] == "median" else "the newest row"
    return "\n".join([
        "## The skill library on the H200", "",
        ("One harness run of every spec, and repeats of some, on a CUDA machine (`bash benchmarks/gpu/library.sh`); "
         f"per spec {pick} over the runs the table file names, less the rows of configurations changed "
         "since. " + COLUMNS_NOTE), "",
        source(lib["path"], lib) + " Each row names its run file and the commit that holds it (`git show "
        "COMMIT:benchmarks/results/FILE`).", "", table_text(lib), "",
        "Runs: " + ", ".join(f"`{r['file']}` in commit {r['commit']}" for r in lib["runs"]) + ".", "",
        "### Against the vendor libraries", "",
        ("`python3 benchmarks/bench_vendor.py`: the vendor call's median time over ours in the same window (the "
         "harness's timing on fresh clones of the inputs, alternating runs), from the newest run of each spec. "
         "cuBLAS `F.linear` alone leaves the epilogue out; cuBLASLt runs its own bias + GELU; SDPA is "
         "`F.scaled_dot_product_attention`."), "",
        table(["spec", "x cuBLAS F.linear", "x cuBLASLt bias+GELU", "x SDPA", "x eager", "file"], rows)])


def library_specs() -> set[str]:
    """The spec names the library holds now (corpus/kernels/<family>/specs/*.py)."""
    return {p.stem for p in (REPO / "corpus" / "kernels").glob("*/specs/*.py")}


def library_run_section() -> str:
    """Per card other than the table's: its newest whole-library run, with the rows of later partial runs on the
    same card (a family's specs rerun after a change) in place of its own; specs the library no longer holds
    are named and left out."""
    table_card = load_table().get("accelerator", "h200")
    runs: dict[str, list[tuple[dict, Path]]] = {}
    for p in RESULTS.glob("library-*.json"):
        d = load(p)
        card = d.get("accelerator")
        if "rows" in d and card and card != table_card and not p.name.startswith(("library-compare", "library-table")):
            runs.setdefault(card, []).append((d, p))
    held, parts = library_specs(), []
    for card, found in sorted(runs.items()):
        whole = [(d, p) for d, p in found if _label(p) == "all"]
        if not whole:
            continue
        base, base_path = max(whole, key=lambda dp: dp[0]["date"])
        later = sorted(((d, p) for d, p in found if d["date"] > base["date"]), key=lambda dp: dp[0]["date"])
        by_spec = {r["spec"]: r for r in base["rows"] if r.get("spec")}
        label = {s: "all" for s in by_spec}
        rerun = []
        for d, p in later:
            ran = {r["spec"]: r for r in d["rows"] if r.get("spec") and r["status"] == "passed"}
            by_spec.update(ran)
            label.update({s: _label(p) for s in ran})
            asked = re.search(r"--specs[= ](\S+)", d.get("command") or "")
            unstarted = [s for s in asked.group(1).split(",") if s not in ran] if asked else []
            rerun.append(f"{source(p, d)} It reran {len(ran)} specs after changes to their families; their rows "
                         f"below are from it (run `{_label(p)}`)."
                         + (f" {', '.join(unstarted)} did not start within its budget; their rows are the whole "
                            "run's." if unstarted else ""))
        gone = sorted(s for s in by_spec if s not in held)
        rows = [by_spec[s] for s in sorted(by_spec, key=lambda s: (by_spec[s]["family"], s)) if s in held]
        passed = [r for r in rows if r["status"] == "passed"]
        low = sorted((r for r in passed if (r.get("speedup_vs_compile") or 0) < BELOW),
                     key=lambda r: r["speedup_vs_compile"])
        below = ", ".join(f"{r['spec']} {r['speedup_vs_compile']:.2f}x" for r in low) or "none"
        parts += [f"## The skill library on the {card.upper()}", "",
                  source(base_path, base) + " Every spec once through the harness "
                  "(`bash benchmarks/gpu/library.sh all`).", *(["", *rerun] if rerun else []),
                  *(["", f"Left out, no longer in the library: {', '.join(gone)}."] if gone else []), "",
                  (f"{len(passed)} of {len(rows)} specs pass; geometric mean "
                   f"{geomean([r['speedup_vs_eager'] for r in passed]):.2f}x over eager and "
                   f"{geomean([r['speedup_vs_compile'] for r in passed]):.2f}x over torch.compile; below 0.97x "
                   f"torch.compile: {below}."),
                  "",
                  table(["family", "spec", "shape", "dtype", "status", "ms", "x eager", "x compile", "of limit",
                         "run"],
                        [[r["family"], r["spec"], r["shape"], r["dtype"], r["status"], f(r.get("latency_ms"), ".4f"),
                          f(r.get("speedup_vs_eager"), ".2f"), f(r.get("speedup_vs_compile"), ".2f"),
                          f"{r['fraction_of_limit']:.0%} {r.get('limit_kind') or ''}".strip()
                          if r.get("fraction_of_limit") is not None else "-", label[r["spec"]]] for r in rows])]
    return "\n".join(parts) if parts else "## The skill library on other cards\n\nNo run."


def _label(path: Path) -> str:
    """A library run's label, from its file name (library-<card>-<label>-<UTC>.json)."""
    return path.stem.split("-", 2)[-1].rsplit("-", 1)[0]


def _kernelbench_run(device: str, path: Path) -> list[str]:
    d = load(path)
    s = d["summary"]
    sizes = [f"inputs of at most {d['max_elements']:,} elements" if d.get("max_elements") else "",
             f"at most {d['max_flops']:.0e} FLOPs a forward" if d.get("max_flops") else ""]
    scaled = " and ".join(x for x in sizes if x)
    parts = [source(path, d) + (f" Sizes scaled to {scaled}." if scaled else " Published sizes.")
             + (f" {d['note']}" if d.get("note") else ""), "",
             f"Passed: {s['passed']} of {s['problems']} problems ({100 * s['pass_rate']:.1f}%)."]
    failed = [[f"`{p}`", (why or "-").replace("|", "/").replace("\n", " ")[:200]]
              for p, why in sorted(s.get("failed", {}).items())]
    parts += (["", "Failed, with the first reason the harness gave:", "", table(["problem", "reason"], failed)]
              if failed else ["", "No problem failed."])
    timed = [r for r in d["problems"] if r.get("status") == "passed" and (r.get("best") or {}).get("latency_ms")]
    if timed and device == "gpu":
        rows = [[f"`{r['problem']}`", r.get("best_route") or r["best"].get("route"), f(r["best"]["latency_ms"], ".4f"),
                 f(r["best"]["speedup_vs_eager"], ".2f"), f(r["best"]["speedup_vs_compile"], ".2f")] for r in timed]
        fast = ", ".join(f"p={k}: {v:.2f}" for k, v in (s.get("fast_p_vs_compile") or {}).items())
        parts += ["", table(["problem", "best route", "ms", "x eager", "x torch.compile"], rows), "",
                  (f"Geometric mean of the best speedups: {f(s.get('geomean_vs_eager'), '.2f')}x over eager, "
                   f"{f(s.get('geomean_vs_compile'), '.2f')}x over torch.compile; fast_p over torch.compile {fast}.")]
    return parts


def _sample_of(data: dict) -> str:
    """The sample file a GPU run measured (its --sample), or "" for a run named by --problems or --levels."""
    m = re.search(r"--sample\s+(\S+)", data.get("command") or "")
    return m.group(1) if m else ""


def _sample_text(sample: str) -> str:
    """A sample file as the page names it: one in the tree by its path, a run's own list (kept in an ignored
    folder, or outside the tree) as such."""
    if not sample.startswith((".", "/")):
        return f"`{sample}`"
    return f"`{Path(sample).name}` (a rerun's own list: its results file names the problems)"


def _gpu_run(d: dict) -> bool:
    card = d.get("card") or {}
    short_id = card.get("short_id", "gpu") if isinstance(card, dict) else str(card)  # the suite names it plainly
    return short_id != "cpu" and d.get("name", "").startswith("kernelbench") and d.get("device", "cpu") != "cpu"


def newest_kernelbench(device: str) -> Path | None:
    """The newest run of bench_kernelbench on the CPU (kernelbench-cpu-*) or on a GPU: kernelbench-gpu-* of
    older runs, kernelbench-<card>-* (h100, h200, ...) since runs name their card."""
    if device == "cpu":
        return newest("kernelbench-cpu-*.json")
    return newest("kernelbench-*.json", where=_gpu_run)


def newest_kernelbench_samples() -> list[Path]:
    """The newest GPU run of each sample file (one KernelBench sample, one benchmark), in the samples' order."""
    runs: dict[str, Path] = {}
    for f in glob.glob(str(RESULTS / "kernelbench-*.json")):
        d = load(Path(f))
        if _gpu_run(d):
            key = _sample_of(d)
            best = runs.get(key)
            if best is None or (d.get("date", ""), Path(f).name) > (load(best).get("date", ""), best.name):
                runs[key] = Path(f)
    return [runs[k] for k in sorted(runs, key=lambda k: (Path(k).name != "kernelbench_h200_sample.txt", k))]


def kernelbench() -> str:
    parts = ["## KernelBench through the offline mode", "",
             ("`python3 benchmarks/bench_kernelbench.py`: KernelBench's problems as published (a local copy; only "
              "problem names and numbers are committed), each through the offline provider's routes (the general "
              "lowering and the library's kernels), judged by the harness.")]
    path = newest_kernelbench("cpu")
    parts += ["", "### CPU (Triton interpreter, reduced sizes)", ""]
    parts += _kernelbench_run("cpu", path) if path else ["No `kernelbench-cpu-*.json` is committed yet."]
    for path in newest_kernelbench_samples() or [None]:
        d = load(path) if path else {}
        sample = _sample_of(d)
        card = (d.get("card") or {}).get("name") or "GPU"
        parts += ["", f"### GPU: {_sample_text(sample) if sample else 'problems named on the command line'}, "
                      f"on {card}" if path else "### GPU", ""]
        parts += _kernelbench_run("gpu", path) if path else ["No GPU run of `bench_kernelbench.py` is committed yet."]
    newest_rows = latest_rows_section()
    parts += [newest_rows] if newest_rows else []
    extra = (("level3", "CPU, level 3 (full models; a subset, reduced sizes)"),
             ("spot", "CPU, a spot check of levels 1 and 2 after the latest lowering changes"))
    for name, title in extra:
        path = newest(f"kernelbench-{name}-cpu-*.json")
        if path:
            parts += ["", f"### {title}", ""] + _kernelbench_run("cpu", path)
    return "\n".join(parts)


BAR_SAMPLES = ("benchmarks/kernelbench_h200_sample.txt", "benchmarks/kernelbench_sample_other.txt")


def latest_rows_section() -> str:
    """Per card, the problems of BAR_SAMPLES that are not convolutions (no "conv" in the name), each at its row of
    the newest GPU run that measured it: a rerun of a few problems replaces their rows and keeps the others'."""
    wanted = [q for sample in BAR_SAMPLES if (REPO / sample).is_file()
              for q in sample_problems(REPO / sample) if "conv" not in q.lower()]
    if not wanted:
        return ""
    by_card: dict[str, dict[str, tuple]] = {}
    for name in glob.glob(str(RESULTS / "kernelbench-*.json")):
        d = load(Path(name))
        if not _gpu_run(d):
            continue
        card = (d.get("card") or {}).get("name") or "GPU"
        for r in d["problems"]:
            held = by_card.setdefault(card, {}).get(r["problem"])
            if r["problem"] in wanted and (held is None or (d.get("date", ""), Path(name).name) > held[0]):
                by_card[card][r["problem"]] = ((d.get("date", ""), Path(name).name), r, Path(name))
    parts = ["", "### GPU: the newest row of each problem, samples together",
             "", (f"The problems of {' and '.join(f'`{Path(x).name}`' for x in BAR_SAMPLES)} that are not "
                  f"convolutions ({len(wanted)}), each at the newest committed run that measured it on the card.")]
    for card, rows in sorted(by_card.items()):
        got = [rows[q] for q in wanted if q in rows]
        speedups = [(r.get("best") or {}).get("speedup_vs_compile") for _, r, _ in got]
        below = [f"`{r['problem']}` {sp:.2f}x" for (_, r, _), sp in zip(got, speedups) if sp and sp < BELOW]
        files = sorted({link(path) for _, _, path in got})
        passed = sum(r.get("status") == "passed" for _, r, _ in got)
        parts += ["", (f"On {card}: {passed} of {len(got)} measured problems pass ({len(wanted) - len(got)} of the "
                      f"{len(wanted)} not measured); geometric mean {f(geomean(speedups), '.2f')}x torch.compile; "
                      f"below {BELOW}x: {', '.join(below) or 'none'}. Rows from {', '.join(files)}.")]
    return "\n".join(parts)


def retrieval_value() -> str:
    path = newest("retrieval_value-*.json")
    d = load(path)
    rows = [[f"`{Path(s['spec']).name}`", arm.replace("_", " "), a["prompts"], f(a["prompt_tokens_mean"], ".0f"),
             f(a["passages_per_prompt"], ".0f"), a["prompts_with_kernel_code"], f"{a['passed']}/{a['candidates']}",
             "yes" if s["same_candidates_in_both_arms"] else "no"]
            for s in d["specs"] for arm, a in ((k, s[k]) for k in ("with_retrieval", "without_retrieval"))]
    return "\n".join([
        "## What retrieval puts in the prompts", "",
        source(path, d) + (f" Provider `{d['provider']}` (a recorded session replayed in both arms: the candidates "
                           f"are the same and only the prompts differ), target {d['target']}, {d['device']}."), "",
        table(["spec", "arm", "requests", "prompt tokens (mean)", "passages a prompt", "prompts with kernel code",
               "passed", "same candidates"], rows), "",
        "What the passages are worth to a model needs a model-backed provider (`--provider anthropic|openai`)."])


def harness_cpu_section() -> str:
    path = newest("hang-*.json")
    if path is None:
        return "## The harness on the CPU\n\nNo `hang-*.json` is committed yet."
    d = load(path)
    walls = ", ".join(f"{r['wall_s']:.1f} s" for r in d["runs"])
    return "\n".join([
        "## The harness on the CPU", "",
        source(path, d) + (" A candidate that launches an honest Triton kernel and then hangs, `kkb bench` with its "
                           "default options and a cold baseline cache (goal: a verdict within 90 s)."), "",
        (f"- Whole command, each run: {walls}; the limit the verdicts named: "
         f"{', '.join(str(r['limit_s']) + ' s' for r in d['runs'])}; load average at the end "
         f"{d['load_average_at_end'][0]:.1f}.")])


def prompts_section() -> str:
    path = newest("prompts-*.json")
    if path is None:
        return "## Prompts for specs of any origin\n\nNo `prompts-*.json` is committed yet."
    d = load(path)
    by_folder: dict[str, list[int]] = {}
    for r in d["rows"]:
        folder = r["spec"].split("/")[0]
        counts = by_folder.setdefault(folder, [0, 0])
        counts[0] += 1
        counts[1] += bool(r["ok"])
    rows = [[f"`{k}`", v[0], v[1]] for k, v in sorted(by_folder.items())]
    return "\n".join([
        "## Prompts for specs of any origin", "",
        source(path, d) + (f" Each spec's prompt for {d['target']} at the default budget over HTTP; it passes with at "
                           "least three passages and an excerpt of a library kernel."), "",
        table(["folder", "specs", "passing"], rows), "",
        f"{d['ok']} of {d['specs']} pass; the fewest passages in any prompt: {d['min_passages']}."])


def mutation_section() -> str:
    paths = sorted(glob.glob(str(RESULTS / "mutation-*.json")), key=lambda f: load(Path(f)).get("date", ""),
                   reverse=True)
    if not paths:
        return "## Mutation run\n\nNo `mutation-*.json` is committed yet."
    rows = []
    for f in map(Path, paths):
        for name, e in load(f)["files"].items():
            functions = ", ".join(f"`{x}`" for x in e.get("functions", ["all"]))
            rows.append([link(f), f"`{name}`", functions, e["mutants"], e["killed"], e["survived"],
                         sum(s["explanation"] != "unexplained" for s in e["survivors"]), e.get("not_run", 0)])
    return "\n".join([
        "## Mutation runs", "",
        ("Mutants of the checks, the auth guards and the prompt builder, each run against the tests that guard "
         "its file (docs/TESTING.md says how); newest run first."), "",
        table(["results", "file", "functions", "mutants", "killed", "survived", "survivors explained", "not run"],
              rows)])


SECTIONS = (knowledge_base, retrieval, server, harness_section, harness_cpu_section, tune_section, library_section,
            library_run_section, kernelbench, prompts_section, retrieval_value, mutation_section)


def results_md() -> str:
    head = ("# Results\n\nGenerated by `python3 scripts/results_md.py` from the files under `benchmarks/results/` "
            "that each section names; edit the script, not this page. Absolute times come from one GPU of a CUDA "
            "machine, the card each section names; on a machine of 2 CPU cores only ratios within one run are meaningful.")
    return "\n\n".join([head] + [section() for section in SECTIONS]) + "\n"


def headline() -> str:
    """The README's few numbers, each with its file (links relative to the repository's root)."""
    lib = load_table()
    rows = lib["rows"]
    mem = [r for r in rows if r["family"] not in COMPUTE_BOUND and r["status"] == "passed"]
    retr_file = newest("retrieval-*.json", lambda d: d["questions_file"].endswith("/retrieval_questions.yaml"))
    held_file = newest("retrieval-*.json", lambda d: "heldout" in d["questions_file"])
    retr, held, kb_file = load(retr_file), load(held_file), newest("kb-*.json")
    p50 = load(kb_file)["search"]["100000"]["hybrid"]["p50_ms"]
    lines = [
        (f"- Skill library on the H200: {sum(r['status'] == 'passed' for r in rows)} of {len(rows)} specs pass; the "
         f"{len(mem)} memory-bound ones run at a geometric mean of "
         f"{geomean([r['speedup_vs_eager'] for r in mem]):.2f}x over eager and "
         f"{geomean([r['speedup_vs_compile'] for r in mem]):.2f}x over torch.compile (the "
         f"{'median' if lib['pick'] == 'median' else 'newest'} of {len(lib['runs'])} runs, "
         f"{link(lib['path'], '')})."),
        (f"- Retrieval: hybrid recall@5 {retr['modes']['hybrid']['recall@5']:.3f} on {retr['n_questions']} "
         f"questions ({link(retr_file, '')}), {held['modes']['hybrid']['recall@5']:.3f} on {held['n_questions']} "
         f"held-out ones ({link(held_file, '')}); hybrid search p50 {p50:.1f} ms at 100k chunks on 2 CPU cores "
         f"({link(kb_file, '')})."),
    ]
    path = newest_kernelbench("cpu")
    if path:
        d = load(path)
        lines.append(f"- KernelBench through the offline mode, on the Triton interpreter, sizes scaled down: "
                     f"{d['summary']['passed']} of the {d['summary']['problems']} problems it ran pass "
                     f"({link(path, '')}).")
    for path in newest_kernelbench_samples():
        d = load(path)
        s = d["summary"]
        card = (d.get("card") or {}).get("name") or "an H200"  # files before the card was recorded: an H200
        sample = _sample_of(d)
        what = f"the sample {_sample_text(sample)}" if sample else "problems named on the command line"
        sizes = "sizes scaled down" if d.get("max_elements") else "published sizes"
        speed = (f"; geometric mean {s['geomean_vs_compile']:.2f}x torch.compile, "
                 f"{len(s.get('below_0.97_vs_compile') or [])} below 0.97x" if s.get("geomean_vs_compile") else "")
        reached = f" ({len(s['not_reached'])} not reached within the run's budget)" if s.get("not_reached") else ""
        lines.append(f"- KernelBench through the offline mode, {what} on {card} at {sizes}: {s['passed']} of "
                     f"{s['problems']} problems pass{speed}{reached} ({link(path, '')}).")
    return "\n".join(lines)


def with_headline(readme: str) -> str:
    if HEAD_START not in readme or HEAD_END not in readme:
        raise SystemExit(f"results_md: {README} has no {HEAD_START} ... {HEAD_END} block")
    block = f"{HEAD_START}\n{headline()}\n{HEAD_END}"
    return re.sub(re.escape(HEAD_START) + r".*?" + re.escape(HEAD_END), lambda _: block, readme, flags=re.DOTALL)


def wanted() -> dict[Path, str]:
    """Each generated file and the text the results files give it."""
    return {DOC: results_md(), README: with_headline(README.read_text())}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true", help="write nothing; exit 1 where the committed text differs")
    args = p.parse_args()
    want = wanted()
    stale = [path for path, text in want.items() if not path.is_file() or path.read_text() != text]
    for path in stale:
        if args.check:
            print(f"results_md: {path.relative_to(REPO)} differs from its results files; run "
                  "python3 scripts/results_md.py", file=sys.stderr)
        else:
            path.write_text(want[path])
            print(f"wrote {path.relative_to(REPO)}")
    return 1 if stale and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
