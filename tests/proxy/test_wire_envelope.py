"""What a request carries besides its body (path segments, the query, headers): a denied
file's value or a likely secret there is refused, never sent or stored in clear; what every
SDK and agent sends there legitimately passes."""

from __future__ import annotations

import base64
import json
import os
import random
import secrets
import string
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from urllib.parse import quote

import anthropic
import httpx2 as httpx
import openai
import pytest

from fake_provider import FakeProvider
from gate.audit.store import AuditStore
from gate.config import AskConfig, Config, parse_upstream
from gate.proxy.server import BackgroundGate, Listening
from screen.secrets_corpus import Gen

NAMES = ("anthropic", "openai", "gemini")


@pytest.fixture
def gate(provider: FakeProvider, gate_dirs: dict[str, Path]) -> Iterator[Listening]:
    """A gate whose anthropic, openai and gemini upstreams are the fake provider."""
    config = replace(
        Config(), port=0, ask=AskConfig(mode="never"), projects=(str(gate_dirs["project"]),)
    )
    server = BackgroundGate(
        config.with_upstreams({n: parse_upstream(n, provider.url) for n in NAMES}),
        gate_dirs["data"],
    )
    yield server.start()
    server.stop()


@pytest.fixture
def phrase(gate_dirs: dict[str, Path]) -> str:
    """A denied file's value no secret detector finds (only the denied-file index does),
    beside a word-like value an SDK header also holds."""
    value = "-".join(
        secrets.choice(["amber", "willow", "cobalt", "harbor", "lantern"]) for _ in range(3)
    ) + str(secrets.randbelow(10**6))
    (gate_dirs["project"] / ".env").write_text(f"PASSPHRASE={value}\nRUNTIME=python\n")
    return value


def token() -> str:
    """A GitHub token that passes its checksum (a high-tier finding), made at run time."""
    return Gen(random.SystemRandom().randrange(1 << 30)).crc_token("ghp_")


def _rows(gate_dirs: dict[str, Path]) -> list[dict[str, object]]:
    return list(AuditStore(gate_dirs["data"] / "audit.db").rows(50))


def _body(path: str) -> dict[str, object]:
    if "generateContent" in path or path.startswith("/gemini"):
        return {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    return {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}


def _refused(
    gate: Listening,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    value: str,
    path: str,
    headers: list[tuple[str, str]] | None = None,
    method: str = "POST",
) -> None:
    before = len(provider.seen)
    resp = httpx.request(
        method,
        f"{gate.base_url}{path}",
        headers=[("x-api-key", "k"), *(headers or [])],
        json=_body(path) if method == "POST" else None,
    )
    assert resp.status_code == 400, (path, headers, resp.text)
    assert "error" in resp.json() and value not in resp.text
    assert len(provider.seen) == before  # nothing left
    stored = json.dumps(_rows(gate_dirs), default=str)
    assert value not in stored and quote(value, safe="") not in stored


# -- path segments -------------------------------------------------------------------------


def _encodings(value: str) -> list[str]:
    raw = value.encode()
    b64 = base64.b64encode(b"x" + raw).decode()
    return [
        value,
        quote(quote(value, safe=""), safe=""),  # percent-encoded twice
        "".join(f"%{b:02X}" for b in raw),  # every character escaped
        raw.hex(),
        raw.hex().upper(),
        base64.urlsafe_b64encode(b"id:" + raw).decode().rstrip("="),
        b64.replace("/", "_").replace("+", "-").rstrip("="),
    ]


@pytest.mark.parametrize(
    "where",
    [
        "/anthropic/v1/messages/batches/{}",
        "/anthropic/v1/messages/batches/msgbatch_{}/results",
        "/openai/v1/files/{}/content",
        "/openai/v1/responses/resp_{}",
        "/gemini/v1beta/models/{}:generateContent",
        "/gemini/v1beta/cachedContents/x{}x",
    ],
)
def test_a_path_segment_holding_a_denied_value_is_refused(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], phrase: str, where: str
) -> None:
    for encoded in _encodings(phrase):
        _refused(gate, provider, gate_dirs, phrase, where.format(encoded))
    _refused(gate, provider, gate_dirs, phrase, where.format(phrase), method="GET")


