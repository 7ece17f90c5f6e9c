"""Screening workers (gate/screen/scan_pool.py): a cold batch worked out in a worker process
gives exactly what the screens give in place, turn after turn; a worker that dies, hangs,
or answers something else costs time, never a verdict; none outlives its gate."""

from __future__ import annotations

import base64
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gate.rules.layers import PolicyStore
from gate.rules.model import Effect, Rule
from gate.screen import scan_pool
from gate.screen.content import SecretScreen
from gate.screen.fingerprints import DeniedIndex, IndexStore, Source
from gate.screen.item_cache import ItemCache
from gate.screen.request import Screens
from gate.screen.scan_pool import BOOT, ScanPool
from gate.screen.secrets import BUDGET, Scanner
from screen.secrets_corpus import Gen, negatives, positives
from screen.test_item_cache import PATHS, Talk, _project, _step, _verdict

_RULE = Rule(
    effect=Effect.DENY, tool="Read", specifier="./.env", source="r.yaml", line=1, root=None
)


@pytest.fixture
def pool() -> Iterator[ScanPool]:
    p = ScanPool(BUDGET, workers=1, min_chars=1)
    assert p.ready(), "the worker did not start"
    yield p
    p.close()


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def _denied(g: Gen) -> tuple[DeniedIndex, list[str]]:
    """An index of three values, and texts holding them as agents print them."""
    values = [g.password(20), g.chars("abcdefghijklmnopqrstuvwxyz0123456789", 32), g.hex(40)]
    index = DeniedIndex({v: Source("/p/.env", _RULE) for v in values})
    texts = [
        f"DATABASE_PASSWORD={values[0]}\n",
        f"token: {base64.b64encode(values[1].encode()).decode()} (decoded later)",
        f"{values[2][::-1]} is the key, reversed",
        "export KEY=" + " ".join(values[2]),
        f'{{"env": "{values[0]}", "ok": true}}',
    ]
    return index, texts


def test_a_worker_finds_what_the_screens_find_in_place(pool: ScanPool) -> None:
    g = Gen(11)
    index, texts = _denied(g)
    texts += [s.text for s in positives()[:150]] + [s.text for s in negatives()[:150]]
    scanner = Scanner()
    got = pool.screen(texts, index, scanner)
    assert got is not None and len(got) == len(texts)
    fresh_index, fresh_scanner = DeniedIndex(index.units), Scanner()
    sources = set(map(id, index.units.values()))
    found_denied = found_secrets = 0
    for text, cold in zip(texts, got, strict=True):
        new, hits = fresh_index.redact(text)
        assert list(cold.hits) == hits, text
        assert all(id(h.source) in sources for h in cold.hits)  # the caller's own sources
        assert list(cold.secrets) == fresh_scanner.scan(new), text
        found_denied += bool(hits)
        found_secrets += bool(cold.secrets)
    assert found_denied == 5 and found_secrets > 100, (found_denied, found_secrets)
    assert pool.batches == 1


@pytest.mark.parametrize("fmt", list(PATHS))
@pytest.mark.parametrize("seed", range(2))
def test_a_session_screened_through_workers_gets_the_verdicts_screened_in_place(
    gate_dirs: dict[str, Path], fmt: str, seed: int
) -> None:
    rand = random.Random(f"pool{fmt}{seed}")
    project, data, env = _project(gate_dirs, rand)
    pool = ScanPool(BUDGET, workers=1, min_chars=1)
    assert pool.ready()
    try:
        pooled = Screens(
            IndexStore(projects=(str(project),)),
            SecretScreen.load(data),
            items=ItemCache(pool=pool),
        )
        # Screens of their own, that keep nothing: no answer a worker filed is read back.
        alone = IndexStore(projects=(str(project),)), SecretScreen.load(data)
        talk, policies = Talk(fmt, project, rand), PolicyStore()
        kinds = []
        for _ in range(30):
            kinds.append(_step(talk, env))
            req = talk.outbound()
            nothing = Screens(*alone, items=None, walks=None, bodies=None)
            want = _verdict(req, PolicyStore(), nothing)
            assert _verdict(req, policies, pooled) == want, f"turn {len(kinds)} after {kinds}"
        assert pool.batches > 10, (pool.batches, kinds)  # the workers did the work
    finally:
        pool.close()


def test_a_new_index_reaches_the_worker(pool: ScanPool) -> None:
    g = Gen(12)
    first, second = g.password(20), g.password(20)
    text = f"A={first}\nB={second}\n"
    one = DeniedIndex({first: Source("/p/.env", _RULE)})
    got = pool.screen([text], one, None)
    assert got is not None and len(got[0].hits) == 1
    two = DeniedIndex({first: Source("/p/.env", _RULE), second: Source("/p/.env", _RULE)})
    got = pool.screen([text], two, None)
    assert got is not None and len(got[0].hits) == 2
    got = pool.screen([text], None, Scanner())
    assert got is not None and got[0].hits == ()


