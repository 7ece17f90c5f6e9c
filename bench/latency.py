"""Latency gate adds to an Anthropic /v1/messages request, next to plain mitmproxy.

Three paths to the same loopback upstream, interleaved request by request:
  direct     client → upstream
  mitmproxy  client → plain mitmproxy (reverse mode, default addons) → upstream
  gate       client → gate (BackgroundGate: screen, withhold, audit) → upstream

Each server runs in its own child process of this script: mitmproxy keeps its master in a
process-wide global (mitmproxy.ctx), so two masters cannot share a process, and separate
processes keep the client's and upstream's CPU off the proxies' GIL, as in real use.

It prints numbers side by side; nothing passes or fails. Target: gate's added p50 at most
1.5× mitmproxy's added p50. `--format` runs the same session as OpenAI Chat, Responses or
Gemini bodies (comma-separated, or `all`); `--concurrent` runs 16 sessions at once instead
(bench/latency_load.py). Run: .venv/bin/python bench/latency.py [--n 40] [--quick]
[--format all] [--concurrent [--seconds 10]]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import http.client
import inspect
import itertools
import json
import os
import platform
import random
import sqlite3
import string
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
import latency_load  # noqa: E402
from latency_formats import FORMAT, FORMATS, convert, reply_for  # noqa: E402

PATHS = ("direct", "mitmproxy", "gate")
SIZES = (("50 KB", 50_000), ("500 KB", 500_000), ("2 MB", 2_000_000))
REPLY = json.dumps(
    {
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "Done."}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 21,
            "output_tokens": 7,
            "cache_read_input_tokens": 3,
            "cache_creation_input_tokens": 0,
        },
    }
).encode()


# -- child processes: the upstream, plain mitmproxy, gate ---------------------------------


@dataclasses.dataclass
class Child:
    """A server role running in a child process of this script."""

    port: int
    proc: subprocess.Popen[str]

    def cpu(self) -> float:
        """CPU seconds its event-loop thread has used: the work on a request's path, which,
        unlike wall-clock time, other processes on a shared machine barely disturb."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write("cpu\n")
        self.proc.stdin.flush()
        return float(self.proc.stdout.readline())


@contextlib.contextmanager
def child(*argv: str, env: dict[str, str] | None = None) -> Iterator[Child]:
    """This script in a child process serving one role, listening on the port it reports.

    Closing its stdin stops it cleanly (a proxy finishes its audit writes and profile first).
    `env`: set in the child's environment on top of this one's.
    """
    proc = subprocess.Popen(
        [sys.executable, __file__, *argv],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, **env} if env else None,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.strip().isdigit():
            raise RuntimeError(f"{argv}: child did not start (exit {proc.wait()})")
        yield Child(int(line), proc)
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _announce_and_wait(port: int, loop_thread: threading.Thread | None = None) -> None:
    """Serve until the parent closes our stdin; answer `cpu` with the loop thread's CPU."""
    print(port, flush=True)
    clock = (
        time.pthread_getcpuclockid(loop_thread.ident) if loop_thread and loop_thread.ident else None
    )
    for line in sys.stdin:
        if line.strip() == "cpu":
            print(time.clock_gettime(clock) if clock is not None else "nan", flush=True)