def test_a_path_segment_holding_a_likely_secret_is_refused(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    value = token()
    for path in (
        f"/anthropic/v1/files/{value}",
        f"/openai/v1/x/{quote(value, safe='')}/y",
        f"/gemini/v1beta/models/g:{value}",
    ):
        _refused(gate, provider, gate_dirs, value, path)
    assert all(r["path"] and "[withheld]" in str(r["path"]) for r in _rows(gate_dirs))


LEGITIMATE_PATHS = [
    "/anthropic/v1/messages/batches/msgbatch_01HkcTjaV5uDC8jWR4ZsDV8d",
    "/anthropic/v1/messages/batches/msgbatch_01HkcTjaV5uDC8jWR4ZsDV8d/results",
    "/anthropic/v1/files/file_011CNha8iCJcU1wXNR6q4V8w",
    "/anthropic/v1/files/file_011CNha8iCJcU1wXNR6q4V8w/content",
    "/anthropic/v1/models/claude-sonnet-4-5-20250929",
    "/anthropic/v1/messages/count_tokens",
    "/openai/v1/responses/resp_68af4030592c81938ec0a5fbab4a3e9f05438e46b5f69a3b",
    "/openai/v1/responses/resp_68af4030592c81938ec0a5fbab4a3e9f05438e46b5f69a3b/input_items",
    "/openai/v1/files/file-AbC123XyZ789LmN456OpQ0",
    "/openai/v1/batches/batch_67a1b2c3d4e5f60718293a4b",
    "/openai/v1/threads/thread_abc123XYZ/runs/run_abc123XYZ/submit_tool_outputs",
    "/openai/v1/chat/completions/chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT",
    "/openai/v1/assistants/asst_abc123XYZ456",
    "/openai/v1/vector_stores/vs_abc123XYZ456/files/file-AbC123",
    "/openai/v1/fine_tuning/jobs/ftjob-abc123XYZ456",
    "/openai/v1/models/gpt-4o-2024-08-06",
    "/openai/v1/conversations/conv_689667905b048191b4740501625afd940c7533ace33a2dab",
    "/gemini/v1beta/models/gemini-2.5-pro:generateContent",
    "/gemini/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
    "/gemini/v1beta/cachedContents/4h5j6k7l8m9n0p1q2r3s",
    "/gemini/v1beta/files/abc-123xyz:download",
    "/gemini/v1/projects/my-project-123456/locations/us-central1/publishers/google/models/"
    "gemini-2.0-flash-001:streamGenerateContent",
    "/anthropic/model/anthropic.claude-3-5-sonnet-20241022-v2:0/invoke",
    "/anthropic/model/us.anthropic.claude-sonnet-4-20250514-v1:0/converse-stream",
]


def test_provider_ids_models_and_methods_in_the_path_pass(
    gate: Listening, provider: FakeProvider, phrase: str
) -> None:
    for path in LEGITIMATE_PATHS:
        for method in ("GET", "POST"):
            resp = httpx.request(
                method,
                f"{gate.base_url}{path}",
                headers={"x-api-key": "k"},
                json=_body(path) if method == "POST" else None,
            )
            assert resp.status_code == 200, (method, path, resp.text)
            assert provider.seen[-1].path == "/" + path.split("/", 2)[2]


# -- headers -------------------------------------------------------------------------------


def test_a_header_holding_a_denied_value_or_a_secret_is_refused(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], phrase: str
) -> None:
    half = len(phrase) // 2
    b64 = base64.b64encode(phrase.encode()).decode()
    cases: list[list[tuple[str, str]]] = [
        [("x-note", phrase)],
        [("X-Note", f"prefix {phrase} suffix")],
        [("user-agent", f"agent/{phrase}")],
        [("x-note", "fine"), ("x-note", phrase)],  # a repeated header
        [("x-a", phrase[:half]), ("x-b", phrase[half:])],  # split across two
        [("x-note", quote(quote(phrase, safe=""), safe=""))],  # percent-encoded twice
        [("x-note", b64)],
        [("x-note", phrase.encode().hex().upper())],
        [("cookie", f"session=abc; note={phrase}")],
        [("x-stainless-lang", phrase)],
        [("anthropic-beta", f"tools-2024,{phrase}")],
        [(f"x-{phrase}", "1")],  # in the name
    ]
    for headers in cases:
        _refused(gate, provider, gate_dirs, phrase, "/anthropic/v1/messages", headers)
    value = token()
    for headers in (
        [("x-note", value)],
        [("x-api-key", "k2"), ("x-trace", f"t={value}")],
        [("openai-organization", value)],
    ):
        _refused(gate, provider, gate_dirs, value, "/openai/v1/chat/completions", headers)