def test_a_worker_that_dies_costs_one_batch_screened_in_place(pool: ScanPool) -> None:
    (pid,) = pool.pids
    os.kill(pid, signal.SIGKILL)
    assert pool.screen(["some text to screen"], None, Scanner()) is None
    assert pool.ready()
    assert pool.pids != [pid]
    got = pool.screen(["token ghp_" + Gen(3).chars("abcdefABCDEF0123456789", 36)], None, Scanner())
    assert got is not None and got[0].secrets


@pytest.mark.parametrize(
    "answer",
    [
        "_send(sys.stdout.buffer, [])",  # too few answers
        "sys.stdout.buffer.write(b'\\xff' * 16); sys.stdout.flush()",  # not a frame
        "sys.stdout.close()",  # gone
        "time.sleep(60)",  # no answer in time
    ],
)
def test_a_worker_that_answers_wrong_is_stopped_and_the_batch_screened_in_place(
    answer: str,
) -> None:
    boot = (
        "import sys, time; from gate.screen.scan_pool import READY, _receive, _send;"
        " _send(sys.stdout.buffer, READY); _receive(sys.stdin.buffer); " + answer
    )
    pool = ScanPool(BUDGET, workers=1, min_chars=1, timeout=2.0, boot=boot)
    try:
        assert pool.ready()
        (pid,) = pool.pids
        assert pool.screen(["some text to screen"], None, Scanner()) is None
        assert _gone(pid) and pool.pids == []
    finally:
        pool.close()


def test_a_worker_never_imports_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """gate may run in an agent's project: a module planted there is not the worker's."""
    marker = tmp_path / "imported"
    for name in ("ahocorasick_rs", "json", "re"):
        (tmp_path / f"{name}.py").write_text(f"open({str(marker)!r}, 'w').write('{name}')\n")
    monkeypatch.chdir(tmp_path)
    pool = ScanPool(BUDGET, workers=1, min_chars=1)
    try:
        assert pool.ready()
        assert pool.screen(["some text to screen"], None, Scanner()) is not None
    finally:
        pool.close()
    assert not marker.exists()


def test_closing_stops_every_worker() -> None:
    pool = ScanPool(BUDGET, workers=2, min_chars=1)
    assert pool.ready()
    pids = pool.pids
    assert len(pids) == 1  # a second worker starts only when the first is busy
    pool.close()
    assert all(_gone(p) for p in pids)
    assert pool.screen(["some text"], None, Scanner()) is None


def test_a_batch_under_the_threshold_stays_in_place(gate_dirs: dict[str, Path]) -> None:
    project, data, _ = _project(gate_dirs, random.Random(1))
    pool = ScanPool(BUDGET, workers=1)  # the default threshold
    try:
        screens = Screens(
            IndexStore(projects=(str(project),)),
            SecretScreen.load(data),
            items=ItemCache(pool=pool),
        )
        talk = Talk("anthropic", project, random.Random(2))
        talk.call("Bash", {"command": "ls"}, "a.py b.py")
        _verdict(talk.outbound(), PolicyStore(), screens)
        assert pool.batches == 0 and pool.pids == []  # not even started
    finally:
        pool.close()


def test_the_boot_line_names_this_checkout() -> None:
    """The worker imports the gate package its parent runs, whatever the interpreter's path."""
    out = subprocess.run(
        [sys.executable, "-P", "-c", BOOT.replace("serve()", "print(serve.__code__.co_filename)")],
        capture_output=True,
        text=True,
        cwd="/",
        check=True,
    )
    assert Path(out.stdout.strip()) == Path(scan_pool.__file__).resolve()


def test_closing_while_a_batch_is_in_flight_leaves_no_worker() -> None:
    boot = (
        "import sys, time; from gate.screen.scan_pool import READY, _receive, _send;"
        " _send(sys.stdout.buffer, READY); _receive(sys.stdin.buffer); time.sleep(60)"
    )
    pool = ScanPool(BUDGET, workers=1, min_chars=1, timeout=30.0, boot=boot)
    assert pool.ready()
    (pid,) = pool.pids
    got: list[object] = []
    thread = threading.Thread(target=lambda: got.append(pool.screen(["text"], None, Scanner())))
    thread.start()
    time.sleep(0.3)  # the batch is sent; the worker sleeps on it
    pool.close()
    thread.join(timeout=10)
    assert not thread.is_alive() and got == [None]
    assert _gone(pid) and pool.pids == []


def test_a_scanner_the_workers_do_not_run_is_screened_in_place(pool: ScanPool) -> None:
    assert pool.screen(["text"], None, Scanner(budget=BUDGET / 2)) is None
    assert pool.screen(["text"], None, Scanner(detectors=Scanner().detectors[:3])) is None
    assert pool.screen(["text"], None, Scanner()) is not None
