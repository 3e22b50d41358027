"""Device lists (harness/executor.py): `--devices` of `kkb bench` and `kkb tune` parsed and checked against the
host before any work starts; a GPU that is not there, a malformed name, a GPU named twice or --devices with
--ray is one message naming it, exit 2, no traceback, nothing written."""

from __future__ import annotations

import pytest
import typer
from typer.testing import CliRunner

from harness import executor
from harness.cli import bench
from harness.executor import DeviceListError, check_devices, devices_from_cli, parse_devices
from tests.harness.harness_helpers import CANDIDATES, SPECS

app = typer.Typer()
app.command()(bench)


def flat(text: str) -> str:
    """The output as one line: the error box's borders and line breaks gone."""
    return " ".join(text.replace("│", " ").split())


@pytest.mark.parametrize(("text", "expected"), [
    ("cuda:0,cuda:1", ["cuda:0", "cuda:1"]),
    (" cuda:1 , cuda:0 ,", ["cuda:1", "cuda:0"]),  # spaces and a trailing comma
    ("cpu,cpu", ["cpu", "cpu"]),  # the CPU may take several workers
    ("cpu*3", ["cpu", "cpu", "cpu"]),
    ("", None),
])
def test_parse(text, expected):
    assert parse_devices(text) == expected


@pytest.mark.parametrize(("text", "named"), [
    ("cuda:x", "'cuda:x' is not a device"),
    ("gpu0,cuda:1", "'gpu0' is not a device"),
    ("cuda:0,cuda:1,cuda:0", "cuda:0 is named more than once"),  # two timings on one GPU
    ("cuda:1*2", "cuda:1 is named more than once"),
    ("cpu*0", "'cpu*0': expected NAME*COUNT"),
])
def test_malformed_lists_are_named(text, named):
    with pytest.raises(DeviceListError, match=named.replace("*", r"\*")):
        parse_devices(text)


def test_gpu_not_on_this_host(monkeypatch):
    monkeypatch.setattr(executor, "visible_gpus", lambda: 2)
    assert check_devices(["cuda:1", "cuda:0"]) == ["cuda:1", "cuda:0"]
    with pytest.raises(DeviceListError, match="cuda:7 is not there; this host has 2 GPUs: cuda:0,cuda:1"):
        check_devices(["cuda:0", "cuda:7"])
    monkeypatch.setattr(executor, "visible_gpus", lambda: 0)
    with pytest.raises(DeviceListError, match="cuda:0 is not there; no GPU is visible on this host"):
        check_devices(["cuda:0"])


def test_real_host_without_gpu():
    if executor.visible_gpus():
        pytest.skip("a GPU is visible here")
    with pytest.raises(DeviceListError, match="no GPU is visible"):
        devices_from_cli("cuda:0")


def test_devices_with_ray_or_device_refused():
    with pytest.raises(DeviceListError, match="--devices cpu,cpu and --ray local: give one"):
        devices_from_cli("cpu,cpu", ray_address="local")
    with pytest.raises(DeviceListError, match="--device cpu and --devices cpu,cpu: give one"):
        devices_from_cli("cpu,cpu", device="cpu")


@pytest.mark.parametrize(("devices", "named"), [
    ("cuda:0,cuda:7", "cuda:7 is not there; this host has 2 GPUs"),
    ("cuda:x", "'cuda:x' is not a device"),
    ("cuda:0,cuda:0", "cuda:0 is named more than once"),
])
def test_bench_refuses_before_any_work(tmp_path, monkeypatch, devices, named):
    monkeypatch.setattr(executor, "visible_gpus", lambda: 2)  # a 2-GPU host, as far as the check can tell
    out = tmp_path / "r.json"
    result = CliRunner().invoke(app, ["--suite", str(SPECS / "suite"), "--candidates", str(CANDIDATES / "suite_many"),
                                      "--devices", devices, "-o", str(out)])
    assert result.exit_code == 2 and named in flat(result.output), result.output
    assert "Traceback" not in result.output and isinstance(result.exception, SystemExit)
    assert not out.exists()  # nothing ran, nothing written


def test_tune_refuses_before_any_work(tmp_path):
    pytest.importorskip("pydantic_settings")
    from agent_client.cli import tune

    tune_app = typer.Typer()
    tune_app.command()(tune)
    result = CliRunner().invoke(tune_app, [str(SPECS / "tiny_softmax.py"), "--devices", "cuda:0,cuda:x",
                                           "--provider", "offline", "--home", str(tmp_path / "home")])
    assert result.exit_code == 2, result.output
    assert "error: --devices cuda:0,cuda:x: 'cuda:x' is not a device" in flat(result.output)
    assert "Traceback" not in result.output
    assert not (tmp_path / "home" / "sessions").exists()  # no session was started
