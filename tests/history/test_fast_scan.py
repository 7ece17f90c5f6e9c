"""The fast scan finds exactly what the plain one does: the raw-line prefilter never skips
a line a screen would find something in, and worker processes give the same output, in
the same order, as one process."""

from __future__ import annotations

import base64
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from history.builders import every_agent, github_token, plant
from history.kit import scan_json

from gate.history.item import strings
from gate.history.prefilter import HEAD, Prefilter
from gate.screen.fingerprints import DeniedIndex, Source, encoded_forms
from gate.screen.secrets import Scanner
from screen import wallet_corpus

SCANNER = Scanner(cache_entries=0)


def _denied(value: str) -> DeniedIndex:
    from gate.rules.layers import PolicyStore

    rule = PolicyStore(warn=False).policy_for(None).rules[0]
    return DeniedIndex({value: Source("/p/.env", rule)})


def _finds(raw: bytes, denied: DeniedIndex) -> bool:
    """What the scan itself would say: any string of the line (or the line as text when
    it does not parse) holding a detector's finding or a denied value."""
    try:
        texts = [s for _, s in strings(orjson.loads(raw))]
    except orjson.JSONDecodeError:
        texts = [raw.decode("utf-8", "replace")]
    return any(SCANNER.scan(t) or denied.find(t) for t in texts)


def _prefilter(denied: DeniedIndex, phrases: bool = True) -> Prefilter:
    """As the scan builds it (gate/history/engine.py)."""
    forms = [f for u in denied.units for f in encoded_forms(u)]
    words = [w for d in SCANNER.detectors for w in d.keywords]
    finders = phrases and any(d.finder for d in SCANNER.detectors)
    return Prefilter(words, forms, denied.could_hold, phrases=finders)


DENIED = 'pw"7\\q-' + "é" + "0a1b2c3d4e5f"  # a quote, a backslash and non-ASCII in it


def _hiding_cases(token: str) -> list[bytes]:
    """Lines whose secret the raw bytes do not show as it is."""
    zw = token[:2] + "\u200b" + token[2:]
    b64 = base64.b64encode(f"export GITHUB_TOKEN={token}\n".encode()).decode()
    pw = "hunter2-" + "Qz7" * 5
    rows: list[object] = [
        {"content": zw},  # a zero-width space inside the keyword
        {"content": b64},  # base64 of a token: no keyword in the line at all
        {"content": f'{{"pass": "{pw}"}}'},  # JSON in a string: \"pass\"
        {"content": f"env\\tPASSWORD={pw}"},  # a literal \t the view reads as a space
        {"content": "." * (HEAD - 16) + " " + token},  # the keyword across the head's end
        {"content": DENIED},
        {"content": f"cat .env\n{DENIED}\n"},
    ]
    lines = [json.dumps(r).encode() for r in rows]  # ensure_ascii: é as \u00e9
    lines += [json.dumps(r, ensure_ascii=False).encode() for r in rows]
    lines.append(json.dumps({"c": zw}).encode())  # the zero-width space as \u200b
    lines.append(json.dumps({"c": token}).replace("_", "\\u005f").encode())
    lines.append(b'{"torn": "env\\"PASSWORD=' + pw.encode())  # torn: read as text
    lines.append(b'{"torn": "' + b64.encode())
    lines.append(json.dumps({"c": json.dumps({"c": DENIED})}).encode())  # JSON in JSON
    return lines


def test_the_prefilter_keeps_every_line_a_screen_finds_something_in() -> None:
    denied = _denied(DENIED)
    pre = _prefilter(denied)
    for raw in _hiding_cases(github_token()):
        assert _finds(raw, denied), raw[:120]
        assert pre.maybe(raw), raw[:120]


def test_the_prefilter_keeps_lines_holding_a_secret_with_no_keyword() -> None:
    """Seed phrases, WIF keys and Solana keypairs have no keyword: a line holding one is
    screened in any JSON writing (words one per line as `\\n`, a Read tool's arrows as
    themselves or as `\\u2192`). Without the seed-phrase test the phrase lines are
    dropped, so this test can fail."""
    rng = random.Random(7)
    phrase = wallet_corpus.mnemonic(rng, 12)
    numbered = "\n".join(f"{i:>6}\u2192{word}" for i, word in enumerate(phrase.split(), 1))
    rows = [
        {"content": phrase},
        {"content": "\n".join(phrase.split())},
        {"content": numbered},
        {"content": wallet_corpus.wif(rng)},
        {"content": json.dumps(list(wallet_corpus.keypair(rng)))},
    ]
    denied = _denied(DENIED)
    pre, without = _prefilter(denied), _prefilter(denied, phrases=False)
    dropped = 0
    for row in rows:
        for raw in (json.dumps(row).encode(), json.dumps(row, ensure_ascii=False).encode()):
            assert _finds(raw, denied), raw[:120]
            assert pre.maybe(raw), raw[:120]
            dropped += not without.maybe(raw)
    assert dropped >= 4  # the phrase lines, as JSON and as written


