"""The audit database's address, as errors show it, never holds its password."""

from __future__ import annotations

import secrets

import pytest

from gate.audit.pg import redacted


@pytest.mark.parametrize(
    "form",
    [
        "postgresql://gate:{p}@db.local:5432/audit",
        "postgresql://db.local/audit?user=gate&password={p}",
        "postgresql://db.local/audit?password={p}&sslmode=require",
        "postgresql://db.local/audit?PASSWORD={p}",
        "host=db.local user=gate password={p} dbname=audit",
        "host=db.local password = '{p} x' dbname=audit",
    ],
)
def test_the_password_is_masked_in_every_form(form: str) -> None:
    password = "pw" + secrets.token_hex(8)
    shown = redacted(form.format(p=password))
    assert password not in shown and "***" in shown
    assert "db.local" in shown


def test_an_address_without_a_password_is_unchanged() -> None:
    for url in ("postgresql://db.local/audit?sslmode=require", "host=db.local dbname=audit"):
        assert redacted(url) == url
