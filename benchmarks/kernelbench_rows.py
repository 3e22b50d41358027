"""The rows of benchmarks/bench_kernelbench.py's results: per candidate, per problem, the summary, the table.

Usage: row = problem_row([candidate_row(node, proposal, verdict), ...])
       print(table(rows)); summary(rows, not_reached=[...])
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path

from agent_client.session.records import against_baseline

BELOW = 0.97  # a problem whose best is under this share of torch.compile's speed counts as a loss
VERDICT_KEYS = ("status", "latency_ms", "eager_ms", "compile_ms", "speedup_vs_eager", "speedup_vs_compile",
                "fraction_of_limit", "limit_kind")
TABLE_COLUMNS = ("problem", "status", "best route", "best ms", "compile ms", "x compile", "x eager",
                 "of limit", "passing min/median/max ms", "n")


def sample_problems(sample: Path) -> list[str]:
    """The problems a sample file names, LEVEL/STEM a line ('#' lines hold its rule)."""
    lines = [ln.strip() for ln in Path(sample).read_text(encoding="utf-8").splitlines()]
    return [ln for ln in lines if ln and not ln.startswith("#")]


def candidate_row(node, proposal, verdict) -> dict:
    """One judged candidate: its route, what the search moved, and the verdict's numbers."""
    d, meta = verdict.to_dict(), proposal.meta
    return {"id": node.node_id, "route": meta.get("route_id"), "from": meta.get("expanded_from"),
            "changed": {k: meta["tunables"][k] for k in meta.get("changed") or []},
            **{k: d.get(k) for k in VERDICT_KEYS}, "reasons": [r[:300] for r in d["reasons"][:3]],
            "tunables": meta.get("tunables") or {}}


def problem_row(candidates: list[dict]) -> dict:
    """Status, best candidate, spread of the passing ones and the sentence against torch.compile."""
    passed = [c for c in candidates if c["status"] == "passed"]
    out: dict = {"candidates": candidates, "passed": len(passed)}
    if not passed:
        first = candidates[0] if candidates else {}
        return {**out, "status": first.get("status", "no_candidate"), "reasons": first.get("reasons", [])}
    best = max(passed, key=lambda c: (c["speedup_vs_compile"] or c["speedup_vs_eager"] or 0, c["id"]))
    lat = sorted(c["latency_ms"] for c in passed if c["latency_ms"] is not None)
    sentence = against_baseline(best["latency_ms"], best["compile_ms"], best["eager_ms"],
                                f"the best candidate ({best['route']})")
    out.update(status="passed", best={k: best[k] for k in ("id", "route", *VERDICT_KEYS[1:], "tunables")},
               routes_passed=sorted({c["route"] for c in passed}), against_compile=sentence)
    if lat:
        out["spread_ms"] = {"min": lat[0], "median": statistics.median(lat), "max": lat[-1], "of": len(lat)}
    return out


def geomean(values: list[float]) -> float | None:
    values = [x for x in values if x and x > 0]
    return round(math.exp(sum(math.log(x) for x in values) / len(values)), 4) if values else None


def summary(rows: list[dict], not_reached: list[str] = ()) -> dict:
    done = [r for r in rows if "status" in r]
    passed = [r for r in done if r["status"] == "passed"]
    comp = {r["problem"]: r["best"]["speedup_vs_compile"] for r in passed
            if r["best"].get("speedup_vs_compile")}
    out = {"problems": len(done), "passed": len(passed),
           "pass_rate": round(len(passed) / len(done), 4) if done else None,
           "geomean_vs_compile": geomean(list(comp.values())),
           "geomean_vs_eager": geomean([r["best"].get("speedup_vs_eager") for r in passed]),
           "below_0.97_vs_compile": sorted(k for k, x in comp.items() if x < BELOW),
           "candidates": sum(len(r.get("candidates") or []) for r in done)}
    # where nothing beat torch.compile, both times
    out["torch_compile_faster"] = {r["problem"]: r["against_compile"] for r in passed
                                   if r["problem"] in comp and comp[r["problem"]] < 1.0}
    if comp:
        out["min_vs_compile"] = round(min(comp.values()), 4)
        out["at_or_above_1x"] = sum(1 for x in comp.values() if x >= 1.0)
        # KernelBench's fast_p: the share of all problems run that pass and beat torch.compile by more than p
        out["fast_p_vs_compile"] = {str(t): round(sum(1 for x in comp.values() if x > t) / len(done), 4)
                                    for t in (0, 1, 1.5, 2)}
    out["failed"] = {r["problem"]: (r.get("reasons") or [""])[0][:300] for r in done
                     if r["status"] != "passed"}
    if not_reached:
        out["not_reached"] = list(not_reached)
    return out


def _f(x, fmt: str = ".2f") -> str:
    return "-" if x is None else format(x, fmt)


def table(rows: list[dict]) -> str:
    """The markdown table a run prints last."""
    out = ["| " + " | ".join(TABLE_COLUMNS) + " |", "|" + "---|" * len(TABLE_COLUMNS)]
    for r in rows:
        b, s = r.get("best") or {}, r.get("spread_ms") or {}
        frac = b.get("fraction_of_limit")
        limit = "-" if frac is None else f"{frac:.0%} {b.get('limit_kind')}"
        spread = "/".join(_f(s.get(k), ".4g") for k in ("min", "median", "max")) if s else "-"
        cells = [r["problem"], r.get("status", "-"), b.get("route", "-"), _f(b.get("latency_ms"), ".4g"),
                 _f(b.get("compile_ms"), ".4g"), _f(b.get("speedup_vs_compile")),
                 _f(b.get("speedup_vs_eager")), limit, spread, str(len(r.get("candidates") or []))]
        out.append("| " + " | ".join(cells) + " |")
    s = summary(rows)
    out += ["", (f"{s['passed']}/{s['problems']} passed; geometric mean vs torch.compile "
                 f"{_f(s['geomean_vs_compile'])}x, vs eager {_f(s['geomean_vs_eager'])}x; "
                 f"{len(s['below_0.97_vs_compile'])} below {BELOW}x torch.compile")]
    return "\n".join(out)
