"""`edgebench`: the command line of the step runner. The Typer app and the entry point; each sub-command module
(sweep, phases, testbed, lab, status, results, summary, versions, report, papers) registers its commands on the app, in
the order `edgebench --help` lists them."""

from __future__ import annotations

import sys

import typer

from edgebench.cli import lab, papers, phases, report, results, status, summary, sweep, testbed, versions
from edgebench.console import err
from edgebench.errors import EdgebenchError

app = typer.Typer(
    help="edgebench: benchmark Kubernetes networking stacks (CNIs and their modes) for edge clusters.\n\n"
    "A sweep file is an Argo Workflow (workflows/sweep.yaml): the same file runs on a management cluster with "
    "`argo submit` and here, on the local network-namespace testbed, with `edgebench sweep FILE --local`.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

for module in (sweep, phases, testbed, lab, status, results, summary, versions, report, papers):
    module.register(app)


def main() -> None:
    try:
        app()
    except EdgebenchError as exc:
        err.print(f"[red]error:[/] {exc}", highlight=False)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err.print("interrupted: the testbed was torn down; runs already measured are stored")
        sys.exit(130)
