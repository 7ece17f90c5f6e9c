"""Google Gemini (`models/{m}:generateContent`, Code Assist, Vertex): body ⇄ segments.

Google's JSON parser accepts each field in lowerCamel or snake_case, so both spellings are
read here: a `function_response` must not slip past a walker that only knows
`functionResponse`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from gate.providers.history import remembered
from gate.providers.paths import normalise
from gate.providers.segments import (
    JsonPath,
    Role,
    Segment,
    ToolCall,
    Walk,
    add_result,
    get_at,
    pair,
    strings,
)

FORMAT = "gemini"
# Gemini API (`/v1beta/models/{m}:…`), Code Assist (`/v1internal:…`, Gemini CLI's Google
# login) and Vertex (`…/publishers/google/models/{m}:…`) carry the same request.
_PATHS = re.compile(
    r"(/v1[a-z0-9]*/(models|tunedmodels)/[^/]+|/v1internal"
    r"|/publishers/google/models/[^/]+)"
    r":(generatecontent|streamgeneratecontent|counttokens)$"
)
# Where a request wraps the real one: Code Assist's `request`, countTokens'
# `generateContentRequest`.
_WRAPPERS = ("request", "generateContentRequest")
_MEDIA = ("inlineData", "fileData")
# Opaque to us and signed for the provider: passed back unchanged or the API rejects it.
_SIGNATURES = frozenset({"thoughtSignature", "thought_signature"})
_STATUS = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


# A context cache (`cachedContents`, created or updated) holds the same contents,
# systemInstruction and tools as a request, sent once and then named by later ones.
_CACHED = re.compile(r"/v1[a-z0-9]*/(projects/[^:]+/)?cachedcontents(/[^/:]+)?$")


def matches(path: str) -> bool:
    """Whether a request path is a generateContent, streamGenerateContent or countTokens call,
    or a context cache's contents."""
    norm = normalise(path).replace("%3a", ":")
    return bool(_PATHS.search(norm) or _CACHED.search(norm))


def walk(body: dict[str, Any]) -> Walk:
    """Segments and paired tool calls of a request, and of any request it wraps."""
    segs: list[Segment] = []
    calls: list[ToolCall] = []
    models = [body.get("model")]
    for at, request in _requests(body, (), depth=0):
        pairing = _Pairing()
        _walk_request(request, at, segs, pairing)
        calls.extend(pair(pairing.uses, pairing.results))
        models.append(request.get("model"))
    model = next((m for m in models if isinstance(m, str) and m), None)
    return Walk(
        format=FORMAT,
        model=model.removeprefix("models/") if model else None,
        segments=tuple(segs),
        calls=tuple(calls),
    )


def _system(value: Any, at: JsonPath) -> tuple[Segment, ...]:
    return tuple(Segment(p, t, Role.SYSTEM) for p, t in strings(value, at))


def _requests(
    node: dict[str, Any], at: JsonPath, depth: int
) -> Iterator[tuple[JsonPath, dict[str, Any]]]:
    yield at, node
    for name in _WRAPPERS:
        key, inner = _field(node, name)
        if depth < 2 and isinstance(inner, dict):
            yield from _requests(inner, (*at, key), depth + 1)


