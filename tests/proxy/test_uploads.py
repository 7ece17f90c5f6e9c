"""File uploads are screened as the provider reads them (multipart parts, JSONL batch lines
walked as requests, raw upload bodies), read one way only, and blocked when gate cannot
read them as text: through a real listener, with the real SDKs, asserting on what the
loopback upstream received (parsed by the standard library's multipart reader)."""

from __future__ import annotations

import gzip
import json
import time
from email.parser import BytesParser
from email.policy import HTTP
from pathlib import Path
from typing import Any

import anthropic
import httpx2 as httpx
import openai
import pytest

from conftest import closed_after_test, fake_secret
from fake_provider import FakeProvider
from gate.audit.store import AuditStore
from gate.proxy.server import Listening

PLACEHOLDER = "[gate:"
RULE_PLACEHOLDER = "not sent to the model provider"  # a tool rule withheld a whole result
HARMLESS = "all good: 3 files"


@pytest.fixture
def secret(gate_dirs: dict[str, Path]) -> str:
    value = fake_secret("sk_live_")
    (gate_dirs["project"] / ".env").write_text(f"STRIPE_KEY={value}\n")
    return value


@pytest.fixture
def files(provider: FakeProvider) -> None:
    def answer(method: str, path: str, req: Any) -> Any:
        if path.split("?")[0].endswith("/files"):
            return {
                "id": "file-1",
                "object": "file",
                "bytes": 1,
                "created_at": 1,
                "filename": "x",
                "purpose": "batch",
                "status": "processed",
                "type": "file",
                "mime_type": "text/plain",
                "size_bytes": 1,
            }
        return None

    provider.answer = answer


@pytest.fixture
def oai(gate: Listening) -> openai.OpenAI:
    return closed_after_test(
        openai.OpenAI(base_url=f"{gate.base_url}/openai/v1", api_key="sk-test", max_retries=0)
    )


def _parts(seen: Any) -> dict[str, bytes]:
    """What the upstream received, read by a standard multipart parser."""
    head = f"Content-Type: {seen.headers['content-type']}\r\n\r\n".encode()
    msg = BytesParser(policy=HTTP).parsebytes(head + seen.body)
    return {
        p.get_param("name", header="content-disposition"): p.get_payload(decode=True)
        for p in msg.iter_parts()
    }


def _audited(gate_dirs: dict[str, Path]) -> dict[str, Any]:
    store = AuditStore(gate_dirs["data"] / "audit.db")
    row = next(store.rows(1))
    row["raw"] = store.body_of(row["id"])
    return row


def test_a_batch_input_file_is_walked_line_by_line_as_requests(
    oai: openai.OpenAI, provider: FakeProvider, gate_dirs: dict[str, Path], secret: str, files: None
) -> None:
    project = str(gate_dirs["project"])
    lines = [
        {
            "custom_id": "1",
            "method": "POST",
            "url": "/v1/chat/completions",
            "body": {
                "model": "m",
                "messages": [{"role": "user", "content": f"deploy with {secret}"}],
            },
        },
        {
            "custom_id": "2",
            "method": "POST",
            "url": "/v1/chat/completions",
            "body": {
                "model": "m",
                "messages": [
                    {"role": "user", "content": "go"},
                    {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                "id": "c1",
                                "type": "function",
                                "function": {
                                    "name": "read_file",
                                    "arguments": json.dumps({"path": f"{project}/.env"}),
                                },
                            }
                        ],
                    },
                    {"role": "tool", "tool_call_id": "c1", "content": HARMLESS},
                ],
            },
        },
        {
            "custom_id": "3",
            "method": "POST",
            "url": "/v1/chat/completions",
            "body": {"model": "m", "messages": [{"role": "user", "content": "hello"}]},
        },
    ]
    data = ("\n".join(json.dumps(x) for x in lines) + "\n").encode()
    oai.files.create(file=("batch.jsonl", data), purpose="batch")
    seen = provider.seen[-1]
    parts = _parts(seen)
    assert parts["purpose"] == b"batch"
    sent = parts["file"].decode()
    assert secret not in sent
    got = [json.loads(x) for x in sent.splitlines()]
    assert PLACEHOLDER in got[0]["body"]["messages"][0]["content"]
    tool = got[1]["body"]["messages"][2]["content"]  # decided by the tool rule, not a value
    assert tool.startswith("[gate: content withheld.") and "Read(./.env)" in tool
    assert sent.splitlines()[2] == json.dumps(lines[2])  # untouched lines keep their bytes
    row = _audited(gate_dirs)
    assert row["verdict"] == "modified" and row["raw"] == seen.body  # as sent


