"""Triton source for each kind of kernel a plan holds (see each module): pointwise, reduction groups and
split reductions, scans and top-k, scatters, matmul and convolution.

Usage: from agent_client.lowering import kernels as K; k = K.pointwise_kernel("k0", outputs, buffers, target)

Each generator sets up the kernel's index variables and mask, asks the KernelWriter for the values it stores,
and returns a Kernel: the @triton.jit source, the buffers it takes in order, the launch grid and the tunable
launch parameters with their defaults and allowed values. Sizes are literals: a plan is generated per input
shape (the forward dispatches on shapes).
"""

from agent_client.lowering.kernels.common import Kernel
from agent_client.lowering.kernels.conv import conv_kernel, holds_channels
from agent_client.lowering.kernels.dot import gemm_kernels
from agent_client.lowering.kernels.pointwise import pointwise_kernel
from agent_client.lowering.kernels.reduction import (
           RowLimits,
           reduce_info,
           reduction_kernel,
           reduction_strategy,
           row_limits,
)
from agent_client.lowering.kernels.rows import scan_kernel, topk_kernel
from agent_client.lowering.kernels.scatter import scatter_kernels
from agent_client.lowering.kernels.split import split_kernels

__all__ = ["Kernel", "RowLimits", "conv_kernel", "gemm_kernels", "holds_channels", "pointwise_kernel", "reduce_info",
           "reduction_kernel", "reduction_strategy", "row_limits", "scan_kernel", "scatter_kernels", "split_kernels",
           "topk_kernel"]
