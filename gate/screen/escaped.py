"""Text with its character escapes decoded (`%3D`, `\\u0022`, `\\x3d`, `=3D`), read as a view.

`quote(open(".env").read())`, a URL nested in a query parameter, .NET's JSON (`\\u0022`)
and a quoted-printable mail (`=3D`) write a value right after an escape that ends in a
letter or a digit: `KEY%3Dghp_...`. A value found only as a whole word, and every token a
detector reads only between word boundaries, is lost there, and an escaped character
inside a value (`%2F` in an AWS secret) breaks it. The view decodes the escapes; what is
found in it is mapped back onto the escapes and characters of the text that spell it.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from itertools import accumulate

# Runs of escapes, each decoded whole (UTF-8 bytes in a row, a surrogate pair), each kind
# looked for only when one of its first characters is in the text (one regex of them all
# is ten times slower: no literal to skip ahead by).
_KINDS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("%",), r"(?:%[0-9A-Fa-f]{2})+"),
    # (An escape may have its backslash escaped again: the same text printed as a JSON
    # or Python string, once or more, `\\x67\\x68`.)
    (("\\x",), r"(?:\\+x[0-9A-Fa-f]{2})+"),
    (("\\u",), r"(?:\\+u[0-9A-Fa-f]{4})+"),
    (("\\/",), r"\\/"),  # JSON's escaped slash (PHP writes every `/` so)
    # Quoted-printable is read only in text that shows it, an encoded `=` (which it always
    # encodes): otherwise `KEY=AB12` would be read as a byte, and a base64 line's padding
    # at its end as a soft line break.
    (("=3D",), r"(?:=[0-9A-F]{2}|=\r?\n)+"),
    # HTML character references, hex and decimal (`&#x64;&#66;`: PHP's and a template
    # engine's escaping, `recode ..html`), octal bytes (`\144`: `printf %b`, `echo -e`,
    # C and Python literals) and JavaScript's `escape()` (`%u0064`). References and octal
    # bytes only four or more in a row: a value written in them is a run, while a page's
    # `caf&#233;` and a C string's `\n\101` are single ones (decoding every one made a
    # 1.4 MB page of accented words 50 times slower to screen).
    ((";&#",), r"(?:&#[xX][0-9A-Fa-f]{1,6};|&#[0-9]{1,7};){4,}"),
    (("\\0", "\\1", "\\2", "\\3"), r"(?:\\+[0-3][0-7]{2}){4,}"),
    (("%u", "%U"), r"(?:%[uU][0-9A-Fa-f]{4})+"),
)
# Found by the scanner's keyword pass (lower-cased UTF-8): only a string holding one of
# these is read through the view there.
TRIGGERS = (
    *(f"{p}{h}" for p in ("%", "\\x", "\\u") for h in "0123456789abcdef"),
    "\\/",
    "=3d",
    ";&#",  # two references in a row: a page's lone `caf&#233;` is not read through
    *(f"\\{d}" for d in "0123"),
    "%u",
)
REACH = 4096  # as far as a detector reads around a keyword (a PEM block, a JWT)


@dataclass(frozen=True, slots=True)
class Escaped:
    """The view, and where each decoded run lies in it and in the text."""

    text: str
    view: str
    runs: tuple[tuple[int, int, int, int], ...]  # (view start, view end, text start, end)

    def origin(self, start: int, end: int) -> tuple[int, int]:
        """Where the span [start, end) of the view lies in the text: a span that starts or
        ends inside a decoded run takes in the whole escape."""
        i = bisect.bisect_right(self.runs, start, key=_view_start) - 1  # a run at or before
        if i >= 0:
            _, v1, t0, t1 = self.runs[i]
            start = t0 if start < v1 else t1 + start - v1
        j = bisect.bisect_left(self.runs, end, key=_view_start) - 1  # a run starting before
        if j >= 0:
            _, v1, _, t1 = self.runs[j]
            end = t1 if end <= v1 else t1 + end - v1
        return start, end

    def windows(self) -> list[tuple[int, int]]:
        """The stretches of the view a decoded run can change a reading of: REACH either
        side of each run (a keyword before the value it names, the token glued to it, a
        key block around it), those that meet taken together."""
        out: list[tuple[int, int]] = []
        for v0, v1, _, _ in self.runs:
            start, end = max(0, v0 - REACH), min(len(self.view), v1 + REACH)
            if out and start <= out[-1][1]:
                out[-1] = (out[-1][0], end)
            else:
                out.append((start, end))
        return out

    def base64_inside(self, start: int, end: int) -> bool:
        """Whether a run in the view's [start, end) decodes to base64's own punctuation
        (`+`, `/`, `=`: base64 carried in a URL), for the base64 pass to read."""
        i = bisect.bisect_left(self.runs, start, key=_view_start)
        for v0, v1, _, _ in self.runs[i:]:
            if v0 >= end:
                break
            if v1 > v0 and not self.view[v0:v1].strip("+/="):
                return True
        return False


def _view_start(run: tuple[int, int, int, int]) -> int:
    return run[0]


def view(text: str) -> Escaped | None:
    """`text` with its escapes decoded, or None when it holds none."""
    slash = "\\" in text  # one search at C speed spares three in most text
    kinds = tuple(
        p
        for signs, p in _KINDS
        if (slash or signs[0][0] != "\\") and any(sign in text for sign in signs)
    )
    if not kinds:
        return None
    # Split at C speed (plain, run, plain, ...): a page of escaped links has thousands.
    parts = re.split(f"({'|'.join(kinds)})", text)
    if len(parts) == 1:
        return None
    shown = parts.copy()
    shown[1::2] = [_ONE.get(run) or _decode(run) for run in parts[1::2]]
    at = list(accumulate(map(len, parts), initial=0))
    seen = list(accumulate(map(len, shown), initial=0))
    runs = tuple(zip(seen[1::2], seen[2::2], at[1::2], at[2::2], strict=False))
    return Escaped(text, "".join(shown), runs)


# A single escaped character (`%20`, `%3D`: most runs), decoded by a lookup.
_ONE = {
    f"{p}{hi}{lo}": chr(int(hi + lo, 16))
    for p in ("%", "\\x", "=")
    for hi in "01234567"
    for lo in "0123456789abcdefABCDEF"
    if p != "=" or lo == lo.upper()  # quoted-printable's hex is upper case
}


def _decode(run: str) -> str:
    if run == "\\/":
        return "/"
    if run[0] == "\\" and "\\\\" in run:  # backslashes escaped once or more again
        run = _BACKSLASHES.sub(r"\\", run)
    if run[0] == "&":
        return "".join(_reference(r) for r in _REFERENCE.findall(run))
    if run[0] == "\\" and run[1] in "0123":
        return bytes(int(run[i + 1 : i + 4], 8) for i in range(0, len(run), 4)).decode(
            "utf-8", "replace"
        )
    if run[0] == "%" and run[1] in "uU":
        units = bytes.fromhex(run.replace("%u", "").replace("%U", ""))
        return units.decode("utf-16-be", "replace")
    if run[0] == "\\" and run[1] == "u":
        units = bytes.fromhex(run.replace("\\u", ""))
        return units.decode("utf-16-be", "replace")
    if run[0] == "=":
        run = run.replace("=\r\n", "").replace("=\n", "")  # soft line breaks join lines
        if not run:
            return ""
        return bytes.fromhex(run.replace("=", "")).decode("utf-8", "replace")
    data = bytes.fromhex(run.replace("%", "").replace("\\x", ""))
    return data.decode("utf-8", "replace")


_BACKSLASHES = re.compile(r"\\+")
_REFERENCE = re.compile(r"&#([xX][0-9A-Fa-f]+|[0-9]+);")


def _reference(number: str) -> str:
    """One HTML character reference's character (U+FFFD for no character)."""
    code = int(number[1:], 16) if number[0] in "xX" else int(number)
    return chr(code) if code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else "\ufffd"
