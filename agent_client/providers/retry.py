"""A bounded retry loop with exponential backoff, around an SDK call that already retries itself.

Usage: result = call_with_retries(lambda: client.messages.create(...), is_retryable, attempts=4, base_delay_s=2)

The SDKs retry rate limits on their own (honouring retry-after); this loop adds a few longer waits
for a long overload (HTTP 429/529), then gives up with ProviderError naming the last error.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from agent_client.proposals import ProviderError

T = TypeVar("T")
MAX_DELAY_S = 60.0
RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504, 529}


def status_of(exc: BaseException) -> int | None:
    return getattr(exc, "status_code", None)


def call_with_retries(call: Callable[[], T], is_retryable: Callable[[BaseException], bool], attempts: int,
                      base_delay_s: float, what: str, sleep: Callable[[float], None] = time.sleep) -> T:
    """`attempts` further tries after the first; non-retryable errors raise ProviderError at once."""
    for attempt in range(attempts + 1):
        try:
            return call()
        except Exception as exc:
            if not is_retryable(exc):
                raise ProviderError(f"{what}: {type(exc).__name__}: {exc}") from exc
            if attempt == attempts:
                raise ProviderError(f"{what}: still failing after {attempts + 1} tries: "
                                    f"{type(exc).__name__}: {exc}") from exc
            sleep(min(MAX_DELAY_S, base_delay_s * 2**attempt))
    raise AssertionError("unreachable")
