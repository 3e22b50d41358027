import torch
import torch.nn as nn
import torch.nn.functional as F


def repeat_kv(hidden_states: torch.Tensor, n_rep: int) -> torch.Tensor:
    batch, num_key_value_heads, slen, head_dim = hidden_states.shape
    if n_rep == 1:
        return hidden_states
    hidden_states = hidden_states[:, :, None, :, :].expand(batch, num_key_value_heads, n_rep, slen, head_dim)
    return hidden_states.reshape(batch, num_key_value_heads * n_rep, slen, head_dim)


class Model(nn.Module):
    def __init__(self, n_rep):
        super().__init__()
        self.n_rep = n_rep

    def forward(self, q, k, v):
        k = repeat_kv(k, self.n_rep)
        v = repeat_kv(v, self.n_rep)
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def get_inputs():
    return [torch.randn(2, 8, 64, 32), torch.randn(2, 2, 64, 32), torch.randn(2, 2, 64, 32)]


def get_init_inputs():
    return [4]
