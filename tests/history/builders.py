"""Small histories for every agent, in the formats the real CLIs write (shapes taken from
runs of claude 2.1, codex 0.171, opencode 1.18, gemini 0.61, copilot 1.0 and aider 0.86
against the fake model; Cursor and Hermes from their documented formats), each holding
fake secrets made at run time, never committed."""

from __future__ import annotations

import json
import os
import sqlite3
import zlib
from dataclasses import dataclass
from pathlib import Path

from gate.screen.checks import base62

_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def github_token() -> str:
    body = "".join(_B62[b % 62] for b in os.urandom(30))
    return f"ghp_{body}{base62(zlib.crc32(body.encode()))}"


def denied_value() -> str:
    """A .env value no detector knows: only the denied-file index finds it."""
    return "pw-" + os.urandom(12).hex()


@dataclass(frozen=True)
class Planted:
    home: Path
    project: Path
    token: str  # a GitHub token pasted or read
    denied: str  # the project's .env value


def plant(root: Path) -> Planted:
    home, project = root / "home", root / "project"
    home.mkdir(parents=True, exist_ok=True)
    project.mkdir(parents=True, exist_ok=True)
    p = Planted(home, project, github_token(), denied_value())
    (project / ".env").write_text(f"DB_PASSWORD={p.denied}\n")
    return p


def _jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in rows))
    return path


def claude_code(p: Planted) -> list[Path]:
    root = p.home / ".claude"
    slug = str(p.project).replace("/", "-")
    sid = "f3ae287c-4e09-4fb1-9e7f-205a0513aa8c"
    base = {
        "sessionId": sid,
        "cwd": str(p.project),
        "version": "2.1.197",
        "timestamp": "2026-11-20T10:00:00.000Z",
    }
    env_text = f"1\tDB_PASSWORD={p.denied}\n"
    main = _jsonl(
        root / "projects" / slug / f"{sid}.jsonl",
        [
            {
                "type": "queue-operation",
                "operation": "enqueue",
                "sessionId": sid,
                "timestamp": base["timestamp"],
                "content": f"use {p.token}",
            },
            {
                **base,
                "type": "user",
                "uuid": "u1",
                "message": {"role": "user", "content": f"deploy with token {p.token} please"},
            },
            {
                **base,
                "type": "assistant",
                "uuid": "a1",
                "message": {
                    "id": "msg_1",
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "read it", "signature": "c2lnbmF0dXJl"},
                        {
                            "type": "tool_use",
                            "id": "toolu_1",
                            "name": "Read",
                            "input": {"file_path": str(p.project / ".env")},
                        },
                    ],
                },
            },
            {
                **base,
                "type": "user",
                "uuid": "u2",
                "message": {
                    "role": "user",
                    "content": [
                        {"tool_use_id": "toolu_1", "type": "tool_result", "content": env_text}
                    ],
                },
                "toolUseResult": {
                    "type": "text",
                    "file": {
                        "filePath": str(p.project / ".env"),
                        "content": f"DB_PASSWORD={p.denied}\n",
                    },
                },
            },
            {"type": "ai-title", "sessionId": sid, "aiTitle": "Deploy the app"},
        ],
    )
    sub = _jsonl(
        root / "projects" / slug / sid / "subagents" / "agent-1.jsonl",
        [
            {
                **base,
                "type": "user",
                "isSidechain": True,
                "uuid": "s1",
                "message": {"role": "user", "content": f"check {p.token}"},
            }
        ],
    )
    backup = root / "file-history" / sid / "0123456789abcdef@v1"
    backup.parent.mkdir(parents=True)
    backup.write_text(f"# config\nDB_PASSWORD={p.denied}\n")
    prompts = _jsonl(
        root / "history.jsonl",
        [
            {
                "display": f"deploy with token {p.token} please",
                "pastedContents": {},
                "timestamp": 1763632800000,
                "project": str(p.project),
                "sessionId": sid,
            }
        ],
    )
    return [main, sub, backup, prompts]


