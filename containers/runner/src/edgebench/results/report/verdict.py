"""The verdict: the one definition of how edgebench judges a configuration (a) against its baseline (b).

Every comparison a user sees (the CLI summary, `edgebench report`, the portal, the regression cards, the Papers
claims, the bench rows) is judged by this rule. The warehouse applies it in SQL (analytics/macros/verdict.sql); this
module is the same rule in Python, for what is judged outside the warehouse, and tests/warehouse/test_verdict.py proves the
two agree on every comparison row of the fixture warehouse.

The interval. diff = mean(a) - mean(b) with its 95% interval diff +- ci95:
  paired  when both sides ran in the same interleaved rounds (one run of each per round): the mean of the per-round
          differences, t(n - 1) * sd(differences) / sqrt(n); drift between rounds cancels;
  pooled  paired, where several configurations are each paired with the same baseline runs (every CNI mode of a
          sweep against the host's runs of one workload variant): each comparison's spread of the paired
          differences is shrunk toward the group's (a moderated t, Smyth 2004; pooled_spreads() below), with
          POOL_PRIOR_DF degrees of freedom for the group's share;
  welch   otherwise: Welch's interval, Welch-Satterthwaite degrees of freedom rounded down.
t(df) is exact up to 30 degrees of freedom, then the value at the lower end of each step (never too narrow).

The margin. Each metric family has a practical margin, +-margin_pct of the baseline's mean (MARGINS_PCT, default
5 %), and never less than the measurement's resolution where it has one (a load generator that reports whole
microseconds cannot tell 0.4 us apart).

The verdict, in this order:
  'n < 2'         a side has fewer than 2 runs: there is no interval (inconclusive; 2 runs a side would start one)
  'equivalent'    the whole interval lies within +-margin: two one-sided tests, each at 2.5 % (the 95% interval
                  is shown, so what is drawn is what is judged), even when the interval excludes 0
  'better'        the interval excludes 0 and reaches beyond the margin, in the metric's good direction
  'worse'         the same in the bad direction
  'inconclusive'  otherwise: the interval holds 0 and reaches beyond the margin. runs_to_decide estimates how many
                  more runs a side would decide it if the mean difference and spread stay: the interval narrows as
                  1 / sqrt(n), and it decides once it is narrower than the larger of |diff| (then it excludes 0) and
                  margin - |diff| (then it lies within the margin).
Differences within 1e-9 of the baseline's magnitude are rounding noise.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

# two-sided 95% Student-t critical values for 1..30 degrees of freedom (analytics/macros/t_critical_95.sql)
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
        2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
        2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)

# metric family -> practical margin in % of the baseline mean; the dbt var verdict_margins_pct holds the same
# (analytics/dbt_project.yml; tests/warehouse/test_verdict.py checks that they agree)
MARGINS_PCT: dict[str, float] = {
    "throughput": 5.0,   # iperf3 / DDS Mbit/s, samples/s
    "latency": 5.0,      # DDS latency percentiles, HTTP response times, ping RTT
    "cpu": 5.0,          # CPU % of agents, workloads and nodes
    "memory": 5.0,       # RSS
    "emulation": 10.0,   # the testbed's emulation against the real CNI ("model holds" within +-10 %)
}
DEFAULT_MARGIN_PCT = 5.0
# a run is flagged low_cpu_headroom when in some second less than this share of the machine's CPU was idle; the dbt var
# cpu_headroom_floor_pct holds the same (int_runs__cpu_headroom; tests/warehouse/test_warehouse_headroom.py checks they agree)
CPU_HEADROOM_FLOOR_PCT = 10.0
MAX_RUNS_TO_DECIDE = 1000
# the weight, in degrees of freedom, of the group's pooled spread in a pooled comparison's spread (d0 of Smyth's
# moderated t); the dbt var verdict_pool_prior_df holds the same (every warehouse build checks that they agree)
POOL_PRIOR_DF = 4  # beyond this the estimate is reported as "more than 1000"

# how every page and table explains a verdict column (one sentence, the same everywhere)
RULE_HELP = ("equivalent: the whole 95% interval of the difference lies within the margin (±5 % of the baseline "
             "by default); better / worse: it excludes 0 and reaches beyond the margin; inconclusive: neither, with "
             "about how many more runs per side would decide; n < 2: a side has fewer than 2 runs. One rule "
             "everywhere (docs/verdicts.md).")

DECISIVE = ("equivalent", "better", "worse")
VERDICTS = DECISIVE + ("inconclusive", "n < 2")


def margin_pct(family: str) -> float:
    return MARGINS_PCT.get(family, DEFAULT_MARGIN_PCT)


_UNIT_FAMILY = {"Mbit/s": "throughput", "us": "latency", "ms": "latency", "%": "cpu", "MB": "memory"}


def family_of_unit(unit: str | None) -> str:
    """The metric family of a unit (long tables of several metrics; macros/verdict.sql's unit_family)."""
    return _UNIT_FAMILY.get(unit or "", "throughput")


def t95(df: float | None) -> float | None:
    """t(0.975, floor(df)); None when df < 1."""
    if df is None or df < 1:
        return None
    d = math.floor(df)
    if d <= 30:
        return _T95[d - 1]
    return 2.042 if d <= 40 else 2.021 if d <= 60 else 2.000 if d <= 120 else 1.980


def welch_df(n_a: int, sd_a: float, n_b: int, sd_b: float) -> float:
    va, vb = sd_a ** 2 / n_a, sd_b ** 2 / n_b
    if va + vb > 0:
        # rounded down, but a whole number that floating point put a hair below it stays whole (3.9999999999999996)
        return math.floor((va + vb) ** 2 / (va ** 2 / (n_a - 1) + vb ** 2 / (n_b - 1)) + 1e-9)
    return n_a + n_b - 2


def welch_ci95(n_a: int | None, sd_a: float | None, n_b: int | None, sd_b: float | None) -> float | None:
    """Half-width of Welch's 95% interval of mean_a - mean_b; None when a side has fewer than 2 runs."""
    if not n_a or not n_b or n_a < 2 or n_b < 2 or sd_a is None or sd_b is None:
        return None
    return t95(welch_df(n_a, sd_a, n_b, sd_b)) * math.sqrt(sd_a ** 2 / n_a + sd_b ** 2 / n_b)


def paired_ci95(n_pairs: int | None, sd_diff: float | None) -> float | None:
    """Half-width of the 95% interval of the mean of n paired differences; None below 2 pairs."""
    if not n_pairs or n_pairs < 2 or sd_diff is None:
        return None
    return t95(n_pairs - 1) * sd_diff / math.sqrt(n_pairs)


def margin_abs(baseline: float, pct: float, resolution: float | None = None) -> float:
    return max(pct / 100 * abs(baseline), resolution or 0.0)


def decide(diff: float, ci95: float | None, n_a: int, n_b: int, baseline: float, higher_is_better: bool,
           pct: float, resolution: float | None = None) -> str:
    """The verdict of a - b (see the module's docstring)."""
    if n_a is None or n_b is None or n_a < 2 or n_b < 2 or ci95 is None:
        return "n < 2"
    margin, eps = margin_abs(baseline, pct, resolution), 1e-9 * abs(baseline)
    if diff - ci95 >= -margin - eps and diff + ci95 <= margin + eps:
        return "equivalent"
    if abs(diff) > ci95 + eps:
        return "better" if (diff > 0) == bool(higher_is_better) else "worse"
    return "inconclusive"


def runs_to_decide(verdict: str, diff: float, ci95: float | None, n: int, baseline: float, pct: float,
                   resolution: float | None = None) -> int | None:
    """About how many more runs per side would decide an inconclusive comparison (None otherwise, or when more
    than MAX_RUNS_TO_DECIDE would be needed). n = runs per side (the smaller side; pairs when paired)."""
    if verdict != "inconclusive" or not n:
        return None
    margin = margin_abs(baseline, pct, resolution)
    target = max(abs(diff), margin - abs(diff))
    if target <= 0:
        return None
    ratio = ci95 / target
    needed = math.ceil(n * (ratio * ratio))
    if needed > MAX_RUNS_TO_DECIDE:
        return None
    return max(needed - n, 1)


@dataclass(frozen=True)
class Comparison:
    """One judged comparison of a against its baseline b."""
    verdict: str
    method: str                  # 'paired', 'pooled' (paired, its spread pooled: pooled()) or 'welch'
    n_a: int
    n_b: int
    mean_a: float | None
    mean_b: float | None
    diff: float | None
    ci95: float | None
    margin_pct: float
    runs_to_decide: int | None
    sd_diff: float | None = None     # paired: the sd of the per-round differences (before any pooling)
    df: float | None = None          # the degrees of freedom of the interval's t
    higher_is_better: bool | None = None
    resolution: float | None = None

    @property
    def diff_pct(self) -> float | None:
        return None if not self.mean_b or self.diff is None else self.diff / abs(self.mean_b) * 100

    @property
    def ci95_pct(self) -> float | None:
        return None if not self.mean_b or self.ci95 is None else self.ci95 / abs(self.mean_b) * 100

    @property
    def is_decisive(self) -> bool:
        return self.verdict in DECISIVE

    def text(self) -> str:
        return describe(self.verdict, self.diff_pct, self.ci95_pct, self.n_a, self.n_b, self.margin_pct,
                        self.runs_to_decide, self.method)


def _mean_sd(xs: Sequence[float]) -> tuple[float, float]:
    m = sum(xs) / len(xs)
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else 0.0
    return m, sd


def compare(a: Sequence[float], b: Sequence[float], *, higher_is_better: bool, pct: float = DEFAULT_MARGIN_PCT,
            rounds_a: Sequence[object] | None = None, rounds_b: Sequence[object] | None = None,
            resolution: float | None = None) -> Comparison:
    """Judge per-run values a against baseline values b. With rounds (one label per run), the runs are paired by
    round when every round holds exactly one run of each side and there are 2 or more rounds; else Welch."""
    n_a, n_b = len(a), len(b)
    mean_a = _mean_sd(a)[0] if n_a else None
    mean_b = _mean_sd(b)[0] if n_b else None
    method, ci, sd_diff, df = "welch", None, None, None
    pairs = _pairs(a, b, rounds_a, rounds_b)
    if pairs is not None and len(pairs) >= 2:
        method = "paired"
        diffs = [x - y for x, y in pairs]
        diff, sd_diff = _mean_sd(diffs)
        ci, df = paired_ci95(len(diffs), sd_diff), len(diffs) - 1
        n = len(diffs)
    else:
        diff = None if mean_a is None or mean_b is None else mean_a - mean_b
        if n_a >= 2 and n_b >= 2:
            (_, sd_a), (_, sd_b) = _mean_sd(a), _mean_sd(b)
            ci, df = welch_ci95(n_a, sd_a, n_b, sd_b), welch_df(n_a, sd_a, n_b, sd_b)
        n = min(n_a, n_b)
    if diff is None:
        return Comparison("n < 2", method, n_a, n_b, mean_a, mean_b, None, None, pct, None,
                          higher_is_better=higher_is_better, resolution=resolution)
    verdict = decide(diff, ci, n_a, n_b, mean_b, higher_is_better, pct, resolution)
    return Comparison(verdict, method, n_a, n_b, mean_a, mean_b, diff, ci, pct,
                      runs_to_decide(verdict, diff, ci, n, mean_b, pct, resolution), sd_diff, df,
                      higher_is_better, resolution)


def pooled_spreads(members: Sequence[tuple[int | None, float | None, float | None]],
                   prior_df: float = POOL_PRIOR_DF) -> list[tuple[float | None, float | None]]:
    """The spreads of comparisons that share one baseline's runs, each shrunk toward the group's (Smyth's moderated
    t with a fixed prior weight): members = (n pairs, sd of the paired differences, baseline mean) per comparison;
    returns (sd, degrees of freedom) per member, to use in place of (sd, n - 1).

    The group's spread is the pooled variance of the paired differences relative to the baseline's mean (CNI modes
    compared with one host run per round spread alike in relative terms, not in absolute ones): v0 = sum((n - 1) *
    (sd / mean)^2) / df0, df0 = sum(n - 1), over the members with 2 or more pairs and a non-zero mean. A member's
    spread is then sqrt((prior_df * v0 * mean^2 + (n - 1) * sd^2) / (prior_df + n - 1)), on min(prior_df + n - 1,
    df0) degrees of freedom: never more than the group holds. A group with fewer than two such members gives back
    (sd, n - 1) unchanged, so a comparison alone is judged as plain paired."""
    usable = [(n, sd, m) for n, sd, m in members if n is not None and n >= 2 and sd is not None and m]
    df0 = sum(n - 1 for n, _, _ in usable)
    if len(usable) < 2:
        return [(sd, (n - 1) if n else None) for n, sd, _ in members]
    v0 = sum((n - 1) * (sd / m) ** 2 for n, sd, m in usable) / df0
    out: list[tuple[float | None, float | None]] = []
    for n, sd, m in members:
        if n is None or n < 2 or sd is None or not m:
            out.append((sd, (n - 1) if n else None))
            continue
        out.append((math.sqrt((prior_df * v0 * m * m + (n - 1) * sd * sd) / (prior_df + n - 1)),
                    min(prior_df + n - 1, df0)))
    return out


def pooled(comparisons: Sequence[Comparison], prior_df: float = POOL_PRIOR_DF) -> list[Comparison]:
    """Comparisons that share one baseline's runs, judged again with their spreads pooled (pooled_spreads): the paired
    ones of a group of two or more come back with method 'pooled', the rest unchanged."""
    paired = [i for i, c in enumerate(comparisons) if c.method == "paired" and c.sd_diff is not None
              and c.diff is not None and c.mean_b]
    if len(paired) < 2:
        return list(comparisons)
    spreads = pooled_spreads([(min(comparisons[i].n_a, comparisons[i].n_b), comparisons[i].sd_diff,
                               comparisons[i].mean_b) for i in paired], prior_df)
    out = list(comparisons)
    for i, (sd, df) in zip(paired, spreads):
        c = comparisons[i]
        n = min(c.n_a, c.n_b)
        ci = t95(df) * sd / math.sqrt(n)
        verdict = decide(c.diff, ci, c.n_a, c.n_b, c.mean_b, bool(c.higher_is_better), c.margin_pct, c.resolution)
        out[i] = Comparison(verdict, "pooled", c.n_a, c.n_b, c.mean_a, c.mean_b, c.diff, ci, c.margin_pct,
                            runs_to_decide(verdict, c.diff, ci, n, c.mean_b, c.margin_pct, c.resolution),
                            c.sd_diff, df, c.higher_is_better, c.resolution)
    return out


def _pairs(a, b, rounds_a, rounds_b) -> list[tuple[float, float]] | None:
    if rounds_a is None or rounds_b is None or len(rounds_a) != len(a) or len(rounds_b) != len(b):
        return None
    if len(set(rounds_a)) != len(rounds_a) or set(rounds_a) != set(rounds_b) or len(set(rounds_b)) != len(rounds_b):
        return None  # the rounds do not match one to one: Welch
    by_b = dict(zip(rounds_b, b))
    return [(x, by_b[r]) for r, x in zip(rounds_a, a)]


def describe(verdict: str | None, diff_pct: float | None, ci95_pct: float | None, n_a: int | None,
             n_b: int | None, pct: float | None, runs: int | None = None, method: str | None = None) -> str:
    """A verdict as one phrase, e.g. 'worse by 25.3 % [18.1, 32.5] (n 3/3, margin +-5 %)'."""
    n = f"n {n_a if n_a is not None else '?'}/{n_b if n_b is not None else '?'}"
    parts = [n] + ([f"margin ±{pct:g} %"] if pct is not None else []) + ([method] if method else [])
    tail = f" ({', '.join(parts)})"
    interval = ("" if diff_pct is None or ci95_pct is None else
                f"{diff_pct:+.1f} % [{diff_pct - ci95_pct:+.1f}, {diff_pct + ci95_pct:+.1f}]")
    if verdict in ("better", "worse"):
        return f"{verdict} by {abs(diff_pct):.1f} % [{diff_pct - ci95_pct:+.1f}, {diff_pct + ci95_pct:+.1f}]{tail}" \
            if diff_pct is not None and ci95_pct is not None else f"{verdict}{tail}"
    if verdict == "equivalent":
        return f"equivalent, {interval}{tail}" if interval else f"equivalent{tail}"
    if verdict == "inconclusive":
        more = (f"about {runs} more run{'s' if runs != 1 else ''} per side would decide" if runs else
                f"more than {MAX_RUNS_TO_DECIDE} runs per side would be needed")
        return f"inconclusive, {interval}; {more}{tail}" if interval else f"inconclusive; {more}{tail}"
    if verdict == "n < 2":
        return f"inconclusive: fewer than 2 runs on a side{tail}"
    return verdict or "-"
