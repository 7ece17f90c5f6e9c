"""File uploads screened as the provider will read them: multipart parts, raw upload bodies,
and a JSONL batch input file line by line, each line as a request of its provider.

A text part (a form field, a file that decodes as UTF-8) is screened like any content and
its denied values and secrets are withheld in place (the file's other bytes are kept); a
batch line is walked as the format its `url` names, so tool rules apply to its tool
results. What gate cannot read as text (a binary file, a compressed one whatever it is
labelled) cannot be screened, so it is blocked, and the error says so.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from gate import providers
from gate.providers.paths import normalise
from gate.screen import multipart
from gate.screen.codec import Ambiguous, dump, parse
from gate.screen.verdict import Blocked, Outbound, Verdict, Withheld

FORMAT = "upload"
# Gemini's upload endpoints take the file itself as the body (resumable or media uploads).
_RAW_UPLOAD = "/upload/"
# OpenAI's Uploads API sends a large file in parts, each a request of its own.
_CHUNK = re.compile(r"/uploads/[^/]+/parts$")

Screener = Callable[[Outbound, Any], Verdict]  # (request, parsed object) → its verdict


@dataclass(frozen=True, slots=True)
class Screeners:
    """How one object is screened: every string (any text), or walked as a format."""

    strings: Screener
    walked: Callable[[Any, Outbound, dict[str, Any]], Verdict]  # (format module, req, body)


_HEADERS = (
    "content-type",
    "x-goog-upload-command",
    "x-goog-upload-offset",
    "x-goog-upload-protocol",
    "content-range",
)


def headers_of(headers: Any) -> tuple[tuple[str, str], ...]:
    """The request headers an upload is read by (a header sent twice is refused: the
    provider may read either copy)."""
    out = []
    for name in _HEADERS:
        values = headers.get_all(name)
        if len(values) > 1:
            raise Blocked(f"gate cannot screen this request: it sends {name} twice")
        if values:
            out.append((name, values[0]))
    return tuple(out)


def kind(req: Outbound) -> str | None:
    """`form`, `related` or `raw` for a body gate reads as an upload, else None."""
    media, _ = _media(req)
    if _RAW_UPLOAD in req.path.split("?", 1)[0]:
        _whole_range(req)
    if _CHUNK.search(normalise(req.path)):
        return "chunk"
    if media == "multipart/form-data":
        return "form"
    if media == "multipart/related":
        return "related"
    if media.startswith("multipart/"):
        return "other"
    if _RAW_UPLOAD in req.path.split("?", 1)[0] and not req.body.lstrip().startswith(b"{"):
        return "raw"
    return None


class _Unreadable(Exception):
    """Binary content on an upstream that opted out of screening what is not text."""


def screen(req: Outbound, how: str, screeners: Screeners) -> Verdict:
    """The verdict on an upload; raises Blocked when it cannot leave as it is."""
    return _screen(req, how, screeners)


def _screen(req: Outbound, how: str, screeners: Screeners) -> Verdict:
    if how == "other":
        raise Blocked(
            "gate cannot screen this upload: only multipart/form-data and"
            " multipart/related bodies are read; it was not sent"
        )
    if how == "chunk":
        raise Blocked(
            "gate screens an uploaded file only whole: a part of a chunked upload"
            " (OpenAI's Uploads API) could split a value with the next part, each"
            " screened alone. Upload the file in one request (files.create); it was"
            " not sent"
        )
    if how == "raw":
        _one_chunk(req)
        try:
            text = _text(req.body, "the uploaded file", req)
        except _Unreadable:
            return Verdict(
                body=None,
                format="unscreened",
                model=None,
                project_root=req.root or req.project_root,
            )
        edited, verdict = _screen_text(req, text, screeners)
        return _verdict(req, [verdict], edited.encode() if verdict.body is not None else None)
    try:
        _, params = _media(req)
        parts = multipart.parse(req.body, multipart.boundary(params), how == "form")
    except multipart.Refused as exc:
        raise Blocked(f"gate cannot screen this upload: {exc}; it was not sent") from exc
    contents: list[bytes] = []
    verdicts: list[Verdict] = []
    unread = 0
    for i, part in enumerate(parts):
        label = f"part {part.name!r}" if part.name is not None else f"part {i}"
        raw = req.body[part.start : part.end]
        try:
            edited, verdict = _screen_text(req, _text(raw, label, req), screeners)
        except _Unreadable:
            # Only this part leaves unread (its upstream opted in); the others are
            # screened and edited as ever.
            unread += 1
            edited, verdict = (
                "",
                Verdict(
                    body=None, format=FORMAT, model=None, project_root=req.root or req.project_root
                ),
            )
        # Field and file names leave too: screened, never edited.
        names = {
            k: v
            for k, v in (
                ("name", part.name),
                ("filename", part.filename),
                ("content-type", part.header),
            )
            if v
        }
        if names and screeners.strings(req, names).body is not None:
            raise Blocked(
                f"the name of upload {label} (or its Content-Type) holds a denied file's"
                " value or a likely secret, which gate cannot withhold in place; it was"
                " not sent"
            )
        contents.append(edited.encode() if verdict.body is not None else raw)
        verdicts.append(verdict)
    changed = any(v.body is not None for v in verdicts)
    if unread and not changed:
        return Verdict(
            body=None, format="unscreened", model=None, project_root=req.root or req.project_root
        )
    return _verdict(
        req, verdicts, multipart.assemble(req.body, parts, contents) if changed else None
    )


def _screen_text(req: Outbound, text: str, screeners: Screeners) -> tuple[str, Verdict]:
    """A text's verdict and the text as edited: a JSONL file line by line, as requests."""
    lines = _jsonl(text)
    if lines is None:
        holder = {"text": text}
        verdict = screeners.strings(req, holder)
        return holder["text"], verdict
    out: list[str] = []
    verdicts: list[Verdict] = []
    for raw, line in zip(text.split("\n"), lines, strict=True):
        if line is None:
            out.append(raw)
            continue
        v = _line(req, line, screeners)
        verdicts.append(v)
        out.append(dump(line).decode() if v.body is not None else raw)
    return "\n".join(out), _verdict(
        req, verdicts, b"" if any(v.body is not None for v in verdicts) else None
    )


