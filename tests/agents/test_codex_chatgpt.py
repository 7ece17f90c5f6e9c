"""Codex signed in with ChatGPT (no API key), the real CLI through `gate run --forward`.

Its sign-in is a fake `~/.codex/auth.json` built at run time, as `codex login` leaves it:
an id token and an access token (unsigned JWTs, Codex reads their claims without checking
a signature), a refresh token and the ChatGPT account id. Codex then asks
`chatgpt.com/backend-api/wham/accounts/check` where the account's workspace lives (its
"workspace routing") and sends its turns to `chatgpt.com/backend-api/codex/responses`. The
loopback fake answers both (`--upstream chatgpt=fake`): the account call relayed unread and
audited, the turns screened.
"""

from __future__ import annotations

import base64
import json
import os
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fake_ws_models import FakeWsModels

from agent_clis import case
from agent_run import assert_audited, assert_never_sent, run_through_gate
from fake_models import FakeModels
from gate.audit import tunnels
from gate.audit.store import AuditStore

pytestmark = [pytest.mark.agent_cli, pytest.mark.timeout(300)]

ACCOUNT_CHECK = "/backend-api/wham/accounts/check"


def _jwt(claims: dict[str, Any]) -> str:
    def part(obj: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}.{part({'sig': 'fake'})}"


def chatgpt_sign_in(account: str) -> dict[str, str]:
    """`~/.codex/auth.json` as `codex login` (ChatGPT) writes it, every token fake."""
    now = int(time.time())
    auth = {
        "chatgpt_account_id": account,
        "chatgpt_plan_type": "plus",
        "chatgpt_user_id": "user-fake",
        "user_id": "user-fake",
    }
    id_token = _jwt(
        {
            "iss": "https://auth.openai.com",
            "aud": ["app_fake"],
            "email": "gate-test@example.invalid",
            "email_verified": True,
            "exp": now + 3600,
            "iat": now,
            "https://api.openai.com/auth": auth,
        }
    )
    access = _jwt(
        {
            "iss": "https://auth.openai.com",
            "exp": now + 3600,
            "iat": now,
            "scp": ["openid", "profile", "email", "offline_access"],
            "https://api.openai.com/auth": auth,
        }
    )
    stored = {
        "auth_mode": "chatgpt",
        "OPENAI_API_KEY": None,
        "tokens": {
            "id_token": id_token,
            "access_token": access,
            "refresh_token": "rt-fake-" + os.urandom(8).hex(),
            "account_id": account,
        },
        "last_refresh": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
    }
    return {".codex/auth.json": json.dumps(stored)}


def accounts_check(account: str) -> dict[str, Any]:
    """Where the workspace lives: chatgpt.com itself, no regional constraint."""
    return {
        "accounts": [
            {
                "id": account,
                "workspace_backend_origin": "https://chatgpt.com",
                "account_routing_override": "NO_CONSTRAINT",
            }
        ]
    }


def _run(
    gate_dirs: dict[str, Path],
    fake: FakeModels | FakeWsModels,
    argv_extra: tuple[str, ...] = (),
    **how: Any,
) -> Any:
    account = "acct-fake-" + os.urandom(4).hex()
    fake.answers = {ACCOUNT_CHECK: accounts_check(account)}
    base = case("codex", "exec-command")
    c = replace(base, upstream="chatgpt", env=dict, home=chatgpt_sign_in(account))
    argv = [*argv_extra, *c.argv("Show me what is in .env")]
    out = run_through_gate(c, gate_dirs, forward=True, fake=fake, argv=argv, **how)
    return out, account


def test_codex_signed_in_with_chatgpt_over_websocket(gate_dirs: dict[str, Path]) -> None:
    """The built-in provider as a ChatGPT user runs it: Responses over
    wss://chatgpt.com/backend-api/codex/responses."""
    out, account = _run(gate_dirs, FakeWsModels())
    assert_never_sent(out)
    assert_audited(out, gate_dirs, dict(os.environ))
    assert out.models.seen and all(s.method == "WS" for s in out.models.seen)
    assert all(s.headers.get("chatgpt-account-id") == account for s in out.models.seen)
    assert ACCOUNT_CHECK in out.models.http, out.models.http
    _account_call_audited(gate_dirs)


def test_codex_signed_in_with_chatgpt_over_http(gate_dirs: dict[str, Path]) -> None:
    """WebSockets off (`supports_websockets` is the built-in provider's feature flag):
    Responses over HTTPS with server-sent events."""
    out, account = _run(
        gate_dirs,
        FakeModels(),
        (
            "-c",
            "features.responses_websockets=false",
            "-c",
            "features.responses_websockets_v2=false",
        ),
    )
    # Besides its turns, Codex opens ChatGPT's own MCP server (/backend-api/ps/mcp, its
    # `initialize` only here): relayed like the account call, screened and audited.
    assert not any(out.secret.encode() in s.body for s in out.models.seen)
    turns = [s for s in out.models.seen if s.path == "/responses"]
    assert_never_sent(replace(out, models=FakeModels(seen=turns)))
    assert_audited(out, gate_dirs, dict(os.environ))
    assert all(s.headers.get("chatgpt-account-id") == account for s in turns)
    _account_call_audited(gate_dirs)


def _account_call_audited(gate_dirs: dict[str, Path]) -> None:
    rows = tunnels.rows(AuditStore(gate_dirs["data"] / "audit.db"))
    assert any(
        (r["host"], r["kind"], r["reason"]) == ("chatgpt.com", "http", "to upstream chatgpt")
        for r in rows
    )
    # Screened as opaque text on their way (docs/forward.md), none of its own calls (its
    # bearer token, its account id) is refused.
    assert not [r["reason"] for r in rows if r["kind"] == "blocked"]


@pytest.mark.parametrize("allowed", [True, False], ids=["chatgpt-allowed", "not-allowed"])
def test_codex_signed_in_with_chatgpt_in_a_lock(allowed: bool, gate_dirs: dict[str, Path]) -> None:
    """Locked, the account call is a relay like any other: it needs `chatgpt.com` on
    egress.allow, and without it Codex stops before sending anything."""
    fake = FakeWsModels()
    out, _ = _run(gate_dirs, fake, lock=True, allow=("chatgpt.com",) if allowed else ())
    if allowed:
        assert_never_sent(out)
        assert ACCOUNT_CHECK in fake.http
        return
    assert out.proc.returncode != 0 and not fake.seen, out.explain()
    assert ACCOUNT_CHECK not in fake.http
    rows = tunnels.rows(AuditStore(gate_dirs["data"] / "audit.db"))
    assert any((r["host"], r["kind"]) == ("chatgpt.com", "blocked") for r in rows), rows
