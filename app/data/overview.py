"""Queries and charts of the portal's overview page (marts only)."""
from __future__ import annotations

import pandas as pd



def run_counts(con) -> pd.DataFrame:
    """Runs per substrate and status (all workloads)."""
    return con.execute("""
        select substrate, workload, status, count(*) as runs
        from fct_runs group by all order by substrate, workload, status""").df()


def sweeps(con) -> pd.DataFrame:
    """One row per sweep: substrates, time span, run counts by status."""
    return con.execute("""
        select sweep_id,
               string_agg(distinct substrate, ', ' order by substrate) as substrates,
               string_agg(distinct workload, ', ' order by workload)   as workloads,
               min(started_at) as started_at, max(finished_at) as finished_at,
               count(*) as runs,
               count(*) filter (where status = 'ok')          as ok,
               count(*) filter (where status = 'failed')      as failed,
               count(*) filter (where status = 'unsupported') as unsupported
        from fct_runs group by sweep_id order by max(finished_at) desc""").df()
