"""The cooperative form of split rows (kernels/coop.py) through the interpreter, each path on its own.

The interpreter runs programs one after another with no polling, so a launch alone leaves most programs
reducing their rows themselves (the fallback). Here the kernel is launched as the candidate launches it and
then, for the exchange, a second time on the same workspace with the fallback compiled out and the outputs
poisoned: every row's counter is then complete, so every program combines its peers' words, and any error
in the words' publication, decode or combine shows in the outputs. For the fallback, every row's counter
is made unreachable first, so every program reduces its row itself, merged statistics (mean and centred
squares, max and sum of exponentials) included.

Sizes: the interpreter's 4 "SMs" hold 4 x coop_per_sm programs; CHUNK sets the chunks a row (SPLIT), hence
rows a round, task rounds a program, padding lanes past SPLIT in the words' tile, and a partial last chunk
and round."""

from __future__ import annotations

import importlib.util
import inspect
import os
import re
from pathlib import Path

import pytest
import torch

from agent_client.lowering.lower import lower_spec
from agent_client.offline.tunables import set_tunables
from tests.agent_client.lowering.launches import Forbidden, load_candidate

os.environ.setdefault("TRITON_INTERPRET", "1")

ROW_SPECS = Path(__file__).resolve().parent / "row_specs"
# rows past 64 values are split when read twice, and rows of 256 or more split when there are fewer than 8
SPLIT = {"persistent_max": 64, "split_multi_pass": True, "split_max_rows": 8, "split_min_row": 256}
UNREACHABLE = -(1 << 30)  # a row counter that never holds every chunk




class _Paths:
    """Stands in for the cooperative kernel. mode "exchange": launched as asked, then again on the same
    workspace with FALLBACK off and its outputs poisoned; "fallback": launched once, every row's counter
    unreachable. Checks the counters after each launch: each chunk counted in once per round."""

    def __init__(self, kernel, mode: str):
        self.kernel, self.mode, self.launches = kernel, mode, 0
        source = inspect.getsource(getattr(kernel, "fn", None) or kernel)
        self.stored = set(re.findall(r"tl\.store\((\w+) \+", source)) - {n for n in kernel.arg_names
                                                                           if n.endswith("_ws")}

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            named = dict(zip(self.kernel.arg_names, args))
            cnt = next(v for k, v in named.items() if k.endswith("_cnt"))
            split = kwargs["SPLIT"]
            assert kwargs["FALLBACK"] is True  # the candidate's own launch
            if self.mode == "fallback":
                cnt.fill_(UNREACHABLE)
                self.kernel[grid](*args, **kwargs)
                assert bool((cnt == UNREACHABLE + split).all()), cnt
            else:
                self.kernel[grid](*args, **kwargs)
                assert bool((cnt == split).all()), cnt
                for name in self.stored:
                    out = named[name]
                    out.fill_(float("nan") if out.is_floating_point() else torch.iinfo(out.dtype).min)
                self.kernel[grid](*args, **{**kwargs, "FALLBACK": False})
                assert bool((cnt == 2 * split).all()), cnt
            self.launches += 1
        return launch


