"""Test helper (not a test module): a few chunks and kernels of our own words, written to a real Store.

Usage: seed(store) -> the chunks and kernels it wrote
"""

from __future__ import annotations

import contextlib

from kb_server.schemas import Chunk, KernelRecord
from kb_server.store import chunk_id

_DOCS = [
    # (document id, accelerator ids, heading path, text)
    ("h100-softmax", ["h100"], ["H100", "Softmax"],
     ("A row softmax on H100 reads each row once into registers, keeps the running max and sum, "
     "and writes the normalised row; one program per row when the row fits in shared memory.")),
    ("h100-smem", ["h100"], ["H100", "Memory hierarchy", "Shared memory"],
     ("Each SM has up to 228 KiB of shared memory carved from the same array as L1; tiles staged in "
     "shared memory let a matmul reuse operands across warps.")),
    ("h100-matmul", ["h100"], ["H100", "Matmul tiling"],
     ("A matmul kernel tiles the output into blocks, loops over K in steps of BLOCK_K, and uses "
     "tensor cores through tl.dot with bf16 inputs and fp32 accumulation.")),
    ("mi300x-lds", ["mi300x"], ["MI300X", "LDS"],
     "On MI300X the LDS holds 64 KiB per compute unit; softmax rows that fit stay in LDS."),
    ("any-layernorm", ["any"], ["Playbook", "Layer norm"],
     ("Layer norm fuses the mean, the variance and the affine transform in one pass over the row "
     "using Welford's update, so the row is read from memory once.")),
]

SOFTMAX_TRITON = '''import torch
import triton
import triton.language as tl

TUNABLES = {"BLOCK_N": 1024, "num_warps": 4}


@triton.jit
def _softmax_kernel(x_ptr, y_ptr, n_cols, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * n_cols + offs, mask=offs < n_cols, other=-float("inf"))
    e = tl.exp(x - tl.max(x, 0))
    tl.store(y_ptr + row * n_cols + offs, e / tl.sum(e, 0), mask=offs < n_cols)
'''


@contextlib.contextmanager
def one_torch_thread():
    """torch with one intra-op thread (as the server runs): on a busy 2-core machine two OpenMP
    threads spin-wait and a query embedding takes seconds. Restores the previous count."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def chunks() -> list[Chunk]:
    out = []
    for doc_id, accs, heading, text in _DOCS:
        meta = {"accelerator": accs}
        out.append(Chunk(id=chunk_id(doc_id, heading, text, meta), document_id=doc_id, text=text,
                         heading_path=heading, source=f"corpus/docs/test/{doc_id}.md", title=heading[-1],
                         accelerator=accs, vendor="nvidia" if "h100" in accs else "any", kind="guide",
                         source_urls=["https://example.org/" + doc_id]))
    return out


def kernels() -> list[KernelRecord]:
    return [
        KernelRecord(id="softmax-triton", name="row softmax", op_family="softmax", op_signature="softmax(dim=-1)",
                     backend="triton", source=SOFTMAX_TRITON, description="one program per row",
                     tunables={"BLOCK_N": [512, 1024, 2048]}, accelerators=["h100"]),
        KernelRecord(id="softmax-cuda", name="row softmax cuda", op_family="softmax",
                     op_signature="softmax(dim=-1)", backend="cuda", source="// a cuda softmax\n",
                     accelerators=["h100"]),
    ]


def seed(store) -> tuple[list[Chunk], list[KernelRecord]]:
    cs = chunks()
    for c in cs:
        store.upsert_document(c.document_id, [c], file_hash="hash-" + c.document_id)
    ks = kernels()
    for k in ks:
        store.add_kernel(k)
    return cs, ks


SPEC = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.softmax(x, dim=-1)


def get_inputs():
    return [torch.randn(128, 4096)]


def get_init_inputs():
    return []
'''
