import torch
import torch.nn as nn


class Model(nn.Module):
    """
    Looks up integer token indices in an embedding table and averages over the sequence.
    """

    def __init__(self, num_embeddings, embedding_dim):
        super(Model, self).__init__()
        self.embedding = nn.Embedding(num_embeddings, embedding_dim)

    def forward(self, indices):
        """
        Args:
            indices (torch.Tensor): int64 (batch_size, seq_len), values in [0, num_embeddings).

        Returns:
            torch.Tensor: (batch_size, embedding_dim).
        """
        return self.embedding(indices).mean(dim=1)


batch_size = 4
seq_len = 12
num_embeddings = 50
embedding_dim = 16


def get_inputs():
    return [torch.randint(0, num_embeddings, (batch_size, seq_len))]


def get_init_inputs():
    return [num_embeddings, embedding_dim]
