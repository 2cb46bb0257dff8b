"""Queries of the portal's Papers page: edgebench.results.papers over the page's read-only connection."""
from __future__ import annotations

import pandas as pd

from data.common import REPO
from edgebench.results import papers as _papers

PAPER_IDS = list(_papers.PAPERS)


def paper_title(paper: str) -> str:
    authors, title, _ = _papers.PAPERS[paper]
    return f"seed {paper}: {authors}, {title}"


def run_hint(paper: str) -> str:
    """The paper's presets that exist in this repository, each by its path, with the command that runs it."""
    return _papers.run_hint(paper, REPO)


def paper_report(con, paper: str) -> dict:
    """The paper's published numbers beside ours and its claims' outcomes, per substrate (see results/papers.py)."""
    def fetch(sql: str, params: list) -> list[dict]:
        cur = con.execute(sql, params)
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row)) for row in cur.fetchall()]

    return _papers.paper_report(fetch, paper)


def numbers_frame(rep: dict) -> pd.DataFrame:
    """The matched numbers as a table: the published value and ours with the half-width of its 95% interval, n and
    verdict."""
    rows = [{
        "source": f"{r['table_ref']}",
        "subject": f"{r['label']} ({r['cni']}:{r['cni_mode']})",
        "payload (B)": r["payload_bytes"],
        "published %": r["value"],
        "substrate": r["substrate"] or "not measured",
        "ours %": r["ours"],
        "± 95% CI": r["ours_ci95"],  # half-width, percentage points; empty with fewer than 2 runs on a side
        "n (CNI/host)": f"{r['n_runs'] or 0}/{r['host_n_runs'] or 0}",
        "vs host": r["verdict"] or "",
        "conditions": r["conditions"],
        "metric": r["metric"],
    } for r in rep["numbers"]]
    return pd.DataFrame(rows)


def claims_frame(rep: dict, substrate: str | None = None) -> pd.DataFrame:
    """One row per claim x substrate (all substrates, or one and the claims nothing measured)."""
    rows = [{"claim": c["claim_id"], "outcome": c["outcome"], "substrate": c["substrate"] or "-",
             "statement": c["claim"], "evidence": c["detail"],
             "ours (left side)": _side(c["left"]), "compared with": _side(c["right"]),
             "figure / table": " ".join(x for x in (c.get("table_ref"), c.get("figure_ref")) if x)}
            for c in rep["claims"] if substrate is None or c["substrate"] in (substrate, None)]
    return pd.DataFrame(rows)


def _side(side: dict | None) -> str:
    if not side or side.get("mean") is None:
        return ""
    ci = f" ± {side['ci95']:.3g}" if side.get("ci95") else (" (no CI)" if side.get("n_runs") else "")
    return f"{side['mean']:.4g}{ci}" + (f", n {side['n_runs']}" if side.get("n_runs") else "")


def published_only_frame(rep: dict) -> pd.DataFrame:
    """The paper's numbers without a counterpart, with the reason."""
    return pd.DataFrame([{"source": " ".join(x for x in (r.get("table_ref"), r.get("figure_ref")) if x),
                          "subject": r["label"], "metric": r["metric"], "value": r["value"], "unit": r["unit"],
                          "as": r["qualifier"], "normalization": r["normalization"], "condition": r["condition"],
                          "why not compared": r["reason"]} for r in rep["published_only"]])
