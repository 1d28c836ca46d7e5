"""``ranklens mcp``: the Model Context Protocol server (stdio), built on the official SDK.

One process serves one root with one long-lived engine (:class:`core.agent.AgentService`);
this module only turns its four operations into MCP tools: argument schemas and descriptions
written for an agent, progress notifications while the index is built, and every failure as a
tool error (``is_error``), after which the server goes on serving.
"""

# No `from __future__ import annotations`: the SDK reads these signatures at run time.
import asyncio
import contextlib
import json
import os
import stat
import sys
import time
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.stdio import stdio_server
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field, ValidationError

from . import __version__
from .core.agent import (
    DEFAULT_SPAN_CHARS,
    DEFAULT_TEXT_BUDGET,
    MAX_SEARCH_TOP_K,
    MAX_TEXT_BUDGET,
    REFRESH_WAIT_S,
    AgentError,
    AgentService,
)

INSTRUCTIONS = (
    "ranklens searches one code repository with several retrievers at once (BM25, SQLite FTS5, "
    "static embeddings, tree-sitter symbols) and fuses their rankings. Start with `search`: each "
    "hit gives path and lines, its text, and why it ranks (agreement: how many retrievers found "
    "it; confidence: high when retrievers of different kinds agree; provenance: which). Read "
    "more with `read_span`; follow the code from a hit with `related` (its callers, callees and "
    "tests), or look for code like it with `search(like=...)`. Keep a search result (it is a handoff document) and pass it to "
    "`check_handoff` later to learn which spans changed. `index_status` says what the index "
    "holds. The index updates itself when files change. Paths are relative to the repository "
    "root; ignored and secret-looking files are never served."
)

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def _expected(prop: dict | None) -> str | None:
    """What an argument's JSON Schema accepts, in words ("an integer from 1 to 100"); None when
    it says nothing simple."""
    if not prop:
        return None
    choices = [p for p in prop.get("anyOf", [prop]) if p.get("type") != "null"]
    if len(choices) != 1:
        return None
    kind = choices[0]
    low, high = kind.get("minimum"), kind.get("maximum")
    words = {
        "integer": "an integer",
        "number": "a number",
        "string": "a string",
        "boolean": "true or false",
        "object": "a JSON object",
    }.get(kind.get("type"))
    if kind.get("type") == "array":
        items = kind.get("items", {}).get("type")
        words = f"a list of {items}s" if items in ("string", "integer", "number") else "a list"
    if kind.get("type") == "object" and kind.get("additionalProperties", {}) == {"type": "number"}:
        words = 'an object of numbers, e.g. {"dense": 1.5}'
    if words is None:
        return None
    if low is not None and high is not None:
        return f"{words} from {low:g} to {high:g}"
    if low is not None:
        return f"{words} >= {low:g}"
    return words