def _line(req: Outbound, line: dict[str, Any], screeners: Screeners) -> Verdict:
    """A batch input line: its `body` walked as the format its `url` names (OpenAI Batch
    API), and every other string screened."""
    url, body = line.get("url"), line.get("body")
    fmt = providers.detect(url) if isinstance(url, str) else None
    verdicts = []
    if fmt is not None and isinstance(body, dict):
        verdicts.append(screeners.walked(fmt, replace(req, path=str(url)), body))
    verdicts.append(screeners.strings(req, line))
    return _verdict(req, verdicts, b"" if any(v.body is not None for v in verdicts) else None)


def _jsonl(text: str) -> list[dict[str, Any] | None] | None:
    """Each line of a JSONL file as an object (None for a blank line), or None when the
    text is not JSONL. A line that parses two ways (a repeated key) is refused."""
    lines = text.split("\n")
    if not any(line.strip() for line in lines):
        return None
    out: list[dict[str, Any] | None] = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            out.append(None)
            continue
        if not line.lstrip().startswith("{"):
            return None
        try:
            value = parse(line.encode())
        except Ambiguous as exc:
            raise Blocked(f"gate cannot screen this upload: line {n} {exc}") from exc
        except ValueError:
            return None
        if not isinstance(value, dict):
            return None
        out.append(value)
    return out


def _text(raw: bytes, label: str, req: Outbound) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        if req.unsafe_pass_non_json:
            raise _Unreadable from exc
        # Fail closed: content gate cannot read as text is content it cannot screen.
        raise Blocked(
            f"gate cannot screen upload {label}: its content is not UTF-8 text (byte"
            f" {exc.start}; a binary or compressed file, whatever its type says), and gate"
            " blocks by policy what it cannot read. Upload it without gate, or give its"
            " upstream `unsafe_pass_non_json: true`, which forwards it unscreened"
        ) from exc


def _one_chunk(req: Outbound) -> None:
    """A resumable upload sent in several chunks could split a value between two of them,
    each screened alone: only a whole file in one request is read."""
    headers = dict(req.headers)
    command = headers.get("x-goog-upload-command", "").lower()
    offset = headers.get("x-goog-upload-offset", "0").strip()
    if command and ("finalize" not in command or offset != "0"):
        raise Blocked(
            "gate screens a resumable upload only when the whole file is sent in"
            " one request (`upload, finalize` at offset 0): a value split across"
            " chunks would not be found; it was not sent"
        )


def _whole_range(req: Outbound) -> None:
    """A resumable upload may also be sent in chunks with `Content-Range: bytes A-B/N`,
    each a request of its own: only the whole file in one request (`bytes 0-(N-1)/N`) is
    read, so a value cannot be split between two chunks each screened alone."""
    value = dict(req.headers).get("content-range")
    if value is None:
        return
    m = re.fullmatch(r"bytes 0-(\d{1,18})/(\d{1,18})", value.strip(), re.IGNORECASE)
    if not (m and int(m.group(1)) + 1 == int(m.group(2)) == len(req.body)):
        raise Blocked(
            "gate screens a resumable upload only when the whole file is sent in one"
            " request (Content-Range `bytes 0-(N-1)/N` for an N-byte body): a value split"
            " across chunks would not be found; it was not sent"
        )


def _media(req: Outbound) -> tuple[str, dict[str, str]]:
    content_type = dict(req.headers).get("content-type", "")
    try:
        return multipart.media_type(content_type)
    except multipart.Refused as exc:
        if content_type.lower().lstrip().startswith("multipart/"):
            raise Blocked(f"gate cannot screen this upload: {exc}; it was not sent") from exc
        return content_type.split(";", 1)[0].strip().lower(), {}


def _verdict(req: Outbound, verdicts: list[Verdict], body: bytes | None) -> Verdict:
    withheld: tuple[Withheld, ...] = tuple(w for v in verdicts for w in v.withheld)
    model = next((v.model for v in verdicts if v.model), None)
    return Verdict(
        body=body,
        format=FORMAT,
        model=model,
        project_root=req.root or req.project_root,
        withheld=withheld,
    )
