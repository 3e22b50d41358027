import torch
import torch.nn as nn
from einops import rearrange


class Model(nn.Module):
    """Stable Diffusion's cross-attention as written with einops.rearrange and einsum."""

    def __init__(self, query_dim, context_dim, heads=4, dim_head=16):
        super().__init__()
        inner = heads * dim_head
        self.scale = dim_head ** -0.5
        self.heads = heads
        self.to_q = nn.Linear(query_dim, inner, bias=False)
        self.to_k = nn.Linear(context_dim, inner, bias=False)
        self.to_v = nn.Linear(context_dim, inner, bias=False)
        self.to_out = nn.Sequential(nn.Linear(inner, query_dim), nn.Dropout(0.0))

    def forward(self, x, context):
        h = self.heads
        q, k, v = self.to_q(x), self.to_k(context), self.to_v(context)
        q, k, v = map(lambda t: rearrange(t, "b n (h d) -> (b h) n d", h=h), (q, k, v))
        sim = torch.einsum("b i d, b j d -> b i j", q, k) * self.scale
        attn = sim.softmax(dim=-1)
        out = torch.einsum("b i j, b j d -> b i d", attn, v)
        out = rearrange(out, "(b h) n d -> b n (h d)", h=h)
        return self.to_out(out)


def get_inputs():
    return [torch.randn(2, 24, 32), torch.randn(2, 7, 48)]


def get_init_inputs():
    return [32, 48]