def _shown(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def argument_errors(error: ValidationError, schema: dict) -> str:
    """The arguments a tool refused, on one line and by their MCP names ("top_k must be an
    integer from 1 to 100, got 0; query is required"), instead of pydantic's multi-line text
    with a documentation link."""
    properties = schema.get("properties", {})
    parts = []
    for err in error.errors(include_url=False):
        loc = [str(part) for part in err.get("loc", ())]
        name = ".".join(loc) or "the arguments"
        if err.get("type") == "missing":
            parts.append(f"{name} is required")
            continue
        expected = _expected(properties.get(loc[0])) if len(loc) == 1 else None
        if expected is None:
            message = str(err.get("msg", "is not valid"))
            expected = message.removeprefix("Input should be ").removeprefix("input should be ")
            if expected == message:
                parts.append(f"{name}: {message}, got {_shown(err.get('input'))}")
                continue
        parts.append(f"{name} must be {expected}, got {_shown(err.get('input'))}")
    return "; ".join(dict.fromkeys(parts))


class _Server(MCPServer):
    """The SDK's server, with argument errors said on one line (:func:`argument_errors`):
    every bad argument of a call, those the schema refuses and those a tool's own checks
    (``checks``: tool name -> a function of the arguments the schema let through, returning
    its complaints) refuse."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.checks: dict[str, Any] = {}

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Context | None = None):
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ValidationError):
                raise
            tool = self._tool_manager.get_tool(name)
            schema = tool.parameters if tool is not None else {}
            said = argument_errors(cause, schema)
            check = self.checks.get(name)
            if check is not None and isinstance(arguments, dict):
                refused = {str(err["loc"][0]) for err in cause.errors(include_url=False) if err.get("loc")}
                rest = {k: v for k, v in arguments.items() if k not in refused}
                more = await anyio.to_thread.run_sync(check, rest)
                said = "; ".join(dict.fromkeys([*said.split("; "), *more]))
            raise ToolError(f"Error executing tool {name}: {said}") from cause


def _result(data: dict) -> CallToolResult:
    # The JSON as text for models, the same object as structured content for programs.
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(data, ensure_ascii=False, separators=(",", ":")))],
        structured_content=data,
    )


async def _call(service: AgentService, ctx: Context | None, fn, *args, **kwargs) -> CallToolResult:
    """Bring the index up to date (waiting a little, reporting progress), then run ``fn`` on a
    worker thread. An AgentError becomes a tool error; the server keeps serving."""

    def at_once():
        # The usual call: nothing to wait for, so it is answered on the same worker thread
        # (one hop from the event loop, not two).
        job = service.prepare()
        if job is not None:
            return job, None, None
        notes = service.freshness_notes(None)
        return None, notes, fn(*args, **kwargs)

    try:
        job, notes, data = await anyio.to_thread.run_sync(at_once)
        if job is not None:
            # A first build is waited for until its first step commits, and not again while it
            # goes on (the answer says it is partial); an update only briefly, then the last
            # generation answers with a note.
            first = not service.engine.ready or service.engine.view.partial is not None
            deadline = None if first else time.monotonic() + REFRESH_WAIT_S
            sent = None
            while not job.done.is_set() and not (first and service.engine.ready):
                if ctx is not None:
                    progress = job.fraction()
                    if progress != sent:
                        sent = progress
                        await ctx.report_progress(*progress)
                wait = 0.2 if deadline is None else min(0.2, deadline - time.monotonic())
                if wait <= 0:
                    break
                await anyio.to_thread.run_sync(job.done.wait, wait)
            if ctx is not None and sent is not None:
                # The last notification says how the wait ended: the update is done (progress
                # reaches the total), or it goes on in the background while this call answers.
                await ctx.report_progress(*service.final_progress(job, sent[0]))
            notes = service.freshness_notes(job)
            data = await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))
    except AgentError as exc:
        raise ToolError(str(exc)) from None
    if notes:
        data["notes"] = notes + data.get("notes", [])
    return _result(data)


def build_server(service: AgentService) -> MCPServer:
    """The MCP server of one :class:`AgentService` (its five tools)."""
    server = _Server("ranklens", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")
    from .core.navigate import related_problems

    server.checks = {"search": service.search_problems, "related": related_problems}

    @server.tool(annotations=READ_ONLY, structured_output=False)
    async def search(
        query: Annotated[
            str,
            Field(
                description="What you are looking for: an identifier (`parse_config`), words from the code, or a question (`where are passwords hashed`)."
            ),
        ],
        top_k: Annotated[int, Field(ge=1, le=MAX_SEARCH_TOP_K, description="How many hits to return.")] = 10,
        retrievers: Annotated[
            list[str] | None,
            Field(
                description="Retrievers to fuse (default: bm25, fts5, dense, symbols, plus deep where `ranklens index --deep` turned it on for this repository). One name gives that retriever's own ranking. Also: hybrid, lexical+ctx."
            ),
        ] = None,
        weights: Annotated[
            dict[str, float] | None,
            Field(
                description='RRF weight per retriever, e.g. {"dense": 1.5}; unnamed ones keep the repository\'s tuned or default weights.'
            ),
        ] = None,
        k: Annotated[
            float | None,
            Field(description="RRF constant (default: tuned, else 5). Small k lets each retriever's top ranks decide."),
        ] = None,
        path: Annotated[
            str | None, Field(description="Only paths matching this glob (fnmatch, `*` crosses `/`), e.g. `src/*.py`.")
        ] = None,
        language: Annotated[
            str | None, Field(description="Only chunks of this language: python, go, rust, typescript, markdown ...")
        ] = None,
        priors: Annotated[
            bool,
            Field(
                description="Demote tests, examples, README/CHANGELOG-like and non-code files unless the query asks for them."
            ),
        ] = True,
        max_chars: Annotated[
            int,
            Field(
                ge=0,
                le=MAX_TEXT_BUDGET,
                description="Character budget for the hits' text, spent best hit first; later hits come without text (read them with read_span). 0: no text.",
            ),
        ] = DEFAULT_TEXT_BUDGET,
        like: Annotated[
            str | None,
            Field(
                description="More like this: `PATH:LINE` (or `PATH:NAME`) of a unit; search with its names and code instead of `query` (which may then be empty). The unit itself is left out."
            ),
        ] = None,
        ctx: Context = None,
    ) -> CallToolResult:
        """Search the repository's code and docs; the best places to read, best first.

        Returns a handoff document: `results` each with `path`, `start_line`..`end_line`
        (1-based, inclusive), `context` (breadcrumb: path > Class > method), `score`,
        `agreement` (how many of the `retrievers` that answered found it), `confidence`
        (high: retrievers of different kinds agree; medium; low: one lexical or structural
        retriever alone), `provenance` (which found it), `sha256` of the span's text and the
        `text` itself (until `max_chars` is spent; `text_truncated` when cut). The first hit of
        a file may carry `alternatives`: the file's next best places (lines, `names`, `score`,
        `why`), worth a `read_span` when the hit is the right file but not the right code. Also `notes`
        (e.g. the index was being updated), `query_ms` and `generation`. Keep the result: pass
        it to `check_handoff` later to learn whether its spans changed.
        """
        return await _call(
            service,
            ctx,
            service.search,
            query,
            top_k=top_k,
            retrievers=retrievers,
            weights=weights,
            k=k,
            path=path,
            language=language,
            priors=priors,
            max_chars=max_chars,
            like=like,
        )

    @server.tool(annotations=READ_ONLY, structured_output=False)
    async def related(
        place: Annotated[
            str,
            Field(
                description="`PATH:LINE` (a line inside a function, method, class …), `PATH:START-END` (a search hit's lines: every definition packed there, their lists merged) or `PATH:NAME` (a name the file defines), path relative to the repository root, e.g. `src/retry.py:120` or a search hit's `path:start_line-end_line`."
            ),
        ],
        limit: Annotated[int, Field(ge=1, le=200, description="Most places listed per kind.")] = 20,
        ctx: Context = None,
    ) -> CallToolResult:
        """Follow the code from a place: the unit there and its `callers`, `callees` and `tests`.

        Returns `unit` and lists of places, best first, each with `path`, `start_line`,
        `end_line` (the whole enclosing definition), `name`, `context`, `line` (the use that
        links it), `via` (the name used), `resolution` (`same file`, `imported`, `same
        directory`, `by name`) and `candidates` (how many definitions that name has; more
        than one means name-based resolution may be wrong). `counts` has the totals. Edges
        are name-based, like search-based navigation: use it after `search` when a hit is
        near the answer but not it (the code that calls it, what it calls, its tests).
        """
        return await _call(service, ctx, service.related, place, limit)

    @server.tool(annotations=READ_ONLY, structured_output=False)
    async def read_span(
        path: Annotated[str, Field(description="File path relative to the repository root, as search returns it.")],
        start_line: Annotated[int, Field(ge=1, description="First line, 1-based.")],
        end_line: Annotated[int, Field(ge=1, description="Last line, inclusive (clipped to the end of the file).")],
        max_chars: Annotated[
            int,
            Field(
                ge=1,
                le=MAX_TEXT_BUDGET,
                description="Most characters to return; whole lines are kept and end_line is lowered to the last one returned.",
            ),
        ] = DEFAULT_SPAN_CHARS,
        ctx: Context = None,
    ) -> CallToolResult:
        """Read lines of a file as they are now, with the sha256 a handoff records for them.

        Returns `path`, `start_line`, `end_line` (the last line returned), `lines_in_file`,
        `text`, `sha256` (of those lines, as in a handoff) and `truncated` (true when fewer
        lines than asked were returned). Only files the index holds are served: never a path
        outside the repository, an ignored file or a secret-looking one.
        """
        return await _call(service, ctx, service.read_span, path, start_line, end_line, max_chars)

    @server.tool(annotations=READ_ONLY, structured_output=False)
    async def check_handoff(
        handoff: Annotated[
            dict[str, Any],
            Field(
                description="A handoff document: a `search` result, `ranklens query --json`/`--output`, or the terminal UI's export (`e`)."
            ),
        ],
        ctx: Context = None,
    ) -> CallToolResult:
        """Check whether the spans of a handoff still hold the text they had.

        Returns `spans`, one per result in order, each with `status`: `unchanged`; `changed`
        (with `moved_to` {start_line, end_line} when the same text is now elsewhere in the
        file, else null); `gone` (the file no longer exists); `refused` (a path this server
        does not serve); `unknown` (the handoff has no sha256 for it); `not_ready` (the index
        is still being built: call again shortly). Plus `summary` counts.
        """
        return await _call(service, ctx, service.check_handoff, handoff)

    @server.tool(annotations=READ_ONLY, structured_output=False)
    async def index_status(ctx: Context = None) -> CallToolResult:
        """The index's state: `files`, `chunks`, `generation`, each retriever (`arms`) with
        whether it answers and, if not, why; `updating`/`stale` (files changed and the index is
        catching up, with `progress`), the `last_update`, files skipped by reason
        (secret, binary, too large ...), and `deep` when that retriever is not built yet.
        Does not wait for an update.
        """
        try:
            data = await anyio.to_thread.run_sync(service.index_status)
        except AgentError as exc:
            raise ToolError(str(exc)) from None
        return _result(data)

    return server


def serve(
    root: str, model: str | None = None, store: str | None = None, repos: str | None = None, fresh: bool = False
) -> None:
    """Serve ``root`` over stdio until the client closes the connection (``store``/``repos``:
    a shared index, :mod:`core.backends`; ``fresh``: no inotify watcher, every call's check
    stats the tree)."""
    service = AgentService(
        root,
        model,
        notify=lambda msg: print(f"ranklens: {msg}", file=sys.stderr, flush=True),
        store=store,
        repos=repos,
        fresh=fresh,
    )
    try:
        server = build_server(service)
        wire = _claim_pipes()
        if wire is None:  # not two pipes (a file, a terminal) or not POSIX: the SDK's own transport
            server.run("stdio")
        else:
            anyio.run(_serve_pipes, server, *wire)
    finally:
        service.engine.close()


# -- stdio over the event loop's own pipes -----------------------------------------------------
#
# The SDK's stdio transport reads and writes through anyio's file wrappers: a worker-thread hop
# for every line read and two (write, flush) for every message written, each a wake-up of a
# thread and then of the event loop. On two busy cores those hops were a few ms of a ~20 ms warm
# `search`. When stdin and stdout are pipes (as every MCP client starts a server) the event loop
# reads and writes them itself; the SDK still parses and serializes every message
# (`stdio_server` with explicit streams), so the bytes on the wire are the same.


def _claim_pipes() -> tuple[int, int] | None:
    """Private duplicates of the wire's stdin and stdout when both are pipes or sockets, fd 0
    then reading the null device and fd 1 writing to stderr, as the SDK's transport leaves
    them (a stray print or a child process never touches the wire); None otherwise."""
    if sys.platform == "win32":
        return None
    import fcntl

    try:
        if not all(stat.S_ISFIFO(os.fstat(fd).st_mode) or stat.S_ISSOCK(os.fstat(fd).st_mode) for fd in (0, 1)):
            return None
        if sys.stdout is not None:
            sys.stdout.flush()
        wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
        wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    except (OSError, ValueError):
        return None
    for fd, divert in ((0, lambda: os.open(os.devnull, os.O_RDONLY)), (1, lambda: os.dup(2))):
        try:
            other = divert()
        except OSError:  # no stderr: the null device
            other = os.open(os.devnull, os.O_WRONLY)
        os.dup2(other, fd)
        os.close(other)
    return wire_in, wire_out


class _PipeLines:
    """stdin as the SDK's ``stdio_server`` reads it (``async for line``): UTF-8 lines, bad bytes
    replaced, read by the event loop."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self):
        return self

    async def __anext__(self) -> str:
        line = await self._reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", "replace")


