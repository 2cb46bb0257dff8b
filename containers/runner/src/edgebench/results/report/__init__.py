"""Reading the warehouse: the one read API over the marts (marts/: every query the CLI and the portal run, and the
summaries printed after a sweep), and what judges and words what it reads: the verdict rule (verdict), labels of the
regression cards (labels), the ranked answer (ranking), the papers' numbers and claims (papers, claim_compare,
counterparts, scorecard), change points over versions (changepoints), emulation against real clusters (emulation),
and a sweep's status from the results store (sweep_status)."""
