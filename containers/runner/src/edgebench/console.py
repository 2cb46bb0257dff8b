"""The CLI's consoles: stdout for results and progress, stderr for errors."""

import sys

from rich.console import Console

out = Console(soft_wrap=True, width=None if sys.stdout.isatty() else 160)  # logs and pipes get full rows
err = Console(stderr=True, soft_wrap=True)
