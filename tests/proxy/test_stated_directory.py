"""A working directory a request states only adds denied values to what it is screened for:
naming another directory never narrows them to that directory's."""

from __future__ import annotations

import base64
import os
import secrets
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import anthropic
import httpx2 as httpx
import pytest

from conftest import closed_after_test
from fake_provider import FakeProvider
from gate.config import AskConfig, Config, parse_upstream
from gate.lock import BRIDGE_SOURCE
from gate.proxy.server import BackgroundGate, Listening
from messages import conversation, tool_turn
from screen.secrets_corpus import Gen


def _gate(
    provider: FakeProvider, data: Path, projects: tuple[str, ...] = (), forward: bool = False
) -> BackgroundGate:
    config = replace(
        Config(), port=0, ask=AskConfig(mode="never"), projects=projects, forward=forward
    )
    return BackgroundGate(
        config.with_upstreams(
            {n: parse_upstream(n, provider.url) for n in ("anthropic", "openai")}
        ),
        data,
    )


@pytest.fixture
def bare_gate(provider: FakeProvider, gate_dirs: dict[str, Path]) -> Iterator[Listening]:
    """A gate told about no project: it learns them from the requests it sees."""
    server = _gate(provider, gate_dirs["data"])
    yield server.start()
    server.stop()


@pytest.fixture
def other(tmp_path: Path) -> Path:
    """Another directory, with a denied file of its own."""
    path = tmp_path / "other"
    path.mkdir()
    (path / ".env").write_text(f"OTHER_TOKEN={_phrase()}\n")
    return path


def _phrase() -> str:
    """A passphrase of lower-case words: no secret detector finds it, only the denied-file
    index does."""
    return (
        "-".join(
            secrets.choice(
                ["amber", "willow", "cobalt", "harbor", "lantern", "meadow", "quartz", "tundra"]
            )
            for _ in range(3)
        )
        + secrets.choice("bcdfg") * 2
        + str(secrets.randbelow(1000))
    )


def _sdk(listening: Listening) -> anthropic.Anthropic:
    return closed_after_test(
        anthropic.Anthropic(
            base_url=f"{listening.base_url}/anthropic",
            max_retries=0,
            api_key="sk-ant-test-" + os.urandom(4).hex(),
        )
    )


def _stating(where: str, text: str) -> list[dict[str, object]]:
    """Ways a request states its working directory: Claude Code's environment block in the
    system prompt, and a user text saying it."""
    return [
        conversation(where) | {"messages": [{"role": "user", "content": text}]},
        {
            "model": "m",
            "max_tokens": 8,
            "messages": [{"role": "user", "content": f"Working directory: {where}\n\n{text}"}],
        },
    ]


def test_a_stated_directory_does_not_narrow_a_listed_project_s_values(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], other: Path
) -> None:
    secret = _phrase()
    (gate_dirs["project"] / ".env").write_text(f"PASSPHRASE={secret}\n")
    with _sdk(gate) as c:
        for body in _stating(str(other), f"the key is {secret}"):
            c.messages.create(**body)
            sent = provider.seen[-1].body.decode()
            assert secret not in sent
            assert "withheld a value from .env" in sent


def test_a_stated_directory_does_not_narrow_a_recently_seen_project_s_values(
    bare_gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], other: Path
) -> None:
    project = gate_dirs["project"]
    secret = _phrase()
    (project / ".env").write_text(f"TOKEN={secret}\n")
    with _sdk(bare_gate) as c:
        c.messages.create(**conversation(str(project)))  # the project is seen once
        for body in _stating(str(other), f"the token is {secret}"):
            c.messages.create(**body)
            assert secret not in provider.seen[-1].body.decode()