async def _fast_upstream() -> None:
    """A minimal HTTP/1.1 keep-alive server: reads the body, answers a fixed reply in the
    format the path asks for (Messages, Chat, Responses, Gemini)."""
    heads: dict[bytes, bytes] = {}

    def answer(path: bytes) -> bytes:
        if path not in heads:
            reply = reply_for(path.decode())
            heads[path] = (
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                b"content-length: " + str(len(reply)).encode() + b"\r\n\r\n" + reply
            )
        return heads[path]

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                headers = await reader.readuntil(b"\r\n\r\n")
                n = 0
                lines = headers.split(b"\r\n")
                for line in lines[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        n = int(value)
                if n:
                    await reader.readexactly(n)
                writer.write(answer(lines[0].split(b" ")[1]))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    await asyncio.get_running_loop().run_in_executor(
        None, _announce_and_wait, server.sockets[0].getsockname()[1]
    )


def _fake_upstream() -> None:
    sys.path.insert(0, str(REPO / "tests"))
    from fake_provider import FakeProvider

    fake = FakeProvider().start()
    stop = threading.Event()

    def trim() -> None:  # the fake keeps every body; 2 MB × hundreds would add up
        while not stop.wait(0.5):
            fake.seen.clear()

    threading.Thread(target=trim, daemon=True).start()
    _announce_and_wait(fake.server.server_address[1])
    stop.set()
    fake.stop()


class BackgroundMitmproxy:
    """A DumpMaster in reverse mode to the upstream, in a thread like BackgroundGate."""

    def __init__(self, upstream: str, confdir: Path):
        self.upstream = upstream
        self.confdir = confdir
        self.port: int | None = None
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._master: Any = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name="mitmproxy", daemon=True)

    def start(self) -> int:
        self._thread.start()
        if not self._ready.wait(30):
            raise TimeoutError("mitmproxy did not start listening in time")
        if self._error is not None:
            raise self._error
        assert self.port is not None
        return self.port

    def stop(self) -> None:
        if self._loop is not None and self._master is not None:
            self._loop.call_soon_threadsafe(self._master.shutdown)
        self._thread.join(10)

    def _main(self) -> None:
        from mitmproxy import ctx, options
        from mitmproxy.tools.dump import DumpMaster

        bench = self

        class Ready:  # reports the port once listening; no per-flow hooks
            def running(self) -> None:
                bench.port = ctx.master.addons.get("proxyserver").listen_addrs()[0][1]  # type: ignore[no-untyped-call]
                bench._ready.set()

        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            opts = options.Options()
            master = DumpMaster(opts, with_termlog=False, with_dumper=False)
            # The transport options gate sets too, so that only gate's addon differs.
            opts.update(  # type: ignore[no-untyped-call]
                listen_host="127.0.0.1",
                listen_port=0,
                mode=[f"reverse:{self.upstream}/"],
                connection_strategy="lazy",
                confdir=str(self.confdir),
                stream_large_bodies=None,
            )
            master.addons.add(Ready())  # type: ignore[no-untyped-call]
            self._master = master
            await master.run()

        try:
            asyncio.run(main())
        except BaseException as exc:
            self._error = exc
        finally:
            self._ready.set()


def _serve_mitmproxy(upstream: str, confdir: Path) -> None:
    mitm = BackgroundMitmproxy(upstream, confdir)
    port = mitm.start()
    try:
        _announce_and_wait(port, mitm._thread)
    finally:
        mitm.stop()


def _serve_gate(upstream: str, profile: str | None) -> None:
    from gate import dirs, log
    from gate.config import Config, parse_upstream
    from gate.proxy.server import BackgroundGate

    # The parent set GATE_DATA_DIR and GATE_CONFIG_DIR (temp dirs) before starting us.
    assert os.environ.get("GATE_DATA_DIR") and os.environ.get("GATE_CONFIG_DIR")
    data = dirs.private_dir(dirs.data_dir())
    log.configure(file=data / "gate.log", stderr=False)  # as `gate run` does
    config = dataclasses.replace(
        Config().with_upstreams(
            {name: parse_upstream(name, upstream) for name in ("anthropic", "openai", "gemini")}
        ),
        port=0,
    )
    cls = _profiled(BackgroundGate, profile) if profile else BackgroundGate
    # As `gate run` builds it: the rule files looked at once per window (a baseline tree
    # from before the window has no such parameter, and looks on every request).
    extra: dict[str, Any] = {}
    if "rules_recheck" in inspect.signature(BackgroundGate).parameters:
        from gate.rules.layers import RECHECK_AFTER

        extra["rules_recheck"] = RECHECK_AFTER
    gate = cls(config, data, **extra)
    listening = gate.start()
    try:
        _announce_and_wait(listening.port, gate._thread)
    finally:
        gate.stop()


def _profiled(base: type, out: str) -> type:
    """BackgroundGate whose proxy thread runs under cProfile (bench only; gate untouched)."""
    import cProfile

    class Profiled(base):
        def _main(self) -> None:
            prof = cProfile.Profile()
            prof.enable()
            try:
                super()._main()
            finally:
                prof.disable()
                prof.dump_stats(out)

    return Profiled


# -- realistic Claude Code request bodies ----------------------------------------------------

