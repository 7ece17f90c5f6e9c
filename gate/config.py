"""Typed, frozen config loaded from config.yaml (unknown keys are errors)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path
from types import MappingProxyType
from typing import Any
from urllib.parse import urlsplit

import yaml

from gate.errors import ConfigError, did_you_mean

SCHEMA_VERSION = 1
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8787
DEFAULT_UPSTREAMS = MappingProxyType(
    {
        "anthropic": "https://api.anthropic.com",
        "openai": "https://api.openai.com",
        "gemini": "https://generativelanguage.googleapis.com",
        # Gemini CLI signed in with Google talks to Code Assist, not the Gemini API.
        "code-assist": "https://cloudcode-pa.googleapis.com",
        # Codex signed in with ChatGPT: a provider whose base URL is this upstream.
        "chatgpt": "https://chatgpt.com/backend-api/codex",
    }
)
# Path segments gate keeps for itself: /_gate/... (health, control) and /_run/<id>/... (runs).
RESERVED_NAMES = frozenset({"_gate", "_run"})
_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,62}$")
_KEYS = frozenset(
    {
        "schemaVersion",
        "host",
        "port",
        "upstreams",
        "screen",
        "audit",
        "ask",
        "decisions",
        "projects",
        "egress",
        "shared",
        "tls",
    }
)
_SCREEN_KEYS = {"max_files": 20_000, "max_file_bytes": 256 << 10}
_AUDIT_KEYS = frozenset({"retention_days", "max_size_mb", "lock_timeout_ms", "url"})


def base_url(host: str, port: int) -> str:
    """`http://host:port`, with an IPv6 address in brackets."""
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


@dataclass(frozen=True)
class AuditSettings:
    """config.yaml `audit:`. Requests older than retention_days are pruned, then the oldest
    until the database uses at most max_size_mb (None: no size cap). A write that waits
    longer than lock_timeout_ms for the database lock fails, and the request is blocked.
    url: a PostgreSQL database many gates share (postgresql://...), instead of audit.db."""

    retention_days: int = 90
    max_size_mb: int | None = None
    lock_timeout_ms: int = 5000
    url: str | None = None


@dataclass(frozen=True, kw_only=True)
class Upstream:
    name: str
    scheme: str
    host: str
    port: int
    base_path: str  # without trailing slash; prefixed to the forwarded path
    # Weakens protection: a body that is not JSON is forwarded unscreened (and audited as
    # such) instead of blocked. For upstreams that take uploads gate cannot read.
    unsafe_pass_non_json: bool = False

    @property
    def url(self) -> str:
        default = {"https": 443, "http": 80}[self.scheme]
        host = f"[{self.host}]" if ":" in self.host else self.host
        netloc = host if self.port == default else f"{host}:{self.port}"
        return f"{self.scheme}://{netloc}{self.base_path}"


@dataclass(frozen=True)
class AskConfig:
    """`ask:` how gate puts an ask finding to a person (docs/ask.md)."""

    mode: str = "ask"  # "ask", or "never": apply `default` at once (headless, CI)
    timeout_seconds: float = 120.0  # then `default` applies
    default: str = "redact"  # "redact" | "block"


@dataclass(frozen=True, kw_only=True)
class DecisionsConfig:
    """`decisions:` the local dataset of answers, and an optional helper proposing them."""

    record_dataset: bool = True
    helper_url: str | None = None
    allow_remote: bool = False  # a helper_url off this machine (the question leaves with it)
    # Team answers (`--remember team`), shared in PostgreSQL: the team's key file, and the
    # database when it is not the audit's (audit.url).
    team_key_file: Path | None = None
    url: str | None = None


class EgressDefault(StrEnum):
    """What forward mode does with a host that is not a model host nor on the allow list."""

    TUNNEL_AND_LOG = "tunnel-and-log"
    BLOCK = "block"


@dataclass(frozen=True)
class EgressSettings:
    """`egress:` forward mode's policy for every host gate does not screen. Allowed hosts
    (exact names, or `*.example.com`) are tunnelled unread; the others get `default`.
    Every tunnel is recorded in the audit (host, port, bytes, agent, time)."""

    default: EgressDefault = EgressDefault.TUNNEL_AND_LOG
    allow: tuple[str, ...] = ()

    def allows(self, host: str) -> bool:
        return self.listed(host) or self.default is EgressDefault.TUNNEL_AND_LOG

    def listed(self, host: str) -> bool:
        """On the allow list (what a locked agent may reach besides the model hosts)."""
        host = host.lower().rstrip(".")
        return any(
            host == pattern or (pattern.startswith("*.") and host.endswith(pattern[1:]))
            for pattern in self.allow
        )


@dataclass(frozen=True)
class TlsSettings:
    """`tls:` the listener's certificate chain and key (PEM files), and with client_ca the
    CA whose client certificates sign a user in (mutual TLS; the CN is the user name)."""

    cert: str | None = None
    key: str | None = None
    client_ca: str | None = None

    @property
    def on(self) -> bool:
        return self.cert is not None


@dataclass(frozen=True, kw_only=True)
class Config:
    host: str = DEFAULT_HOST
    port: int = DEFAULT_PORT
    upstreams: MappingProxyType[str, Upstream] = field(
        default_factory=lambda: MappingProxyType(
            {n: parse_upstream(n, u) for n, u in DEFAULT_UPSTREAMS.items()}
        )
    )
    # The denied-file walk's bounds: entries looked at per walk, bytes read per file.
    max_files: int = _SCREEN_KEYS["max_files"]
    max_file_bytes: int = _SCREEN_KEYS["max_file_bytes"]
    # Project directories whose denied files are looked for in requests that state no
    # working directory (`projects:`, `gate serve --project DIR`).
    projects: tuple[str, ...] = ()
    audit: AuditSettings = AuditSettings()
    ask: AskConfig = AskConfig()
    decisions: DecisionsConfig = DecisionsConfig()
    egress: EgressSettings = EgressSettings()
    forward: bool = False  # set by --forward, never by config.yaml: a proxy for any host
    # A gate that serves others (docs/team.md): TLS and a user's token on every request.
    # Listening anywhere but loopback makes a gate shared whatever this says.
    shared: bool = False
    tls: TlsSettings = TlsSettings()

    def with_upstreams(self, extra: dict[str, Upstream]) -> Config:
        return replace(self, upstreams=MappingProxyType({**self.upstreams, **extra}))


def parse_upstream(name: str, url: str) -> Upstream:
    """Parse one `NAME=URL` upstream; raise ValueError naming what is wrong."""
    if name in RESERVED_NAMES or not _NAME.match(name):
        raise ValueError(
            f"upstream name {name!r} is invalid: use lowercase letters, digits, '-', '_' or '.'"
            " (and not _gate or _run)"
        )
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"upstream {name!r}: {url!r} is not an http(s) URL with a host")
    if parts.query or parts.fragment:
        raise ValueError(f"upstream {name!r}: {url!r} must not have a query or fragment")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return Upstream(
        name=name,
        scheme=parts.scheme,
        host=parts.hostname,
        port=port,
        base_path=parts.path.rstrip("/"),
    )


