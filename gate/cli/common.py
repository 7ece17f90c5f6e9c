"""Shared CLI pieces: loading config with upstream overrides, JSON output, --since."""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from typing import TYPE_CHECKING, Any

import click

from gate import dirs
from gate.errors import ConfigError

if TYPE_CHECKING:
    from gate.config import Config


def load_config(
    host: str | None = None, port: int | None = None, upstreams: tuple[str, ...] = ()
) -> Config:
    from gate import config as config_mod  # here: `gate scan` never reads the config

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
    """Exactly one JSON object on stdout; `ok` says it succeeded (failures print
    {"ok": false, "error": {...}}, see gate/cli/__init__.py)."""
    if isinstance(obj, dict) and "ok" not in obj:
        obj = {"ok": True, **obj}
    click.echo(json.dumps(obj, indent=2, sort_keys=False, default=str))


json_option = click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")


_SPANS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_since(text: str, now: float | None = None) -> float:
    """A cutoff as a Unix time, from a span back from now (`90m`, `12h`, `7d`, `2w`) or a
    date (`2026-11-01`, `2026-11-01T08:00`, local time). Raises ValueError saying what
    was expected."""
    text = text.strip()
    if m := re.fullmatch(r"(\d+)\s*([smhdw])", text):
        return (time.time() if now is None else now) - int(m[1]) * _SPANS[m[2]]
    try:
        return dt.datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise ValueError(
            f"{text!r} is neither a span like 7d, 12h, 30m, 2w nor a date like 2026-11-01"
        ) from None


class SinceType(click.ParamType[float]):
    name = "SPAN|DATE"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        if isinstance(value, float):
            return value
        try:
            return parse_since(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


since_option = click.option(
    "--since",
    type=SinceType(),
    default=None,
    help="Only requests since then: a span back from now (7d, 12h, 30m, 2w) or a date.",
)
