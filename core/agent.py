"""What ``ranklens mcp`` serves, without the protocol: one long-lived engine kept fresh, and
the only ways an agent reads the repository (search hits with their text, spans, handoff
checks, the index's state).

Freshness: every call first runs :meth:`AgentService.prepare`. It runs the indexer's freshness
check (:mod:`core.index.freshness`: the files and folders the last listing saw, its ignore files and
git's state) and, when anything moved, starts an incremental update in a background thread;
the caller waits for it a little (:data:`REFRESH_WAIT_S`) and otherwise answers from the last
generation with a note. A first build commits its work in steps (:mod:`core.storage.segments`): a call
waits for the first step only, and answers from what is committed with ``partial`` set ("from
1,200 of 4,902 files"); the next calls answer from more. On Linux the server holds inotify watches over the tree
(:mod:`core.index.watch`), so the check stats only what an event named since the last one (nothing
when no event came) and runs before every call. Elsewhere, or with ``--fresh``, it stats every
entry: ~0.1 s at 20k files, so a burst of calls runs it at most once a second (and on a large
tree at most :data:`PROBE_SHARE` of the time).

Safety: nothing here writes to the repository. A path is served only when it is a file of the
current index (discovery's ignore, secret-name, binary and size rules decided that), has no
``..``, stays inside the root once symlinks are resolved (a link's target must itself be an
indexed file), and :func:`core.discovery.read_text` still accepts it (no private-key block, not
binary, not too large). Every text returned passes through :func:`outgoing_text`.
"""

from __future__ import annotations

import os
import posixpath
import sys
import threading
import time
from array import array
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path

from .base.handoff_schema import HandoffError, validate_handoff
from .handoff import span_lines, text_sha256
from .text.secrets import redact

#: A burst of calls checks the tree for changes at most this often (seconds) ...
PROBE_EVERY_S = 1.0
#: ... and spends at most this share of its time on it (a tree of 100k files takes ~0.2 s).
PROBE_SHARE = 0.05
#: How long a call waits for an index update before answering from the last generation.
REFRESH_WAIT_S = 2.0
#: ``check_handoff``'s span statuses, in the order ``summary`` counts them.
SPAN_STATUSES = ("unchanged", "changed", "gone", "refused", "unknown", "not_ready")
#: Why a span is ``not_ready``.
NOT_READY = "the index is still being built (index_status says when it is done): check again shortly"
DEFAULT_TEXT_BUDGET = 12_000
MAX_TEXT_BUDGET = 200_000
DEFAULT_SPAN_CHARS = 40_000
MAX_SEARCH_TOP_K = 100
#: Characters of redacted file text a server keeps (by path and stat) between calls: a pass of
#: 20 questions over the 50k-chunk corpus reads ~200 files, which a 128-file cache never kept.
TEXT_CACHE_CHARS = 32_000_000


class AgentError(ValueError):
    """The call cannot be answered as asked (one line for the agent; the server goes on)."""


class OutsideError(AgentError):
    """A path this server never serves whatever is on disk: ``..`` leading out of the root, an
    absolute path outside it, a symlink out of it, or no path at all (``check_handoff``:
    ``refused``, never ``gone``)."""


def outgoing_text(text: str, path: str) -> str:
    """Every file text the server returns (search hits, ``read_span``) passes through here.
    Files are read through :func:`core.discovery.read_text`, which already redacts credential
    lines as the index does; this redacts again (idempotent) so no other reader added later
    can hand one out. Hashes are of that redacted text, as the handoff defines them."""
    return redact(text, path)


@dataclass
class _Snapshot:
    """What the index holds, for the change probe and the path rules."""

    generation: int
    files: dict[str, tuple[int, int]]  # path -> (size, mtime_ns) as the indexer last saw them


