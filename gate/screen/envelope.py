"""What a request carries besides its body (path segments, the query, headers), checked
for denied values and secrets before it leaves: gate cannot withhold them in place."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Sequence

from gate.screen.detectors import Tier
from gate.screen.disclose import Scrub, api_key_param, readings

# Headers that carry the caller's own credential to the provider: sent as they are when
# the credential is one token (even a denied value: the caller's key kept in `.env`), never
# stored; a denied value inside, beside or encoded in it refuses them (docs/guarantees.md).
# Only those the route's upstream reads pass so (`credential_headers`); the others are
# screened like any header.
AUTH_HEADERS = frozenset(
    {"authorization", "x-api-key", "x-goog-api-key", "api-key", "x-amz-security-token"}
)
# Headers whose values SDKs and agents fill with their own names and versions: a denied
# value that is one of the words SDKs write there (`RUNTIME=python` in .env) does not
# refuse them. Exact names (Stainless SDKs' `x-stainless-*` headers each by name), and only
# the closed list of words below: any other word, a password of letters alone included,
# refuses the request wherever it is (docs/guarantees.md).
_INFORMATIONAL = frozenset(
    {
        "user-agent",
        "accept",
        "accept-encoding",
        "accept-language",
        "x-app",
        "x-goog-api-client",
        "editor-version",
        "editor-plugin-version",
        "copilot-integration-id",
        "originator",
        "x-stainless-lang",
        "x-stainless-package-version",
        "x-stainless-os",
        "x-stainless-arch",
        "x-stainless-runtime",
        "x-stainless-runtime-version",
        "x-stainless-retry-count",
        "x-stainless-timeout",
        "x-stainless-read-timeout",
        "x-stainless-async",
        "x-stainless-helper-method",
        "x-stainless-stream-helper",
        "x-stainless-poll-helper",
    }
)
# The words of six or more characters (shorter ones are never denied values) that SDKs
# and agents write in those headers: languages and runtimes, operating systems and
# architectures, SDK, agent and terminal names, media types and codings. Lower case.
_SDK_WORDS = frozenset(
    {
        *("python", "cpython", "pypy3", "ironpython", "javascript", "typescript", "golang"),
        *("browser", "workerd", "asyncio", "undici", "aiohttp", "requests", "urllib3"),
        *("darwin", "windows", "freebsd", "openbsd", "netbsd", "android", "ubuntu", "debian"),
        *("fedora", "alpine", "centos", "archlinux", "macintosh"),
        *("aarch64", "arm64", "amd64", "x86_64", "win32", "win64", "armv7l", "ppc64le"),
        *("anthropic", "openai", "google", "gemini", "geminicli", "claude", "opencode"),
        *("copilot", "vscode", "litellm", "stainless", "mozilla", "compatible", "external"),
        *("provider", "runtime", "helper", "stream", "terminal", "alacritty", "wezterm"),
        *("iterm2", "ghostty", "konsole", "xterm", "screen", "apple", "application"),
        *("identity", "deflate", "unknown", "integration", "plugin", "editor", "panel"),
    }
)
# Gate's own framing and routing: replaced or removed before the request leaves.
_FRAMING = frozenset(
    {"host", "content-length", "transfer-encoding", "content-encoding", "connection"}
)
# Authorization schemes whose credential is one token after the scheme word; `Basic` is
# base64 of `user:password`, each part read on its own.
_SCHEMES = frozenset({"bearer", "token", "basic"})
# A JSON Web Token (ChatGPT's and Google's OAuth bearer tokens): its payload is base64 of
# claims (an e-mail address, an account id) that a denied file may also hold, so only a
# denied value written into it as is refuses it.
_JWT = re.compile(r"eyJ[\w-]+\.eyJ[\w-]+\.[\w-]*")
# Path segments read joined in every run of consecutive ones (a value cut in two across
# segments); a path with more is refused rather than read in part.
MAX_SEGMENTS = 32


def credential_headers(name: str, host: str) -> frozenset[str]:
    """The credential headers the upstream `name` at `host` reads: Anthropic's x-api-key
    or a bearer token, OpenAI's (and Copilot's, ChatGPT's) bearer token, Azure's api-key,
    Google's x-goog-api-key or OAuth token, Bedrock's bearer or session token. An upstream
    gate does not know (a team gateway) reads a bearer token or x-api-key."""
    host = host.lower()
    out = {"authorization"}
    if name == "anthropic" or host.endswith("anthropic.com"):
        out.add("x-api-key")
    if name.startswith("azure") or host.endswith(".azure.com"):
        out |= {"api-key", "x-api-key"}
    if google_upstream(name, host):
        out.add("x-goog-api-key")
    if name == "bedrock" or host.endswith(".amazonaws.com"):
        out.add("x-amz-security-token")
    known = ("openai", "chatgpt", "github-copilot", "copilot")
    if (
        len(out) == 1
        and name not in known
        and not host.endswith(("openai.com", "chatgpt.com", "githubcopilot.com"))
    ):
        out.add("x-api-key")
    return frozenset(out)


def _informational(name: str) -> bool:
    return name in _INFORMATIONAL


def _sdk_word(form: str) -> bool:
    """A word SDKs write in their own headers (a runtime, OS, architecture or SDK name);
    a password of letters, or of letters and digits, is not one."""
    return form.lower() in _SDK_WORDS


class Envelope:
    """The checks one request's path, query and headers get."""

    def __init__(self, scrub: Scrub):
        self.scrub = scrub
        # The denied values one request's credentials are, whole: one is the caller's key
        # kept in `.env`; two (`x-api-key` and a bearer token, Basic's user and password,
        # `?key=` beside a header) are values sent under keys' names.
        self._whole: set[str] = set()

    def refusal(
        self,
        path: str,
        headers: Sequence[tuple[str, str]],
        google: bool,
        credentials: frozenset[str] = AUTH_HEADERS,
    ) -> str | None:
        """Why the request must not leave (naming where, never what), or None.
        `credentials`: the credential headers the upstream reads, passed as they are
        when each is one token and no more than one is a denied value."""
        self._whole.clear()
        base, _, query = path.partition("?")
        segments = [s for s in base.split("/") if s]
        if len(segments) > MAX_SEGMENTS:
            return f"the request path has more than {MAX_SEGMENTS} segments; it was not sent"
        if any(self._holds(r) for s in _runs(segments) for r in readings(s)):
            return (
                "a path segment (or a run of them read together) holds a denied file's"
                " value or a likely secret; gate cannot withhold it in place, so the"
                " request was not sent"
            )
        if self.scrub.query_holds(path, google) or self._values_hold(query, google):
            return (
                "the query string holds a denied file's value or a likely secret; gate"
                " cannot withhold it in place, so the request was not sent"
            )
        if google and (key := _google_key(query)) is not None and self._smuggled(key):
            return (
                "the query's key= holds a denied file's value inside or beside the API key"
                " (a key that is exactly one denied value passes: it is often the caller's"
                " own); the request was not sent"
            )
        if why := self._headers(headers, credentials):
            return why
        if len(self._whole) > 1:
            return (
                "the request's credentials are more than one denied file's value (one"
                " passes: it is often the caller's own key); the request was not sent"
            )
        return None

    def _values_hold(self, query: str, google: bool) -> bool:
        """A value cut in two across parameters: their values read together, in order."""
        params = [p for p in query.split("&") if p]
        if google and (first := api_key_param(params)) is not None:
            del params[first]
        values = [p.partition("=")[2] for p in params][:MAX_SEGMENTS]
        return any(self._holds(r) for s in _runs(values) for r in readings(s))

    def _headers(
        self, headers: Sequence[tuple[str, str]], credentials: frozenset[str] = AUTH_HEADERS
    ) -> str | None:
        names = [name.lower() for name, _ in headers]
        for name in AUTH_HEADERS:
            if names.count(name) > 1:
                # Which copy the provider reads is its choice: the other one leaves unread.
                return (
                    f"the request repeats the {name} header; gate passes one credential"
                    " header of each name, so the request was not sent"
                )
        values: list[str] = []
        sdk: list[str] = []  # informational values, where an SDK's own words may be
        for (raw, value), name in zip(headers, names, strict=True):
            if name in credentials:
                if self._smuggled(value):
                    return (
                        f"the {name} header holds a denied file's value inside or beside"
                        " the credential (a credential that is exactly one denied value"
                        " passes: it is often the caller's own key); the request was not"
                        " sent"
                    )
                continue
            if name in _FRAMING:
                continue
            words = _informational(name)
            if any(self._holds(r, words) for r in readings(f"{raw}: {value}")):
                # The name is quoted only when it is short and holds nothing itself.
                which = (
                    f"the {name!r} header"
                    if len(name) <= 40 and not self.scrub.holds(name)
                    else "a header"
                )
                return (
                    f"{which} holds a denied file's value or a likely secret; the request"
                    " was not sent"
                )
            values.append(value)
            if words:
                sdk += readings(value)
        # A value cut in two across headers, read back in their order, and a word-like
        # value inside a longer one (`aPassw0rd1z`): found wherever it is, but an SDK's
        # own word where an SDK writes it.
        for reading in readings("".join(values)):
            for index in self.scrub.indexes:
                for hit in index.find(reading, whole_words=False):
                    form = reading[hit.start : hit.end]
                    if not (_sdk_word(form) and any(form in v for v in sdk)):
                        return self._joined()
            # Its denied values were all read just above (whole words are among them).
            if self._holds(reading, skip_words=True):
                return self._joined()
        return None

    def _smuggled(self, value: str) -> bool:
        """Whether a credential holds a denied value other than as the whole credential.
        The caller's key is one token and may itself be a denied value (the key kept in
        `.env`): that passes, as gate cannot tell it from another value put there
        (docs/guarantees.md). A denied value beside other text, several of them, or one
        encoded into the credential is a value sent under a key's name."""
        parts = _credential_parts(value)
        if parts is None:
            return any(self._denied(r) for r in readings(value))
        for part in parts:
            if not part:
                continue
            if any(part in index.units for index in self.scrub.indexes):
                self._whole.add(part)
                continue
            if _JWT.fullmatch(part):
                if self._denied(part, as_written=True):
                    return True
            elif any(self._denied(r) for r in readings(part)):
                return True
        return False

    def _denied(self, text: str, as_written: bool = False) -> bool:
        """A denied value in `text`, in any form the indexes know, or (`as_written`) only
        as the value itself, in the case it was written in."""
        for index in self.scrub.indexes:
            for hit in index.find(text):
                if not as_written or text[hit.start : hit.end] in index.units:
                    return True
        return False

    @staticmethod
    def _joined() -> str:
        return (
            "the request's headers together hold a denied file's value or a likely"
            " secret; the request was not sent"
        )

    def _holds(self, text: str, skip_words: bool = False) -> bool:
        """A denied value (other than an SDK's word, when `skip_words`) or a high-tier
        secret: generic low-tier detectors would refuse provider ids and trace ids."""
        for index in self.scrub.indexes:
            for hit in index.find(text):
                if not (skip_words and _sdk_word(text[hit.start : hit.end])):
                    return True
        secrets = self.scrub.secrets
        return secrets is not None and any(f.tier is Tier.HIGH for f in secrets.scanner.scan(text))


