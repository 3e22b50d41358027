"""`kkb report ID`: one self-contained HTML page for a session (inline CSS, JS and SVG; no network).

Usage: path = write_report(SessionStore.open(folder), folder / "report.html")

The page shows the best speedup over time (SVG chart), the search graph (SVG, nodes coloured by
outcome, click one to find its row), the candidate table with each verdict's reasons and
diagnostics (filter and sort by JS), the knowledge the prompts carried (every source of their facts,
passages and library kernels, with the number of prompts that used it), and the winning kernel's code.
"""

from __future__ import annotations

import datetime as dt
import html
import json
from collections import Counter
from pathlib import Path
from string import Template

from agent_client.session.records import Node, conclusion, interpreter_note, speedup_text
from agent_client.session.store import SessionStore

TEMPLATE_PATH = Path(__file__).parent / "templates" / "report.html"
COLOURS = {"passed": "#16a34a", "wrong": "#dc2626", "compile_error": "#9333ea", "runtime_error": "#ea580c",
           "illegal_memory_access": "#c2410c", "timeout": "#ca8a04", "crashed": "#7f1d1d", "rejected": "#0f766e",
           "malformed": "#6b7280", "eval_error": "#374151", "pending": "#cbd5e1"}
E = html.escape


def write_report(store: SessionStore, out: Path) -> Path:
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_report(store), encoding="utf-8")
    return out


def render_report(store: SessionStore) -> str:
    config, info, nodes = store.config(), store.info(), store.nodes()
    created = info["created_at"]
    best = max((n for n in nodes if n.fitness > 0), key=lambda n: (n.fitness, n.id), default=None)
    outcomes = Counter(n.outcome for n in nodes)
    failed = {k: v for k, v in outcomes.items() if k not in ("passed", "pending")}
    basis = {"compile": "over torch.compile", "eager": "over eager (compile baseline skipped)"}
    values = {
        "session_id": E(config.session_id), "spec": E(Path(config.spec_path).name), "target": E(config.target),
        "backend": E(config.backend), "device": E(config.device), "provider": E(config.provider),
        "policy": E(config.policy), "stopped": E(_stopped(store, info)),
        "created": E(dt.datetime.fromtimestamp(created, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")),
        "best_text": speedup_text(best.fitness) if best else "none",
        "basis_note": E(basis.get(best.fitness_basis or "", "")) if best else "no correct candidate",
        "n_nodes": str(len(nodes)), "n_passed": str(outcomes.get("passed", 0)),
        "time_to_best": f"{best.evaluated_at - created:.0f} s" if best and best.evaluated_at else "-",
        "n_failed": str(sum(failed.values())),
        "failure_text": E(", ".join(f"{k} {v}" for k, v in sorted(failed.items(), key=lambda kv: -kv[1])) or "none"),
        "chart_svg": chart_svg(nodes, created), "graph_svg": graph_svg(nodes),
        "legend": "".join(f'<span><i class="dot" style="background:{COLOURS.get(k, "#999")}"></i>{E(k)}</span>'
                          for k in sorted(outcomes)),
        "filter_options": "".join(f'<option value="{E(k)}">{E(k)}</option>' for k in sorted(outcomes)),
        "rows": "\n".join(_row(n) for n in nodes),
        "winner_title": f": {E(best.id)} ({speedup_text(best.fitness)})" if best else ": none",
        "winner_code": E(best.code) if best else "No candidate was correct and timed in this session.",
        "conclusion": E(conclusion(best, nodes)),
        "knowledge": knowledge_html(store.requests(), config.retrieval),
        "where": where_html(best, config.session_id),
    }
    return Template(TEMPLATE_PATH.read_text(encoding="utf-8")).substitute(values)


def _stopped(store: SessionStore, info: dict) -> str:
    """Why the session stopped, in plain words; on the CPU, what its times are."""
    from agent_client.session.catalog import outcome_text, why_stopped

    note = interpreter_note(store.config().device)
    return outcome_text(info.get("status"), why_stopped(store)[1]) + (f". Note: {note}" if note else "")


def where_html(best: Node | None, session_id: str) -> str:
    """The winner's measurements by outcome: where it wins, where it loses, where it is untested."""
    from agent_client.measurements import measured_from_verdict, where_it_wins

    if best is None:
        return '<p id="where">No candidate passed: nothing to ship.</p>'
    rows = measured_from_verdict(best.verdict or {})
    if not rows:
        return '<p id="where">This verdict was recorded before verdicts named their shapes.</p>'
    groups = where_it_wins(rows)
    items = "".join(f'<li data-outcome="{E(kind)}"><b>{E(kind)}</b>: {E(line)}</li>'
                    for kind in ("wins", "loses", "untested") for line in groups[kind])
    return (f'<ul id="where">{items}</ul><p>Ship it as a PyTorch op that runs the kernel only where it wins: '
            f"<code>kkb export-kernel {E(session_id)} -o my_op.py</code></p>")


SECTION_TITLES = {"passages": "passages", "example_kernels": "library kernels", "hardware_facts": "hardware facts"}


def knowledge_html(requests: list[dict], retrieval: bool) -> str:
    """The sources the session's prompts used, per section, with how many prompts used each."""
    uses: dict[str, Counter] = {name: Counter() for name in SECTION_TITLES}
    for request in requests:
        for section, sources in (request.get("sources") or {}).items():
            uses.setdefault(section, Counter()).update(dict.fromkeys(sources, 1))
    head = (f'<p id="retrieval">retrieval: {"on" if retrieval else "off (facts, rules and task only)"}; '
            f'{len(requests)} prompts</p>')
    if not any(uses.values()):
        return head + "<p>No sources were recorded for these prompts.</p>"
    rows = []
    for section, counter in uses.items():
        for source, n in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0])):
            rows.append(f'<tr data-section="{E(section)}"><td>{E(SECTION_TITLES.get(section, section))}</td>'
                        f"<td>{E(source)}</td><td>{n}</td></tr>")
    return (head + '<table id="sources"><thead><tr><th>section</th><th>source</th><th>prompts</th></tr></thead>'
            f'<tbody>{"".join(rows)}</tbody></table>')


