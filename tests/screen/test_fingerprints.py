"""Denied files' values: extracted, recognised in any encoding, remembered when rotated."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from urllib.parse import quote

import pytest

from conftest import fake_secret
from gate.rules.layers import PolicyStore
from gate.screen import denied_walk
from gate.screen.fingerprints import DeniedIndex, IndexStore, collect, units_of


def test_units_are_values_credentials_and_key_lines_not_stop_words() -> None:
    api, password, client, key, old = (
        fake_secret("sk-"),
        fake_secret("p4ss-"),
        fake_secret("Zq8-"),
        "b3Blb" + fake_secret(),
        fake_secret(),
    )
    text = (
        f'export API_KEY="{api}"\nDEBUG=true\nNODE_ENV=production\n'
        f"DB_URL=postgres://app:{password}@db/app\nPORT=5432\n# SECRET={old}\n"
        f'  "client_secret": "{client}",\n[default]\n'
        f"-----BEGIN OPENSSH PRIVATE KEY-----\n{key}\n-----END OPENSSH PRIVATE KEY-----\n"
    )
    # A commented-out value is still a value of the file; a section header is not.
    assert list(units_of(text)) == [
        api,
        f"postgres://app:{password}@db/app",
        password,
        old,
        client,
        key,
    ]


@pytest.mark.parametrize(
    ("line", "units"),
    [
        ("PASSPHRASE=sunflower", ["sunflower"]),  # all lower case: a word, still a value
        ("PIN=48151623", ["48151623"]),  # a long number
        ("PORT=808080", []),  # a short number: a port or a count
        ("ENABLED=disabled", []),
        ("MODE=Production", []),  # stop words, any case
        ("NAME=abc12", []),  # under 6 characters
        ("correct horse battery staple", ["correct horse battery staple"]),  # prose: the line
        (
            "# remember: the vault opens on tuesdays",
            ["the vault opens on tuesdays", "remember: the vault opens on tuesdays"],
        ),
        ("------", []),  # punctuation only
    ],
)
def test_word_like_values_and_prose_lines(line: str, units: list[str]) -> None:
    assert list(units_of(line + "\n")) == units


def test_a_word_like_value_is_found_only_as_a_whole_word() -> None:
    index = DeniedIndex({"sunflower": _source()})
    assert index.find("the passphrase is sunflower.")
    assert index.find("SUNFLOWER")  # upper-cased: `tr a-z A-Z` reads the same
    assert index.find("SUNFLOWERS") == []
    assert index.find("sunflowers and sunflowerseed") == []
    assert index.find(base64.b64encode(b"x=sunflower!").decode())  # encoded: anywhere


@pytest.mark.parametrize(
    "encode",
    [
        lambda t: t,
        lambda t: base64.b64encode(t.encode()).decode(),
        lambda t: base64.b64encode(("x" + t).encode()).decode(),
        lambda t: base64.b64encode(("xy" + t + "\n").encode()).decode(),
        lambda t: t.encode().hex(),
        lambda t: quote(t, safe=""),
        lambda t: json.dumps({"v": t}),
        lambda t: t[::-1],
    ],
    ids=["raw", "base64-0", "base64-1", "base64-2", "hex", "url", "json", "reversed"],
)
def test_a_value_is_found_in_its_encoded_forms(encode: object) -> None:
    secret = "Tk-" + fake_secret() + '"/+&'
    index = DeniedIndex({secret: _source()})
    text = f"output: {encode(f'TOKEN={secret}')} done"  # type: ignore[operator]
    new, hits = index.redact(text)
    assert hits and "[gate: withheld a value from .env" in new
    assert secret not in new


def _source() -> object:
    from gate.rules.model import Effect, Rule
    from gate.screen.fingerprints import Source

    return Source(
        "/p/.env",
        Rule(
            effect=Effect.DENY,
            tool="Read",
            specifier="./.env",
            source="rules/default.yaml",
            line=7,
            root=None,
        ),
    )


def test_collect_reads_denied_files_in_the_project_and_home(gate_dirs: dict[str, Path]) -> None:
    project, home = gate_dirs["project"], gate_dirs["home"]
    token, key_line, example = fake_secret("tok_"), fake_secret("AAAA") + "Zz", fake_secret("ex_")
    (project / ".env").write_text(f"TOKEN={token}\n")
    (project / ".env.example").write_text(f"TOKEN={example}\n")  # shared on purpose: allowed
    (project / "node_modules" / "x").mkdir(parents=True)
    (project / "node_modules" / "x" / ".env").write_text("SKIPPED=" + fake_secret() + "\n")
    (home / ".ssh").mkdir()
    (home / ".ssh" / "id_ed25519").write_text(
        f"-----BEGIN OPENSSH PRIVATE KEY-----\n{key_line}\n-----END OPENSSH PRIVATE KEY-----\n"
    )
    units = collect(PolicyStore().policy_for(str(project)), str(project))
    assert units[token].rule.text == "Read(./.env)"
    assert units[key_line].rule.text == "Read(~/.ssh/**)"
    assert example not in units
    # Besides its values, each file read whole is known by its digests (`sha256sum .env`).
    files = (project / ".env", home / ".ssh" / "id_ed25519")
    digests = {d for f in files for d in denied_walk.digests(f.read_bytes())}
    assert digests <= units.keys()
    assert units.keys() - digests == {token, key_line}
    # A denied file with no value (empty, or stop words only) gives no digest either.
    (project / ".env").write_text("DEBUG=true\n")
    units = collect(PolicyStore().policy_for(str(project)), str(project))
    assert not set(denied_walk.digests(b"DEBUG=true\n")) & units.keys()


def test_a_run_rooted_below_a_gate_dir_indexes_that_dir_s_denied_files(
    gate_dirs: dict[str, Path],
) -> None:
    # A run started in repo/sub (which has a `.gate/` of its own) is rooted there; the
    # repository's `.gate/` still denies repo/.vault, so its values are indexed as well.
    repo = gate_dirs["project"]
    (repo / ".gate").mkdir()
    (repo / ".gate" / "rules.yaml").write_text("deny:\n  - Read(./.vault)\n")
    (repo / "sub" / ".gate").mkdir(parents=True)
    value = fake_secret("vault_")
    (repo / ".vault").write_text(f"KEY={value}\n")
    sub = str(repo / "sub")
    units = collect(PolicyStore().policy_for(sub), sub)
    assert units[value].rule.where == f"{repo}/.gate/rules.yaml:2"


def test_a_rotated_value_is_still_recognised(gate_dirs: dict[str, Path]) -> None:
    project = gate_dirs["project"]
    old, new = fake_secret("old_"), fake_secret("new_")
    env = project / ".env"
    env.write_text(f"TOKEN={old}\n")
    policy = PolicyStore().policy_for(str(project))
    store = IndexStore()
    assert store.index_for(policy, str(project)).find(old)
    env.write_text(f"TOKEN={new}\n")
    import gate.screen.fingerprints as fp

    fp.REFRESH_SECONDS, saved = 0.0, fp.REFRESH_SECONDS
    try:
        store.index_for(policy, str(project))  # stale: refreshed in the background
        deadline = time.monotonic() + 10
        while not store.index_for(policy, str(project)).find(new):
            assert time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        fp.REFRESH_SECONDS = saved
    index = store.index_for(policy, str(project))
    assert index.find(new) and index.find(old)  # history still holds the old value


def test_walk_limits_come_from_config(gate_dirs: dict[str, Path]) -> None:
    from gate import config
    from gate.errors import ConfigError
    from gate.screen.fingerprints import Limits

    gate_dirs["config"].mkdir()
    path = gate_dirs["config"] / "config.yaml"
    path.write_text("screen:\n  max_files: 3\n  max_file_bytes: 10\n")
    cfg = config.load(path)
    assert (cfg.max_files, cfg.max_file_bytes) == (3, 10)
    project = gate_dirs["project"]
    secret = fake_secret()
    (project / ".env").write_text(f"A={secret}\n")
    policy = PolicyStore().policy_for(str(project))
    # Only the first 10 bytes are read: the value is cut, so it is no longer a unit.
    assert secret not in collect(policy, str(project), Limits(3, 10))
    assert secret in collect(policy, str(project), Limits())
    path.write_text("screen:\n  max_files: -1\n")
    with pytest.raises(ConfigError, match="positive integer"):
        config.load(path)


def test_dotenv_quotes_comments_list_items_and_url_passwords() -> None:
    a, b, c, pw = (fake_secret("a"), fake_secret("b"), fake_secret("c"), fake_secret("pw"))
    text = (
        f'API_KEY="{a}"  # prod\nTOKEN={b} # rotated monthly\n'
        f"tokens:\n  - {c}\nDB=postgres://app:{pw}@db:5432/app\n"
    )
    units = list(units_of(text))
    assert a in units and b in units and c in units and pw in units


def test_home_files_are_indexed_however_large_the_project(gate_dirs: dict[str, Path]) -> None:
    from gate.screen.fingerprints import Limits

    project, home = gate_dirs["project"], gate_dirs["home"]
    for i in range(150):
        (project / f"f{i}.txt").write_text("x")
    (home / ".ssh").mkdir()
    key = "b3Blb" + fake_secret()
    (home / ".ssh" / "id_ed25519").write_text(f"-----BEGIN KEY-----\n{key}\n-----END KEY-----\n")
    units = collect(PolicyStore().policy_for(str(project)), str(project), Limits(100, 1 << 16))
    assert key in units


def test_a_denied_file_written_just_now_is_indexed_before_the_next_request(
    gate_dirs: dict[str, Path],
) -> None:
    project = gate_dirs["project"]
    policy = PolicyStore().policy_for(str(project))
    store = IndexStore()
    assert not store.index_for(policy, str(project)).units  # no .env yet
    secret = fake_secret()
    (project / ".env").write_text(f"TOKEN={secret}\n")  # the project dir changes
    assert store.index_for(policy, str(project)).find(f"x {secret} y")
    newer = fake_secret()
    env = project / ".env"
    env.write_text(f"TOKEN={newer}\n")
    import os

    os.utime(env, ns=(1, 1))  # a different mtime, whatever the clock's resolution
    assert store.index_for(policy, str(project)).find(newer)


@pytest.mark.parametrize("wrap", [76, 60])
def test_wrapped_base64_and_hex_blocks_are_withheld(wrap: int) -> None:
    secret = "Tk-" + fake_secret() + fake_secret()
    index = DeniedIndex({secret: _source()})  # type: ignore[dict-item]
    raw = f"# prod\nSTRIPE_KEY={secret}\nDEBUG=false\n".encode()
    for encoded in (base64.b64encode(raw).decode(), raw.hex()):
        block = "\n".join(encoded[i : i + wrap] for i in range(0, len(encoded), wrap))
        new, hits = index.redact(f"$ base64 .env\n{block}\n$ echo done")
        assert hits and "withheld a value from .env" in new
        assert new.startswith("$ base64 .env\n") and new.endswith("\n$ echo done")


def test_a_bytes_repr_folded_anywhere_is_withheld() -> None:
    """`print(base64.b64decode(v)) | fold -w N` breaks the repr anywhere: inside `\\x82`,
    and between an escape's backslash and the quote or backslash it escapes, where a
    reader that takes `\\` + break as the escape ends the literal at the next quote (1 key
    in 40 passed so). A break after every character of it in turn."""
    data = bytes(range(256))[::7] + b"\\'\"" + bytes(range(255, 0, -5)) + b"'\\"
    index = DeniedIndex({base64.b64encode(data).decode(): _source()})  # type: ignore[dict-item]
    literal = repr(data)
    assert "\\'" in literal and "\\\\" in literal  # the escapes a break may split
    for at in range(2, len(literal) - 1):
        folded = literal[:at] + "\n" + literal[at:]
        new, hits = index.redact(f"$ python3 -c ... | fold\n{folded}\n$ echo done")
        assert hits and "withheld" in new, at
        assert new.endswith("\n$ echo done"), at


def test_a_string_remembered_clean_is_screened_again_once_a_new_value_is_denied(
    gate_dirs: dict[str, Path],
) -> None:
    """Clean strings are remembered per index: a value denied later makes a new index, which
    remembers nothing, so the same string resent on the next turn is caught."""
    project = gate_dirs["project"]
    policy = PolicyStore().policy_for(str(project))
    store = IndexStore()
    (project / ".env").write_text(f"A={fake_secret()}\n")
    later = fake_secret("later-")
    text = f"tool output mentioning {later} among other things " * 4
    first = store.index_for(policy, str(project))
    assert first.redact(text) == (text, []) and first.redact(text) == (text, [])
    (project / ".env").write_text(f"A={fake_secret()}\nB={later}\n")
    second = store.index_for(policy, str(project))
    assert second is not first
    new, hits = second.redact(text)
    assert hits and later not in new


@pytest.mark.parametrize("wrap", [0, 76])
def test_a_string_with_a_value_is_redacted_every_time(wrap: int) -> None:
    """Only clean strings are remembered: a hit (plain or wrapped) is found on every turn."""
    secret = "Tk-" + fake_secret() + fake_secret()
    index = DeniedIndex({secret: _source()})  # type: ignore[dict-item]
    encoded = base64.b64encode(f"KEY={secret}\n".encode()).decode()
    body = (
        "\n".join(encoded[i : i + wrap] for i in range(0, len(encoded), wrap)) if wrap else secret
    )
    text = f"$ cat\n{body}\n$ echo done " + "x" * 120
    results = [index.redact(text) for _ in range(3)]
    assert all(hits and secret not in new for new, hits in results)
    assert len({new for new, _ in results}) == 1  # deterministic placeholders


def test_a_denied_file_created_deep_in_the_project_is_indexed_before_the_next_request(
    gate_dirs: dict[str, Path],
) -> None:
    project = gate_dirs["project"]
    deep = project / "services" / "api" / "config"
    deep.mkdir(parents=True)
    (deep / "app.py").write_text("print(1)\n")
    policy = PolicyStore().policy_for(str(project))
    store = IndexStore()
    assert not store.index_for(policy, str(project)).units
    secret = fake_secret()
    (deep / ".env").write_text(f"TOKEN={secret}\n")
    assert store.index_for(policy, str(project)).find(f"x {secret} y")


def test_a_walk_out_of_budget_says_so_and_goes_on_in_the_background(
    gate_dirs: dict[str, Path],
) -> None:
    from loguru import logger

    from gate.screen.fingerprints import Limits

    log_lines: list[str] = []
    sink = logger.add(lambda m: log_lines.append(str(m)), level="WARNING", format="{message}")

    project = gate_dirs["project"]
    for i in range(40):
        (project / f"f{i:02}.txt").write_text("x")
    (project / "zz").mkdir()
    secret = fake_secret()
    (project / "zz" / ".env").write_text(f"TOKEN={secret}\n")
    policy = PolicyStore().policy_for(str(project))
    store = IndexStore(Limits(10, 1 << 16))
    store.index_for(policy, str(project))
    assert any("stopped at its limit" in line for line in log_lines)
    deadline = time.monotonic() + 10
    while not store.index_for(policy, str(project)).find(secret):  # the wider walk's result
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert store.incomplete() == ()  # the wider walk saw everything
    logger.remove(sink)


def test_values_a_denied_file_held_in_git_history_are_indexed(gate_dirs: dict[str, Path]) -> None:
    import subprocess

    project = gate_dirs["project"]

    def git(*args: str) -> None:
        subprocess.run(
            [
                "git",
                "-C",
                str(project),
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@example.invalid",
                *args,
            ],
            check=True,
            capture_output=True,
        )

    git("init", "-q")
    first, second, shared = fake_secret("first_"), fake_secret("second_"), fake_secret("ok_")
    (project / ".env").write_text(f"TOKEN={first}\n")
    (project / "README.md").write_text(f"see {shared}\n")  # not denied: never indexed
    git("add", "-A")
    git("commit", "-qm", "one")
    (project / ".env").write_text(f"TOKEN={second}\n")
    git("commit", "-qam", "rotate")
    git("rm", "-q", ".env")  # gone from the tree: only history has it
    git("commit", "-qm", "remove")
    store, policy = IndexStore(), PolicyStore().policy_for(str(project))
    index = store.index_for(policy, str(project))
    assert index.find(f"x {first} y") and index.find(f"x {second} y")
    assert not index.find(f"x {shared} y")
    third = fake_secret("third_")
    (project / ".env").write_text(f"TOKEN={third}\n")
    git("add", "-f", ".env")
    git("commit", "-qm", "again")
    (project / ".env").unlink()
    git("commit", "-qam", "gone")  # a ref moved: history is read again
    index = store.index_for(policy, str(project))
    assert index.find(f"x {third} y")


def test_a_repository_config_cannot_make_gate_run_a_program_reading_history(
    gate_dirs: dict[str, Path], tmp_path: Path
) -> None:
    """An agent may write .git/config: a diff driver's textconv there would run as gate's
    user when gate reads the denied files' history (outside a lock), and replace the old
    values gate looks for with whatever it prints."""
    import subprocess

    project = gate_dirs["project"]
    ran = tmp_path / "ran"

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-C", str(project), "-c", "user.name=t", "-c", "user.email=t@x.invalid", *args],
            check=True,
            capture_output=True,
        )

    git("init", "-q")
    old = fake_secret("old_")
    (project / ".env").write_text(f"TOKEN={old}\n")
    (project / ".gitattributes").write_text("* diff=conv\n")
    git("add", "-A")
    git("commit", "-qm", "one")
    (project / ".env").write_text("TOKEN=rotated\n")
    git("commit", "-qam", "rotate")
    git("config", "diff.conv.textconv", f"sh -c 'touch {ran}; echo nothing'")
    index = IndexStore().index_for(PolicyStore().policy_for(str(project)), str(project))
    assert not ran.exists()
    assert index.find(f"x {old} y")  # read from the real lines, not the program's output
