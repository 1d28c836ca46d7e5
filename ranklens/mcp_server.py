"""``ranklens mcp``: the Model Context Protocol server (stdio), built on the official SDK.

One process serves one root with one long-lived engine (:class:`core.agent.AgentService`);
this module only turns its four operations into MCP tools: argument schemas and descriptions
written for an agent, progress notifications while the index is built, and every failure as a
tool error (``is_error``), after which the server goes on serving.
"""

# No `from __future__ import annotations`: the SDK reads these signatures at run time.
import json
import sys
import time
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

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
    "more with `read_span`. Keep a search result (it is a handoff document) and pass it to "
    "`check_handoff` later to learn which spans changed. `index_status` says what the index "
    "holds. The index updates itself when files change. Paths are relative to the repository "
    "root; ignored and secret-looking files are never served."
)

READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


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
            # A first build is waited for whatever it takes; an update only briefly, then the
            # last generation answers with a note.
            first = not service.engine.ready
            deadline = None if first else time.monotonic() + REFRESH_WAIT_S
            sent = None
            while not job.done.is_set():
                if ctx is not None:
                    progress = job.fraction()
                    if progress != sent:
                        sent = progress
                        await ctx.report_progress(*progress)
                wait = 0.2 if deadline is None else min(0.2, deadline - time.monotonic())
                if wait <= 0:
                    break
                await anyio.to_thread.run_sync(job.done.wait, wait)
            notes = service.freshness_notes(job)
            data = await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))
    except AgentError as exc:
        raise ToolError(str(exc)) from None
    if notes:
        data["notes"] = notes + data.get("notes", [])
    return _result(data)


def build_server(service: AgentService) -> MCPServer:
    """The MCP server of one :class:`AgentService` (its four tools)."""
    server = MCPServer("ranklens", instructions=INSTRUCTIONS, version=__version__, log_level="WARNING")

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
                description="Retrievers to fuse (default: all installed: bm25, fts5, dense, symbols, plus deep when installed). One name gives that retriever's own ranking. Also: hybrid, lexical+ctx."
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
        ctx: Context = None,
    ) -> CallToolResult:
        """Search the repository's code and docs; the best places to read, best first.

        Returns a handoff document: `results` each with `path`, `start_line`..`end_line`
        (1-based, inclusive), `context` (breadcrumb: path > Class > method), `score`,
        `agreement` (how many of the `retrievers` that answered found it), `confidence`
        (high: retrievers of different kinds agree; medium; low: one lexical or structural
        retriever alone), `provenance` (which found it), `sha256` of the span's text and the
        `text` itself (until `max_chars` is spent; `text_truncated` when cut). Also `notes`
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
        )

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
        does not serve); `unknown` (the handoff has no sha256 for it). Plus `summary` counts.
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


def serve(root: str, model: str | None = None, store: str | None = None, repos: str | None = None) -> None:
    """Serve ``root`` over stdio until the client closes the connection (``store``/``repos``:
    a shared index, :mod:`core.stores`)."""
    service = AgentService(
        root,
        model,
        notify=lambda msg: print(f"ranklens: {msg}", file=sys.stderr, flush=True),
        store=store,
        repos=repos,
    )
    try:
        build_server(service).run("stdio")
    finally:
        service.engine.close()
