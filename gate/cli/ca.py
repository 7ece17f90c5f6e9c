"""`gate ca export|trust`, and forward mode's settings for a child or a shell."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

from gate import dirs
from gate.agents import registry


def child_env(data: Path, base: str, run_id: str | None) -> dict[str, str]:
    """Proxy and trust settings for forward mode; a run names itself in the proxy URL."""
    from gate.proxy import ca, forward

    authority = ca.ensure(data)
    proxy = (
        base
        if run_id is None
        else base.replace("http://", f"http://{forward.RUN_USER}:{run_id}@", 1)
    )
    return registry.forward_env(proxy, str(authority.cert), str(authority.bundle))


def exports(data: Path, base: str) -> str:
    """Shell lines: drop the shell's own proxy and trust settings, then set gate's."""
    lines = [f"unset {v} {v.lower()}" for v in registry.PROXY_VARS]
    lines += [f"unset {v}" for v in registry.TRUST_VARS]
    lines += [f"export {k}={shlex.quote(v)}" for k, v in child_env(data, base, None).items()]
    return "\n".join(lines)


@click.group("ca")
def ca_group() -> None:
    """Forward mode's certificate authority (made on first use in the data dir)."""


@ca_group.command("export")
@click.option(
    "--bundle",
    is_flag=True,
    help="The system's roots plus gate's CA, for tools whose setting replaces the"
    " roots (SSL_CERT_FILE, REQUESTS_CA_BUNDLE, CODEX_CA_CERTIFICATE).",
)
@click.option("--path", "show_path", is_flag=True, help="Print the file's path, not its PEM.")
def export_cmd(bundle: bool, show_path: bool) -> None:
    """Print the CA certificate (never its key) in PEM."""
    from gate.proxy import ca

    authority = ca.ensure(dirs.private_dir(dirs.data_dir()))
    path = authority.bundle if bundle else authority.cert
    if show_path:
        click.echo(str(path))
    else:
        sys.stdout.write(path.read_text())


@ca_group.command("trust")
def trust_cmd() -> None:
    """Say how to make a runtime or the whole system trust gate's CA.

    `gate run --forward` needs none of this: it sets the trust variables for the child.
    """
    from gate.proxy import ca

    authority = ca.ensure(dirs.private_dir(dirs.data_dir()))
    cert, bundle = shlex.quote(str(authority.cert)), shlex.quote(str(authority.bundle))
    click.echo(f"gate's CA: {authority.cert}\n")
    click.echo("For one shell (what `gate run --forward` sets for its child):")
    click.echo(
        f"  export NODE_EXTRA_CA_CERTS={cert}   # Node: Claude Code, Gemini CLI,"
        " Copilot CLI, OpenCode"
    )
    click.echo(
        f"  export SSL_CERT_FILE={bundle} REQUESTS_CA_BUNDLE={bundle} CURL_CA_BUNDLE={bundle}"
    )
    click.echo(f"  export CODEX_CA_CERTIFICATE={bundle}   # Codex (HTTP and WebSocket)\n")
    click.echo("For the whole system (every user and program will trust it):")
    click.echo(
        f"  Debian/Ubuntu: sudo cp {cert} /usr/local/share/ca-certificates/gate.crt"
        " && sudo update-ca-certificates"
    )
    click.echo(
        f"  Fedora/RHEL:   sudo cp {cert} /etc/pki/ca-trust/source/anchors/gate.pem"
        " && sudo update-ca-trust"
    )
    click.echo(
        "  macOS:         sudo security add-trusted-cert -d -r trustRoot"
        f" -k /Library/Keychains/System.keychain {cert}"
    )
    click.echo(
        "\nThe CA's key stays in gate's data dir (owner-only); anyone who reads it can"
        " impersonate any site to a program that trusts the CA."
    )


COMMANDS = (ca_group,)
