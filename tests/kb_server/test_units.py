"""kb_server/units.py: one unit table for ingest validation, AcceleratorFacts.peaks() and the harness's card."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from agent_client.card import nominal_peaks
from kb_server.facts import AcceleratorFacts
from kb_server.units import canonical_unit, to_si

SRC = "https://acme.example/x1.pdf"


def _facts(bandwidth_unit="GB/s", bf16_unit="TFLOP/s", size_unit="GiB", bf16=1.2) -> dict:
    fact = lambda value, unit: {"value": value, "unit": unit, "source": SRC}
    return {"id": "acme-x1", "name": "Acme X1", "vendor": "Acme", "architecture": "R", "compute_unit_name": "tile",
            "compute_units": fact(96, "count"), "memory_size": fact(144, size_unit),
            "memory_bandwidth": fact(4800, bandwidth_unit), "peak_tflops": {"bf16": fact(bf16, bf16_unit)}}


@pytest.mark.parametrize(("written", "canonical"), [
    ("TFLOPS", "TFLOP/s"), ("tflops", "TFLOP/s"), ("GFLOPS", "GFLOP/s"), ("PFLOP/s", "PFLOP/s"),
    ("GB/sec", "GB/s"), ("GByte", "GB"), ("gib", "GiB"), ("TOPS", "TOP/s"),
    ("furlongs", None),  # not a unit of the table: left for the field's check to refuse or keep
])
def test_common_spellings_read_as_the_tables(written, canonical):
    assert canonical_unit(written) == canonical


def test_peaks_honour_each_rates_unit():
    # 1.2 PFLOP/s and 90000 GFLOPS were both read as TFLOP/s before: 1000x off
    facts = AcceleratorFacts.model_validate(_facts(bandwidth_unit="GB/sec", bf16_unit="PFLOP/s"))
    assert facts.memory_bandwidth.unit == "GB/s" and facts.peak_tflops["bf16"].unit == "PFLOP/s"
    assert facts.peaks() == {"memory_bandwidth_bytes_per_s": 4.8e12, "bf16_flops_per_s": 1.2e15}
    gflops = AcceleratorFacts.model_validate(_facts(bf16_unit="GFLOPS", bf16=90000))
    assert gflops.peaks()["bf16_flops_per_s"] == pytest.approx(9e13)


def test_card_reads_the_same_table_as_ingest():
    raw = _facts(bandwidth_unit="GB/sec", bf16_unit="TFLOPS", size_unit="GByte")
    bandwidth, flops = nominal_peaks(raw)  # the plain YAML mapping, as agent_client/target.py gives it
    assert bandwidth == 4.8e12 and flops == {"bfloat16": 1.2e12}
    assert to_si(144, "GByte", "size") == 144e9


@pytest.mark.parametrize(("field", "kwargs"), [
    ("memory_bandwidth", {"bandwidth_unit": "GB/hour"}),
    ("memory_bandwidth", {"bandwidth_unit": "TFLOP/s"}),  # a unit of another dimension
    ("peak_tflops", {"bf16_unit": "TB/s"}),
    ("memory_size", {"size_unit": "GB/s"}),
])
def test_a_unit_that_cannot_be_computed_with_is_refused_naming_the_accepted(field, kwargs):
    with pytest.raises(ValidationError) as info:
        AcceleratorFacts.model_validate(_facts(**kwargs))
    error = info.value.errors()[0]
    assert error["loc"][0] == field and error["loc"][-1] == "unit"
    assert "use one of" in error["msg"]


def test_stored_facts_a_later_rule_refuses_are_left_out_not_fatal(tmp_path, caplog):
    """Facts ingested before a unit was refused stay in an existing store: loading them says which file to
    fix and goes on with the rest (the bundled chips still answer)."""
    import json

    from kb_server.config import KBSettings
    from kb_server.store import Store

    store = Store(KBSettings(home=tmp_path / "home"))
    good = AcceleratorFacts.model_validate(_facts())
    store.put_facts("acme", good, "hash", "acme-x1.yaml")
    stored = json.loads(good.model_dump_json())
    stored["memory_bandwidth"]["unit"] = "furlongs/s"
    got = store._documents.get(ids=["acme"], include=["metadatas"])
    meta = dict(got["metadatas"][0], facts=json.dumps(stored))
    store._documents.update(ids=["acme"], metadatas=[meta])
    store.bump_facts_token()
    with caplog.at_level("WARNING", logger="kb_server"):
        known = store.accelerators()
    assert "acme-x1" not in known and "h100" in known
    assert "acme-x1.yaml are left out" in caplog.text
