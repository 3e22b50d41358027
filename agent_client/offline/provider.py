"""The offline provider: no model at all; the skill library, adapted to the spec and tuned.

Usage: kkb tune SPEC --provider offline     (the default when no ANTHROPIC_API_KEY is set)

Draft phase: trace the spec into an op signature, fetch the library kernels of its op family for
the backend, adapt each to the spec (agent_client.offline.adapt) and propose it at its default
tunables and at a few points spread over its tunable space. Expansion: step the parent's
tunables one notch at a time (block sizes, warps, stages, vector widths), never proposing a point
twice. A spec that no library kernel serves gets a plain error naming the providers that can.
"""

from __future__ import annotations

from pathlib import Path

from agent_client.offline.adapt import AdaptError, adapt
from agent_client.offline.families import render_forward
from agent_client.offline.tunables import diverse_points, get_tunables, key, neighbours, set_tunables
from agent_client.proposals import Proposal, ProposalRequest, ProviderError
from agent_client.signature import OpSignature, trace_signature

_NEEDS_A_MODEL = ("use a model-backed provider instead: `--provider anthropic` (set ANTHROPIC_API_KEY) "
                  "or `--provider openai --base-url URL` for an OpenAI-compatible server")


class OfflineProvider:
    name = "offline"

    def __init__(self, drafts_per_kernel: int = 3):
        self.drafts_per_kernel = drafts_per_kernel  # default tunables + spread points per library kernel
        self._signatures: dict[Path, OpSignature] = {}
        self._tried: set[tuple[str, str]] = set()  # (kernel id, tunables key)

    def signature(self, spec_path: Path) -> OpSignature:
        spec_path = Path(spec_path)
        if spec_path not in self._signatures:
            self._signatures[spec_path] = trace_signature(spec_path)
        return self._signatures[spec_path]

    def propose(self, request: ProposalRequest) -> list[Proposal]:
        sig = self.signature(request.spec_path)
        for node in request.history:  # after a resume, do not repeat what the session already ran
            if node.meta.get("kernel_id"):
                self._tried.add((node.meta["kernel_id"], key(node.tunables or node.meta.get("tunables", {}))))
        if sig.family is None:
            raise ProviderError(f"offline: no library op family matches this spec ({sig.text or 'no ops'}); "
                                + _NEEDS_A_MODEL)
        records = request.kb.kernels(op_family=sig.family, backend=request.backend)
        if not records:
            raise ProviderError(f"offline: the kernel library has no {request.backend} kernel for op family "
                                f"{sig.family!r}; " + _NEEDS_A_MODEL)
        try:
            forward = render_forward(sig)
        except AdaptError as exc:
            raise ProviderError(f"offline: the {sig.family} library kernel cannot serve this spec: {exc}; "
                                + _NEEDS_A_MODEL) from exc
        if request.parent is None:
            # each kernel's default first, then points spread over its space; asked again for drafts
            # (the session may want more than drafts_per_kernel), the list runs on past what was tried
            count = self.drafts_per_kernel + len(self._tried) + request.n
            plan = [(r, p) for r in records for p in diverse_points(get_tunables(r.source), r.tunables, count)]
        else:
            plan = self._expansions(request, records)
        out = []
        for record, point in plan:
            if len(out) >= request.n:
                break
            if (record.id, key(point)) in self._tried:
                continue
            self._tried.add((record.id, key(point)))
            code = adapt(set_tunables(record.source, point), request.spec_source, forward,
                         note=f"library kernel {record.name} ({record.id[:12]}), family {sig.family}")
            desc = (f"offline: library kernel {record.name} for {sig.family} [{sig.text}] "
                    f"with tunables {point}")
            out.append(Proposal(code=code, response_text=desc,
                                meta={"kernel_id": record.id, "tunables": point, "op_family": sig.family,
                                      "op_signature": sig.text}))
        return out

    def _expansions(self, request: ProposalRequest, records) -> list:
        parent = request.parent
        by_id = {r.id: r for r in records}
        record = by_id.get(parent.meta.get("kernel_id"))
        if record is None:  # a parent from another provider: start from each kernel's defaults
            return [(r, p) for r in records for p in diverse_points(get_tunables(r.source), r.tunables, 2)]
        point = parent.tunables or parent.meta.get("tunables") or get_tunables(record.source)
        steps = neighbours(point, record.tunables)
        # when the neighbourhood is used up, jump to unexplored points of the space
        steps += diverse_points(point, record.tunables, 4 * request.n + 1, seed=len(self._tried))[1:]
        return [(record, p) for p in steps]


def make_provider(settings=None, **options) -> OfflineProvider:
    return OfflineProvider(**{k: v for k, v in options.items() if k == "drafts_per_kernel"})