def codex(p: Planted) -> list[Path]:
    root = p.home / ".codex"
    sid = "01a2333a-458b-7e32-a699-8d1ae9c3a0df"
    ts = "2026-11-21T09:00:00.000Z"
    out = f"Chunk ID: 1\nOutput:\nDB_PASSWORD={p.denied}\n"
    call = {
        "type": "function_call",
        "name": "exec_command",
        "call_id": "call_1",
        "arguments": json.dumps({"cmd": "cat .env"}),
    }
    result = {"type": "function_call_output", "call_id": "call_1", "output": out}
    day = root / "sessions" / "2026" / "11" / "21"
    rollout = _jsonl(
        day / f"rollout-2026-11-21T09-00-00-{sid}.jsonl",
        [
            {
                "timestamp": ts,
                "type": "session_meta",
                "payload": {"id": sid, "cwd": str(p.project), "cli_version": "0.171.0"},
            },
            {
                "timestamp": ts,
                "type": "response_item",
                "payload": {
                    "type": "message",
                    "role": "user",
                    "content": [{"type": "input_text", "text": f"token is {p.token}"}],
                },
            },
            {"timestamp": ts, "type": "response_item", "payload": call},
            {"timestamp": ts, "type": "response_item", "payload": result},
            {
                "timestamp": ts,
                "type": "compacted",
                "payload": {"message": "summary", "replacement_history": [call, result]},
            },
        ],
    )
    archived = _jsonl(
        root / "archived_sessions" / f"rollout-old-{sid}.jsonl",
        [
            {
                "timestamp": ts,
                "type": "session_meta",
                "payload": {"id": "old", "cwd": str(p.project)},
            },
            {
                "timestamp": ts,
                "type": "event_msg",
                "payload": {"type": "user_message", "message": f"old {p.token}"},
            },
        ],
    )
    prompts = _jsonl(
        root / "history.jsonl",
        [{"session_id": sid, "ts": 1763715600, "text": f"token is {p.token}"}],
    )
    db = root / "thread_history_1.sqlite"
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute(
        "CREATE TABLE thread_items (thread_id TEXT NOT NULL, item_id TEXT NOT NULL,"
        " created_at_ms INTEGER NOT NULL, item_json TEXT NOT NULL,"
        " item_type TEXT NOT NULL DEFAULT '')"
    )
    con.execute(
        "INSERT INTO thread_items VALUES (?, 'i1', 1763715600000, ?, 'commandExecution')",
        (sid, json.dumps({"type": "commandExecution", "aggregatedOutput": out})),
    )
    con.commit()
    con.close()
    return [rollout, archived, prompts, db]


def cursor(p: Planted) -> list[Path]:
    root = p.home / ".cursor"
    cid = "6c1d2e3f-0000-4000-8000-000000000001"
    slug = str(p.project).strip("/").replace("/", "-")
    transcript = _jsonl(
        root / "projects" / slug / "agent-transcripts" / cid / f"{cid}.jsonl",
        [
            {"role": "user", "message": {"content": [{"type": "text", "text": f"use {p.token}"}]}},
            {
                "role": "assistant",
                "message": {
                    "content": [
                        {"type": "tool_use", "name": "read_file", "input": {"path": ".env"}}
                    ]
                },
            },
            {
                "role": "tool",
                "message": {
                    "content": [{"type": "tool_result", "content": f"DB_PASSWORD={p.denied}"}]
                },
            },
        ],
    )
    db = root / "chats" / ("0" * 32) / cid / "store.db"
    db.parent.mkdir(parents=True)
    con = sqlite3.connect(db)  # rollback journal, as Cursor writes it
    con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT)")
    con.execute("CREATE TABLE blobs (id TEXT PRIMARY KEY, data BLOB)")
    con.execute("INSERT INTO meta VALUES ('0', ?)", (json.dumps({"name": "chat"}).encode().hex(),))
    con.execute(
        "INSERT INTO blobs VALUES ('b1', ?)",
        (json.dumps({"role": "user", "content": f"my token {p.token}"}).encode(),),
    )
    con.execute(
        "INSERT INTO blobs VALUES ('b2', ?)",
        (json.dumps({"role": "tool", "content": f"DB_PASSWORD={p.denied}"}).encode(),),
    )
    con.commit()
    con.close()
    return [transcript, db]


