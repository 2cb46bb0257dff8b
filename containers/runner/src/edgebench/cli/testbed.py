"""`edgebench testbed up|down|status`: the local network-namespace testbed by hand (needs root)."""

from __future__ import annotations

import json
from typing import Optional

import typer

from edgebench.console import out
from edgebench.plan import catalog as catalog_mod
from edgebench.holds import HeldError, holder_of, holder_text
from edgebench.substrates.local.testbed import Testbed, default_prefix, require_root

testbed_app = typer.Typer(help="The local network-namespace testbed (needs root).", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(testbed_app, name="testbed")


def refuse_if_held(prefix: Optional[str], doing: str) -> None:
    """HeldError (nothing changed) while a live sweep drives this prefix's testbed (sweep/holding.py)."""
    p = prefix or default_prefix()
    h = holder_of(f"testbed-{p}")
    if h is not None:
        raise HeldError(f"not {doing} testbed prefix {p!r}: a live sweep uses it ({holder_text(h)}); stop that sweep "
                        "first (it tears its testbed down), or use another --prefix")


@testbed_app.command("up")
def testbed_up(
    cni: str = typer.Option("host", "--cni", help="CNI entry, name or name:mode (see `edgebench catalog`)."),
    prefix: Optional[str] = typer.Option(None, "--prefix", help="Name prefix (default: eb or $EDGEBENCH_TESTBED_PREFIX)."),
):
    """Build the testbed for one CNI mode (replacing any testbed with the same prefix)."""

    cm = catalog_mod.resolve_cni(cni)
    refuse_if_held(prefix, "replacing")
    state = Testbed(prefix).up(cm)
    out.print(f"testbed {state['prefix']} up: {cm.key} ({cm.datapath}), pod MTU {state['mtu']}")


@testbed_app.command("down")
def testbed_down(prefix: Optional[str] = typer.Option(None, "--prefix", help="Name prefix.")):
    """Remove everything the testbed created (also what a killed run left behind)."""

    require_root()
    refuse_if_held(prefix, "removing")
    removed = Testbed(prefix).down()
    out.print(f"removed {len(removed)} namespace(s)" + (f": {' '.join(removed)}" if removed else ""))


@testbed_app.command("status")
def testbed_status(
    prefix: Optional[str] = typer.Option(None, "--prefix", help="Name prefix."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON."),
):
    """Show the testbed's namespaces and addresses."""

    require_root()
    st = Testbed(prefix).status()
    if as_json:
        typer.echo(json.dumps(st, indent=2))
        return
    if not st["up"]:
        out.print(f"testbed {st['prefix']}: down")
        return
    s = st["state"] or {}
    out.print(f"testbed {st['prefix']}: up, {s.get('cni')}:{s.get('mode')} ({s.get('datapath')}), pod MTU {s.get('mtu')}")
    for ns, addrs in st["namespaces"].items():
        out.print(f"  {ns}: " + "; ".join(addrs))
