"""The sweep spec: an Argo Workflow whose spec.arguments.parameters carry the matrix.

The same file is submitted with `argo submit` and run here with `edgebench sweep FILE --local`. Everything is
validated before any side effect: bad input raises SpecError (one message, exit code 2).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import yaml

from . import catalog
from .errors import SpecError

SUBSTRATES = ("local", "kind", "ssh")
DISTRIBUTIONS = ("k3s", "k0s", "microk8s", "kubeadm", "kind")
_SIZE = re.compile(r"^(\d{1,12})([KkMm]?)$")
_INT = re.compile(r"^[+-]?\d{1,12}$")  # 12 digits: beyond any sane count, far below Python's int() digit limit
_RATE = re.compile(r"^(\d+(?:\.\d+)?)([KMG]?)$")
_SWEEP_ID = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")


def parse_size(text: str) -> int:
    """iperf3-style size: 1400, 128K, 1M (binary multiples, as iperf3 reads them)."""
    m = _SIZE.match(text.strip())
    if not m:
        raise ValueError(f"{text!r} is not a size (examples: 1400, 128K, 1M)")
    return int(m.group(1)) * {"": 1, "k": 1024, "m": 1024 * 1024}[m.group(2).lower()]


def _json_list(name: str, value: str) -> list[str]:
    try:
        data = json.loads(value)
    except ValueError as exc:  # JSONDecodeError, or an integer literal beyond Python's digit limit
        raise SpecError(
            f"parameter {name!r} must be a JSON list of strings, e.g. [\"a\",\"b\"]; got {_short(value)} "
            f"({getattr(exc, 'msg', exc)})"
        ) from None
    if not isinstance(data, list) or not all(isinstance(x, str) for x in data):
        raise SpecError(f"parameter {name!r} must be a JSON list of strings; got {value!r}")
    if not data:
        raise SpecError(f"parameter {name!r} must not be empty")
    dupes = sorted({x for x in data if data.count(x) > 1})
    if dupes:
        raise SpecError(f"parameter {name!r} lists {', '.join(dupes)} more than once")
    return data


def _short(value: object, limit: int = 60) -> str:
    """repr of a user value, cut so that a 5,000-character input still gives a one-line message."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(str(value))} characters)"


def _int(name: str, value: str, minimum: int) -> int:
    text = str(value).strip()
    if not _INT.match(text):
        raise SpecError(f"parameter {name!r} must be an integer of at most 12 digits; got {_short(value)}")
    n = int(text)
    if n < minimum:
        raise SpecError(f"parameter {name!r} must be >= {minimum}; got {n}")
    return n