def opencode(p: Planted) -> list[Path]:
    root = p.home / ".local" / "share" / "opencode"
    root.mkdir(parents=True)
    db = root / "opencode.db"
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    con.executescript("""
        CREATE TABLE session (id text PRIMARY KEY, directory text NOT NULL, title text NOT NULL,
                              time_created integer NOT NULL);
        CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL,
                              time_created integer NOT NULL, data text NOT NULL);
        CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL,
                           session_id text NOT NULL, time_created integer NOT NULL,
                           data text NOT NULL);
    """)
    sid = "ses_dccc59b90ffe4ACyX9dxbrJZ6Z"
    con.execute("INSERT INTO session VALUES (?, ?, 'deploy', 1763800000000)", (sid, str(p.project)))
    con.execute(
        "INSERT INTO message VALUES ('msg_u', ?, 1763800000000, ?)",
        (sid, json.dumps({"role": "user"})),
    )
    con.execute(
        "INSERT INTO message VALUES ('msg_a', ?, 1763800001000, ?)",
        (sid, json.dumps({"role": "assistant"})),
    )
    con.execute(
        "INSERT INTO part VALUES ('prt_1', 'msg_u', ?, 1763800000000, ?)",
        (sid, json.dumps({"type": "text", "text": f"token {p.token}"})),
    )
    con.execute(
        "INSERT INTO part VALUES ('prt_2', 'msg_a', ?, 1763800001000, ?)",
        (
            sid,
            json.dumps(
                {
                    "type": "tool",
                    "tool": "read",
                    "callID": "toolu_1",
                    "state": {
                        "status": "completed",
                        "input": {"filePath": str(p.project / ".env")},
                        "output": f"<file>\n00001| DB_PASSWORD={p.denied}\n</file>",
                    },
                }
            ),
        ),
    )
    con.commit()
    con.close()
    legacy = root / "storage" / "part" / "msg_old" / "prt_old.json"
    legacy.parent.mkdir(parents=True)
    legacy.write_text(
        json.dumps(
            {
                "id": "prt_old",
                "sessionID": sid,
                "messageID": "msg_old",
                "type": "text",
                "text": f"old {p.token}",
            },
            indent=2,
        )
    )
    return [db, legacy]


def copilot(p: Planted) -> list[Path]:
    root = p.home / ".copilot"
    sid = "14be5ef5-cc33-4e5c-82d8-019a84a3b766"
    state = root / "session-state" / sid
    events = _jsonl(
        state / "events.jsonl",
        [
            {
                "id": "e1",
                "type": "session.start",
                "timestamp": "2026-11-22T08:00:00.000Z",
                "data": {"sessionId": sid, "copilotVersion": "1.0.102"},
            },
            {
                "id": "e2",
                "type": "user.message",
                "timestamp": "2026-11-22T08:00:01.000Z",
                "data": {"content": f"use {p.token}", "transformedContent": f"x\n\nuse {p.token}"},
            },
            {
                "id": "e3",
                "type": "tool.execution_start",
                "timestamp": "2026-11-22T08:00:02.000Z",
                "data": {
                    "toolCallId": "call_1",
                    "toolName": "bash",
                    "arguments": {"command": "cat x"},
                },
            },
            {
                "id": "e4",
                "type": "tool.execution_complete",
                "timestamp": "2026-11-22T08:00:03.000Z",
                "data": {
                    "toolCallId": "call_1",
                    "success": True,
                    "result": {"content": f"DB_PASSWORD={p.denied}"},
                },
            },
        ],
    )
    (state / "workspace.yaml").write_text(f"id: {sid}\ncwd: {p.project}\nname: Deploy it\n")
    legacy = _jsonl(
        root / "session-state" / "0ld5e55i-0n.jsonl",
        [
            {
                "id": "e1",
                "type": "user.message",
                "timestamp": "2026-10-01T08:00:00.000Z",
                "data": {"content": f"legacy {p.token}"},
            }
        ],
    )
    db = root / "session-store.db"
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute(
        "CREATE TABLE turns (id INTEGER PRIMARY KEY, session_id TEXT, user_message TEXT,"
        " assistant_response TEXT)"
    )
    con.execute("CREATE VIRTUAL TABLE search_index USING fts5(content, session_id UNINDEXED)")
    con.execute("INSERT INTO turns VALUES (1, ?, ?, 'done')", (sid, f"use {p.token}"))
    con.execute("INSERT INTO search_index VALUES (?, ?)", (f"use {p.token}", sid))
    con.commit()
    con.close()
    return [events, legacy, db]