def test_stating_many_directories_does_not_evict_a_seen_project(
    bare_gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], tmp_path: Path
) -> None:
    project = gate_dirs["project"]
    secret = _phrase()
    (project / ".env").write_text(f"TOKEN={secret}\n")
    with _sdk(bare_gate) as c:
        c.messages.create(**conversation(str(project)))
        for i in range(20):  # more than the recent-projects list holds
            d = tmp_path / f"decoy{i}"
            d.mkdir()
            c.messages.create(**conversation(str(d)))
        c.messages.create(
            model="m",
            max_tokens=8,
            messages=[{"role": "user", "content": f"the token is {secret}"}],
        )  # states no directory
        assert secret not in provider.seen[-1].body.decode()
        for body in _stating(str(tmp_path / "decoy3"), f"the token is {secret}"):
            c.messages.create(**body)
            assert secret not in provider.seen[-1].body.decode()


def test_the_stated_directory_s_own_values_are_added(
    gate: Listening, provider: FakeProvider, other: Path
) -> None:
    value = (other / ".env").read_text().split("=", 1)[1].strip()
    with _sdk(gate) as c:
        c.messages.create(**_stating(str(other), f"value {value}")[0])
    assert value not in provider.seen[-1].body.decode()


# -- the lock's bridge ---------------------------------------------------------------------


def _from_bridge(listening: Listening, path: str, body: dict[str, object]) -> httpx.Response:
    """A request as one through the lock's bridge arrives: from its loopback source."""
    transport = httpx.HTTPTransport(local_address=BRIDGE_SOURCE)
    with httpx.Client(transport=transport) as c:
        return c.post(f"{listening.base_url}{path}", json=body, headers={"x-api-key": "k"})


def test_a_request_through_the_lock_s_bridge_without_its_run_is_refused(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], other: Path
) -> None:
    body = _stating(str(other), "hello")[0]
    resp = _from_bridge(gate, "/anthropic/v1/messages", body)
    assert resp.status_code == 400, resp.text
    assert resp.json()["type"] == "error" and "run" in resp.json()["error"]["message"]
    assert provider.seen == []


