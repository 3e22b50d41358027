"""The retrieval-augmented prompt builder: ops from the spec's AST, sections, sources and the budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from kb_server.api.settings import ServerSettings
from kb_server.prompt import PromptError, build_prompt, estimate_tokens, spec_ops
from tests.kb_server import kbdata

FIXTURES = Path(__file__).parent / "fixtures"
SECTIONS = ["hardware_facts", "passages", "example_kernels", "rules", "task"]


@pytest.mark.parametrize(
    ("body", "ops"),
    [
        ("return torch.softmax(x, dim=-1)", ["softmax"]),
        ("return F.gelu(self.fc(x))", ["gelu"]),  # self.fc(...) is a module call, not an op
        ("return x @ w + b", ["matmul"]),  # the @ operator
        ("return x.exp().sum(dim=1)", ["sum", "exp"]),  # tensor methods, outer call first
        ("return torch.nn.functional.layer_norm(x, x.shape[-1:])", ["layer_norm"]),
        ("return (x + 1).relu_()", ["relu"]),  # in-place method on an expression
        ("return x.view(-1).contiguous()", []),  # bookkeeping is not an op
    ],
)
def test_spec_ops_from_forward(body, ops):
    src = ("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"
           f"class Model(nn.Module):\n    def forward(self, x, w=None, b=None):\n        {body}\n"
           "def get_inputs():\n    return [torch.randn(4, 4), torch.rand(4)]\n")
    assert spec_ops(src) == ops


def test_spec_ops_modules_and_aliases():
    src = ("from torch import nn\nimport torch.nn.functional as fn\n"
           "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
           "        self.ln = nn.LayerNorm(8)\n        self.act = nn.ReLU()\n        self.c = nn.Conv2d(3, 8, 3)\n"
           "    def forward(self, x):\n        return fn.softmax(self.act(self.ln(self.c(x))), -1)\n")
    assert spec_ops(src) == ["layer_norm", "relu", "conv2d", "softmax"]


def test_spec_is_never_executed(tmp_path):
    marker = tmp_path / "ran"
    src = f"open({str(marker)!r}, 'w').write('x')\nimport torch\ny = torch.tanh(torch.zeros(1))\n"
    assert "tanh" in spec_ops(src)
    assert not marker.exists()


def test_syntax_error_names_the_field():
    with pytest.raises(PromptError, match="line 1") as info:
        spec_ops("def (:\n")
    assert info.value.field == "spec_source"


@pytest.mark.parametrize("source", [
    "x = 1\x00",  # NUL byte
    "x = " + "-" * 200_000 + "1",  # nesting deep enough to exhaust the parser's recursion
])
def test_hostile_sources_are_a_named_error_not_a_crash(source):
    with pytest.raises(PromptError) as info:
        spec_ops(source)
    assert info.value.field == "spec_source"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    from kb_server.store import Store

    with kbdata.one_torch_thread():
        s = Store(ServerSettings(home=tmp_path_factory.mktemp("kkb"), corpus_dir=FIXTURES))
        kbdata.seed(s)
        yield s


def test_bundle_sections_sources_and_filters(store):
    bundle = build_prompt(store, kbdata.SPEC, "h100", "triton", token_budget=6000)
    assert [s.name for s in bundle.sections] == SECTIONS
    sec = {s.name: s for s in bundle.sections}
    assert "228 KiB" in sec["hardware_facts"].text and "https://www.nvidia.com/en-us/data-center/h100/" in \
        sec["hardware_facts"].sources
    assert "row softmax" in sec["passages"].text.lower()
    assert any("h100-softmax" in src for src in sec["passages"].sources)
    assert not any("mi300x" in src for src in sec["passages"].sources)  # accelerator filter
    assert "_softmax_kernel" in sec["example_kernels"].text  # the triton kernel ...
    assert "a cuda softmax" not in sec["example_kernels"].text  # ... not the cuda one
    assert "torch.softmax(x, dim=-1)" in sec["task"].text and "ModelNew" in sec["task"].text
    assert bundle.text == "\n\n".join(s.text for s in bundle.sections)
    assert bundle.tokens == estimate_tokens(bundle.text) <= 6000
    assert all(s.tokens == estimate_tokens(s.text) for s in bundle.sections)


def _passages(bundle) -> list[str]:
    return next(s for s in bundle.sections if s.name == "passages").sources


def _kernel_text(bundle) -> str:
    return next(s for s in bundle.sections if s.name == "example_kernels").text


@pytest.mark.parametrize("budget", [1200, 1500, 2000, 3000, 6000, 20_000])
def test_every_budget_carries_facts_passages_and_a_kernel(store, budget):
    bundle = build_prompt(store, kbdata.SPEC, "h100", "triton", token_budget=budget)
    assert bundle.tokens == estimate_tokens(bundle.text) <= budget
    assert [s.name for s in bundle.sections] == SECTIONS  # no section is dropped for another
    assert "shared memory per unit: 228 KiB" in bundle.sections[0].text
    assert len(_passages(bundle)) >= 3  # the store holds 4 passages for the h100 (and "any")
    assert "Retrieved for the ops in this spec (softmax) and its expected bottleneck (memory)" in bundle.sections[1].text
    assert "_softmax_kernel" in _kernel_text(bundle)


def _text(bundle, name: str) -> str:
    return next(s for s in bundle.sections if s.name == name).text


def test_rules_and_task_follow_the_backend(store):
    triton, cuda = (build_prompt(store, kbdata.SPEC, "h100", b, token_budget=6000) for b in ("triton", "cuda"))
    assert "triton.language" in _text(triton, "rules") and "load_inline" not in _text(triton, "rules")
    assert "load_inline" in _text(cuda, "rules") and "triton.language" not in _text(cuda, "rules")
    assert "Write a triton implementation for NVIDIA H100" in _text(triton, "task")
    assert "Write a cuda implementation for NVIDIA H100" in _text(cuda, "task")
    assert "Ops found in the reference: softmax." in _text(triton, "task")


def test_the_facts_are_as_full_as_the_budget_allows(store):
    roomy = _text(build_prompt(store, kbdata.SPEC, "h100", "triton", token_budget=20_000), "hardware_facts")
    tight = _text(build_prompt(store, kbdata.SPEC, "h100", "triton", token_budget=1200), "hardware_facts")
    # the full rendering: each fact's note, the facts under `extra`, a measurement's method
    assert "228 KiB (configurable shared memory per SM)" in roomy and "extra.nvlink bandwidth: 900 GB/s" in roomy
    assert "measured 2026-11-01: device-to-device copy, 1 GiB" in roomy
    # the shortest: the main fields and peak rates only
    assert "shared memory per unit: 228 KiB [1]" in tight and "extra." not in tight and "(dense)" not in tight


def test_the_facts_come_in_three_lengths_as_the_budget_grows(store):
    seen = []
    for budget in range(1171, 1400, 6):
        facts = _text(build_prompt(store, kbdata.SPEC, "h100", "triton", token_budget=budget), "hardware_facts")
        tier = ("extra.nvlink" in facts, "(dense)" in facts)  # (the facts under `extra`, each fact's note)
        if not seen or seen[-1] != tier:
            seen.append(tier)
    assert seen == [(False, False), (True, False), (True, True)]


def test_the_budget_is_filled_to_the_token_and_never_passed(store):
    # a kernel of many small functions: its excerpt grows a function at a time, so over consecutive budgets
    # the prompt's slack runs from what one function costs down to the one token the kernel frame keeps back
    from kb_server.prompt import _fit, load_template, resolve_accelerator
    from kb_server.schemas import Hit
    from kb_server.tokens import count_tokens

    parts = "".join(f"\n\n@triton.jit\ndef _part{i}(x):\n    return x * {i}.5 + {i}\n" for i in range(60))
    kernel = kbdata.kernels()[0].model_copy(update={"source": kbdata.SOFTMAX_TRITON + parts})
    hits = [Hit(chunk=c, score=1.0 / (i + 1)) for i, c in enumerate(kbdata.chunks()) if "h100" in c.accelerator]
    tpl, acc = load_template(), resolve_accelerator(store.accelerators(), "h100")
    slack = []
    for budget in range(2000, 2040):
        sections = _fit(tpl, budget, acc, "triton", kbdata.SPEC, "softmax", "memory", hits, [kernel], True)
        slack.append(budget - count_tokens(tpl["separator"].join(s.text for s in sections)))
    assert min(slack) in (0, 1) and max(slack) > 5, slack


def _kernel(kid: str, path: str, parts: int = 0):
    body = "".join(f"\n\n@triton.jit\ndef _part{i}(x):\n    return x * {i}.5 + {i}\n" for i in range(parts))
    return kbdata.kernels()[0].model_copy(update={"id": kid, "name": f"kernel {kid}", "path": path,
                                                  "source": kbdata.SOFTMAX_TRITON + body})


def test_a_cut_kernel_says_what_it_shows_and_where_it_is_from():
    from kb_server.prompt import _kernels_section, load_template

    tpl, long = load_template(), _kernel("long", "corpus/kernels/long/kernel.py", parts=60)
    cut = _kernels_section(tpl, [long], "triton", 700)
    assert cut.tokens <= 700 and cut.sources == ["corpus/kernels/long/kernel.py"]
    assert "Part of corpus/kernels/long/kernel.py: TUNABLES and " in cut.text
    assert " of its 61 kernel functions" in cut.text and "The whole file" not in cut.text
    whole = _kernels_section(tpl, [long], "triton", 10**6)
    assert "The whole file (corpus/kernels/long/kernel.py)." in whole.text and "Part of" not in whole.text


def test_a_kernel_of_another_backend_says_so_and_one_of_the_same_does_not():
    from kb_server.prompt import _kernels_section, load_template

    tpl, kernel = load_template(), _kernel("a", "a/kernel.py")
    marker = "kernel in the library is near this spec"
    assert marker in tpl["blocks"]["other_backend"] and marker not in _kernels_section(tpl, [kernel], "triton", 10**6).text
    assert marker in _kernels_section(tpl, [kernel], "cuda", 10**6).text


def test_a_second_kernel_comes_only_with_room_for_it():
    from kb_server.prompt import _kernels_section, load_template

    tpl = load_template()
    first, second = _kernel("a", "a/kernel.py"), _kernel("b", "b/kernel.py", parts=40)
    alone = _kernels_section(tpl, [first], "triton", 10**6).tokens
    floor = tpl["budget"]["second_kernel_min_tokens"]
    short = _kernels_section(tpl, [first, second], "triton", alone + floor)
    assert short.sources == ["a/kernel.py"]  # the room left, less the second block's frame, is under its minimum
    roomy = _kernels_section(tpl, [first, second], "triton", alone + floor + 150)
    assert roomy.sources == ["a/kernel.py", "b/kernel.py"] and roomy.tokens <= alone + floor + 150
    assert "Part of b/kernel.py" in roomy.text
    assert "```\n\n### kernel b: " in roomy.text  # one blank line between the blocks


def test_a_larger_budget_never_carries_less(store):
    small, large = (build_prompt(store, kbdata.SPEC, "h100", "triton", token_budget=b) for b in (1200, 20_000))
    assert _passages(small) == _passages(large)[: len(_passages(small))]  # the best-ranked first
    # the two on a softmax (or a row norm), whole, and one of the two on matmul tiles only to make up the minimum
    assert len(_passages(large)) == 3 and "[...]" not in large.sections[1].text
    assert _passages(large)[:2] == [f"corpus/docs/test/{d}.md (https://example.org/{d})"
                                    for d in ("h100-softmax", "any-layernorm")]
    assert len(_kernel_text(large)) >= len(_kernel_text(small))


def test_a_tight_grant_cuts_the_first_passages_evenly_and_marks_the_cut():
    from kb_server.prompt import _fit_passages, load_template
    from kb_server.schemas import Hit

    long = [c.model_copy(update={"text": " ".join([c.text] * 8)}) for c in kbdata.chunks()]
    hits = [Hit(chunk=c, score=1.0 / (i + 1)) for i, c in enumerate(long)]
    section = _fit_passages(load_template(), hits, "softmax", "memory", grant=600)
    assert section.tokens <= 600 and len(section.sources) == 3  # the minimum, each cut
    assert section.text.count("[...]") == 3
    roomy = _fit_passages(load_template(), hits, "softmax", "memory", grant=5000)
    assert len(roomy.sources) == 5 and "[...]" not in roomy.text


def test_at_the_smallest_budget_long_passages_come_cut(store):
    import re

    from kb_server.prompt import _fit, load_template, resolve_accelerator
    from kb_server.schemas import Hit

    tpl, acc = load_template(), resolve_accelerator(store.accelerators(), "h100")
    long = [c.model_copy(update={"text": " ".join([c.text] * 8)}) for c in kbdata.chunks()]
    hits = [Hit(chunk=c, score=1.0 / (i + 1)) for i, c in enumerate(long)]
    args = (acc, "triton", kbdata.SPEC, "softmax", "memory", hits, kbdata.kernels()[:1], True)
    with pytest.raises(PromptError) as info:
        _fit(tpl, 300, *args)
    need = int(re.search(r"below the (\d+) tokens", str(info.value)).group(1))
    passages = next(s for s in _fit(tpl, need, *args) if s.name == "passages")
    assert len(passages.sources) == 3 and passages.text.count("[...]") == 3  # the minimum is three cut passages


def test_budget_too_small_names_the_field_and_the_need(store):
    with pytest.raises(PromptError, match=r"token_budget 300 is below the \d+ tokens") as info:
        build_prompt(store, kbdata.SPEC, "h100", "triton", token_budget=300)
    assert info.value.field == "token_budget"


def test_retrieval_off_keeps_facts_and_task_without_passages_or_kernels(store):
    bundle = build_prompt(store, kbdata.SPEC, "h100", "triton", token_budget=6000, retrieval=False)
    assert not bundle.retrieval and bundle.queries == []
    assert [s.name for s in bundle.sections] == SECTIONS  # the same sections, in the same order
    assert _passages(bundle) == [] and "retrieval is off" in bundle.sections[1].text
    assert "retrieval is off" in bundle.sections[2].text and bundle.sections[2].sources == []
    assert bundle.tokens == estimate_tokens(bundle.text) <= 6000
    assert "_softmax_kernel" not in bundle.text and "228 KiB" in bundle.text and "ModelNew" in bundle.text


@pytest.mark.parametrize("retrieval", [True, False])
def test_the_stated_need_is_the_smallest_budget_that_builds(store, retrieval):
    import re

    with pytest.raises(PromptError) as info:
        build_prompt(store, kbdata.SPEC, "h100", "triton", token_budget=300, retrieval=retrieval)
    need = int(re.search(r"below the (\d+) tokens", str(info.value)).group(1))
    tight = build_prompt(store, kbdata.SPEC, "h100", "triton", token_budget=need, retrieval=retrieval)
    assert tight.tokens <= need and "extra." not in _text(tight, "hardware_facts")  # the shortest facts
    with pytest.raises(PromptError, match=f"token_budget {need - 1} is below the {need} tokens"):
        build_prompt(store, kbdata.SPEC, "h100", "triton", token_budget=need - 1, retrieval=retrieval)
    roomy = build_prompt(store, kbdata.SPEC, "h100", "triton", token_budget=20_000, retrieval=retrieval)
    assert "228 KiB (configurable shared memory per SM)" in _text(roomy, "hardware_facts")


def test_queries_follow_the_family_the_bottleneck_and_the_callers_extra(store):
    bundle = build_prompt(store, kbdata.SPEC, "h100", "triton", extra_queries=["launch overhead of short kernels"])
    assert bundle.family == "softmax" and bundle.bottleneck == "memory"
    assert bundle.queries[0] == "launch overhead of short kernels"  # what the caller measured comes first
    assert any("softmax" in q for q in bundle.queries) and any("memory-bound" in q for q in bundle.queries)


def test_unknown_accelerator_lists_the_known_ids(store):
    with pytest.raises(PromptError, match="known: h100, mi300x") as info:
        build_prompt(store, kbdata.SPEC, "tpu-v9", "triton")
    assert info.value.field == "accelerator"


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"accelerator": "tpu"}, "accelerator"),
    ({"backend": "verilog"}, "backend"),
    ({"spec_source": "def (:"}, "spec_source"),
])
def test_bad_arguments_name_the_field(store, kwargs, field):
    args = {"spec_source": kbdata.SPEC, "accelerator": "h100", "backend": "triton", **kwargs}
    with pytest.raises(PromptError) as info:
        build_prompt(store, **args)
    assert info.value.field == field


def test_ranked_hits_weigh_the_specs_topic_and_the_targets_own_documents_over_generic_matches():
    """Each query's first `depth` hits score by rank and the query's weight, summed over the queries that found
    them; a passage naming the spec's family gains, the target's own documents gain more when on topic, and one
    about the other bottleneck's techniques (and not the spec) drops out; one document gives a few at most."""
    from kb_server.passages import topic_of
    from kb_server.prompt import _ranked_hits, load_template
    from kb_server.schemas import Chunk, Hit

    def chunk(name: str, accelerator: str, heading: str, text: str, doc: str | None = None) -> Chunk:
        return Chunk(id=name, document_id=doc or name, text=text, heading_path=[heading], source=f"{name}.md",
                     title=heading, accelerator=[accelerator], vendor="any", kind="guide")

    gemm = chunk("gemm", "any", "GEMM tiling and split-K", "Tile the output and split K across programs.")
    generic = chunk("generic", "any", "Coalesced loads", "Vectorised loads reach peak bandwidth.")
    ours = chunk("ours", "nova-x1", "Softmax over rows on the Nova X1", "Keep the row in the scratchpad.")
    other_of_ours = chunk("overview", "nova-x1", "Nova X1 cores", "Each core has a DMA engine.")
    matrix = chunk("matrix", "nova-x1", "Matrix units", "32x32 bf16 tiles for matmul.")
    online = [chunk(f"online{i}", "any", "Online softmax", f"part {i}", doc="online") for i in range(4)]
    results = {"family": [gemm, generic, *online, ours], "bottleneck": [generic, gemm, matrix],
               "hardware": [matrix, other_of_ours]}
    calls = []

    class FakeStore:
        def search(self, query, k, filters):
            calls.append((query, k, filters.accelerator))
            return [Hit(chunk=ch, score=1.0) for ch in results[query]]

    cfg = load_template()["retrieval"]
    topic = topic_of("softmax", ["softmax"], "memory", cfg)
    queries = [("family", "family"), ("bottleneck", "bottleneck"), ("hardware", "hardware")]
    hits = [h.chunk.id for h in _ranked_hits(FakeStore(), queries, "nova-x1", topic, cfg)]
    assert calls == [(q, cfg["depth"], "nova-x1") for q in ("family", "bottleneck", "hardware")]
    assert hits[0] == "ours"  # ranked last by its query: on topic and the target's own
    assert "gemm" not in hits and "matrix" not in hits  # the other bottleneck's techniques
    assert hits.index("generic") < hits.index("overview")  # found by two queries
    assert sum(h.startswith("online") for h in hits) == cfg["max_per_document"] < 4
    # too few for the minimum: the rest come after, the off-topic ones last
    filled = [h.chunk.id for h in _ranked_hits(FakeStore(), queries, "nova-x1", topic, cfg, minimum=len(hits) + 3)]
    assert filled[: len(hits)] == hits and filled[-2:] in (["gemm", "matrix"], ["matrix", "gemm"])


