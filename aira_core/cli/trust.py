"""``aira trust``: the publishers and keys trusted to admit packages."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import typer

from aira_core.cli._options import JsonFlag, command_group
from aira_core.cli._output import _print_json, _table

trust_app = command_group("Publishers and keys trusted to admit packages.")


@trust_app.command("list")
def trust_list(as_json: JsonFlag = False) -> None:
    """Show trusted publishers and keys (built-in and your own)."""
    from datetime import UTC

    from aira_core.catalog.trust import TrustPolicy

    now = datetime.now(UTC)
    keys = [r.to_json(now) for r in TrustPolicy.load().records()]
    if as_json:
        _print_json({"format": "aira.trust/1", "keys": keys})
        return
    _table(
        "Trusted keys",
        ["publisher", "key id", "public key", "expires", "state"],
        [
            [
                k["publisher"],
                k["keyId"],
                k["publicKey"],
                k["expiresAt"] or "never",
                "revoked"
                if k["revoked"]
                else "expired"
                if k["expired"]
                else ("built-in" if k["builtin"] else "trusted"),
            ]
            for k in keys
        ],
    )


@trust_app.command("add")
def trust_add(
    publisher: str,
    public_key: Annotated[
        str,
        typer.Argument(
            help="base64 of the raw 32-byte key, or the .pub file `aira catalog keygen` wrote"
        ),
    ],
    expires: Annotated[
        datetime | None,
        typer.Option("--expires", help="Expiry (ISO date or date-time, UTC if no zone)."),
    ] = None,
) -> None:
    """Trust a publisher's public key (a revoked key stays revoked)."""
    from datetime import UTC

    from aira_core.catalog.signing import public_key_b64, read_public_key
    from aira_core.catalog.trust import add_key

    if expires is not None and expires.tzinfo is None:
        expires = expires.replace(tzinfo=UTC)
    key = add_key(publisher, public_key_b64(read_public_key(public_key)), expires)
    typer.echo(f"trusted key {key.key_id} for {publisher}")


@trust_app.command("revoke")
def trust_revoke(key_id: str) -> None:
    """Revoke a key (built-in keys too); packages signed with it go to quarantine."""
    from aira_core.catalog.trust import revoke_key

    record = revoke_key(key_id)
    typer.echo(f"revoked key {record.key.key_id} of {record.publisher}")


@trust_app.command("reset-state")
def trust_reset_state() -> None:
    """Start a new, empty catalog state after it was lost or damaged. It holds the rollback
    protection: the versions admitted before, which can then be admitted again."""
    from aira_core.catalog.state import reset_state

    forgotten = reset_state()
    if forgotten is None:
        typer.echo("started a new catalog state (the old one was missing or unreadable)")
    else:
        typer.echo(
            f"started a new catalog state; the old one remembered {forgotten} admitted "
            "package version(s)"
        )