def parse_upstream_option(text: str) -> Upstream:
    """Parse `--upstream NAME=URL`."""
    name, sep, url = text.partition("=")
    if not sep:
        raise ValueError(f"--upstream {text!r}: expected NAME=URL, e.g. work=https://llm.example")
    return parse_upstream(name.strip(), url.strip())


_UPSTREAM_KEYS = frozenset({"url", "unsafe_pass_non_json"})


def _upstream_entry(name: str, entry: Any) -> Upstream:
    """`NAME: URL`, or `NAME: {url: URL, unsafe_pass_non_json: true}`."""
    if not isinstance(entry, dict):
        return parse_upstream(name, str(entry))
    unknown = sorted(set(entry) - _UPSTREAM_KEYS)
    if unknown:
        raise ValueError(f"unknown key {unknown[0]!r}; known: url, unsafe_pass_non_json")
    if "url" not in entry:
        raise ValueError("missing url")
    unsafe = entry.get("unsafe_pass_non_json", False)
    if not isinstance(unsafe, bool):
        raise ValueError("unsafe_pass_non_json must be true or false")
    return replace(parse_upstream(name, str(entry["url"])), unsafe_pass_non_json=unsafe)


def load(path: Path) -> Config:
    """Load config.yaml; a missing file means defaults. Errors name the file and field."""
    if not path.exists():
        return Config()
    try:
        text = path.read_text(encoding="utf-8")
        data = yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read config: {exc}", where=str(path)) from exc
    if data is None:
        return Config()
    if not isinstance(data, dict):
        raise ConfigError("expected a mapping at the top level", where=str(path))
    from gate.config_check import collect

    return collect(data, path, text, _from_mapping)