def test_passage_block_names_rank_heading_and_file_and_cuts_to_its_cap():
    """A passage block: its rank, its heading path (else its title), its file, its text stripped; with a cap, the
    text is cut to the cap (the marker counted in) and marked."""
    from kb_server.prompt import _passage_block, load_template
    from kb_server.schemas import Hit
    from kb_server.tokens import count_tokens

    tpl = load_template()
    chunk = kbdata.chunks()[0]
    text = " ".join([chunk.text.strip()] * 8)
    hit = Hit(chunk=chunk.model_copy(update={"text": f"  {text}\n\n"}), score=1.0)
    head = f"### [2] {' > '.join(chunk.heading_path)}\nsource: {chunk.source}\n"
    assert _passage_block(tpl, 2, hit, None) == head + text
    assert _passage_block(tpl, 2, hit, count_tokens(text)) == head + text  # exactly at the cap: whole
    for cap in (1, 2, 40, count_tokens(text) - 1):
        cut = _passage_block(tpl, 2, hit, cap).removeprefix(head)
        assert cut.endswith(" [...]") and text.startswith(cut.removesuffix(" [...]")), cap
        assert count_tokens(cut) <= max(cap, count_tokens(" [...]") + 1), (cap, cut)
    assert count_tokens(_passage_block(tpl, 2, hit, 40).removeprefix(head)) >= 40 - 2  # the cap is used
    paragraphs = hit.chunk.model_copy(update={"text": "alpha beta gamma delta.\n\nepsilon zeta eta theta.\n\nmu."})
    for cap in range(4, count_tokens(paragraphs.text)):  # a cut at a paragraph's end leaves no blank line before the marker
        cut = _passage_block(tpl, 2, Hit(chunk=paragraphs, score=1.0), cap).removeprefix(head)
        assert cut.endswith(" [...]") and not cut.removesuffix(" [...]")[-1:].isspace(), (cap, cut)
    untitled = hit.chunk.model_copy(update={"heading_path": []})
    assert _passage_block(tpl, 1, Hit(chunk=untitled, score=1.0), None).startswith(f"### [1] {chunk.title}\n")


