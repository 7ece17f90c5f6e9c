"""A tool call's result withheld by its rule, the policy and denied-file index a request is
screened under, and the stricter of two candidate calls' decisions (request.py, decided.py)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gate.agents import tools
from gate.agents.action_memo import ActionOf
from gate.agents.actions import Action
from gate.providers import gemini, history
from gate.providers.format import Format
from gate.providers.segments import Role, ToolCall, Walk, get_at, long_strings
from gate.rules.engine import Decision, Policy
from gate.rules.layers import PolicyStore
from gate.rules.model import Effect, Rule
from gate.screen import masking, placeholder
from gate.screen.codec import dump
from gate.screen.content import SecretScreen
from gate.screen.fingerprints import MIN_UNIT, DeniedIndex, IndexStore
from gate.screen.secrets import keyed_hash
from gate.screen.verdict import Asked, Blocked, Withheld

# Shorter strings hold neither a denied file's unit nor a secret any detector reports.
SHORTEST = min(MIN_UNIT, 8)
# Where each format's tool result keeps its output (Anthropic, Chat, Responses, Gemini).
_OUTPUTS = ("content", "output", "response")


def withhold(
    fmt: Format | None,
    body: Any,
    call: ToolCall,
    action: Action,
    decision: Decision,
    approved: frozenset[str],
    secrets: SecretScreen | None,
) -> Withheld | None:
    """Replace a denied (or not approved `ask`) call's result in `body` with a placeholder
    naming the rule; what was withheld, or None when no deny or ask rule matched."""
    if decision.rule is None or decision.effect not in (Effect.DENY, Effect.ASK):
        return None
    assert fmt is not None and call.result is not None
    item = Withheld.tool_result(
        call_id=call.id,
        tool=call.name,
        target=decision.path or action.target,
        rule=decision.rule.text,
        where=decision.rule.where,
    )
    if decision.effect is Effect.ASK:
        item = replace(
            item, asked=_asked(get_at(body, call.result), action, decision.path, approved, secrets)
        )
        if item.asked and item.asked.approved:
            return item  # sent as is, and still screened for content
    holders = [get_at(body, call.result[:k]) for k in range(len(call.result))]
    fmt.withhold_result(
        body, call.result, placeholder.withheld(action, decision.rule, decision.path)
    )
    history.edited(holders)  # each object holding the result now serialises otherwise
    return item


def _asked(
    result: Any,
    action: Action,
    path: str | None,
    approved: frozenset[str],
    secrets: SecretScreen | None,
) -> Asked:
    """An ask rule's tool result, as a person is shown it; keyed by its content (not its
    call id), so the same output read again later is recognised."""
    if isinstance(result, dict):
        result = next((result[k] for k in _OUTPUTS if k in result), result)
    text = "\n".join(t for _, t in sorted(long_strings(result, 1)[0])) or dump(result).decode()
    key = keyed_hash(text, secrets.key if secrets else b"")
    team = keyed_hash(text, secrets.team) if secrets and secrets.team else None
    return Asked(
        key=key,
        question="send-denied-content",
        preview=masking.preview(text),
        context=action.describe(path),
        approved=key in approved,
        team=team,
    )


def working_directory(walk: Walk) -> str | None:
    """Where agents state their working directory: system text and the first user texts."""
    users = [t for _, t in zip(range(3), walk.texts(Role.USER_TEXT), strict=False)]
    return tools.working_directory([*walk.texts(Role.SYSTEM), *users])


def policy_for(
    policies: PolicyStore, indexes: IndexStore | None, root: str | None, stated: bool
) -> Policy:
    """The rules a request is decided by. A request bound to a run gets its project's. One
    that only states its directory gets that directory's joined with every project this
    gate knows (told or seen): an agent naming /tmp/other while it runs in the project must
    not get the project's deny rules (or its stricter secrets settings) dropped."""
    if not stated or root is None or indexes is None:
        return policies.policy_for(root)
    return policies.stated(root, indexes.roots())


def denied_index(
    indexes: IndexStore | None,
    policies: PolicyStore,
    policy: Policy,
    root: str | None,
    stated: bool = False,
) -> DeniedIndex | None:
    """The denied values a request is screened for. A request bound to a run (`gate run`)
    gets its project's. One that does not say where it comes from (an SDK script, Aider, a
    side request without the environment block) gets every project this gate knows of, and
    so does one that only *states* a directory (`stated`): what a request says about itself
    adds that directory's values, it never narrows what is looked for (an agent naming
    /tmp/other must not get the real project's .env past the gate)."""
    if indexes is None:
        return None
    if root is not None and not stated:
        indexes.seen(root)
        return indexes.index_for(policy, root)
    if root is not None:
        indexes.seen(root)  # known from now on, so it is one of the projects merged below
    if (merged := indexes.unrooted(policies)) is not None:
        return merged
    if (rule := project_relative(policy)) is not None:
        # Fail closed: the project's denied files are unknown, so their values cannot be
        # looked for; sending the request anyway would let them leave unscreened.
        raise Blocked(
            "gate cannot tell which project this request comes from (it states no working"
            f" directory) and rule {rule.text} ({rule.where}) covers a project's files, so"
            " their values could not be withheld. Start gate with `gate serve --project DIR`,"
            " list the project under `projects:` in config.yaml, or run the agent with"
            " `gate run`"
        )
    return indexes.index_for(policy, None)


def project_relative(policy: Policy) -> Rule | None:
    """The first deny or ask rule on reading files that are found relative to a project."""
    for rule in policy.rules:
        spec = rule.specifier
        if (
            rule.tool == "Read"
            and rule.effect is not Effect.ALLOW
            and not (spec and spec.startswith(("~/", "//")))
        ):
            return rule
    return None


_STRICTNESS = {Effect.DENY: 3, Effect.ASK: 2, Effect.ALLOW: 1, None: 0}


def same_name_candidates(walk: Walk) -> dict[str, tuple[ToolCall, ...]]:
    """Gemini pairs a response with a call of its name by order alone when the call has no
    id: for each such call, the other calls its result could as well answer."""
    if walk.format != gemini.FORMAT:
        return {}
    # Responses answer the calls of the model turn just before them, so only responses of
    # one name in the same content can have been swapped.
    by_name: dict[tuple[str, tuple[object, ...]], list[ToolCall]] = {}
    for call in walk.calls:
        if "#" in call.id and call.result:  # no id of its own (gemini.py: `name#N`)
            by_name.setdefault((call.name, tuple(call.result[:-2])), []).append(call)
    return {
        c.id: tuple(o for o in group if o is not c)
        for group in by_name.values()
        if len(group) > 1
        for c in group
    }


def stricter(
    current: tuple[Decision, Action],
    policy: Policy,
    root: str | None,
    cwd: str | None,
    other: ToolCall,
    action_of: ActionOf,
) -> tuple[Decision, Action]:
    """The stricter of a decision and the one another candidate call gets."""
    action = action_of(other.name, other.input, cwd)
    decision = policy.decide(action, root)
    if _STRICTNESS[decision.effect] > _STRICTNESS[current[0].effect]:
        return decision, action
    return current
