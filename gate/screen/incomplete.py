"""While a project's denied-file index is incomplete (its walk ran out of budget), a search
over the part not walked yet is decided as the strictest read, and says why.

The files gate has not walked may be denied files whose values it does not know yet: a
`Grep` or `grep -r` over them could print those values, and nothing would recognise them.
Such a result is withheld (or asked) as if it read a denied file, with a placeholder that
names the directories not walked, until the background walk has read them.
"""

from __future__ import annotations

import os

from gate.agents.actions import Action, Verb


def widened(action: Action, unwalked: tuple[str, ...], cwd: str | None) -> Action | None:
    """The action to decide instead, or None when it reaches nothing unwalked."""
    if not unwalked or action.verb not in (Verb.SEARCH, Verb.EXEC) or action.unknown:
        return None
    if action.verb is Verb.SEARCH:
        targets: tuple[str, ...] = (action.target or cwd or "/",)
    else:  # a command that names a file is decided by the rules on that file's name
        targets = tuple(r for r in action.reads if os.path.isdir(r))
    hits = [u for u in unwalked for t in targets if _overlap(u, t, cwd)]
    if not hits:
        return None
    shown = ", ".join(dict.fromkeys(hits[:3])) + (", ..." if len(hits) > 3 else "")
    note = (
        f"{action.describe()}, over files gate's denied-file index does not cover yet"
        f" (its walk ran out of budget; not walked yet: {shown}),"
    )
    return Action(verb=action.verb, tool=note, target=None, unknown=True)


def _overlap(unwalked: str, target: str, cwd: str | None) -> bool:
    """Whether a path is inside the unwalked one or holds it."""
    path = os.path.normpath(os.path.join(cwd or "/", os.path.expanduser(target)))
    return _under(path, unwalked) or _under(unwalked, path)


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")
