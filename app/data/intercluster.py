"""Tables and charts of the portal's inter-cluster tools page: HTTP across two clusters joined by an inter-cluster
tool against the same runs in one cluster (`none`); its queries are edgebench.results.report.marts.http."""
from __future__ import annotations

import altair as alt
import pandas as pd

from edgebench.plan.netem import display_order
from edgebench.results.report.labels import NONE_LABEL, intercluster_label
from edgebench.results.report.marts.http import intercluster_problem_rows, intercluster_rows

from .common import baseline_scale

LIMIT_COLOR = "#d62728"  # as the KPI boundaries on the HTTP page
IMPLEMENTATION_TEXT = {
    "kernel": "the tool's data path built as kernel state on the testbed (the devices, routes and SAs it configures), "
              "without its control plane",
    "emulated": "a model of the tool's data plane on the testbed, not the tool",
    "installed": "the tool itself, installed on real clusters",
}


def intercluster_netem_order(names) -> list[str]:
    """The x axis: none, lcl, edg2.5, edg5, edg10, edg15, edg20 (the catalog's order), then any other by name."""
    return display_order(names)


def intercluster_comparison(con, substrate: str, **filters) -> pd.DataFrame:
    """cmp_intercluster_vs_none rows of one substrate and the chosen conditions, every payload and netem scenario:
    the tools and the `none` baseline of the conditions they were measured under (baseline rows without a tool are
    left out). Adds `label` (none (one cluster) / tool:mode (emulated|kernel)), CI bounds for error bars and
    `n_text`; ordered by payload, netem scenario (netem_order), baseline first."""
    df = intercluster_rows(con, substrate, **filters)
    if df.empty:
        return df.assign(label=pd.Series(dtype=str))
    df["label"] = [intercluster_label(e, i) for e, i in zip(df["intercluster"], df["intercluster_implementation"])]
    df["ci_low_ms"] = df["response_p50_ms"] - df["response_p50_ci95_ms"].fillna(0)
    df["ci_high_ms"] = df["response_p50_ms"] + df["response_p50_ci95_ms"].fillna(0)
    df["n_text"] = "n=" + df["n_runs"].astype(str)
    rank = {n: i for i, n in enumerate(intercluster_netem_order(df["netem_scenario"]))}
    df["_netem_rank"] = df["netem_scenario"].map(rank)
    df = df.sort_values(["length_bytes", "_netem_rank", "is_baseline", "label"], ascending=[True, True, False, True])
    return df.drop(columns="_netem_rank").reset_index(drop=True)


def intercluster_series(df: pd.DataFrame) -> list[str]:
    """The series in legend order: the baseline first, then the tools by name."""
    labels = sorted(set(df["label"]) - {NONE_LABEL})
    return ([NONE_LABEL] if NONE_LABEL in set(df["label"]) else []) + labels


def intercluster_models(df: pd.DataFrame) -> dict[str, str]:
    """label -> what was modelled (intercluster_model), for every emulated tool in df."""
    emulated = df[df["is_emulated"]]
    return {label: (model if isinstance(model, str) and model.strip() else "(the run did not record what was modelled)")
            for label, model in zip(emulated["label"], emulated["intercluster_model"])}


def intercluster_limits(df: pd.DataFrame) -> pd.DataFrame:
    """The two response-time limits carried by the mart's rows: limit_ms, label."""
    first = df.iloc[0]
    return pd.DataFrame({"limit_ms": [float(first["vehicle_assist_limit_ms"]),
                                      float(first["remote_maintenance_limit_ms"])],
                         "label": [f"vehicle assist {first['vehicle_assist_limit_ms']:g} ms",
                                   f"remote maintenance {first['remote_maintenance_limit_ms']:g} ms"]})


