"""The local decision dataset: one JSON line per answered question, one file per kind.

What a person saw (masked previews, context, agent, rule, files) and what they answered,
kept on this machine only, so a team can later study or tune its asks. Never a value:
records are built from the question as shown, which holds masked previews only.
"""

from __future__ import annotations

import json
import os
import re
import threading
from pathlib import Path
from typing import Any

from gate import dirs

SCHEMA_VERSION = 1
_QUESTION = re.compile(r"[a-z0-9-]+")


def dataset_dir(data_dir: Path) -> Path:
    return data_dir / "decisions" / "dataset"


class Dataset:
    """Appends records to `<data>/decisions/dataset/<question>.jsonl` (0600, dirs 0700)."""

    def __init__(self, data_dir: Path, enabled: bool = True):
        self.dir = dataset_dir(data_dir)
        self.enabled = enabled
        self._lock = threading.Lock()

    def append(self, question: str, record: dict[str, Any]) -> Path | None:
        """Append one line for an answered question of kind `question` (e.g. send-secret);
        the file's path, or None when the dataset is off."""
        if not _QUESTION.fullmatch(question):
            raise ValueError(f"question kind {question!r} must match [a-z0-9-]+")
        if not self.enabled:
            return None
        line = json.dumps(
            {"schemaVersion": SCHEMA_VERSION, "question": question, **record},
            ensure_ascii=False,
            default=str,
            separators=(",", ":"),
        )
        path = self.dir / f"{question}.jsonl"
        with self._lock:
            dirs.private_dir(self.dir.parent)
            dirs.private_dir(self.dir)
            # One write with O_APPEND: lines from two gates never interleave.
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.fchmod(fd, 0o600)
                os.write(fd, (line + "\n").encode())
            finally:
                os.close(fd)
        return path
