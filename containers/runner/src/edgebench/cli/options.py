"""Option help texts and small helpers shared by the `edgebench` sub-command modules (cli/*.py import
them from here, so no module imports the command line's entry point for a string)."""

from __future__ import annotations

import os

from edgebench.substrates.clusters.install.artifacts import ENV_SOURCE

PARAM_HELP = ("Override a sweep parameter, NAME=VALUE (as `argo submit -p`); repeatable. Lists are JSON: "
              "-p 'cnis=[\"host\",\"flannel:vxlan\"]'.")
INVENTORY_HELP = "Node inventory (ssh substrate; default $EDGEBENCH_INVENTORY or the Argo ConfigMap mount)."
SSH_KEY_HELP = "Private SSH key for the nodes (default $EDGEBENCH_SSH_KEY or the Argo Secret mount)."
KNOWN_HOSTS_HELP = "known_hosts file for the nodes (default $EDGEBENCH_KNOWN_HOSTS)."
CELL_HELP = "The cell as JSON (one element of `edgebench cells`), or @FILE; or give --cell-id."
CELL_ID_HELP = "The cell by reference: its id, looked up in the sweep that --argo-parameters gives (what Argo runs)."
ARGO_HELP = "With --cell-id: the sweep's parameters as Argo's {{workflow.parameters.json}} gives them."
DEFAULT_ID_HELP = "With --cell-id: the sweep id when the sweep-id parameter is empty (on Argo the workflow name)."


def on_sigterm(signum, frame):  # turn `kill` into KeyboardInterrupt so that teardown (finally) runs
    raise KeyboardInterrupt


def export_cluster_env(inventory, ssh_key, artifact_source) -> None:
    """What the ssh and kind providers read (substrates.clusters.from_cell), from a command's --inventory, --ssh-key
    and --artifact-source: set where given, else the environment's stand."""
    for var, value in (("EDGEBENCH_INVENTORY", inventory), ("EDGEBENCH_SSH_KEY", ssh_key),
                       (ENV_SOURCE, artifact_source)):
        if value:
            os.environ[var] = str(value)
