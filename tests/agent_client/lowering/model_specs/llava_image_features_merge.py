import torch
import torch.nn as nn


class Model(nn.Module):
    """A multimodal model's merge: image features put into the token embeddings at the image token's
    positions (masked_scatter); also angle and ldexp."""

    def __init__(self, vocab, d, image_token_id):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.proj = nn.Linear(24, d)
        self.image_token_id = image_token_id

    def forward(self, input_ids, image_features):
        embeds = self.embed(input_ids)
        mask = (input_ids == self.image_token_id).unsqueeze(-1).expand_as(embeds)
        feats = self.proj(image_features).to(embeds.dtype)
        return embeds.masked_scatter(mask, feats), torch.angle(image_features[0]), torch.ldexp(embeds, input_ids.unsqueeze(-1) % 3)


def get_inputs():
    ids = torch.randint(0, 50, (2, 20))
    ids[0, 2:6] = 99
    ids[1, 10:14] = 99
    return [ids, torch.randn(8, 24)]


def get_init_inputs():
    return [100, 16, 99]
