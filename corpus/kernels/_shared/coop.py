"""Persistent programs that wait on each other: launch sizes that keep them co-resident, and the epoch
workspace of self-tagged 64-bit words that they publish their partial statistics in (each launch tags its
words with its parity, drawn from the workspace's ticket counter, so no fill kernel runs before a launch).

Shared by several library kernels and inlined into each one's candidate source (ingest/bundle.py).
"""

import torch
import triton

from corpus.kernels._shared.device import _num_sms

_MAX_SPIN_GPU = 50_000  # polls (~1 us each) before a program stops waiting and computes its unit's stats
_MAX_WORKSPACES = 32  # cached epoch workspaces kept (cleared past this)
_WORKSPACES: dict = {}  # (layout, programs, words, device, stream) -> int64 [ticket counter, words...]


def _resident(num_warps: int, programs_per_sm: int) -> tuple:
    """(programs per SM, maxnreg) that really fit on an SM at once: at most 64 warps and 32 programs, and
    registers capped so that many fit in 64K."""
    per_sm = max(1, min(programs_per_sm, 64 // num_warps, 32))
    regs = 65536 // (per_sm * num_warps * 32)
    return per_sm, (255 if regs > 255 else regs // 8 * 8)


def _coop_launch(n_tasks_per_unit: int, n_units: int, num_warps: int, programs_per_sm: int, device) -> tuple:
    """(grid, maxnreg) of a persistent launch whose rounds are whole units (rows, groups) and co-resident.

    maxnreg caps registers so that _resident's programs per SM really fit, so all programs of a round run at
    once (a peer that never starts would make the others poll out). Rounds are evened out so the last one is
    not a sliver.
    """
    per_sm, maxnreg = _resident(num_warps, programs_per_sm)
    per_round = max(1, _num_sms(device) * per_sm // n_tasks_per_unit)
    rounds = triton.cdiv(n_units, per_round)
    grid = (triton.cdiv(n_units, rounds) * n_tasks_per_unit,)
    return grid, maxnreg


def _epoch_words(device, n_programs: int, n_words: int, layout: tuple) -> tuple:
    """(ticket, words) of a launch: a workspace cached per (layout, programs, words, device, stream), made
    once as a 0 ticket counter and -1 words and never refilled. The key holds everything that decides which
    words a launch writes, so a launch never finds a word that the launch two before wrote and the one before
    did not (it would read as in); one workspace per stream keeps concurrent launches apart."""
    stream = torch.cuda.current_stream(device).cuda_stream if device.type == "cuda" else 0
    key = (layout, n_programs, n_words, str(device), stream)
    if key not in _WORKSPACES:
        if len(_WORKSPACES) >= _MAX_WORKSPACES:
            _WORKSPACES.clear()
        workspace = torch.full((1 + n_words,), -1, dtype=torch.int64, device=device)
        workspace[0] = 0
        _WORKSPACES[key] = workspace
    workspace = _WORKSPACES[key]
    return workspace[:1], workspace[1:]
