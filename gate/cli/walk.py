"""Which files `gate scan DIR` reads: every file under DIR that git would not ignore."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

SNIFF = 8192  # bytes looked at to tell a binary file (a NUL byte) from text


def files(root: Path) -> Iterator[Path]:
    """Files under `root`, sorted, minus what .gitignore files (and .git/) exclude: in a git
    work tree git itself decides (`ls-files --exclude-standard`, so global excludes and
    .git/info/exclude count too); elsewhere each directory's .gitignore is read here."""
    listed = _git_files(root)
    if listed is not None:
        yield from listed
        return
    yield from _walk(root, [])


def is_binary(head: bytes) -> bool:
    return b"\0" in head[:SNIFF]


def _git_files(root: Path) -> list[Path] | None:
    try:
        proc = subprocess.run(
            [
                "git",
                "-C",
                str(root),
                "ls-files",
                "-z",
                "--cached",
                "--others",
                "--exclude-standard",
                "--",
                ".",
            ],
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None  # not a work tree, or no git
    names = [n for n in proc.stdout.decode("utf-8", "surrogateescape").split("\0") if n]
    return sorted(p for n in names if (p := root / n).is_file() and not p.is_symlink())


Rules = list[tuple[Path, str, bool, bool]]  # (base dir, pattern, negated, directories only)


def _walk(directory: Path, rules: Rules) -> Iterator[Path]:
    rules = rules + _read_gitignore(directory)
    try:
        entries = sorted(os.scandir(directory), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        path = Path(entry.path)
        is_dir = entry.is_dir(follow_symlinks=False)
        if entry.name == ".git" or _ignored(path, is_dir, rules):
            continue
        if is_dir:
            yield from _walk(path, rules)
        elif entry.is_file(follow_symlinks=False):
            yield path


def _read_gitignore(directory: Path) -> Rules:
    try:
        lines = (directory / ".gitignore").read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    out: Rules = []
    for line in lines:
        line = line.rstrip()
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        line = line[1:] if negated else line.removeprefix("\\")
        dir_only = line.endswith("/")
        out.append((directory, line.rstrip("/"), negated, dir_only))
    return out


def _ignored(path: Path, is_dir: bool, rules: Rules) -> bool:
    """The last rule that matches decides, as in git."""
    from wcmatch import fnmatch  # here: most scans are of files, not of .gitignore'd trees

    flags = fnmatch.DOTMATCH
    ignored = False
    for base, pattern, negated, dir_only in rules:
        if dir_only and not is_dir:
            continue
        rel = path.relative_to(base).as_posix()
        if "/" in pattern.strip("/"):  # anchored to the .gitignore's directory
            hit = fnmatch.fnmatch(rel, pattern.lstrip("/"), flags=flags)
        else:
            hit = fnmatch.fnmatch(path.name, pattern.lstrip("/"), flags=flags) and (
                not pattern.startswith("/") or "/" not in rel
            )
        if hit:
            ignored = not negated
    return ignored
