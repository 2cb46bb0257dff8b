"""Reading the warehouse: the one read API over the marts (marts.py), shared by the CLI and the portal, and what is
read through it: the verdict rule (verdict), the summaries and regression cards (summaries, labels), the ranked
answer (ranking), the papers' numbers and claims (papers, claim_compare, counterparts, scorecard), change points over
versions (changepoints), emulation against real clusters (emulation), and a sweep's status (sweep_status)."""
