"""Test helper (not a test module): a fake Messages API (and chat.completions) server on loopback.

Usage: server = FakeModelServer(script).start(); client base_url = server.url; ...; server.stop()
       python tests/agent_client/fake_anthropic.py SCRIPT.json PORT_FILE   # as its own process

A real HTTP server (http.server in a thread) that the real anthropic and openai SDKs talk to.
`script` decides each reply from the request body: a callable (body, call_index) -> Reply, or a
list of Replies served in order (the last one repeats). It records every request it received.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


@dataclass
class Reply:
    text: str = ""  # the assistant's text
    tool_uses: list[dict] = field(default_factory=list)  # [{"name":..., "input": {...}}]
    status: int = 200  # 429 / 529 for rate limiting and overload
    delay_s: float = 0.0  # wait before answering
    raw: str | None = None  # a body sent as is instead of the API's JSON (a proxy's page, JSON cut short)
    content_type: str = "application/json"  # of `raw`
    short_by: int = 0  # bytes the content-length promises beyond `raw`: the connection closes first


def text_with_code(code: str, note: str = "Here is the kernel.") -> Reply:
    return Reply(text=f"{note}\n\n```python\n{code}\n```\n")


class FakeModelServer:
    def __init__(self, script):
        self.script = script
        self.requests: list[dict] = []  # {"path":..., "body":..., "headers":...}
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> FakeModelServer:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                return

            def do_POST(self):
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    index = len(server.requests)
                    server.requests.append({"path": self.path, "body": body, "headers": dict(self.headers)})
                reply = server._reply(body, index)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                try:
                    self._answer(reply, body, index)
                except (BrokenPipeError, ConnectionResetError):  # the client stopped waiting (its timeout)
                    self.close_connection = True

            def _answer(self, reply: Reply, body: dict, index: int):
                if reply.raw is not None:
                    data = reply.raw.encode()
                    self.send_response(reply.status)
                    self.send_header("content-type", reply.content_type)
                    self.send_header("content-length", str(len(data) + reply.short_by))
                    self.end_headers()
                    self.wfile.write(data)
                    self.close_connection = True
                    return
                if reply.status != 200:
                    kind = {429: "rate_limit_error", 529: "overloaded_error"}.get(reply.status, "api_error")
                    payload = {"type": "error", "error": {"type": kind, "message": f"scripted {reply.status}"}}
                    self._send(reply.status, payload, {"retry-after": "0"})
                    return
                if self.path.endswith("/chat/completions"):
                    self._send(200, _chat_completion(reply, body, index))
                else:
                    self._send(200, _message(reply, body, index))

            def _send(self, status: int, payload: dict, headers: dict | None = None):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    def _reply(self, body: dict, index: int) -> Reply:
        if callable(self.script):
            return self.script(body, index)
        return self.script[min(index, len(self.script) - 1)]

    def messages(self) -> list[dict]:
        return [r["body"] for r in self.requests if r["path"].endswith("/v1/messages")]


def _message(reply: Reply, body: dict, index: int) -> dict:
    content = []
    if reply.text:
        content.append({"type": "text", "text": reply.text})
    for i, use in enumerate(reply.tool_uses):
        content.append({"type": "tool_use", "id": f"toolu_{index}_{i}", "name": use["name"], "input": use["input"]})
    cached = any("cache_control" in b for b in body.get("system", []) if isinstance(b, dict))
    return {
        "id": f"msg_{index}", "type": "message", "role": "assistant", "model": body.get("model", "fake"),
        "content": content, "stop_reason": "tool_use" if reply.tool_uses else "end_turn", "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": 50,
                  "cache_creation_input_tokens": 0 if index and cached else 80,
                  "cache_read_input_tokens": 80 if index and cached else 0},
    }


def _chat_completion(reply: Reply, body: dict, index: int) -> dict:
    return {
        "id": f"chatcmpl-{index}", "object": "chat.completion", "created": int(time.time()),
        "model": body.get("model", "fake"),
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": reply.text}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 50, "total_tokens": 150},
    }


def main() -> None:
    """Serve a JSON list of replies until killed; write the URL to PORT_FILE once listening."""
    script = [Reply(**r) for r in json.loads(Path(sys.argv[1]).read_text())]
    server = FakeModelServer(script).start()
    Path(sys.argv[2]).write_text(server.url)
    threading.Event().wait()


if __name__ == "__main__":
    main()
