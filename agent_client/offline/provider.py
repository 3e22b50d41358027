"""The offline provider: no model at all; the spec lowered to Triton, and the skill library where it fits.

Usage: kkb tune SPEC --provider offline     (the default when no ANTHROPIC_API_KEY is set)

Two kinds of route compete through the harness:
- the general lowering (agent_client.lowering): the spec's op graph, traced from the file as written,
  becomes fused Triton kernels; it serves any graph of supported ATen ops and is always tried;
- the library's specialised kernels: where the traced signature matches a family of the skill library
  (softmax, layer/RMS/group/batch norm, GEMM with an epilogue, attention, pooling, cross-entropy...),
  the family's kernel, bundled (ingest.bundle), adapted to the spec (agent_client.offline.families).
Drafts are each route's defaults, then structural alternatives of them. An expansion moves the tunables
that the measured bottleneck says matter (agent_client/offline/search.py), among those the spec's path
reads (agent_client/offline/reads.py); a point whose launches equal a tried one's is never proposed.
A route far behind the leading one is no longer expanded (its parent's expansions come from the
leader's best), and once a candidate reaches AT_LIMIT of its hardware limit the provider proposes
nothing more (`stop_note` says why). A spec no route serves gets one error that says why for each route.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from agent_client.lowering.lower import Lowered, lower_spec
from agent_client.lowering.writer import LoweringError
from agent_client.offline.adapt import AdaptError, adapt
from agent_client.offline.families import render_forward
from agent_client.offline.reads import LaunchProbe
from agent_client.offline.search import (
    AT_LIMIT,
    at_limit,
    combined_moves,
    expansion_plan,
    is_behind,
    leader,
    route_of,
    standings,
)
from agent_client.offline.tunables import diverse_points, get_tunables, key, set_tunables
from agent_client.opgraph.trace import TraceError
from agent_client.proposals import NodeView, Proposal, ProposalRequest, ProviderError
from agent_client.signature import trace_signature
from ingest.bundle import BundleError, bundle

_NEEDS_A_MODEL = ("a model-backed provider may still serve it: `--provider anthropic` "
                  "(set ANTHROPIC_API_KEY) or `--provider openai --base-url URL`")
_MAX_DRY_RUNS = 160  # dry runs one request may spend looking for points not tried yet


@dataclass
class Route:
    """One way to build candidates for the spec: a source with a TUNABLES literal and its space."""

    id: str  # "lowering", "lowering:conv_impl=direct", or "library:<kernel name>"
    source: str
    space: dict
    default: dict
    meta: dict = field(default_factory=dict)


class OfflineProvider:
    name = "offline"

    def __init__(self, drafts_per_kernel: int = 3):
        self.drafts_per_kernel = drafts_per_kernel  # default tunables + structural alternatives per route
        self._routes: dict[tuple, tuple[list[Route], list[str]]] = {}
        self._probes: dict[tuple, LaunchProbe] = {}
        self._tried: dict[str, set] = {}  # route id -> identities of its proposed points (see _identity)
        self.stop_note = ""  # why the last request got no proposal, when it got none

    # ---- routes ---------------------------------------------------------------------------------------
    def routes(self, request: ProposalRequest) -> tuple[list[Route], list[str]]:
        """(routes, why each missing route is missing), cached per spec, backend and device kind."""
        cache_key = self._cache_key(request)
        if cache_key not in self._routes:
            self._routes[cache_key] = self._build_routes(request, cache_key[2])
        return self._routes[cache_key]

    def set_routes(self, request: ProposalRequest, routes: list[Route], why: list[str]) -> None:
        """Routes built elsewhere (a benchmark's parallel pre-pass) for this request's spec."""
        self._routes[self._cache_key(request)] = (routes, why)

    @staticmethod
    def _cache_key(request: ProposalRequest) -> tuple:
        target = "cpu" if str(request.device).startswith("cpu") else "cuda"
        return (str(request.spec_path), request.backend, target)

    def _build_routes(self, request: ProposalRequest, target: str) -> tuple[list[Route], list[str]]:
        routes, why = [], []
        if request.backend != "triton":
            return [], [f"the offline mode writes Triton; backend {request.backend!r} needs a model"]
        try:
            lowered = lower_spec(Path(request.spec_path), target, source=request.spec_source)
            routes.append(self._lowered_route("lowering", lowered, {}))
            if any("_conv:" in k for k in lowered.kernels):
                for impl in ("direct", "dot"):
                    try:
                        alt = lower_spec(Path(request.spec_path), target, {"conv_impl": impl},
                                         source=request.spec_source)
                    except LoweringError:
                        continue
                    if alt.source != lowered.source:
                        route_id = f"lowering:conv_impl={impl}"
                        routes.append(self._lowered_route(route_id, alt, {"conv_impl": impl}))
        except TraceError as exc:
            raise ProviderError(f"offline: {exc}") from exc
        except LoweringError as exc:
            why.append(f"general lowering: {exc}")
        routes += self._library_routes(request, why)
        for route in [r for r in routes if r.meta.get("route") == "library"]:
            refused = self._probe(request, route).refusal(route.default)
            if refused:  # its launcher refuses these shapes, or the adapted forward cannot run them
                routes.remove(route)
                why.append(f"library: {route.meta['kernel_name']} cannot run the spec: {refused}")
        return routes, why

    @staticmethod
    def _lowered_route(route_id: str, lowered: Lowered, options: dict) -> Route:
        return Route(route_id, lowered.source, lowered.space, dict(lowered.tunables),
                     {"route": "lowering", "options": options, "kernels": lowered.kernels,
                      "op_signature": lowered.graph.text if lowered.graph else ""})

    @staticmethod
    def _library_records(request: ProposalRequest, family: str, why: list[str]) -> list:
        """The family's records in the knowledge base; where it holds no kernels at all (never ingested), the
        library that ships in corpus/kernels, bundled the same way, so a fresh home is not a slower one."""
        records = request.kb.kernels(op_family=family, backend=request.backend)
        if records or request.kb.kernels():
            return records
        from agent_client.offline.library import CorpusLibrary

        why.append("library: the knowledge base holds no kernels (`kkb ingest` adds them): the library was read "
                   "from corpus/kernels")
        return CorpusLibrary().kernels(op_family=family, backend=request.backend)

    def _library_routes(self, request: ProposalRequest, why: list[str]) -> list[Route]:
        try:
            sig = trace_signature(Path(request.spec_path))
        except Exception as exc:  # noqa: BLE001 - the older tracer is narrower than the front end
            why.append(f"library: the signature tracer could not read the spec ({type(exc).__name__})")
            return []
        if sig.family is None:
            ops = (sig.text or "no ops").split(" ; ")
            shown = " ; ".join(ops[:6]) + (f" ; ... ({len(ops)} ops in all)" if len(ops) > 6 else "")
            why.append(f"library: no op family matches [{shown}]")
            return []
        records = self._library_records(request, sig.family, why)
        if not records:
            why.append(f"library: no {request.backend} kernel for op family {sig.family!r}")
            return []
        try:
            forward = render_forward(sig)
        except AdaptError as exc:
            why.append(f"library: the {sig.family} kernel cannot serve this spec: {exc}")
            return []
        out = []
        for r in records:
            try:  # records are stored bundled; one that is not (an older store) is bundled the same way here
                source = bundle(r.source, origin=getattr(r, "path", None) or r.name)
            except BundleError as exc:
                why.append(f"library: kernel {r.name} cannot be bundled: {exc}")
                continue
            note = f"library kernel {r.name} ({r.id[:12]}), family {sig.family}"
            out.append(Route(f"library:{r.name}", adapt(source, request.spec_source, forward, note),
                             dict(r.tunables), get_tunables(source),
                             {"route": "library", "kernel_id": r.id, "op_family": sig.family,
                              "op_signature": sig.text, "kernel_name": r.name}))
        return out

    # ---- what a point is ------------------------------------------------------------------------------
    def _probe(self, request: ProposalRequest, route: Route) -> LaunchProbe:
        k = (*self._cache_key(request), route.id)
        if k not in self._probes:
            self._probes[k] = LaunchProbe(route.source, request.spec_path, str(request.device))
        return self._probes[k]

    def _identity(self, request: ProposalRequest, route: Route, point: dict) -> tuple:
        """Two points are one candidate when their launches are the same (without a dry run: their values)."""
        trace = self._probe(request, route).trace({**route.default, **point})
        if trace is not None and trace.launches:
            return ("launches", trace.launches)
        return ("point", key({**route.default, **point}))

    def relevant(self, request: ProposalRequest, route: Route, point: dict) -> set | None:
        """The tunables of `route.space` the spec's path reads at `point` (None: unknown, all of them)."""
        trace = self._probe(request, route).trace({**route.default, **point})
        return None if trace is None else set(trace.read) & set(route.space)

    # ---- proposals ------------------------------------------------------------------------------------
    def propose(self, request: ProposalRequest) -> list[Proposal]:
        routes, why = self.routes(request)
        if not routes:
            raise ProviderError(f"offline: no route serves this spec: {'; '.join(why)}; {_NEEDS_A_MODEL}")
        by_id = {r.id: r for r in routes}
        history = list(request.history)
        if request.parent is not None and all(n.node_id != request.parent.node_id for n in history):
            history.append(request.parent)
        for node in history:  # after a resume, do not repeat what the session already ran
            route = by_id.get(route_of(node) or "")
            if route is not None:
                self._tried.setdefault(route.id, set()).add(
                    self._identity(request, route, node.tunables or node.meta.get("tunables") or {}))
        self.stop_note = ""
        done = at_limit(history)
        if done is not None:
            v = done.verdict
            self.stop_note = (f"{done.node_id} reached {v['fraction_of_limit']:.0%} of the "
                              f"{v.get('limit_kind')} limit (the search stops at {AT_LIMIT:.0%})")
            return []
        if request.parent is None:
            plan = self._drafts(request, routes)
        else:
            plan = self._expansions(request, routes, history)
        only_fallback = all(r.meta.get("route") == "lowering" for r in routes)
        out, dry_runs = [], 0
        for route, point, base in plan:
            if len(out) >= request.n or dry_runs >= _MAX_DRY_RUNS:
                break
            point = {**route.default, **point}
            dry_runs += 1
            identity = self._identity(request, route, point)
            tried = self._tried.setdefault(route.id, set())
            if identity in tried:
                continue
            tried.add(identity)
            changed = sorted(k for k in point if base is not None and base[1].get(k) != point[k])
            meta = {**route.meta, "route_id": route.id, "tunables": point, "unserved": why,
                    "general_lowering_only": only_fallback}
            if base is not None:
                meta.update(expanded_from=base[0], changed=changed)
            out.append(Proposal(code=set_tunables(route.source, point), meta=meta,
                                response_text=f"offline: {route.id} with tunables {point}"
                                + (f" (from {base[0]}: {', '.join(changed)} moved)" if base else "")))
        if not out:
            self.stop_note = "every point the search would try next has been tried"
        return out

    def _drafts(self, request: ProposalRequest, routes: list[Route]) -> list:
        """Each route's default first, then structural alternatives of it, round-robin over the routes."""
        per_route = []
        for r in routes:
            relevant = self.relevant(request, r, r.default)
            alternatives = expansion_plan(r.default, r.space, None, relevant)[:self.drafts_per_kernel * 4]
            points = [r.default, *alternatives]
            points += diverse_points(r.default, _only(r.space, relevant), 4 * request.n + 1)[1:]
            per_route.append([(r, p, None) for p in points])
        return [x[i] for i in range(max(len(x) for x in per_route)) for x in per_route if i < len(x)]

    def _expansions(self, request: ProposalRequest, routes: list[Route], history: list[NodeView]) -> list:
        base = request.parent
        route = next((r for r in routes if r.id == route_of(base)), None)
        if route is None:  # a parent from another provider: start from each route's defaults
            return [(r, p, None) for r in routes for p in diverse_points(r.default, r.space, 2)]
        table = standings(history)
        top = leader(table)
        if is_behind(route.id, table) and top is not None:  # far behind: expand the leading route's best
            best = next((n for n in history if n.node_id == top.best_node_id), None)
            lead = next((r for r in routes if r.id == top.route_id), None)
            if best is not None and lead is not None:
                base, route = best, lead
        plan = self._around(request, route, base, history)
        # once that neighbourhood is used up: the best of every other route still in the race
        for other in sorted(table.values(), key=lambda s: -s.best_fitness):
            alt = next((r for r in routes if r.id == other.route_id), None)
            node = next((n for n in history if n.node_id == other.best_node_id), None)
            if alt is not None and node is not None and alt.id != route.id and not is_behind(alt.id, table):
                plan += self._around(request, alt, node, history)
        return plan

    def _around(self, request: ProposalRequest, route: Route, base: NodeView, history: list) -> list:
        """(route, point, (base id, base point)) for the points the search tries next around `base`: first the
        moves of its children that beat it, together; then the plan for its bottleneck."""
        point = {**route.default, **(base.tunables or base.meta.get("tunables") or {})}
        relevant = self.relevant(request, route, point)
        seed = sum(len(t) for t in self._tried.values())
        steps = combined_moves(point, base, history)
        steps += expansion_plan(point, route.space, base.verdict, relevant, seed=seed)
        # when the plan is used up, points spread over what the path reads
        steps += diverse_points(point, _only(route.space, relevant), 4 * request.n + 1, seed=seed)[1:]
        return [(route, p, (base.node_id, point)) for p in steps]


def _only(space: dict, names: set | None) -> dict:
    return dict(space) if names is None else {k: v for k, v in space.items() if k in names}


def make_provider(settings=None, **options) -> OfflineProvider:
    return OfflineProvider(**{k: v for k, v in options.items() if k == "drafts_per_kernel"})
