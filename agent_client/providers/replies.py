"""A model endpoint's 200 reply, checked before it is read: its content type, its JSON, its shape.

Usage: message = parsed_reply(client.messages.with_raw_response.create(...), "a Messages API reply", "content")

A proxy's login page or an error page served with status 200 would otherwise reach the provider as a plain
string (the SDKs return the text of a reply that is not JSON), and a reply cut short as a JSON error; either
becomes one MalformedReply naming the URL and what came back, which the retry loop (providers/retry.py)
reports in one line.
"""

from __future__ import annotations

from typing import Any

SNIPPET_CHARS = 80  # enough of a page to recognise it (a proxy's title), short enough for one line


class MalformedReply(Exception):
    """A 200 reply that is not what the API answers; `retryable` when another try may mend it (JSON cut short)."""

    def __init__(self, url: str, problem: str, retryable: bool):
        super().__init__(f"{problem} (from {url})")
        self.url = url
        self.retryable = retryable


def parsed_reply(raw: Any, expected: str, field: str) -> Any:
    """The SDK's parsed reply from its raw response, or MalformedReply.

    expected: what the API answers, for the message ("a Messages API reply"); field: a list every such
    reply holds ("content" of a message, "choices" of a chat completion)."""
    url = str(raw.http_request.url)
    content_type = (raw.headers.get("content-type") or "").split(";")[0].strip()
    if "json" not in content_type.lower():
        raise MalformedReply(url, f"the endpoint returned {content_type or 'no content type'}, not {expected}: "
                                  f"{_snippet(raw)!r}", retryable=False)
    try:
        parsed = raw.parse()
    except ValueError as exc:  # json.JSONDecodeError: the body was cut short or is not JSON at all
        raise MalformedReply(url, f"the reply was malformed, not {expected} (its JSON does not parse: {exc})",
                             retryable=True) from exc
    if not isinstance(getattr(parsed, field, None), list):
        raise MalformedReply(url, f"the reply is JSON but not {expected} (it has no {field!r} list)",
                             retryable=False)
    return parsed


def _snippet(raw: Any) -> str:
    try:
        text = " ".join(raw.http_response.text.split())
    except (AttributeError, UnicodeDecodeError):
        return ""
    return text[:SNIPPET_CHARS] + ("..." if len(text) > SNIPPET_CHARS else "")
