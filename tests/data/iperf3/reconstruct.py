"""Write the *.reconstructed.json fixtures: what iperf3 versions we cannot run here (3.7, 3.9, 3.10) print, derived
from real iperf 3.12 captures in this directory by the differences the iperf3 sources show (esnet/iperf at the tags
named; line numbers are of src/iperf_api.c at that tag unless said otherwise; see README.md and
docs/tool-formats/iperf3.md).

    python tests/data/iperf3/reconstruct.py        # rewrites the reconstructed files next to this script

Every number is kept exactly as the 3.12 capture printed it: the formulas behind the fields that are kept are the
same in 3.7-3.12, only which objects are emitted differs. The output is laid out as cJSON_Print does (tabs), and
duplicate keys, which cJSON writes, are kept (objects are lists of pairs here).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


class Raw(str):
    """A JSON number kept as the text the capture has."""


class Arr(list):
    """A JSON array. A JSON object is a plain list of [key, value] pairs, so duplicate keys survive."""


def load_doc(path: Path) -> list:
    decoder = json.JSONDecoder(object_pairs_hook=lambda pairs: [[k, v] for k, v in pairs],
                               parse_float=Raw, parse_int=Raw)

    def parse_array(*args, **kwargs):
        values, end = json.decoder.JSONArray(*args, **kwargs)
        return Arr(values), end

    decoder.parse_array = parse_array
    decoder.scan_once = json.scanner.py_make_scanner(decoder)
    return decoder.decode(path.read_text())


def dump(value, depth: int = 0) -> str:
    """As cJSON_Print lays it out: one tab per level, a tab after the colon, arrays on one line."""
    if isinstance(value, Raw):
        return str(value)
    if isinstance(value, Arr):
        return "[" + ", ".join(dump(v, depth + 1) for v in value) + "]"
    if isinstance(value, list):
        if not value:
            return "{\n" + "\t" * depth + "}"
        items = ["\t" * (depth + 1) + json.dumps(k) + ":\t" + dump(v, depth + 1) for k, v in value]
        return "{\n" + ",\n".join(items) + "\n" + "\t" * depth + "}"
    return json.dumps(value)


def get(obj: list, key: str):
    for k, v in obj:
        if k == key:
            return v
    raise KeyError(key)


def drop(obj: list, *keys: str) -> None:
    obj[:] = [p for p in obj if p[0] not in keys]


def rename(obj: list, old: str, new: str) -> None:
    for p in obj:
        if p[0] == old:
            p[0] = new


def as_version(doc: list, version: str) -> None:
    """start.version (iperf_client_api.c: 3.7 l.470, 3.9 l.470, 3.10 l.492); test_start has no target_bitrate
    before 3.11 (3.7 l.660, 3.9 l.752, 3.10 l.819 vs 3.12 l.842)."""
    start = get(doc, "start")
    for p in start:
        if p[0] == "version":
            p[1] = f"iperf {version}"
    drop(get(start, "test_start"), "target_bitrate")


def udp_sums_before_3_11(end: list) -> None:
    """UDP end section before 3.11: only `sum` (3.9 l.3557, 3.10 l.3714); sum_sent / sum_received for UDP came
    with 3.11 (l.3864-3865; esnet/iperf PR #1174)."""
    drop(end, "sum_sent", "sum_received")


def build() -> dict[str, str]:
    """{file name: content} of every reconstructed fixture."""
    out: dict[str, str] = {}

    def write(doc, name: str) -> None:
        out[name] = dump(doc) + "\n"

    # 3.10 and 3.9 UDP, forward, with loss: end.sum's bytes/bits_per_second are the sender's
    for version in ("3.10", "3.9"):
        doc = load_doc(HERE / "iperf3-3.12-udp-loss-client.json")
        as_version(doc, version)
        udp_sums_before_3_11(get(doc, "end"))
        write(doc, f"iperf3-{version}-udp-loss-client.reconstructed.json")

    # 3.10 UDP --reverse: the client is the receiver, and its own byte count is not in end.sum either
    doc = load_doc(HERE / "iperf3-3.12-reverse-udp-client.json")
    as_version(doc, "3.10")
    udp_sums_before_3_11(get(doc, "end"))
    write(doc, "iperf3-3.10-reverse-udp-client.reconstructed.json")

    # 3.10 client and 3.10 server, --get-server-output: the server prints its end section before it has the
    # client's results (iperf_server_api.c 3.10 l.202 before l.205), so its UDP sum has bytes 0 (the sender's bytes,
    # which it does not know yet): no receiver rate anywhere
    doc = load_doc(HERE / "iperf3-3.12-udp-loss-get-server-output-client.json")
    as_version(doc, "3.10")
    udp_sums_before_3_11(get(doc, "end"))
    server = get(doc, "server_output_json")
    as_version(server, "3.10")
    udp_sums_before_3_11(get(server, "end"))
    write(doc, "iperf3-3.10-udp-loss-get-server-output-client.reconstructed.json")

    # 3.10 client against a 3.12 server with --get-server-output: the server's own sum_received has the receiver
    doc = load_doc(HERE / "iperf3-3.12-udp-loss-get-server-output-client.json")
    as_version(doc, "3.10")
    udp_sums_before_3_11(get(doc, "end"))
    write(doc, "iperf3-3.10-client-3.12-server-udp-loss-get-server-output-client.reconstructed.json")

    # 3.7 TCP: no snd_wnd in intervals (3.7 l.79 of print_interval_results vs 3.10), no max_snd_wnd in the
    # end streams' sender object (3.7 l.3135 vs 3.10 l.3508); sums as in 3.12 (3.7 l.3289, l.3321)
    doc = load_doc(HERE / "iperf3-3.12-tcp-netns-client.json")
    as_version(doc, "3.7")
    for interval in get(doc, "intervals"):
        for stream in get(interval, "streams"):
            drop(stream, "snd_wnd")
    for stream in get(get(doc, "end"), "streams"):
        drop(get(stream, "sender"), "max_snd_wnd")
    write(doc, "iperf3-3.7-tcp-client.reconstructed.json")

    # 3.10 --bidir TCP: both directions' sums go out under the same names, sum_sent and sum_received twice in end
    # (3.10 l.3662/3694, once per pass of the current_mode loop), and "sum" twice per interval; the
    # *_bidir_reverse names came with 3.11 (l.3377, l.3781-3783; esnet/iperf issue #952)
    doc = load_doc(HERE / "iperf3-3.12-bidir-tcp-client.json")
    as_version(doc, "3.10")
    for interval in get(doc, "intervals"):
        rename(interval, "sum_bidir_reverse", "sum")
    end = get(doc, "end")
    rename(end, "sum_sent_bidir_reverse", "sum_sent")
    rename(end, "sum_received_bidir_reverse", "sum_received")
    write(doc, "iperf3-3.10-bidir-tcp-client.reconstructed.json")
    return out


def main() -> int:
    for name, text in build().items():
        (HERE / name).write_text(text)
        print("wrote", name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
