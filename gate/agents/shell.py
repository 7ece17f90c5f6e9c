"""Which files a shell command reads: readers' operands, `<` redirections, through cd and vars.

Used to apply Read rules to shell tools (`Bash(cat .env)` reads `.env`). It over-approximates
on purpose: a word that might be a file operand is reported, since only words that match a
deny rule change anything.
"""

from __future__ import annotations

import glob
import os
import re
import shlex
from collections.abc import Generator, Iterator
from functools import lru_cache
from typing import Any

from gate.rules.cmdline import unquote_ansi_c
from gate.rules.commands import DENY_WRAPPERS, peel

# Commands whose operands are files they print or transform.
READERS = frozenset(
    {
        "cat",
        "tac",
        "nl",
        "head",
        "tail",
        "less",
        "more",
        "most",
        "bat",
        "batcat",
        "view",
        "grep",
        "egrep",
        "fgrep",
        "rg",
        "ag",
        "ack",
        "sed",
        "awk",
        "gawk",
        "mawk",
        "cut",
        "sort",
        "uniq",
        "paste",
        "join",
        "column",
        "fold",
        "fmt",
        "pr",
        "rev",
        "tr",
        "expand",
        "diff",
        "base64",
        "base32",
        "basenc",
        "xxd",
        "od",
        "hexdump",
        "hd",
        "strings",
        "source",
        ".",
        "cp",
        "dd",
        "tee",
        "jq",
        "yq",
        "iconv",
        "openssl",
        "gpg",
        "envsubst",
        "xargs",
        "tar",
        "zcat",
        "gzip",
        "gunzip",
        "bzcat",
        "xzcat",
        "zstdcat",
        "unzip",
        "file",
        "readlink",
        "md5sum",
        "sha1sum",
        "sha256sum",
        "cksum",
        "php",
        "ruby",
        "perl",
        "python",
        "python3",
        "node",
        "sh",
        "bash",
        "zsh",
        "dash",
    }
)
# The first operand is a pattern or script, not a file (unless -e/-f gave it).
_PATTERN_FIRST = frozenset(
    {"grep", "egrep", "fgrep", "rg", "ag", "ack", "sed", "awk", "gawk", "mawk", "jq", "yq", "tr"}
)
_SEPARATORS = frozenset(
    {
        "&&",
        "||",
        ";",
        ";;",
        "|",
        "|&",
        "&",
        "\n",
        "(",
        ")",
        "{",
        "}",
        "$",
        "!",
        "then",
        "do",
        "else",
        "elif",
        "if",
        "while",
        "until",
        "fi",
        "done",
    }
)
_DASH_C = re.compile(r"^-[a-z]*c[a-z]*$")
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "fish"})
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$", re.S)
_VAR = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")


def join(argv: list[Any]) -> str:
    """An argv list as one command line (Codex's legacy `shell` tool sends argv)."""
    return shlex.join(str(a) for a in argv)


def reads(command: str, cwd: str | None) -> tuple[str, ...]:
    """Absolute paths the command may read, in order, without duplicates."""
    return _cached(command, cwd, os.path.expanduser("~"))


@lru_cache(maxsize=8192)  # every turn resends every earlier command
def _cached(command: str, cwd: str | None, _home: str) -> tuple[str, ...]:
    out: dict[str, None] = {}
    command = unquote_ansi_c(command)
    for path in _reads(command, cwd or "/"):
        out.setdefault(path, None)
    for path in _named(command, cwd or "/"):
        out.setdefault(path, None)
    return tuple(out)


# A path-like piece of a command's text: inside quotes, scripts, `REV:path`, `--opt=path`.
_PIECE = re.compile(r"[\w.~/*?\[\]@%+,-]+")
_GLOB = re.compile(r"[*?\[]")
MAX_NAMED = 256  # pieces of one command looked at as paths
MAX_GLOBBED = 64  # files one glob may name


def _named(command: str, cwd: str) -> Iterator[str]:
    """Every path-like piece of the command's text, wherever it is: an inline script
    (`python -c "open('.env')"`, a heredoc), `git show HEAD:.env`, `ln -s .env x`, a glob
    (`cat .e*`, expanded against the disk). A command that names a denied file anywhere is
    taken to read it; the pieces that name nothing denied change nothing."""
    dirs = [cwd, *(_abs(d, cwd) for d in _cd_targets(command))]
    words = _tokens(command)
    pieces: dict[str, None] = {}
    for text in (command, *words):
        for piece in _PIECE.findall(text):
            if len(pieces) >= MAX_NAMED:
                break
            if piece[:1] in "./~" or "/" in piece or "." in piece or piece.startswith("id_"):
                pieces.setdefault(piece.rstrip(".,"), None)
    for piece in pieces:
        if not piece or piece in (".", ".."):
            continue
        for d in dirs:
            path = _abs(piece, d)
            if _GLOB.search(piece):
                yield from _expand_glob(path)
            else:
                yield path
    if _compose_config(words):
        # `docker compose config` prints the project's .env values substituted.
        for d in dirs:
            yield os.path.join(d, ".env")