def intercluster_chart(df: pd.DataFrame, log: bool = True) -> alt.LayerChart:
    """One payload: mean of per-run medians per netem scenario (x, catalog order) and tool (side by side), 95% CI
    error bars, n above each bar, the none baseline in the baseline grey, the two limits as dashed rules."""
    labels = intercluster_series(df)
    order = intercluster_netem_order(df["netem_scenario"])
    y_scale = alt.Scale(type="log") if log else alt.Scale(zero=True)
    y_title = "mean of run medians (ms" + (", log scale)" if log else ")")
    base = alt.Chart(df).encode(
        x=alt.X("netem_scenario:N", sort=order, title="netem scenario", axis=alt.Axis(labelAngle=0)),
        xOffset=alt.XOffset("label:N", sort=labels),
        color=alt.Color("label:N", title="inter-cluster tool", sort=labels, scale=baseline_scale(labels, NONE_LABEL),
                        legend=alt.Legend(labelLimit=320)),
    )
    tooltip = [alt.Tooltip("label:N", title="inter-cluster"), "netem_scenario:N",
               alt.Tooltip("n_runs:Q", title="n runs"),
               alt.Tooltip("response_p50_ms:Q", format=".3f", title="mean of run medians ms"),
               alt.Tooltip("response_p50_ci95_ms:Q", format=".3f", title="± 95% CI ms"),
               alt.Tooltip("request_p95_ms:Q", format=".3f", title="p95 ms (all requests)"),
               alt.Tooltip("verdict:N")]
    points = base.mark_point(filled=True, size=90, opacity=1).encode(
        y=alt.Y("response_p50_ms:Q", title=y_title, scale=y_scale), tooltip=tooltip)
    errors = base.mark_errorbar(ticks={"size": 10}, thickness=1.5).encode(
        y=alt.Y("ci_low_ms:Q", title=y_title, scale=y_scale), y2="ci_high_ms:Q")
    n_text = base.mark_text(dy=-10, fontSize=10).encode(y=alt.Y("ci_high_ms:Q", scale=y_scale), text="n_text:N")
    lim = intercluster_limits(df)
    rules = alt.Chart(lim).mark_rule(strokeDash=[6, 4], color=LIMIT_COLOR).encode(
        y=alt.Y("limit_ms:Q", scale=y_scale), tooltip=["label:N"])
    rule_text = alt.Chart(lim).mark_text(align="left", dx=4, dy=-6, color=LIMIT_COLOR).encode(
        y=alt.Y("limit_ms:Q", scale=y_scale), x=alt.value(0), text="label:N")
    return alt.layer(points, errors, n_text, rules, rule_text).properties(
        height=400, title="HTTP response time across inter-cluster tools (mean of per-run medians, 95% CI), limits "
                          "dashed")


def intercluster_values_table(df: pd.DataFrame) -> pd.DataFrame:
    """What the chart would show, as a table (one netem scenario: a chart with one x value is a table)."""
    return df[["netem_scenario", "label", "n_runs", "n_requests", "response_p50_ms", "response_p50_ci95_ms",
               "request_median_ms", "request_p95_ms"]].reset_index(drop=True)


def _pm(value, ci, unit: str, digits: int) -> str:
    """"+1.234 ± 0.456 ms"; "–" without a value (no baseline); the value alone, marked, without an interval."""
    if value is None or pd.isna(value):
        return "–"
    if ci is None or pd.isna(ci):
        return f"{value:+.{digits}f} {unit} (no CI: n < 2)"
    return f"{value:+.{digits}f} ± {ci:.{digits}f} {unit}"


def intercluster_diff_table(df: pd.DataFrame) -> pd.DataFrame:
    """Differences to none per netem scenario and tool: n per side, the means with their 95% CIs, tool - none in ms
    and % with the difference's 95% CI (as text), and the verdict."""
    out = df[["netem_scenario", "label", "intercluster_implementation", "n_runs", "response_p50_ms",
              "response_p50_ci95_ms", "none_n_runs", "none_response_p50_ms", "none_response_p50_ci95_ms"]].copy()
    out["vs_none_ms"] = ["0 (baseline)" if b else _pm(d, c, "ms", 3) for b, d, c in zip(
        df["is_baseline"], df["response_p50_diff_ms"], df["response_p50_diff_ci95_ms"])]
    out["vs_none_pct"] = ["0 (baseline)" if b else _pm(d, c, "%", 1) for b, d, c in zip(
        df["is_baseline"], df["response_p50_diff_pct"], df["response_p50_diff_ci95_pct"])]
    out["verdict"] = df["verdict"]
    return out.reset_index(drop=True)


VERDICT_STYLE = {
    "inconclusive": "background-color: #fff3b0; font-weight: bold",
    "n < 2": "background-color: #fff3b0",
    "equivalent": "background-color: #e8f4e8",
    "worse": "background-color: #f8d0d0",
    "better": "background-color: #d4efd4",
    "baseline": "color: #7f7f7f",
}


def intercluster_style_verdicts(table: pd.DataFrame):
    """The table with its verdict cells marked (inconclusive highlighted, so it is never read as a result)."""
    return table.style.map(lambda v: VERDICT_STYLE.get(v, ""), subset=["verdict"])


def intercluster_kpi_table(df: pd.DataFrame) -> pd.DataFrame:
    """Per netem scenario and tool: percent of requests beyond each limit (errors count as beyond) and runs whose
    median is beyond it."""
    out = df[["netem_scenario", "label", "n_runs", "n_requests"]].copy()
    out["pct_requests_over_vehicle_assist"] = df["share_requests_over_vehicle_assist"] * 100
    out["pct_runs_median_over_vehicle_assist"] = df["share_runs_median_over_vehicle_assist"] * 100
    out["pct_requests_over_remote_maintenance"] = df["share_requests_over_remote_maintenance"] * 100
    out["pct_runs_median_over_remote_maintenance"] = df["share_runs_median_over_remote_maintenance"] * 100
    return out.reset_index(drop=True)


def intercluster_problem_runs(con, substrate: str, **filters) -> pd.DataFrame:
    """Runs across a tool that failed, could not be carried (unsupported) or had error responses."""
    df = intercluster_problem_rows(con, substrate, **filters)
    df.insert(1, "label", [intercluster_label(e, i) for e, i in zip(df["intercluster"],
                                                                   df["intercluster_implementation"])])
    return df.drop(columns=["intercluster", "intercluster_implementation"])
