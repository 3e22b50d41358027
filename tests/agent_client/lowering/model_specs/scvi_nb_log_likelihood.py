import torch
import torch.nn as nn
import torch.nn.functional as F


def log_nb_positive(x, mu, theta, eps=1e-8):
    log_theta_mu_eps = torch.log(theta + mu + eps)
    res = (theta * (torch.log(theta + eps) - log_theta_mu_eps) + x * (torch.log(mu + eps) - log_theta_mu_eps)
           + torch.lgamma(x + theta) - torch.lgamma(theta) - torch.lgamma(x + 1))
    return res


class Model(nn.Module):
    """A single-cell model's reconstruction loss: a negative binomial log-likelihood of counts, through lgamma,
    with a learned per-gene dispersion and means from a softmax over genes."""

    def __init__(self, n_genes):
        super(Model, self).__init__()
        self.px_r = nn.Parameter(torch.randn(n_genes))

    def forward(self, counts, px_scale_logits, library):
        mu = library.exp() * F.softmax(px_scale_logits, dim=-1)
        theta = torch.exp(self.px_r)
        return -log_nb_positive(counts, mu, theta).sum(-1).mean()


def get_inputs():
    return [torch.poisson(torch.rand(16, 200) * 5), torch.randn(16, 200), torch.randn(16, 1) + 6.0]


def get_init_inputs():
    return [200]