# Fragments a line is made of at random: keywords and near-keywords, every JSON escape,
# invisible characters, base64 and token pieces, the denied value, plain words.
_FRAGMENTS = [
    "pass",
    '"',
    "\\",
    "'",
    " ",
    "\t",
    "\n",
    "env",
    "auth",
    "token",
    "ghp_",
    "\u200b",
    "\u00ad",
    "é",
    "/",
    "=",
    ":",
    "secret",
    "api_key",
    "password",
    "hunter2Qz7Qz7Qz7",
    "AKIA",
    "u200b",
    "\\u200b",
    "eyJ",
    "docker login",
    ": |",
    "-----BEGIN",
    "abc",
    "README",
    "0123456789",
]


def _random_text(rng: random.Random, token: str, b64: str) -> str:
    parts = rng.choices(_FRAGMENTS, k=rng.randrange(1, 14))
    if rng.random() < 0.15:
        parts.insert(rng.randrange(len(parts) + 1), token)
    if rng.random() < 0.1:
        parts.insert(rng.randrange(len(parts) + 1), b64)
    if rng.random() < 0.1:
        parts.insert(rng.randrange(len(parts) + 1), DENIED)
    return "".join(parts)


def test_the_prefilter_never_drops_a_finding_at_random() -> None:
    """Thousands of random lines of keywords, escapes, invisible characters, base64 and
    denied values, written by both JSON writers and torn: whenever the screens find
    anything, the prefilter kept the line; and it still skips plain lines."""
    rng = random.Random(17)
    denied = _denied(DENIED)
    pre = _prefilter(denied)
    token = github_token()
    b64 = base64.b64encode(f"token: {token}".encode()).decode()
    found = skipped = 0
    for _ in range(6000):
        doc = {"type": "user", "content": [_random_text(rng, token, b64) for _ in range(2)]}
        raw = json.dumps(doc, ensure_ascii=rng.random() < 0.5).encode()
        if rng.random() < 0.2:
            raw = raw[: rng.randrange(1, len(raw))]  # torn: screened as text
        if _finds(raw, denied):
            found += 1
            assert pre.maybe(raw), raw
        elif not pre.maybe(raw):
            skipped += 1
    assert found > 500 and skipped > 100
    plain = json.dumps({"type": "assistant", "content": "Done: the tests pass now."})
    assert not pre.maybe(plain.encode())


def _run(home: Path, data: Path, jobs: int):
    from gate.history.readers import Env
    from gate.history.session import run
    from gate.history.summary import to_json

    r = run(Env(home, {}, ()), data, jobs=jobs, parallel_bytes=0)
    return [(str(f.finding.store), f.finding.where.at, f.finding.digest) for f in r.found], (
        to_json(r.groups, r.stores, r.errors)
    )


