"""Prompts at the default budget over HTTP, for specs of any origin: does each carry passages and a kernel?

For every spec file given, POST /v1/prompt to a running `kkb serve` (the target's default budget) and record
the number of passages, the example kernel's source and size, and the prompt's tokens. A spec passes when it
has at least three passages and an excerpt of a library kernel with a @triton.jit function.

Usage: python -m benchmarks.bench_prompts --kb http://127.0.0.1:8765 SPEC_OR_FOLDER... [--target h200]
       (results files hold only the specs' names and the numbers, never the specs)
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import httpx

from benchmarks.common import write_results

MIN_PASSAGES = 3


def spec_files(paths: list[Path]) -> list[Path]:
    files: list[Path] = []
    for p in paths:
        files += sorted(p.glob("*.py")) if p.is_dir() else [p]
    return files


def judge(url: str, spec: Path, target: str) -> dict:
    body = {"spec_source": spec.read_text(), "accelerator": target, "backend": "triton"}
    response = httpx.post(f"{url}/v1/prompt", json=body, timeout=300)
    if response.status_code != 200:
        return {"spec": f"{spec.parent.name}/{spec.stem}", "ok": False, "error": f"HTTP {response.status_code}"}
    bundle = response.json()
    sections = {s["name"]: s for s in bundle["sections"]}
    passages = len(sections.get("passages", {}).get("sources", []))
    kernel = sections.get("example_kernels", {})
    has_kernel = bool(kernel.get("sources")) and "@triton.jit" in kernel.get("text", "")
    return {"spec": f"{spec.parent.name}/{spec.stem}", "ok": passages >= MIN_PASSAGES and has_kernel,
            "passages": passages, "kernel": (kernel.get("sources") or [None])[0],
            "kernel_tokens": kernel.get("tokens", 0), "prompt_tokens": bundle["tokens"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="+", type=Path, help="spec files or folders of them")
    parser.add_argument("--kb", default=os.environ.get("KKB_KB_URL", "http://127.0.0.1:8000"))
    parser.add_argument("--target", default="h200")
    parser.add_argument("-o", "--output", type=Path, default=None)
    args = parser.parse_args()
    rows = [judge(args.kb.rstrip("/"), spec, args.target) for spec in spec_files(args.specs)]
    failing = [r["spec"] for r in rows if not r["ok"]]
    summary = {"target": args.target, "specs": len(rows), "ok": len(rows) - len(failing), "failing": failing,
               "min_passages": min((r.get("passages", 0) for r in rows), default=0), "rows": rows}
    path = write_results("prompts", summary, packages=["torch"], path=args.output)
    print(f"{summary['ok']}/{summary['specs']} prompts carry >= {MIN_PASSAGES} passages and a kernel; results: {path}")
    return 0 if not failing else 1


if __name__ == "__main__":
    raise SystemExit(main())
