"""The CA's files are made once, even by two gates starting at once on a new data dir."""

from __future__ import annotations

import fcntl
import os
import sys
import threading
import time
from pathlib import Path

import pytest
from mitmproxy import certs

from gate.proxy import ca


def _waiting_for_lock(path: Path, timeout: float = 30.0) -> bool:
    """Whether some process or thread waits to lock `path` (Linux lists waiters in
    /proc/locks, marked '->'), within `timeout` seconds."""
    inode = f":{path.stat().st_ino} "
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        locks = Path("/proc/locks").read_text().splitlines()
        if any("->" in line and inode in line for line in locks):
            return True
        time.sleep(0.01)
    return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/locks")
def test_a_gate_starting_while_another_makes_the_ca_loads_that_one(tmp_path: Path) -> None:
    conf = ca.paths(tmp_path).key.parent
    conf.mkdir(mode=0o700)
    lock = os.open(conf / ca.LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)  # another gate is making them
    second = threading.Thread(target=ca.made, args=(tmp_path,))
    second.start()
    try:
        assert _waiting_for_lock(conf / ca.LOCK)
        certs.CertStore.create_store(conf, "mitmproxy", 2048, cn="the first gate")
        made = {p.name: p.read_bytes() for p in conf.iterdir()}
    finally:
        os.close(lock)
        second.join(30)
    assert not second.is_alive()
    # It waited, then found them: no second key, no certificate that is not the key's.
    assert {p.name: p.read_bytes() for p in conf.iterdir()} == made
    assert (
        b"the first gate" in certs.Cert.from_pem(ca.paths(tmp_path).cert.read_bytes()).cn.encode()
    )
