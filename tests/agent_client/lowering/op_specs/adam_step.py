import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, lr=1e-3, beta1=0.9, beta2=0.999, eps=1e-8, step=10):
        super().__init__()
        self.lr, self.beta1, self.beta2, self.eps, self.step = lr, beta1, beta2, eps, step

    def forward(self, param, grad, exp_avg, exp_avg_sq):
        exp_avg = exp_avg.clone()
        exp_avg_sq = exp_avg_sq.clone()
        exp_avg.mul_(self.beta1).add_(grad, alpha=1 - self.beta1)
        exp_avg_sq.mul_(self.beta2).addcmul_(grad, grad, value=1 - self.beta2)
        bias_correction1 = 1 - self.beta1 ** self.step
        bias_correction2 = 1 - self.beta2 ** self.step
        denom = (exp_avg_sq.sqrt() / (bias_correction2 ** 0.5)).add_(self.eps)
        new_param = param.addcdiv(exp_avg, denom, value=-self.lr / bias_correction1)
        return new_param, exp_avg, exp_avg_sq


def get_inputs():
    n = 4096
    return [torch.randn(n), torch.randn(n), torch.randn(n) * 0.1, torch.rand(n) * 0.01]


def get_init_inputs():
    return []
