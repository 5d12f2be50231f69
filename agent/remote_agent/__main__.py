"""``python -m remote_agent``: the same as the ``remote-agent`` command."""

from __future__ import annotations

import sys

from .cli import main

sys.exit(main())