@dataclass
class _Pairing:
    """Matches each functionResponse to the functionCall it answers, in body order."""

    uses: list[tuple[str, str, Any]] = field(default_factory=list)
    results: dict[str, JsonPath] = field(default_factory=dict)
    by_id: dict[str, str] = field(default_factory=dict)
    waiting: list[tuple[str, str, bool]] = field(default_factory=list)  # key, name, has id
    # The calls and responses paired, in order: (where the part is, key), a call's with
    # no "at"; kept while one content is walked, so that its walk can be reused.
    log: list[tuple[bool, JsonPath, str]] | None = None

    def call(self, fc: dict[str, Any], at: JsonPath = ()) -> str:
        name, id_ = str(fc.get("name")), _id(fc)
        key = id_ or f"{name}#{len(self.uses)}"
        self.uses.append((key, name, fc.get("args")))
        if id_:
            self.by_id[id_] = key
        self.waiting.append((key, name, bool(id_)))
        if self.log is not None:
            self.log.append((True, at, key))
        return key

    def answer(self, fr: dict[str, Any], at: JsonPath) -> str:
        """The key of the call a response answers; a response answering none, or a second
        answer to one call, raises ValueError."""
        name, id_ = str(fr.get("name")), _id(fr)
        key = self.by_id.get(id_) if id_ else None
        if key is None:
            # No id, or one its call never had (Gemini CLI makes ids up for calls that came
            # without): the Nth response named X answers the Nth call named X before it.
            key = next(
                (k for k, n, has_id in self.waiting if n == name and not (id_ and has_id)), None
            )
        if key is None:
            # A response that answers no call before it: its content would go unjudged.
            raise ValueError(f"tool result {id_ or name} answers no tool call in this request")
        self.waiting = [w for w in self.waiting if w[0] != key]
        add_result(self.results, key, at)
        if self.log is not None:
            self.log.append((False, at, key))
        return key


def _walk_request(
    req: dict[str, Any], at: JsonPath, segs: list[Segment], pairing: _Pairing
) -> None:
    for name in ("systemInstruction", "tools"):
        key, value = _field(req, name)
        # Remembered (providers.history): resent unchanged every turn.
        where = (*at, key)
        segs += remembered((FORMAT, "system", where), value, partial(_system, value, where))
    key, contents = _field(req, "contents")
    if not isinstance(contents, list | None):
        raise ValueError("contents is not a list")
    for i, content in enumerate(contents or ()):
        if not isinstance(content, dict):
            raise ValueError(f"contents[{i}] is not an object")
        c_at: JsonPath = (*at, key, i)
        walked: list[bool] = []
        # Remembered (providers.history): a content resent unchanged is walked again only
        # if its calls and responses pair otherwise than they did (their keys differ).
        c_segs, log = remembered(
            (FORMAT, "content", c_at),
            content,
            partial(_logged, content, c_at, pairing, walked),
        )
        if walked:
            segs += c_segs
            continue
        keys = [
            pairing.call(_field(get_at(req, p[len(at) :]), "functionCall")[1], p)
            if is_call
            else pairing.answer(_field(get_at(req, p[len(at) :]), "functionResponse")[1], p)
            for is_call, p, _ in log
        ]
        if keys == [k for _, _, k in log]:
            segs += c_segs
        else:  # paired otherwise now: walked with the keys the pairing just gave
            _walk_content(content, c_at, segs, _Replay(iter(keys)))


def _logged(
    content: dict[str, Any], at: JsonPath, pairing: _Pairing, walked: list[bool]
) -> tuple[tuple[Segment, ...], tuple[tuple[bool, JsonPath, str], ...]]:
    """A content's segments, and its calls and responses as the pairing keyed them."""
    walked.append(True)
    segs: list[Segment] = []
    pairing.log = []
    try:
        _walk_content(content, at, segs, pairing)
        return tuple(segs), tuple(pairing.log)
    finally:
        pairing.log = None


def _walk_content(
    content: dict[str, Any], at: JsonPath, segs: list[Segment], pairing: _Pairing
) -> None:
    role = Role.ASSISTANT_TEXT if content.get("role") == "model" else Role.USER_TEXT
    answered = None  # the call whose response the media parts that follow belong to
    for j, part in enumerate(content.get("parts") or ()):
        if not isinstance(part, dict):
            raise ValueError(f"contents[{at[-1]}].parts[{j}] is not an object")
        answered = _walk_part(part, (*at, "parts", j), role, answered, segs, pairing)


class _Replay(_Pairing):
    """The keys a pairing already gave a content's calls and responses, in order."""

    def __init__(self, keys: Iterator[str]) -> None:
        super().__init__()
        self._keys = keys

    def call(self, fc: dict[str, Any], at: JsonPath = ()) -> str:
        return next(self._keys)

    def answer(self, fr: dict[str, Any], at: JsonPath) -> str:
        return next(self._keys)