class _PipeOut:
    """stdout as the SDK's ``stdio_server`` writes it (``write`` then ``flush``): the event
    loop's pipe transport, which writes at once and buffers only what the pipe cannot take."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()


async def _serve_pipes(server: MCPServer, wire_in: int, wire_out: int) -> None:
    loop = asyncio.get_running_loop()
    # A message is one line of any length (a handoff to check may be large): no line limit.
    reader = asyncio.StreamReader(limit=1 << 62)
    read_transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(wire_in, "rb", buffering=0)
    )
    write_transport, write_protocol = await loop.connect_write_pipe(
        lambda: asyncio.streams.FlowControlMixin(), os.fdopen(wire_out, "wb", buffering=0)
    )
    writer = asyncio.StreamWriter(write_transport, write_protocol, None, loop)
    try:
        lowlevel = server._lowlevel_server  # what MCPServer.run_stdio_async runs over its own streams
        async with stdio_server(stdin=_PipeLines(reader), stdout=_PipeOut(writer)) as (read_stream, write_stream):
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
    finally:
        with contextlib.suppress(Exception):
            await writer.drain()
        for fd, wire in ((0, wire_in), (1, wire_out)):  # the wire back where it was, blocking again
            with contextlib.suppress(OSError):
                os.set_blocking(wire, True)
                os.dup2(wire, fd)
        write_transport.close()
        read_transport.close()
