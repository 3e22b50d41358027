"""Start, resume and finish a tuning session: wires the KB, provider, policy, harness and view.

Usage: config = new_config("examples/specs/relu.py", target="h200", budget=8, device="cpu")
       result = run_session(config, ClientSettings())                 # a new session
       result = resume_session("SESSION_ID", ClientSettings())        # after a crash or kill -9
       result = resume_session("SESSION_ID", settings, ResumeChanges(base_url=URL, budget=24))

Everything of substance lives here and in session/; agent_client/cli.py only parses flags.
"""

from __future__ import annotations

import datetime as dt
import json
import secrets
import shutil
from pathlib import Path
from typing import Any

from rich.console import Console

from agent_client.config import ClientSettings
from agent_client.kb import open_kb
from agent_client.live import make_view
from agent_client.policies import get_policy
from agent_client.preflight import (
    check_backend,
    check_eval_options,
    check_session_id,
    pairing_warnings,
)
from agent_client.prompting import PromptBuilder
from agent_client.providers import get_provider
from agent_client.session.evaluator import HarnessEvaluator, default_eval_options
from agent_client.session.loop import SessionResult, Tuner
from agent_client.session.records import SessionConfig, interpreter_note
from agent_client.session.resume import ResumeChanges, endpoint_notes, resumed_config
from agent_client.session.store import SessionStore
from harness.executor import check_device


def default_device() -> str:
    try:
        import torch

        return "cuda:0" if torch.cuda.is_available() else "cpu"
    except ImportError:
        return "cpu"


def new_session_id(spec_path: Path) -> str:
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    return f"{spec_path.stem}-{stamp}-{secrets.token_hex(2)}"


def new_config(spec_path: Path | str, settings: ClientSettings | None = None, session_id: str | None = None,
               eval_overrides: dict | None = None, **fields: Any) -> SessionConfig:
    """A SessionConfig with the device, provider and harness settings filled in from defaults."""
    settings = settings or ClientSettings()
    spec = Path(spec_path).expanduser().resolve()
    if not spec.is_file():
        what = "is a folder" if spec.is_dir() else "does not exist"
        raise FileNotFoundError(f"spec {spec_path} {what} (expected a KernelBench-format .py file)")
    if session_id is not None:
        check_session_id(session_id)
    fields = {k: v for k, v in fields.items() if v is not None}
    device = fields.pop("device", None) or (fields.get("devices") or [None])[0] or default_device()
    for name in [device, *(fields.get("devices") or [])]:
        check_device(name, here=False)  # run_session checks that this machine has it
    if fields.get("ray_address") is None:  # else the cluster's hosts run the backend, not this one
        check_backend(fields.get("backend", "triton"), device)
    fields.setdefault("provider", settings.default_provider())
    fields.setdefault("kb_url", settings.kb_url)
    fields.setdefault("home", str(settings.home))
    fields.setdefault("token_budget", settings.token_budget)
    fields.setdefault("iteration_token_budget", settings.iteration_token_budget)
    if device.startswith("cuda"):  # compile ahead of timing; timing itself stays one at a time per GPU
        fields.setdefault("eval_workers", 2 + len(fields.get("devices") or [device]))
        fields.setdefault("compile_workers", 2)
    check_eval_options(eval_overrides or {})
    eval_options = {**default_eval_options(device), **(eval_overrides or {})}
    return SessionConfig(session_id=session_id or new_session_id(spec), spec_path=str(spec), device=device,
                         eval_options=eval_options, **fields)


