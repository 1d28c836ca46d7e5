"""Errors a front end catches by kind, in a module that imports nothing.

The command line defines its usage error on :class:`RequestError` when it is imported, and
``ranklens --version``, ``--help`` and ``why`` must not load the engine (numpy) to do so.
"""

from __future__ import annotations


class RequestError(ValueError):
    """A request that cannot be answered as given: one line, shown to the user (the CLI exits
    with 2, the MCP server returns a tool error)."""

    @classmethod
    def of(cls, problems: list[str]) -> RequestError:
        """One error naming every problem of a request, on one line (``problems`` keeps them)."""
        error = cls("; ".join(problems))
        error.problems = list(problems)
        return error

    @property
    def all(self) -> list[str]:
        """Each problem it names (one, unless made by :meth:`of`)."""
        return list(getattr(self, "problems", None) or [str(self)])
