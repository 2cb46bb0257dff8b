"""Writes the *.reconstructed.txt Perftest outputs in this directory from the printf formats of the Perftest source
(rticommunity/rtiperftest; README.md here names the tag, file and lines of every format). The C format strings
below are copied verbatim (concatenated string literals joined); c() turns C conversions into Python ones
(%lu/%llu -> %d, %lf -> %f), so every character outside the numbers is what Perftest prints.

The numbers are synthetic but computed the way Perftest computes them: running mean/std/min/max for latency
intervals (one interval line per received pong), the summary's percentiles picked from the sorted history with
Perftest's indices (count*50/100, ...), throughput intervals once per second with running averages, and summary
rates over the whole measurement time. Run: python3 tests/data/perftest/reconstruct.py
"""

from __future__ import annotations

import math
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent


def c(fmt: str, *args) -> str:
    py = re.sub(r"%([-+ #0]*\d*(?:\.\d+)?)(?:ll|l)?([udf])", lambda m: "%" + m.group(1) + {"u": "d"}.get(
        m.group(2), m.group(2)), fmt)
    return py % args


# --- synthetic measurements ----------------------------------------------------------------------------------------

LENGTH = 100  # bytes, as Perftest prints it (payload + overhead)
# one-way latencies (us) of the pongs the publisher receives; the first one only announces the size (Perftest 4.x
# prints the header and resets its counters on it), the others print one interval line each
PONGS = [71, 67, 52, 45, 58, 61, 49, 88, 55, 47, 544, 51, 53, 50, 62, 48, 57, 46, 59, 70, 52]
CPU_LAT = [10.37, 28.12, 27.84, 25.10, 26.33, 24.91, 26.02, 27.75, 25.44, 26.80, 25.96, 26.11, 25.70, 26.45, 25.88,
           26.03, 25.67, 26.21, 25.93, 26.07]
SER = (0.412, 0.377)  # serialization, deserialization (us)
# subscriber: samples received in each 1 s interval (the first, partial second is not printed), running lost count
RECV = [2046014, 2072794, 1990512, 2101930, 2010221]
LOST = [0, 0, 12, 12, 40]
FIRST_PARTIAL = 1187340  # samples received in the unprinted partial second
MEASURE_US = 5_580_000  # measurement time of the summary (us)
CPU_TP = [12.94, 24.25, 23.80, 24.02, 23.67]


def latency_intervals():
    """(latency, ave, std, min, max, cpu) per interval line."""
    out, hist = [], []
    for lat, cpu in zip(PONGS[1:], CPU_LAT):
        hist.append(lat)
        n = len(hist)
        ave = sum(hist) / n
        std = math.sqrt(sum(x * x for x in hist) / n - ave * ave)
        out.append((lat, ave, std, min(hist), max(hist), cpu))
    return out


