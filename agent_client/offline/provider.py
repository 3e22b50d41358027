"""The offline provider: no model at all; the spec lowered to Triton, and the skill library where it fits.

Usage: kkb tune SPEC --provider offline     (the default when no ANTHROPIC_API_KEY is set)

Two kinds of candidate compete through the harness:
- the general lowering (agent_client.lowering): the spec's op graph, traced from the file as written,
  becomes fused Triton kernels; it serves any graph of supported ATen ops and is always tried;
- the library's specialised kernels: where the traced signature matches a family of the skill library
  (softmax, layer/RMS/group/batch norm, GEMM with an epilogue, attention, pooling, cross-entropy...),
  the family's kernel adapted to the spec (agent_client.offline.families).
Drafts are each route's defaults, then points spread over its tunable space; an expansion steps the
parent's tunables one notch at a time (block sizes, warps, stages, precision), never proposing a point
twice. A spec no route serves gets one error that says why for each route.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from agent_client.lowering.lower import Lowered, lower_spec
from agent_client.lowering.writer import LoweringError
from agent_client.offline.adapt import AdaptError, adapt
from agent_client.offline.families import render_forward
from agent_client.offline.tunables import diverse_points, get_tunables, key, neighbours, set_tunables
from agent_client.opgraph.trace import TraceError
from agent_client.proposals import Proposal, ProposalRequest, ProviderError
from agent_client.signature import trace_signature

_NEEDS_A_MODEL = ("a model-backed provider may still serve it: `--provider anthropic` (set ANTHROPIC_API_KEY) "
                  "or `--provider openai --base-url URL`")


@dataclass
class Route:
    """One way to build candidates for the spec: a source with a TUNABLES literal and its space."""

    id: str  # "lowering", "lowering:conv_impl=direct", or a library kernel's id
    source: str
    space: dict
    default: dict
    meta: dict = field(default_factory=dict)


class OfflineProvider:
    name = "offline"

    def __init__(self, drafts_per_kernel: int = 3):
        self.drafts_per_kernel = drafts_per_kernel  # default tunables + spread points per route
        self._routes: dict[tuple, tuple[list[Route], list[str]]] = {}
        self._tried: set[tuple[str, str]] = set()  # (route id, tunables key)

    def routes(self, request: ProposalRequest) -> tuple[list[Route], list[str]]:
        """(routes, why each missing route is missing), cached per spec, backend and device kind."""
        target = "cpu" if str(request.device).startswith("cpu") else "cuda"
        cache_key = (str(request.spec_path), request.backend, target)
        if cache_key not in self._routes:
            self._routes[cache_key] = self._build_routes(request, target)
        return self._routes[cache_key]

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
                        routes.append(self._lowered_route(f"lowering:conv_impl={impl}", alt, {"conv_impl": impl}))
        except TraceError as exc:
            raise ProviderError(f"offline: {exc}") from exc
        except LoweringError as exc:
            why.append(f"general lowering: {exc}")
        routes += self._library_routes(request, why)
        return routes, why

    @staticmethod
    def _lowered_route(route_id: str, lowered: Lowered, options: dict) -> Route:
        return Route(route_id, lowered.source, lowered.space, dict(lowered.tunables),
                     {"route": "lowering", "options": options, "kernels": lowered.kernels,
                      "op_signature": lowered.graph.text if lowered.graph else ""})

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
        records = request.kb.kernels(op_family=sig.family, backend=request.backend)
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
            note = f"library kernel {r.name} ({r.id[:12]}), family {sig.family}"
            source = adapt(r.source, request.spec_source, forward, note)
            out.append(Route(r.id, source, dict(r.tunables), get_tunables(r.source),
                             {"route": "library", "kernel_id": r.id, "op_family": sig.family,
                              "op_signature": sig.text, "kernel_name": r.name}))
        return out

    def propose(self, request: ProposalRequest) -> list[Proposal]:
        routes, why = self.routes(request)
        for node in request.history:  # after a resume, do not repeat what the session already ran
            rid = node.meta.get("route_id") or node.meta.get("kernel_id")
            if rid:
                self._tried.add((rid, key(node.tunables or node.meta.get("tunables", {}))))
        if not routes:
            raise ProviderError("offline: no route serves this spec: " + "; ".join(why) + "; " + _NEEDS_A_MODEL)
        if request.parent is None:
            count = self.drafts_per_kernel + len(self._tried) + request.n
            per_route = [[(r, p) for p in diverse_points(r.default, r.space, count)] for r in routes]
            plan = [x[i] for i in range(max(len(x) for x in per_route)) for x in per_route if i < len(x)]
        else:
            plan = self._expansions(request, routes)
        only_fallback = all(r.meta.get("route") == "lowering" for r in routes)
        out = []
        for route, point in plan:
            if len(out) >= request.n:
                break
            if (route.id, key(point)) in self._tried:
                continue
            self._tried.add((route.id, key(point)))
            code = set_tunables(route.source, point)
            desc = f"offline: {route.id} with tunables {point}"
            meta = {**route.meta, "route_id": route.id, "tunables": point, "general_lowering_only": only_fallback,
                    "unserved": why}
            if route.meta.get("route") == "library":
                meta["kernel_id"] = route.id
            out.append(Proposal(code=code, response_text=desc, meta=meta))
        return out

    def _expansions(self, request: ProposalRequest, routes: list[Route]) -> list:
        parent = request.parent
        rid = parent.meta.get("route_id") or parent.meta.get("kernel_id")
        route = next((r for r in routes if r.id == rid), None)
        if route is None:  # a parent from another provider: start from each route's defaults
            return [(r, p) for r in routes for p in diverse_points(r.default, r.space, 2)]
        point = parent.tunables or parent.meta.get("tunables") or route.default
        steps = neighbours(point, route.space)
        # when the neighbourhood is used up, jump to unexplored points of the space
        steps += diverse_points(point, route.space, 4 * request.n + 1, seed=len(self._tried))[1:]
        return [(route, p) for p in steps]


def make_provider(settings=None, **options) -> OfflineProvider:
    return OfflineProvider(**{k: v for k, v in options.items() if k == "drafts_per_kernel"})
