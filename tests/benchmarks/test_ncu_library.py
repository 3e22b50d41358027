"""The ncu driver's argument parsing, on CPU: a bad target is refused by name before any kernel runs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("ncu_library", REPO / "benchmarks" / "gpu" / "ncu_library.py")
ncu_library = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ncu_library)


def test_target_with_overrides_parses():
    family, spec, overrides = ncu_library.parse_target('attention/attention_bf16_d128:{"BLOCK_N_D128": 64}')
    assert (family, spec, overrides) == ("attention", "attention_bf16_d128", {"BLOCK_N_D128": 64})


def test_target_without_overrides_parses():
    assert ncu_library.parse_target("batchnorm/batchnorm_train_bf16") == ("batchnorm", "batchnorm_train_bf16", {})


@pytest.mark.parametrize("arg, words", [
    ("attention", "FAMILY/SPEC"),
    ("attention/no_such_spec", "no spec"),
    ("attention/attention_bf16_d128:{bad", "not JSON"),
    ("attention/attention_bf16_d128:[1]", "JSON object"),
])
def test_bad_target_is_named(arg: str, words: str):
    with pytest.raises(ValueError, match=words) as info:
        ncu_library.parse_target(arg)
    assert arg in str(info.value)


def test_main_refuses_before_running(capsys):
    assert ncu_library.main(["attention/no_such_spec"]) == 2
    assert "attention/no_such_spec" in capsys.readouterr().err
