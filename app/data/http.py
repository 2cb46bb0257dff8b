"""Tables and charts of the portal's HTTP page: runs in one cluster (intercluster = 'none'; runs across an
inter-cluster tool are on the inter-cluster page, intercluster.py); its queries are
edgebench.results.report.marts.http."""
from __future__ import annotations

import altair as alt
import pandas as pd

from edgebench.results.report.marts.http import OUTLIERS_PER_BOX

from .common import baseline_scale


def _us(ms: float) -> str:
    return f"{ms * 1000:g} µs"


def http_vs_host_text(pct, verdict, resolution_ms, host_resolution_ms) -> str:
    """What the overhead column shows: the percentage, "0.0 %" for the host baseline, "no host baseline" without
    one. (A difference below the load generators' time resolution is judged by the verdict, whose margin is never
    below the coarser resolution of the two sides.)"""
    if verdict == "baseline":
        return "0.0 %"
    if pct is None or pd.isna(pct):
        return "no host baseline"
    return f"{pct:+.1f} %"


def http_overhead_table(df: pd.DataFrame) -> pd.DataFrame:
    """The columns the HTTP page shows: per side n runs, mean p50/p90 with their 95% CI half-widths, the time
    resolution, each statistic's difference to host as text (see http_vs_host_text) and its verdict."""
    out = df[["variant", "length_bytes", "n_runs", "response_p50_ms", "response_p50_ci95_ms", "response_p90_ms",
              "response_p90_ci95_ms", "host_n_runs", "host_response_p50_ms", "host_response_p90_ms"]].copy()
    out["resolution_us"] = df[["resolution_ms", "host_resolution_ms"]].max(axis=1) * 1000
    for stat, verdict in (("p50", "response_p50_verdict"), ("p90", "verdict")):
        out[f"{stat}_vs_host"] = [http_vs_host_text(p, v, r, h) for p, v, r, h in zip(
            df[f"response_{stat}_overhead_pct"], df[verdict], df["resolution_ms"], df["host_resolution_ms"])]
        out[f"{stat}_verdict"] = df[verdict].fillna("no verdict (n < 2 or no host)")
    return out.reset_index(drop=True)


def response_chart(boxes: pd.DataFrame, outliers: pd.DataFrame, kpis: pd.DataFrame) -> alt.LayerChart:
    """Box plot of response times per payload and CNI / mode (log scale) from http_response_boxes and
    http_response_outliers, the host baseline in grey, a dashed rule at every KPI boundary."""
    variants = list(dict.fromkeys(boxes["variant"]))
    host = boxes.loc[boxes["is_host_baseline"].astype(bool), "variant"]
    color = alt.Color("variant:N", title="CNI / mode", sort=variants,
                      scale=baseline_scale(variants, host.iloc[0] if len(host) else None))
    x = alt.X("length_bytes:O", title="payload (bytes)")
    offset = alt.XOffset("variant:N", sort=variants)
    y_title = "response time (ms, log scale)"
    tooltip = ["variant:N", "length_bytes:O", "n:Q", alt.Tooltip("median:Q", format=".3f"),
               alt.Tooltip("q1:Q", format=".3f"), alt.Tooltip("q3:Q", format=".3f"),
               alt.Tooltip("whisker_lo:Q", format=".3f"), alt.Tooltip("whisker_hi:Q", format=".3f"), "n_outliers:Q"]
    base = alt.Chart(boxes).encode(x=x, xOffset=offset, color=color, tooltip=tooltip)
    layers = [
        base.mark_rule().encode(y=alt.Y("whisker_lo:Q", title=y_title, scale=alt.Scale(type="log")),
                                y2="whisker_hi:Q"),
        base.mark_bar(size=22).encode(y="q1:Q", y2="q3:Q"),
        base.mark_tick(size=22, thickness=2, color="white").encode(y="median:Q"),
    ]
    if not outliers.empty:
        layers.append(alt.Chart(outliers).mark_point(size=14).encode(
            x=x, xOffset=offset, y="response_ms:Q", color=color,
            tooltip=["variant:N", "length_bytes:O", alt.Tooltip("response_ms:Q", format=".3f")]))
    if not kpis.empty:
        k = kpis.groupby("kpi_ms", as_index=False).agg(use_cases=("use_case", lambda s: ", ".join(s)))
        k["label"] = k.apply(lambda r: f"KPI {r.kpi_ms:g} ms ({r.use_cases})", axis=1)
        rules = alt.Chart(k).mark_rule(strokeDash=[6, 4], color="#d62728").encode(
            y="kpi_ms:Q", tooltip=["label:N"])
        text = alt.Chart(k).mark_text(align="left", dx=4, dy=-6, color="#d62728").encode(
            y="kpi_ms:Q", x=alt.value(0), text="label:N")
        layers += [rules, text]
    return alt.layer(*layers).properties(
        height=380, title="Response time per request (box: quartiles; whiskers: 1.5 IQR; points beyond, at most "
                          f"{OUTLIERS_PER_BOX} per box), KPI boundaries dashed")
