"""How results are named wherever they are shown (terminal summaries and the portal), so a label means the same
everywhere."""
from __future__ import annotations

# intercluster_implementation -> what follows the entry in a label; an emulated tool is a model of its data plane
# and is never shown under the tool's bare name
_IMPLEMENTATION_SUFFIX = {"baseline": "", "kernel": " (kernel)", "emulated": " (emulated)", "installed": ""}
NONE_LABEL = "none (one cluster)"


def intercluster_label(entry: str, implementation: str | None) -> str:
    """'none (one cluster)' for the baseline; else the entry (tool:mode) with ' (emulated)' for a model of the
    tool's data plane, ' (kernel)' for its data path built as kernel state without the tool's control plane, and
    nothing for the installed tool. An unknown implementation is named, never dropped."""
    if entry == "none":
        return NONE_LABEL
    suffix = _IMPLEMENTATION_SUFFIX.get(implementation or "", f" ({implementation})" if implementation else "")
    return f"{entry}{suffix}"
