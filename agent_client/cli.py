"""The agent client's verbs: `kkb tune`, `kkb report`, `kkb export` (registered by kernelkb_cli.py).

Usage: kkb tune examples/specs/SPEC.py --target h200 --backend triton --budget 16 [--device cpu] [--no-retrieval]
                [--kb URL] [-o result.json] [--json]
       kkb tune --resume SESSION_ID [--base-url URL] [--model NAME] [--budget N] [--time-budget S]
       kkb report SESSION_ID [-o report.html] [--json]
       kkb export SESSION_ID [-o session.jsonl] [--json]

--json prints the result as JSON on stdout (messages go to stderr); -o/--output names the file to write.
Exit status of `kkb tune`: see TuneExit.
"""

from __future__ import annotations

import json
import sys
from contextlib import contextmanager
from enum import IntEnum
from pathlib import Path
from typing import Annotated

import typer

from agent_client.cli_settings import settings_or_exit
from agent_client.config import ClientSettings
from agent_client.policies import POLICIES
from agent_client.providers import PROVIDERS
from agent_client.target import PEAKS_CHOICES


class TuneExit(IntEnum):
    OK = 0  # the session produced candidates (its result says whether one passed and what to use)
    BAD_INPUT = 2  # a bad argument or setting, named in the message (as cli_settings.BAD_INPUT)
    PROVIDER_FAILED = 3  # the model endpoint failed: no key, refused, or unreachable after the stated retry wait
    NO_CANDIDATES = 4  # the session ended without a single candidate (the provider had none, every reply malformed)
    INTERRUPTED = 130  # Ctrl-C or SIGTERM: every harness worker stopped, evaluated candidates saved


def _default(field: str) -> str:
    return str(ClientSettings.model_fields[field].default)


def _parse_options(items: list[str], flag: str) -> dict:
    out = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key:
            raise typer.BadParameter(f"{item!r}: expected KEY=VALUE", param_hint=flag)
        try:
            out[key] = json.loads(raw)
        except json.JSONDecodeError:
            out[key] = raw
    return out


def _one_of(names):
    """An option callback that refuses a value outside `names`, naming the choices (click names the option)."""
    def check(value):
        if value is not None and value not in names:
            raise typer.BadParameter(f"{value!r} is not one of {', '.join(sorted(names))}")
        return value
    return check


# what --resume takes besides the view: how to reach the model and how far to go (session/resume.py)
RESUME_CHANGES = {"base_url", "model", "budget", "time_budget"}


def _given(ctx: typer.Context) -> set[str]:
    """The parameters the user typed (or set through their environment variable)."""
    return {name for name in ctx.params if getattr(ctx.get_parameter_source(name), "name", "DEFAULT") != "DEFAULT"}


def _ignored_with_resume(ctx: typer.Context) -> list[str]:
    """Flags a user gave along with --resume that would change the search: the session keeps its own."""
    keep = {"resume", "live", "output", "json_out", "home", *RESUME_CHANGES}
    return sorted(f"--{name.replace('_', '-')}" if name != "spec" else "SPEC" for name in _given(ctx) - keep)