def _run(tmp_path, spec: str, tunables: dict, mode: str) -> None:
    path = ROW_SPECS / f"{spec}.py"
    lowered = lower_spec(path, target="cpu", options=SPLIT)
    chosen = {name: v for suffix, v in {**tunables, "_form": "coop"}.items()
              for name in lowered.tunables if name.endswith(suffix)}
    assert {s for s in tunables if not any(n.endswith(s) for n in lowered.tunables)} == set(), lowered.tunables
    module = load_candidate(set_tunables(lowered.source, chosen), tmp_path, f"coop_{spec}_{mode}")
    kernels = {n: v for n, v in vars(module).items() if hasattr(v, "run") and n.startswith("_p")}
    coop = [n for n in kernels if n.endswith("_coop")]
    assert len(coop) == 1, list(kernels)
    for name in kernels:
        if name != coop[0] and ("_part" in name or "_comb" in name or name.endswith("_out")):
            setattr(module, name, Forbidden(name))
    paths = _Paths(kernels[coop[0]], mode)
    setattr(module, coop[0], paths)
    reference = importlib.util.module_from_spec(importlib.util.spec_from_file_location(f"ref_{spec}", path))
    reference.__spec__.loader.exec_module(reference)
    torch.manual_seed(0)
    init = reference.get_init_inputs()
    ref = reference.Model(*init)
    for p in ref.parameters():  # parameters away from 1 and 0, so that a norm's affine step shows
        p.data.uniform_(0.5, 1.5)
    new = module.ModelNew(*init)
    new.load_state_dict(ref.state_dict())
    inputs = reference.get_inputs()
    expected = ref(*inputs)
    got = new(*inputs)
    assert paths.launches == 1
    for e, g in zip(expected if isinstance(expected, tuple) else (expected,), got if isinstance(got, tuple) else (got,)):
        if e.is_floating_point():
            torch.testing.assert_close(g, e, atol=1e-5, rtol=1e-4)
        else:
            assert torch.equal(g, e)


# (spec, tunables): rows x row in the spec; SPLIT chunks a row (SPLIT_P2 lanes), rows a round of
# 4 x coop_per_sm programs, task rounds
EXCHANGE = [
    ("softmax_wide", {"_CHUNK": 128}),  # 5 x 1000: 8 chunks (the last of 104), 1 row a round, 5 rounds
    ("softmax_wide", {"_CHUNK": 256, "_coop_prefetch": False}),  # 4 chunks, 2 rows a round, the last round 1 row
    ("log_softmax_wide", {"_CHUNK": 256, "_coop_per_sm": 1}),  # 3 x 777: 4 chunks (the last of 9), 3 rounds
    ("softmax_and_max", {"_CHUNK": 128}),  # 4 x 513: 5 chunks, 3 padding lanes; a row's max and lse too
    ("layernorm_chw", {"_CHUNK": 256, "_coop_per_sm": 4}),  # 3 x 1020: 4 chunks, every row in one round
    ("group_norm", {"_CHUNK": 128}),  # 10 x 300: 3 chunks, 1 padding lane, 2 rows a round, 5 rounds
    ("group_norm", {"_CHUNK": 128, "_coop_prefetch": False}),
    ("instance_norm", {"_CHUNK": 128}),  # 6 x 700: 6 chunks, 2 padding lanes, 6 rounds
    ("batch_norm", {"_CHUNK": 256, "_coop_per_sm": 4}),  # 3 x 684 over (N, H, W): 3 chunks, one round
    ("sum_max_rows", {"_CHUNK": 256}),  # 5 x 700: a sum and a max; 3 chunks, 2 rows a round, the last 1
    ("two_rounds", {"_CHUNK": 128}),  # 5 x 700: the max, then the sum of |x - max| in a second round
    ("two_rounds", {"_CHUNK": 256, "_coop_prefetch": False}),
    ("int_max_rows", {"_CHUNK": 256}),  # int32 partials
    ("frobenius", {"_CHUNK": 256}),  # one row of 858: 4 chunks
]


@pytest.mark.parametrize("spec,tunables", EXCHANGE)
def test_the_exchange_alone(tmp_path, spec, tunables):
    _run(tmp_path, spec, tunables, "exchange")


@pytest.mark.parametrize("spec,tunables", [
    ("softmax_wide", {"_CHUNK": 256}),  # (max, sum of exp) merged: the row's max, then sum(exp(x - max))
    ("log_softmax_wide", {"_CHUNK": 256, "_coop_prefetch": False}),
    ("softmax_and_max", {"_CHUNK": 128}),
    ("layernorm_chw", {"_CHUNK": 256}),  # (mean, centred squares) merged: the mean, then sum((x - mean)^2)
    ("group_norm", {"_CHUNK": 128}),
    ("batch_norm", {"_CHUNK": 256}),
    ("two_rounds", {"_CHUNK": 128}),
])
def test_the_fallback_alone(tmp_path, spec, tunables):
    _run(tmp_path, spec, tunables, "fallback")
