"""A commented facts file to fill in for a new accelerator: every field a facts file takes, its unit and
where its source goes (`kkb facts --template ID -o ID.yaml`).

Usage: from kb_server.facts_template import facts_template; Path("x1.yaml").write_text(facts_template("x1"))

The fields follow kb_server.facts.AcceleratorFacts (a test checks that none is missing). The required
ones are written out with their values empty, so a file ingested before it is filled is refused with
the line and the field; the optional ones are commented out, to uncomment where a value is known.
"""

from __future__ import annotations

from kb_server.facts import AcceleratorFacts
from kb_server.schemas import normalize_id

# field -> (unit, what it is). Units are those the corpus's facts files use; bandwidths take TB/s or GB/s.
FACT_FIELDS: dict[str, tuple[str, str]] = {
    "compute_units": ("count", "compute units on the chip (SMs, CUs, tiles, PEs)"),
    "warp_width": ("threads", "threads per warp or wavefront, where the chip has one"),
    "register_file_per_unit": ("KiB", "register file per compute unit"),
    "shared_memory_per_unit": ("KiB", "shared memory / LDS / scratchpad per compute unit"),
    "l1_cache_per_unit": ("KiB", "L1 cache per compute unit"),
    "l2_cache": ("MB", "L2 cache, the whole chip"),
    "last_level_cache": ("MB", "a last-level cache apart from L2 (e.g. Infinity Cache)"),
    "memory_size": ("GB", "device memory (HBM) capacity"),
    "memory_bandwidth": ("TB/s", "device memory bandwidth, nominal (TB/s or GB/s)"),
    "boost_clock": ("MHz", "boost clock"),
    "tdp": ("W", "board power"),
}
SCALARS: dict[str, str] = {
    "name": 'the marketing name, e.g. "Nova Silicon X1"',
    "vendor": "the vendor, e.g. nvidia, amd, meta, or a new one (lower case, '-' for spaces)",
    "architecture": 'the architecture\'s name, e.g. "Hopper", "CDNA3"',
    "compute_unit_name": "what the vendor calls a compute unit: SM, CU, tile, PE",
}
PEAK_DTYPES = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8")
_HEAD = """\
# Accelerator facts for {id}: fill each value from a public document and name that document in `source`.
# A fact is a value, its unit and its source: a public address (https://...), or `measured` with
# `measured_on: YYYY-MM-DD` and `method:` (how it was measured). `note:` is optional (e.g. "dense").
# Required fields are written out; the optional ones are commented: remove the "# " before the ones you know.
# Then: kkb ingest {id}.yaml (a file left unfilled is refused, naming the line and the field).
# The file's name must be the id: {id}.yaml.
id: {id}
"""


def _fact(name: str, unit: str, about: str, indent: str = "", comment: bool = False) -> list[str]:
    mark = "# " if comment else ""
    return [f"{indent}{mark}{name}:  # {about}", f"{indent}{mark}  value:", f"{indent}{mark}  unit: {unit}",
            f"{indent}{mark}  source:"]


def facts_template(accelerator_id: str) -> str:
    """The commented facts file of `accelerator_id` (normalised), ready to fill."""
    acc = normalize_id(accelerator_id)
    required = {n for n, f in AcceleratorFacts.model_fields.items() if f.is_required()}
    lines = _HEAD.format(id=acc).splitlines()
    for name, about in SCALARS.items():
        lines.append(f"{name}:  # {about}")
    lines.append("aliases: []  # other names people type for it, e.g. [x1-oam]")
    lines.append("# backends: []  # kernel languages its toolchain compiles, e.g. [triton, cuda]; kkb tune warns on others")
    for name, (unit, about) in FACT_FIELDS.items():
        lines += _fact(name, unit, about, comment=name not in required)
    lines.append("# peak_tflops:  # peak dense throughput per dtype; keep the dtypes you know")
    for dtype in PEAK_DTYPES:
        lines += _fact(dtype, "TFLOP/s", f"peak {dtype}", indent="#   ")
    lines += ["# extra:  # any other number worth a prompt, named as you like, e.g.:",
              *_fact("max_threads_per_unit", "count", "threads resident per compute unit", indent="#   "),
              "# sources: []  # optional: the main public documents, when the facts above do not name them all"]
    return "\n".join(lines) + "\n"
