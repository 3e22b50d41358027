"""Any OpenAI-compatible chat endpoint (vLLM, llama.cpp, Ollama) by base URL.

Usage: provider = make_provider(ClientSettings(openai_base_url="http://127.0.0.1:8000/v1", openai_model="..."))

One chat.completions call per proposal (some servers ignore `n`); no tools, since tool calling
differs across these servers. Retries: our bounded loop (providers/retry.py), at most
KKB_PROVIDER_RETRY_S seconds of waiting per request, then EndpointError naming the setting to check.

Settings (agent_client/config.py): OPENAI_BASE_URL (or --base-url), OPENAI_API_KEY, KKB_OPENAI_MODEL
(or --model), KKB_PROVIDER_RETRY_S.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from agent_client.proposals import EndpointError, Proposal, ProposalRequest
from agent_client.providers.extract import extract_code
from agent_client.providers.retry import RETRYABLE_STATUS, Retries, call_with_retries, status_of


def _retryable(exc: BaseException) -> bool:
    import openai

    if isinstance(exc, openai.APIConnectionError):
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

    def propose(self, request: ProposalRequest) -> list[Proposal]:
        messages = [{"role": "system", "content": request.system or "You write fast, correct GPU kernels."},
                    {"role": "user", "content": request.prompt}]
        out = []
        for _ in range(max(1, request.n)):
            response = call_with_retries(
                lambda: self.client.chat.completions.create(model=self.model, messages=messages,
                                                            max_tokens=self.max_tokens, temperature=self.temperature),
                _retryable, self.retries, f"provider openai (model {self.model})", request.notify, self.sleep)
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
                               max_retries=settings.sdk_max_retries)
    hints = {401: "check OPENAI_API_KEY", 403: "check OPENAI_API_KEY",
             404: "check the model name (--model or KKB_OPENAI_MODEL) and the base URL (--base-url or "
                  "OPENAI_BASE_URL, usually ending in /v1)",
             "connection": "check that the server at --base-url (OPENAI_BASE_URL) is running"}
    retries = Retries(total_wait_s=settings.provider_retry_s, base_delay_s=settings.retry_base_delay_s,
                      max_attempts=settings.retry_attempts, hints=hints)
    return OpenAICompatProvider(client, model or settings.openai_model, max_tokens=settings.anthropic_max_tokens,
                                retries=retries, sleep=sleep)