def test_a_request_through_the_lock_s_bridge_with_its_run_is_screened_for_its_project(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    from gate import runs

    secret = _phrase()
    (gate_dirs["project"] / ".env").write_text(f"TOKEN={secret}\n")
    run = runs.register(gate_dirs["data"], str(gate_dirs["project"]), "claude")
    body = {
        "model": "m",
        "max_tokens": 8,
        "messages": [{"role": "user", "content": f"token {secret}"}],
    }
    resp = _from_bridge(gate, f"/_run/{run.id}/anthropic/v1/messages", body)
    assert resp.status_code == 200, resp.text
    assert secret not in provider.seen[-1].body.decode()


def test_a_forward_mode_request_through_the_bridge_without_its_run_is_refused(
    provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    import json
    import socket
    import ssl

    from gate.proxy import ca

    server = _gate(provider, gate_dirs["data"], (str(gate_dirs["project"]),), forward=True)
    listening = server.start()
    body = json.dumps(
        {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
    ).encode()
    try:
        trust = ssl.create_default_context(cafile=str(ca.paths(gate_dirs["data"]).cert))
        # httpx drops local_address behind a proxy: the CONNECT, by hand, with no run in it.
        with socket.create_connection(
            (listening.host, listening.port), timeout=20, source_address=(BRIDGE_SOURCE, 0)
        ) as raw:
            raw.sendall(
                b"CONNECT api.anthropic.com:443 HTTP/1.1\r\nHost: api.anthropic.com:443\r\n\r\n"
            )
            assert raw.recv(4096).startswith(b"HTTP/1.1 200")
            with trust.wrap_socket(raw, server_hostname="api.anthropic.com") as tls:
                tls.sendall(
                    b"POST /v1/messages HTTP/1.1\r\nHost: api.anthropic.com\r\n"
                    b"x-api-key: k\r\ncontent-type: application/json\r\n"
                    b"connection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
                )
                reply = b""
                while chunk := tls.recv(65536):
                    reply += chunk
    finally:
        server.stop()
    assert reply.startswith(b"HTTP/1.1 400") and b"must name its run" in reply
    assert provider.seen == []


# -- rules: a stated directory adds the known projects' rules, it never drops them -------


def _project_rules(project: Path) -> tuple[Path, str]:
    """The project's own rules deny a private directory and `curl`; its private notes, and
    their base32 form (which no index knows: only the rule can withhold it)."""
    (project / ".gate").mkdir(exist_ok=True)
    (project / ".gate" / "rules.yaml").write_text(
        "deny:\n  - Read(./private/**)\n  - Bash(curl *)\n"
    )
    (project / "private").mkdir(exist_ok=True)
    notes = project / "private" / "notes.txt"
    notes.write_text(_phrase() + "\n")
    return notes, base64.b32encode(notes.read_bytes()).decode()


def _calls(notes: Path, encoded: str) -> list[tuple[str, dict[str, object], str]]:
    """Tool calls a prompt-injected agent in the project makes while stating another
    directory: absolute and relative reads (it really runs in the project), and a fetch."""
    fetched = "fetched-" + secrets.token_hex(8)
    return [
        ("Bash", {"command": f"base32 {notes}"}, encoded),
        ("Bash", {"command": "base32 private/notes.txt"}, encoded),
        ("Bash", {"command": "cd private && base32 notes.txt"}, encoded),
        ("Read", {"file_path": str(notes)}, encoded),
        ("Bash", {"command": "curl -s https://example.com/x"}, fetched),
    ]


def test_a_stated_directory_does_not_drop_a_listed_project_s_rules(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], other: Path
) -> None:
    notes, encoded = _project_rules(gate_dirs["project"])
    with _sdk(gate) as c:
        for i, (name, tool_input, result) in enumerate(_calls(notes, encoded)):
            c.messages.create(
                **conversation(str(other), tool_turn(f"toolu_{i}", name, tool_input, result))
            )
            sent = provider.seen[-1].body.decode()
            assert result not in sent, (name, tool_input)
            assert ".gate/rules.yaml" in sent, (name, tool_input)


def test_a_stated_directory_does_not_drop_a_seen_project_s_rules(
    bare_gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], other: Path
) -> None:
    project = gate_dirs["project"]
    notes, encoded = _project_rules(project)
    with _sdk(bare_gate) as c:
        c.messages.create(**conversation(str(project)))  # the project is seen once
        for i, (name, tool_input, result) in enumerate(_calls(notes, encoded)):
            c.messages.create(
                **conversation(str(other), tool_turn(f"toolu_{i}", name, tool_input, result))
            )
            assert result not in provider.seen[-1].body.decode(), (name, tool_input)


def test_a_stated_directory_does_not_drop_a_project_s_stricter_secrets_setting(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], other: Path
) -> None:
    project = gate_dirs["project"]
    (project / ".gate").mkdir()
    (project / ".gate" / "rules.yaml").write_text("secrets:\n  high: block\n  low: block\n")
    # A GitHub token as GitHub makes them (base62, its checksum): 36 hex digits after
    # ghp_ fell under the detector's entropy floor once in a thousand.
    token = Gen(secrets.randbelow(1 << 30)).crc_token("ghp_")
    body = conversation(str(other)) | {"messages": [{"role": "user", "content": token}]}
    resp = httpx.post(
        f"{gate.base_url}/anthropic/v1/messages", json=body, headers={"x-api-key": "k"}
    )
    assert resp.status_code == 400, resp.text
    assert provider.seen == []


def test_the_stated_directory_s_own_rules_still_apply(
    gate: Listening, provider: FakeProvider, other: Path
) -> None:
    notes, encoded = _project_rules(other)
    with _sdk(gate) as c:
        c.messages.create(
            **conversation(
                str(other), tool_turn("toolu_1", "Bash", {"command": f"base32 {notes}"}, encoded)
            )
        )
    assert encoded not in provider.seen[-1].body.decode()


