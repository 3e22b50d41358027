"""Pull the candidate file out of a model's reply.

Usage: code, error = extract_code(reply_text)   # ("...", None) or ("", "why there is no candidate")

The candidate is the last fenced block (```python, ```py or bare ```) that defines `ModelNew`.
A reply without one is "malformed": the session records it and never evaluates it.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"```[ \t]*(python|py|python3)?[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)
_DEFINES_MODELNEW = re.compile(r"^\s*class\s+ModelNew\b|^\s*ModelNew\s*=", re.MULTILINE)


def extract_code(text: str) -> tuple[str, str | None]:
    if not text or not text.strip():
        return "", "the reply was empty"
    blocks = [m.group(2) for m in _FENCE.finditer(text)]
    if not blocks:
        return "", "the reply held no fenced ```python block"
    defining = [b for b in blocks if _DEFINES_MODELNEW.search(b)]
    if not defining:
        return "", f"none of the reply's {len(blocks)} code block(s) defines ModelNew"
    return defining[-1].strip() + "\n", None