def test_a_text_file_is_withheld_in_place(
    client: anthropic.Anthropic,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    secret: str,
    files: None,
) -> None:
    text = f"# notes\nthe key is {secret} for prod\nend\n"
    client.beta.files.upload(file=("notes.md", text.encode(), "text/markdown"))
    sent = _parts(provider.seen[-1])["file"].decode()
    assert secret not in sent and PLACEHOLDER in sent
    assert sent.startswith("# notes\nthe key is ") and sent.endswith(" for prod\nend\n")


def test_a_clean_upload_leaves_byte_for_byte(
    oai: openai.OpenAI, provider: FakeProvider, gate_dirs: dict[str, Path], secret: str, files: None
) -> None:
    oai.files.create(file=("a.txt", b"nothing to see\n"), purpose="assistants")
    assert _parts(provider.seen[-1])["file"] == b"nothing to see\n"
    assert _audited(gate_dirs)["verdict"] == "forwarded"


@pytest.mark.parametrize(
    ("name", "content", "kind"),
    [
        ("logo.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "image/png"),
        ("env.txt", None, "text/plain"),  # .env gzipped, declared text/plain
    ],
)
def test_content_gate_cannot_read_as_text_is_blocked(
    oai: openai.OpenAI,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    secret: str,
    files: None,
    name: str,
    content: bytes | None,
    kind: str,
) -> None:
    data = content or gzip.compress((gate_dirs["project"] / ".env").read_bytes())
    with pytest.raises(openai.BadRequestError) as err:
        oai.files.create(file=(name, data, kind), purpose="assistants")
    assert "not UTF-8 text" in str(err.value) and "blocks by policy" in str(err.value)
    assert provider.seen == []
    assert _audited(gate_dirs)["verdict"] == "blocked"


def test_a_file_name_holding_a_secret_is_blocked(
    oai: openai.OpenAI, provider: FakeProvider, gate_dirs: dict[str, Path], secret: str, files: None
) -> None:
    with pytest.raises(openai.BadRequestError) as err:
        oai.files.create(file=(f"{secret}.txt", b"hi\n"), purpose="assistants")
    assert "name of upload" in str(err.value) and secret not in str(err.value)
    assert provider.seen == []


B = "gateb0undary"
FILE = 'Content-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\n'


def _form(*parts: str, tail: str = "--\r\n") -> bytes:
    return ("".join(f"--{B}\r\n{p}\r\n" for p in parts) + f"--{B}{tail}").encode()


@pytest.mark.parametrize(
    ("body", "content_type", "words"),
    [
        # A second part of the same name: servers keep the first or the last.
        (_form(FILE + "harmless", FILE + "{secret}"), None, "two parts are named 'file'"),
        (_form(FILE + "x", tail="--\r\n" + "{secret}"), None, "bytes follow its closing boundary"),
        (b"preamble {secret}\r\n" + _form(FILE + "x"), None, "preamble"),
        (_form(FILE + "x").replace(b"\r\n", b"\n"), None, "does not start with its boundary"),
        (_form(FILE + "x"), "multipart/form-data", "names no boundary"),
        (_form(FILE + "x"), f"multipart/form-data; boundary={B}; boundary=other", "twice"),
        (_form(FILE + "x"), "multipart/form-data; boundary=" + "b" * 71, "1 to 70"),
        (
            _form(
                FILE.replace("\r\n\r\n", "\r\nContent-Transfer-Encoding: base64\r\n\r\n")
                + "e3NlY3JldH0="
            ),
            None,
            "Content-Transfer-Encoding",
        ),
        (
            _form(
                FILE.replace("\r\n\r\n", "\r\nContent-Type: multipart/mixed; boundary=in\r\n\r\n")
                + "--in\r\n\r\n{secret}\r\n--in--"
            ),
            None,
            "itself multipart",
        ),
        (
            _form(
                FILE.replace('filename="a.txt"', "filename=\"a.txt\"; filename*=UTF-8''b.txt") + "x"
            ),
            None,
            "filename*",
        ),
        (_form(FILE + f"x\n--{B}\n{{secret}}"), None, "holds its body's boundary"),
        (
            _form(
                FILE.replace("\r\n\r\n", "\r\nContent-Type: text/plain; charset=utf-16\r\n\r\n")
                + "x"
            ),
            None,
            "charset",
        ),
        (
            _form(FILE.replace("Content-Disposition", " Content-Disposition") + "x"),
            None,
            "header line",
        ),
    ],
)
def test_a_multipart_body_read_two_ways_is_refused(
    gate: Listening,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    secret: str,
    body: bytes,
    content_type: str | None,
    words: str,
) -> None:
    resp = httpx.post(
        f"{gate.base_url}/openai/v1/files",
        content=body.replace(b"{secret}", secret.encode()),
        headers={"content-type": content_type or f"multipart/form-data; boundary={B}"},
    )
    assert resp.status_code == 400 and words in resp.json()["error"]["message"]
    assert provider.seen == []


def test_gemini_uploads_are_screened_in_one_piece(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], secret: str, files: None
) -> None:
    url = f"{gate.base_url}/openai/upload/v1beta/files?upload_id=u1"
    one = {
        "x-goog-upload-command": "upload, finalize",
        "x-goog-upload-offset": "0",
        "content-type": "text/plain",
    }
    resp = httpx.post(url, content=f"KEY {secret}\n".encode(), headers=one)
    assert resp.status_code == 200
    sent = provider.seen[-1].body.decode()
    assert secret not in sent and sent.startswith("KEY [gate:")
    # A chunk that does not finish the file: a value could be split across chunks.
    resp = httpx.post(
        url, content=b"first half", headers={**one, "x-goog-upload-command": "upload"}
    )
    assert resp.status_code == 400 and "one request" in resp.json()["error"]["message"]
    # The multipart form: metadata and the file, as multipart/related.
    body = (
        f"--{B}\r\nContent-Type: application/json\r\n\r\n"
        '{"file": {"display_name": "notes"}}\r\n'
        f"--{B}\r\nContent-Type: text/plain\r\n\r\nthe key is {secret}\r\n--{B}--\r\n"
    )
    resp = httpx.post(
        f"{gate.base_url}/openai/upload/v1beta/files?uploadType=multipart",
        content=body.encode(),
        headers={"content-type": f"multipart/related; boundary={B}"},
    )
    assert resp.status_code == 200
    sent = provider.seen[-1].body.decode()
    assert secret not in sent and "the key is [gate:" in sent and "display_name" in sent


