"""Model providers as a newcomer meets them failing: no key, no network (a closed local port), a refused
key, a rate limit that does not end. Each is one line naming what to check, after a stated, bounded wait."""

from __future__ import annotations

import socket

import pytest

from agent_client.proposals import EndpointError, ProposalRequest
from agent_client.providers import get_provider
from tests.agent_client.agent_helpers import SPEC, client_settings
from tests.agent_client.fake_anthropic import Reply


def closed_port_url() -> str:
    """A loopback address where nothing listens: connections are refused, as with no network."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def request(notices: list[str]) -> ProposalRequest:
    return ProposalRequest(spec_path=SPEC, spec_source=SPEC.read_text(), backend="triton", accelerator="h200",
                           prompt="write it", parent=None, n=1, kb=None, system="be fast", notify=notices.append)


class Sleeps(list):
    """Records each wait instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.mark.parametrize("provider, setting", [
    ("anthropic", "ANTHROPIC_API_KEY"),  # no key, no base URL
    ("openai", "OPENAI_BASE_URL"),  # no base URL
])
def test_a_provider_without_its_setting_names_it(tmp_path, provider, setting):
    settings = client_settings(tmp_path, anthropic_api_key=None, anthropic_base_url=None, openai_base_url=None)
    with pytest.raises(EndpointError, match=setting) as raised:
        get_provider(provider, settings)
    assert "\n" not in str(raised.value)


@pytest.mark.parametrize("provider, base_url, hint", [
    ("anthropic", "anthropic_base_url", "check the network and --base-url (ANTHROPIC_BASE_URL)"),
    ("openai", "openai_base_url", "check that the server at --base-url"),
])
def test_no_network_is_retried_for_the_stated_wait_then_named(tmp_path, provider, base_url, hint):
    url = closed_port_url()
    settings = client_settings(tmp_path, **{"anthropic_api_key": "a-key", base_url: url + "/v1" * (
        provider == "openai"), "provider_retry_s": 5.0, "retry_base_delay_s": 1.0})
    sleeps, notices = Sleeps(), []
    with pytest.raises(EndpointError) as raised:
        get_provider(provider, settings, sleep=sleeps).propose(request(notices))
    message = str(raised.value)
    assert f"cannot reach {url}" in message and hint in message
    assert "gave up after 4 tries and 5 s of waiting (KKB_PROVIDER_RETRY_S=5)" in message  # waits 1, 2, then 2 left
    assert sleeps == [1.0, 2.0, 2.0] and sum(sleeps) == settings.provider_retry_s
    [notice] = notices  # said once, when the retries start
    assert f"cannot reach {url}" in notice and "retrying for up to 5 s in all (KKB_PROVIDER_RETRY_S)" in notice


def test_a_refused_key_fails_at_once(fake_server, tmp_path):
    server = fake_server([Reply(status=401)])
    sleeps, notices = Sleeps(), []
    with pytest.raises(EndpointError, match=r"refused the API key \(HTTP 401.*\); check ANTHROPIC_API_KEY"):
        get_provider("anthropic", client_settings(tmp_path, server.url), sleep=sleeps).propose(request(notices))
    assert len(server.requests) == 1 and sleeps == [] and notices == []


def test_an_unknown_model_names_the_model_setting(fake_server, tmp_path):
    server = fake_server([Reply(status=404)])
    with pytest.raises(EndpointError, match="KKB_ANTHROPIC_MODEL"):
        get_provider("anthropic", client_settings(tmp_path, server.url), model="claude-nope").propose(request([]))


def test_a_rate_limit_that_does_not_end_stops_within_the_wait(fake_server, tmp_path):
    server = fake_server([Reply(status=429)])
    settings = client_settings(tmp_path, server.url, provider_retry_s=3.0, retry_base_delay_s=1.0)
    sleeps, notices = Sleeps(), []
    with pytest.raises(EndpointError, match=r"rate limited \(HTTP 429.*gave up after 3 tries"):
        get_provider("anthropic", settings, sleep=sleeps).propose(request(notices))
    assert sleeps == [1.0, 2.0] and len(server.requests) == 3 and len(notices) == 1


@pytest.mark.parametrize("provider, base_url, suffix, path", [
    ("anthropic", "anthropic_base_url", "", "/v1/messages"),
    ("openai", "openai_base_url", "/v1", "/v1/chat/completions"),
])
def test_an_endpoint_that_never_answers_is_said_while_waiting_then_named(fake_server, tmp_path, provider, base_url,
                                                                         suffix, path):
    server = fake_server([Reply(text="too late", delay_s=3.0)])
    settings = client_settings(tmp_path, **{"anthropic_api_key": "a-key", base_url: server.url + suffix,
                                            "provider_timeout_s": 1.0, "retry_attempts": 5})
    sleeps, notices = Sleeps(), []
    with pytest.raises(EndpointError) as raised:
        get_provider(provider, settings, sleep=sleeps).propose(request(notices))
    message = str(raised.value)
    assert f"no answer from {server.url}{path} within 1 s (KKB_PROVIDER_TIMEOUT_S=1)" in message
    # a timed-out try is a failed try, and two of them end it whatever tries are left: each costs a timeout
    assert "gave up after 2 tries with no answer" in message and len(server.requests) == 2
    waiting = [n for n in notices if n.startswith("waiting for the model at ")]
    assert len(waiting) == 1 and f"at {server.url}{suffix} (" in waiting[0]  # said once, before the first timeout
    assert notices.index(waiting[0]) == 0


def test_the_request_timeout_is_a_setting_the_sdk_clients_get(tmp_path, monkeypatch):
    from agent_client.config import load_settings

    assert load_settings(home=tmp_path).provider_timeout_s == 300.0  # a long kernel from a slow model fits
    monkeypatch.setenv("KKB_PROVIDER_TIMEOUT_S", "42")
    settings = load_settings(home=tmp_path, anthropic_api_key="a-key", openai_base_url="http://127.0.0.1:9/v1")
    for name in ("anthropic", "openai"):
        assert get_provider(name, settings).client.timeout == 42.0
