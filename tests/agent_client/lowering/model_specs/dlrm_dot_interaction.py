import torch
import torch.nn as nn


class Model(nn.Module):
    """DLRM's dot interaction: pairwise dots of the dense and sparse features, the lower triangle kept."""

    def __init__(self, num_features, dim):
        super().__init__()
        self.num_features = num_features
        li, lj = torch.tril_indices(num_features, num_features, offset=-1)
        self.register_buffer("li", li, persistent=False)
        self.register_buffer("lj", lj, persistent=False)

    def forward(self, dense, sparse):
        T = torch.cat([dense.unsqueeze(1), sparse], dim=1)
        Z = torch.bmm(T, T.transpose(1, 2))
        zflat = Z[:, self.li, self.lj]
        oi, oj = torch.triu_indices(self.num_features, self.num_features, 1, device=dense.device)
        return torch.cat([dense, zflat], dim=1), Z[:, oi, oj].sum(1), torch.pdist(dense)


def get_inputs():
    return [torch.randn(40, 16), torch.randn(40, 26, 16)]


def get_init_inputs():
    return [27, 16]
