"""The Anthropic provider: the Messages API through the official SDK, with tools and prompt caching.

Usage: provider = make_provider(ClientSettings(anthropic_api_key="...", anthropic_base_url=None))
       proposals = provider.propose(request)

Per proposal: the system text and the knowledge part of the prompt go in system blocks, the last
one marked `cache_control` (tools + system + knowledge are the stable, cached prefix); the
iteration part is the user message. The model may call tools (providers/tools.py) for up to
`tool_max_turns` turns; the last turn forbids tools so that an answer comes. Rate limits (429),
overload (529), connection errors, a try unanswered within KKB_PROVIDER_TIMEOUT_S and a reply cut short are
retried by our bounded loop (providers/retry.py) for at most KKB_PROVIDER_RETRY_S seconds of waiting; then,
or at once for a refused key, an unknown model or a reply that is not the Messages API's (a proxy's page),
the request fails with EndpointError naming the URL or the setting to check.

Settings (agent_client/config.py): ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL (or KKB_ANTHROPIC_BASE_URL),
KKB_ANTHROPIC_MODEL (or --model), KKB_ANTHROPIC_MAX_TOKENS, KKB_PROVIDER_RETRY_S, KKB_PROVIDER_TIMEOUT_S.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from agent_client.proposals import EndpointError, Proposal, ProposalRequest
from agent_client.providers.extract import extract_code
from agent_client.providers.replies import MalformedReply, parsed_reply
from agent_client.providers.retry import RETRYABLE_STATUS, Retries, call_with_retries, status_of
from agent_client.providers.tools import TOOLS, run_tool

MESSAGES_REPLY = "a Messages API reply"


def _retryable(exc: BaseException) -> bool:
    import anthropic

    if isinstance(exc, MalformedReply):
        return exc.retryable
    if isinstance(exc, anthropic.APIConnectionError):  # includes timeouts and replies cut short
        return True
    return isinstance(exc, anthropic.APIStatusError) and status_of(exc) in RETRYABLE_STATUS


class AnthropicProvider:
    name = "anthropic"

    def __init__(self, client: Any, model: str, max_tokens: int = 8192, tool_max_turns: int = 6,
                 use_tools: bool = True, retries: Retries | None = None,
                 sleep: Callable[[float], None] = time.sleep):
        self.client = client
        self.model = model
        self.max_tokens = max_tokens
        self.tool_max_turns = max(1, tool_max_turns)
        self.use_tools = use_tools
        self.retries = retries or Retries()
        self.sleep = sleep

    @property
    def endpoint(self) -> dict[str, str]:
        """How this provider reaches its model (recorded with each run of a session)."""
        return {"model": self.model, "base_url": str(getattr(self.client, "base_url", "")).rstrip("/")}

    def propose(self, request: ProposalRequest) -> list[Proposal]:
        return [self._one(request) for _ in range(max(1, request.n))]

    def _create(self, notify, **kwargs):
        def call():  # the raw reply, so that a page that is not the API's is named with its content type
            return parsed_reply(self.client.messages.with_raw_response.create(**kwargs), MESSAGES_REPLY, "content")

        return call_with_retries(call, _retryable, self.retries, f"provider anthropic (model {self.model})",
                                 notify, self.sleep, url=self.endpoint["base_url"])

    def _one(self, request: ProposalRequest) -> Proposal:
        split = max(0, min(request.cache_prefix_chars, len(request.prompt)))
        knowledge, iteration = request.prompt[:split].rstrip(), request.prompt[split:].strip()
        system = [{"type": "text", "text": request.system or "You write fast, correct GPU kernels."}]
        if knowledge:
            system.append({"type": "text", "text": knowledge})
        system[-1]["cache_control"] = {"type": "ephemeral"}
        messages: list[dict] = [{"role": "user", "content": iteration or request.prompt}]
        usage: dict[str, int] = {}
        tool_calls: list[dict] = []
        state: dict = {}
        text = ""
        for turn in range(self.tool_max_turns):
            kwargs: dict[str, Any] = {"model": self.model, "max_tokens": self.max_tokens, "system": system,
                                      "messages": messages}
            if self.use_tools:
                kwargs["tools"] = TOOLS
                if turn == self.tool_max_turns - 1:
                    kwargs["tool_choice"] = {"type": "none"}  # last turn: answer now
            response = self._create(request.notify, **kwargs)
            _add_usage(usage, response.usage)
            uses = [b for b in response.content if b.type == "tool_use"]
            text = "".join(b.text for b in response.content if b.type == "text")
            if response.stop_reason != "tool_use" or not uses:
                break
            messages.append({"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in response.content]})
            results = []
            for use in uses:
                answer, is_error = run_tool(use.name, dict(use.input or {}), request, state)
                tool_calls.append({"name": use.name, "input": _short(use.input), "is_error": is_error})
                results.append({"type": "tool_result", "tool_use_id": use.id, "content": answer,
                                "is_error": is_error})
            messages.append({"role": "user", "content": results})
        else:
            text = text or ""
        code, error = extract_code(text)
        meta = {"model": self.model, "usage": usage, "turns": len([m for m in messages if m["role"] == "assistant"]) + 1,
                "tool_calls": tool_calls}
        if error:
            meta["error"] = f"malformed reply: {error}"
        return Proposal(code=code, response_text=text, meta=meta)


def _add_usage(total: dict[str, int], usage: Any) -> None:
    if usage is None:
        return
    for key in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
        value = getattr(usage, key, None)
        if isinstance(value, int):
            total[key] = total.get(key, 0) + value


def _short(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: (v[:200] + "..." if isinstance(v, str) and len(v) > 200 else v) for k, v in value.items()}
    return value


def make_provider(settings: Any, client: Any = None, model: str | None = None, use_tools: bool = True,
                  base_url: str | None = None, sleep: Callable[[float], None] = time.sleep,
                  **_: Any) -> AnthropicProvider:
    model = model or settings.anthropic_model
    base_url = base_url or settings.anthropic_base_url
    if client is None:
        try:
            import anthropic
        except ImportError as exc:
            raise EndpointError("provider anthropic needs the `anthropic` package: pip install anthropic") from exc
        if not settings.anthropic_api_key and not base_url:
            raise EndpointError("provider anthropic needs an API key: set ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL "
                                "for a local server), or use --provider offline")
        client = anthropic.Anthropic(api_key=settings.anthropic_api_key or "unused", base_url=base_url,
                                     max_retries=settings.sdk_max_retries, timeout=settings.provider_timeout_s)
    where = "--base-url (ANTHROPIC_BASE_URL)"  # a session's URL comes from either
    hints = {401: "check ANTHROPIC_API_KEY", 403: "check ANTHROPIC_API_KEY and its access to the model",
             404: "check the model name (--model or KKB_ANTHROPIC_MODEL) and ANTHROPIC_BASE_URL",
             "connection": "check the network" + (f" and {where}" if base_url else ""),
             "timeout": "check that the endpoint" + (f" at {where}" if base_url else "")
                        + " answers; a slow model may need a larger KKB_PROVIDER_TIMEOUT_S",
             "malformed": "check that " + (f"{where} leads" if base_url else "the endpoint leads")
                          + " to a Messages API, not a proxy's page"}
    retries = Retries(total_wait_s=settings.provider_retry_s, base_delay_s=settings.retry_base_delay_s,
                      max_attempts=settings.retry_attempts, timeout_s=settings.provider_timeout_s, hints=hints)
    return AnthropicProvider(client, model, max_tokens=settings.anthropic_max_tokens,
                             tool_max_turns=settings.tool_max_turns, use_tools=use_tools, retries=retries, sleep=sleep)
