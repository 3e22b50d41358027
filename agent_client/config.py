"""Settings of the agent client, in one place (env prefix KKB_, plus the providers' own keys).

Usage: settings = ClientSettings()            # from the environment
       settings = ClientSettings(home=tmp)    # in tests
       settings = load_settings(home=None)    # the verbs: a bad value is one SettingsError naming its variable

Non-obvious defaults carry their reason.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import AliasChoices, Field, ValidationError
from pydantic_settings import BaseSettings, SettingsConfigDict


class ClientSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="KKB_", extra="ignore", populate_by_name=True)

    home: Path = Field(default=Path("~/.local/share/kernelkb").expanduser())  # KKB_HOME, shared with kb_server
    kb_url: str | None = None  # KKB_KB_URL; unset = the embedded store under home
    kb_api_key: str | None = Field(default=None, validation_alias=AliasChoices("KKB_API_KEY"))

    # anthropic: the default provider when a key is set
    anthropic_api_key: str | None = Field(default=None, validation_alias=AliasChoices("ANTHROPIC_API_KEY"))
    anthropic_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("ANTHROPIC_BASE_URL", "KKB_ANTHROPIC_BASE_URL")
    )
    anthropic_model: str = "claude-sonnet-5"  # KKB_ANTHROPIC_MODEL (a current model; 4-5 retires 2026-11-30)
    anthropic_max_tokens: int = 8192  # a full kernel file with its launcher fits comfortably
    tool_max_turns: int = 6  # model turns per proposal when it may search/evaluate by itself

    # retries of both model providers (providers/retry.py): on rate limits, overload and connection errors
    provider_retry_s: float = Field(default=60.0, ge=0)  # KKB_PROVIDER_RETRY_S: waiting in all per request
    # KKB_PROVIDER_TIMEOUT_S: one try's wait for its answer; a whole kernel from a slow model fits in 5 minutes,
    # and an endpoint that never answers is named then instead of after the SDKs' 10
    provider_timeout_s: float = Field(default=300.0, gt=0)
    retry_base_delay_s: float = Field(default=2.0, gt=0)  # backoff: base * 2**attempt (or retry-after), <= 60 s
    retry_attempts: int = Field(default=8, ge=0)  # tries after the first, at most (the wait usually ends them first)
    sdk_max_retries: int = Field(default=0, ge=0)  # the SDKs' own retries: off, so the stated wait is the whole wait

    # any OpenAI-compatible endpoint (vLLM, llama.cpp, Ollama)
    openai_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_BASE_URL", "KKB_OPENAI_BASE_URL")
    )
    openai_api_key: str | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_API_KEY", "KKB_OPENAI_API_KEY")
    )
    openai_model: str = "Qwen/Qwen2.5-Coder-32B-Instruct"  # KKB_OPENAI_MODEL: a common vLLM-served coder

    # sessions (defaults of new sessions; each session stores its own)
    token_budget: int = 6000  # tokens of the knowledge part of each prompt (kb_server.prompt)
    iteration_token_budget: int = 3000  # tokens of parent code, diagnostics and failure summaries

    @property
    def sessions_dir(self) -> Path:
        return Path(self.home).expanduser() / "sessions"

    def default_provider(self) -> str:
        return "anthropic" if self.anthropic_api_key else "offline"


class SettingsError(ValueError):
    """A setting from the environment has a value its field refuses; the message names the variable."""


def load_settings(**overrides) -> ClientSettings:
    """ClientSettings from the environment (and non-None overrides), a bad value named in one line."""
    try:
        return ClientSettings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            field = str(error["loc"][0]) if error["loc"] else "?"
            info = ClientSettings.model_fields.get(field)
            alias = getattr(info, "validation_alias", None) if info else None
            names = [str(c) for c in getattr(alias, "choices", [])] or [f"KKB_{field.upper()}"]
            problems.append(f"{' or '.join(names)}={error.get('input')!r}: {error['msg']}")
        raise SettingsError("setting " + "; ".join(problems)) from None
