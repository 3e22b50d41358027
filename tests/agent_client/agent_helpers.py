"""Constants and settings shared by the agent client's tests (a plain module: several test folders
have a conftest.py, and `from conftest import` would pick whichever was imported first)."""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
SPEC = HERE / "specs" / "scaled_relu.py"

# Harness settings that keep one CPU evaluation to a few seconds (compile baseline skipped).
FAST_EVAL = {"trials": 1, "min_reps": 1, "max_reps": 2, "warmup": 0, "max_timing_s": 0.5}

def client_settings(home: Path, server_url: str | None = None, **overrides):
    from agent_client.config import ClientSettings

    fields = {"home": home, "anthropic_api_key": "test-key" if server_url else None,
              "anthropic_base_url": server_url, "sdk_max_retries": 0, "retry_base_delay_s": 0.01, **overrides}
    return ClientSettings(**fields)
