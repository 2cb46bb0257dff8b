"""`edgebench lab status|release`: who holds a lab (its lease, substrates/clusters/lease.py), and giving it back."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from edgebench.cli.options import INVENTORY_HELP, KNOWN_HOSTS_HELP, SSH_KEY_HELP
from edgebench.console import out
from edgebench.substrates.clusters import lease

lab_app = typer.Typer(help="A lab (an inventory's nodes): who holds it. One sweep drives a lab at a time.",
                      no_args_is_help=True)
INVENTORY = typer.Option(None, "--inventory", help=INVENTORY_HELP)
SSH_KEY = typer.Option(None, "--ssh-key", help=SSH_KEY_HELP)
KNOWN_HOSTS = typer.Option(None, "--known-hosts", help=KNOWN_HOSTS_HELP)


def register(app: typer.Typer) -> None:
    app.add_typer(lab_app, name="lab")


@lab_app.command("status")
def lab_status(inventory: Optional[Path] = INVENTORY, ssh_key: Optional[Path] = SSH_KEY,
               known_hosts: Optional[Path] = KNOWN_HOSTS):
    """Say who holds the lab now (the lease on its first server), or that it is free. Exit 3 while held."""
    lab = lease.for_lab(inventory and str(inventory), ssh_key and str(ssh_key), known_hosts and str(known_hosts))
    h = lab.show()
    if h is None:
        out.print(f"lab {lab.inventory.target}: free")
        return
    out.print(f"lab {lab.inventory.target}: held by {h['holder']} for {h['held_s']} s (lease lapses in "
              f"{h['lapses_s']} s unless renewed)")
    raise typer.Exit(3)


@lab_app.command("release")
def lab_release(force: bool = typer.Option(False, "--force", help="Release a lease held by another holder "
                                           "(only when that holder is known to be gone: a live one renews it)."),
                inventory: Optional[Path] = INVENTORY, ssh_key: Optional[Path] = SSH_KEY,
                known_hosts: Optional[Path] = KNOWN_HOSTS):
    """Give the lab back: this holder's lease ($EDGEBENCH_HOLDER on Argo), or with --force whoever's."""
    lab = lease.for_lab(inventory and str(inventory), ssh_key and str(ssh_key), known_hosts and str(known_hosts))
    lab.release(force=force)
    h = lab.show()
    if h is not None:  # another holder's lease: left as it is
        out.print(f"lab {lab.inventory.target}: not released: held by {h['holder']}, not by {lab.holder} (--force "
                  f"releases it once that holder is known to be gone; it lapses in {h['lapses_s']} s unless renewed)")
        raise typer.Exit(3)
    out.print(f"lab {lab.inventory.target}: released" + (" (forced)" if force else f" by {lab.holder}"))
