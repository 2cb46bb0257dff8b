"""`python -m edgebench.cli`: the same as the `edgebench` console script."""

from edgebench.cli import main

main()
