"""The units a fact may be written in, and their scale to SI: one table for ingest, peaks() and the harness's card.

Usage: from kb_server.units import canonical_unit, to_si
       canonical_unit("TFLOPS")                 # "TFLOP/s" (common spellings, any case, read as the table's)
       to_si(1.2, "PFLOP/s", "rate")            # 1.2e15 FLOP/s; ValueError naming the accepted units otherwise

Only the standard library: agent_client/card.py reads facts files with it on a bare CUDA machine.
"""

from __future__ import annotations

import re

# dimension -> {unit as written in the facts files: its scale to bytes/s, FLOP/s or bytes}
UNITS: dict[str, dict[str, float]] = {
    "bandwidth": {"TB/s": 1e12, "GB/s": 1e9, "MB/s": 1e6, "TiB/s": 2**40, "GiB/s": 2**30, "MiB/s": 2**20},
    "rate": {"PFLOP/s": 1e15, "TFLOP/s": 1e12, "GFLOP/s": 1e9, "POP/s": 1e15, "TOP/s": 1e12, "GOP/s": 1e9},
    "size": {"TB": 1e12, "GB": 1e9, "MB": 1e6, "KB": 1e3, "TiB": 2**40, "GiB": 2**30, "MiB": 2**20, "KiB": 2**10},
}

# the facts' fields whose numbers other code computes with, and the dimension their unit must have
FIELD_DIMENSIONS: dict[str, str] = {"memory_bandwidth": "bandwidth", "memory_size": "size",
                                    "peak_tflops": "rate", "extra.measured_copy_bandwidth": "bandwidth"}
MEASURED_RATE = re.compile(r"^measured_\w+_tflops$")  # extra.measured_bf16_tflops: a rate, as peaks() reads it


def _spellings(unit: str) -> set[str]:
    """Common ways to write a unit of the table: TFLOPS, TFLOPs, TFLOP/sec; GB/sec, GByte/s; GByte(s)."""
    out = {unit}
    prefix, _, per = unit.partition("/")
    for word, forms in (("FLOP", ("FLOPS", "FLOPs", "FLOP")), ("OP", ("OPS", "OPs", "OP"))):
        if prefix.endswith(word) and per:
            stem = prefix[: -len(word)]
            out |= {f"{stem}{f}" for f in forms} | {f"{prefix}/sec", f"{prefix}/second"}
    if prefix.endswith("B") and per:  # bandwidth
        stem = prefix[:-1]
        out |= {f"{stem}{b}/{p}" for b in ("B", "Byte", "Bytes") for p in ("s", "sec", "second")}
    if prefix.endswith("B") and not per:  # size
        stem = prefix[:-1]
        out |= {f"{stem}Byte", f"{stem}Bytes"}
    return out


# any spelling (lower case, no spaces) -> (the table's unit, its dimension)
_CANONICAL: dict[str, tuple[str, str]] = {
    s.lower(): (unit, dim) for dim, table in UNITS.items() for unit in table for s in _spellings(unit)}


def _lookup(unit: str) -> tuple[str, str] | None:
    return _CANONICAL.get(re.sub(r"\s+", "", str(unit)).lower())


def canonical_unit(unit: str) -> str | None:
    """The table's spelling of a unit (case and common spellings aside), or None for a unit it does not hold."""
    found = _lookup(unit)
    return found[0] if found else None


def unit_problem(unit: str, dimension: str) -> str | None:
    """Why `unit` cannot measure `dimension` (naming the accepted units), or None when it can."""
    found = _lookup(unit)
    if found is not None and found[1] == dimension:
        return None
    return f"unit {unit!r} is not a {dimension} unit; use one of {', '.join(UNITS[dimension])}"


def to_si(value: float, unit: str, dimension: str) -> float:
    """`value` in bytes/s, FLOP/s or bytes; ValueError (naming the accepted units) for a unit of another kind."""
    problem = unit_problem(unit, dimension)
    if problem:
        raise ValueError(problem)
    return float(value) * UNITS[dimension][canonical_unit(unit)]


def field_dimension(field: str) -> str | None:
    """The dimension a fact's dotted field name must be in ("peak_tflops.bf16": rate), or None if any unit goes."""
    group, _, key = field.partition(".")
    if group == "extra":
        return "rate" if MEASURED_RATE.match(key) else FIELD_DIMENSIONS.get(field)
    return FIELD_DIMENSIONS.get(group)
