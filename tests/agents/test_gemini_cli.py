"""The real Gemini CLI through `gate run`: read_file and run_shell_command results withheld,
with an API key (Gemini API) and signed in with Google (Code Assist).

The real-CLI tests (`agent_cli`) are skipped unless `gemini` is on PATH or named by
GATE_TEST_GEMINI_BIN, e.g.:
    mkdir -p /tmp/agents && cd /tmp/agents && npm install @google/gemini-cli
    GATE_TEST_GEMINI_BIN=/tmp/agents/node_modules/.bin/gemini pytest tests/agents -q
Everything stays on 127.0.0.1: Google's sign-in is faked behind a loopback HTTPS proxy
(tests/google_signin.py), which drops all other traffic; keys, OAuth tokens and the .env
value are fakes made at run time. Gemini CLI 0.61 accepts GOOGLE_GEMINI_BASE_URL
in `-p` mode only once an auth type is selected, so the test's HOME selects "gemini-api-key"
(or "oauth-personal", signed in).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import replace
from pathlib import Path

import httpx2 as httpx
import pytest
from google_signin import EMAIL, SCOPES, GoogleSignIn

from agent_clis import PROMPT, Case, case, environment, project_files
from agent_run import GATE, Outcome, assert_audited, assert_never_sent, check
from agent_script import steps
from gate.config import Config, parse_upstream
from gate.proxy.server import BackgroundGate
from gemini_upstream import PROJECT, FakeGemini, code_assist_setup

SETUP = [
    (
        "POST",
        "loadCodeAssist",
        {
            "metadata": {
                "ideType": "IDE_UNSPECIFIED",
                "platform": "PLATFORM_UNSPECIFIED",
                "pluginType": "GEMINI",
            }
        },
    ),
    ("POST", "onboardUser", {"tierId": "free-tier", "metadata": {"pluginType": "GEMINI"}}),
    ("POST", "loadCodeAssist", {"metadata": {"pluginType": "GEMINI"}}),
    ("POST", "retrieveUserQuota", {"project": PROJECT}),
    ("POST", "listExperiments", {"project": PROJECT, "metadata": {}}),
    ("GET", "getCodeAssistGlobalUserSetting", None),
]


def test_code_assist_setup_calls_pass_through_gate(gate_dirs: dict[str, Path]) -> None:
    """The setup calls Gemini CLI makes signed in with Google, as it makes them, through a
    real gate: each reaches the fake and its answer comes back whole; the token is not kept."""
    upstream = FakeGemini().start()
    config = replace(Config(), port=0, projects=(str(gate_dirs["project"]),)).with_upstreams(
        {"code-assist": parse_upstream("code-assist", upstream.url)}
    )
    server = BackgroundGate(config, gate_dirs["data"])
    token = "ya29.fake-" + os.urandom(16).hex()
    try:
        base = f"{server.start().base_url}/code-assist/v1internal"
        for (verb, method, body), onboarded in zip(
            SETUP, (False, False, True, True, True, True), strict=True
        ):
            resp = httpx.request(
                verb,
                f"{base}:{method}",
                json=body,
                timeout=30,
                headers={
                    "authorization": f"Bearer {token}",
                    "user-agent": "GeminiCLI/0.61.0/gemini-2.5-pro (linux; x64; terminal)",
                },
            )
            assert resp.status_code == 200, (method, resp.text)
            assert resp.json() == code_assist_setup(method, onboarded), method
    finally:
        server.stop()
        upstream.stop()
    assert [(s.method, s.path) for s in upstream.seen] == [
        (verb, f"/v1internal:{method}") for verb, method, _ in SETUP
    ]
    assert all(s.headers["authorization"] == f"Bearer {token}" for s in upstream.seen)
    for f in gate_dirs["data"].rglob("*"):
        if f.is_file():
            assert token.encode() not in f.read_bytes(), f


def test_fake_code_assist_answers_only_the_calls_it_knows() -> None:
    """So a call a new CLI version makes fails loudly instead of getting a made-up answer."""
    assert code_assist_setup("noSuchMethod", onboarded=True) is None
    upstream = FakeGemini().start()
    try:
        resp = httpx.get(f"{upstream.url}/v1internal:noSuchMethod", timeout=10)
    finally:
        upstream.stop()
    assert resp.status_code == 404 and resp.json()["error"]["status"] == "NOT_FOUND"


@pytest.mark.agent_cli
@pytest.mark.timeout(300)
def test_gemini_cli_reads_of_env_are_withheld(gate_dirs: dict[str, Path]) -> None:
    out = check(case("gemini-cli", "read-and-shell"), gate_dirs)
    assert all(":streamGenerateContent" in s.path for s in out.models.seen if s.body)
    assert all(
        s.headers.get("user-agent", "").lower().startswith("geminicli")
        for s in out.models.seen
        if s.body
    )


def signed_in(token: str, expires_in: float, account: bool) -> Case:
    """The API-key case, signed in with Google instead: cached OAuth credentials expiring in
    `expires_in` seconds and, with `account`, the account they belong to."""
    api_key = case("gemini-cli", "read-and-shell")
    creds = {
        "access_token": token,
        "refresh_token": "1//fake-" + os.urandom(12).hex(),
        "scope": SCOPES,
        "token_type": "Bearer",
        "expiry_date": int((time.time() + expires_in) * 1000),
    }
    settings = json.loads(api_key.home[".gemini/settings.json"])
    settings["security"]["auth"]["selectedType"] = "oauth-personal"
    home = {
        ".gemini/settings.json": json.dumps(settings),
        ".gemini/oauth_creds.json": json.dumps(creds),
    }
    if account:
        home[".gemini/google_accounts.json"] = json.dumps({"active": EMAIL, "old": []})
    return Case(
        "gemini-cli",
        "code-assist",
        "gemini",
        api_key.format,
        "code-assist",
        api_key.argv,
        api_key.calls,
        lambda: {"GEMINI_CLI_TRUST_WORKSPACE": "true"},
        home=home,
    )


def run_signed_in(
    c: Case, gate_dirs: dict[str, Path], google_down: bool = False
) -> tuple[Outcome, GoogleSignIn]:
    """`gate run --upstream code-assist=FAKE -- gemini …`, Google's sign-in faked on loopback."""
    binary = c.binary()
    if binary is None:
        pytest.skip(f"no `{c.exe}` on PATH and {c.bin_env} unset")
    project, home = gate_dirs["project"].resolve(), gate_dirs["home"]
    secret = "fake-" + os.urandom(16).hex()
    project_files(project, secret)
    (certs := gate_dirs["home"].parent / "certs").mkdir()
    upstream = FakeGemini(script=steps(*c.calls(project), answer=c.answer)).start()
    google = GoogleSignIn(certs, down=google_down)
    try:
        env = {
            **environment(c, home, project, google.url),
            "NODE_EXTRA_CA_CERTS": str(google.ca_file),
        }
        cmd = [
            *GATE,
            "run",
            "--upstream",
            f"{c.upstream}={upstream.url}",
            "--",
            binary,
            *c.argv(PROMPT),
        ]
        proc = subprocess.run(
            cmd,
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    finally:
        google.stop()
        upstream.stop()
    return Outcome(c, proc, secret, project, upstream, google.tried), google


YEAR = 365 * 86400.0
TOKENINFO = "POST oauth2.googleapis.com/tokeninfo"
REFRESH = "POST oauth2.googleapis.com/token"
USERINFO = "GET www.googleapis.com/oauth2/v2/userinfo"


@pytest.mark.agent_cli
@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    ("expires_in", "account", "outside"),
    [
        (YEAR, True, [TOKENINFO]),  # signed in, token valid: checked on start
        (-60, True, [REFRESH, TOKENINFO]),  # token expired: refreshed with Google first
        (YEAR, False, [TOKENINFO, USERINFO]),  # account unknown: Google is asked who it is
    ],
    ids=["cached", "expired", "no-account"],
)
def test_gemini_cli_signed_in_with_google_goes_through_code_assist(
    gate_dirs: dict[str, Path], expires_in: float, account: bool, outside: list[str]
) -> None:
    token = "ya29.fake-" + os.urandom(16).hex()
    out, google = run_signed_in(signed_in(token, expires_in, account), gate_dirs)
    seen = out.models.seen
    methods = [s.path.split("?")[0].rsplit(":", 1)[-1] for s in seen]
    assert not any(out.secret.encode() in s.body for s in seen), methods
    # The model's turns are checked as every agent's are; the setup calls carry no content.
    assert_never_sent(
        replace(
            out, models=FakeGemini(seen=[s for s in seen if ":streamGenerateContent" in s.path])
        )
    )
    assert_audited(out, gate_dirs, dict(os.environ))
    for f in gate_dirs["data"].rglob("*"):  # auth headers are never stored
        if f.is_file():
            assert token.encode() not in f.read_bytes(), f
            assert google.refreshed.encode() not in f.read_bytes(), f
    # The CLI set up its Code Assist user through gate, then asked the model.
    assert {"loadCodeAssist", "onboardUser", "streamGenerateContent"} <= set(methods), methods
    assert all(s.path.startswith("/v1internal:") for s in seen), [s.path for s in seen]
    sent = google.refreshed if REFRESH in outside else token
    assert all(s.headers.get("authorization") == f"Bearer {sent}" for s in seen)
    assert sent in (gate_dirs["home"] / ".gemini/oauth_creds.json").read_text()
    # Outside gate: only Google's sign-in, and nothing of the project in it.
    assert sorted(set(google.answered)) == sorted(outside), (google.answered, google.tried)
    assert not out.tried_outside, out.tried_outside
    assert not any(out.secret.encode() in b for b in google.bodies)
    rows = json.loads(
        subprocess.run(
            [*GATE, "log", "--json"], capture_output=True, text=True, timeout=60, check=True
        ).stdout
    )["requests"]
    assert any(
        r["upstream"] == "code-assist"
        and ":streamGenerateContent" in r["path"]
        and r["verdict"] == "modified"
        for r in rows
    ), rows


@pytest.mark.agent_cli
@pytest.mark.timeout(300)
def test_gemini_cli_stops_when_google_cannot_check_its_token(gate_dirs: dict[str, Path]) -> None:
    """Without Google's token check the CLI falls back to an interactive login, which `-p`
    cannot do: it exits before sending anything, to gate or elsewhere."""
    c = signed_in("ya29.fake-" + os.urandom(16).hex(), YEAR, True)
    out, google = run_signed_in(c, gate_dirs, google_down=True)
    assert out.proc.returncode != 0, out.explain()
    assert "Manual authorization is required" in out.proc.stderr, out.explain()
    assert out.models.seen == [], [s.path for s in out.models.seen]
    assert google.answered == [] and google.tried, out.explain()
    assert all(t.startswith("CONNECT oauth2.googleapis.com:443") for t in google.tried)