_TOOLS = {
    "Bash": (
        "Executes a given bash command in a persistent shell session with optional "
        "timeout, ensuring proper handling and security measures.",
        {"command": "string", "timeout": "number", "description": "string"},
    ),
    "Glob": (
        "Fast file pattern matching tool that works with any codebase size.",
        {"pattern": "string", "path": "string"},
    ),
    "Grep": (
        "A powerful search tool built on ripgrep. Supports full regex syntax.",
        {"pattern": "string", "path": "string", "glob": "string", "output_mode": "string"},
    ),
    "Read": (
        "Reads a file from the local filesystem. The file_path parameter must be an "
        "absolute path. By default, it reads up to 2000 lines starting from the beginning.",
        {"file_path": "string", "offset": "number", "limit": "number"},
    ),
    "Edit": (
        "Performs exact string replacements in files. You must use your Read tool at "
        "least once in the conversation before editing.",
        {
            "file_path": "string",
            "old_string": "string",
            "new_string": "string",
            "replace_all": "boolean",
        },
    ),
    "Write": (
        "Writes a file to the local filesystem. This tool will overwrite the existing "
        "file if there is one at the provided path.",
        {"file_path": "string", "content": "string"},
    ),
    "TodoWrite": (
        "Use this tool to create and manage a structured task list for your current "
        "coding session.",
        {"todos": "array"},
    ),
    "WebFetch": (
        "Fetches content from a specified URL and processes it using an AI model.",
        {"url": "string", "prompt": "string"},
    ),
}


def _tools() -> list[dict[str, Any]]:
    out = []
    for name, (desc, props) in _TOOLS.items():
        out.append(
            {
                "name": name,
                # Real descriptions run to kilobytes; pad with usage notes of similar shape.
                "description": desc
                + "\n\nUsage notes:\n"
                + "\n".join(f"  - Note {i}: {desc.lower()}" for i in range(6)),
                "input_schema": {
                    "type": "object",
                    "additionalProperties": False,
                    "$schema": "http://json-schema.org/draft-07/schema#",
                    "properties": {
                        k: {"type": v, "description": f"The {k} to use"} for k, v in props.items()
                    },
                    "required": [next(iter(props))],
                },
            }
        )
    return out


