"""Where a session's candidates are evaluated: several GPUs of this host, or a Ray cluster named by address
(an unreachable one is an error before the session starts, never a silent fallback to the local pool)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from agent_client.runner import new_config, run_session
from tests.agent_client.agent_helpers import FAST_EVAL, SPEC, client_settings


def test_devices_set_the_device_and_the_evaluation_threads(tmp_path):
    config = new_config(SPEC, client_settings(tmp_path), session_id="d", devices=["cuda:2", "cuda:3"])
    assert config.device == "cuda:2" and config.devices == ["cuda:2", "cuda:3"]
    assert config.eval_workers == 4  # one candidate being timed per GPU, two more compiling or waiting


def test_unreachable_ray_cluster_is_named_before_the_session(kb, tmp_path):
    settings = client_settings(tmp_path, "http://127.0.0.1:9")
    config = new_config(SPEC, settings, session_id="r", device="cpu", provider="anthropic",
                        ray_address="127.0.0.1:9", eval_overrides=FAST_EVAL)
    with pytest.raises(ConnectionError, match=r"cannot reach the Ray cluster at '127\.0\.0\.1:9'"):
        run_session(config, settings, console=Console(file=io.StringIO()), live=False, kb=kb, report=False)


def test_spec_too_large_for_the_device_is_named_before_the_session(kb, tmp_path):
    from harness.memory import SpecTooLarge
    from tests.harness.test_memory import BIG_SOFTMAX

    spec = tmp_path / "23_Softmax.py"
    spec.write_text(BIG_SOFTMAX)  # KernelBench's published size: 6.4 GB of input, on a CPU worker
    settings = client_settings(tmp_path, "http://127.0.0.1:9")
    config = new_config(spec, settings, session_id="big", device="cpu", provider="anthropic", eval_overrides=FAST_EVAL)
    with pytest.raises(SpecTooLarge, match="estimated footprint"):
        run_session(config, settings, console=Console(file=io.StringIO()), live=False, kb=kb, report=False)
    assert not (settings.sessions_dir / "big").exists()  # nothing written: the same command works once it fits