def _credential_parts(value: str) -> list[str] | None:
    """The tokens of a credential header: the token after a `Bearer` or `Token` scheme,
    `Basic`'s user and password, or the whole value. None: a `Basic` value that is no
    base64 of text (read whole, as any header is)."""
    value = value.strip()
    scheme, _, rest = value.partition(" ")
    if scheme.lower() not in _SCHEMES or not rest.strip():
        return [value]
    rest = rest.strip()
    if scheme.lower() != "basic":
        return [rest]
    try:
        plain = base64.b64decode(rest, validate=True).decode()
    except (binascii.Error, ValueError):
        return None
    user, _, password = plain.partition(":")
    return [user, password]


def _google_key(query: str) -> str | None:
    """A Google upstream's API key: the first `key=` parameter's value."""
    params = query.split("&")
    first = api_key_param(params)
    return None if first is None else params[first].removeprefix("key=")


def google_upstream(
    name: str, host: str, names: Iterable[str] = ("gemini", "code-assist", "vertex")
) -> bool:
    """Whether an upstream takes Google's `?key=` API key: the Gemini API, Code Assist or
    Vertex, by name or by host."""
    return name in names or host.lower().endswith(".googleapis.com")


def _runs(parts: Sequence[str]) -> list[str]:
    """Every run of consecutive parts, joined without and with a slash (a value cut in two
    and spread over them)."""
    out = []
    for i in range(len(parts)):
        for j in range(i + 1, len(parts) + 1):
            out.append("".join(parts[i:j]))
            if j - i > 1:
                out.append("/".join(parts[i:j]))
    return list(dict.fromkeys(out))
