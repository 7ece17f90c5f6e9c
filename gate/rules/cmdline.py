"""Reading a command line as bash does, before it is split into commands: words,
operators (`&&`, `|&`, `<<<` ...), and bash's `$'...'` strings decoded."""

from __future__ import annotations

import re
import shlex

OPS = (
    "&&",
    "||",
    ";;",
    "|&",
    "<<<",
    "<<",
    ">>",
    "&>",
    ">&",
    ">|",
    "<>",
    ";",
    "|",
    "&",
    "(",
    ")",
    "<",
    ">",
    "\n",
    "`",
)
PUNCT = "();<>|&\n`"
_ANSI_C = re.compile(r"\$'((?:[^'\\]|\\.)*)'", re.S)
_ESCAPE = re.compile(
    r"\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|c.|.)", re.S
)
_SIMPLE_ESCAPES = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
}


def unquote_ansi_c(command: str) -> str:
    """Bash's `$'...'` strings decoded and quoted plainly, so `$'\\x63url'` reads as `curl`."""
    if "$'" not in command:
        return command
    return _ANSI_C.sub(lambda m: shlex.quote(_ESCAPE.sub(_unescape, m[1])), command)


def _unescape(m: re.Match[str]) -> str:
    code = m[1]
    if code[0] in "xuU" and len(code) > 1:
        return chr(min(int(code[1:], 16), 0x10FFFF))
    if code[0].isdigit():
        return chr(int(code, 8) & 0xFF)
    if code[0] == "c" and len(code) == 2:
        return chr(ord(code[1]) & 0x1F)
    return _SIMPLE_ESCAPES.get(code, code)


def tokens(command: str) -> list[str]:
    lex = shlex.shlex(command, posix=True, punctuation_chars=PUNCT)
    lex.whitespace = " \t\r"
    lex.whitespace_split = True
    try:
        raw = list(lex)
    except ValueError:  # unbalanced quotes: fall back to words, never to "no command"
        raw = [t.strip("'\"") for t in re.split(r"([;&|()<>\n`]+)|[ \t\r]+", command) if t]
    out: list[str] = []
    for tok in raw:
        out += split_ops(tok) if tok and all(c in PUNCT for c in tok) else [tok]
    return out


def split_ops(run: str) -> list[str]:
    """A run of operator characters (`)|`, `;&`) as the operators it holds."""
    out: list[str] = []
    while run:
        op = next((o for o in OPS if run.startswith(o)), run[0])
        out.append(op)
        run = run[len(op) :]
    return out