def latency_summary():
    """(ave, std, min, max, p50, p90, p99, p9999, p999999, cpu)."""
    hist = sorted(PONGS[1:])
    n = len(hist)
    ave = sum(hist) / n
    std = math.sqrt(sum(x * x for x in hist) / n - ave * ave)
    cpu = sum(CPU_LAT) / len(CPU_LAT)
    return (ave, std, hist[0], hist[-1], hist[n * 50 // 100], hist[n * 90 // 100], hist[n * 99 // 100],
            hist[int(n * (9999.0 / 10000))], hist[int(n * (999999.0 / 1000000))], cpu)


def throughput_intervals():
    """(total, mps, mps_ave, mbps, mbps_ave, lost, lost_pct, cpu) per 1 s interval."""
    out, total, ave_n, mps_ave, bps_ave = [], FIRST_PARTIAL, 0, 0.0, 0.0
    for recv, lost, cpu in zip(RECV, LOST, CPU_TP):
        total += recv
        mps, bps = recv, recv * LENGTH
        ave_n += 1
        mps_ave += (mps - mps_ave) / ave_n
        bps_ave += (bps - bps_ave) / ave_n
        pct = lost * 100.0 / (total + lost)
        out.append((total, mps, mps_ave, bps * 8.0 / 1000.0 / 1000.0, bps_ave * 8.0 / 1000.0 / 1000.0, lost, pct, cpu))
    return out


def throughput_summary():
    """(total, sps_ave, mbps_ave, lost, lost_pct, cpu)."""
    total = FIRST_PARTIAL + sum(RECV)
    lost = LOST[-1]
    return (total, total * 1000000 // MEASURE_US, total * LENGTH * 1000000.0 / MEASURE_US * 8.0 / 1000.0 / 1000.0,
            lost, lost * 100.0 / (total + lost), sum(CPU_TP) / len(CPU_TP))


# --- legacy 2.x and 3.0.1 (srcCpp/perftest_publisher.cxx) ----------------------------------------------------------

def cpu_string(x: float) -> str:
    """srcCpp/CpuMonitor.cxx get_cpu_instant/get_cpu_average: "CPU: " + fixed(2) + "%"."""
    return "CPU: " + f"{x:.2f}" + "%"


def legacy_2x_pub() -> str:  # v2.3.2, -cpu
    s = c("\n\n********** New data length is %d\n", LENGTH)
    for lat, ave, std, mn, mx, cpu in latency_intervals():
        s += c("One way Latency: %6lu us  Ave %6.0lf us  Std %6.1lf us  Min %6lu us  Max %6lu %s\n",
               lat, ave, std, mn, mx, cpu_string(cpu))
    ave, std, mn, mx, p50, p90, p99, p9999, p6, cpu = latency_summary()
    s += c("Length: %5d  Latency: Ave %6.0lf us  Std %6.1lf us  "
           "Min %6lu us  Max %6lu us  50%% %6lu us  90%% %6lu us  99%% %6lu us  99.99%% %6lu us  99.9999%% %6lu us"
           " %s\n",  # one literal in the source, split here only for line length
           LENGTH, ave, std, mn, mx, p50, p90, p99, p9999, p6, cpu_string(cpu))
    return s


def legacy_2x_sub() -> str:  # v2.3.2, -cpu
    s = c("\n\n********** New data length is %d\n", LENGTH)
    for total, mps, mps_ave, mbps, mbps_ave, lost, _pct, cpu in throughput_intervals():
        s += c("Packets: %8llu  Packets/s: %7llu  Packets/s(ave): %7.0lf  "
               "Mbps: %7.1lf  Mbps(ave): %7.1lf  Lost: %llu %s\n",
               total, mps, mps_ave, mbps, mbps_ave, lost, cpu_string(cpu))
    total, sps, mbps, lost, _pct, cpu = throughput_summary()
    s += c("Length: %5d  Packets: %8llu  Packets/s(ave): %7llu  "
           "Mbps(ave): %7.1lf  Lost: %llu %s\n", LENGTH, total, sps, mbps, lost, cpu_string(cpu))
    return s


def legacy_301_pub() -> str:  # 3.0.1, no -cpu: the empty CPU string leaves a trailing space
    s = c("\n\n********** New data length is %d\n", LENGTH)
    for lat, ave, std, mn, mx, _cpu in latency_intervals():
        s += c("One way Latency: %6lu us  Ave %6.0lf us  Std %6.1lf us "
               " Min %6lu us  Max %6lu %s\n", lat, ave, std, mn, mx, "")
    ave, std, mn, mx, p50, p90, p99, p9999, p6, _cpu = latency_summary()
    s += c("Length: %5d  Latency: Ave %6.0lf us  Std %6.1lf us  "
           "Min %6lu us  Max %6lu us  50%% %6lu us  90%% %6lu us"
           " 99%% %6lu us  99.99%% %6lu us  99.9999%% %6lu us %s\n",
           LENGTH, ave, std, mn, mx, p50, p90, p99, p9999, p6, "")
    s += c("Serialization/Deserialization: %0.3f us / %0.3f us / TOTAL: "
           "%0.3f us\n", SER[0], SER[1], SER[0] + SER[1])
    return s


def legacy_301_sub() -> str:  # 3.0.1, -cpu
    s = c("\n\n********** New data length is %d\n", LENGTH)
    for total, mps, mps_ave, mbps, mbps_ave, lost, pct, cpu in throughput_intervals():
        s += c("Packets: %8llu  Packets/s: %7llu  Packets/s(ave): %7.0lf  "
               "Mbps: %7.1lf  Mbps(ave): %7.1lf  Lost: %5llu (%1.2f%%) %s\n",
               total, mps, mps_ave, mbps, mbps_ave, lost, pct, cpu_string(cpu))
    total, sps, mbps, lost, pct, cpu = throughput_summary()
    s += c("Length: %5d  Packets: %8llu  Packets/s(ave): %7llu  "
           "Mbps(ave): %7.1lf  Lost: %5llu (%1.2f%%) %s\n", LENGTH, total, sps, mbps, lost, pct, cpu_string(cpu))
    return s


# --- 3.3 CSV, nano-clock build (srcCppCommon/PerftestPrinter.cxx, PERFT_TIME_UNIT "ns") ---------------------------

def csv_33_nano_noprint_pub() -> str:  # 3.3 built with RTI_PERFTEST_NANO_CLOCK, -noPrint: values in ns
    u = "ns"
    ave, std, mn, mx, p50, p90, p99, p9999, p6, _cpu = latency_summary()
    s = "\nOne-way Latency Summary:\n"
    s += ("Length (Bytes)" ", Ave (" + u + "), Std (" + u + "), Min (" + u + "), Max (" + u + "), 50% (" + u +
          "), 90% (" + u + "), 99% (" + u + "), 99.99% (" + u + "), 99.9999% (" + u + ")") + "\n"
    k = 1000  # the clock counts ns: the synthetic us values times 1000 (plus a few ns)
    s += c("%14d,%9.0lf,%9.1lf,%9lu,%9lu,%9lu,%9lu,%9lu,%12lu,%14lu", LENGTH, ave * k + 3, std * k, mn * k + 1,
           mx * k + 9, p50 * k + 2, p90 * k + 5, p99 * k + 9, p9999 * k + 9, p6 * k + 9) + "\n"
    return s


# --- 4.x (srcCppCommon/PerftestPrinter.cxx at 4.3) -----------------------------------------------------------------

def csv_4_pub() -> str:  # -cpu
    s = c("\nIntervals One-Way Latency for %d Bytes:\n", LENGTH)
    s += "Length (Bytes)" ", Latency (μs), Ave (μs), Std (μs), Min (μs), Max (μs)" + ", CPU (%)" + "\n"
    for lat, ave, std, mn, mx, cpu in latency_intervals():
        s += c("%14d,%13lu,%9.0lf,%9.1lf,%9lu,%9lu", LENGTH, lat, ave, std, mn, mx) + c(",%8.2f", cpu) + "\n"
    ave, std, mn, mx, p50, p90, p99, p9999, p6, cpu = latency_summary()
    s += "\nOne-way Latency Summary:\n"
    s += ("Sample Size (Bytes)" ", Ave (μs), Std (μs), Min (μs), Max (μs), 50% (μs), 90% (μs),"
          " 99% (μs), 99.99% (μs), 99.9999% (μs)") + ", CPU (%)" + "\n"
    s += c("%19d,%9.0lf,%9.1lf,%9lu,%9lu,%9lu,%9lu,%9lu,%12lu,%14lu", LENGTH, ave, std, mn, mx, p50, p90, p99,
           p9999, p6) + c(",%8.2f", cpu) + "\n"
    return s


def csv_4_sub() -> str:
    s = c("\nInterval Throughput for %d Bytes:\n", LENGTH)
    s += ("Length (Bytes), Total Samples,  Samples/s,"
          " Avg Samples/s,     Mbps,  Avg Mbps"
          ", Lost Samples, Lost Samples (%)") + "\n"
    for total, mps, mps_ave, mbps, mbps_ave, lost, pct, _cpu in throughput_intervals():
        s += c("%14d,%14llu,%11llu,%14.0lf,%9.1lf,%10.1lf, %12llu, %16.2lf", LENGTH, total, mps, mps_ave, mbps,
               mbps_ave, lost, pct) + "\n"
    total, sps, mbps, lost, pct, _cpu = throughput_summary()
    s += "\nThroughput Summary:\n"
    s += ("Sample Size (Bytes), Total Samples, Avg Samples/s,"
          "    Avg Mbps, Lost Samples, Lost Samples (%)") + "\n"
    s += c("%19d,%14llu,%14.0llu,%12.1lf, %12llu, %16.2lf", LENGTH, total, sps, mbps, lost, pct) + "\n"
    return s


def csv_4_noprint_pub() -> str:  # -noPrint -serializationTime: no title, no intervals
    ave, std, mn, mx, p50, p90, p99, p9999, p6, _cpu = latency_summary()
    s = ("Sample Size (Bytes)" ", Ave (μs), Std (μs), Min (μs), Max (μs), 50% (μs), 90% (μs),"
         " 99% (μs), 99.99% (μs), 99.9999% (μs)")
    s += ", Serialization (μs), Deserialization (μs), Total (μs)" + "\n"
    s += c("%19d,%9.0lf,%9.1lf,%9lu,%9lu,%9lu,%9lu,%9lu,%12lu,%14lu", LENGTH, ave, std, mn, mx, p50, p90, p99,
           p9999, p6) + c(",%19.3f,%21.3f,%11.3f", SER[0], SER[1], SER[0] + SER[1]) + "\n"
    return s


def csv_4_noprint_sub() -> str:  # -noPrint -cpu
    total, sps, mbps, lost, pct, cpu = throughput_summary()
    s = ("Sample Size (Bytes), Total Samples, Avg Samples/s,"
         "    Avg Mbps, Lost Samples, Lost Samples (%)") + ", CPU (%)" + "\n"
    s += c("%19d,%14llu,%14.0llu,%12.1lf, %12llu, %16.2lf", LENGTH, total, sps, mbps, lost, pct) + c(",%8.2f", cpu)
    return s + "\n"


def legacy_4_pub() -> str:  # -outputFormat legacy -cpu
    s = c("\n\n********** New data length is %d\n", LENGTH)
    for lat, ave, std, mn, mx, cpu in latency_intervals():
        s += c("One-Way Latency: %6lu μs" " Ave %6.0lf μs" " Std %6.1lf μs" " Min %6lu μs" " Max %6lu μs",
               lat, ave, std, mn, mx) + c(" CPU %1.2f (%%)", cpu) + "\n"
    ave, std, mn, mx, p50, p90, p99, p9999, p6, cpu = latency_summary()
    s += c("Length: %5d" " Latency: Ave %6.0lf μs" " Std %6.1lf μs" " Min %6lu μs" " Max %6lu μs" " 50%% %6lu μs"
           " 90%% %6lu μs" " 99%% %6lu μs" " 99.99%% %6lu μs" " 99.9999%% %6lu μs",
           LENGTH, ave, std, mn, mx, p50, p90, p99, p9999, p6) + c(" CPU %1.2f (%%)", cpu) + "\n"
    return s


def json_4_pub() -> str:  # -outputFormat json -cpu
    s = "{\"perftest\":\n\t[\n\t\t{\n"
    s += c("\t\t\t\"length\":%d,\n", LENGTH) + "\t\t\t\"intervals\":[\n"
    for i, (lat, ave, std, mn, mx, cpu) in enumerate(latency_intervals()):
        s += "," if i else ""
        s += c("\n\t\t\t\t{\n"
               "\t\t\t\t\t\"latency\": %lu,\n"
               "\t\t\t\t\t\"latency_ave\": %1.2lf,\n"
               "\t\t\t\t\t\"latency_std\": %1.2lf,\n"
               "\t\t\t\t\t\"latency_min\": %lu,\n"
               "\t\t\t\t\t\"latency_max\": %lu", lat, ave, std, mn, mx)
        s += c(",\n\t\t\t\t\t\"CPU\": %1.2f", cpu) + "\n\t\t\t\t}"
    ave, std, mn, mx, p50, p90, p99, p9999, p6, cpu = latency_summary()
    s += "\n\t\t\t],\n"
    s += c("\t\t\t\"summary\":{\n"
           "\t\t\t\t\"latency_ave\": %1.2lf,\n"
           "\t\t\t\t\"latency_std\": %1.2lf,\n"
           "\t\t\t\t\"latency_min\": %lu,\n"
           "\t\t\t\t\"latency_max\": %lu,\n"
           "\t\t\t\t\"latency_50\": %lu,\n"
           "\t\t\t\t\"latency_90\": %lu,\n"
           "\t\t\t\t\"latency_99\": %lu,\n"
           "\t\t\t\t\"latency_99.99\": %lu,\n"
           "\t\t\t\t\"latency_99.9999\": %lu", ave, std, mn, mx, p50, p90, p99, p9999, p6)
    s += c(",\n\t\t\t\t\"CPU\": %1.2f", cpu) + "\n\t\t\t}\n\t\t}"
    return s + "\n\t]\n}\n"


def json_4_sub(intervals: bool = True) -> str:
    s = "{\"perftest\":\n\t[\n\t\t{\n"
    s += c("\t\t\t\"length\":%d,\n", LENGTH)
    if intervals:
        s += "\t\t\t\"intervals\":[\n"
        for i, (total, mps, mps_ave, mbps, mbps_ave, lost, pct, _cpu) in enumerate(throughput_intervals()):
            s += "," if i else ""
            s += c("\n\t\t\t\t{\n"
                   "\t\t\t\t\t\"length\": %d,\n"
                   "\t\t\t\t\t\"packets\": %llu,\n"
                   "\t\t\t\t\t\"packets/s\": %llu,\n"
                   "\t\t\t\t\t\"packets/s_ave\": %1.2lf,\n"
                   "\t\t\t\t\t\"mbps\": %1.1lf,\n"
                   "\t\t\t\t\t\"mbps_ave\": %1.1lf,\n"
                   "\t\t\t\t\t\"lost\": %llu,\n"
                   "\t\t\t\t\t\"lost_percent\": %1.2lf", LENGTH, total, mps, mps_ave, mbps, mbps_ave, lost, pct)
            s += "\n\t\t\t\t}"
        s += "\t\t\t],\n"
    total, sps, mbps, lost, pct, _cpu = throughput_summary()
    s += c("\t\t\t\"summary\":{\n"
           "\t\t\t\t\"packets\": %llu,\n"
           "\t\t\t\t\"packets/sAve\": %llu,\n"
           "\t\t\t\t\"mbpsAve\": %1.1lf,\n"
           "\t\t\t\t\"lost\": %llu,\n"
           "\t\t\t\t\"lostPercent\": %1.2lf", total, sps, mbps, lost, pct)
    s += "\n\t\t\t}\n\t\t}"
    return s + "\n\t]\n}\n"


FILES = {
    "perftest-2.3.2-legacy-cpu-pub.reconstructed.txt": legacy_2x_pub,
    "perftest-2.3.2-legacy-cpu-sub.reconstructed.txt": legacy_2x_sub,
    "perftest-3.0.1-legacy-pub.reconstructed.txt": legacy_301_pub,
    "perftest-3.0.1-legacy-cpu-sub.reconstructed.txt": legacy_301_sub,
    "perftest-3.3-csv-nanoclock-noprint-pub.reconstructed.txt": csv_33_nano_noprint_pub,
    "perftest-4.3-csv-cpu-pub.reconstructed.txt": csv_4_pub,
    "perftest-4.3-csv-sub.reconstructed.txt": csv_4_sub,
    "perftest-4.3-csv-noprint-serialization-pub.reconstructed.txt": csv_4_noprint_pub,
    "perftest-4.3-csv-noprint-cpu-sub.reconstructed.txt": csv_4_noprint_sub,
    "perftest-4.3-legacy-cpu-pub.reconstructed.txt": legacy_4_pub,
    "perftest-4.3-json-cpu-pub.reconstructed.txt": json_4_pub,
    "perftest-4.3-json-sub.reconstructed.txt": json_4_sub,
    "perftest-4.3-json-noprint-sub.reconstructed.txt": lambda: json_4_sub(intervals=False),
}

if __name__ == "__main__":
    for name, make in FILES.items():
        (HERE / name).write_text(make(), encoding="utf-8")
        print(name)
