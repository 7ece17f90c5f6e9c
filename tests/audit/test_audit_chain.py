"""The hash chain: `gate audit verify` passes an intact audit and names the first broken or
missing link of an edited one."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from audit.session_kit import bodies
from audit_rows import messages_row
from click.testing import CliRunner

from gate.audit import chain
from gate.audit.records import RequestRow, Response, Usage
from gate.audit.store import AuditStore
from gate.cli import cli


def filled(path: Path, n: int = 6) -> AuditStore:
    store = AuditStore(path)
    for body in bodies(n):
        rid = store.record_request(
            messages_row(
                body,
                verdict="modified",
                session="s:1",
                withheld=[
                    {
                        "kind": "secret",
                        "rule": "r",
                        "fingerprint": "ab12",
                        "decision": {"id": "d1", "question": "q", "answer": "redact", "by": "user"},
                    }
                ],
            ),
        )
        store.record_response(rid, Response(status=200, latency_ms=2.5, usage=Usage(10, 20, 3, 4)))
    return store


def verify_cli(*extra: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["audit", "verify", *extra])
    return result.exit_code, result.stdout


def test_an_intact_audit_verifies(gate_dirs: dict[str, Path]) -> None:
    filled(gate_dirs["data"] / "audit.db")
    code, out = verify_cli()
    assert code == 0 and "audit intact: 6 requests" in out
    code, out = verify_cli("--json")
    report = json.loads(out)
    assert code == 0 and report["ok"] and report["requests"] == 6 and len(report["head"]) == 64


def _edit(sql: str, *args: object) -> Callable[[sqlite3.Connection], None]:
    return lambda db: db.execute(sql, args)


def _swap_chunk(db: sqlite3.Connection) -> None:
    """Point request 4 at another stored chunk: the body changes, every chunk is intact."""
    from gate.audit import chunks

    refs = chunks.unpack_refs(
        db.execute("SELECT chunk_refs FROM requests WHERE id=4").fetchone()[0]
    )
    refs[1] = refs[2]
    db.execute("UPDATE requests SET chunk_refs=? WHERE id=4", (chunks.pack_refs(refs),))


@pytest.mark.parametrize(
    ("tamper", "broken", "says"),
    [
        (_edit("UPDATE requests SET model='other' WHERE id=3"), 3, "recorded fields were edited"),
        (_edit("UPDATE requests SET withheld='[]' WHERE id=2"), 2, "recorded fields were edited"),
        (_edit("UPDATE requests SET output_tokens=1 WHERE id=5"), 5, "response fields"),
        (_edit("DELETE FROM requests WHERE id=4"), 5, "request 4 missing"),
        (_edit("DELETE FROM requests WHERE id IN (2, 3)"), 4, "request 2-3 missing"),
        (_swap_chunk, 4, "body does not match"),
        (_edit("UPDATE requests SET prev_hash=zeroblob(32) WHERE id=6"), 6, "link to the previous"),
    ],
)
def test_an_edited_audit_names_the_first_broken_link(
    gate_dirs: dict[str, Path], tamper: Callable[[sqlite3.Connection], None], broken: int, says: str
) -> None:
    path = gate_dirs["data"] / "audit.db"
    filled(path).close()
    db = sqlite3.connect(path, isolation_level=None)
    tamper(db)
    db.close()
    code, out = verify_cli("--json")
    report = json.loads(out)
    assert code == 1 and not report["ok"]
    assert report["broken_id"] == broken and says in report["problem"], report
    code, out = verify_cli()
    assert code == 1 and "audit BROKEN" in out and says in out


def test_an_edited_chunk_is_caught(gate_dirs: dict[str, Path]) -> None:
    import zstandard

    path = gate_dirs["data"] / "audit.db"
    filled(path).close()
    db = sqlite3.connect(path, isolation_level=None)
    block, start = db.execute("SELECT block, start FROM chunks WHERE id=2").fetchone()
    codec, data = db.execute("SELECT codec, data FROM blocks WHERE id=?", (block,)).fetchone()
    raw = bytearray(zstandard.ZstdDecompressor().decompress(data) if codec == "zstd" else data)
    raw[start + 3] ^= 1  # one bit of chunk 2
    db.execute(
        "UPDATE blocks SET data=?, codec='zstd' WHERE id=?",
        (zstandard.ZstdCompressor().compress(bytes(raw)), block),
    )
    db.close()
    code, out = verify_cli()
    assert code == 1 and "chunk 2 does not match its hash" in out


def test_integer_times_verify(gate_dirs: dict[str, Path]) -> None:
    """SQLite hands REAL columns back as floats: an int given for them must hash the same."""
    store = AuditStore(gate_dirs["data"] / "audit.db")
    rid = store.record_request(
        RequestRow(
            upstream="a",
            host="h",
            method="POST",
            path="/",
            ts=1700000000,
            request_bytes=2,
            verdict="forwarded",
            body=b"{}",
        ),
    )
    store.record_response(rid, Response(status=200, latency_ms=3, usage=Usage()))
    assert chain.verify(store.conn()).ok


def test_the_decision_key_is_stored_as_given(gate_dirs: dict[str, Path]) -> None:
    row = filled(gate_dirs["data"] / "audit.db", 1).get(1)
    assert row is not None
    assert row["withheld"][0]["decision"] == {
        "id": "d1",
        "question": "q",
        "answer": "redact",
        "by": "user",
    }
    assert chain.verify(AuditStore(gate_dirs["data"] / "audit.db").conn()).ok