def _from_mapping(data: dict[str, Any], path: Path) -> Config:
    unknown = sorted(set(data) - _KEYS)
    if unknown:
        raise ConfigError(
            f"unknown key {unknown[0]!r}",
            where=f"{path}: {unknown[0]}",
            hint=did_you_mean(str(unknown[0]), _KEYS),
        )
    version = data.get("schemaVersion", SCHEMA_VERSION)
    if version != SCHEMA_VERSION:
        raise ConfigError(
            f"schemaVersion {version!r} is not supported (this gate reads {SCHEMA_VERSION})",
            where=f"{path}: schemaVersion",
            hint="upgrade gate or fix the file",
        )
    config = Config()
    host = data.get("host", DEFAULT_HOST)
    port = data.get("port", DEFAULT_PORT)
    if not isinstance(host, str) or not host:
        raise ConfigError("host must be a non-empty string", where=f"{path}: host")
    if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535:
        raise ConfigError("port must be an integer 0-65535", where=f"{path}: port")
    ups = data.get("upstreams") or {}
    if not isinstance(ups, dict):
        raise ConfigError("upstreams must map NAME to URL", where=f"{path}: upstreams")
    extra: dict[str, Upstream] = {}
    for name, entry in ups.items():
        where = f"{path}: upstreams.{name}"
        try:
            extra[str(name)] = _upstream_entry(str(name), entry)
        except ValueError as exc:
            raise ConfigError(str(exc), where=where) from exc
    screen = data.get("screen") or {}
    if not isinstance(screen, dict):
        raise ConfigError("screen must be a mapping", where=f"{path}: screen")
    limits: dict[str, int] = dict(_SCREEN_KEYS)
    for key, value in screen.items():
        if key not in _SCREEN_KEYS:
            raise ConfigError(
                f"unknown key {key!r}",
                where=f"{path}: screen.{key}",
                hint=did_you_mean(str(key), _SCREEN_KEYS),
            )
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ConfigError("must be a positive integer", where=f"{path}: screen.{key}")
        limits[key] = value
    return replace(
        config,
        host=host,
        port=port,
        max_files=limits["max_files"],
        projects=_projects(data.get("projects"), path),
        max_file_bytes=limits["max_file_bytes"],
        audit=_audit(data.get("audit"), path),
        ask=_ask(data.get("ask"), path),
        decisions=_decisions(data.get("decisions"), path),
        egress=_egress(data.get("egress"), path),
        shared=_flag(data.get("shared", False), f"{path}: shared"),
        tls=_tls(data.get("tls"), path),
    ).with_upstreams(extra)


def _projects(section: Any, path: Path) -> tuple[str, ...]:
    """`projects:` a list of existing directories (`~` expands)."""
    if section is None:
        return ()
    if not isinstance(section, list):
        raise ConfigError("projects must be a list of directories", where=f"{path}: projects")
    out = []
    for i, entry in enumerate(section):
        where = f"{path}: projects[{i}]"
        if not isinstance(entry, str) or not entry:
            raise ConfigError("must be a directory path", where=where)
        full = os.path.abspath(os.path.expanduser(entry))
        if not os.path.isdir(full):
            raise ConfigError(
                f"{full} is not a directory", where=where, hint="create it, or remove the entry"
            )
        out.append(full)
    return tuple(out)


def _audit(section: Any, path: Path) -> AuditSettings:
    """The `audit:` section: positive integers; max_size_mb may be null (no size cap)."""
    values: dict[str, Any] = {}
    for key, value in _section(section, "audit", _AUDIT_KEYS, path).items():
        where = f"{path}: audit.{key}"
        if value is None and key in ("max_size_mb", "url"):
            values[key] = None
            continue
        if key == "url":
            values[key] = audit_url(value, where)
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ConfigError(
                f"must be a positive integer, not {value!r}",
                where=where,
                hint="max_size_mb may also be null for no size cap"
                if key == "max_size_mb"
                else None,
            )
        values[key] = value
    return replace(AuditSettings(), **values)


def audit_url(value: Any, where: str) -> str:
    """A PostgreSQL URL (postgresql:// or postgres://); the message never repeats it, as
    it may hold a password."""
    if not isinstance(value, str) or urlsplit(value).scheme not in ("postgresql", "postgres"):
        raise ConfigError(
            "must be a PostgreSQL URL (postgresql://user@host/db)",
            where=where,
            hint="leave audit.url out for the audit.db in the data dir; a"
            " password is better kept in ~/.pgpass or PGPASSWORD",
        )
    return value


def _section(data: Any, name: str, keys: frozenset[str], path: Path) -> dict[str, Any]:
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{name} must be a mapping", where=f"{path}: {name}")
    if unknown := sorted(set(map(str, data)) - keys):
        raise ConfigError(
            f"unknown key {unknown[0]!r}",
            where=f"{path}: {name}.{unknown[0]}",
            hint=did_you_mean(unknown[0], keys),
        )
    return data


