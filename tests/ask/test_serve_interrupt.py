"""Ctrl-C of `gate serve` while a question waits stops cleanly: no traceback, exit 0, the
question withdrawn and nothing forwarded."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from ask.ask_kit import env_turn, github_token
from fake_provider import FakeProvider
from gate.ask.client import ControlClient


def test_ctrl_c_with_a_question_waiting(provider: FakeProvider, gate_dirs: dict[str, Path]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gate",
            "serve",
            "--port",
            str(port),
            "--upstream",
            f"anthropic={provider.url}",
        ],
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=os.environ,
    )
    sock = None
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().startswith("gate listening")
        data = json.dumps(env_turn(gate_dirs["project"], github_token())).encode()
        sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        sock.sendall(
            b"POST /anthropic/v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\n"
            b"content-type: application/json\r\ncontent-length: "
            + str(len(data)).encode()
            + b"\r\n\r\n"
            + data
        )
        deadline = time.monotonic() + 20
        while not ControlClient.find(gate_dirs["data"]).pending():
            assert time.monotonic() < deadline
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=20)
    finally:
        if sock is not None:
            sock.close()
        proc.kill()
        _out, err = proc.communicate()
    assert code == 0, err
    assert "Traceback" not in err and "CancelledError" not in err, err
    assert provider.seen == []
