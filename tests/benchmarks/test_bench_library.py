"""benchmarks/bench_library.py's --tunables reader: a sweep file's best configs, or a plain spec -> overrides map."""

from __future__ import annotations

from benchmarks.bench_library import tunables_of, with_tunables


def test_sweep_best_gives_the_config_alone():
    sweep = {"best": {"log_softmax_vocab": {"family": "log_softmax", "config": {"COOP_CHUNK": 4096},
                                            "latency_ms": 0.48, "gbps": 3449.7}}}
    assert tunables_of(sweep) == {"log_softmax_vocab": {"COOP_CHUNK": 4096}}


def test_plain_map_is_taken_as_it_is():
    assert tunables_of({"softmax_wide_rows": {"BLOCK_LOOP": 8192}}) == {"softmax_wide_rows": {"BLOCK_LOOP": 8192}}


def test_overrides_land_in_the_tunables_literal():
    source = 'X = 1\nTUNABLES = {\n    "A": 1,\n    "B": 2,\n}\nY = 2\n'
    assert with_tunables(source, {"B": 3}) == 'X = 1\nTUNABLES = {\'A\': 1, \'B\': 3}\nY = 2\n'