def _system(project: Path) -> list[dict[str, Any]]:
    return [
        {
            "type": "text",
            "text": "x-anthropic-billing-header: cc_version=2.0.14; cc_entrypoint=cli",
        },
        {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."},
        {
            "type": "text",
            "cache_control": {"type": "ephemeral"},
            "text": (
                "You are an interactive CLI tool that helps users with software engineering tasks."
                " Use the instructions below and the tools available to you to assist the user.\n\n"
                + "# Tone and style\nBe concise, direct, and to the point.\n"
                * 20
                + "\nHere is useful information about the environment you are running in:\n<env>\n"
                f"Primary working directory: {project}\nIs directory a git repo: Yes\n"
                f"Platform: linux\nOS Version: Linux 6.8.0\nToday's date: 2025-10-01\n</env>\n"
                "You are powered by the model named Sonnet 4.5."
            ),
        },
    ]


def _sources() -> list[tuple[str, str]]:
    """Real Python source to stand in for files the agent read: the installed mitmproxy's,
    so that the bodies stay the same while gate's own code changes (runs compare)."""
    import mitmproxy

    root = Path(mitmproxy.__file__).parent
    files = sorted(p for p in root.rglob("*.py") if p.stat().st_size > 1500)
    out = []
    for p in files[:400]:
        with contextlib.suppress(OSError, UnicodeDecodeError):
            out.append((p.name, p.read_text(encoding="utf-8")))
    return out


def _numbered(text: str, limit: int = 2000) -> str:
    lines = text.splitlines()[:limit]
    return "\n".join(f"{i:>6}\t{line}" for i, line in enumerate(lines, 1))


class Conversation:
    """Tool use / tool result pairs of a long Claude Code session in `project`."""

    def __init__(self, project: Path, seed: int = 7):
        self.project = project
        self.rand = random.Random(seed)
        self.sources = _sources()

    def _id(self) -> str:
        return "toolu_01" + "".join(self.rand.choices(string.ascii_letters + string.digits, k=22))

    def pair(self, k: int) -> list[dict[str, Any]]:
        """One assistant turn (text + tool_use) and the user turn answering it."""
        id_ = self._id()
        if k == 1:  # the agent read the project's .env: gate must withhold this one
            name, inp = "Read", {"file_path": f"{self.project}/.env"}
            result = _numbered(
                "DATABASE_URL=postgres://app:s3cr3t-pw@db.internal:5432/app\n"
                "STRIPE_SECRET_KEY=sk_live_51Hx0000000000000000000000\n"
                "SESSION_SECRET=8f2b1c9d0e7a6b5c4d3e2f1a0b9c8d7e\nDEBUG=false"
            )
        elif k % 3 == 2:
            name, inp, result = "Bash", *self._bash(k)
        else:
            fname, text = self.sources[k % len(self.sources)]
            path = f"{self.project}/src/pkg{k % 7}/{fname}"
            name, inp, result = "Read", {"file_path": path}, _numbered(text)
        return [
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Let me check this ({name}, step {k})."},
                    {"type": "tool_use", "id": id_, "name": name, "input": inp},
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": id_, "content": result}],
            },
        ]

    def _bash(self, k: int) -> tuple[dict[str, Any], str]:
        kind = k % 4
        if kind == 0:
            cmd = "python -m pytest -q tests"
            out = "".join(
                f"tests/test_mod{i}.py::test_case_{j} PASSED\n" for i in range(12) for j in range(8)
            )
            out += "\n96 passed in 4.21s\n"
        elif kind == 1:
            cmd = "git log --stat -n 20"
            out = "".join(
                f"commit {self.rand.getrandbits(160):040x}\nAuthor: Dev <dev@example.com>\n"
                f"Date:   Mon Sep {i + 1} 10:00:00 2025\n\n    Change {i}\n\n"
                f" src/pkg{i % 7}/mod.py | {i + 3} ++-\n 1 file changed\n\n"
                for i in range(20)
            )
        elif kind == 2:
            cmd = f"ls -la {self.project}/src"
            out = "".join(
                f"-rw-r--r-- 1 dev dev {1000 + i * 37:>6} Sep 30 12:00 file{i}.py\n"
                for i in range(60)
            )
        else:
            cmd = "grep -rn 'def ' src | head -200"
            out = "".join(
                f"src/pkg{i % 7}/mod{i}.py:{i * 3 + 1}:def func_{i}(arg):\n" for i in range(200)
            )
        return {"command": cmd, "description": "Inspect the project"}, out

    def body(self, target: int) -> bytes:
        return next(self.turns(target))

    def turns(self, target: int) -> Iterator[bytes]:
        """The conversation grown to `target` bytes, then the same session one turn later,
        and so on: each body resends the previous one's messages and adds one short call
        and its result, as an agent's next request does (`--turns`)."""
        req: dict[str, Any] = {
            "model": "claude-sonnet-4-5-20250929",
            "max_tokens": 32000,
            "system": _system(self.project),
            "tools": _tools(),
            "metadata": {"user_id": "user_" + "ab" * 32 + "_account__session_bench"},
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "text",
                            "text": "Find out why the integration tests are slow and fix it.",
                        }
                    ],
                }
            ],
        }
        size = len(json.dumps(req))
        k = 0
        while size < target:
            k += 1
            pair = self.pair(k)
            req["messages"] += pair
            size += len(json.dumps(pair)) + 2
        closing = [
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "I have what I need. Summarising."}],
            },
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Go ahead.", "cache_control": {"type": "ephemeral"}}
                ],
            },
        ]
        while True:
            yield json.dumps({**req, "messages": req["messages"] + closing}).encode()
            k += 1
            req["messages"] += self.short_pair(k)

    def short_pair(self, k: int) -> list[dict[str, Any]]:
        """A small next step (a quick shell command), so that sizes stay near their label."""
        id_ = self._id()
        out = "".join(f" M src/pkg{i}/mod{k % 11}.py\n" for i in range(k % 5 + 3))
        return [
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Checking the tree again (turn {k})."},
                    {
                        "type": "tool_use",
                        "id": id_,
                        "name": "Bash",
                        "input": {"command": "git status --short", "description": "Status"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": id_, "content": out}],
            },
        ]


# -- the client ---------------------------------------------------------------------------

HEADERS = {
    "content-type": "application/json",
    "accept": "application/json",
    "x-api-key": "sk-ant-bench-not-a-real-key",
    "anthropic-version": "2023-06-01",
    "user-agent": "claude-cli/2.0.14 (external, cli)",
}


class Client:
    """One keep-alive connection per path."""

    def __init__(self, port: int, path: str):
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.path = path

    def post(self, body: bytes) -> float:
        t0 = time.perf_counter()
        self.conn.request("POST", self.path, body, HEADERS)
        resp = self.conn.getresponse()
        data = resp.read()
        dt = time.perf_counter() - t0
        if resp.status != 200:
            raise RuntimeError(f"{self.path}: HTTP {resp.status}: {data[:300]!r}")
        return dt * 1000

    def close(self) -> None:
        self.conn.close()


def pct(xs: list[float], q: float) -> float:
    s = sorted(xs)
    i = (len(s) - 1) * q
    lo = int(i)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (i - lo)


@dataclasses.dataclass
class Result:
    label: str
    size: int
    times: dict[str, list[float]]  # path → wall-clock ms per request
    cpu: dict[str, float]  # proxy → its loop thread's CPU ms per request
    last: int = 0  # the last timed body's size (it grows with --turns)


def measure(
    clients: dict[str, Client],
    servers: dict[str, Child],
    label: str,
    bodies: Iterator[bytes],
    n: int,
    warmup: int,
) -> Result:
    """Each round sends the next body from `bodies` over every path (the same body in every
    mode but --turns)."""
    for _ in range(warmup):
        body = next(bodies)
        for c in clients.values():
            c.post(body)
    times: dict[str, list[float]] = {p: [] for p in clients}
    names = list(clients)
    cpu0 = {p: srv.cpu() for p, srv in servers.items()}
    sizes = []
    for i in range(n):
        body = next(bodies)
        sizes.append(len(body))
        order = names[i % len(names) :] + names[: i % len(names)]  # rotate: no position bias
        for p in order:
            times[p].append(clients[p].post(body))
    cpu = {p: (srv.cpu() - cpu0[p]) * 1000 / n for p, srv in servers.items()}
    return Result(label, sizes[0], times, cpu, sizes[-1])


def gate_check(data_dir: Path) -> str:
    """What gate's audit says it did: every request recorded, the .env read withheld."""
    db = sqlite3.connect(data_dir / "audit.db")
    try:
        rows = db.execute("SELECT verdict, withheld, status FROM requests").fetchall()
    finally:
        db.close()
    verdicts: dict[str, int] = {}
    for v, _, _ in rows:
        verdicts[v] = verdicts.get(v, 0) + 1
    targets = sorted({w["target"] for _, wh, _ in rows for w in json.loads(wh)})
    bad = sum(1 for *_, s in rows if s != 200)
    return f"gate audit: {len(rows)} rows, verdicts {verdicts}, withheld {targets}, non-200 {bad}"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    ap.add_argument("--n", type=int, default=100, help="timed requests per size per path")
    ap.add_argument("--warmup", type=int, default=10, help="untimed requests per size per path")
    ap.add_argument("--quick", action="store_true", help="n=10, warmup=2 (CI smoke)")
    ap.add_argument(
        "--upstream",
        choices=("fast", "fake"),
        default="fast",
        help="fast: a minimal asyncio server (default); "
        "fake: tests/fake_provider.FakeProvider (http.server)",
    )
    ap.add_argument(
        "--profile",
        metavar="FILE",
        help="cProfile gate's proxy thread into FILE and print its top functions",
    )
    ap.add_argument(
        "--sizes",
        default=",".join(label.replace(" ", "") for label, _ in SIZES),
        help="which sizes to run, comma-separated (default: 50KB,500KB,2MB)",
    )
    ap.add_argument(
        "--breakdown",
        action="store_true",
        help="also time gate's screening and audit row in-process, per size",
    )
    ap.add_argument(
        "--turns",
        action="store_true",
        help="also run each size as a session: every request is a new turn that"
        " resends the previous one's messages and adds a short call",
    )
    ap.add_argument(
        "--format",
        default="anthropic",
        help=f"wire formats, comma-separated or 'all': {', '.join(FORMATS)}",
    )
    ap.add_argument(
        "--concurrent",
        action="store_true",
        help="instead: 16 sessions at once, one sending 2 MB bodies never sent"
        " before (throughput, p95, time to first byte, peak RSS)",
    )
    ap.add_argument(
        "--seconds",
        type=float,
        default=10.0,
        help="--concurrent: seconds per timed phase (two per proxy)",
    )
    ap.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="--concurrent: measure every proxy this many times, in turn (A B A B...), and"
        " pool the rounds: a load that drifts during the run then weighs on each alike",
    )
    ap.add_argument(
        "--baseline",
        metavar="DIR",
        help="--concurrent: also a gate run from the source tree DIR (a git worktree of an"
        " earlier commit, say), measured in the same run beside this one",
    )
    ap.add_argument("--serve", help=argparse.SUPPRESS)  # child roles
    ap.add_argument("--to", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.serve == "upstream":
        asyncio.run(_fast_upstream())
    elif args.serve == "fake":
        _fake_upstream()
    elif args.serve == "mitmproxy":
        _serve_mitmproxy(args.to, Path(os.environ["GATE_BENCH_MITM_CONFDIR"]))
    elif args.serve == "gate":
        _serve_gate(args.to, args.profile)
    else:
        if args.quick:
            args.n, args.warmup = 10, 2
        with tempfile.TemporaryDirectory(prefix="gate-bench-") as tmp:
            root = Path(tmp)
            # Before gate starts (the child inherits them): it must write nowhere else.
            os.environ["GATE_DATA_DIR"] = str(root / "data")
            os.environ["GATE_CONFIG_DIR"] = str(root / "config")
            os.environ["GATE_BENCH_MITM_CONFDIR"] = str(root / "mitmproxy")
            run(args, root)


def report(results: list[Result]) -> None:
    w = 15
    head = (
        f"{'size':>6} {'bytes':>9} | {'direct':>{w}} | {'mitmproxy':>{w}} | {'gate':>{w}} |"
        f" {'added p50':>{w}} | {'gate/mitm':>9} | {'loop CPU/req':>{w}} | {'gate/mitm':>9}"
    )
    sub = (
        f"{'':>6} {'':>9} | {'p50     p95':>{w}} | {'p50     p95':>{w}} |"
        f" {'p50     p95':>{w}} | {'mitm     gate':>{w}} | {'added p50':>9} |"
        f" {'mitm     gate':>{w}} | {'CPU':>9}"
    )
    print(head)
    print(sub)
    print("-" * len(head))
    for r in results:
        p50 = {p: pct(r.times[p], 0.5) for p in PATHS}
        p95 = {p: pct(r.times[p], 0.95) for p in PATHS}
        mitm_added = p50["mitmproxy"] - p50["direct"]
        gate_added = p50["gate"] - p50["direct"]
        cols = " | ".join(f"{p50[p]:7.2f} {p95[p]:7.2f}" for p in PATHS)
        cpu = r.cpu
        print(
            f"{r.label:>6} {r.size:>9} | {cols} | {mitm_added:7.2f} {gate_added:7.2f} |"
            f" {_ratio(gate_added, mitm_added):>9} | {cpu['mitmproxy']:7.2f}"
            f" {cpu['gate']:7.2f} | {_ratio(cpu['gate'], cpu['mitmproxy']):>9}"
        )
    print()
    print(
        "added p50 = path p50 − direct p50; gate/mitm = gate's added p50 / mitmproxy's"
        " (target ≤ 1.5×; informational, no pass/fail)"
    )
    print(
        "loop CPU/req = CPU time of the proxy's event-loop thread per request (hooks and"
        " I/O on the request's path; gate's background threads excluded): the figure to"
        " trust when the machine is shared"
    )


def breakdown(bodies: list[tuple[str, bytes]], root: Path, n: int) -> None:
    """In this process, where gate's time goes: screening vs the audit row (CPU ms, best of
    n, so that other processes on the machine barely matter)."""
    from loguru import logger

    from gate.audit.records import RequestRow, Response, Usage
    from gate.audit.store import AuditStore
    from gate.rules.layers import PolicyStore
    from gate.screen.content import SecretScreen
    from gate.screen.fingerprints import IndexStore
    from gate.screen.request import Outbound, Screens, screen

    logger.remove()
    data = root / "breakdown"
    data.mkdir(mode=0o700)
    policies = PolicyStore()
    screens = Screens(IndexStore(), SecretScreen.load(data))
    audit = AuditStore(data / "audit.db")

    def best(fn: Any) -> float:
        fn()
        runs = []
        for _ in range(n):
            t0 = time.thread_time()
            fn()
            runs.append(time.thread_time() - t0)
        return min(runs) * 1000

    def record(sent: bytes) -> None:
        row = audit.record_request(
            RequestRow(
                upstream="anthropic",
                host="127.0.0.1",
                method="POST",
                path="/v1/messages",
                request_bytes=len(sent),
                verdict="modified",
                withheld=[],
                body=sent,
            ),
        )
        audit.record_response(row, Response(status=200, latency_ms=1.0, usage=Usage(1, 1)))

    print(f"\nin-process CPU per request (best of {n}), ms:")
    print(f"{'size':>6} | {'screen':>8} | {'audit row':>9}")
    try:
        for label, body in bodies:
            req = Outbound(path="/v1/messages", body=body, agent="claude-code", project_root=None)
            verdict = screen(req, policies, screens)
            sent = verdict.body or body
            screening = best(lambda req=req: screen(req, policies, screens))
            recording = best(lambda sent=sent: record(sent))
            print(f"{label:>6} | {screening:8.2f} | {recording:9.2f}")
    finally:
        audit.close()


def _revision(tree: Path) -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        return tree.name
    return out.stdout.strip()


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}×" if b > 0 else "n/a"