def _num(value, fmt: str = "{:.3f}") -> tuple[str, str]:
    return ("", "-") if value is None else (str(value), fmt.format(value))


def _row(node: Node) -> str:
    v = node.verdict or {}
    outcome = node.outcome
    cells = [("", E(node.id)), ("", E(", ".join(node.parent_ids) or "-")), ("", E(node.kind)),
             ("", E(str(node.meta.get("route_id") or node.meta.get("route") or "-")))]
    cls = "passed" if outcome == "passed" else "fail"
    cells.append(("", f'<span class="{cls}">{E(outcome)}</span>'))
    for key in ("speedup_vs_eager", "speedup_vs_compile", "latency_ms"):
        raw, text = _num(v.get(key), "{:.4g}" if key == "latency_ms" else "{:.3g}")
        cells.append((raw, text))
    cells.append(("", E(str(v.get("limit_kind") or "-"))))
    cells.append(_num(v.get("fraction_of_limit"), "{:.1%}"))
    reasons = "\n".join(str(r)[:400] for r in (v.get("reasons") or []))
    diagnostics = json.dumps(v.get("diagnostics") or {}, default=str, indent=1)[:4000]
    detail = E(reasons or "ok")
    if diagnostics != "{}":
        detail += f"<details><summary>diagnostics</summary><pre><code>{E(diagnostics)}</code></pre></details>"
    if node.code:
        detail += f"<details><summary>code</summary><pre><code>{E(node.code)}</code></pre></details>"
    tds = []
    for i, (raw, text) in enumerate(cells + [("", detail)]):
        attr = f' data-v="{E(raw)}"' if raw else ""
        klass = ' class="reasons"' if i == len(cells) else ""
        tds.append(f"<td{attr}{klass}>{text}</td>")
    return f'<tr id="row-{E(node.id)}" data-status="{E(outcome)}">{"".join(tds)}</tr>'


