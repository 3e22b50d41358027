import torch
import torch.nn as nn
import torch.nn.functional as F
class Model(nn.Module):
    def __init__(self, hidden, n_experts, top_k):
        super().__init__()
        self.gate = nn.Linear(hidden, n_experts, bias=False)
        self.top_k = top_k
    def forward(self, hidden_states):
        router_logits = self.gate(hidden_states)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        return routing_weights, selected_experts
def get_inputs():
    return [torch.randn(64, 32)]
def get_init_inputs():
    return [32, 8, 2]
