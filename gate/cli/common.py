"""Shared CLI pieces: loading config with upstream overrides, JSON output."""

from __future__ import annotations

import json
from typing import Any

import click

from gate import config as config_mod
from gate import dirs
from gate.config import Config
from gate.errors import ConfigError


def load_config(host: str | None = None, port: int | None = None,
                upstreams: tuple[str, ...] = ()) -> Config:
    cfg = config_mod.load(dirs.config_dir() / "config.yaml")
    extra = {}
    for text in upstreams:
        try:
            up = config_mod.parse_upstream_option(text)
        except ValueError as exc:
            raise ConfigError(str(exc), where="--upstream") from exc
        extra[up.name] = up
    cfg = cfg.with_upstreams(extra)
    from dataclasses import replace

    return replace(cfg, host=host or cfg.host, port=cfg.port if port is None else port)


def echo_json(obj: Any) -> None:
    """Exactly one JSON object on stdout."""
    click.echo(json.dumps(obj, indent=2, sort_keys=False, default=str))


json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
