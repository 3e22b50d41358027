"""A query encoder for one-shot commands: the embedding model's BERT forward in plain torch, read from the
model folder's own files (config.json, model.safetensors, tokenizer.json, the sentence-transformers module
list), without importing sentence-transformers or transformers.

Usage: enc = QueryEncoder.load(model_dir); vectors = enc.encode(["shared memory per SM"])  # [n, dim] float32

Why: importing sentence-transformers (and through it transformers and scikit-learn) was most of a one-shot
`kkb search`, while the forward of a few queries is short. The vectors are the
sentence-transformers ones (mean pooling over the attention mask, then L2 normalisation) to float32
rounding (tests/kb_server/test_query_encoder.py compares them); `kb_server.embeddings` loads the full
model where the folder is not this shape (another architecture or pooling).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np


class UnsupportedModel(ValueError):
    """The model folder is not a BERT encoder with mean pooling and normalisation."""


def _read_json(path: Path) -> dict | list:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UnsupportedModel(f"{path}: {exc}") from None


class QueryEncoder:
    def __init__(self, config: dict, weights: dict, tokenizer, max_tokens: int):
        self.config = config
        self.w = weights
        self.tokenizer = tokenizer
        self.max_tokens = max_tokens
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))

    @classmethod
    def load(cls, model_dir: str | Path) -> QueryEncoder:
        """The encoder for a sentence-transformers folder of a BERT model with mean pooling and a Normalize
        module; UnsupportedModel for any other."""
        root = Path(model_dir)
        config = _read_json(root / "config.json")
        if config.get("model_type") != "bert" or config.get("hidden_act") != "gelu" \
                or config.get("position_embedding_type", "absolute") != "absolute":
            raise UnsupportedModel(f"{root}: not a BERT encoder with absolute positions and GELU")
        modules = [m.get("type", "") for m in _read_json(root / "modules.json")]
        if modules != ["sentence_transformers.models.Transformer", "sentence_transformers.models.Pooling",
                       "sentence_transformers.models.Normalize"]:
            raise UnsupportedModel(f"{root}: modules {modules} are not Transformer, Pooling, Normalize")
        pooling = _read_json(root / "1_Pooling" / "config.json")
        modes = {k for k, v in pooling.items() if k.startswith("pooling_mode") and v}
        if modes != {"pooling_mode_mean_tokens"}:
            raise UnsupportedModel(f"{root}: pooling {sorted(modes)} is not mean pooling alone")
        st_config = _read_json(root / "sentence_bert_config.json")
        if st_config.get("do_lower_case"):
            raise UnsupportedModel(f"{root}: do_lower_case is applied outside the tokenizer")
        try:
            from safetensors.torch import load_file
            from tokenizers import Tokenizer

            weights = load_file(str(root / "model.safetensors"))
            tokenizer = Tokenizer.from_file(str(root / "tokenizer.json"))
        except Exception as exc:  # noqa: BLE001 - any unreadable file means: use the full model
            raise UnsupportedModel(f"{root}: {exc}") from None
        weights = {k.removeprefix("bert."): v.float() for k, v in weights.items()}
        if "embeddings.word_embeddings.weight" not in weights:
            raise UnsupportedModel(f"{root}: no embeddings.word_embeddings.weight in model.safetensors")
        max_tokens = min(int(st_config.get("max_seq_length", 512)), int(config["max_position_embeddings"]))
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=max_tokens)
        return cls(config, weights, tokenizer, max_tokens)

    def _ln(self, x, name: str):
        import torch

        return torch.nn.functional.layer_norm(x, x.shape[-1:], self.w[f"{name}.weight"], self.w[f"{name}.bias"],
                                              self.eps)

    def _dense(self, x, name: str):
        import torch

        return torch.nn.functional.linear(x, self.w[f"{name}.weight"], self.w[f"{name}.bias"])

    def encode(self, texts: list[str]) -> np.ndarray:
        """Normalised float32 vectors, one row a text."""
        import torch

        encodings = self.tokenizer.encode_batch(list(texts))
        n = max(len(e.ids) for e in encodings)
        ids = torch.zeros((len(texts), n), dtype=torch.long)
        types = torch.zeros_like(ids)
        mask = torch.zeros((len(texts), n), dtype=torch.float32)
        for i, e in enumerate(encodings):
            ids[i, :len(e.ids)] = torch.tensor(e.ids)
            types[i, :len(e.ids)] = torch.tensor(e.type_ids)
            mask[i, :len(e.ids)] = 1.0
        w = self.w
        with torch.inference_mode():
            x = w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][:n] \
                + w["embeddings.token_type_embeddings.weight"][types]
            x = self._ln(x, "embeddings.LayerNorm")
            b, t, d = x.shape
            hd = d // self.heads
            bias = (1.0 - mask)[:, None, None, :] * torch.finfo(torch.float32).min  # padding keys never attend
            for i in range(self.layers):
                p = f"encoder.layer.{i}"

                def split(v):
                    return v.view(b, t, self.heads, hd).transpose(1, 2)

                q = split(self._dense(x, f"{p}.attention.self.query"))
                k = split(self._dense(x, f"{p}.attention.self.key"))
                v = split(self._dense(x, f"{p}.attention.self.value"))
                scores = q @ k.transpose(-1, -2) / math.sqrt(hd) + bias
                ctx = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, d)
                x = self._ln(x + self._dense(ctx, f"{p}.attention.output.dense"), f"{p}.attention.output.LayerNorm")
                h = torch.nn.functional.gelu(self._dense(x, f"{p}.intermediate.dense"))  # erf GELU, as BERT's "gelu"
                x = self._ln(x + self._dense(h, f"{p}.output.dense"), f"{p}.output.LayerNorm")
            pooled = (x * mask[:, :, None]).sum(1) / mask.sum(1, keepdim=True).clamp(min=1e-9)
            out = torch.nn.functional.normalize(pooled, p=2, dim=1)
        return out.numpy().astype(np.float32)