def _hits(repeat: int = 1):
    from kb_server.schemas import Hit

    chunks = [c.model_copy(update={"text": " ".join([c.text] * repeat)}) for c in kbdata.chunks()]
    return [Hit(chunk=c, score=1.0 / (i + 1)) for i, c in enumerate(chunks)]


def test_fit_passages_cuts_the_minimum_to_the_largest_cap_that_fits():
    """Where the first passages_min passages do not fit whole, each is cut to one cap: the largest of
    passage_min_tokens + 20k that fits the grant, and no more than just past 400."""
    from kb_server.prompt import _fit_passages, _passages_section, load_template

    tpl = load_template()
    hits = _hits(24)  # 600 to 1000 tokens each
    first = hits[: tpl["budget"]["passages_min"]]
    assert min(_passages_section(tpl, [h], "softmax", "memory", None).tokens for h in hits) * 3 > 1600
    seen_caps = set()
    for grant in (300, 500, 800, 1000, 1200, 1400, 1600):
        cap = tpl["budget"]["passage_min_tokens"]
        while cap <= 400 and _passages_section(tpl, first, "softmax", "memory", cap + 20).tokens <= grant:
            cap += 20
        seen_caps.add(cap)
        section = _fit_passages(tpl, hits, "softmax", "memory", grant)
        assert section.text == _passages_section(tpl, first, "softmax", "memory", cap).text, grant
        assert section.sources == [h.chunk.source + f" ({h.chunk.source_urls[0]})" for h in first]
    assert {90, 410} < seen_caps  # the floor, the ceiling and caps between were all met