def hermes(p: Planted) -> list[Path]:
    root = p.home / ".hermes"
    root.mkdir(parents=True)
    db = root / "state.db"
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    con.executescript("""
        CREATE TABLE sessions (id TEXT PRIMARY KEY, model TEXT, started_at REAL);
        CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id TEXT, role TEXT,
                               content TEXT, tool_name TEXT, timestamp REAL);
        CREATE VIRTUAL TABLE messages_fts USING fts5(content, content='messages',
                                                     content_rowid='id');
        CREATE VIRTUAL TABLE messages_fts_trigram USING fts5(content, content='messages',
                                                     content_rowid='id', tokenize='trigram');
        CREATE TRIGGER messages_ai AFTER INSERT ON messages BEGIN
          INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
          INSERT INTO messages_fts_trigram(rowid, content) VALUES (new.id, new.content);
        END;
        CREATE TRIGGER messages_au AFTER UPDATE ON messages BEGIN
          INSERT INTO messages_fts(messages_fts, rowid, content)
            VALUES('delete', old.id, old.content);
          INSERT INTO messages_fts(rowid, content) VALUES (new.id, new.content);
          INSERT INTO messages_fts_trigram(messages_fts_trigram, rowid, content)
            VALUES('delete', old.id, old.content);
          INSERT INTO messages_fts_trigram(rowid, content) VALUES (new.id, new.content);
        END;
    """)
    con.execute("INSERT INTO sessions VALUES ('h1', 'hermes-3', 1763900000)")
    con.execute(
        "INSERT INTO messages VALUES (1, 'h1', 'user', ?, NULL, 1763900000)", (f"token {p.token}",)
    )
    con.execute(
        "INSERT INTO messages VALUES (2, 'h1', 'tool', ?, 'read_file', 1763900001)",
        (f"DB_PASSWORD={p.denied}",),
    )
    con.commit()
    con.close()
    legacy = root / "sessions" / "session_h0.json"
    legacy.parent.mkdir()
    legacy.write_text(
        json.dumps(
            {"session_id": "h0", "messages": [{"role": "user", "content": f"old {p.token}"}]}
        )
    )
    return [db, legacy]


def gemini_cli(p: Planted) -> list[Path]:
    tmp = p.home / ".gemini" / "tmp" / "project"
    (tmp / "chats").mkdir(parents=True)
    (tmp / ".project_root").write_text(str(p.project))
    sid = "4fbd61c8-f8a7-4516-ba14-a768c390d926"
    chat = _jsonl(
        tmp / "chats" / "session-2026-11-23T10-00-4fbd61c8.jsonl",
        [
            {"sessionId": sid, "projectHash": "0" * 64, "startTime": "2026-11-23T10:00:00.000Z"},
            {
                "id": "m1",
                "timestamp": "2026-11-23T10:00:01.000Z",
                "type": "user",
                "content": [{"text": f"use {p.token}"}],
            },
            {
                "id": "m2",
                "timestamp": "2026-11-23T10:00:02.000Z",
                "type": "gemini",
                "content": "",
                "toolCalls": [
                    {
                        "id": "read_file__1",
                        "name": "read_file",
                        "args": {"file_path": str(p.project / ".env")},
                        "result": [
                            {
                                "functionResponse": {
                                    "id": "read_file__1",
                                    "name": "read_file",
                                    "response": {"output": f"DB_PASSWORD={p.denied}\n"},
                                }
                            }
                        ],
                    }
                ],
            },
            {"$set": {"lastUpdated": "2026-11-23T10:00:02.000Z"}},
        ],
    )
    logs = tmp / "logs.json"
    logs.write_text(
        json.dumps(
            [
                {
                    "sessionId": sid,
                    "messageId": 0,
                    "type": "user",
                    "message": f"use {p.token}",
                    "timestamp": "2026-11-23T10:00:01.000Z",
                }
            ],
            indent=2,
        )
    )
    return [chat, logs]


def aider(p: Planted) -> list[Path]:
    chat = p.project / ".aider.chat.history.md"
    chat.write_text(
        "\n# aider chat started at 2026-11-24 11:00:00\n\n"
        "> Added .env to the chat.\n\n"
        f"#### deploy with {p.token}  \n\nThe file sets DB_PASSWORD={p.denied}.\n"
    )
    prompts = p.project / ".aider.input.history"
    prompts.write_text(f"\n# 2026-11-24 11:00:00.123456\n+deploy with {p.token}\n")
    return [chat, prompts]


BUILDERS = {
    "claude-code": claude_code,
    "codex": codex,
    "cursor": cursor,
    "opencode": opencode,
    "copilot": copilot,
    "hermes": hermes,
    "gemini-cli": gemini_cli,
    "aider": aider,
}


def every_agent(root: Path) -> tuple[Planted, dict[str, list[Path]]]:
    p = plant(root)
    return p, {name: build(p) for name, build in BUILDERS.items()}