@dataclass
class _Job:
    """One index update running in a background thread."""

    started: float = field(default_factory=time.monotonic)
    done: threading.Event = field(default_factory=threading.Event)
    error: str | None = None
    stages: dict[str, tuple[int, int]] = field(default_factory=dict)  # stage -> (done, total)
    last: str = "discover"  # the stage reported last
    peak: float = 0.0  # the progress sent so far: a long pass's later steps start stages again

    def progress(self, p) -> None:
        self.stages[p.stage] = (p.done, p.total)
        self.last = p.stage

    def fraction(self) -> tuple[float, float, str]:
        """``(progress, total, message)`` for a progress notification: each stage but deep
        counts one (deep embeds a few chunks at most here), and a stage's share only grows (the
        embedder reports while chunking still does). The last unit is the update's end
        (:meth:`AgentService.final_progress`): progress reaches the total only when it is done."""
        from .index.indexer import STAGE_WORDS, STAGES

        counted = [s for s in STAGES if s != "deep"]
        done = sum(min(d / t, 1.0) if t else 0.0 for s, (d, t) in self.stages.items() if s in counted)
        self.peak = done = max(done, self.peak)
        # One count that only grows (files, as the UI's status line), and the stage in words.
        words = STAGE_WORDS.get(self.last, self.last)
        d, t = self.stages.get("chunk", (0, 0))
        message = f"indexing: {d:,} of {t:,} files · {words}" if t else f"indexing: {words}"
        return done, float(len(counted) + 1), message


