"""Providers registered by name: anthropic, openai, replay, offline.

Usage: provider = get_provider("anthropic", settings)   # or settings.default_provider()

Each entry imports its module lazily, so that a session using one provider needs none of the
others' SDKs (the offline provider needs no network library at all).
"""

from __future__ import annotations

import importlib
from typing import Any

from agent_client.proposals import Provider

__all__ = ["PROVIDERS", "get_provider"]

# name -> (module, factory function taking (settings, **options))
PROVIDERS: dict[str, tuple[str, str]] = {
    "anthropic": ("agent_client.providers.anthropic", "make_provider"),
    "openai": ("agent_client.providers.openai_compat", "make_provider"),
    "replay": ("agent_client.providers.replay", "make_provider"),
    "offline": ("agent_client.offline", "make_provider"),
}


def get_provider(name: str, settings: Any, **options: Any) -> Provider:
    """Build the provider called `name`; options are provider-specific (e.g. replay's `source`)."""
    if name not in PROVIDERS:
        raise ValueError(f"unknown provider {name!r}; choose one of {sorted(PROVIDERS)}")
    module_name, factory = PROVIDERS[name]
    module = importlib.import_module(module_name)
    make = getattr(module, factory, None)
    if make is None:  # accept a provider class with no required arguments (e.g. OfflineProvider)
        classes = [v for k, v in vars(module).items() if k.endswith("Provider") and isinstance(v, type)
                   and k != "Provider" and getattr(v, "propose", None)]
        if classes:
            return classes[0]()
        raise ValueError(f"provider module {module_name} has no {factory}(settings, **options)")
    return make(settings, **options)
