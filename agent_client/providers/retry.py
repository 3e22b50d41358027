"""A bounded retry loop with exponential backoff around a model endpoint's call, and plain words for its errors.

Usage: result = call_with_retries(lambda: client.messages.create(...), is_retryable, Retries(total_wait_s=60),
                                  what="anthropic model claude-sonnet-5", notify=request.notify, url=base_url)

Every retry is this loop's (the SDKs' own are off by default), so the wait it states is the wait there is:
rate limits, overload, connection errors, tries with no answer within `timeout_s` and replies cut short are
retried with waits of base * 2**attempt (or the server's retry-after) until `total_wait_s` of waiting is spent,
the first retry announced through `notify`; then, or at once for an error that no retry mends (a refused key,
an unknown model, a page that is not the API's reply), EndpointError says what happened in one line and which
setting to check. A request still waiting for its answer after a while is said once through `notify`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from agent_client.proposals import EndpointError
from agent_client.providers.replies import MalformedReply

T = TypeVar("T")
MAX_DELAY_S = 60.0  # the longest single wait, whatever retry-after says
WAIT_NOTE_S = 60.0  # a request unanswered this long is said once (sooner with a short timeout: half of it)
MAX_UNANSWERED = 2  # tries that got no answer within the timeout before giving up
RETRYABLE_STATUS = {408, 409, 429, 500, 502, 503, 504, 529}
_STATUS_WORDS = {400: "the endpoint refused the request", 401: "the endpoint refused the API key",
                 403: "the endpoint denied access", 404: "the endpoint has no such model or path",
                 408: "the request timed out", 413: "the request was too large", 429: "rate limited",
                 500: "the endpoint failed", 502: "bad gateway", 503: "the endpoint is unavailable",
                 504: "gateway timeout", 529: "the endpoint is overloaded"}


@dataclass(frozen=True)
class Retries:
    """How long one request may keep retrying, and what to tell the user to check when it gives up."""

    total_wait_s: float = 60.0  # waiting between tries, in all, before the request fails
    base_delay_s: float = 2.0  # first wait; doubled after each try
    max_attempts: int = 8  # tries after the first, at most
    setting: str = "KKB_PROVIDER_RETRY_S"  # the setting that holds total_wait_s, named in the messages
    timeout_s: float | None = None  # how long one try waits for its answer (the SDK client's timeout)
    timeout_setting: str = "KKB_PROVIDER_TIMEOUT_S"  # the setting that holds timeout_s
    # HTTP status, "connection", "timeout" or "malformed" -> what to check
    hints: dict[int | str, str] = field(default_factory=dict)


def status_of(exc: BaseException) -> int | None:
    return getattr(exc, "status_code", None)


def describe(exc: BaseException, retries: Retries | None = None) -> str:
    """One line for people: what the endpoint said, or why no usable answer came."""
    status = status_of(exc)
    if status is not None:
        detail = _api_message(exc)
        words = _STATUS_WORDS.get(status, "the endpoint answered with an error")
        return f"{words} (HTTP {status}" + (f": {detail})" if detail else ")")
    if isinstance(exc, MalformedReply):
        return str(exc)
    url = getattr(getattr(exc, "request", None), "url", None)
    if url is not None:  # the SDKs' connection errors and timeouts carry the request they could not send
        if _is_timeout(exc):
            timeout = retries.timeout_s if retries is not None else None
            within = f" within {timeout:g} s ({retries.timeout_setting}={timeout:g})" if timeout else " in time"
            return f"no answer from {url}{within}"
        if _cut_short(exc):
            return f"the reply from {url} was malformed: cut short ({exc.__cause__})"
        return f"cannot reach {url}"
    return f"{type(exc).__name__}: {exc}"


def _is_timeout(exc: BaseException) -> bool:
    return "Timeout" in type(exc).__name__


def _cut_short(exc: BaseException) -> bool:
    """The connection worked and a reply began, but its body ended early (httpx's RemoteProtocolError)."""
    cause = exc.__cause__
    return type(cause).__name__ == "RemoteProtocolError" and "message body" in str(cause)


def _api_message(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        error = body.get("error") if isinstance(body.get("error"), dict) else body
        message = error.get("message") if isinstance(error, dict) else None
        if isinstance(message, str):
            return message.strip().splitlines()[0][:200] if message.strip() else ""
    return ""


def _retry_after_s(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    value = headers.get("retry-after") if headers is not None else None
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:  # an HTTP date: fall back to our own backoff
        return None


def _hint(exc: BaseException, retries: Retries) -> str:
    status = status_of(exc)
    if status is not None:
        hint = retries.hints.get(status)
    elif isinstance(exc, MalformedReply) or _cut_short(exc):  # the network worked: the reply was wrong
        hint = retries.hints.get("malformed")
    elif _is_timeout(exc):
        hint = retries.hints.get("timeout", retries.hints.get("connection"))
    else:
        hint = retries.hints.get("connection")
    return f"; {hint}" if hint else ""


def _waiting_note(notify: Callable[[str], None] | None, url: str | None,
                  retries: Retries) -> threading.Timer | None:
    """A timer that says once, through `notify`, that the request is still waiting for the model at `url`."""
    if notify is None or not url:
        return None
    after_s = min(WAIT_NOTE_S, retries.timeout_s / 2) if retries.timeout_s else WAIT_NOTE_S
    started = time.monotonic()
    timer = threading.Timer(after_s, lambda: notify(
        f"waiting for the model at {url} ({time.monotonic() - started:.3g} s)"))
    timer.daemon = True  # never keeps the process alive
    timer.start()
    return timer


def call_with_retries(call: Callable[[], T], is_retryable: Callable[[BaseException], bool], retries: Retries,
                      what: str, notify: Callable[[str], None] | None = None,
                      sleep: Callable[[float], None] = time.sleep, url: str | None = None) -> T:
    """The call's result, or EndpointError once the error is not retryable or the stated wait is spent.

    url: where the model is, for the one line said while a request waits long for its answer."""
    timer = _waiting_note(notify, url, retries)
    try:
        return _with_retries(call, is_retryable, retries, what, notify, sleep)
    finally:
        if timer is not None:
            timer.cancel()


def _with_retries(call: Callable[[], T], is_retryable: Callable[[BaseException], bool], retries: Retries,
                  what: str, notify: Callable[[str], None] | None, sleep: Callable[[float], None]) -> T:
    waited = 0.0
    unanswered = 0
    for attempt in range(retries.max_attempts + 1):
        try:
            return call()
        except Exception as exc:
            said = f"{what}: {describe(exc, retries)}{_hint(exc, retries)}"
            if not is_retryable(exc):
                raise EndpointError(said) from exc
            unanswered += _is_timeout(exc)
            if unanswered >= MAX_UNANSWERED:  # each costs a whole timeout: the wait budget does not bound them
                raise EndpointError(f"{said}; gave up after {unanswered} tries with no answer") from exc
            left = retries.total_wait_s - waited
            if attempt == retries.max_attempts or left <= 0:
                raise EndpointError(
                    f"{said}; gave up after {attempt + 1} {'try' if attempt == 0 else 'tries'} and {waited:.3g} s "
                    f"of waiting ({retries.setting}={retries.total_wait_s:g})") from exc
            if attempt == 0 and notify is not None:
                notify(f"{what}: {describe(exc, retries)}; retrying for up to {retries.total_wait_s:g} s in all "
                       f"({retries.setting})")
            backoff = min(MAX_DELAY_S, retries.base_delay_s * 2**attempt)
            delay = min(left, MAX_DELAY_S, _retry_after_s(exc) or backoff)
            sleep(delay)
            waited += delay
    raise AssertionError("unreachable")
