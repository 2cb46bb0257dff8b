"""FIXTURE DATA, not measurements: a small synthetic set of run manifests following docs/results-layout.md.

`fixture_objects()` returns {bucket key: bytes}; `write_tree(root)` lays them out in a directory exactly like
the bucket (usable as EDGEBENCH_RAW_ROOT). The expected numbers used by the tests are derived beside the series
they follow. One module per kind of run, every public name re-exported here (`import fixture_manifests as fx`):
  common        the sweep, ids, the manifest of a non-iperf3 run, bucket keys
  conditions    netem scenarios, tuning profiles, validity, resources.json
  iperf3 / dds / http   the runs of each workload (and their raw files)
  tree          the main warehouse's runs and bucket layout (fixture_objects / write_tree), expected counts
  verdicts / intercluster / versions   the separate raw trees (write_verdict_tree, write_intercluster_tree,
                write_version_tree)
"""
from __future__ import annotations

from .common import *  # noqa: F401,F403
from .conditions import *  # noqa: F401,F403
from .dds import *  # noqa: F401,F403
from .http import *  # noqa: F401,F403
from .intercluster import *  # noqa: F401,F403
from .iperf3 import *  # noqa: F401,F403
from .tree import *  # noqa: F401,F403
from .verdicts import *  # noqa: F401,F403
from .versions import *  # noqa: F401,F403
