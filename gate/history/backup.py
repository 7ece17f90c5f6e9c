"""Originals of redacted stores, kept owner-only in gate's data dir, and put back byte for
byte by `gate history restore`."""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from gate import dirs

SCHEMA = 1
# A database's WAL and its index go with it, so the three come back as one consistent set.
COMPANIONS = ("", "-wal", "-shm")


@dataclass(frozen=True, slots=True)
class Saved:
    path: Path  # where the store lives
    copy: Path  # its original bytes in the backup
    sha256: str
    mode: int


def root(data_dir: Path) -> Path:
    return data_dir / "history-backups"


class Backup:
    """One redaction's originals: <data dir>/history-backups/<id>/ with a manifest."""

    def __init__(self, data_dir: Path) -> None:
        self.id = time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}"
        dirs.private_dir(data_dir)
        dirs.private_dir(root(data_dir))
        self.dir = dirs.private_dir(root(data_dir) / self.id)
        self.saved: list[Saved] = []

    def save(self, store: Path) -> None:
        for suffix in COMPANIONS:
            path = Path(f"{store}{suffix}")
            if not path.is_file():
                continue
            data = path.read_bytes()
            copy = self.dir / f"{len(self.saved):05d}"
            dirs.write_private(copy, data)
            self.saved.append(
                Saved(path, copy, hashlib.sha256(data).hexdigest(), path.stat().st_mode & 0o7777)
            )
        self._manifest()

    def _manifest(self) -> None:
        doc = {
            "schemaVersion": SCHEMA,
            "created": time.time(),
            "files": [
                {"path": str(s.path), "copy": s.copy.name, "sha256": s.sha256, "mode": s.mode}
                for s in self.saved
            ],
        }
        dirs.write_private(self.dir / "manifest.json", json.dumps(doc, indent=1).encode())


def listing(data_dir: Path) -> list[str]:
    top = root(data_dir)
    return (
        sorted(p.name for p in top.iterdir() if (p / "manifest.json").is_file())
        if top.is_dir()
        else []
    )


def load(data_dir: Path, backup_id: str) -> list[Saved]:
    """A backup's files; ValueError naming the manifest when it is not one gate wrote."""
    where = root(data_dir) / backup_id
    manifest = where / "manifest.json"
    if "/" in backup_id or backup_id.startswith(".") or not manifest.is_file():
        raise ValueError(f"no backup {backup_id!r} in {root(data_dir)}")
    try:
        doc = json.loads(manifest.read_text("utf-8"))
        if doc.get("schemaVersion") != SCHEMA:
            raise ValueError(f"schemaVersion {doc.get('schemaVersion')!r}, not {SCHEMA}")
        out = [
            Saved(Path(f["path"]), where / Path(f["copy"]).name, str(f["sha256"]), int(f["mode"]))
            for f in doc["files"]
        ]
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{manifest}: not a gate history backup ({exc})") from exc
    for s in out:
        data = s.copy.read_bytes()
        if hashlib.sha256(data).hexdigest() != s.sha256:
            raise ValueError(f"{s.copy}: does not match its sha256 in {manifest}")
    return out


def restore(saved: list[Saved]) -> list[Path]:
    """Each file back as it was; a database's companions too, or none when it had none."""
    had = {s.path for s in saved}
    stores = {Path(str(s.path).removesuffix("-wal").removesuffix("-shm")) for s in saved}
    for s in saved:
        tmp = s.path.with_name(f".{s.path.name}.gate-restore")
        tmp.write_bytes(s.copy.read_bytes())
        os.chmod(tmp, s.mode)
        os.replace(tmp, s.path)
    for store in stores:
        if store in had and _is_sqlite(store):
            for suffix in COMPANIONS[1:]:
                if Path(f"{store}{suffix}") not in had:
                    Path(f"{store}{suffix}").unlink(missing_ok=True)
    return sorted(stores)


def _is_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False
