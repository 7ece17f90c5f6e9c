"""`gate history scan` over a generated 1 GB history across agents: time, peak memory and
recall, beside detect-secrets on a slice of the same files.

The history is built at run time in a temp dir (removed after): Claude Code and Codex
sessions (JSONL, tool results JSON-escaped), Gemini CLI chats, an OpenCode database and
Aider logs, their text drawn from tests/screen/secrets_corpus.py's agent traffic (only
chunks no detector flags), with a known number of fake GitHub tokens planted. The scan
runs as `gate history scan --json` in a child process in its own session; peak RSS is the
summed RSS of that session's processes (the scan and its workers), sampled every 250 ms.
Target (issue 17): 1 GB in <= 30 s with memory bounded (streamed, not loaded whole).

Run: .venv/bin/python bench/history.py [--size-mb 1024] [--slice-mb 20]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests" / "screen")]

from detect_secrets.core import scan as ds_scan  # noqa: E402
from detect_secrets.settings import default_settings, get_settings  # noqa: E402
from secrets_corpus import realistic_text  # noqa: E402

from gate.screen.checks import base62  # noqa: E402
from gate.screen.secrets import Scanner  # noqa: E402

B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
FILE_BYTES = 4 << 20  # one session file
SUBS = 40  # project directories


def token(rng: random.Random) -> str:
    body = "".join(rng.choice(B62) for _ in range(30))
    return f"ghp_{body}{base62(zlib.crc32(body.encode()))}"


def clean_pool() -> list[str]:
    """Agent-traffic chunks none of gate's detectors flags (the planted tokens are the
    only secrets, so recall is exact)."""
    _, chunks = realistic_text(3_000_000, seed=11)
    scanner = Scanner()
    return [c for c in chunks if c.strip() and not scanner.scan(c)]


class Writer:
    def __init__(self, root: Path, pool: list[str], planted: int, size: int):
        self.root, self.pool, self.size = root, pool, size
        self.rng = random.Random(17)
        self.every = max(1, size // max(planted, 1))
        self.next_plant = self.every // 2
        self.written = 0
        self.tokens: list[str] = []
        self.n = 0

    def text(self) -> str:
        """A unique piece of text (a counter keeps the scanner's content cache honest),
        with a planted token every so many bytes."""
        self.n += 1
        out = f"[{self.n}] {self.rng.choice(self.pool)}"
        if self.written >= self.next_plant:
            t = token(self.rng)
            self.tokens.append(t)
            self.next_plant += self.every
            out += f"\nexport GITHUB_TOKEN={t}\n"
        return out

    def jsonl(self, path: Path, line: callable) -> None:  # type: ignore[valid-type]
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w") as f:
            size = 0
            while size < FILE_BYTES and self.written < self.size:
                row = json.dumps(line(self.text()), ensure_ascii=False) + "\n"
                f.write(row)
                size += len(row)
                self.written += len(row)


def generate(root: Path, size: int, planted: int) -> Writer:
    w = Writer(root, clean_pool(), planted, size)
    home, project = root / "home", root / "project"
    for i in range(SUBS):
        (project / f"sub{i}").mkdir(parents=True)
    aider = 0
    n = 0
    share = {"claude": 0.45, "codex": 0.25, "gemini": 0.1, "opencode": 0.1, "aider": 0.1}
    for agent, part in share.items():
        stop = w.written + int(size * part)
        while w.written < min(stop, size):
            n += 1
            if agent == "claude":
                w.jsonl(
                    home / ".claude" / "projects" / "-p" / f"s{n}.jsonl",
                    lambda t, n=n: {
                        "type": "user",
                        "sessionId": f"s{n}",
                        "cwd": str(project / f"sub{n % SUBS}"),
                        "timestamp": "2026-11-20T10:00:00Z",
                        "message": {
                            "role": "user",
                            "content": [{"type": "tool_result", "tool_use_id": "t1", "content": t}],
                        },
                        "toolUseResult": {"stdout": t[:200]},
                    },
                )
            elif agent == "codex":
                w.jsonl(
                    home / ".codex" / "sessions" / "2026" / "11" / "20" / f"rollout-{n}.jsonl",
                    lambda t: {
                        "timestamp": "2026-11-20T10:00:00Z",
                        "type": "response_item",
                        "payload": {"type": "function_call_output", "call_id": "c", "output": t},
                    },
                )
            elif agent == "gemini":
                w.jsonl(
                    home / ".gemini" / "tmp" / "p" / "chats" / f"session-{n}.jsonl",
                    lambda t: {"id": "m", "type": "user", "content": [{"text": t}]},
                )
            elif agent == "opencode":
                _opencode(w, home / ".local" / "share" / "opencode" / "opencode.db", stop)
            else:
                # Aider keeps its log in each project: here in the dirs the Claude Code
                # sessions ran in (gate looks for Aider's logs in the projects it knows).
                aider += 1
                name = ".aider.chat.history.md" if aider <= SUBS else ".aider.llm.history"
                path = project / f"sub{aider % SUBS}" / name
                with open(path, "w") as f:
                    size_here = 0
                    while size_here < FILE_BYTES and w.written < min(stop, size):
                        t = f"#### {w.text()}\n\n"
                        f.write(t)
                        size_here += len(t)
                        w.written += len(t)
    return w


def _opencode(w: Writer, db: Path, stop: int) -> None:
    db.parent.mkdir(parents=True, exist_ok=True)
    con = sqlite3.connect(db)
    con.execute(
        "CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT,"
        " time_created INTEGER, data TEXT)"
    )
    i = 0
    while w.written < min(stop, w.size):
        i += 1
        data = json.dumps(
            {"type": "tool", "tool": "bash", "state": {"output": w.text()}}, ensure_ascii=False
        )
        con.execute("INSERT INTO part VALUES (?, 'm', 's', 0, ?)", (f"p{i}", data))
        w.written += len(data)
    con.commit()
    con.close()


def gate_scan(home: Path, cwd: Path, data: Path) -> tuple[float, int, dict[str, object]]:
    """Seconds, peak RSS (KiB, the scan and its workers together) and the JSON of one
    `gate history scan` child process."""
    env = {
        **os.environ,
        "GATE_DATA_DIR": str(data),
        "GATE_CONFIG_DIR": str(data / "cfg"),
        "GATE_LOG_LEVEL": "WARNING",
    }
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "gate", "history", "scan", "--home", str(home), "--json"],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its workers (under multiprocessing's fork server) join it
    )
    peak = [0]
    sampler = threading.Thread(target=_sample_session, args=(proc, peak), daemon=True)
    sampler.start()
    out, _ = proc.communicate()
    seconds = time.perf_counter() - t0
    sampler.join()
    return seconds, peak[0], json.loads(out)


def _sample_session(proc: subprocess.Popen[bytes], peak: list[int]) -> None:
    """The peak of the summed RSS (KiB) of every process in the scan's session: the scan
    and its workers, sampled every 250 ms until the scan exits (each sample reads /proc,
    so not often: the sampler shares the two cores with the scan)."""
    page_kib = os.sysconf("SC_PAGE_SIZE") // 1024
    while proc.poll() is None:
        total = 0
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            try:
                with open(f"/proc/{entry.name}/stat", "rb") as f:
                    fields = f.read().rsplit(b")", 1)[1].split()
                if int(fields[3]) == proc.pid:  # the session id, after state/ppid/pgrp
                    with open(f"/proc/{entry.name}/statm", "rb") as f:
                        total += int(f.read().split()[1]) * page_kib
            except (OSError, IndexError, ValueError):
                continue  # gone meanwhile
        peak[0] = max(peak[0], total)
        time.sleep(0.25)  # the workers hold flat memory: a coarse sample finds the peak


def ds_slice(files: list[Path]) -> tuple[float, int]:
    with default_settings():
        get_settings().filters.pop(
            "detect_secrets.filters.common.is_ignored_due_to_verification_policies", None
        )
        t0 = time.perf_counter()
        found = sum(len(list(ds_scan.scan_file(str(f)))) for f in files)
    return time.perf_counter() - t0, found


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size-mb", type=int, default=1024)
    ap.add_argument("--slice-mb", type=int, default=20)
    ap.add_argument("--planted", type=int, default=500)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="gate-bench-history-"))
    try:
        t0 = time.perf_counter()
        w = generate(tmp, args.size_mb << 20, args.planted)
        on_disk = sum(p.stat().st_size for p in tmp.rglob("*") if p.is_file())
        print(
            f"generated {on_disk / 1e6:,.0f} MB across agents in"
            f" {time.perf_counter() - t0:.0f} s, {len(w.tokens)} tokens planted"
        )
        seconds, rss, doc = gate_scan(tmp / "home", tmp / "project", tmp / "data")
        found = {g["preview"][:4] + g["preview"][-4:] for g in doc["groups"]}
        recall = sum(t[:4] + t[-4:] in found for t in w.tokens) / max(len(w.tokens), 1)
        print(
            f"gate history scan  {seconds:6.1f} s  {on_disk / 1e6 / seconds:7.1f} MB/s"
            f"  peak RSS {rss / 1024:6.0f} MiB  stores {doc['stores']}"
            f"  recall {recall:.3f}  target <= 30 s"
        )
        # The slice: whole Claude Code session files, as both tools see them.
        files, size = [], 0
        for p in sorted((tmp / "home" / ".claude").rglob("*.jsonl")):
            if size >= args.slice_mb << 20:
                break
            files.append(p)
            size += p.stat().st_size
        sl = tmp / "slice"
        for p in files:
            dest = sl / "home" / ".claude" / "projects" / "-p" / p.name
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(p, dest)
        g_s, _, _ = gate_scan(sl / "home", tmp / "project", tmp / "data")
        d_s, d_found = ds_slice(files)
        print(
            f"slice {size / 1e6:.0f} MB:  gate history scan {g_s:6.2f} s"
            f" ({size / 1e6 / g_s:6.1f} MB/s, process start included)"
            f"   detect-secrets {d_s:6.2f} s ({size / 1e6 / d_s:6.1f} MB/s, {d_found} findings)"
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