class AgentService:
    """One root's engine, kept fresh, and the reads an agent may make.

    Parameters
    ----------
    root
        The repository folder.
    model
        model2vec model for the dense arm (default: bundled).
    notify
        Receives one-line notes (rebuilds, lock waits); default drops them.
    """

    def __init__(
        self,
        root: Path | str,
        model: str | None = None,
        notify: Callable[[str], None] | None = None,
        *,
        store: str | None = None,
        repos: str | None = None,
        fresh: bool = False,
    ):
        from .service import open_engine  # every front end's engine set-up: same settings, same index

        self.engine = open_engine(root, model, notify or (lambda _msg: None), store=store, repos=repos)
        #: A shared store (core.backends): indexed by `ranklens index --store`, never by this server.
        self.shared = bool(getattr(self.engine, "shared", False))
        #: Whether inotify tells the freshness check what changed (then it runs on every call).
        self.watching = not self.shared and not fresh and self.engine.watch()
        self.root = self.engine.root
        self._root_real = os.path.realpath(self.root)
        self._lock = threading.Lock()
        self._job: _Job | None = None
        self._snapshot: _Snapshot | None = None
        # While a first build goes on: the files its last committed step holds (paths served).
        self._partial_snapshot: _Snapshot | None = None
        self._next_probe = 0.0
        self._texts: OrderedDict[tuple, _FileText] = OrderedDict()  # (path, its stat) -> redacted text
        self._texts_chars = 0
        self._texts_lock = threading.Lock()
        self.stats = None  # the last completed index pass (core.arms.protocol.IndexStats)
        self.last_error: str | None = None

    # -- freshness ----------------------------------------------------------------------

    def prepare(self, *, force_probe: bool = False) -> _Job | None:
        """Notice changes and start an update when there are any; the running update, if one
        is, for the caller to wait on. Blocking but cheap (see the module docstring)."""
        if self.shared:
            self._prepare_shared(force_probe)
            return None
        with self._lock:
            job = self._job
            if job is not None and not job.done.is_set():
                return job
            if self._snapshot is None:
                # First call (or every update so far failed): open what exists and look for
                # what changed while no server watched. An index found up to date is taken as
                # it is, now (a stat pass and the last pass's figures), so the first answer
                # never calls it stale or updating; anything else updates in the background.
                if not self.engine.ready:
                    self.engine.open()
                if not self.engine.ready or self._stale(None):
                    return self._start()
                job = self._job = _Job()  # run here, below: the calls meanwhile wait on it
            else:
                now = time.monotonic()
                if not force_probe and not self.watching and now < self._next_probe:
                    return None
                t0 = time.perf_counter()
                stale = self._stale(self._snapshot)
                cost = time.perf_counter() - t0
                self._next_probe = time.monotonic() + max(PROBE_EVERY_S, cost / PROBE_SHARE)
                if not stale:
                    return None
                return self._start()
        self._update(job)  # outside the lock: it takes it to keep what it found
        return job if job.error else None

    def _prepare_shared(self, force: bool) -> None:
        """A shared store: (re)open it now and then, and take the root repository's file list
        from it (the files this server serves)."""
        from .backends import StoreError

        now = time.monotonic()
        with self._lock:
            if not force and self._snapshot is not None and now < self._next_probe:
                return
            try:
                view = self.engine._open_store()
                files = self.engine.store.files_of(self.engine.repo) if self.engine.repo in view.repos else {}
            except StoreError as exc:
                self.last_error = str(exc)
                self._next_probe = now + PROBE_EVERY_S
                return
            self._snapshot = _Snapshot(view.generation, {p: (r["size"], r["mtime"]) for p, r in files.items()})
            self.last_error = None
            self._next_probe = now + 5 * PROBE_EVERY_S

    def _start(self) -> _Job:
        job = self._job = _Job()
        threading.Thread(target=self._update, args=(job,), name="ranklens-mcp-index", daemon=True).start()
        return job

    def _update(self, job: _Job) -> None:
        from .service import QUERY_DEEP_LIMIT

        try:
            # As `ranklens query` does: deep embeds a few new chunks, a first build is left to
            # `ranklens index` (index_status says so).
            stats = self.engine.ensure_index(job.progress, deep_limit=QUERY_DEEP_LIMIT, on_partial=self._landed)
            snapshot = self._read_snapshot(stats.generation)
        except Exception as exc:  # reported by the next calls; the last generation still answers
            job.error = f"{type(exc).__name__}: {exc}"
            with self._lock:
                self.last_error = job.error
                self._next_probe = time.monotonic() + PROBE_EVERY_S
        else:
            with self._lock:
                self._snapshot = snapshot
                self.stats = stats
                self.last_error = None
                self._next_probe = time.monotonic() + PROBE_EVERY_S
        finally:
            job.done.set()

    def _landed(self, partial) -> None:
        """A step of the update committed (the engine opened it): a first build's files are
        served from it on (an update's keep the last whole pass's snapshot until it ends)."""
        if self._snapshot is None:
            self._partial_snapshot = self._read_snapshot(self.engine.view.generation)

    def _read_snapshot(self, generation: int) -> _Snapshot:
        rows = self.engine.view.connection().execute("SELECT path, size, mtime_ns FROM files").fetchall()
        return _Snapshot(generation, {path: (size, mtime) for path, size, mtime in rows})

    def _stale(self, snap: _Snapshot | None) -> bool:
        """Whether the tree differs from what the index holds (or another process committed
        since ``snap``; None: no snapshot to compare, the tree only)."""
        try:
            row = self.engine.view.connection().execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
            if row is None or (snap is not None and int(row[0]) != snap.generation):
                return True
        except Exception:  # an unreadable database: let the update say why
            return True
        # The indexer's own freshness check: the files and folders its last listing saw, the
        # ignore files and git's state (a folder without indexed files, or an ignore file
        # edited in place, counts too; nothing inside an ignored folder does).
        return not self.engine.check().unchanged

    def final_progress(self, job: _Job, last: float) -> tuple[float, float, str]:
        """The last progress notification of a call that waited on ``job`` (``last``: the
        progress it sent last): done (progress = total), failed, or going on in the background
        while the call is answered from the last generation."""
        done, total, _message = job.fraction()
        if job.done.is_set() and job.error is None:
            gen = self.engine.view.generation if self.engine.ready else 0
            return total, total, f"indexing: done (generation {gen})"
        if job.done.is_set():
            return max(done, last), total, f"indexing: failed ({job.error})"
        gen = self.engine.view.generation if self.engine.ready else 0
        return max(done, last), total, f"indexing: continues in the background; answering from generation {gen}"

    def freshness_notes(self, job: _Job | None) -> list[str]:
        """What the agent should know about how current this answer is (after waiting)."""
        if self.shared and not self.engine.ready:
            raise AgentError(f"the store cannot be searched: {self.last_error or self.engine.state}")
        if not self.engine.ready:
            raise AgentError(f"the repository could not be indexed: {job.error if job else self.last_error}")
        gen = self.engine.view.generation
        partial = getattr(self.engine.view, "partial", None)  # a shared store's has none
        if partial is not None:
            age = time.monotonic() - job.started if job is not None and not job.done.is_set() else None
            building = f" (for {age:.1f} s)" if age is not None else ""
            return [
                f"the index is still being built{building}: this answer is {partial.describe()} (generation "
                f"{gen}); search again for the rest, or see index_status"
            ]
        if job is not None and not job.done.is_set():
            age = time.monotonic() - job.started
            return [
                f"the index is being updated in the background (for {age:.1f} s): this answer is from "
                f"generation {gen}, which may miss the latest changes"
            ]
        if job is not None and job.error:
            return [f"the index update failed ({job.error}): this answer is from generation {gen}"]
        return []

    # -- paths --------------------------------------------------------------------------

    def resolve(self, path: object) -> str:
        """The indexed relative path ``path`` names, or :class:`AgentError` saying why it is
        not served. Absolute paths inside the root are accepted."""
        snap = self._snapshot or self._partial_snapshot
        if snap is None:
            raise AgentError("the index is not ready yet")
        rel = self.normalize(path)
        if rel not in snap.files:
            raise AgentError(
                f"{rel} is not a file ranklens serves: only indexed files are (never ignored, "
                "secret-looking, binary or over-size ones), and a file created in the last second "
                "may not be indexed yet"
            )
        real = _realpath(os.path.join(self.root, rel))
        inside = self._root_real.rstrip(os.sep) + os.sep
        if real == inside + rel:  # no link on the way: itself
            return rel
        if not (real == self._root_real or real.startswith(inside)):
            raise OutsideError(f"{rel} resolves outside the repository through a symlink")
        target = os.path.relpath(real, self._root_real).replace(os.sep, "/")
        if target != rel and target not in snap.files:
            raise AgentError(f"{rel} is a link to {target}, which ranklens does not serve")
        return rel

    def normalize(self, path: object) -> str:
        """``path`` as a path relative to the root, ``.`` and ``x/..`` folded away
        (``src/pkg/../pkg/tasks.py`` is ``src/pkg/tasks.py``); :class:`OutsideError` for a
        path that is not one or leads outside the root (``..``, an absolute path elsewhere)."""
        if not isinstance(path, str) or not path.strip():
            raise OutsideError("path must be a non-empty string, relative to the repository root")
        if "\0" in path:
            raise OutsideError("path has a NUL character")
        if path.startswith("/"):
            for base in (str(self.root), self._root_real):
                if path == base or path.startswith(base.rstrip("/") + "/"):
                    path = os.path.relpath(path, base)
                    break
            else:
                raise OutsideError(f"{path} is outside the repository ({self.root})")
        rel = posixpath.normpath(path)
        if rel == ".." or rel.startswith("../"):
            raise OutsideError(f"{path}: '..' leads outside the repository; paths are relative to its root")
        if rel == ".":
            raise OutsideError(f"{path} is the repository itself, not a file")
        return rel

    def _read(self, rel: str) -> str:
        """The text of an indexed file as the index reads it (AgentError when it cannot be)."""
        return self._file(rel).text

    def _file(self, rel: str) -> _FileText:
        """:meth:`_read`'s text with its lines' offsets, kept while the file's stat is the same
        (:data:`TEXT_CACHE_CHARS` in all): reading and redacting a file again for every search
        was most of a warm ``search`` on large files (the credential scan runs over the whole
        file), and splitting it into lines for each search a tenth of the rest."""
        from .discovery import read_text

        try:  # the file the path reaches now (links followed); st_dev: inodes are per device
            st = os.stat(os.path.join(self.root, rel))
            key = (rel, st.st_mtime_ns, st.st_size, st.st_ino, st.st_dev)
        except OSError:
            key = None
        if key is not None:
            with self._texts_lock:
                found = self._texts.get(key)
                if found is not None:
                    self._texts.move_to_end(key)
                    return found
        text, reason = read_text(self.root, rel, self.engine.settings.options.max_bytes)
        if text is None:
            raise AgentError(f"{rel} cannot be read ({reason})")
        found = _FileText(text)
        if key is not None:
            with self._texts_lock:
                self._texts[key] = found
                self._texts_chars += len(text)
                while self._texts_chars > TEXT_CACHE_CHARS and len(self._texts) > 1:
                    self._texts_chars -= len(self._texts.popitem(last=False)[1].text)
        return found

    # -- tools --------------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        top_k: int = 10,
        retrievers: list[str] | None = None,
        weights: dict[str, float] | None = None,
        k: float | None = None,
        path: str | None = None,
        language: str | None = None,
        priors: bool = True,
        max_chars: int = DEFAULT_TEXT_BUDGET,
        like: str | None = None,
    ) -> dict:
        """The handoff envelope of a query (``like``: of units like one), each hit with its text
        until ``max_chars`` is spent."""
        from .service import NoAnswer, RequestError, answer_query, deep_ready

        request = self.search_request(
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
        try:
            stats = self.stats
            t0 = time.perf_counter()
            data, _hits, _skipped = answer_query(
                self.engine, request, deep=deep_ready(stats) if stats is not None else False, hashes=False
            )
        except RequestError as exc:
            raise AgentError(str(exc)) from None
        except NoAnswer as exc:
            raise AgentError(exc.detail()) from None
        data["generation"] = self.engine.view.generation
        budget = max_chars
        texts: dict[str, _FileText | AgentError] = {}
        notes = []
        for item in data["results"]:
            rel = item["path"]
            if item.get("repo", self.engine.repo if self.shared else None) != (
                self.engine.repo if self.shared else None
            ):
                item["text"] = item["sha256"] = None
                notes.append(
                    f"no text for {item['repo']}:{rel}: this server serves the text of {self.engine.repo} only"
                )
                continue
            if rel not in texts:
                try:
                    texts[rel] = self._file(self.resolve(rel))
                except AgentError as exc:
                    texts[rel] = exc
            found = texts[rel]
            if isinstance(found, AgentError):
                item["text"] = item["sha256"] = None
                notes.append(f"no text for {rel}: {found}")
                continue
            item["sha256"], shown = found.span(item["start_line"], item["end_line"], rel)
            if budget <= 0:
                item["text"] = None
            elif len(shown) <= budget:
                item["text"] = shown
                budget -= len(shown)
            else:
                cut = shown.rfind("\n", 0, budget)
                item["text"] = shown[: cut if cut > 0 else budget]
                item["text_truncated"] = True
                budget = 0
        if budget <= 0 and any(item["text"] is None for item in data["results"]):
            notes.append(
                f"the text budget (max_chars={max_chars}) is spent: hits without text can be read with read_span"
            )
        data["notes"] = notes
        data["query_ms"] = round((time.perf_counter() - t0) * 1000.0, 3)  # the texts and hashes included
        return data

    def search_request(self, query: object, **arguments):
        """``search``'s arguments as a checked request; :class:`AgentError` naming every bad
        one, on one line, in this tool's own words (``top_k``, not ``--top-k``).
        ``arguments`` left out take the tool's defaults."""
        from .arms import REGISTRY
        from .base.rrf import check_weight
        from .service import RequestError, check_request

        top_k = arguments.get("top_k", 10)
        retrievers = arguments.get("retrievers")
        weights = arguments.get("weights")
        max_chars = arguments.get("max_chars", DEFAULT_TEXT_BUDGET)
        problems: list[str] = []
        if isinstance(max_chars, bool) or not isinstance(max_chars, int) or not 0 <= max_chars <= MAX_TEXT_BUDGET:
            problems.append(f"max_chars must be from 0 to {MAX_TEXT_BUDGET}, got {max_chars!r}")
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_SEARCH_TOP_K:
            problems.append(f"top_k must be from 1 to {MAX_SEARCH_TOP_K}, got {top_k!r}")
            top_k = 10
        if retrievers is not None and (
            not isinstance(retrievers, list)
            or not retrievers
            or not all(isinstance(r, str) and r.strip() and "," not in r for r in retrievers)
        ):
            problems.append('retrievers must be a non-empty list of names, e.g. ["bm25", "dense"]')
            retrievers = None
        weights_text = None
        if weights is not None:
            if not isinstance(weights, dict) or not all(
                isinstance(w, (int, float)) and not isinstance(w, bool) for w in weights.values()
            ):
                problems.append('weights must map retriever names to numbers, e.g. {"dense": 1.5}')
                weights = {}
            # Checked here, so the message names this tool's argument (the CLI's says --weights).
            good = {}
            for arm, w in weights.items():
                if arm not in REGISTRY:
                    problems.append(f"weights names an unknown retriever {arm!r} (choose from {', '.join(REGISTRY)})")
                    continue
                try:
                    check_weight(arm, float(w))
                except ValueError as exc:
                    problems.append(f"bad weight in weights: {exc}")
                    continue
                good[arm] = w
            weights_text = ",".join(f"{arm}:{w!r}" for arm, w in good.items()) or None
        try:
            request = check_request(
                query,
                top_k=top_k,
                retriever=",".join(retrievers) if retrievers else "all",
                weights=weights_text,
                rrf_k=arguments.get("k"),
                path_glob=arguments.get("path"),
                language=arguments.get("language"),
                priors=arguments.get("priors", True),
                like=arguments.get("like"),
            )
        except RequestError as exc:
            problems.extend(exc.all)
            request = None
        if problems:
            error = AgentError("; ".join(dict.fromkeys(problems)))
            error.problems = list(dict.fromkeys(problems))
            raise error
        return request

    def search_problems(self, arguments: dict) -> list[str]:
        """What :meth:`search_request` finds wrong with those of ``arguments`` that are of
        their JSON type (the MCP server adds them to the schema's own complaints about the
        others, so one call's every bad argument is named at once)."""
        kinds = {
            "query": str,
            "top_k": int,
            "max_chars": int,
            "k": (int, float),
            "retrievers": list,
            "weights": dict,
            "path": str,
            "language": str,
            "priors": bool,
            "like": str,
        }
        given = {
            name: value
            for name, value in arguments.items()
            if name in kinds and isinstance(value, kinds[name]) and (name == "priors" or not isinstance(value, bool))
        }
        query = given.pop("query", "" if "like" in given else "placeholder")
        try:
            self.search_request(query, **given)
        except AgentError as exc:
            return list(getattr(exc, "problems", [str(exc)]))
        return []

    def related(self, place: str, limit: int = 20) -> dict:
        """MCP ``related`` (:func:`core.navigate.answer_related`)."""
        from .navigate import answer_related, as_agent_error

        with as_agent_error(AgentError):
            return {**answer_related(self.engine, place, limit=limit), "generation": self.engine.view.generation}

    def read_span(self, path: str, start_line: int, end_line: int, max_chars: int = DEFAULT_SPAN_CHARS) -> dict:
        """Lines ``start_line..end_line`` of an indexed file now, with their sha256."""
        for name, value in (("start_line", start_line), ("end_line", end_line)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise AgentError(f"{name} must be a line number from 1, got {value!r}")
        if end_line < start_line:
            raise AgentError(f"end_line ({end_line}) is before start_line ({start_line})")
        if isinstance(max_chars, bool) or not isinstance(max_chars, int) or not 1 <= max_chars <= MAX_TEXT_BUDGET:
            raise AgentError(f"max_chars must be from 1 to {MAX_TEXT_BUDGET}, got {max_chars!r}")
        rel = self.resolve(path)
        text = self._read(rel)
        total = text.count("\n") + (0 if text.endswith("\n") else 1)  # a final newline ends a line
        if start_line > total:
            raise AgentError(f"{rel} has {total} lines; start_line {start_line} is past its end")
        end = min(end_line, total)
        lines = text.split("\n")[start_line - 1 : end]
        # Whole lines within the budget (at least one), so text and sha256 always describe the
        # same lines.
        used, keep = 0, 0
        for line in lines:
            used += len(line) + (1 if keep else 0)
            if keep and used > max_chars:
                break
            keep += 1
        raw = "\n".join(lines[:keep])
        out = {
            "path": rel,
            "start_line": start_line,
            "end_line": start_line + keep - 1,
            "lines_in_file": total,
            "sha256": text_sha256(raw),
            "text": outgoing_text(raw, rel),
            "truncated": start_line + keep - 1 < end_line,
        }
        return out

    def check_handoff(self, document: object) -> dict:
        """For each span of a handoff: unchanged, changed (and where its text is now, if it
        moved), gone (the file is), refused (a path this server does not serve), unknown (no
        sha256 recorded) or not_ready (the index is still being built: ask again shortly)."""
        try:
            doc = validate_handoff(document)
        except HandoffError as exc:
            raise AgentError(str(exc)) from None
        notes = []
        if doc.get("root") and os.path.realpath(doc["root"]) != self._root_real:
            notes.append(f"the handoff was written for {doc['root']}; its spans were checked in {self.root}")
        texts: dict[str, str | tuple[str, str]] = {}
        spans = []
        for item in doc["results"]:
            spans.append(self._check_span(item, texts))
        counts = {s: sum(1 for x in spans if x["status"] == s) for s in SPAN_STATUSES}
        return {"spans": spans, "summary": {k: v for k, v in counts.items() if v}, "notes": notes}

    def _check_span(self, item: dict, texts: dict) -> dict:
        path, start, end, then = item["path"], item["start_line"], item["end_line"], item.get("sha256")
        out = {"path": path, "start_line": start, "end_line": end, "sha256": then}
        if self._snapshot is None:
            # Which files are served is known once the index has listed them: not yet.
            return {**out, "status": "not_ready", "reason": NOT_READY}
        if path not in texts:
            try:
                texts[path] = self._read(self.resolve(path))
            except OutsideError as exc:  # never served, whatever is there: not a hash oracle
                texts[path] = ("refused", str(exc))
            except AgentError as exc:
                rel = self.normalize(path)  # inside the root (else OutsideError above)
                gone = not os.path.lexists(os.path.join(self.root, rel))
                texts[path] = ("gone", f"{path} no longer exists") if gone else ("refused", str(exc))
        found = texts[path]
        if isinstance(found, tuple):
            return {**out, "status": found[0], "reason": found[1]}
        if end < start:
            return {**out, "status": "changed", "reason": "end_line is before start_line", "sha256_now": None}
        now = text_sha256(span_lines(found, start, end))
        if then is None:
            return {**out, "status": "unknown", "reason": "the handoff has no sha256 for this span", "sha256_now": now}
        if now == then:
            return {**out, "status": "unchanged", "sha256_now": now}
        return {**out, "status": "changed", "sha256_now": now, "moved_to": _find_moved(found, start, end, then)}

    def index_status(self) -> dict:
        """Files, chunks, generation, which arms answer and why the others do not, freshness."""
        job = self.prepare(force_probe=True)
        updating = job is not None and not job.done.is_set()
        out: dict = {"root": str(self.root), "index_dir": str(self.engine.directory), "indexed": self.engine.ready}
        if self.shared:
            out["index_dir"] = self.engine.directory_label
            out["store"] = self.engine.state
            if self.engine.ready:
                out["repos"] = {n: {"files": r.files, "chunks": r.chunks} for n, r in self.engine.view.repos.items()}
                out["arms"] = {
                    name: {"answers": True} if reason is None else {"answers": False, "reason": reason}
                    for name, reason in self.engine.warm(self.engine.default_arms()).items()
                }
            if self.last_error:
                out["last_error"] = self.last_error
            return out
        if self.engine.ready:
            view = self.engine.view
            snap = self._snapshot
            out["generation"] = view.generation
            if view.partial is not None:
                out["partial"] = view.partial.to_dict()
            # The files the open generation holds: the snapshot's once an update has run here,
            # else (the first call, its update still running) the index's own count.
            out["files"] = len(snap.files) if snap is not None and snap.generation == view.generation else None
            if out["files"] is None:
                out["files"] = view.connection().execute("SELECT COUNT(*) FROM files").fetchone()[0]
            out["chunks"] = len(view.chunks)
            arms = {}
            for name, reason in self.engine.warm(self.engine.default_arms()).items():
                arms[name] = {"answers": True} if reason is None else {"answers": False, "reason": reason}
            out["arms"] = arms
        # Set only when they hold: an update is catching up with changes, or the last one failed.
        out["stale"] = updating or bool(job is not None and job.done.is_set() and job.error)
        out["updating"] = updating
        if updating:
            done, total, message = job.fraction()
            out["progress"] = {
                "done": round(done, 3),
                "total": total,
                "message": message,
                "seconds": round(time.monotonic() - job.started, 1),
            }
        stats = self.stats
        if stats is not None:
            skipped: dict[str, int] = {}
            for _path, reason in stats.skipped:
                skipped[reason] = skipped.get(reason, 0) + 1
            out["last_update"] = {
                "added": stats.added,
                "changed": stats.changed,
                "removed": stats.removed,
                "seconds": round(stats.wall, 3),
                "rebuilt": stats.rebuilt,
            }
            out["skipped_files"] = skipped
            if "deep" in self.engine.default_arms() and (stats.deep or stats.deep_deferred or stats.deep_busy):
                if stats.deep_busy:
                    out["deep"] = "another ranklens is embedding this root's chunks for it; searches answer without it"
                else:
                    out["deep"] = stats.deep or (
                        f"{stats.deep_deferred} chunks to embed: run `ranklens index {self.root}` to build them"
                    )
        if self.last_error:
            out["last_error"] = self.last_error
        return out


class _FileText:
    """A file's text and, once asked, where each of its lines starts, and the spans served
    from it (this text is one stat of the file: an edited file is another _FileText)."""

    __slots__ = ("text", "_starts", "_spans")

    def __init__(self, text: str) -> None:
        self.text = text
        self._starts: array | None = None
        #: (start, end) -> (sha256, the redacted text when redaction changed it, else None)
        self._spans: dict[tuple[int, int], tuple[str, str | None]] = {}

    def lines(self, start: int, end: int) -> str:
        """``"\n".join(text.split("\n")[start - 1 : end])`` (:func:`core.handoff.span_lines`)
        without splitting the whole file again."""
        if start < 1 or end < 1:  # slices from the end: as span_lines cuts them
            return "\n".join(self.text.split("\n")[start - 1 : end])
        starts = self._starts
        if starts is None:  # line j is text[starts[j] : starts[j + 1] - 1]
            starts = self._starts = array("q", [0, *accumulate(len(line) + 1 for line in self.text.split("\n"))])
        last = min(end, len(starts) - 1)
        return self.text[starts[start - 1] : starts[last] - 1] if start <= last else ""

    def span(self, start: int, end: int, rel: str) -> tuple[str, str]:
        """``(sha256, text)`` of lines ``start..end`` as a search serves them: the hash of the
        lines, the text through :func:`outgoing_text`. Kept per span: the credential scan of
        each hit's lines was a third of a warm search's text assembly. A span kept costs a
        tuple, not a copy: its lines are cut again unless redaction changed them."""
        kept = self._spans.get((start, end))
        if kept is not None:
            sha, shown = kept
            return sha, self.lines(start, end) if shown is None else shown
        raw = self.lines(start, end)
        sha = text_sha256(raw)
        shown = outgoing_text(raw, rel)
        self._spans[(start, end)] = (sha, None if shown is raw else shown)
        return sha, shown


_PROC_FD = sys.platform.startswith("linux") and hasattr(os, "O_PATH") and os.path.isdir("/proc/self/fd")


def _realpath(path: str) -> str:
    """``os.path.realpath(path)``, by the kernel on Linux: a descriptor of the path (O_PATH,
    nothing read) says where it leads, one walk in C (~10 us against realpath's ~30 us of an
    lstat per part in Python; a search checks each hit's file). Anything unusual (the path
    missing, a loop, no /proc) goes to realpath."""
    if _PROC_FD:
        try:
            fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return os.path.realpath(path)
        try:
            real = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            real = ""
        finally:
            os.close(fd)
        if real.startswith("/") and not real.endswith(" (deleted)"):
            return real
    return os.path.realpath(path)


def _find_moved(text: str, start: int, end: int, sha: str) -> dict | None:
    """Where a span of ``end - start + 1`` lines with this hash is in ``text`` now (the nearest
    to where it was), or None."""
    lines = text.split("\n")
    n = end - start + 1
    best = None
    for i in range(len(lines) - n + 1):
        nearer = best is None or abs(i + 1 - start) < abs(best - start)
        if nearer and text_sha256("\n".join(lines[i : i + n])) == sha:
            best = i + 1
    return None if best is None else {"start_line": best, "end_line": best + n - 1}