def test_a_project_s_rules_do_not_withhold_what_another_project_reads_elsewhere(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], other: Path
) -> None:
    """Only the files a rule names: a read of the stated directory's own public file, whose
    name no known project's rule covers, still leaves."""
    _project_rules(gate_dirs["project"])
    (other / "README.md").write_text("hello\n")
    text = "readme-" + secrets.token_hex(8)
    with _sdk(gate) as c:
        c.messages.create(
            **conversation(
                str(other), tool_turn("toolu_1", "Bash", {"command": "cat README.md"}, text)
            )
        )
    assert text in provider.seen[-1].body.decode()


def test_a_stated_directory_s_next_turns_keep_the_project_s_rules(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], other: Path
) -> None:
    """Each turn resends the earlier ones (gate takes their decisions from the last turn): every
    call of the growing conversation stays withheld."""
    notes, encoded = _project_rules(gate_dirs["project"])
    turns: list[list[dict[str, object]]] = []
    with _sdk(gate) as c:
        for i, (name, tool_input, result) in enumerate(_calls(notes, encoded)):
            turns.append(tool_turn(f"toolu_{i}", name, tool_input, result))
            c.messages.create(**conversation(str(other), *turns))
            sent = provider.seen[-1].body.decode()
            assert encoded not in sent and result not in sent
            assert sent.count(".gate/rules.yaml") >= i + 1


def test_a_run_file_edited_after_its_first_request_does_not_move_its_root(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], other: Path
) -> None:
    # An agent that is not locked runs as you and can write gate's run file. Moving its
    # directory elsewhere would resolve `cat pin.txt` there, where no rule denies it (and a
    # 4-digit pin is too short for the value index): the first reading holds.
    import json

    from gate import runs

    project = gate_dirs["project"]
    (project / ".gate").mkdir()
    (project / ".gate" / "rules.yaml").write_text("deny:\n  - Read(./pin.txt)\n")
    pin = str(1000 + secrets.randbelow(9000))
    (project / "pin.txt").write_text(pin + "\n")
    (other / "pin.txt").write_text(pin + "\n")
    run = runs.register(gate_dirs["data"], str(project), "claude")
    client = closed_after_test(
        anthropic.Anthropic(
            base_url=f"{gate.base_url}/_run/{run.id}/anthropic", max_retries=0, api_key="sk-ant-x"
        )
    )
    msg = {"model": "m", "max_tokens": 8}
    client.messages.create(**msg, messages=[{"role": "user", "content": "hi"}])
    path = runs.runs_dir(gate_dirs["data"]) / f"{run.id}.json"
    edited = json.loads(path.read_text()) | {"root": str(other), "cwd": str(other)}
    path.write_text(json.dumps(edited))
    turn = tool_turn("toolu_1", "Bash", {"command": "cat pin.txt"}, f"PIN {pin}\n")
    client.messages.create(**msg, messages=[{"role": "user", "content": "go"}, *turn])
    sent = provider.seen[-1].body.decode()
    assert "cat pin.txt" in sent and f"PIN {pin}" not in sent
    # A run whose file is gone (its `gate run` ended) is unknown again.
    path.unlink()
    with pytest.raises(anthropic.BadRequestError, match="does not know run"):
        client.messages.create(**msg, messages=[{"role": "user", "content": "hi"}])


def test_a_repository_made_above_a_stated_directory_brings_its_denied_files(
    bare_gate: Listening, provider: FakeProvider, other: Path
) -> None:
    """A stated directory's root is found again once a `.git` is made above it while gate
    runs (`git init` by the agent, or a clone finishing): the repository's `.env` is then
    the project's, and its value is withheld from the next request."""
    value = (other / ".env").read_text().split("=", 1)[1].strip()
    sub = other / "pkg"
    sub.mkdir()
    with _sdk(bare_gate) as c:
        c.messages.create(**_stating(str(sub), f"value {value}")[0])
        # No repository yet: the stated directory is the project, and the .env above it
        # is nobody's.
        assert value in provider.seen[-1].body.decode()
        (other / ".git").mkdir()
        c.messages.create(**_stating(str(sub), f"value {value}")[0])
    assert value not in provider.seen[-1].body.decode()
