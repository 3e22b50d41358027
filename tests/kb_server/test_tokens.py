"""Token counts from the embedding model's own tokenizer, offline."""

from __future__ import annotations

import pytest

from kb_server.tokens import TokenCounter, TokenizerError, get_counter

COUNTER = get_counter()


def test_wordpieces_match_what_the_embedder_reads(embedder):
    texts = ["shared memory per SM on the H100", "tl.dot uses wgmma.mma_async on sm_90a; 228 KiB of smem",
             "x = tl.load(x_ptr + offs, mask=offs < n, other=-float('inf'))"]
    ids = embedder.model.tokenizer(texts, add_special_tokens=False)["input_ids"]
    assert [COUNTER.wordpieces(t) for t in texts] == [len(i) for i in ids]
    assert COUNTER.window == embedder.model.max_seq_length - 2  # [CLS] and [SEP]


def test_prompt_count_adds_a_token_per_line_break_and_adds_up_over_joins():
    a, b = "def f(x):\n    return x + 1", "y = f(2)"
    assert COUNTER.count(a) == COUNTER.wordpieces(a) + 1
    assert COUNTER.count(a + "\n\n" + b) == COUNTER.count(a) + COUNTER.count(b) + 2


@pytest.mark.parametrize("limit", [1, 5, 17, 60])
def test_truncate_is_a_prefix_within_the_limit(limit):
    text = "\n".join(f"line {i}: the quick brown fox jumps over the lazy dog" for i in range(20))
    cut = COUNTER.truncate(text, limit)
    assert text.startswith(cut) and 0 < COUNTER.count(cut) <= limit


def test_a_model_that_is_not_here_is_a_named_error():
    with pytest.raises(TokenizerError, match="no-such-model"):
        TokenCounter("no-such-model-anywhere").wordpieces("x")
