"""What a prompt's passages should be about: the spec's own words, and the words of the techniques of the
other bottleneck; and the bonus each passage earns beyond its ranks in the searches.

Usage: topic = topic_of(family, ops, bottleneck, tpl["retrieval"]); bonus = passage_bonus(chunk, "h100", topic, cfg)
       (None: off topic, left out)

A passage that names the spec's op family (or, with no family, one of its ops) is on topic; one from the
target accelerator's own documents (tagged with its id, not "any") knows the chip; one whose document title
or headings are about the other bottleneck's techniques (GEMM tiles, split-K, tensor cores for a
memory-bound row-wise op) and not the spec, or whose text speaks of them and never of the spec, is off
topic. The words and the weights are data: kb_server/prompts/prompt.toml, [retrieval].
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from kb_server.schemas import Chunk

# ops that every spec has a few of: they say nothing of what a passage should be about
GENERIC_OPS = frozenset({"add", "sub", "mul", "div", "pow", "neg", "mean", "sum", "max", "min", "exp", "sqrt",
                         "where", "clamp", "abs", "cat"})


@dataclass(frozen=True)
class Topic:
    words: tuple[str, ...]  # the spec's: its family's words, else its ops
    off_topic: tuple[str, ...]  # the other bottleneck's techniques

    def on(self, text: str) -> bool:
        return bool(self.words) and _pattern(self.words).search(text) is not None

    def off(self, text: str) -> bool:
        return bool(self.off_topic) and _pattern(self.off_topic).search(text) is not None


@cache
def _pattern(phrases: tuple[str, ...]) -> re.Pattern:
    """One regex for the phrases, each word boundary to word boundary; '_', '-' and ' ' between words alike
    ("rms_norm" matches "RMS norm", "rms-norm" and "rmsnorm")."""
    alternatives = [r"[\s_-]?".join(map(re.escape, re.split(r"[\s_-]+", p.strip().lower()))) for p in phrases]
    return re.compile(r"\b(?:" + "|".join(a for a in alternatives if a) + r")s?\b")


def topic_of(family: str | None, ops: list[str], bottleneck: str, cfg: dict) -> Topic:
    """The topic of a spec: its family's words (the family's name, and those prompt.toml gives it), else its
    ops that are not generic arithmetic; the off-topic words of its bottleneck."""
    if family:
        words = [family, *cfg.get("family_words", {}).get(family, [])]
    else:
        words = [op for op in ops if op not in GENERIC_OPS]
    return Topic(tuple(dict.fromkeys(words)), tuple(cfg.get("off_topic", {}).get(bottleneck, [])))


def passage_bonus(chunk: Chunk, accelerator: str, topic: Topic, cfg: dict) -> float | None:
    """The bonus of one passage, added to its score from the searches; None for one off topic (left out)."""
    heading = " ".join([chunk.title, *chunk.heading_path]).lower()  # what the passage is about, by its author
    text = chunk.text.lower()
    on_heading = topic.on(heading)
    on = on_heading or topic.on(text)
    bonus = cfg["on_topic_bonus"] if on else 0.0
    if accelerator in chunk.accelerator:  # the target's own documents, not one for any chip
        bonus += cfg["target_bonus"] + (cfg["target_on_topic_bonus"] if on else 0.0)
    if (topic.off(heading) and not on_heading) or (not on and topic.off(text)):
        return None
    return bonus