def test_a_batch_line_with_a_repeated_key_is_refused(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], secret: str
) -> None:
    lines = '{"custom_id": "1", "body": {}}\n{"body": {"messages": []}, "body": {"x": "%s"}}\n'
    body = _form(FILE + lines % secret)
    resp = httpx.post(
        f"{gate.base_url}/openai/v1/files",
        content=body,
        headers={"content-type": f"multipart/form-data; boundary={B}"},
    )
    message = resp.json()["error"]["message"]
    assert resp.status_code == 400 and "line 2" in message and secret not in message
    assert provider.seen == []


def test_a_form_field_is_withheld_in_place_and_a_json_body_labelled_multipart_refused(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], secret: str, files: None
) -> None:
    field = f'Content-Disposition: form-data; name="purpose"\r\n\r\nbatch {secret}'
    resp = httpx.post(
        f"{gate.base_url}/openai/v1/files",
        content=_form(field, FILE + "x"),
        headers={"content-type": f"multipart/form-data; boundary={B}"},
    )
    assert resp.status_code == 200
    parts = _parts(provider.seen[-1])
    assert secret.encode() not in parts["purpose"] and parts["file"] == b"x"
    # The provider reads the body as its Content-Type says: as JSON it would be screened
    # as something else than what is read.
    resp = httpx.post(
        f"{gate.base_url}/openai/v1/files",
        content=b'{"a": "b"}',
        headers={"content-type": f"multipart/form-data; boundary={B}"},
    )
    assert resp.status_code == 400 and "boundary" in resp.json()["error"]["message"]


