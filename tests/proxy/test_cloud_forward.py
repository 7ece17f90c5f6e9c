"""Claude on Vertex AI and on Bedrock through a real forward listener: the anthropic SDK's
AnthropicVertex and AnthropicBedrock clients name the clouds' regional hosts, gate decrypts
them and delivers to the loopback fake (`--upstream vertex=… bedrock=…`), screened.

Fake credentials only: a Vertex access token, a Bedrock API key (a bearer token, which
lets gate edit the body; a SigV4-signed body can only be sent whole or refused).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import anthropic
import pytest
from proxy.test_forward import forward_config, proxied, token

from fake_provider import FakeProvider
from gate.audit.store import AuditStore
from gate.config import parse_upstream
from gate.proxy.server import BackgroundGate, Listening


@pytest.fixture
def cloud(provider: FakeProvider, gate_dirs: dict[str, Path]) -> Iterator[Listening]:
    config = forward_config(provider, project=gate_dirs["project"]).with_upstreams(
        {n: parse_upstream(n, provider.url) for n in ("vertex", "bedrock")}
    )
    server = BackgroundGate(config, gate_dirs["data"])
    yield server.start()
    server.stop()


def _turn(project: Path, env_value: str, secret: str) -> list[dict[str, object]]:
    """The agent read .env (denied by the default rules) and pasted a token."""
    env = project / ".env"
    return [
        {"role": "user", "content": f"deploy with {secret}"},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": "Read",
                    "input": {"file_path": str(env)},
                }
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": f"     1\tDB_PASSWORD={env_value}\n",
                }
            ],
        },
    ]


def _client(name: str, gate: Listening, data: Path) -> anthropic.Anthropic:
    if name == "vertex":
        return anthropic.AnthropicVertex(  # type: ignore[return-value]
            region="europe-west4",
            project_id="fake-project",
            max_retries=0,
            access_token="ya29.fake-" + os.urandom(8).hex(),
            http_client=proxied(gate, data),
        )
    return anthropic.AnthropicBedrock(  # type: ignore[return-value]
        aws_region="eu-west-1",
        api_key="ABSK" + os.urandom(16).hex(),
        max_retries=0,
        http_client=proxied(gate, data),
    )


@pytest.mark.parametrize("cloud_name", ["vertex", "bedrock"])
def test_a_denied_value_is_withheld_on_the_cloud(
    cloud_name: str, cloud: Listening, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    project = gate_dirs["project"]
    env_value = "pw-" + os.urandom(12).hex()
    (project / ".env").write_text(f"DB_PASSWORD={env_value}\n")
    secret = token()
    model = (
        "claude-sonnet-4-5@20250929"
        if cloud_name == "vertex"
        else "anthropic.claude-sonnet-4-5-20250929-v1:0"
    )
    with _client(cloud_name, cloud, gate_dirs["data"]) as client:
        reply = client.messages.create(
            model=model,
            max_tokens=20,  # type: ignore[attr-defined]
            messages=_turn(project, env_value, secret),
        )
    assert reply.content
    [seen] = provider.seen
    # Each cloud's own path, as its SDK wrote it, reached the fake.
    if cloud_name == "vertex":
        assert seen.path == (
            "/v1/projects/fake-project/locations/europe-west4/publishers/"
            f"anthropic/models/{model}:rawPredict"
        ), seen.path
    else:
        assert seen.path == f"/model/{model}/invoke", seen.path
    assert env_value.encode() not in seen.body and secret.encode() not in seen.body
    assert b"Read(./.env)" in seen.body
    row = next(AuditStore(gate_dirs["data"] / "audit.db").rows(1))
    assert (row["upstream"], row["verdict"]) == (cloud_name, "modified")
    assert env_value not in str(row) and secret not in str(row)


@pytest.mark.parametrize("cloud_name", ["vertex", "bedrock"])
def test_an_unreadable_cloud_path_is_refused(
    cloud_name: str, cloud: Listening, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    """A model id with an encoded slash: the path has no single reading, so nothing is
    sent (the SDKs quote a model id; an agent can put anything there)."""
    project = gate_dirs["project"]
    env_value = "pw-" + os.urandom(12).hex()
    (project / ".env").write_text(f"DB_PASSWORD={env_value}\n")
    with (
        _client(cloud_name, cloud, gate_dirs["data"]) as client,
        pytest.raises(anthropic.APIStatusError) as err,
    ):
        client.messages.create(
            model="x/../../y",
            max_tokens=5,  # type: ignore[attr-defined]
            messages=_turn(project, env_value, token()),
        )
    assert err.value.status_code in (400, 403, 404), err.value
    assert all(env_value.encode() not in s.body for s in provider.seen)