def _choice(name: str, value: str, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise SpecError(f"parameter {name!r} must be one of {', '.join(choices)}; got {value!r}")
    return value


def _sizes(name: str, value: str, lo: int, hi: int) -> list[int]:
    out = []
    for item in _json_list(name, value):
        try:
            n = parse_size(item)
        except ValueError as exc:
            raise SpecError(f"parameter {name!r}: {exc}") from None
        if not lo <= n <= hi:
            raise SpecError(f"parameter {name!r}: {item} is outside {lo}..{hi} bytes")
        out.append(n)
    return out


def _cnis(name: str, value: str) -> list[catalog.CniMode]:
    modes = [catalog.resolve_cni(e) for e in _json_list(name, value)]
    keys = [m.key for m in modes]
    dupes = sorted({k for k in keys if keys.count(k) > 1})
    if dupes:
        raise SpecError(f"parameter {name!r} names {', '.join(dupes)} twice (a CNI without mode means its default mode)")
    return modes


def _workloads(name: str, value: str) -> list[tuple[str, str]]:
    known = {k: v for k, v in catalog.workloads().items() if "protocols" in v}
    out = []
    for item in _json_list(name, value):
        tool, _, variant = item.partition(":")
        if tool not in known:
            raise SpecError(f"unknown workload {tool!r} in {item!r}; known workloads: {', '.join(known)}")
        variants = known[tool]["protocols"]
        for v in [variant] if variant else variants:
            if v not in variants:
                raise SpecError(f"unknown variant {v!r} of workload {tool!r}; choices: {', '.join(variants)}")
            if (tool, v) in out:
                raise SpecError(f"parameter {name!r} names {tool}:{v} twice")
            out.append((tool, v))
    return out


def _paths(name: str, value: str) -> list[tuple[str, str]]:  # iperf3-paths and http-paths
    allowed = catalog.workloads()["iperf3"]["paths"]
    out = []
    for item in _json_list(name, value):
        if item not in allowed:
            raise SpecError(f"parameter {name!r}: unknown path {item!r}; choices: {', '.join(allowed)}")
        path, _, placement = item.partition(":")
        out.append((path, placement))
    return out


def _subset(choices: tuple[str, ...]) -> Callable[[str, str], list[str]]:
    def parse(name: str, value: str) -> list[str]:
        items = _json_list(name, value)
        for item in items:
            if item not in choices:
                raise SpecError(f"parameter {name!r}: unknown value {item!r}; choices: {', '.join(choices)}")
        return items
    return parse


def _ints(name: str, value: str, lo: int, hi: int) -> list[int]:
    out = []
    for item in _json_list(name, value):
        if not _INT.match(item) or not lo <= int(item) <= hi:
            raise SpecError(f"parameter {name!r}: {_short(item)} is not an integer in {lo}..{hi}")
        out.append(int(item))
    return out


def _bitrate(name: str, value: str) -> str:
    if not _RATE.match(value.strip()):
        raise SpecError(f"parameter {name!r} must be a bitrate such as 0 (unlimited), 500M or 1G; got {value!r}")
    return value.strip()


def _sweep_id(name: str, value: str) -> str:
    if value and not _SWEEP_ID.match(value):
        raise SpecError(
            f"parameter {name!r} must be lower-case letters, digits and '-', at most 63 characters; got {value!r}"
        )
    return value


def _tuning(name: str, value: str) -> list[str]:
    from . import tuning

    return _subset(tuple(tuning.profile_names()))(name, value)


def _netem_custom(name: str, value: str) -> dict[str, dict]:
    try:
        data = json.loads(value or "{}")
    except ValueError as exc:  # JSONDecodeError, or an integer literal beyond Python's digit limit
        raise SpecError(f"parameter {name!r} must be a JSON object name -> {{delay_ms, jitter_ms, loss_pct, "
                        f"rate_mbit}}; got {_short(value)} ({getattr(exc, 'msg', exc)})") from None
    if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
        raise SpecError(f"parameter {name!r} must be a JSON object of objects; got {value!r}")
    from . import netem

    for scenario, spec_ in data.items():
        netem.resolve(scenario, custom=spec_)  # validates
    return data


def _netem(name: str, value: str) -> list[str]:
    return _json_list(name, value)  # resolved against the catalog and netem-custom in from_parameters


def _target(name: str, value: str) -> str:
    if not _SWEEP_ID.match(value):
        raise SpecError(f"parameter {name!r} must be a DNS label (lower-case letters, digits, '-'); got {value!r}")
    return value


@dataclass(frozen=True)
class Param:
    name: str
    parse: Callable[[str, str], Any]
    help: str


PARAMS: dict[str, Param] = {
    p.name: p
    for p in [
        Param("substrate", lambda n, v: _choice(n, v, SUBSTRATES), "where cells run: local (netns testbed), kind, ssh"),
        Param("distribution", lambda n, v: _choice(n, v, DISTRIBUTIONS), "Kubernetes distribution (ignored on local)"),
        Param("cnis", _cnis, "CNI entries, name or name:mode"),
        Param("workloads", _workloads, "workload entries, tool or tool:variant (iperf3:tcp, iperf3:udp)"),
        Param("repetitions", lambda n, v: _int(n, v, 1), "repetitions of every run"),
        Param("duration", lambda n, v: _int(n, v, 1), "seconds per measurement"),
        Param("iperf3-lengths", lambda n, v: _sizes(n, v, 1, 1024 * 1024), "TCP buffer sizes (-l)"),
        Param("iperf3-udp-lengths", lambda n, v: _sizes(n, v, 16, 65507), "UDP datagram sizes (-l)"),
        Param("iperf3-udp-bitrate", _bitrate, "UDP target bitrate (-b), 0 = unlimited"),
        Param("iperf3-paths", _paths, "path:placement entries"),
        Param("dds-payloads", lambda n, v: _sizes(n, v, 8, 65000), "DDS sample payload sizes (bytes)"),
        Param("dds-reliability", _subset(("reliable", "best-effort")), "DDS reliability QoS"),
        Param("dds-transports", _subset(("unicast", "multicast")), "DDS data transport"),
        Param("dds-subscribers", lambda n, v: _ints(n, v, 1, 16), "subscribers per publisher (throughput mode)"),
        Param("dds-placements", _subset(("same-node", "cross-node")), "where subscribers run relative to the publisher"),
        Param("dds-security", _subset(("none", "auth-encrypt")), "DDS Security: none or authentication + encryption"),
        Param("dds-duration", lambda n, v: _int(n, v, 1), "seconds per DDS run"),
        Param("http-payloads", lambda n, v: _sizes(n, v, 0, 16 * 1024 * 1024), "HTTP request payload sizes (bytes)"),
        Param("http-requests", lambda n, v: _int(n, v, 1), "sequential requests per HTTP run (one connection)"),
        Param("http-paths", _paths, "path:placement entries for HTTP"),
        Param("tuning", _tuning, "node tuning profiles (a cell dimension)"),
        Param("netem", _netem, "link condition scenarios (a cell dimension)"),
        Param("netem-custom", _netem_custom, "custom link scenarios: JSON object name -> {delay_ms, jitter_ms, loss_pct, rate_mbit}"),
        Param("netem-scope", lambda n, v: _choice(n, v, ("all", "inter-group")), "all node traffic, or only between node groups"),
        Param("sweep-id", _sweep_id, "results namespace; empty = derived from the parameters"),
        Param("target", _target, "target cluster / node inventory name (Argo semaphore key)"),
    ]
}

DEFAULTS: dict[str, str] = {
    "substrate": "local",
    "distribution": "k3s",
    "repetitions": "3",
    "duration": "5",
    "workloads": '["iperf3:tcp","iperf3:udp"]',
    "sweep-id": "",
    "target": "lab",
    "tuning": '["default_settings"]',
    "netem": '["none"]',
    "netem-custom": "{}",
    "netem-scope": "all",
    **{k: json.dumps(v) if isinstance(v, list) else str(v)
       for w in ("iperf3", "dds", "http") for k, v in catalog.workloads()[w]["defaults"].items()},
}


@dataclass(frozen=True)
class Sweep:
    """A validated sweep: raw string parameters (as Argo sees them) and their parsed values."""

    source: str
    raw: dict[str, str]
    values: dict[str, Any]

    @property
    def sweep_id(self) -> str:
        if self.values["sweep-id"]:
            return self.values["sweep-id"]
        digest = hashlib.sha256(
            json.dumps({k: v for k, v in self.raw.items() if k != "sweep-id"}, sort_keys=True).encode()
        ).hexdigest()
        return f"{self.values['substrate']}-{digest[:10]}"


def parse_overrides(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise SpecError(f"-p takes NAME=VALUE (as argo submit -p does); got {_short(item)}")
        if name.strip() in out:
            raise SpecError(f"-p {name.strip()} is given twice; give each parameter once")
        out[name.strip()] = value
    return out


def load(path: str | Path, overrides: dict[str, str] | None = None, substrate: str | None = None) -> Sweep:
    """Read and validate a sweep file; overrides are `-p` values, substrate forces e.g. `local`."""
    p = Path(path)
    try:
        doc = yaml.safe_load(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SpecError(f"sweep file {p} does not exist") from None
    except yaml.YAMLError as exc:
        raise SpecError(f"sweep file {p} is not valid YAML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise SpecError(f"sweep file {p} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except ValueError as exc:  # e.g. an integer beyond Python's digit limit, raised while YAML builds it
        raise SpecError(f"sweep file {p}: a value cannot be read ({exc})") from None
    except OSError as exc:
        raise SpecError(f"cannot read sweep file {p}: {exc.strerror}") from None
    if not isinstance(doc, dict) or doc.get("kind") != "Workflow" or not str(doc.get("apiVersion", "")).startswith(
        "argoproj.io/"
    ):
        raise SpecError(f"{p} is not an Argo Workflow (apiVersion argoproj.io/v1alpha1, kind Workflow)")
    spec_ = doc.get("spec")
    arguments = spec_.get("arguments") if isinstance(spec_, dict) else None
    params = (arguments.get("parameters") if isinstance(arguments, dict) else None) or []
    if not isinstance(params, list):
        raise SpecError(f"{p}: spec.arguments.parameters must be a list of {{name, value}}")
    raw: dict[str, str] = dict(DEFAULTS)
    seen: set[str] = set()
    for entry in params:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise SpecError(f"{p}: every spec.arguments.parameters entry needs a name; got {entry!r}")
        if entry["name"] not in PARAMS:
            raise SpecError(f"{p}: unknown parameter {entry['name']!r}; known: {', '.join(PARAMS)}")
        if "value" not in entry:
            raise SpecError(f"{p}: parameter {entry['name']!r} has no value")
        if entry["name"] in seen:
            raise SpecError(f"{p}: parameter {entry['name']!r} is listed twice in spec.arguments.parameters "
                            "(Argo would take one silently); keep one")
        seen.add(entry["name"])
        raw[entry["name"]] = str(entry["value"])
    for name, value in (overrides or {}).items():
        if name not in PARAMS:
            raise SpecError(f"unknown parameter {name!r} in -p; known: {', '.join(PARAMS)}")
        raw[name] = value
    if substrate:
        raw["substrate"] = substrate
    return from_parameters(raw, source=str(p))


def from_parameters(raw: dict[str, str], source: str = "parameters") -> Sweep:
    """Validate a complete set of string parameters (defaults filled in) into a Sweep."""
    raw = {**DEFAULTS, **raw}
    unknown = sorted(set(raw) - set(PARAMS))
    if unknown:
        raise SpecError(f"{source}: unknown parameter(s) {', '.join(unknown)}; known: {', '.join(PARAMS)}")
    if "cnis" not in raw:
        raise SpecError(f"{source}: parameter 'cnis' is required")
    values = {name: PARAMS[name].parse(name, raw[name]) for name in PARAMS if name in raw}
    from . import netem

    for scenario in values["netem"]:
        netem.resolve(scenario, custom=values["netem-custom"].get(scenario))  # unknown names: SpecError
    if (values["substrate"] == "kind") != (values["distribution"] == "kind"):
        raise SpecError(f"{source}: substrate kind and distribution kind go together (kind clusters are both); got "
                        f"substrate={values['substrate']!r}, distribution={values['distribution']!r}")
    return Sweep(source=source, raw=raw, values=values)
