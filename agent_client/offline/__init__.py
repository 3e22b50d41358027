"""The offline provider: tuned, adapted library kernels without any model (see provider.py)."""

from agent_client.offline.provider import OfflineProvider, make_provider

__all__ = ["OfflineProvider", "make_provider"]
