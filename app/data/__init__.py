"""The portal's queries, one module per page (marts only), with what they share in common.py. Pages and
ui.query() reach them as data.<name>."""

from .common import *  # noqa: F401,F403
from .common import _BASELINE_VALUES, _baseline_first, _filter_values, _substrates, _values_of, _where, _where_in  # noqa: F401
from .cni_datapaths import *  # noqa: F401,F403
from .dds import *  # noqa: F401,F403
from .dds import _DDS_RUNS  # noqa: F401
from .http import *  # noqa: F401,F403
from .http import _us  # noqa: F401
from .intercluster import *  # noqa: F401,F403
from .link_conditions import *  # noqa: F401,F403
from .link_conditions import _NETEM_METRICS  # noqa: F401
from .overview import *  # noqa: F401,F403
from .papers import *  # noqa: F401,F403
from .regressions import *  # noqa: F401,F403
from .resources import *  # noqa: F401,F403
from .tuning import *  # noqa: F401,F403
from .distributions import *  # noqa: F401,F403
