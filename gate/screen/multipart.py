"""A strict reader of multipart bodies (file uploads): one meaning only, or refused.

Servers' multipart parsers disagree on everything RFC 7578 leaves loose: a part name sent
twice (first or last wins), a preamble or epilogue, bare LF line ends, header folding, a
`Content-Transfer-Encoding`, `filename*` beside `filename`, a delimiter that appears inside
a part. gate reads only bodies in which none of these occur, so the provider reads the
parts gate screened; any other body is refused, naming what was found.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# RFC 2046 §5.1.1: 1 to 70 of these characters, not ending in a space.
_BOUNDARY = re.compile(r"[0-9A-Za-z'()+_,\-./:=? ]{0,69}[0-9A-Za-z'()+_,\-./:=?]")
_PARAM = re.compile(r'\s*;\s*([A-Za-z0-9_.*-]+)\s*=\s*("(?:[^"\\\r\n]*)"|[^;\s"]+)\s*')
_HEADERS = ("content-disposition", "content-type")
_MEDIA = re.compile(r"[a-z0-9][a-z0-9!#$&^_.+-]{0,126}/[a-z0-9][a-z0-9!#$&^_.+-]{0,126}")


class Refused(ValueError):
    """A multipart body that could be read more than one way."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Part:
    name: str | None  # form-data's name; None in multipart/related
    filename: str | None
    content_type: str | None
    start: int  # where its content starts and ends in the body
    end: int
    header: str | None = None  # its Content-Type header as sent (screened: it leaves too)


def media_type(content_type: str) -> tuple[str, dict[str, str]]:
    """A Content-Type's type (lower case) and its parameters; a parameter given twice, or
    one written in a way parsers read differently, is refused."""
    kind, _, rest = content_type.partition(";")
    params: dict[str, str] = {}
    pos, rest = 0, ";" + rest if rest else ""
    while pos < len(rest):
        m = _PARAM.match(rest, pos)
        if not m:
            raise Refused("its Content-Type parameters cannot be read one way only")
        key, value = m.group(1).lower(), m.group(2)
        if key in params:
            raise Refused(f"its Content-Type gives the parameter {key!r} twice")
        params[key] = value[1:-1] if value.startswith('"') else value
        pos = m.end()
    return kind.strip().lower(), params


def boundary(params: dict[str, str]) -> str:
    value = params.get("boundary")
    if value is None:
        raise Refused("its Content-Type names no boundary")
    if not _BOUNDARY.fullmatch(value):
        raise Refused("its boundary is not 1 to 70 of the characters RFC 2046 allows")
    return value


def parse(body: bytes, mark: str, form: bool) -> list[Part]:
    """The parts of a body whose boundary is `mark`; `form` (multipart/form-data) asks
    each part for a distinct name."""
    dash = b"--" + mark.encode()
    if not body.startswith(dash + b"\r\n"):
        raise Refused("it does not start with its boundary line (a preamble, or no CRLF)")
    parts: list[Part] = []
    names: set[str] = set()
    pos = len(dash) + 2
    while True:
        end = body.find(b"\r\n" + dash, pos)
        if end < 0:
            raise Refused("it has no closing boundary")
        parts.append(_part(body, pos, end, dash, len(parts), form, names))
        after = end + 2 + len(dash)
        if body[after : after + 2] == b"--":
            if body[after + 2 :] not in (b"", b"\r\n"):
                raise Refused("bytes follow its closing boundary")
            return parts
        if body[after : after + 2] != b"\r\n":
            raise Refused(f"part {len(parts)}'s boundary line has bytes after the boundary")
        pos = after + 2


def _part(
    body: bytes, start: int, end: int, dash: bytes, n: int, form: bool, names: set[str]
) -> Part:
    if body.startswith(b"\r\n", start):  # no headers at all
        split, content = start, start + 2
    else:
        split = body.find(b"\r\n\r\n", start, end + 2)
        content = split + 4
    if split < 0 or content > end:
        raise Refused(f"part {n} has no blank line after its headers")
    fields: dict[str, str] = {}
    for line in body[start:split].split(b"\r\n") if split > start else ():
        text = line.decode("utf-8", "replace")
        head, colon, value = text.partition(":")
        key = head.strip().lower()
        if not colon or head != head.strip() or "\ufffd" in text or "\x00" in text:
            raise Refused(f"part {n} has a header line gate cannot read one way only")
        if key == "content-transfer-encoding":
            raise Refused(f"part {n} has a Content-Transfer-Encoding (servers undo it or not)")
        if key not in _HEADERS:
            raise Refused(f"part {n} has a header gate does not read ({key[:40]!r})")
        if key in fields:
            raise Refused(f"part {n} gives its {key} header twice")
        fields[key] = value.strip()
    if dash in body[content:end]:
        raise Refused(f"part {n} holds its body's boundary (parsers split it differently)")
    kind: str | None = None
    if "content-type" in fields:
        kind, params = media_type(fields["content-type"])
        if kind.startswith("multipart/"):
            raise Refused(f"part {n} is itself multipart (nested parts are not read)")
        if params.get("charset", "utf-8").lower() not in ("utf-8", "utf8"):
            raise Refused(f"part {n} declares a charset other than UTF-8")
        # Only what gate reads leaves: any other parameter (or a media type that is not
        # `type/subtype`) is a place a value could ride unscreened.
        if set(params) - {"charset"}:
            raise Refused(f"part {n}'s Content-Type has a parameter other than charset")
        if not _MEDIA.fullmatch(kind):
            raise Refused(f"part {n}'s Content-Type is not a `type/subtype` media type")
    name: str | None = None
    filename: str | None = None
    if form or "content-disposition" in fields:
        disposition, params = media_type(fields.get("content-disposition", ""))
        if disposition != "form-data" or "name" not in params:
            raise Refused(f"part {n} is not `form-data` with a name")
        if set(params) - {"name", "filename"}:
            raise Refused(
                f"part {n}'s Content-Disposition has a parameter gate does not"
                " read (`filename*` beside `filename` names a file twice)"
            )
        name, filename = params["name"], params.get("filename")
        if name in names:
            raise Refused(f"two parts are named {name[:40]!r} (servers keep one or the other)")
        names.add(name)
    return Part(
        name=name,
        filename=filename,
        content_type=kind,
        start=content,
        end=end,
        header=fields.get("content-type"),
    )


def assemble(body: bytes, parts: list[Part], contents: list[bytes]) -> bytes:
    """The body with each part's content replaced, every other byte as it was."""
    out, pos = bytearray(), 0
    for part, content in zip(parts, contents, strict=True):
        out += body[pos : part.start] + content
        pos = part.end
    return bytes(out + body[pos:])
