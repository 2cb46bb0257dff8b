"""The portal's Emulation vs real page (mart cmp_emulation_vs_real, read by edgebench.results.report.marts.reports):
for every CNI mode measured both on the namespace testbed and on a real cluster under the same conditions, testbed /
real with its 95% interval and the verdict (model holds within +-10%, model differs, inconclusive)."""
from __future__ import annotations

import pandas as pd

from edgebench.plan import catalog
from edgebench.results.report import emulation as emu
from edgebench.results.report.marts.reports import emulation_overhead_frame, emulation_vs_real_frame

EMULATION_EMPTY = (
    "No CNI mode has been measured both on the testbed and on a real cluster under the same conditions yet. "
    "`make lab-local` runs real CNIs on a 3-node kubeadm lab on this machine through the ssh substrate and the same "
    "cells on the testbed, then builds the warehouse; a Pi lab's runs (`-p substrate=ssh`) count too.")
LAB_BANNER = (
    "The real side may come from the local lab (`make lab-local`): real CNI agents, kubelets and kube-proxy, but every "
    "node a set of namespaces of one machine's kernel and cores, linked by veth pairs, not wires. Its runs record the "
    "lab's target and whether the nodes share a kernel (lab, lab_shared_kernel in the warehouse); each real lab is "
    "compared on its own (column real lab), never pooled with a Pi lab.")
VERDICT_STYLE = {"model differs": "background-color: #f8d0d0; color: #8b0000; font-weight: bold",
                 "model holds": "background-color: #d4efd4", "inconclusive": "color: #7f7f7f"}


def emulation_rows(con) -> pd.DataFrame:
    """One row per CNI mode x metric x configuration; `config` names the configuration in one line, `verdict_text`
    carries the size of a difference."""
    df = emulation_vs_real_frame(con)
    if df.empty:
        return df
    df["cni_label"] = df["cni"] + ":" + df["cni_mode"]
    df["config"] = [f"{w} {p or ''} {pa} {pl}" + (f" {int(n)} B" if pd.notna(n) else "")
                    for w, p, pa, pl, n in zip(df["workload"], df["protocol"].where(df["protocol"] != "http", ""),
                                                df["path"], df["placement"], df["length_bytes"])]
    df["n"] = df["testbed_n"].astype(int).astype(str) + " / " + df["real_n"].astype(int).astype(str)
    df["ci"] = [f"{lo:.3f}-{hi:.3f}" if pd.notna(lo) else "-" for lo, hi in zip(df["ratio_ci_low"], df["ratio_ci_high"])]
    df["verdict_text"] = [f"model differs by {d:+.1f}%" if v == "model differs" else v
                          for v, d in zip(df["verdict"], df["difference_pct"])]
    return df


def verdict_counts(df: pd.DataFrame) -> dict[str, int]:
    return {v: int((df["verdict"] == v).sum()) for v in ("model holds", "model differs", "inconclusive")}


def style(df: pd.DataFrame):
    return df.style.apply(lambda col: [VERDICT_STYLE.get(v, "") for v in df.loc[col.index, "verdict"]],
                          subset=["verdict_text"])


def normalized_rows(con) -> pd.DataFrame:
    """cmp_emulation_overhead (each substrate's CNI against its own host, side by side); empty where the warehouse
    has no such mart yet."""
    df = emulation_overhead_frame(con)
    if df.empty:
        return df
    df["cni_label"] = df["cni"] + ":" + df["cni_mode"]
    df["n"] = df["testbed_n"].astype(int).astype(str) + " / " + df["real_n"].astype(int).astype(str)
    for side in ("testbed", "real"):
        df[f"{side}_text"] = [f"{o:+.1f}% [+-{c:.1f}] {v}" if pd.notna(c) else f"{o:+.1f}% {v}"
                              for o, c, v in zip(df[f"{side}_overhead_pct"], df[f"{side}_overhead_ci95_pct"],
                                                 df[f"{side}_verdict"])]
    df["agree"] = [{True: "yes", False: "no"}.get(a, "not both decided") if pd.notna(a) else "not both decided"
                   for a in df["verdicts_agree"]]
    df["added_text"] = [emu.added(r) for r in records(df)]  # each host, and what the mode adds, in the metric's unit
    return df


def records(df: pd.DataFrame) -> list[dict]:
    """The frame's rows as the reading modules take them: dicts, a missing value None (not NaN)."""
    return [{k: (None if isinstance(v, float) and pd.isna(v) else v) for k, v in r.items()}
            for r in df.to_dict("records")]


def fared_lines(df: pd.DataFrame) -> list[str]:
    """How the testbed fared per real lab and metric (results/report/emulation.py, the CLI's lines)."""
    if df.empty:
        return []
    return [emu.sentence(f) for f in emu.fared(records(df))]


def traced_causes(df: pd.DataFrame) -> list[dict]:
    """The traced causes of the disagreements among cmp_emulation_overhead's rows (emulation.traced: the catalog's
    testbed_disagreements), each with the comparisons it explains."""
    return emu.traced(records(df))


def shortfalls(df: pd.DataFrame) -> list[dict]:
    """The metrics among cmp_emulation_overhead's rows that miss a bar of the comparison with a lab although their
    verdicts agree, each with its known cause and what was measured (the catalog's testbed_shortfalls)."""
    if df.empty:
        return []
    out = []
    for f in emu.fared(records(df)):
        if f.get("shortfall"):
            entry = catalog.shortfall(f["workload"], f["metric"])
            out.append({"what": f"{f['workload']} {f['metric']} against {f['real_lab']}", **entry})
    return out


def leaves_out(df: pd.DataFrame) -> dict[str, list[str]]:
    """Per CNI mode on the page: what the testbed does not build of a real cluster running it (the catalog's
    testbed_leaves_out, catalog.leaves_out), so that a disagreement can be read against it."""
    parts = {label: catalog.leaves_out(label) for label in sorted(set(df["cni_label"]))}
    return {label: p for label, p in parts.items() if p}