def run(args: argparse.Namespace, root: Path) -> None:
    from mitmproxy import version as mitm_version

    project = root / "project"
    (project / "src").mkdir(parents=True)
    (project / ".env").write_text("DATABASE_URL=postgres://app:s3cr3t-pw@db.internal/app\n")
    formats = list(FORMATS) if args.format == "all" else args.format.split(",")
    if unknown := [f for f in formats if f not in FORMAT]:
        raise SystemExit(f"--format: unknown {unknown}; choose from {', '.join(FORMATS)}")
    conv = Conversation(project)
    wanted = {w.strip().upper() for w in args.sizes.split(",")}
    targets = [
        (label, target) for label, target in SIZES if label.replace(" ", "").upper() in wanted
    ]
    bodies = [(label, conv.body(target)) for label, target in targets]

    profile = ["--profile", str(Path(args.profile).resolve())] if args.profile else []
    role = "upstream" if args.upstream == "fast" else "fake"
    results: dict[str, list[Result]] = {}
    turns: dict[str, list[Result]] = {}
    load: dict[str, list[latency_load.Outcome]] = {}
    with contextlib.ExitStack() as stack:
        up = stack.enter_context(child("--serve", role))
        upstream = f"http://127.0.0.1:{up.port}"
        servers = {
            "mitmproxy": stack.enter_context(child("--serve", "mitmproxy", "--to", upstream)),
            "gate": stack.enter_context(child("--serve", "gate", "--to", upstream, *profile)),
        }
        if args.concurrent and args.baseline:
            base = Path(args.baseline).resolve()
            (root / "base-data").mkdir(mode=0o700)
            servers[f"gate@{_revision(base)}"] = stack.enter_context(
                child(
                    "--serve",
                    "gate",
                    "--to",
                    upstream,
                    # Its own gate package first, and its own audit and keys.
                    env={"PYTHONPATH": str(base), "GATE_DATA_DIR": str(root / "base-data")},
                )
            )
        t0 = time.monotonic()
        for fmt in formats:
            f = FORMAT[fmt]
            if args.concurrent:
                load[fmt] = concurrent(fmt, servers, project, args.seconds, args.rounds)
                continue
            clients = {
                "direct": Client(up.port, f.path),
                "mitmproxy": Client(servers["mitmproxy"].port, f.path),
                "gate": Client(servers["gate"].port, f.gate_path),
            }
            try:
                results[fmt] = [
                    measure(
                        clients,
                        servers,
                        label,
                        itertools.repeat(convert(body, fmt)),
                        args.n,
                        args.warmup,
                    )
                    for label, body in bodies
                ]
                turns[fmt] = (
                    [
                        measure(
                            clients,
                            servers,
                            label,
                            (convert(b, fmt) for b in Conversation(project).turns(target)),
                            args.n,
                            args.warmup,
                        )
                        for label, target in targets
                    ]
                    if args.turns
                    else []
                )
            finally:
                for c in clients.values():
                    c.close()
        elapsed = time.monotonic() - t0

    print(
        f"gate latency bench: {os.cpu_count()} cores, Python {platform.python_version()}"
        f" ({platform.python_implementation()}), mitmproxy {mitm_version.VERSION},"
        f" {platform.system()} {platform.machine()}, load {os.getloadavg()[0]:.1f}"
    )
    if args.concurrent:
        print(f"upstream={args.upstream}, {elapsed:.0f} s")
        for fmt in formats:
            latency_load.report(load[fmt], fmt, args.seconds)
        print(gate_check(Path(os.environ["GATE_DATA_DIR"])))
        return
    print(
        f"upstream={args.upstream}, n={args.n} timed + {args.warmup} warm-up requests per"
        f" size per path, paths interleaved, keep-alive; {elapsed:.0f} s; times in ms"
    )
    for fmt in formats:
        print(f"\n== {fmt}: {FORMAT[fmt].path} (gate: {FORMAT[fmt].gate_path})")
        report(results[fmt])
        if turns[fmt]:
            print(
                "\n--turns: each request a new turn (the previous body's messages + one"
                " short call); bytes = first timed body, growing to:",
                ", ".join(f"{r.label} {r.last}" for r in turns[fmt]),
            )
            report(turns[fmt])
    if len(formats) > 1:
        summary(formats, results, turns)
    print(gate_check(Path(os.environ["GATE_DATA_DIR"])))
    if args.breakdown:
        breakdown(bodies, root, args.n)
    if args.profile:
        import pstats

        print(f"\ncProfile of gate's proxy thread ({args.profile}), top 30 by own time:")
        pstats.Stats(args.profile).sort_stats("tottime").print_stats(30)