def test_a_repeated_auth_header_is_refused(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    value = token()
    _refused(
        gate, provider, gate_dirs, value, "/anthropic/v1/messages", [("x-api-key", value)]
    )  # a second x-api-key (the helper sends the first)
    _refused(
        gate,
        provider,
        gate_dirs,
        value,
        "/openai/v1/chat/completions",
        [("authorization", "Bearer a"), ("authorization", f"Bearer {value}")],
    )


def _agent_headers() -> dict[str, str]:
    """Headers the agents add beyond their SDK's (Claude Code, Codex, Gemini CLI, Copilot,
    Bedrock and Vertex clients, tracing)."""
    hexes = os.urandom(32).hex()
    return {
        "anthropic-beta": "claude-code-20250219,oauth-2025-04-20,interleaved-thinking-2025-05-14",
        "anthropic-dangerous-direct-browser-access": "true",
        "x-app": "cli",
        "x-claude-code-session-id": str(uuid.uuid4()),
        "chatgpt-account-id": str(uuid.uuid4()),
        "originator": "codex_cli_rs",
        "session_id": str(uuid.uuid4()),
        "openai-beta": "responses=experimental",
        "version": "0.46.0",
        "conversation_id": str(uuid.uuid4()),
        "x-goog-api-client": "gl-node/22.17.0 gdcl/1.30.0",
        "x-goog-user-project": "my-proj-1",
        "x-amz-date": "20251201T120000Z",
        "x-amz-content-sha256": hexes,
        "x-amz-security-token": "IQoJb3JpZ2luX2VjE" + base64.b64encode(os.urandom(300)).decode(),
        "vscode-machineid": os.urandom(32).hex(),
        "vscode-sessionid": str(uuid.uuid4()),
        "copilot-integration-id": "vscode-chat",
        "editor-version": "vscode/1.99.0",
        "editor-plugin-version": "copilot-chat/0.26.0",
        "openai-intent": "conversation-panel",
        "x-github-api-version": "2025-04-01",
        "x-initiator": "user",
        "x-request-id": str(uuid.uuid4()),
        "traceparent": f"00-{os.urandom(16).hex()}-{os.urandom(8).hex()}-01",
        "openai-organization": "org-AbC123xYz456",
        "openai-project": "proj_AbC123xYz456",
        "cookie": "__cf_bm="
        + base64.urlsafe_b64encode(os.urandom(32)).decode().rstrip("=")
        + "-1764590000-1.0.1.1-"
        + base64.b64encode(os.urandom(60)).decode(),
        "http-referer": "https://github.com/paul-gauthier/aider",
        "x-title": "Aider",
    }


def test_what_sdks_and_agents_send_in_headers_passes(
    gate: Listening, provider: FakeProvider, phrase: str
) -> None:
    oauth = "sk-ant-oat01-" + base64.urlsafe_b64encode(os.urandom(60)).decode().rstrip("=")
    for auth in ({"auth_token": oauth}, {"api_key": "sk-ant-api03-" + os.urandom(40).hex()}):
        with anthropic.Anthropic(
            base_url=f"{gate.base_url}/anthropic",
            max_retries=0,
            default_headers=_agent_headers(),
            **auth,
        ) as c:
            c.messages.create(model="m", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
            with c.messages.stream(
                model="m", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
            ) as s:
                s.until_done()
        if "auth_token" in auth:
            assert provider.seen[-1].headers["authorization"] == f"Bearer {oauth}"
    assert provider.seen[-1].headers["x-stainless-lang"] == "python"
    with openai.OpenAI(
        base_url=f"{gate.base_url}/openai/v1",
        max_retries=0,
        api_key="sk-proj-" + os.urandom(40).hex(),
        default_headers=_agent_headers(),
    ) as o:
        o.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        o.responses.create(model="m", input="hi")
    resp = httpx.post(
        f"{gate.base_url}/gemini/v1beta/models/g:generateContent",
        headers={
            "x-goog-api-key": "AIza" + os.urandom(16).hex()[:35],
            "user-agent": "GeminiCLI/0.9.0 (linux; x64)",
            **_agent_headers(),
        },
        json=_body("/gemini"),
    )
    assert resp.status_code == 200, resp.text


# -- the query's key= ------------------------------------------------------------------------


def _google_key() -> str:
    return "AIza" + base64.urlsafe_b64encode(os.urandom(27)).decode()[:35]


def test_the_first_key_on_a_google_upstream_is_its_api_key(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    key = _google_key()
    resp = httpx.post(
        f"{gate.base_url}/gemini/v1beta/models/g:generateContent?key={key}", json=_body("/gemini")
    )
    assert resp.status_code == 200 and key in provider.seen[-1].path
    assert _rows(gate_dirs)[0]["path"] == "/v1beta/models/g:generateContent?key=***"


def test_a_second_key_or_a_key_on_another_upstream_is_screened(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], phrase: str
) -> None:
    key = _google_key()
    path = "/gemini/v1beta/models/g:generateContent"
    second = token()
    for value, query in (
        (phrase, f"?key={_google_key()}&key={phrase}"),
        (second, f"?key={_google_key()}&key={second}"),
        (phrase, f"?alt=sse&key={_google_key()}&key={quote(phrase, safe='')}"),
        (second, f"?key={_google_key()}&kEy={second}"),
    ):
        _refused(gate, provider, gate_dirs, value, path + query)
    for path in ("/anthropic/v1/messages", "/openai/v1/chat/completions"):
        _refused(gate, provider, gate_dirs, key, f"{path}?key={key}")
        _refused(gate, provider, gate_dirs, phrase, f"{path}?key={phrase}")


# -- another provider's credential header (review F3) -------------------------------------


@pytest.mark.parametrize(
    ("path", "header"),
    [
        ("/anthropic/v1/messages", "x-goog-api-key"),
        ("/anthropic/v1/messages", "api-key"),
        ("/anthropic/v1/messages", "X-Amz-Security-Token"),
        ("/openai/v1/chat/completions", "x-goog-api-key"),
        ("/openai/v1/chat/completions", "api-key"),
        ("/gemini/v1beta/models/g:generateContent", "api-key"),
        ("/gemini/v1beta/models/g:generateContent", "x-amz-security-token"),
    ],
)
def test_a_credential_header_the_upstream_does_not_read_is_screened(
    gate: Listening,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    phrase: str,
    path: str,
    header: str,
) -> None:
    for value in (phrase, token()):
        _refused(gate, provider, gate_dirs, value, path, [(header, value)])


def test_a_credential_is_one_token_even_a_denied_one_never_a_carrier(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], phrase: str
) -> None:
    """The SDKs' own credential headers: the caller's key kept in the denied `.env` passes
    as it is; a denied value sent beside it, or encoded as the key, is refused."""
    anth = {"base_url": f"{gate.base_url}/anthropic", "max_retries": 0}
    oai = {"base_url": f"{gate.base_url}/openai/v1", "max_retries": 0}
    msg = {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
    with anthropic.Anthropic(api_key=phrase, **anth) as client:  # type: ignore[arg-type]
        client.messages.create(**msg)  # type: ignore[arg-type]
    seen = provider.seen[-1].headers  # x-api-key, or a bearer token in newer SDKs
    assert phrase in (seen.get("x-api-key"), seen.get("authorization", "").removeprefix("Bearer "))
    with openai.OpenAI(api_key=phrase, **oai) as oclient:  # type: ignore[arg-type]
        oclient.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert provider.seen[-1].headers["authorization"] == f"Bearer {phrase}"
    before = len(provider.seen)
    carried = base64.b64encode(f"PASSPHRASE={phrase}".encode()).decode()
    for key in (f"sk-ant-{phrase}", carried):
        with (
            anthropic.Anthropic(api_key=key, **anth) as client,  # type: ignore[arg-type]
            pytest.raises(anthropic.BadRequestError) as err,
        ):
            client.messages.create(**msg)  # type: ignore[arg-type]
        assert "beside the credential" in str(err.value) and phrase not in str(err.value)
        with (
            openai.OpenAI(api_key=f"{key} x", **oai) as oclient,  # type: ignore[arg-type]
            pytest.raises(openai.BadRequestError) as oerr,
        ):
            oclient.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        assert "the authorization header" in str(oerr.value)
    assert len(provider.seen) == before  # nothing left
    stored = json.dumps(_rows(gate_dirs), default=str)
    assert phrase not in stored and carried not in stored


def test_the_credential_headers_each_upstream_reads() -> None:
    from gate.screen.envelope import credential_headers

    assert credential_headers("anthropic", "api.anthropic.com") == {"x-api-key", "authorization"}
    assert credential_headers("openai", "api.openai.com") == {"authorization"}
    assert credential_headers("gemini", "generativelanguage.googleapis.com") == {
        "x-goog-api-key",
        "authorization",
    }
    assert "x-amz-security-token" in credential_headers(
        "bedrock", "bedrock-runtime.us-east-1.amazonaws.com"
    )
    assert "api-key" in credential_headers("azure", "x.openai.azure.com")
    assert credential_headers("github-copilot", "api.githubcopilot.com") == {"authorization"}
    assert "x-goog-api-key" not in credential_headers("work", "llm.example")


# -- a value cut across path segments or query parameters (review F4) ---------------------


@pytest.mark.parametrize(
    "shape",
    [
        "/openai/v1/x/{a}/{b}",
        "/openai/v1/x/{a}/{b}/content",
        "/anthropic/v1/files/{a}/{b}",
        "/openai/v1/x/y?p={a}&q={b}",
        "/openai/v1/x/y?p={a}&alt=&q={b}",
        "/gemini/v1beta/models/g:generateContent?key={k}&p={a}&q={b}",
    ],
)
def test_a_value_cut_across_path_segments_or_query_parameters_is_refused(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], phrase: str, shape: str
) -> None:
    for value in (phrase, token()):
        half = len(value) // 2
        path = shape.format(a=value[:half], b=value[half:], k=_google_key())
        _refused(gate, provider, gate_dirs, value, path)
        third = len(value) // 3
        a, b, c = value[:third], value[third : 2 * third], value[2 * third :]
        if "?" in shape:
            path = shape.split("?")[0] + f"?p={quote(a)}&q={b}&r={c}"
        else:
            path = shape.format(a=a, b=b + "/" + c, k=_google_key())
        _refused(gate, provider, gate_dirs, value, path)


# -- a short password in a client-naming header (review F9) -------------------------------


@pytest.fixture
def password(gate_dirs: dict[str, Path]) -> str:
    value = "Pw" + secrets.token_hex(6)  # 14 letters and digits: what is_word() calls a word
    (gate_dirs["project"] / ".env").write_text(
        f"DB_PASSWORD={value}\nRUNTIME=python\nARCH=aarch64\n"
    )
    return value


@pytest.mark.parametrize(
    "headers",
    [
        [("user-agent", "tool/{p}")],
        [("User-Agent", "tool/x{p}y")],  # inside a longer word
        [("x-app-note", "tool/{p}")],
        [("accept-note", "{p}")],
        [("x-apple-id", "{p}")],
        [("editor-note", "{p}")],
        [("originator-x", "{p}")],
        [("x-stainless-note", "{p}")],
        [("x-app", "{p}")],
        [("originator", "codex {p}")],
        [("user-agent", "tool/{a}"), ("x-stainless-lang", "{b}")],  # cut in two
        [("x-a", "{a}"), ("x-b", "{b}xyz")],
    ],
)
def test_a_short_password_in_a_client_naming_header_is_refused(
    gate: Listening,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    password: str,
    headers: list[tuple[str, str]],
) -> None:
    half = len(password) // 2
    sent = [(n, v.format(p=password, a=password[:half], b=password[half:])) for n, v in headers]
    _refused(gate, provider, gate_dirs, password, "/anthropic/v1/messages", sent)


def test_an_sdk_word_in_a_client_naming_header_still_passes(
    gate: Listening, provider: FakeProvider, password: str
) -> None:
    resp = httpx.post(
        f"{gate.base_url}/anthropic/v1/messages",
        headers=[
            ("x-api-key", "k"),
            ("user-agent", "Anthropic/Python 0.40.0 python"),
            ("x-stainless-lang", "python"),
            ("x-stainless-arch", "aarch64"),
            ("x-stainless-runtime", "CPython"),
        ],
        json=_body("/anthropic"),
    )
    assert resp.status_code == 200, resp.text


# -- an alphabetic password in a client-naming header ---------------------------------------


@pytest.fixture
def letters(gate_dirs: dict[str, Path]) -> str:
    """A password of letters only, under 16 of them: shaped like the runtime and OS names
    SDKs write in these headers, but not one of them."""
    value = "".join(secrets.choice(string.ascii_letters) for _ in range(11))
    (gate_dirs["project"] / ".env").write_text(
        f"DB_PASSWORD={value}\nRUNTIME=python\nARCH=aarch64\nOS_NAME=Linux\n"
    )
    return value


@pytest.mark.parametrize(
    "headers",
    [
        [("user-agent", "{p}")],
        [("user-agent", "Anthropic/Python 0.40.0 {p}")],
        [("user-agent", "codex_exec/0.171.0 ({p}; x86_64) xterm-256color")],
        [("x-stainless-lang", "{p}")],
        [("x-stainless-runtime", "{p}")],
        [("x-stainless-api-key", "{p}")],  # a name of the family no SDK sends
        [("x-stainless-os", "{p}")],
        [("x-app", "{p}")],
        [("originator", "{p}")],
        [("accept-language", "{p}")],
        [("editor-version", "{p}/1.0")],
        [("x-goog-api-client", "gl-node/22 {p}/1.0")],
        [("user-agent", "tool/1.0"), ("x-stainless-lang", "{p}")],
    ],
)
def test_an_alphabetic_password_in_a_client_naming_header_is_refused(
    gate: Listening,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    letters: str,
    headers: list[tuple[str, str]],
) -> None:
    sent = [(n, v.format(p=letters)) for n, v in headers]
    _refused(gate, provider, gate_dirs, letters, "/anthropic/v1/messages", sent)


def test_sdk_words_pass_beside_an_alphabetic_password(
    gate: Listening, provider: FakeProvider, letters: str
) -> None:
    resp = httpx.post(
        f"{gate.base_url}/anthropic/v1/messages",
        headers=[
            ("x-api-key", "k"),
            ("user-agent", "Anthropic/Python 0.40.0 python"),
            ("x-stainless-lang", "python"),
            ("x-stainless-os", "Linux"),
            ("x-stainless-arch", "aarch64"),
            ("x-stainless-runtime", "CPython"),
        ],
        json=_body("/anthropic"),
    )
    assert resp.status_code == 200, resp.text
