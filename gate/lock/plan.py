"""What a lock hides, shows read-only and keeps: decided outside, carried to the launcher."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class Plan:
    argv: tuple[str, ...]
    port: int  # the loopback port inside the lock that leads to the gate
    # Covered by an empty read-only tmpfs: gate's data and config dirs.
    hidden: tuple[str, ...]
    # Files inside a hidden dir that stay visible (the CA certificate): read before the dir
    # is covered, written into the tmpfs over it.
    shown: tuple[str, ...] = ()
    # Bound onto themselves read-only: rule files, Claude settings, gate's own code.
    readonly: tuple[str, ...] = ()
    # Replaced by a fresh tmpfs: where other programs' sockets live (tmux, D-Bus, ssh-agent).
    fresh: tuple[str, ...] = ("/tmp", "/run")  # noqa: S108 (masked, not used)
    # Bound back in when a fresh tmpfs covered them: the project, the home directory.
    keep: tuple[str, ...] = ()
    uid: int = 0
    gid: int = 0
    # Placeholders made for the lock (an empty `.gate/`, `{}` settings), read-only inside
    # it like the rest of `readonly`, removed afterwards if still empty.
    made: tuple[str, ...] = ()

    def to_json(self) -> bytes:
        return json.dumps(asdict(self)).encode()

    @classmethod
    def from_json(cls, data: bytes) -> Plan:
        raw = json.loads(data)
        raw.setdefault("made", [])
        for key in ("argv", "hidden", "shown", "readonly", "fresh", "keep", "made"):
            raw[key] = tuple(raw[key])
        return cls(**raw)
