"""Queries of the portal's Papers page: edgebench.results.report.papers over the page's read-only connection."""
from __future__ import annotations

import pandas as pd

from data.common import REPO
from edgebench.results.report import papers as _papers
from edgebench.results.report import scorecard as _scorecard
from edgebench.results.report.marts import fetcher

PAPER_IDS = list(_papers.PAPERS)


def paper_title(paper: str) -> str:
    authors, title, _ = _papers.PAPERS[paper]
    return f"seed {paper}: {authors}, {title}"


def run_hint(paper: str) -> str:
    """The paper's presets that exist in this repository, each by its path, with the command that runs it."""
    return _papers.run_hint(paper, REPO)


def paper_report(con, paper: str) -> dict:
    """The paper's published numbers beside ours and its claims' outcomes, per substrate (see results/report/papers.py)."""
    return _papers.paper_report(fetcher(con), paper)


def scorecard_frame(con) -> pd.DataFrame:
    """The reproduction scorecard (results/report/scorecard.py): a row per paper and substrate; 'to decide' holds the
    claims we cannot tell with what would decide each."""
    rows = _scorecard.scorecard(fetcher(con), REPO)
    return pd.DataFrame([{
        "paper": f"seed {r['paper']}", "substrate": r["substrate"] or "nothing measured",
        "agrees": r["agrees"], "disagrees": r["disagrees"], "cannot tell": r["cannot tell"],
        "not testable": r["not testable"],
        "decided": "-" if r["decided_share"] is None else f"{r['decided']}/{r['testable']} ({r['decided_share']:.0%})",
        "numbers printed / comparable / measured":
            f"{r['numbers_printed']} / {r['numbers_comparable']} / {r['numbers_measured']}",
        "numbers with a counterpart or a stated reason":
            f"{r['numbers_explained']} of {r['numbers_printed']}"
            + ("" if r["numbers_explained_share"] is None else f" ({r['numbers_explained_share']:.0%})"),
        "to decide": r["cannot_tell"], "decided_n": r["decided"], "testable_n": r["testable"]} for r in rows])


def scorecard_totals(card: pd.DataFrame) -> list[dict]:
    """Per substrate over every paper: testable claims decided (results/report/scorecard.totals over its rows)."""
    return _scorecard.totals([{"substrate": None if r["substrate"] == "nothing measured" else r["substrate"],
                               "decided": r["decided_n"], "testable": r["testable_n"]} for _, r in card.iterrows()])


def undecided_frame(card: pd.DataFrame) -> pd.DataFrame:
    """One row per claim we cannot tell, per paper and substrate, with what would decide it."""
    return pd.DataFrame([{"paper": row["paper"], "substrate": row["substrate"], "claim": u["claim_id"],
                          "to decide": u["to_decide"], "why": u["why"]}
                         for _, row in card.iterrows() for u in row["to decide"]])


def numbers_frame(rep: dict) -> pd.DataFrame:
    """The matched numbers as a table: the published value and ours with the half-width of its 95% interval, n and
    the verdict of the comparison ours describes (results/report/counterparts.py)."""
    rows = [{
        "source": r["source"],
        "subject": r["label"] + (f" ({m})" if (m := ":".join(x for x in (r["cni"], r["cni_mode"]) if x)) else ""),
        "payload (B)": r["payload_bytes"],
        "published %": r["value"],
        "published": r["published"],
        "substrate": r["substrate"] or "not measured",
        "ours %": r["ours"],
        "± 95% CI": r["ours_ci95"],  # half-width, in the paper's unit; empty with fewer than 2 runs on a side
        "n (CNI/host)": f"{r['n_runs'] or 0}/{r['host_n_runs'] or 0}",
        "vs host": r["verdict"] or "",
        "ours are": r["ours_are"] + (f" ({r['against']})" if r.get("against") else ""),
        "conditions": r["conditions"],
        "metric": r["metric"],
        "unit": r["unit"],
    } for r in rep["numbers"]]
    return pd.DataFrame(rows)


def other_numbers_frame(numbers: pd.DataFrame) -> pd.DataFrame:
    """The counterparts outside seed 000's Tables I and II, in the paper's unit (%, ratio): the published value as
    printed (a range, ~, <) beside ours."""
    return numbers.rename(columns={"ours %": "ours", "n (CNI/host)": "n / baseline n", "vs host": "verdict"}).drop(
        columns=["published %", "metric"])[["source", "subject", "payload (B)", "published", "substrate", "ours",
                                             "± 95% CI", "unit", "n / baseline n", "verdict", "ours are",
                                             "conditions"]]


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