def tune(
    ctx: typer.Context,
    spec: Annotated[Path | None, typer.Argument(help="KernelBench-format spec file (omit with --resume)")] = None,
    target: Annotated[str, typer.Option(help="accelerator id whose facts shape the prompts")] = "h200",
    backend: Annotated[str, typer.Option(help="the candidates' language: triton | cuda | cute | hip")] = "triton",
    budget: Annotated[int, typer.Option(min=1, help="candidates in all, drafts included (with --resume: the new "
                                                    "total)")] = 16,
    time_budget: Annotated[float | None, typer.Option(min=0, help="seconds of wall time for the session, over "
                                                                  "all its runs (with --resume: the new total)")
                           ] = None,
    device: Annotated[str | None, typer.Option(help="cpu | cuda:N (default: cuda:0 if available)")] = None,
    devices: Annotated[str | None, typer.Option(help="several GPUs of this host: cuda:0,cuda:1,...")] = None,
    ray: Annotated[str | None, typer.Option(help="evaluate on the Ray cluster at HOST:PORT, ray://HOST:PORT, "
                                                 "auto or local (one GPU per evaluation)")] = None,
    provider: Annotated[str | None, typer.Option(
        callback=_one_of(PROVIDERS),
        help="where candidates come from: offline (no model; the default without ANTHROPIC_API_KEY), anthropic "
             "(the default with it), openai (any OpenAI-compatible server), replay (a recorded session)")] = None,
    policy: Annotated[str, typer.Option(callback=_one_of(POLICIES), help="which node to expand next: "
                                                                             "greedy | uct | evolutionary")] = "greedy",
    kb: Annotated[str | None, typer.Option("--kb", envvar="KKB_KB_URL", help=(
        "a running knowledge-base server (`kkb serve`), e.g. http://host:8700; default: the embedded store"))
                  ] = None,
    drafts: Annotated[int, typer.Option(min=0, help="independent candidates before expanding")] = 4,
    proposals: Annotated[int, typer.Option(min=1, help="candidates asked per provider request")] = 2,
    stall: Annotated[int | None, typer.Option(min=1, help="stop after N evaluated nodes without a new best")] = None,
    target_speedup: Annotated[float | None, typer.Option(min=0, help="stop once the best speedup reaches this")
                              ] = None,
    eval_workers: Annotated[int | None, typer.Option(min=1, help="candidates in the harness at once (default 1; "
                                                                 "GPU 3)")] = None,
    seed: int = 0,
    model: Annotated[str | None, typer.Option(help=(
        f"the model: anthropic's default is {_default('anthropic_model')} (setting KKB_ANTHROPIC_MODEL), "
        f"openai's {_default('openai_model')} (KKB_OPENAI_MODEL)"))] = None,
    base_url: Annotated[str | None, typer.Option(help=(
        "the model's endpoint: for openai e.g. http://127.0.0.1:8000/v1 (setting OPENAI_BASE_URL); for "
        "anthropic a local or proxy server (ANTHROPIC_BASE_URL)"))] = None,
    replay_from: Annotated[str | None, typer.Option(help="session id whose responses replay replays")] = None,
    session_id: Annotated[str | None, typer.Option(help="name of the new session")] = None,
    resume: Annotated[str | None, typer.Option(help="continue a session by id or unique prefix: it keeps its "
                                                    "search; --base-url, --model, --budget and --time-budget "
                                                    "may change")] = None,
    write_back: Annotated[bool, typer.Option(help="add the winner to the kernel library")] = True,
    retrieval: Annotated[bool, typer.Option(help="passages and library kernels in the prompts; --no-retrieval "
                                                 "gives facts, rules and task only (the baseline)")] = True,
    peaks: Annotated[str, typer.Option(callback=_one_of(PEAKS_CHOICES),
                                       help="the harness's peaks: facts (of --target; the device must be it) "
                                            "| measured (on the device)")] = "facts",
    min_speedup: Annotated[float, typer.Option(min=0, help="a winner must beat the baseline by this")] = 1.0,
    eval_option: Annotated[list[str], typer.Option(help="harness EvalConfig field, KEY=VALUE")] = [],  # noqa: B006
    policy_option: Annotated[list[str], typer.Option(help="policy option, KEY=VALUE")] = [],  # noqa: B006
    live: Annotated[bool | None, typer.Option(help="rich live view (default: on a terminal, without --json)")
                    ] = None,
    output: Annotated[Path | None, typer.Option("-o", "--output", help="also write the result (JSON) here")
                      ] = None,
    json_out: Annotated[bool, typer.Option("--json", help="print the result as JSON (messages go to stderr)")
                        ] = False,
    home: Annotated[Path | None, typer.Option(help="KKB_HOME (store and sessions)")] = None,
) -> None:
    from agent_client.proposals import EndpointError, ProviderError
    from agent_client.runner import new_config, resume_session, run_session
    from agent_client.session.resume import ResumeChanges
    from harness.executor import devices_from_cli
    from harness.stopping import install_stop_signals

    install_stop_signals()  # SIGTERM ends the session as Ctrl-C does: every harness worker is stopped
    say = (lambda text: typer.echo(text, err=True)) if json_out else typer.echo
    live = (not json_out and None) if live is None else live  # --json: plain lines on stderr, no live panel
    try:
        settings = settings_or_exit(home)
        session_name = resume or "SESSION_ID"  # for the message after Ctrl-C
        if resume:
            ignored = _ignored_with_resume(ctx)
            if ignored:
                typer.echo(f"warning: {', '.join(ignored)} ignored: a resumed session keeps the search it was "
                           "started with (only --base-url, --model, --budget and --time-budget change)", err=True)
            given = _given(ctx)
            changes = ResumeChanges(base_url=base_url, model=model, budget=budget if "budget" in given else None,
                                    time_budget_s=time_budget)
            result = resume_session(resume, settings, changes, live=live)
        else:
            if spec is None:
                raise typer.BadParameter("give a SPEC file, or --resume SESSION_ID", param_hint="SPEC")
            provider_options: dict = {}
            if model:
                provider_options["model"] = model
            if replay_from:
                provider_options["source"] = replay_from
            if base_url:
                provider_options["base_url"] = base_url
            config = new_config(
                spec, settings, session_id=session_id, eval_overrides=_parse_options(eval_option, "--eval-option"),
                target=target, backend=backend, budget=budget, time_budget_s=time_budget, device=device,
                devices=devices_from_cli(devices, ray, device), ray_address=ray,
                provider=provider, policy=policy, kb_url=kb, drafts=drafts, proposals_per_step=proposals,
                stall_nodes=stall, target_speedup=target_speedup, eval_workers=eval_workers, seed=seed,
                provider_options=provider_options, write_back=write_back, write_back_min_speedup=min_speedup,
                retrieval=retrieval, peaks=peaks,
                policy_options=_parse_options(policy_option, "--policy-option"), command=" ".join(sys.argv),
            )
            session_name = config.session_id
            result = run_session(config, settings, live=live)
    except EndpointError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(TuneExit.PROVIDER_FAILED) from None
    except (FileNotFoundError, FileExistsError, ValueError, ConnectionError, ProviderError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(TuneExit.BAD_INPUT) from None
    except KeyboardInterrupt:
        typer.echo(f"interrupted: every harness worker was stopped and evaluated candidates are saved; continue "
                   f"with `kkb tune --resume {session_name}` (sessions under {settings.sessions_dir})", err=True)
        raise typer.Exit(TuneExit.INTERRUPTED) from None
    code = _report_result(result, settings, say)
    text = json.dumps(result.to_dict(), indent=2) + "\n"
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")
    if json_out:
        typer.echo(text, nl=False)
    if code != TuneExit.OK:
        raise typer.Exit(code)


def _report_result(result, settings: ClientSettings, say) -> TuneExit:
    """The session's outcome for people (one error line when it failed) and the exit status it means."""
    from agent_client.session.records import interpreter_note, speedup_text

    if result.stop_reason == "provider_failed":
        typer.echo(f"error: {result.stop_text}; {result.evaluated} candidates evaluated and saved; `kkb tune "
                   f"--resume {result.session_id}` continues it (with --base-url, --model or the key changed if "
                   "need be)", err=True)
        return TuneExit.PROVIDER_FAILED
    if result.candidates == 0:
        replies = f" ({result.nodes} replies without one)" if result.nodes else ""
        kept = "" if (settings.sessions_dir / result.session_id).exists() else " (nothing was kept)"
        typer.echo(f"error: no candidates were produced{replies}; the session stopped because "
                   f"{result.stop_text}{kept}", err=True)
        return TuneExit.NO_CANDIDATES
    folder = settings.sessions_dir / result.session_id
    basis = {"compile": "torch.compile", "eager": "eager (compile baseline skipped)"}.get(result.fitness_basis or "")
    best = f"{speedup_text(result.best_fitness)} over {basis} ({result.best_node_id})" if result.best_node_id else "none"
    passed = result.nodes - sum(result.failures.values())
    say(f"session {result.session_id}: {result.candidates} candidates ({passed} passed), best {best}; stopped "
        f"because {result.stop_text}")
    config_device = _device_of(folder)
    if result.best_node_id and interpreter_note(config_device):
        say(f"note: {interpreter_note(config_device)}")
    if result.conclusion:
        say(result.conclusion)
    say(f"report: {folder / 'report.html'}")
    if result.written_kernels:
        say(f"written to the kernel library: {', '.join(result.written_kernels)}")
    return TuneExit.OK


def _device_of(folder: Path) -> str:
    try:
        return json.loads((folder / "config.json").read_text(encoding="utf-8")).get("device", "cpu")
    except (OSError, ValueError):
        return "cpu"


tune.__doc__ = (
    "Tune a kernel for SPEC: draft candidates, evaluate them, expand the best, keep what is learned.\n\n"
    "Providers and their settings: anthropic needs ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL for a local server) "
    f"and uses the model {_default('anthropic_model')} unless --model or KKB_ANTHROPIC_MODEL names another; "
    "openai talks to any OpenAI-compatible server at --base-url or OPENAI_BASE_URL (model KKB_OPENAI_MODEL, "
    f"default {_default('openai_model')}); offline needs no model. A model endpoint that answers with a rate "
    "limit, an overload or not at all is retried for up to KKB_PROVIDER_RETRY_S seconds of waiting in all "
    f"(default {float(_default('provider_retry_s')):g}), announced when it starts; then the session stops. One "
    f"try waits KKB_PROVIDER_TIMEOUT_S seconds for its answer (default {float(_default('provider_timeout_s')):g}); "
    "a long wait is said once.\n\n"
    "Exit status: 0 the session produced candidates (its result says whether one passed); 2 a bad argument or "
    "setting; 3 the provider failed (no key, refused, unreachable after the retries: evaluated candidates are "
    "saved and --resume continues); 4 no candidates were produced; 130 interrupted."
)


@contextmanager
def _open_session(session: str, home: Path | None):
    """The session's folder and its open store; an unknown session id is a clear error (exit 2)."""
    from agent_client.runner import session_folder
    from agent_client.session.store import SessionStore

    try:
        folder = session_folder(session, settings_or_exit(home))
    except FileNotFoundError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    store = SessionStore.open(folder)
    try:
        yield folder, store
    finally:
        store.close()


def report(
    session: Annotated[str, typer.Argument(help="session id (or its folder)")],
    output: Annotated[Path | None, typer.Option("-o", "--output", help="HTML file to write (default: the "
                                                                        "session folder)")] = None,
    home: Annotated[Path | None, typer.Option(help="KKB_HOME")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="print the session id and the page's path as JSON")
                        ] = False,
) -> None:
    """Write one self-contained HTML page for a session: chart, search graph, candidates, winner."""
    from agent_client.report import write_report

    with _open_session(session, home) as (folder, store):
        path = write_report(store, output or folder / "report.html")
    typer.echo(json.dumps({"session": folder.name, "output": str(path)}) if json_out else str(path))


def export(
    session: Annotated[str, typer.Argument(help="session id (or its folder)")],
    output: Annotated[Path | None, typer.Option("-o", "--output", help="JSONL file to write (default: the "
                                                                        "session folder)")] = None,
    home: Annotated[Path | None, typer.Option(help="KKB_HOME")] = None,
    json_out: Annotated[bool, typer.Option("--json", help="print the session id, the file's path and its row "
                                                          "count as JSON")] = False,
) -> None:
    """Write a session as JSONL (prompt, response, reward, correctness, diagnostics, messages)."""
    from agent_client.export import export_rows, write_jsonl

    with _open_session(session, home) as (folder, store):
        rows = export_rows(store)
        path = write_jsonl(rows, output or folder / "export.jsonl")
    typer.echo(json.dumps({"session": folder.name, "output": str(path), "rows": len(rows)}) if json_out
               else f"{path} ({len(rows)} rows)")