def _expand_glob(pattern: str) -> Iterator[str]:
    for i, path in enumerate(glob.iglob(pattern, include_hidden=True)):
        if i >= MAX_GLOBBED:
            return
        yield path


def _cd_targets(command: str) -> list[str]:
    words = _tokens(command)
    return [words[i + 1] for i, w in enumerate(words[:-1]) if w in ("cd", "pushd")][:8]


def _compose_config(words: list[str]) -> bool:
    for i, w in enumerate(words):
        if w == "docker-compose" or (w == "docker" and "compose" in words[i + 1 : i + 3]):
            return "config" in words[i + 1 :]
    return False


def _tokens(command: str) -> list[str]:
    lex = shlex.shlex(command, posix=True, punctuation_chars="();<>|&\n")
    lex.whitespace = " \t\r"
    lex.whitespace_split = True
    try:
        return [t.strip("`") for t in lex]
    except ValueError:  # unbalanced quotes: fall back to words, never to "reads nothing"
        return [t.strip("`'\"") for t in re.split(r"[\s;&|()<>]+", command) if t]


def _reads(command: str, cwd: str) -> Iterator[str]:
    env: dict[str, str] = {}
    words: list[str] = []
    tokens = _tokens(command)
    i = 0
    while i <= len(tokens):
        tok = tokens[i] if i < len(tokens) else "\n"
        if tok == "<" and i + 1 < len(tokens):  # `cmd < file` reads file, whatever cmd is
            yield _abs(_expand(tokens[i + 1], env), cwd)
            i += 2
            continue
        if tok in (">", ">>", ">|", "&>", ">&"):
            i += 2  # an output target (or a descriptor), not a read
            continue
        if tok in _SEPARATORS or tok == "<":
            cwd = yield from _simple(words, cwd, env)
            words = []
        else:
            words.append(_expand(tok, env))
        i += 1


def _simple(words: list[str], cwd: str, env: dict[str, str]) -> Generator[str, None, str]:
    """One simple command: returns the cwd after it (so `cd x && cat y` reads x/y)."""
    while words and (m := _ASSIGN.match(words[0])):
        env[m.group(1)] = m.group(2)
        words = words[1:]
    words = _unwrap(words)
    if not words:
        return cwd
    name, args = os.path.basename(words[0]), words[1:]
    if name == "cd":
        target = next((a for a in args if not a.startswith("-")), "~")
        return _abs(target, cwd)
    script_at = next((i for i, a in enumerate(args[:-1]) if _DASH_C.match(a)), None)
    if name in _SHELLS and script_at is not None:
        # `bash -c "cat .env"`, `bash -lc ...`: the script is a command line of its own.
        yield from _reads(args[script_at + 1], cwd)
        return cwd
    if name not in READERS:
        return cwd
    operands = [a for a in args if not a.startswith("-") or a == "-"]
    explicit_pattern = any(
        a in ("-e", "-f", "--regexp", "--file") or a.startswith(("-e", "-f")) for a in args
    )
    if name in _PATTERN_FIRST and operands and not explicit_pattern:
        operands = operands[1:]
    for arg in args:  # --file=x, if=x (dd), -f x style values that name files
        if "=" in arg and arg.split("=", 1)[0].lstrip("-") in ("file", "if", "input"):
            operands.append(arg.split("=", 1)[1])
    for op in operands:
        if op != "-":
            yield _abs(op, cwd)
    return cwd


def _unwrap(words: list[str]) -> list[str]:
    """The command behind its wrappers, their options and values (`sudo -u root cat x`,
    `timeout -s KILL 5 cat x`): the one wrapper table Bash rules use too."""
    while words and os.path.basename(words[0]) in DENY_WRAPPERS - {"eval"}:
        words = peel(words)
    return words


def _expand(word: str, env: dict[str, str]) -> str:
    return _VAR.sub(lambda m: env.get(m.group(1), m.group(0)), word)


def _abs(path: str, cwd: str) -> str:
    path = os.path.expanduser(path)
    return os.path.normpath(path if os.path.isabs(path) else os.path.join(cwd, path))
