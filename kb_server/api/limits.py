"""A pure ASGI middleware that bounds request bodies: 413 with a problem body past the limit."""

from __future__ import annotations

import json

from starlette.exceptions import HTTPException

UPLOAD_PATH = "/v1/documents"  # uploads get their own, larger limit


class BodyTooLarge(HTTPException):
    """Raised while the body streams in; FastAPI passes HTTPExceptions through body parsing."""

    def __init__(self, limit: int, field: str):
        super().__init__(413, f"the request body is over the limit of {limit} bytes")
        self.field = field


class BodyLimitMiddleware:
    def __init__(self, app, max_request_bytes: int, max_upload_bytes: int):
        self.app = app
        self.max_request_bytes = max_request_bytes
        self.max_upload_bytes = max_upload_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        is_upload = scope["path"].rstrip("/") == UPLOAD_PATH and scope["method"] == "POST"
        # A multipart body carries a few hundred bytes of boundaries and form fields around the file.
        limit = self.max_upload_bytes + 64 * 1024 if is_upload else self.max_request_bytes
        field = "file" if is_upload else "body"
        length = dict(scope.get("headers", [])).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > limit):
            return await _reject(send, limit, field)
        seen = 0
        started = False

        async def limited_receive():
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise BodyTooLarge(limit, field)
            return message

        async def tracking_send(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, limited_receive, tracking_send)
        except BodyTooLarge:
            if not started:
                await _reject(send, limit, field)


async def _reject(send, limit: int, field: str) -> None:
    body = json.dumps({"type": "https://kernelkb.dev/problems/content-too-large", "title": "Content too large",
                       "status": 413, "detail": f"the request body is over the limit of {limit} bytes",
                       "field": field}).encode()
    await send({"type": "http.response.start", "status": 413,
                "headers": [(b"content-type", b"application/problem+json"),
                            (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})
