"""`gate log --follow` prints each request as it passes a real gate, through a pipe; plain
`gate show` gives times and latency as a person reads them."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import anthropic
from click.testing import CliRunner

from conftest import finished_row
from gate.cli import cli

CLI = [sys.executable, "-c", "from gate.cli import main; main()"]


def lines_of(proc: subprocess.Popen[str]) -> queue.Queue[str]:
    out: queue.Queue[str] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            out.put(line)

    threading.Thread(target=pump, daemon=True).start()
    return out


def next_line(out: queue.Queue[str], timeout: float = 20.0) -> str:
    return out.get(timeout=timeout)


def test_follow_prints_each_request_as_it_arrives_through_a_pipe(
    client: anthropic.Anthropic, gate_dirs: dict[str, Path]
) -> None:
    client.messages.create(
        model="claude-before", max_tokens=8, messages=[{"role": "user", "content": "first"}]
    )
    finished_row(gate_dirs["data"])
    proc = subprocess.Popen(
        [*CLI, "log", "--follow"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    try:
        out = lines_of(proc)
        assert next_line(out, 60).split()[:2] == ["ID", "WHEN"]
        assert "claude-before" in next_line(out)
        for n in range(2):
            started = time.monotonic()
            client.messages.create(
                model=f"claude-live-{n}",
                max_tokens=8,
                messages=[{"role": "user", "content": f"turn {n}"}],
            )
            line = next_line(out)
            # It comes while the command runs, not when it exits (a pipe is buffered).
            assert f"claude-live-{n}" in line and "forwarded" in line, line
            assert time.monotonic() - started < 10
        assert out.empty()  # each request once
        proc.send_signal(signal.SIGINT)  # Ctrl-C ends it quietly
        assert proc.wait(timeout=20) == 0
        assert proc.stderr is not None and "Traceback" not in proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def test_follow_keeps_to_its_filters(
    client: anthropic.Anthropic, gate_dirs: dict[str, Path]
) -> None:
    proc = subprocess.Popen(
        [*CLI, "log", "--follow", "--verdict", "blocked"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        out = lines_of(proc)
        assert next_line(out, 60).startswith("    ID")  # (a loaded machine starts slowly)
        client.messages.create(
            model="claude-ok", max_tokens=8, messages=[{"role": "user", "content": "fine"}]
        )
        finished_row(gate_dirs["data"])
        time.sleep(1.5)  # three looks at the audit
        assert out.empty()  # a forwarded request is not shown under --verdict blocked
    finally:
        proc.kill()
        proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()


def test_show_gives_readable_times_latency_and_sizes(
    client: anthropic.Anthropic, gate_dirs: dict[str, Path]
) -> None:
    client.messages.create(
        model="claude-show", max_tokens=8, messages=[{"role": "user", "content": "x" * 2000}]
    )
    row = finished_row(gate_dirs["data"])
    result = CliRunner().invoke(cli, ["show", str(row["id"])])
    fields = {
        line.split(None, 1)[0]: line.split(None, 1)[1]
        for line in result.stdout.splitlines()
        if " " in line
    }
    assert fields["ts"].endswith(" s ago)") and fields["ts"][:2] == "20"  # 2026-12-01 ...
    assert fields["latency_ms"].endswith(" ms") or fields["latency_ms"].endswith(" s")
    assert fields["request_bytes"].endswith(f"({row['request_bytes']} bytes)")
    assert " kB " in fields["request_bytes"]
    shown = json.loads(CliRunner().invoke(cli, ["show", str(row["id"]), "--json"]).stdout)
    assert shown["request"]["ts"] == row["ts"]  # --json keeps the numbers
