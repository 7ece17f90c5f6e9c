"""Claude Code path patterns (gitignore semantics) compiled to absolute globs and matched."""

from __future__ import annotations

import os
from functools import lru_cache

from wcmatch import glob

_FLAGS = glob.GLOBSTAR | glob.DOTGLOB | glob.BRACE


@lru_cache(maxsize=4096)
def compile_pattern(
    spec: str, project_root: str | None, home: str, rule_root: str | None
) -> glob.WcMatcher[str]:
    """Absolute globs for one path pattern.

    `//p` absolute, `~/p` home, `/p` relative to the rule file's root, `./p` relative to the
    project root, bare `p` at any depth under the project root. A pattern also covers what
    lies beneath it (a denied directory denies its files). With no known project root,
    relative patterns match at any depth: over-matching is the safe side.
    """
    if spec.startswith("//"):
        pat = spec[1:]
    elif spec == "~" or spec.startswith("~/"):
        pat = glob.escape(home.rstrip("/")) + spec[1:]
    elif spec.startswith("/"):
        base = rule_root or project_root
        pat = (glob.escape(base.rstrip("/")) if base else "/**") + spec
    elif spec.startswith("./"):
        rest = spec[2:]
        pat = (glob.escape(project_root.rstrip("/")) if project_root else "/**") + "/" + rest
    else:
        pat = (glob.escape(project_root.rstrip("/")) if project_root else "") + "/**/" + spec
    if pat.endswith("/"):
        pat += "**"
    # Compiled once per (pattern, root): matching is then one regex call per path.
    return glob.compile([pat, pat.rstrip("/") + "/**"], flags=_FLAGS)


def matches(path: str, matcher: glob.WcMatcher[str]) -> bool:
    return bool(matcher.match(path))


def candidates(path: str, cwd: str | None) -> tuple[str, ...]:
    """The path as the tool named it (made absolute) and, if different, its real target.

    Deny rules apply when either a symlink or its target matches.
    """
    path = os.path.expanduser(path)
    if not os.path.isabs(path):
        path = os.path.join(cwd or "/", path)
    path = os.path.normpath(path)
    real = os.path.realpath(path)
    return (path,) if real == path else (path, real)
