"""Errors a front end catches by kind, in a module that imports nothing.

The command line defines its usage error on :class:`RequestError` when it is imported, and
``ranklens --version``, ``--help`` and ``why`` must not load the engine (numpy) to do so.
"""

from __future__ import annotations


class RequestError(ValueError):
    """A request that cannot be answered as given: one line, shown to the user (the CLI exits
    with 2, the MCP server returns a tool error)."""