def test_fit_passages_takes_the_best_ranked_whole_and_stops_at_the_first_that_does_not_fit():
    from kb_server.prompt import _fit_passages, _passages_section, load_template

    tpl = load_template()
    hits = _hits()
    hits[3] = _hits(16)[3]  # the fourth is long, the fifth short again
    exact = _passages_section(tpl, hits, "softmax", "memory", None).tokens
    assert len(_fit_passages(tpl, hits, "softmax", "memory", exact).sources) == 5  # a grant met exactly
    four_five = _passages_section(tpl, hits[:3] + hits[4:], "softmax", "memory", None).tokens
    section = _fit_passages(tpl, hits, "softmax", "memory", four_five)
    assert section.text == _passages_section(tpl, hits[:3], "softmax", "memory", None).text  # not the fifth
    two = _fit_passages(tpl, _hits(16)[:2], "softmax", "memory", 300)  # fewer hits than passages_min: all, cut
    assert len(two.sources) == 2 and two.text.count("[...]") == 2 and two.tokens <= 300


def test_fit_passages_measures_the_section_as_it_will_be_sent():
    """The trial fits count the section's own ops and bottleneck lines: with long ones, a grant that holds three
    passages whole gets exactly those three, whole, within the grant."""
    from kb_server.prompt import _fit_passages, _passages_section, load_template

    tpl = load_template()
    hits = _hits(24)  # 600 to 1000 tokens each: more than any cut cap
    ops, bottleneck = "softmax, " * 150, "memory-bound rows, " * 100
    n_min = tpl["budget"]["passages_min"]
    grant = _passages_section(tpl, hits[:n_min], ops, bottleneck, None).tokens
    section = _fit_passages(tpl, hits, ops, bottleneck, grant)
    assert section.tokens <= grant
    assert section.text == _passages_section(tpl, hits[:n_min], ops, bottleneck, None).text  # whole, not cut
    assert "[...]" not in section.text
    short = _hits()  # passages shorter than the ops and bottleneck lines: leaving those out would admit more
    assert max(_passages_section(tpl, [h], "", "", None).tokens for h in short) < 300
    for ops_text, neck in ((ops, "memory"), ("softmax", bottleneck)):
        grant = _passages_section(tpl, short[:n_min], ops_text, neck, None).tokens
        section = _fit_passages(tpl, short, ops_text, neck, grant)
        assert len(section.sources) == n_min and section.tokens <= grant