def summary(
    formats: list[str], results: dict[str, list[Result]], turns: dict[str, list[Result]]
) -> None:
    """gate's added p50 over mitmproxy's, every format and size side by side."""

    def added(r: Result) -> str:
        base = pct(r.times["direct"], 0.5)
        return _ratio(pct(r.times["gate"], 0.5) - base, pct(r.times["mitmproxy"], 0.5) - base)

    labels = [r.label for r in results[formats[0]]]
    cols = [*labels, *(f"turns {x}" for x in labels if turns[formats[0]])]
    print("\ngate's added p50 / mitmproxy's, per format (target ≤ 1.2× on the turns):")
    print(f"{'format':>10} | " + " | ".join(f"{c:>12}" for c in cols))
    for fmt in formats:
        row = [added(r) for r in results[fmt]] + [added(r) for r in turns[fmt]]
        print(f"{fmt:>10} | " + " | ".join(f"{c:>12}" for c in row))


def concurrent(
    fmt: str, servers: dict[str, Child], project: Path, seconds: float, rounds: int = 1
) -> list[latency_load.Outcome]:
    """16 sessions at once through plain mitmproxy, then through each gate; `rounds`
    times over, in turn, pooled per proxy."""
    f = FORMAT[fmt]
    req = json.loads(Conversation(project, seed=999).body(latency_load.HEAVY_BYTES))
    for m in req["messages"]:  # a counter in every message: every string new each time
        for b in m["content"]:
            if b["type"] == "text":
                b["text"] = "@@N@@ " + b["text"]
            elif b["type"] == "tool_result":
                b["content"] = "@@N@@ " + b["content"]
    heavy = convert(json.dumps(req).encode(), fmt)

    def ordinary(seed: int) -> Iterator[bytes]:
        return (convert(b, fmt) for b in Conversation(project, seed).turns(30_000))

    pooled: dict[str, latency_load.Outcome] = {}
    gates = sorted((n for n in servers if n.startswith("gate")), key=lambda n: n != "gate")
    order = [("mitmproxy", f.path), *((g, f.gate_path) for g in reversed(gates))]
    for r in range(rounds):
        for name, path in order if r % 2 == 0 else reversed(order):
            srv = servers[name]
            got = latency_load.measure(
                name, srv.port, srv.proc.pid, path, HEADERS, ordinary, heavy, seconds
            )
            pooled[name] = got if name not in pooled else pooled[name].pooled_with(got)
    return [pooled[name] for name, _ in order]


if __name__ == "__main__":
    main()