def test_a_chunked_upload_part_is_refused(
    oai: openai.OpenAI, provider: FakeProvider, gate_dirs: dict[str, Path], secret: str
) -> None:
    # Half a value in this part and half in the next would each pass alone.
    with pytest.raises(openai.BadRequestError) as err:
        oai.uploads.parts.create("upload_1", data=secret[:12].encode())
    assert "only whole" in str(err.value)
    assert provider.seen == []


# -- a part's Content-Type leaves too (review F1) -----------------------------------------


def _seen(provider: FakeProvider) -> bytes:
    return b"".join(
        s.body + str(dict(s.headers)).encode() + str(s.path).encode() for s in provider.seen
    )


@pytest.mark.parametrize(
    "part_type",
    [
        "text/plain; note={secret}",  # an extra parameter gate never reads
        'text/plain; charset=utf-8; x="{secret}"',
        "TEXT/PLAIN; Note={secret}",
        "{secret}/plain",  # the media type itself
        "text/{secret}",
        "text/plain; charset={secret}",
        "text/plain; charset=utf-8; x={encoded}",
    ],
)
def test_a_part_content_type_cannot_carry_a_secret(
    gate: Listening, provider: FakeProvider, secret: str, part_type: str
) -> None:
    from urllib.parse import quote

    head = 'Content-Disposition: form-data; name="file"; filename="a.txt"\r\n'
    value = part_type.format(secret=secret, encoded=quote(quote(secret, safe=""), safe=""))
    body = (f"--{B}\r\n{head}Content-Type: {value}\r\n\r\nharmless\r\n--{B}--\r\n").encode()
    resp = httpx.post(
        f"{gate.base_url}/openai/v1/files",
        content=body,
        headers={"content-type": f"multipart/form-data; boundary={B}"},
    )
    assert resp.status_code == 400 and secret not in resp.text, resp.text
    assert secret.encode() not in _seen(provider)


def test_a_top_level_content_type_parameter_or_boundary_cannot_carry_a_secret(
    gate: Listening, provider: FakeProvider, secret: str
) -> None:
    for content_type in (
        f"multipart/form-data; boundary={B}; note={secret}",
        f"multipart/form-data; boundary={secret}",
    ):
        mark = secret if f"boundary={secret}" in content_type else B
        body = (f"--{mark}\r\n{FILE}harmless\r\n--{mark}--\r\n").encode()
        resp = httpx.post(
            f"{gate.base_url}/openai/v1/files",
            content=body,
            headers={"content-type": content_type},
        )
        assert resp.status_code == 400, resp.text
    assert secret.encode() not in _seen(provider)


def test_a_plain_part_content_type_still_passes(
    gate: Listening, provider: FakeProvider, files: None
) -> None:
    head = 'Content-Disposition: form-data; name="file"; filename="a.txt"\r\n'
    for part_type in ("text/plain", "text/plain; charset=utf-8", "application/octet-stream"):
        body = (f"--{B}\r\n{head}Content-Type: {part_type}\r\n\r\nhi\r\n--{B}--\r\n").encode()
        resp = httpx.post(
            f"{gate.base_url}/openai/v1/files",
            content=body,
            headers={"content-type": f"multipart/form-data; boundary={B}"},
        )
        assert resp.status_code == 200, (part_type, resp.text)


# -- one unreadable part leaves alone (review F5) -----------------------------------------


def _opted_in(provider: FakeProvider, gate_dirs: dict[str, Path]) -> Any:
    from dataclasses import replace as dc_replace

    from gate.config import AskConfig, Config, parse_upstream
    from gate.proxy.server import BackgroundGate

    up = dc_replace(parse_upstream("openai", provider.url), unsafe_pass_non_json=True)
    config = dc_replace(
        Config(), port=0, ask=AskConfig(mode="never"), projects=(str(gate_dirs["project"]),)
    ).with_upstreams({"openai": up})
    return BackgroundGate(config, gate_dirs["data"])