def chart_svg(nodes: list[Node], created: float, width: int = 720, height: int = 260) -> str:
    """Best fitness so far against seconds since the session started; every evaluated node as a dot."""
    done = sorted((n for n in nodes if n.evaluated_at), key=lambda n: n.evaluated_at)
    pad_l, pad_r, pad_t, pad_b = 56, 16, 14, 36
    if not done:
        return (f'<svg id="chart" width="{width}" height="60" xmlns="http://www.w3.org/2000/svg">'
                '<text x="12" y="34">no evaluated candidate</text></svg>')
    t_max = max(n.evaluated_at - created for n in done) or 1.0
    top = max(n.fitness for n in done)
    y_max = (max(top, 1.0) if top >= 0.5 else top or 1.0) * 1.15  # show the 1x line only when it is near
    sx = lambda t: pad_l + (width - pad_l - pad_r) * t / t_max
    sy = lambda y: height - pad_b - (height - pad_t - pad_b) * y / y_max
    parts = [(f'<svg id="chart" width="{width}" height="{height}" xmlns="http://www.w3.org/2000/svg" '
             'font-size="11" font-family="sans-serif">')]
    for i in range(5):  # y grid and labels
        y = y_max * i / 4
        parts.append(f'<line x1="{pad_l}" x2="{width - pad_r}" y1="{sy(y):.1f}" y2="{sy(y):.1f}" stroke="#eee"/>'
                     f'<text x="{pad_l - 6}" y="{sy(y) + 4:.1f}" text-anchor="end">{speedup_text(y)}</text>')
    if y_max > 1.0:  # the baseline: faster than torch.compile (or eager) above this line
        parts.append(f'<line id="baseline" x1="{pad_l}" x2="{width - pad_r}" y1="{sy(1.0):.1f}" y2="{sy(1.0):.1f}" '
                     'stroke="#f59e0b" stroke-dasharray="4 3"/>')
    parts.append(f'<line x1="{pad_l}" x2="{pad_l}" y1="{pad_t}" y2="{height - pad_b}" stroke="#999"/>'
                 f'<line x1="{pad_l}" x2="{width - pad_r}" y1="{height - pad_b}" y2="{height - pad_b}" stroke="#999"/>'
                 f'<text x="{width / 2:.0f}" y="{height - 6}" text-anchor="middle">seconds since start '
                 f'(last {t_max:.0f} s)</text>')
    best, points = 0.0, []
    for n in done:
        t = n.evaluated_at - created
        if n.fitness > best:
            if points:
                points.append((t, best))
            best = n.fitness
        points.append((t, best))
    line = " ".join(f"{sx(t):.1f},{sy(y):.1f}" for t, y in points)
    parts.append(f'<polyline id="best-line" fill="none" stroke="#2563eb" stroke-width="2" points="{line}"/>')
    for n in done:
        colour = COLOURS.get(n.outcome, "#999")
        parts.append(f'<circle class="point" cx="{sx(n.evaluated_at - created):.1f}" cy="{sy(n.fitness):.1f}" '
                     f'r="3.5" fill="{colour}"><title>{E(n.id)} {E(n.outcome)} {speedup_text(n.fitness)}</title></circle>')
    parts.append("</svg>")
    return "".join(parts)


def graph_svg(nodes: list[Node], col_w: int = 190, row_h: int = 34) -> str:
    """The search graph: one column per depth, parents to children, nodes coloured by outcome."""
    by_id = {n.id: n for n in nodes}
    depth: dict[str, int] = {}
    for n in nodes:  # ids are in creation order, so parents come first
        depth[n.id] = 1 + max((depth.get(p, 0) for p in n.parent_ids if p in by_id), default=-1)
    columns: dict[int, list[str]] = {}
    for n in nodes:
        columns.setdefault(depth[n.id], []).append(n.id)
    pos = {nid: (40 + d * col_w, 24 + i * row_h) for d, ids in columns.items() for i, nid in enumerate(ids)}
    width = 60 + col_w * (1 + max(columns or {0: []}))
    height = 48 + row_h * max((len(v) for v in columns.values()), default=1)
    best = max((n for n in nodes if n.fitness > 0), key=lambda n: n.fitness, default=None)
    parts = [(f'<svg id="graph" width="{max(width, 200)}" height="{height}" xmlns="http://www.w3.org/2000/svg" '
             'font-size="10" font-family="sans-serif">')]
    for n in nodes:
        for p in n.parent_ids:
            if p in pos:
                (x1, y1), (x2, y2) = pos[p], pos[n.id]
                parts.append(f'<line class="edge" x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="#94a3b8"/>')
    for n in nodes:
        x, y = pos[n.id]
        ring = ' stroke="#1d4ed8" stroke-width="3"' if best is not None and n.id == best.id else ""
        label = speedup_text(n.fitness) if n.fitness > 0 else n.outcome[:8]
        parts.append(f'<g class="node" data-id="{E(n.id)}"><circle cx="{x}" cy="{y}" r="9" '
                     f'fill="{COLOURS.get(n.outcome, "#999")}"{ring}><title>{E(n.id)}: {E(n.outcome)}</title></circle>'
                     f'<text x="{x + 13}" y="{y + 4}">{E(n.id)} {E(label)}</text></g>')
    parts.append("</svg>")
    return "".join(parts)
