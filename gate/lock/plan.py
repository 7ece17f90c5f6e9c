"""What a lock hides, shows read-only and keeps: decided outside, carried to the launcher."""

from __future__ import annotations

import base64
import json
from dataclasses import asdict, dataclass, field


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    argv: tuple[str, ...]
    port: int  # the loopback port inside the lock that leads to the gate
    # Covered by an empty read-only tmpfs: gate's data and config dirs.
    hidden: tuple[str, ...]
    # Files that appear, with these bytes, inside a hidden dir (the CA certificate).
    shown: dict[str, str] = field(default_factory=dict)  # path → base64
    # Bound onto themselves read-only: rule files, Claude settings, gate's own code.
    readonly: tuple[str, ...] = ()
    # Replaced by a fresh tmpfs: where other programs' sockets live (tmux, D-Bus, ssh-agent).
    fresh: tuple[str, ...] = ("/tmp", "/run")  # noqa: S108 (masked, not used)
    # Bound back in when a fresh tmpfs covered them: the project, the home directory.
    keep: tuple[str, ...] = ()
    uid: int = 0
    gid: int = 0

    def to_json(self) -> bytes:
        return json.dumps(asdict(self)).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Plan:
        raw = json.loads(data)
        for key in ("argv", "hidden", "readonly", "fresh", "keep"):
            raw[key] = tuple(raw[key])
        return cls(**raw)

    def shown_bytes(self) -> dict[str, bytes]:
        return {p: base64.b64decode(b) for p, b in self.shown.items()}


def encode_shown(files: dict[str, bytes]) -> dict[str, str]:
    return {p: base64.b64encode(b).decode() for p, b in files.items()}