def test_workers_give_the_same_findings_in_the_same_order(
    tmp_path: Path, gate_dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every agent's stores (the .env value found through the projects the sessions
    name), plus big files whose findings sit across the text reader's 1 MB blocks and
    the prefilter's head: one process and three give the same list and the same JSON."""
    p, _ = every_agent(tmp_path / "user")
    monkeypatch.chdir(p.project)
    # Aider's log read in 1 MB blocks: a PEM key and a folded token over the cut.
    pem = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(
        base64.b64encode(os.urandom(48)).decode() for _ in range(8)
    )
    pem += "\n-----END OPENSSH PRIVATE KEY-----\n"
    filler = "#### a line of an aider chat log\n" * ((1 << 20) // 33)
    log = p.project / ".aider.chat.history.md"
    big_token = github_token()
    log.write_text(filler[:-200] + pem + filler + f"{big_token[:20]}\n{big_token[20:]}\n")
    # A Claude Code session with lines longer than the prefilter's head.
    slug = str(p.project).replace("/", "-")
    long = p.home / ".claude" / "projects" / slug / "long.jsonl"
    rows = [
        {"type": "user", "cwd": str(p.project), "message": {"content": ". " * n + tok}}
        for n, tok in ((HEAD - 3, p.token), (HEAD * 3, p.denied), (10, "plain words"))
    ]
    long.write_text("".join(json.dumps(r) + "\n" for r in rows))
    one, doc_one = _run(p.home, gate_dirs["data"], 1)
    three, doc_three = _run(p.home, gate_dirs["data"], 3)
    assert one == three and doc_one == doc_three
    assert json.dumps(doc_one) == json.dumps(doc_three)
    stores = {s for s, _, _ in one}
    assert str(log) in stores and str(long) in stores
    ats = [at for s, at, _ in one if s == str(long)]
    assert ats[:2] == ["line 1 $.message.content", "line 2 $.message.content"]
    in_log = {g["kind"] for g in doc_one["groups"] for f in g["findings"] if f["store"] == str(log)}
    assert in_log == {"private-key", "github-token"}, in_log
    assert doc_one["secrets"] >= 4, doc_one


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_stops_a_parallel_scan_at_once(
    tmp_path: Path, gate_dirs: dict[str, Path], sig: signal.Signals
) -> None:
    """Ctrl-C (or a kill) during a scan with worker processes: it stops within seconds,
    leaves no worker running, and prints no traceback from each worker."""
    p = plant(tmp_path / "user")
    chats = p.home / ".gemini" / "tmp" / "p" / "chats"
    chats.mkdir(parents=True)
    # Over 8192 distinct strings a store (the scanner's cache), so every store costs a
    # real scan; hard links make it 40 stores at one file's disk cost.
    rng = random.Random(7)
    words = ["token", "secret", "api_key", "password", "build", "failed", "export", "value"]
    first = chats / "session-0.jsonl"
    with first.open("w") as f:
        for i in range(10000):
            text = f"{i} " + " ".join(rng.choice(words) for _ in range(100))
            f.write(json.dumps({"type": "user", "content": [{"text": text}]}) + "\n")
    for i in range(1, 40):
        os.link(first, chats / f"session-{i}.jsonl")
    proc = subprocess.Popen(
        [sys.executable, "-m", "gate", "history", "scan", "--home", str(p.home), "--jobs", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        kids: list[str] = []
        while len(kids) < 4 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)  # the scan, the fork server and two workers
            kids = subprocess.run(
                ["pgrep", "-s", str(proc.pid)], capture_output=True, text=True
            ).stdout.split()
        # Freeze everything but the scan itself: the workers cannot finish the scan before
        # the signal lands, however fast the machine; they go on once it is in.
        others = [int(k) for k in kids if int(k) != proc.pid]
        for k in others:
            os.kill(k, signal.SIGSTOP)
        assert len(kids) >= 4 and proc.poll() is None, "no workers to interrupt"
        proc.send_signal(sig)
        time.sleep(0.5)
        for k in others:
            os.kill(k, signal.SIGCONT)
        _, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode != 0
    assert err.count(b"Traceback") == 0, err.decode()[-2000:]
    # The fork server and resource tracker leave once they see the scan gone.
    left = ["?"]
    for _ in range(20):
        time.sleep(0.25)
        ps = subprocess.run(["pgrep", "-a", "-s", str(proc.pid)], capture_output=True, text=True)
        if not (left := ps.stdout.splitlines()):
            break
    assert left == [], left


def test_the_cli_parallel_scan_prints_the_serial_output(
    tmp_path: Path, gate_dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    p, _ = every_agent(tmp_path / "user")
    monkeypatch.chdir(p.project)
    _, serial = scan_json(p.home, "--jobs", "1")
    monkeypatch.setattr("gate.history.session.PARALLEL_BYTES", 0)
    _, parallel = scan_json(p.home, "--jobs", "2")
    assert json.dumps(serial) == json.dumps(parallel) and serial["copies"] > 20


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_long_scan_shows_progress_on_stderr(
    tmp_path: Path, gate_dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch, jobs: str
) -> None:
    """Many stores: progress lines on stderr (the last one always), none on stdout, and
    never a value; with workers too."""
    from history.kit import invoke

    p = plant(tmp_path / "user")
    chats = p.home / ".gemini" / "tmp" / "p" / "chats"
    chats.mkdir(parents=True)
    for i in range(60):
        row = {"type": "user", "content": [{"text": f"step {i}: token {p.token}"}]}
        (chats / f"session-{i}.jsonl").write_text(json.dumps(row) + "\n")
    monkeypatch.setattr("gate.history.session.PARALLEL_BYTES", 0)
    code, out, err = invoke("history", "scan", "--home", str(p.home), "--jobs", jobs)
    assert code == 1
    assert "scanning 60/60 stores (gemini-cli)" in err and "scanning" not in out
    assert p.token not in out + err
