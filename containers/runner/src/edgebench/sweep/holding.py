"""What a sweep holds while it runs, so that a second one is refused with the holder's name instead of both
provisioning the same nodes (edgebench.holds, substrates/clusters/lease.py):
- a local sweep holds its testbed prefix (`LocalHold`, dropped by the kernel when the process ends);
- a sweep on a lab (substrate ssh) holds the lab's lease, renewed while it runs and given back at the end;
- an Argo phase pod on a lab takes the same lease for its workflow (holder $EDGEBENCH_HOLDER, the same for every
  pod of the workflow) and keeps it for the workflow's next phase; after the workflow's last pod it lapses.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any, Iterator, Optional

from edgebench.holds import LocalHold
from edgebench.substrates.clusters import lease
from edgebench.substrates.local.testbed import default_prefix


def testbed_hold(prefix: Optional[str] = None, sweep_id: Optional[str] = None) -> LocalHold:
    p = prefix or default_prefix()
    return LocalHold(f"testbed-{p}", f"testbed prefix {p!r}", sweep_id)


@contextlib.contextmanager
def sweep_hold(substrate: str, sweep_id: str, inventory: Optional[Path] = None, ssh_key: Optional[Path] = None,
               known_hosts: Optional[Path] = None) -> Iterator[Any]:
    """Hold what a whole sweep drives, for as long as the block runs (refused with HeldError before anything)."""
    if substrate == "local":
        with testbed_hold(sweep_id=sweep_id) as h:
            yield h
    elif substrate == "ssh":
        with lease.for_lab(inventory and str(inventory), ssh_key and str(ssh_key), known_hosts and str(known_hosts),
                           sweep_id=sweep_id) as h:
            yield h
    else:
        yield None


@contextlib.contextmanager
def phase_hold(substrate: str, inventory: Optional[Path] = None, ssh_key: Optional[Path] = None,
               known_hosts: Optional[Path] = None) -> Iterator[Any]:
    """One phase of an Argo cell: a lab's lease for the workflow, kept after the phase (its next phase takes it
    again as the same holder). A phase run by hand (no $EDGEBENCH_HOLDER) holds the lab while it runs and gives it
    back, so the next phase command may take it. Other substrates: nothing (Argo's semaphore orders a target's
    cells)."""
    if substrate != "ssh":
        yield None
        return
    h = lease.for_lab(inventory and str(inventory), ssh_key and str(ssh_key), known_hosts and str(known_hosts))
    h.hold(release=not os.environ.get(lease.ENV_HOLDER))
    try:
        yield h
    finally:
        h.stop()
