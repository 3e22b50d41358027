"""Pulling the candidate out of a reply: the last fenced block that defines ModelNew."""

from __future__ import annotations

import pytest

from agent_client.providers.extract import extract_code

GOOD = "import torch\nclass ModelNew(torch.nn.Module):\n    pass\n"


@pytest.mark.parametrize(
    ("reply", "has_code", "error"),
    [
        (f"Here:\n```python\n{GOOD}```\n", True, None),
        (f"```py\n{GOOD}```", True, None),  # short language tag
        (f"```\n{GOOD}```", True, None),  # bare fence
        (f"first try:\n```python\nx = 1\n```\nfinal:\n```python\n{GOOD}```", True, None),  # the defining block
        ("I would tile it by 128.", False, "no fenced"),  # prose only
        ("```python\nimport torch\n```", False, "defines ModelNew"),  # a block without ModelNew
        ("", False, "empty"),
    ],
)
def test_extract_code(reply, has_code, error):
    code, why = extract_code(reply)
    assert bool(code) is has_code
    if has_code:
        assert "class ModelNew" in code and why is None
    else:
        assert error in why
