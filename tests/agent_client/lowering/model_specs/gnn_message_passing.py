import torch
import torch.nn as nn


class Model(nn.Module):
    """Message passing as PyG writes it: messages gathered at edge sources, reduced at destinations by
    sum, mean and max (scatter_reduce), then an update."""

    def __init__(self, d):
        super().__init__()
        self.msg = nn.Linear(2 * d, d)
        self.upd = nn.Linear(4 * d, d)

    def forward(self, x, edge_index):
        src, dst = edge_index[0], edge_index[1]
        m = torch.relu(self.msg(torch.cat([x[src], x[dst]], dim=-1)))
        idx = dst.unsqueeze(-1).expand_as(m)
        zeros = torch.zeros_like(x)
        agg_sum = zeros.scatter_reduce(0, idx, m, reduce="sum", include_self=False)
        agg_mean = zeros.scatter_reduce(0, idx, m, reduce="mean", include_self=False)
        agg_max = zeros.scatter_reduce(0, idx, m, reduce="amax", include_self=False)
        return self.upd(torch.cat([x, agg_sum, agg_mean, agg_max], dim=-1))


def get_inputs():
    n, e = 30, 120
    return [torch.randn(n, 16), torch.randint(0, n, (2, e))]


def get_init_inputs():
    return [16]
