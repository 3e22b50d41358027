"""bf16 values as 32-bit words of two: unpacked to fp32 by one shift or mask, packed by one cvt, and their
sums. Shared by the layernorm and rmsnorm kernels and inlined into each one's candidate source
(ingest/bundle.py).
"""

import triton
import triton.language as tl


@triton.jit
def _bf16_pair(words):
    """fp32 (low, high) values of 32-bit words holding two bf16 values (little-endian: low = even column)."""
    lo = (words << 16).to(tl.float32, bitcast=True)
    hi = (words & -65536).to(tl.float32, bitcast=True)
    return lo, hi


@triton.jit
def _bf16_word(lo, hi, ASM: tl.constexpr):
    """32-bit words of two bf16 values rounded from fp32 (lo, hi): one packed cvt a word on the GPU (Triton's
    own conversion of separate tensors takes one a value plus a byte permute)."""
    if ASM:  # cvt's first source goes to the upper half
        return tl.inline_asm_elementwise("cvt.rn.bf16x2.f32 $0, $2, $1;", "=r,f,f", [lo, hi], dtype=tl.int32,
                                         is_pure=True, pack=1)
    lo_bits = lo.to(tl.bfloat16).to(tl.int16, bitcast=True).to(tl.int32) & 0xFFFF
    hi_bits = hi.to(tl.bfloat16).to(tl.int16, bitcast=True).to(tl.int32)
    return (hi_bits << 16) | lo_bits


@triton.jit
def _add_pairs(a_lo, a_hi, b_lo, b_hi):
    return a_lo + b_lo, a_hi + b_hi


@triton.jit
def _row_sum(lo, hi):
    """Per-row sum of the low and high values: one reduction tree for both, each in-thread step one add."""
    s_lo, s_hi = tl.reduce((lo, hi), 1, _add_pairs)
    return s_lo + s_hi

