"""Wheels that bring Ray to a CUDA machine without it, small enough to travel with the working tree.

Usage (repo root, on a machine with PyPI):
    python3 benchmarks/gpu/ray_wheels.py [--python 3.12] [--dest .whl]
then on the CUDA machine, with the folder carried:
    python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site

Downloads Ray (the version installed here, else pyproject's floor) for Linux x86-64 and the packages it needs
that such a machine may lack (jsonschema and what jsonschema needs), then rewrites the Ray wheel without its
Java jars (ray/jars: about 30 MB of its 79, the Java API, which the harness does not use), so the carried tree
stays under 64 MiB. Prints the folder's size last.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import zipfile
from pathlib import Path

EXTRA = ["jsonschema", "jsonschema-specifications", "referencing", "rpds-py"]
PLATFORMS = ["manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux1_x86_64"]
DROP = ("ray/jars/",)


def ray_version() -> str:
    try:
        from importlib.metadata import version

        return version("ray")
    except Exception:  # noqa: BLE001 - not installed here
        return "2.9.0"


def download(names: list[str], python: str, dest: Path) -> None:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--python-version",
           python, "--implementation", "cp", "-d", str(dest)]
    for p in PLATFORMS:
        cmd += ["--platform", p]
    subprocess.run(cmd + names, check=True)


def trim(wheel: Path) -> int:
    """Rewrite `wheel` without the DROP folders (and their RECORD lines); the bytes saved."""
    before = wheel.stat().st_size
    tmp = wheel.with_suffix(".tmp")
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as out:
        for info in src.infolist():
            if info.filename.startswith(DROP):
                continue
            data = src.read(info)
            if info.filename.endswith(".dist-info/RECORD"):
                data = b"".join(ln for ln in data.splitlines(keepends=True) if not ln.startswith(DROP[0].encode()))
            out.writestr(info, data)
    tmp.replace(wheel)
    return before - wheel.stat().st_size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default="3.12", help="the CUDA machine's Python (3.12 there)")
    parser.add_argument("--dest", type=Path, default=Path(".whl"))
    args = parser.parse_args()
    args.dest.mkdir(parents=True, exist_ok=True)
    download([f"ray=={ray_version()}", *EXTRA], args.python, args.dest)
    for wheel in sorted(args.dest.glob("ray-*.whl")):
        print(f"{wheel.name}: {trim(wheel) / 2**20:.1f} MiB of Java jars removed")
    total = sum(p.stat().st_size for p in args.dest.glob("*.whl"))
    print(f"{args.dest}: {total / 2**20:.1f} MiB in {len(list(args.dest.glob('*.whl')))} wheels")
    return 0


if __name__ == "__main__":
    sys.exit(main())
