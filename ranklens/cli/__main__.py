"""``python -m ranklens.cli``: the same as ``python -m ranklens``."""

from . import main

raise SystemExit(main())
