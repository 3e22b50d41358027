import torch
import torch.nn as nn


class Model(nn.Module):
    """
    A linear layer, then GELU, then layer normalisation over the features.
    """

    def __init__(self, in_features, out_features):
        super(Model, self).__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.norm = nn.LayerNorm(out_features)

    def forward(self, x):
        """
        Args:
            x (torch.Tensor): (batch_size, in_features).

        Returns:
            torch.Tensor: (batch_size, out_features).
        """
        x = self.linear(x)
        x = torch.nn.functional.gelu(x)
        return self.norm(x)


batch_size = 8
in_features = 32
out_features = 48


def get_inputs():
    return [torch.randn(batch_size, in_features)]


def get_init_inputs():
    return [in_features, out_features]
