"""`gate paths`: where gate reads config and rules and writes its data."""

from __future__ import annotations

import os

import click

from gate import dirs
from gate.ask import client, memory_file
from gate.ask.dataset import dataset_dir
from gate.cli.common import echo_json, json_option
from gate.proxy import ca
from gate.rules import layers
from gate.screen.secrets import KEY_FILE


@click.command("paths")
@json_option
def paths_cmd(as_json: bool) -> None:
    """Print the config and data dirs and every file gate reads or writes."""
    cfg, data = dirs.config_dir(), dirs.data_dir()
    cwd = os.getcwd()
    info = {
        "config_dir": str(cfg),
        "data_dir": str(data),
        "config_file": str(cfg / "config.yaml"),
        "user_rules": str(cfg / "rules.yaml"),
        "managed_rules": str(layers.managed_path()),
        "project_rules": [os.path.join(cwd, f) for f in layers.PROJECT_FILES],
        "rule_packs": str(layers.packs_dir()),
        "audit_db": str(data / "audit.db"),
        "decision_memory": str(data / "decisions" / memory_file.FILE),
        "decision_dataset": str(dataset_dir(data)),
        "control_token": str(data / client.TOKEN_FILE),
        "placeholder_key": str(data / KEY_FILE),
        "log_file": str(data / "gate.log"),
        # Forward mode's CA (made on first use): the key, the certificate clients trust,
        # and the system's roots plus it.
        "ca_key": str(ca.paths(data).key),
        "ca_cert": str(ca.paths(data).cert),
        "ca_bundle": str(ca.paths(data).bundle),
        # Every place the managed layer is read from (a file, or a directory of *.yaml).
        "managed_rules_from": [str(p) for p in layers.managed_places()],
    }
    if as_json:
        echo_json(info)
        return
    width = max(map(len, info))
    for key, value in info.items():
        shown = ", ".join(value) if isinstance(value, list) else value
        click.echo(f"{key.replace('_', ' '):<{width}}  {shown}")


COMMANDS = (paths_cmd,)
