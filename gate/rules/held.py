"""What a rule file's change would loosen while gate runs, held until a person confirms it."""

from __future__ import annotations

from dataclasses import dataclass

from gate.rules.engine import SecretTable
from gate.rules.loader import SECRET_ACTIONS
from gate.rules.model import Effect, Rule

# (layer file path, as shown, its root): one rule file as the policy store knows it
LayerKey = tuple[str, str, str | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class Change:
    """One deny or ask rule the new version of a file would drop or weaken."""

    rule: str  # the rule's text, Read(./.env)
    where: str  # its file:line in the version in force
    effect: str  # deny | ask: what it is now
    becomes: str  # removed | ask | allow | exception: what the edit makes of it
    now_where: str | None = None  # the weaker rule's file:line in the new version, if any

    def says(self) -> str:
        """The change in words: "deny rule removed", "deny rule turned into allow"."""
        return {
            "removed": f"{self.effect} rule removed (or no longer valid)",
            "exception": f"{self.effect} rule given a new unless: exception",
        }.get(self.becomes, f"{self.effect} rule turned into {self.becomes}")


@dataclass(frozen=True, slots=True, kw_only=True)
class Loosening:
    """A rule file changed while gate runs in a way that would loosen what it enforces:
    what a person is asked to confirm. Two equal ones are the same question."""

    key: LayerKey
    file: str  # the file as shown (.gate/rules.yaml, ~/.config/gate/rules.yaml)
    layer: str  # project, user, claude-project, ...
    changes: tuple[Change, ...]
    # When `secrets:` settings would loosen: the earlier settings still applied, and the
    # file's settings now.
    secrets_before: tuple[SecretTable, ...] = ()
    secrets_now: SecretTable = ()


def identity(rule: Rule) -> tuple[object, ...]:
    """A rule as what it protects, wherever in its file it is written."""
    return (rule.effect, rule.tool, rule.specifier, rule.unless, rule.root)


def dropped(before: tuple[Rule, ...], now: tuple[Rule, ...]) -> tuple[Rule, ...]:
    """The deny and ask rules in force before that the new version no longer has (removed,
    turned into an allow or ask, given a new exception, or dropped as invalid)."""
    same = {identity(r) for r in now}
    # An exception taken away makes a rule stricter: not dropped.
    excepted: dict[tuple[object, ...], list[set[str]]] = {}
    for n in now:
        excepted.setdefault((n.effect, n.tool, n.specifier, n.root), []).append(set(n.unless))

    def kept(r: Rule) -> bool:
        fewer = excepted.get((r.effect, r.tool, r.specifier, r.root), [])
        return identity(r) in same or any(u <= set(r.unless) for u in fewer)

    return tuple(r for r in before if r.effect is not Effect.ALLOW and not kept(r))


def changes(held: tuple[Rule, ...], now: tuple[Rule, ...]) -> tuple[Change, ...]:
    """What became of each dropped rule in the new version, as a person reads it."""
    out = []
    for r in held:
        kin = [n for n in now if (n.tool, n.specifier, n.root) == (r.tool, r.specifier, r.root)]
        weaker = next((n for n in kin if n.effect is not r.effect), None)
        excepted = next((n for n in kin if n.effect is r.effect), None)
        if weaker is not None:
            out.append(
                Change(
                    rule=r.text,
                    where=r.where,
                    effect=r.effect.value,
                    becomes=weaker.effect.value,
                    now_where=weaker.where,
                )
            )
        elif excepted is not None:
            out.append(
                Change(
                    rule=r.text,
                    where=r.where,
                    effect=r.effect.value,
                    becomes="exception",
                    now_where=excepted.where,
                )
            )
        else:
            out.append(Change(rule=r.text, where=r.where, effect=r.effect.value, becomes="removed"))
    return tuple(out)


def loosens(before: SecretTable, now: SecretTable) -> bool:
    """Whether a `secrets:` setting was removed or loosened, or a new one added that could
    loosen what a tier said (any new setting but `block`)."""
    was, new = dict(before), dict(now)
    rank = SECRET_ACTIONS.index
    return any(k not in new or rank(new[k]) > rank(a) for k, a in was.items()) or any(
        k not in was and a != "block" for k, a in new.items()
    )
