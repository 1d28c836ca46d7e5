"""``python -m ranklens``: the same as the ``ranklens`` command."""

from ranklens.cli import main

raise SystemExit(main())