@pytest.mark.parametrize("binary_first", [False, True])
def test_a_binary_part_does_not_unscreen_the_text_parts_beside_it(
    provider: FakeProvider, gate_dirs: dict[str, Path], secret: str, binary_first: bool
) -> None:
    """With `unsafe_pass_non_json`, the binary part leaves as it is and the text part
    beside it (before or after) is still screened and edited."""
    text = f'--{B}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nnotes {secret}\r\n'
    binary = (
        f'--{B}\r\nContent-Disposition: form-data; name="file"; filename="a.bin"\r\n\r\n'
    ).encode() + b"\xff\xfe\x00binary\r\n"
    parts = [binary, text.encode()] if binary_first else [text.encode(), binary]
    body = b"".join(parts) + f"--{B}--\r\n".encode()
    server = _opted_in(provider, gate_dirs)
    listening = server.start()
    try:
        resp = httpx.post(
            f"{listening.base_url}/openai/v1/files",
            content=body,
            headers={"content-type": f"multipart/form-data; boundary={B}"},
        )
    finally:
        server.stop()
    assert resp.status_code == 200, resp.text
    sent = provider.seen[-1].body
    assert secret.encode() not in sent and PLACEHOLDER.encode() in sent
    assert b"\xff\xfe\x00binary" in sent  # the unread part's bytes as they were


def test_a_binary_part_without_the_opt_in_is_still_blocked(
    gate: Listening, provider: FakeProvider
) -> None:
    body = (
        (f'--{B}\r\nContent-Disposition: form-data; name="file"; filename="a.bin"\r\n\r\n').encode()
        + b"\xff\xfe\r\n"
        + f"--{B}--\r\n".encode()
    )
    resp = httpx.post(
        f"{gate.base_url}/openai/v1/files",
        content=body,
        headers={"content-type": f"multipart/form-data; boundary={B}"},
    )
    assert resp.status_code == 400 and "unsafe_pass_non_json" in resp.text
    assert provider.seen == []


# -- Content-Range chunks of a resumable upload (review F8) -------------------------------


@pytest.mark.parametrize("command", [None, "upload, finalize"])
def test_a_content_range_chunk_of_a_resumable_upload_is_refused(
    gate: Listening, provider: FakeProvider, secret: str, command: str | None
) -> None:
    """Google's upload servers also take the older resumable protocol (each chunk a
    request with `Content-Range: bytes A-B/TOTAL`): each half would be screened alone."""
    url = f"{gate.base_url}/openai/upload/v1beta/files?upload_id=u1"
    n, cut = len(secret), 12
    extra = {"x-goog-upload-command": command} if command else {}
    for start, end, total in ((0, cut, n), (cut, n, n), (0, cut, "*")):
        resp = httpx.post(
            url,
            content=secret[start:end].encode(),
            headers={
                "content-type": "text/plain",
                "content-range": f"bytes {start}-{end - 1}/{total}",
                **extra,
            },
        )
        assert resp.status_code == 400, resp.text
    assert provider.seen == []


def test_a_json_chunk_with_a_partial_content_range_is_refused(
    gate: Listening, provider: FakeProvider, secret: str
) -> None:
    chunk = b'{"a": "' + secret[:12].encode() + b'"}'
    resp = httpx.post(
        f"{gate.base_url}/openai/upload/v1beta/files?upload_id=u1",
        content=chunk,
        headers={
            "content-type": "application/json",
            "content-range": f"bytes 0-99/{len(chunk) + 50}",
        },
    )
    assert resp.status_code == 400 and provider.seen == []


def test_a_whole_file_content_range_passes(gate: Listening, provider: FakeProvider) -> None:
    data = b"the whole file, harmless\n"
    resp = httpx.post(
        f"{gate.base_url}/openai/upload/v1beta/files?upload_id=u1",
        content=data,
        headers={
            "content-type": "text/plain",
            "content-range": f"bytes 0-{len(data) - 1}/{len(data)}",
        },
    )
    assert resp.status_code == 200, resp.text
    assert provider.seen[-1].body == data


