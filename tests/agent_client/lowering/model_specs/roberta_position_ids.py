import torch
import torch.nn as nn


def create_position_ids_from_input_ids(input_ids, padding_idx, past_key_values_length=0):
    mask = input_ids.ne(padding_idx).int()
    incremental_indices = (torch.cumsum(mask, dim=1).type_as(mask) + past_key_values_length) * mask
    return incremental_indices.long() + padding_idx


class Model(nn.Module):
    """RoBERTa's position ids from padding: an int mask, cumsum, type_as, then two embeddings and a
    LayerNorm."""

    def __init__(self, vocab, d, max_pos, padding_idx=1):
        super().__init__()
        self.word = nn.Embedding(vocab, d, padding_idx=padding_idx)
        self.pos = nn.Embedding(max_pos, d, padding_idx=padding_idx)
        self.ln = nn.LayerNorm(d, eps=1e-5)
        self.padding_idx = padding_idx

    def forward(self, input_ids):
        pos = create_position_ids_from_input_ids(input_ids, self.padding_idx)
        return self.ln(self.word(input_ids) + self.pos(pos))


def get_inputs():
    ids = torch.randint(2, 100, (3, 16))
    ids[0, 12:] = 1
    return [ids]


def get_init_inputs():
    return [100, 32, 40]