def _walk_part(
    part: dict[str, Any],
    at: JsonPath,
    role: Role,
    answered: str | None,
    segs: list[Segment],
    pairing: _Pairing,
) -> str | None:
    fc_key, fc = _field(part, "functionCall")
    fr_key, fr = _field(part, "functionResponse")
    if isinstance(fr, dict):
        answered = pairing.answer(fr, at)
    elif not _is_media(part):
        answered = None
    for key, value in part.items():
        p_at: JsonPath = (*at, key)
        if key in _SIGNATURES or (key == "text" and part.get("thought") is True):
            segs.extend(Segment(p, t, Role.IMMUTABLE) for p, t in strings(value, p_at))
        elif key == "text":
            segs.extend(Segment(p, t, role) for p, t in strings(value, p_at))
        elif key == fc_key and isinstance(fc, dict):
            call_id = pairing.call(fc, at)
            segs.extend(Segment(p, t, Role.TOOL_CALL, call_id) for p, t in _payload(fc, p_at))
        elif key == fr_key and isinstance(fr, dict):
            segs.extend(Segment(p, t, Role.TOOL_RESULT, answered) for p, t in _payload(fr, p_at))
        elif answered:
            # Gemini CLI sends a read file's image or PDF as parts right after the response.
            segs.extend(Segment(p, t, Role.TOOL_RESULT, answered) for p, t in strings(value, p_at))
        else:
            # inlineData, fileData, executableCode, codeExecutionResult and parts we do not
            # know yet: every string is screened.
            segs.extend(Segment(p, t, Role.ATTACHMENT) for p, t in strings(value, p_at))
    return answered


def _payload(obj: dict[str, Any], at: JsonPath) -> Iterator[tuple[JsonPath, str]]:
    """Every string of a call or response but its id and name."""
    return (
        (p, t) for p, t in strings(obj, at) if len(p) > len(at) + 1 or p[-1] not in ("id", "name")
    )


def withhold_result(body: dict[str, Any], result: JsonPath, placeholder: str) -> None:
    """Replace a functionResponse's response with `{"output": placeholder}`, in place.

    Its id, name and position stay; its media `parts` go (a function response part holds
    only inline or file data, never text), and so do media parts that follow it, which
    become text parts at the same index.
    """
    parts = get_at(body, result[:-1])
    index = int(result[-1])
    _, fr = _field(parts[index], "functionResponse")
    fr["response"] = {"output": placeholder}
    fr.pop("parts", None)
    for i in range(index + 1, len(parts)):
        if not _is_media(parts[i]):
            break
        signed = {k: v for k, v in parts[i].items() if k in _SIGNATURES}
        parts[i] = {"text": placeholder, **signed}


def error_body(message: str, status: int = 403) -> dict[str, Any]:
    """A Google-shaped error, so the genai SDK and Gemini CLI show gate's message."""
    return {
        "error": {
            "code": status,
            "message": message,
            "status": _STATUS.get(status, "PERMISSION_DENIED"),
        }
    }


def _field(obj: dict[str, Any], camel: str) -> tuple[str, Any]:
    """A field under either spelling; both at once is a body gate cannot read one way."""
    snake = _snake(camel)
    if camel in obj and snake in obj and snake != camel:
        raise ValueError(f"{camel} is spelled two ways in one object")
    return (snake, obj[snake]) if snake in obj else (camel, obj.get(camel))


@functools.cache  # a handful of field names, looked up for every part of every turn
def _snake(camel: str) -> str:
    return re.sub(r"([A-Z])", r"_\1", camel).lower()


def _is_media(part: Any) -> bool:
    return (
        isinstance(part, dict)
        and any(_field(part, m)[1] is not None for m in _MEDIA)
        and all(_field(part, k)[1] is None for k in ("text", "functionCall", "functionResponse"))
    )


def _id(obj: dict[str, Any]) -> str | None:
    value = obj.get("id")
    return value if isinstance(value, str) and value else None