def test_a_short_password_in_the_boundary_is_refused(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    import secrets as pysecrets

    password = "Pw" + pysecrets.token_hex(6)
    (gate_dirs["project"] / ".env").write_text(f"DB_PASSWORD={password}\n")
    mark = f"b{password}"
    body = (f"--{mark}\r\n{FILE}harmless\r\n--{mark}--\r\n").encode()
    resp = httpx.post(
        f"{gate.base_url}/openai/v1/files",
        content=body,
        headers={"content-type": f"multipart/form-data; boundary={mark}"},
    )
    assert resp.status_code == 400 and password not in resp.text
    assert provider.seen == []


# -- the upload URL a resumable upload's start hands back -----------------------------------


def _start(gate: Listening) -> httpx.Response:
    """A Gemini resumable upload's first request, as the genai SDKs send it."""
    return httpx.post(
        f"{gate.base_url}/openai/upload/v1beta/files",
        json={"file": {"display_name": "notes"}},
        headers={
            "x-goog-upload-protocol": "resumable",
            "x-goog-upload-command": "start",
            "x-goog-upload-header-content-type": "text/plain",
        },
    )


@pytest.mark.parametrize(
    "handed",
    [
        "{up}/upload/v1beta/files?upload_id=u1&upload_protocol=resumable",
        "{UP}/upload/v1beta/files?upload_id=u1&upload_protocol=resumable",  # host in capitals
        "/upload/v1beta/files?upload_id=u1&upload_protocol=resumable",  # a path on the host
    ],
)
def test_a_resumable_upload_s_bytes_go_through_gate_and_are_screened(
    gate: Listening,
    provider: FakeProvider,
    secret: str,
    files: None,
    handed: str,
) -> None:
    """The provider hands back an absolute URL for the file's bytes: followed as it is, the
    bytes would go straight to the provider. gate points it at itself, so they are screened."""
    provider.reply_headers = {
        "x-goog-upload-url": handed.format(up=provider.url, UP=provider.url.upper()),
        "x-goog-upload-status": "active",
    }
    resp = _start(gate)
    assert resp.status_code == 200, resp.text
    url = resp.headers["x-goog-upload-url"]
    assert (
        url == f"{gate.base_url}/openai/upload/v1beta/files?upload_id=u1&upload_protocol=resumable"
    )
    provider.reply_headers = {}
    resp = httpx.post(
        url,
        content=f"KEY {secret}\n".encode(),
        headers={"x-goog-upload-command": "upload, finalize", "x-goog-upload-offset": "0"},
    )
    assert resp.status_code == 200, resp.text
    assert provider.seen[-1].path.startswith("/upload/v1beta/files?upload_id=u1")
    sent = provider.seen[-1].body.decode()
    assert secret not in sent and sent.startswith("KEY [gate:")


@pytest.mark.parametrize(
    "handed",
    [
        "https://upload.example.com/upload/v1beta/files?upload_id=u1",
        "{up_other_port}/upload/v1beta/files?upload_id=u1",
        "https://{host}/upload/v1beta/files?upload_id=u1",  # the upstream's host, other scheme
        "//upload.example.com/upload?upload_id=u1",  # scheme-relative: another host
        "http://[::1/x",  # not a URL gate can read
    ],
)
def test_an_upload_url_gate_cannot_point_at_itself_is_never_handed_on(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], files: None, handed: str
) -> None:
    host = provider.url.split("://", 1)[1]
    other = provider.url.rsplit(":", 1)[0] + ":1"
    provider.reply_headers = {"x-goog-upload-url": handed.format(up_other_port=other, host=host)}
    resp = _start(gate)
    assert resp.status_code == 502, resp.text
    assert "x-goog-upload-url" not in resp.headers
    assert "upload" in resp.json()["error"]["message"]
    assert "example.com" not in resp.text and host not in resp.text
    deadline = time.monotonic() + 60  # the status lands once the audit worker writes it
    while (row := _audited(gate_dirs))["status"] is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert row["status"] == 502 and "upload" in row["error"]


def test_a_redirect_to_the_upstream_points_at_gate(
    gate: Listening, provider: FakeProvider, files: None
) -> None:
    """A 307 or 308 resends the body where it points: on the upstream, at gate instead."""
    provider.reply_headers = {"location": f"{provider.url}/v1/files/file-1"}
    resp = httpx.post(f"{gate.base_url}/openai/v1/files", json={"purpose": "x"})
    assert resp.headers["location"] == f"{gate.base_url}/openai/v1/files/file-1"