def test_fit_passages_cut_path_meets_its_grant_exactly_and_counts_every_line():
    """Cut passages: a grant met exactly by the next cap takes that cap; with long ops and bottleneck lines the
    section never exceeds its grant."""
    from kb_server.prompt import _fit_passages, _passages_section, load_template

    tpl = load_template()
    hits = _hits(24)
    first = hits[: tpl["budget"]["passages_min"]]
    floor = tpl["budget"]["passage_min_tokens"]
    for cap in (floor + 40, floor + 120):  # a grant that the cap fits to the token
        grant = _passages_section(tpl, first, "softmax", "memory", cap).tokens
        section = _fit_passages(tpl, hits, "softmax", "memory", grant)
        assert section.text == _passages_section(tpl, first, "softmax", "memory", cap).text, cap
    ops, bottleneck = "softmax, " * 150, "memory-bound rows, " * 100
    least = _passages_section(tpl, first, ops, bottleneck, floor).tokens
    for grant in range(least, least + 900, 60):
        assert _fit_passages(tpl, hits, ops, bottleneck, grant).tokens <= grant, grant


def test_kernels_section_fits_its_grant_and_uses_it():
    """The kernel section never passes its grant, and a grant of half the kernel minimum still shows the nearest
    kernel."""
    from kb_server.prompt import _kernels_section, load_template

    tpl = load_template()
    kernels = kbdata.kernels()
    whole = _kernels_section(tpl, kernels, "triton", 10**9)
    assert "row softmax" in whole.text and "The whole file" in whole.text
    for grant in range(whole.tokens - 1, 100, -37):
        section = _kernels_section(tpl, kernels, "triton", grant)
        assert section.tokens <= grant, grant
        if grant >= tpl["budget"]["kernel_min_tokens"] // 2:
            assert "### row softmax:" in section.text and section.sources, grant
    assert _kernels_section(tpl, kernels, "triton", 5).text.endswith("(no library kernel matched)")
