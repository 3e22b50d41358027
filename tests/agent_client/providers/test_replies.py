"""A 200 reply that is not the API's, through the real SDKs against the fake server: a proxy's page, JSON cut
short, JSON of another API. Each is one line naming the URL and what came back, never a Python error."""

from __future__ import annotations

import pytest

from agent_client.proposals import EndpointError
from agent_client.providers import get_provider
from tests.agent_client.agent_helpers import client_settings
from tests.agent_client.fake_anthropic import Reply, text_with_code
from tests.agent_client.providers.test_failures import Sleeps, request

PROXY_PAGE = "<html><head><title>Sign in to Corp Proxy</title></head><body>...</body></html>"
# (provider, the settings' base URL field, the path it posts to, what a reply should be, the setting to check)
PROVIDERS = [
    ("anthropic", "anthropic_base_url", "", "/v1/messages", "a Messages API reply", "ANTHROPIC_BASE_URL"),
    ("openai", "openai_base_url", "/v1", "/v1/chat/completions", "a chat completion reply", "OPENAI_BASE_URL"),
]


def provider_for(name, field, suffix, server, tmp_path, **overrides):
    settings = client_settings(tmp_path, **{"anthropic_api_key": "a-key", field: server.url + suffix,
                                            "retry_base_delay_s": 0.01, **overrides})
    return get_provider(name, settings, sleep=Sleeps())


@pytest.mark.parametrize("name, field, suffix, path, expected, setting", PROVIDERS)
def test_a_proxy_page_names_the_url_and_its_content_type(fake_server, tmp_path, name, field, suffix, path,
                                                         expected, setting):
    server = fake_server([Reply(raw=PROXY_PAGE, content_type="text/html; charset=utf-8")])
    with pytest.raises(EndpointError) as raised:
        provider_for(name, field, suffix, server, tmp_path).propose(request([]))
    message = str(raised.value)
    assert f"the endpoint returned text/html, not {expected}" in message
    assert f"from {server.url}{path}" in message and "Sign in to Corp Proxy" in message  # enough to know it
    assert setting in message and "AttributeError" not in message and "\n" not in message
    assert len(server.requests) == 1  # a page is not retried: another try would get the same page


@pytest.mark.parametrize("name, field, suffix, path, expected, setting", PROVIDERS)
@pytest.mark.parametrize("reply, said", [
    (Reply(raw='{"id": "msg_1", "type": "mess'), "its JSON does not parse"),  # cut short, content-length kept
    (Reply(raw='{"id": "msg_1", "type": "mess', short_by=100), "cut short"),  # the connection closed mid-body
])
def test_a_reply_cut_short_is_malformed_not_a_network_problem(fake_server, tmp_path, name, field, suffix, path,
                                                              expected, setting, reply, said):
    server = fake_server([reply])
    with pytest.raises(EndpointError) as raised:
        provider_for(name, field, suffix, server, tmp_path, retry_attempts=1).propose(request([]))
    message = str(raised.value)
    assert "malformed" in message and said in message and f"{server.url}" in message
    assert "check the network" not in message and "cannot reach" not in message
    assert setting in message and "gave up after 2 tries" in message  # another try may get it whole
    assert len(server.requests) == 2


def test_a_reply_cut_short_once_is_retried_into_a_proposal(fake_server, tmp_path):
    server = fake_server([Reply(raw='{"id": "msg_1", "type": "mess'), text_with_code("class ModelNew: pass")])
    notices: list[str] = []
    [proposal] = provider_for("anthropic", "anthropic_base_url", "", server, tmp_path).propose(request(notices))
    assert "class ModelNew" in proposal.code
    [notice] = notices
    assert "malformed" in notice and "retrying for up to" in notice


@pytest.mark.parametrize("name, field, suffix, path, expected, setting", PROVIDERS)
def test_json_of_another_api_is_named(fake_server, tmp_path, name, field, suffix, path, expected, setting):
    server = fake_server([Reply(raw='{"status": "ok"}')])  # a health check answering every path
    with pytest.raises(EndpointError, match=f"the reply is JSON but not {expected}"):
        provider_for(name, field, suffix, server, tmp_path).propose(request([]))