def _ask(data: Any, path: Path) -> AskConfig:
    """`ask: never`, or `ask: {mode, timeout_seconds, default}`."""
    if data in ("never", "ask"):
        return AskConfig(mode=str(data))
    if data is False:  # YAML reads a bare `no`/`off` as false
        return AskConfig(mode="never")
    d = _section(data, "ask", frozenset({"mode", "timeout_seconds", "default"}), path)
    ask = AskConfig()
    mode, default = d.get("mode", ask.mode), d.get("default", ask.default)
    timeout = d.get("timeout_seconds", ask.timeout_seconds)
    if mode not in ("ask", "never"):
        raise ConfigError("must be ask or never", where=f"{path}: ask.mode")
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not 0 < timeout <= 86400
    ):
        raise ConfigError(
            "must be a number of seconds, more than 0 and at most 86400",
            where=f"{path}: ask.timeout_seconds",
        )
    if default not in ("redact", "block"):
        raise ConfigError(
            "must be redact or block (what applies when nobody answers)",
            where=f"{path}: ask.default",
        )
    return AskConfig(str(mode), float(timeout), str(default))


def _decisions(data: Any, path: Path) -> DecisionsConfig:
    d = _section(
        data,
        "decisions",
        frozenset({"record_dataset", "helper_url", "allow_remote", "team_key_file", "url"}),
        path,
    )
    for key in ("record_dataset", "allow_remote"):
        if not isinstance(d.get(key, False), bool):
            raise ConfigError("must be true or false", where=f"{path}: decisions.{key}")
    url = d.get("helper_url")
    if url is not None and (
        not isinstance(url, str) or urlsplit(url).scheme not in ("http", "https")
    ):
        raise ConfigError("must be an http(s) URL", where=f"{path}: decisions.helper_url")
    key_file = d.get("team_key_file")
    if key_file is not None and (not isinstance(key_file, str) or not key_file):
        raise ConfigError(
            "must be the path of the team's key file", where=f"{path}: decisions.team_key_file"
        )
    team_url = d.get("url")
    return DecisionsConfig(
        record_dataset=d.get("record_dataset", True),
        helper_url=url,
        allow_remote=d.get("allow_remote", False),
        # relative: to config.yaml's dir, never the cwd
        team_key_file=path.parent / os.path.expanduser(key_file) if key_file else None,
        url=audit_url(team_url, f"{path}: decisions.url") if team_url else None,
    )


_HOST = re.compile(
    r"^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$"
    r"|^[0-9.]+$|^\[?[0-9a-f:]+\]?$"
)


def _egress(data: Any, path: Path) -> EgressSettings:
    """`egress: {default: tunnel-and-log | block, allow: [host, *.domain, ...]}`."""
    d = _section(data, "egress", frozenset({"default", "allow"}), path)
    default = d.get("default", EgressDefault.TUNNEL_AND_LOG.value)
    if default not in {e.value for e in EgressDefault}:
        raise ConfigError(
            f"must be tunnel-and-log or block, not {default!r}", where=f"{path}: egress.default"
        )
    allow = d.get("allow") or []
    if not isinstance(allow, list):
        raise ConfigError("must be a list of host names", where=f"{path}: egress.allow")
    hosts: list[str] = []
    for i, host in enumerate(allow):
        if not isinstance(host, str) or not _HOST.match(host.lower()):
            raise ConfigError(
                f"{host!r} is not a host name (write example.com or"
                " *.example.com, no scheme, port or path)",
                where=f"{path}: egress.allow[{i}]",
            )
        hosts.append(host.lower().strip("[]"))
    return EgressSettings(EgressDefault(default), tuple(hosts))


def _flag(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigError("must be true or false", where=where)
    return value


def _tls(data: Any, path: Path) -> TlsSettings:
    """`tls: {cert, key, client_ca}`: PEM file paths (`~` expands); cert and key together."""
    d = _section(data, "tls", frozenset({"cert", "key", "client_ca"}), path)
    values: dict[str, str] = {}
    for key, value in d.items():
        if value is None:
            continue
        if not isinstance(value, str) or not value:
            raise ConfigError("must be the path of a PEM file", where=f"{path}: tls.{key}")
        values[str(key)] = os.path.abspath(os.path.expanduser(value))
    if ("cert" in values) != ("key" in values):
        raise ConfigError(
            "tls.cert and tls.key go together",
            where=f"{path}: tls",
            hint="give both: the certificate chain and its private key",
        )
    if "client_ca" in values and "cert" not in values:
        raise ConfigError("tls.client_ca needs tls.cert and tls.key", where=f"{path}: tls")
    return TlsSettings(**values)
