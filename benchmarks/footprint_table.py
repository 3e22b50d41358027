"""The harness's memory footprint of every KernelBench level 1 and 2 problem at its published sizes, per card.

Usage: python3 benchmarks/footprint_table.py --kernelbench PATH/KernelBench
           [--out benchmarks/results/footprint-<UTC>.json] [--largest benchmarks/kernelbench_largest10.txt]

Shapes only: each problem's model and inputs are built and run on the meta device (harness/memory.py), on
any machine, in seconds. Per problem: the sizes the estimate starts from (inputs, outputs, parameters, the
reference's own allocations, the inputs' drawing), the peaks of the checks, the timing and the baselines'
worker, what one evaluation needs on a GPU, and per card whether that fits (`fits`) and whether the
reference's forward alone fits (`reference_fits`). A card offers `gpu_memory_fraction` (harness/config.py)
of its memory, taken as the facts' `memory_size` (corpus/accelerators: 80 GB, 141 GB; the devices report a
little more, so the table errs on the safe side). Writes the results file and the list of the 10 problems
with the largest footprint, with the rule that picks them at its top; prints a short table last.
PATH is a local copy of KernelBench (never committed here; the files hold problem names and numbers only).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CARDS = ("h100", "h200")  # the cards the team's GPU runs use
LEVELS = ("level1", "level2")
LARGEST = 10
RULE = (f"# The {LARGEST} of KernelBench's level 1 and 2 problems with the largest estimated footprint at their "
        "published sizes\n# (needed_bytes: the larger of one evaluation's and the baselines' peak on a GPU, "
        "harness/memory.py),\n# largest first, ties by name; from {source}, written by `python3 "
        "benchmarks/footprint_table.py`\n# before any of them was measured on a GPU "
        "(benchmarks/gpu/harness_fit.py measures them).\n")
GIB = 1024**3


def card_capacities() -> dict[str, dict]:
    """Per card: its facts' memory and what one evaluation may use of it."""
    from agent_client.card import _SIZE_UNITS, load_facts
    from harness import EvalConfig

    facts, fraction = load_facts(), EvalConfig().gpu_memory_fraction
    out = {}
    for card_id in CARDS:
        size = facts[card_id]["memory_size"]
        memory = float(size["value"]) * _SIZE_UNITS[size["unit"]]
        out[card_id] = {"name": facts[card_id]["name"], "memory_bytes": int(memory),
                        "capacity_bytes": int(fraction * memory), "gpu_memory_fraction": fraction}
    return out


def problem_row(path: Path, level: str, capacities: dict[str, dict]) -> dict:
    from harness import EvalConfig, load_spec
    from harness.memory import footprint_of, meta_sizes

    sizes = meta_sizes(load_spec(path))
    fp = footprint_of(sizes, EvalConfig(), "cuda:0")
    row = {"problem": f"{level.removeprefix('level')}/{path.stem}", "sizes": asdict(sizes),
           "footprint": {k: v for k, v in fp.to_dict().items() if k.endswith("_bytes")},
           "needed_bytes": fp.needed_bytes, "cards": {}}
    for card_id, cap in capacities.items():
        row["cards"][card_id] = {"fits": fp.needed_bytes <= cap["capacity_bytes"],
                                 "reference_fits": fp.forward_bytes <= cap["capacity_bytes"]}
    return row


def largest(rows: list[dict], n: int = LARGEST) -> list[str]:
    ranked = sorted(rows, key=lambda r: (-r["needed_bytes"], r["problem"]))
    return [r["problem"] for r in ranked[:n]]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernelbench", type=Path, required=True, help="a KernelBench checkout (its levels)")
    parser.add_argument("--out", type=Path, default=None, help="results file (default benchmarks/results/...)")
    parser.add_argument("--largest", type=Path, default=REPO / "benchmarks" / "kernelbench_largest10.txt")
    args = parser.parse_args()
    from harness.suite import spec_files

    t0 = time.monotonic()
    capacities = card_capacities()
    rows, errors = [], []
    for level in LEVELS:
        folder = args.kernelbench / level
        if not folder.is_dir():
            raise SystemExit(f"footprint_table: --kernelbench {args.kernelbench}: no folder {level}")
        for path in spec_files(folder):
            try:
                rows.append(problem_row(path, level, capacities))
            except Exception as exc:  # noqa: BLE001 - a problem the meta device cannot build is named, not fatal
                errors.append({"problem": f"{level.removeprefix('level')}/{path.stem}",
                               "error": f"{type(exc).__name__}: {exc}"[:300]})
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%SZ")
    out = args.out or REPO / "benchmarks" / "results" / f"footprint-{stamp}.json"
    summary = {card_id: {
        "fits": sum(r["cards"][card_id]["fits"] for r in rows),
        "reference_fits": sum(r["cards"][card_id]["reference_fits"] for r in rows),
        "reference_fits_but_not_the_evaluation": [r["problem"] for r in rows if r["cards"][card_id]["reference_fits"]
                                                  and not r["cards"][card_id]["fits"]],
    } for card_id in CARDS}
    payload = {"benchmark": "footprint", "date": stamp, "command": "python3 benchmarks/footprint_table.py "
               "--kernelbench PATH/KernelBench", "device": "cuda:0 (estimated on the meta device)",
               "cards": capacities, "problems": len(rows), "errors": errors, "summary": summary,
               "largest": largest(rows), "seconds": round(time.monotonic() - t0, 1), "rows": rows}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=1) + "\n")
    source = out.relative_to(REPO) if out.is_relative_to(REPO) else out
    args.largest.write_text(RULE.format(source=source) + "\n".join(payload["largest"]) + "\n")
    print(f"wrote {out} and {args.largest}")
    print(f"{'problem':<58} {'needed GiB':>10} {'forward GiB':>11}  fits h100/h200")
    by_name = {r["problem"]: r for r in rows}
    for name in payload["largest"]:
        r = by_name[name]
        print(f"{name:<58} {r['needed_bytes'] / GIB:>10.2f} {r['footprint']['forward_bytes'] / GIB:>11.2f}  "
              f"{r['cards']['h100']['fits']}/{r['cards']['h200']['fits']}")
    for card_id in CARDS:
        s = summary[card_id]
        print(f"{card_id}: {s['fits']} of {len(rows)} fit ({s['reference_fits']} references fit; "
              f"{len(s['reference_fits_but_not_the_evaluation'])} fit only as a reference); errors {len(errors)}")
    return 0 if not errors else 1


if __name__ == "__main__":
    sys.exit(main())
