"""Desktop notifications through a fake `notify-send` placed first on PATH."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from ask.ask_kit import AskingGate, env_turn, github_token
from gate.ask import notify


def _fake_notifier(bin_dir: Path, record: Path, exit_code: int = 0) -> None:
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "notify-send"
    script.write_text(f"""#!/usr/bin/env python3
import json, sys
open({str(record)!r}, "w").write(json.dumps(sys.argv[1:]))
sys.exit({exit_code})
""")
    script.chmod(0o755)


def _wait_for(path: Path, timeout: float = 10.0) -> str:
    deadline = time.monotonic() + timeout
    while not path.exists() or not path.read_text():
        assert time.monotonic() < deadline, f"{path} never written"
        time.sleep(0.02)
    return path.read_text()


@pytest.fixture
def on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setattr(notify.sys, "platform", "linux")
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return bin_dir


def test_notify_send_gets_title_and_body(on_path: Path, tmp_path: Path) -> None:
    record = tmp_path / "args.json"
    _fake_notifier(on_path, record)
    notify.desktop("gate: question", "-starts with a dash: send ghp_****abcd?")
    args = json.loads(_wait_for(record))
    assert args == [
        "--app-name=gate",
        "--",
        "gate: question",
        "-starts with a dash: send ghp_****abcd?",
    ]


def test_long_body_is_cut(on_path: Path, tmp_path: Path) -> None:
    record = tmp_path / "args.json"
    _fake_notifier(on_path, record)
    notify.desktop("t", "y" * 5000)
    assert len(json.loads(_wait_for(record))[-1]) == notify.BODY_CHARS


def test_no_notifier_means_silently_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setattr(notify.sys, "platform", "linux")
    notify.desktop("t", "b")  # no exception, nothing to wait for
    assert notify._command("t", "b") is None


def test_a_failing_or_broken_notifier_never_raises(on_path: Path, tmp_path: Path) -> None:
    record = tmp_path / "args.json"
    _fake_notifier(on_path, record, exit_code=3)
    notify.desktop("t", "b")
    _wait_for(record)
    (on_path / "notify-send").write_text("#!/nonexistent/interpreter\n")
    notify.desktop("t", "b")  # exec fails inside Popen: swallowed


def test_macos_uses_osascript_with_values_as_arguments(
    on_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = tmp_path / "args.json"
    _fake_notifier(on_path, record)
    (on_path / "notify-send").rename(on_path / "osascript")
    monkeypatch.setattr(notify.sys, "platform", "darwin")
    notify.desktop('a "quoted" title', "body")
    args = json.loads(_wait_for(record))
    assert args[-2:] == ['a "quoted" title', "body"]
    assert all('"quoted"' not in a for a in args[:-2])  # never spliced into the script


def test_a_parked_question_notifies_without_the_value(
    on_path: Path, tmp_path: Path, asking: Callable[..., AskingGate], gate_dirs: dict[str, Path]
) -> None:
    record = tmp_path / "args.json"
    _fake_notifier(on_path, record)
    g = asking()
    token = github_token()
    sent = g.send(env_turn(gate_dirs["project"], token))
    [q] = g.wait_pending()
    args = json.loads(_wait_for(record))
    title, body = args[-2:]
    assert title.startswith("gate: ") and q["id"] in body
    assert token not in title + body and token[4:-4] not in title + body
    g.control().answer(q["id"], "redact")
    assert sent.wait().error is None
