"""Any OpenAI-compatible chat endpoint (vLLM, llama.cpp, Ollama) by base URL.

Usage: provider = make_provider(ClientSettings(openai_base_url="http://127.0.0.1:8000/v1", openai_model="..."))

One chat.completions call per proposal (some servers ignore `n`); no tools, since tool calling
differs across these servers. Retries: our bounded loop (providers/retry.py), at most
KKB_PROVIDER_RETRY_S seconds of waiting per request (each try waits KKB_PROVIDER_TIMEOUT_S for its answer),
then EndpointError naming the setting to check; a reply that is not a chat completion (a proxy's page) fails
at once, naming the URL and its content type.

Settings (agent_client/config.py): OPENAI_BASE_URL (or --base-url), OPENAI_API_KEY, KKB_OPENAI_MODEL
(or --model), KKB_PROVIDER_RETRY_S, KKB_PROVIDER_TIMEOUT_S.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from agent_client.proposals import EndpointError, Proposal, ProposalRequest
from agent_client.providers.extract import extract_code
from agent_client.providers.replies import MalformedReply, parsed_reply
from agent_client.providers.retry import RETRYABLE_STATUS, Retries, call_with_retries, status_of


def _retryable(exc: BaseException) -> bool:
    import openai

    if isinstance(exc, MalformedReply):
        return exc.retryable
    if isinstance(exc, openai.APIConnectionError):  # includes timeouts and replies cut short
        return True
    return isinstance(exc, openai.APIStatusError) and status_of(exc) in RETRYABLE_STATUS


class OpenAICompatProvider:
    name = "openai"

    def __init__(self, client: Any, model: str, max_tokens: int = 8192, retries: Retries | None = None,
                 temperature: float = 0.8, sleep: Callable[[float], None] = time.sleep):
        self.client = client
        self.model = model
        self.max_tokens = max_tokens
        self.retries = retries or Retries()
        self.temperature = temperature
        self.sleep = sleep

    @property
    def endpoint(self) -> dict[str, str]:
        """How this provider reaches its model (recorded with each run of a session)."""
        return {"model": self.model, "base_url": str(getattr(self.client, "base_url", "")).rstrip("/")}

    def propose(self, request: ProposalRequest) -> list[Proposal]:
        messages = [{"role": "system", "content": request.system or "You write fast, correct GPU kernels."},
                    {"role": "user", "content": request.prompt}]
        out = []
        for _ in range(max(1, request.n)):
            response = call_with_retries(
                lambda: parsed_reply(self.client.chat.completions.with_raw_response.create(
                    model=self.model, messages=messages, max_tokens=self.max_tokens, temperature=self.temperature),
                    "a chat completion reply", "choices"),
                _retryable, self.retries, f"provider openai (model {self.model})", request.notify, self.sleep,
                url=self.endpoint["base_url"])
            text = (response.choices[0].message.content or "") if response.choices else ""
            code, error = extract_code(text)
            usage = response.usage.model_dump() if getattr(response, "usage", None) else {}
            meta = {"model": self.model, "usage": usage}
            if error:
                meta["error"] = f"malformed reply: {error}"
            out.append(Proposal(code=code, response_text=text, meta=meta))
        return out


def make_provider(settings: Any, client: Any = None, model: str | None = None, base_url: str | None = None,
                  sleep: Callable[[float], None] = time.sleep, **_: Any) -> OpenAICompatProvider:
    base_url = base_url or settings.openai_base_url
    if client is None:
        try:
            import openai
        except ImportError as exc:
            raise EndpointError("provider openai needs the `openai` package: pip install openai") from exc
        if not base_url:
            raise EndpointError("provider openai needs a base URL: --base-url or OPENAI_BASE_URL "
                                "(e.g. http://127.0.0.1:8000/v1)")
        client = openai.OpenAI(base_url=base_url, api_key=settings.openai_api_key or "unused",
                               max_retries=settings.sdk_max_retries, timeout=settings.provider_timeout_s)
    hints = {401: "check OPENAI_API_KEY", 403: "check OPENAI_API_KEY",
             404: "check the model name (--model or KKB_OPENAI_MODEL) and the base URL (--base-url or "
                  "OPENAI_BASE_URL, usually ending in /v1)",
             "connection": "check that the server at --base-url (OPENAI_BASE_URL) is running",
             "timeout": "check that the server at --base-url (OPENAI_BASE_URL) answers; a slow model may need "
                        "a larger KKB_PROVIDER_TIMEOUT_S",
             "malformed": "check that --base-url (OPENAI_BASE_URL) leads to an OpenAI-compatible API, usually "
                          "ending in /v1, not a proxy's page"}
    retries = Retries(total_wait_s=settings.provider_retry_s, base_delay_s=settings.retry_base_delay_s,
                      max_attempts=settings.retry_attempts, timeout_s=settings.provider_timeout_s, hints=hints)
    return OpenAICompatProvider(client, model or settings.openai_model, max_tokens=settings.anthropic_max_tokens,
                                retries=retries, sleep=sleep)
