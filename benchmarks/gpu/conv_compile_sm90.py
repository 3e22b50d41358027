"""Compile the offline lowering's conv kernels for sm_90 on a CPU: registers, spills, shared memory, per problem.

Usage (repo root; a Python whose triton is the CUDA machine's version, which sees this repository's packages):
    /work/t36/bin/python benchmarks/gpu/conv_compile_sm90.py --kernelbench PATH --out FILE \
        --problems $(grep -v '^#' benchmarks/kernelbench_sample_conv.txt)
Each problem (LEVEL/STEM) is lowered for "cuda" at its published sizes; every kernel whose name ends in
"_conv" is compiled with triton.compile for GPUTarget("cuda", 90) with the constexprs and launch options its
plan passes under the default TUNABLES, and cuobjdump reports its resource use. Writes one line a kernel.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))


def _resources(cubin: bytes) -> str:
    import triton

    folder = tempfile.mkdtemp()
    path = Path(folder) / "k.cubin"
    path.write_bytes(cubin)
    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    out = subprocess.run([str(tool), "-res-usage", str(path)], check=False, capture_output=True, text=True).stdout
    line = next((x.strip() for x in out.splitlines() if "REG:" in x), "")
    return line.split(" CONSTANT")[0]


def compile_conv_kernels(problem: str, root: Path) -> list[str]:
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from agent_client.lowering.lower import lower_spec

    level, stem = problem.split("/")
    source = lower_spec(root / f"level{level}" / f"{stem}.py", "cuda").source
    folder = Path(tempfile.mkdtemp())
    path = folder / "candidate.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"cand_{os.getpid()}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    plan = source[source.index("def _plan0("):]
    lines = []
    for m in re.finditer(r"^    (_p0k\d+_conv)\[(.*)\]\((.*)\)$", plan, re.MULTILINE):
        name, args = m.group(1), m.group(3)
        fn = getattr(module, name)
        call = ast.parse(f"f({args})").body[0].value
        values = {k.arg: eval(ast.unparse(k.value), {"T": module.TUNABLES, "triton": triton})
                  for k in call.keywords}
        options = {"num_warps": values.pop("num_warps", 4), "num_stages": values.pop("num_stages", 3)}
        names = fn.arg_names
        signature = {n: "*fp32" for n in names[:len(call.args)]}
        signature.update({n: "constexpr" for n in values})
        attrs = {(i,): [["tt.divisibility", 16]] for i in range(len(call.args))}
        t0 = time.monotonic()
        try:
            compiled = triton.compile(ASTSource(fn, signature, {(names.index(k),): v for k, v in values.items()},
                                                attrs), target=GPUTarget("cuda", 90, 32), options=options)
            lines.append(f"{problem} {name} warps={options['num_warps']} stages={options['num_stages']} "
                         f"smem={compiled.metadata.shared} {_resources(compiled.asm['cubin'])} "
                         f"({time.monotonic() - t0:.1f} s)")
        except Exception as exc:  # noqa: BLE001 - a kernel that does not compile is the finding
            lines.append(f"{problem} {name} FAILED {type(exc).__name__}: {str(exc)[:300]}")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernelbench", required=True)
    ap.add_argument("--problems", nargs="+", required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    import triton

    out = [f"# triton {triton.__version__}, sm_90, default TUNABLES; command: {' '.join(sys.argv)}"]
    for problem in args.problems:
        try:
            out += compile_conv_kernels(problem, Path(args.kernelbench))
        except Exception as exc:  # noqa: BLE001
            out.append(f"{problem} LOWERING FAILED {type(exc).__name__}: {str(exc)[:300]}")
        print(out[-1], flush=True)
    Path(args.out).write_text("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