def run_session(config: SessionConfig, settings: ClientSettings, resume: bool = False,
                console: Console | None = None, live: bool | None = None, kb: Any = None,
                provider: Any = None, report: bool = True) -> SessionResult:
    """Run (or continue) a session; the KB, provider and target are checked before anything is written."""
    folder = settings.sessions_dir / config.session_id
    if not resume and (folder / "session.sqlite").exists():
        raise FileExistsError(f"session {config.session_id!r} already exists at {folder}; use --resume")
    if config.ray_address is None:  # a GPU named that this machine lacks: said before anything starts
        for device in config.devices or [config.device]:
            check_device(device)
    # the provider first: a missing key or base URL is named at once, before the knowledge base loads
    provider = provider or get_provider(config.provider, settings, **config.provider_options)
    policy = get_policy(config.policy, seed=config.seed, **config.policy_options)
    kb = kb or open_kb(config.kb_url, Path(config.home) if config.home else None, api_key=settings.kb_api_key)
    accelerator_name, peaks, warnings = _target(kb, config)
    console = console or Console(stderr=True)
    evaluate = HarnessEvaluator(config.spec_path, config.backend, config.device, config.eval_options, peaks,
                                compile_workers=config.compile_workers, devices=config.devices,
                                ray_address=config.ray_address)
    stopped = True  # until the session returns: an exception (Ctrl-C, SIGTERM) kills every worker at once
    store = None
    try:
        # an unreachable Ray cluster (ConnectionError) or a spec too large for the device (SpecTooLarge, a
        # ValueError) is an error naming it before anything is written
        evaluate.open()
        notes = [f"warning: {w}" for w in warnings]
        if interpreter_note(config.device):
            notes.append(f"note: {interpreter_note(config.device)}")
        for line in notes:
            console.print(line, markup=False, highlight=False, soft_wrap=True)
        store = SessionStore.open(folder) if resume else SessionStore.create(folder, config)
        with make_view(console, live) as view:
            tuner = Tuner(config, store, kb, provider, policy, evaluate, prompts_for(config, kb, accelerator_name),
                          view=view)
            result = tuner.run()
        if not resume and result.nodes == 0 and result.stop_reason != "provider_failed":
            # nothing came of it (the offline mode could not read the spec): no empty session to list; a
            # failed endpoint's session stays, for --resume
            store.close()
            store = None
            shutil.rmtree(folder, ignore_errors=True)
            stopped = False
            return result
        (folder / "result.json").write_text(json.dumps(result.to_dict(), indent=2) + "\n", encoding="utf-8")
        if report:
            from agent_client.report import write_report

            write_report(store, folder / "report.html")
        stopped = False
        return result
    finally:
        evaluate.close(kill=stopped)
        if store is not None:
            store.close()


def prompts_for(config: SessionConfig, kb: Any, accelerator_name: str) -> PromptBuilder:
    """The prompt builder of a session: its spec, target, backend and token budgets."""
    spec_source = Path(config.spec_path).read_text(encoding="utf-8")
    return PromptBuilder(kb, spec_source, config.target, config.backend, config.token_budget,
                         config.iteration_token_budget, accelerator_name=accelerator_name,
                         tools=config.provider == "anthropic", retrieval=config.retrieval)


def _target(kb: Any, config: SessionConfig) -> tuple[str, dict, list[str]]:
    """The target's name for the prompts, its peaks for the harness (GPU only; see agent_client.target) and
    warnings about the pairing of --backend with it."""
    from agent_client.target import target_peaks

    try:
        facts = kb.accelerator(config.target)
        all_facts = _all_facts(kb) if config.device.startswith("cuda") else {}
    except (KeyError, LookupError) as exc:
        raise ValueError(f"--target {config.target!r}: {exc}") from exc
    except Exception as exc:  # e.g. the KB server is down: say which KB, then stop
        where = f"server {config.kb_url}" if config.kb_url else f"embedded store under {config.home}"
        raise ValueError(f"cannot read the knowledge base ({where}): {type(exc).__name__}: {exc}") from exc
    return (facts.name, target_peaks(facts, all_facts, config.device, config.peaks),
            pairing_warnings(facts, config.backend, config.device))


def _all_facts(kb: Any) -> dict:
    """Every accelerator's facts, to name the one a mismatched device is (empty when the KB cannot list them)."""
    store = getattr(kb, "store", None)
    if store is not None:
        return store.accelerators()
    client = getattr(kb, "client", None)
    return {a.id: a for a in client.accelerators()} if client is not None else {}


def resume_session(session_id: str, settings: ClientSettings, changes: ResumeChanges | None = None,
                   console: Console | None = None, provider: Any = None, **kwargs: Any) -> SessionResult:
    """Continue a session as stored, reaching the model and budgeted as `changes` say (one line for each
    change, before the run)."""
    store = SessionStore.open(session_folder(session_id, settings))
    try:
        stored = store.config()
        config, notes = resumed_config(stored, settings, changes or ResumeChanges(), candidates=len(store.nodes()),
                                       spent_s=store.spent_s())
        # the provider first, as a new session does: a missing key is named before anything is changed
        provider = provider or get_provider(config.provider, settings, **config.provider_options)
        notes += endpoint_notes(getattr(provider, "endpoint", None), store.runs())
        if config != stored:
            store.set_config(config)
    finally:
        store.close()
    console = console or Console(stderr=True)
    for line in notes:
        console.print(f"note: {line}", markup=False, highlight=False, soft_wrap=True)
    return run_session(config, settings, resume=True, console=console, provider=provider, **kwargs)


def session_folder(session_id: str, settings: ClientSettings) -> Path:
    """A session's folder from its id, a unique prefix of it, or the folder (SessionNotFoundError names
    where it looked)."""
    from agent_client.session.catalog import find_session

    return find_session(session_id, settings.sessions_dir)
