"""A winner a user can ship, on real parts: an offline session on a held-out published spec through the CPU
harness, `kkb export-kernel`, `kkb bench MODULE --shapes`, and the module imported by a fresh Python process
outside the checkout (no repository on its path), its results compared here with the spec's own Model.

Which path ran is read from the module itself (paths_taken) and from its debug log."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
from dataclasses import replace
from pathlib import Path

import pytest
import torch
from typer.testing import CliRunner

from tests.agent_client.agent_helpers import FAST_EVAL, REPO, client_settings

SPEC = REPO / "tests" / "published_specs" / "2_Conv2d_ReLU_BiasAdd.py"  # served by the general lowering only
INIT = [3, 8, 3, (8, 1, 1)]
SHAPES = {
    "measured": (2, 3, 12, 12),  # the spec's own shapes: the session measured the kernel here
    "reverified": (3, 3, 12, 12),  # added by `kkb bench --shapes batch_size=3`: a new plan, judged
    "unmeasured": (4, 3, 12, 12),  # never judged: the reference runs
}

CHILD = r'''
import importlib.util, json, logging, sys
import torch

logging.basicConfig(level=logging.DEBUG, stream=sys.stderr, format="KKBLOG %(levelname)s %(name)s %(message)s")
for noisy in ("torch", "filelock", "triton"):
    logging.getLogger(noisy).setLevel(logging.WARNING)
report = {"repo_importable": [n for n in ("harness", "agent_client", "kb_server", "tests")
                               if importlib.util.find_spec(n) is not None], "sys_path": sys.path}
import my_op, my_op_h200

shapes, init = json.loads(sys.argv[1]), json.loads(sys.argv[2])
init[3] = tuple(init[3])
torch.manual_seed(0)
model = my_op.KernelModel(*init)
saved = {"state": model.state_dict()}
with torch.no_grad():
    for name, shape in shapes.items():
        torch.manual_seed(1)
        saved["x_" + name] = x = torch.randn(*shape)
        saved["y_" + name] = model(x)
        report[name] = dict(my_op.paths_taken())
    compiled = torch.compile(model, backend="aot_eager", fullgraph=True)  # no graph break from the op
    saved["y_compiled"] = compiled(saved["x_measured"])
    report["compiled"] = dict(my_op.paths_taken())
    other = my_op_h200.KernelModel(*init)  # a table measured on another device
    other.load_state_dict(model.state_dict())
    saved["y_other_device"] = other(saved["x_measured"])
    other(saved["x_measured"])
    report["other_device"] = dict(my_op_h200.paths_taken())
report["where"] = my_op.where()
torch.save(saved, "outputs.pt")
print(json.dumps(report, default=str))
'''


@pytest.fixture(scope="module")
def session(kb, tmp_path_factory):
    """One offline session on the held-out spec (the general lowering's candidates, the real CPU harness)."""
    import io

    from rich.console import Console

    from agent_client.runner import new_config, run_session

    home = tmp_path_factory.mktemp("export_home")
    settings = client_settings(home)
    config = new_config(SPEC, settings, session_id="conv-export", eval_overrides=FAST_EVAL, target="h200",
                        backend="triton", budget=2, device="cpu", provider="offline", drafts=2,
                        proposals_per_step=1, write_back_min_speedup=0.0)
    result = run_session(config, settings, console=Console(file=io.StringIO()), live=False, kb=kb)
    assert result.best_node_id, "the offline session must find a passing candidate for this spec"
    return {"home": home, "result": result, "folder": settings.sessions_dir / "conv-export"}


def _kkb(*args: str):
    from kernelkb_cli import app

    return CliRunner().invoke(app, list(args))


@pytest.mark.slow
def test_exported_winner_runs_the_kernel_where_measured_and_the_reference_elsewhere(session, tmp_path):
    from agent_client.shipping.plan import read_plan
    from agent_client.shipping.writer import render_module
    from harness.spec import load_spec

    outside = tmp_path / "user_project"  # nothing of the repository here
    outside.mkdir()
    module = outside / "my_op.py"
    done = _kkb("export-kernel", "conv-export", "-o", str(module), "--min-speedup", "0",
                "--home", str(session["home"]))
    assert done.exit_code == 0, done.output
    assert "wrote" in done.output and "default on cpu" in done.output
    again = _kkb("export-kernel", "conv-export", "-o", str(tmp_path / "again.py"), "--min-speedup", "0",
                 "--home", str(session["home"]), "--json")
    assert again.exit_code == 0, again.output
    written = json.loads(again.stdout)
    assert written["output"] == str(tmp_path / "again.py") and written["wins_somewhere"]
    assert [e["variant"] for e in written["entries"]] == ["default"]

    # re-verification: judged at a new batch size, a new plan of the lowering joins the module
    done = _kkb("bench", str(module), "--shapes", "batch_size=3", "--device", "cpu", "--trials", "1",
                "--no-compile-baseline", "--json")
    assert done.exit_code == 0, done.output
    assert "batch_size=3: passed (a new plan of the general lowering)" in done.stderr
    assert [r["status"] for r in json.loads(done.stdout)] == ["passed"]
    plan = read_plan(module)
    assert [e["variant"] for e in plan.entries] == ["default", "shapes batch_size=3"]
    assert [e["inputs"][0]["shape"] for e in plan.entries] == [[2, 3, 12, 12], [3, 3, 12, 12]]
    assert "((3, 3, 12, 12),): _plan1" in plan.candidate_source

    # the same module as if measured on a GPU: on this CPU it must fall back and warn once
    elsewhere = replace(plan, entries=tuple({**e, "device_name": "NVIDIA H200"} for e in plan.entries),
                        info={**plan.info, "op_name": plan.op_name + "_h200"})
    (outside / "my_op_h200.py").write_text(render_module(elsewhere, "my_op_h200"))

    # a fresh interpreter that sees torch and triton but not this checkout: -S skips the site hooks (the
    # editable install's path finder among them), and the packages' folder alone is put on the path
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(TRITON_INTERPRET="1", PYTHONPATH=sysconfig.get_paths()["purelib"])
    shapes = {k: list(v) for k, v in SHAPES.items()}
    child = subprocess.run([sys.executable, "-S", "-c", CHILD, json.dumps(shapes), json.dumps(INIT)], check=False,
                           cwd=outside, env=env, capture_output=True, text=True, timeout=400)
    assert child.returncode == 0, child.stderr[-3000:]
    report = json.loads(child.stdout.strip().splitlines()[-1])
    assert report["repo_importable"] == [], report["sys_path"]
    # the checkout itself is not on the path (the virtual environment may live inside it, as .venv does)
    assert not any(p and Path(p).resolve() == REPO for p in report["sys_path"])

    # which path ran, from the module and from its log
    assert report["measured"]["last"] == "kernel" and "the kernel runs" in report["measured"]["why"]
    assert report["reverified"]["last"] == "kernel"
    assert report["unmeasured"]["last"] == "reference" and "not measured" in report["unmeasured"]["why"]
    assert report["compiled"]["last"] == "kernel"
    assert report["other_device"] == {"reference": 2, "last": "reference", "why": report["other_device"]["why"]}
    log = [line for line in child.stderr.splitlines() if line.startswith("KKBLOG")]
    assert sum("DEBUG my_op " in line and "4x3x12x12" in line for line in log) == 1  # said once
    warnings = [line for line in log if line.startswith("KKBLOG WARNING my_op_h200")]
    assert len(warnings) == 1 and "NVIDIA H200" in warnings[0] and "not on this cpu" in warnings[0]
    assert any("shapes batch_size=3" in line for line in report["where"]["loses"] + report["where"]["wins"])

    # results against the spec's own Model, here, with the child's parameters
    saved = torch.load(outside / "outputs.pt")
    reference = load_spec(SPEC).module.Model(*INIT)
    reference.load_state_dict(saved["state"])
    with torch.no_grad():
        for name in SHAPES:
            torch.testing.assert_close(saved["y_" + name], reference(saved["x_" + name]), rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(saved["y_compiled"], reference(saved["x_measured"]), rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(saved["y_other_device"], reference(saved["x_measured"]))


@pytest.mark.slow
def test_the_report_and_the_library_say_where_the_winner_was_measured(session, kb, monkeypatch):
    from agent_client.report import render_report
    from agent_client.session.store import SessionStore

    store = SessionStore.open(session["folder"])
    try:
        html = render_report(store)
    finally:
        store.close()
    assert 'id="where"' in html and "[2x3x12x12] float32 on cpu" in html
    assert "kkb export-kernel conv-export" in html
    assert "any other shape, dtype or device" in html

    written = [r for r in kb.kernels() if "conv-export" in r.name]
    assert len(written) == 1, [r.name for r in kb.kernels()]
    (m,) = written[0].measurements
    assert (m.variant, m.shape, m.dtype, m.device_name, m.accelerator) == (
        "default", "2x3x12x12", "float32", "cpu", "cpu-interpreter")
    assert m.inputs == [{"shape": [2, 3, 12, 12], "dtype": "float32", "stride": [432, 144, 12, 1]}]
    assert [s["path"] for s in m.state] == ["bias", "conv.weight", "conv.bias"]
    assert m.correct is True and m.latency_ms and m.eager_ms and m.versions["torch"] == torch.__version__
    # the interpreter's time against eager's decides it (usually "loses"; eager waits on its threads on a loaded CPU)
    speedup = m.speedup_vs_compile if m.speedup_vs_compile is not None else m.speedup_vs_eager
    assert m.outcome == ("wins" if speedup >= 1.0 else "loses")
    assert "2x3x12x12" in m.describe() and "cpu-interpreter (cpu)" in m.describe()

    monkeypatch.setattr("kb_server.cli._store", lambda url=None: kb.store)
    shown = _kkb("kernels", "show", written[0].id[:14])
    assert shown.exit_code == 0, shown.output
    wins, loses, untested = (shown.output.index(k) for k in ("wins:", "loses:", "untested:"))
    assert wins < loses < untested
    listed = shown.output[wins:loses] if m.outcome == "wins" else shown.output[loses:untested]
    assert "2x3x12x12" in listed and "any other shape" in shown.output[untested:]

    # an export from the record finds the session that wrote it, and dispatches on the same measurements
    from agent_client.shipping.sources import plan_from_record

    plan = plan_from_record(written[0], session["folder"].parent)
    assert plan.info["source"].startswith("session conv-export node ")
    assert [e["inputs"] for e in plan.entries] == [m.inputs]


def test_a_session_without_a_passing_candidate_exports_nothing(tmp_path):
    from agent_client.session.records import Node, SessionConfig, stand_in_verdict
    from agent_client.session.store import SessionStore

    home = tmp_path / "home"
    config = SessionConfig(session_id="all-wrong", spec_path=str(SPEC), device="cpu")
    store = SessionStore.create(home / "sessions" / "all-wrong", config)
    for i, status in enumerate(("wrong", "compile_error")):
        store.insert_node(Node(id=f"n000{i}", step=0, parent_ids=[], kind="draft", code="class ModelNew: pass",
                               response="", meta={}, status="evaluated", verdict=stand_in_verdict(status, ["x"])))
    store.close()
    out = tmp_path / "my_op.py"
    done = _kkb("export-kernel", "all-wrong", "-o", str(out), "--home", str(home))
    assert done.exit_code == 2
    assert "session all-wrong has no passing candidate (compile_error 1, wrong 1): nothing to export" in done.output
    assert not out.exists()
    done = _kkb("export-kernel", "no-such-thing-here", "-o", str(out), "--home", str(home))
    assert done.exit_code == 2 and "neither a session" in done.output and not out.exists()
