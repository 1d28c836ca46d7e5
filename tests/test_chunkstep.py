"""The chunk step (core.query.chunkstep): which file, then which chunk of it."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from ranklens.core.base.types import Hit, make_docid
from ranklens.core.engine import Engine
from ranklens.core.query.chunkstep import MAX_UNIT_LINES, FileUnits, shown_span, units_of
from ranklens.core.query.ranking import DEFAULT_PARAMS


def _method(name: str, doc: str, lines: list[str]) -> str:
    pad = [f"        step_{i} = self.workers + {i}" for i in range(18 - len(lines))]
    return "\n".join([f"    def {name}(self, job):", f'        """{doc}"""', *lines, *pad, "        return job", ""])


#: A class longer than the chunk budget: each method is a chunk of its own.
QUEUE = "\n".join(
    [
        "class JobQueue:",
        '    """A queue of jobs run by workers. The queue holds jobs; workers take jobs from the queue."""',
        "",
        _method("push", "Put a job on the queue.", ["        self.jobs.append(job)"]),
        _method("size", "How many jobs the queue holds.", ["        count = len(self.jobs)"]),
        _method(
            "backoff_delay",
            "How long a failed job waits before its next retry: exponential backoff, capped.",
            ["        delay = 2 ** job.attempts", "        job.wait = min(delay, 300)"],
        ),
        _method("close", "Drop every job.", ["        self.jobs.clear()"]),
    ]
)


@pytest.fixture
def queue_repo(tmp_path):
    (tmp_path / "jobqueue.py").write_text(QUEUE)
    (tmp_path / "worker.py").write_text("def work(queue):\n    while queue.size():\n        queue.pop()\n")
    (tmp_path / "README.md").write_text("# Jobs\n\nA job queue with workers.\n")
    engine = Engine(tmp_path)
    engine.ensure_index(deep=False)
    yield engine
    engine.close()


def _ranking(engine: Engine, path: str, start: int, end: int, arm: str = "symbols") -> dict[str, list[Hit]]:
    """One arm's ranking holding only the chunk of ``path`` at ``start``-``end``, fifth: the
    arms reached the file through that chunk alone (weak evidence for it)."""
    row = [
        r
        for r in engine.view.chunks.rows_of_path(path).tolist()
        if engine.view.chunks.column("starts", [r])[0] == start
    ]
    assert row, "no chunk starts there"
    context = engine.view.chunks.context(row[0])
    return {arm: [Hit(arm, make_docid(path, start, end), path, start, end, 5, 1.0, context)]}


def _chunk_at(engine: Engine, path: str, name: str) -> tuple[int, int]:
    chunks = engine.view.chunks
    for r in chunks.rows_of_path(path).tolist():
        if name in (chunks.column("symbols", [r])[0] or "").split():
            return chunks.column("starts", [r])[0], chunks.column("ends", [r])[0]
    raise AssertionError(f"no chunk defines {name}")


def test_rows_of_path_are_every_chunk_of_the_file(queue_repo):
    chunks = queue_repo.view.chunks
    rows = chunks.rows_of_path("jobqueue.py")
    assert len(rows) >= 2
    assert set(chunks.column("paths", rows)) == {"jobqueue.py"}
    everything = [r for r in range(len(chunks)) if chunks.path(r) == "jobqueue.py"]
    assert rows.tolist() == everything
    assert chunks.rows_of_path("nowhere.py").tolist() == []


def test_every_chunk_of_a_top_file_competes_not_only_the_arms_candidates(queue_repo):
    """The arms reached the file through its class header only; the step still shows the
    method that answers, which no arm returned, first, and says why."""
    query = "how long does a failed job wait before the next retry backoff"
    start, end = _chunk_at(queue_repo, "jobqueue.py", "JobQueue")
    hits = queue_repo.fuse(_ranking(queue_repo, "jobqueue.py", start, end), query=query)
    first = hits[0]
    b_start, b_end = _chunk_at(queue_repo, "jobqueue.py", "backoff_delay")
    assert first.path == "jobqueue.py"
    assert (first.start_line, first.end_line) == (b_start, b_end)
    chunk = [s for s in first.signals if s.name == "chunk"]
    assert chunk and "of the file's" in chunk[0].reason
    # No arm ranked it over the whole index; the arms that ranked it within its file say so.
    assert first.provenance == [] and first.within and set(first.within) <= {"bm25", "dense"}
    assert first.to_dict().keys() >= {"provenance", "signals"} and "within" not in first.to_dict()


def test_a_files_boost_never_lifts_an_unrelated_chunk_over_the_one_that_answers(queue_repo):
    query = "backoff delay before retry"
    header = _chunk_at(queue_repo, "jobqueue.py", "JobQueue")
    hits = queue_repo.fuse(_ranking(queue_repo, "jobqueue.py", *header), query=query, top_k=5)
    spans = [(h.start_line, h.end_line) for h in hits if h.path == "jobqueue.py"]
    b_start, _ = _chunk_at(queue_repo, "jobqueue.py", "backoff_delay")
    answering = [i for i, (s, e) in enumerate(spans) if s <= b_start <= e]
    assert answering and answering[0] == 0


def test_chunk_files_zero_switches_the_step_off(queue_repo):
    query = "backoff delay before retry"
    header = _chunk_at(queue_repo, "jobqueue.py", "JobQueue")
    off = dataclasses.replace(DEFAULT_PARAMS, chunk_files=0)
    hits = queue_repo.fuse(_ranking(queue_repo, "jobqueue.py", *header), query=query, stage=off)
    assert [(h.start_line, h.end_line) for h in hits] == [header]
    assert not any(s.name == "chunk" for s in hits[0].signals)


def test_the_chunk_defining_the_named_symbol_is_chosen(queue_repo):
    header = _chunk_at(queue_repo, "jobqueue.py", "JobQueue")
    hits = queue_repo.fuse(_ranking(queue_repo, "jobqueue.py", *header), query="where is backoff_delay computed")
    b_start, _ = _chunk_at(queue_repo, "jobqueue.py", "backoff_delay")
    assert hits[0].start_line <= b_start <= hits[0].end_line
    assert any(s.name == "definition" for s in hits[0].signals)
    assert "defines backoff_delay" in next(s.reason for s in hits[0].signals if s.name == "chunk")


def test_the_pieces_of_one_definition_are_one_unit_shown_whole_when_it_fits():
    chunks = [
        (1, 30, (1, 70), "a.py > run", "run"),
        (21, 50, (1, 70), "a.py > run", ""),
        (41, 70, (1, 70), "a.py > run", ""),
        (72, 80, None, "a.py > stop", "stop"),
    ]
    fu = units_of("a.py", chunks, {"bm25": {(41, 70): 3.0, (72, 80): 2.0}, "dense": {(72, 80): 0.9, (1, 30): 0.5}})
    assert [(u.start, u.end) for u in fu.units] == [(1, 70), (72, 80)]
    run, stop = fu.units
    assert run.ranks == {"bm25": 1, "dense": 2} and stop.ranks == {"bm25": 2, "dense": 1}
    assert shown_span(run) == (1, 70)
    long = units_of("b.py", [(1, 40, (1, 200), "b.py > f", "f"), (31, 70, (1, 200), "b.py > f", "")], {})
    long.units[0].end = MAX_UNIT_LINES + 50
    assert shown_span(long.units[0]) == (1, 40)


# ----------------------------------------------------------------------------- quoted passages


@pytest.mark.parametrize(
    "query, phrases",
    [
        ("Where is the 'Duplicate Operation ID' warning emitted", [["duplicate", "operation", "id"]]),
        ('throw "Nesting limit ... reached" for deep input', [["nesting", "limit"]]),
        ("how the parent's and child's hooks merge", []),
        ("pointing to `serializeSpecialFloatingPointValues`?", []),  # one identifier: an OR term already
        ("the error “no variant of enum {} found”.", [["no", "variant", "of", "enum", "found"]]),
        (
            """the "'awaitClose { it.cancel() }' should be used" message""",
            [["awaitclose", "it", "cancel", "should", "be", "used"], ["awaitclose", "it", "cancel"]],
        ),
    ],
)
def test_quoted_phrases_are_the_passages_a_question_quotes(query, phrases):
    from ranklens.core.arms.fts5 import quoted_phrases

    assert quoted_phrases(query) == phrases


@pytest.fixture
def errors_repo(tmp_path):
    (tmp_path / "limits.py").write_text(
        "def check_depth(depth, limit):\n"
        "    if depth > limit:\n"
        "        raise ValueError('nesting limit reached for this document')\n"
        "    return depth\n"
    )
    (tmp_path / "nesting.py").write_text(
        "class Nesting:\n    '''Nesting of documents: the limit of nesting, nesting depth, nesting limit.'''\n"
        "    limit = 64\n    nesting = True\n"
    )
    engine = Engine(tmp_path)
    engine.ensure_index(deep=False)
    yield engine
    engine.close()


def test_the_fts5_arm_ranks_chunks_holding_a_quoted_passage_first(errors_repo):
    hits = errors_repo.run_arm("fts5", 'where is "limit reached for this document" raised for nesting').hits
    assert hits[0].path == "limits.py"


def test_a_hit_holding_a_quoted_passage_gets_the_quote_signal(errors_repo):
    result = errors_repo.search('where is "nesting limit reached" raised')
    first = result.hits[0]
    assert first.path == "limits.py"
    quote = [s for s in first.signals if s.name == "quote"]
    assert quote and "nesting limit reached" in quote[0].reason
    assert not any(s.name == "quote" for h in result.hits[1:] for s in h.signals)
    plain = errors_repo.search("where is nesting limit reached raised")
    assert not any(s.name == "quote" for h in plain.hits for s in h.signals)


def test_quoted_passages_are_looked_up_once_per_query(errors_repo, monkeypatch):
    """A slider move re-fuses without asking the index for the passages again."""
    calls = []
    real = errors_repo._find_quoted
    monkeypatch.setattr(errors_repo, "_find_quoted", lambda phrases: calls.append(phrases) or real(phrases))
    result = errors_repo.search('where is "nesting limit reached" raised')
    for k in (2, 5, 20):
        errors_repo.fuse(result.results.values(), k=k)
    assert len(calls) == 1


def test_a_hit_defining_two_named_names_of_one_length_is_explained_alike_in_every_process(tmp_path):
    """Which of the names it says the hit defines does not depend on the process's string
    hashing (it did: a set's order), so the CLI, the MCP server and the TUI explain alike."""
    import json

    from cli_helpers import run

    (tmp_path / "records.py").write_text(
        "def first_or_create(rows):\n    return rows[0] if rows else create(rows)\n\n\n"
        "def create_or_first(rows):\n    return create(rows) or rows[0]\n"
    )
    (tmp_path / "other.py").write_text("def unrelated():\n    return 1\n")
    assert run("index", str(tmp_path)).returncode == 0
    reasons = set()
    for seed in ("0", "1", "2", "3", "4"):
        out = run(
            "query",
            "first_or_create or create_or_first",
            "--root",
            str(tmp_path),
            "--json",
            env={"PYTHONHASHSEED": seed},
        )
        assert out.returncode == 0, out.stderr
        top = json.loads(out.stdout)["results"][0]
        reasons.add(tuple(s["reason"] for s in top["signals"] if s["name"] in ("definition", "chunk")))
    assert len(reasons) == 1 and "defines create_or_first" in next(iter(reasons))[0]


def test_ranking_a_files_units_for_its_first_places_gives_the_first_of_the_whole_ranking(queue_repo):
    """rank_units with ``places`` gives the first units of the ranking of every unit, with
    their scores."""
    from ranklens.core.query.chunkstep import rank_units
    from ranklens.core.query.priors import adjuster
    from ranklens.core.query.ranking import Stage

    for query in ("how long does a failed job wait before the next retry", "JobQueue push", "close the queue"):
        stage = Stage(query, adjuster(query))
        fu = queue_repo.file_units(query, ["jobqueue.py"])["jobqueue.py"]
        assert len(fu.units) >= 4
        for groups in ([], [(1, 10, 0.4)]):
            args = (
                fu,
                {"bm25": 1.2, "dense": 0.8},
                5.0,
                groups,
                stage.labelled(fu.shape),
                None,
                len(stage.shape.keywords),
                DEFAULT_PARAMS,
            )
            whole = [(u.start, score) for u, score in rank_units(*args)]
            for places in range(1, len(fu.units)):
                part = rank_units(*args, places=places)
                assert [(u.start, score) for u, score in part] == whole[:places]


def test_units_ranked_as_arrays_are_the_units_of_the_loop_ties_and_pieces_included():
    """The engine's array ranking of several files' units (:func:`units_ranked`, and
    :func:`rank_units` from the arrays for a large file) gives the units, ranks, shown chunks,
    scores and order of :func:`units_of` and the loop, with tied scores and long definitions."""
    import random

    import numpy as np

    from ranklens.core.query.chunkstep import ARRAYS_FROM, rank_units, skeleton, units_ranked

    rng = random.Random(18)
    for _trial in range(20):
        files, row = [], 0
        for f, n in enumerate((rng.randint(1, 12), ARRAYS_FROM + rng.randint(0, 60), rng.randint(5, 30))):
            listed, line = [], 1
            for _definition in range(n):
                pieces = rng.choice((1, 1, 1, 2, 3))
                first, spans = line, []
                for _ in range(pieces):
                    end = line + rng.randint(2, 40)
                    spans.append((line, end))
                    line = end - rng.randint(0, 1) + 1
                piece_of = (first, spans[-1][1]) if pieces > 1 else None
                for i, (s, e) in enumerate(spans):
                    listed.append(
                        (
                            s,
                            e,
                            piece_of,
                            f"f{f}.py > d{len(listed)}",
                            "x_target" if i == 0 and rng.random() < 0.1 else "",
                        )
                    )
            shape = skeleton(listed)
            rows = np.arange(row, row + len(listed), dtype=np.int64)
            row += len(listed) + rng.randint(0, 5)
            unit = np.array([shape.of_chunk[(c[0], c[1])] for c in listed], dtype=np.int64)
            bounds = np.array([(u[0], u[1]) for u in shape.units], dtype=np.int64)
            files.append((f"f{f}.py", shape, rows, unit, bounds[:, 0], bounds[:, 1], [(c[0], c[1]) for c in listed]))
        found, loop = {}, {p: {} for p, *_ in files}
        span_of = {r: (p, span) for p, _s, rows, _u, _a, _b, spans in files for r, span in zip(rows.tolist(), spans)}
        for arm in ("bm25", "dense"):
            rows = [r for r in span_of if rng.random() < 0.7]
            scored = sorted(((float(rng.choice((1, 2, 2, 3, 5))), r) for r in rows), key=lambda t: -t[0])
            found[arm] = (np.array([r for _s, r in scored], dtype=np.int64), np.array([s for s, _r in scored]))
            for score, r in scored:
                path, span = span_of[r]
                loop[path].setdefault(arm, {})[span] = score
        arrays = units_ranked(files, found)
        for path, shape, *_ in files:
            want, got = units_of(path, shape, loop[path]), arrays[path]
            assert [(u.start, u.end, u.ranks, u.chunks, u.best_chunk) for u in got.units] == [
                (u.start, u.end, u.ranks, u.chunks, u.best_chunk) for u in want.units
            ]
            groups = [
                (s, s + rng.randint(0, 30), rng.choice((0.01, 0.02, 0.03)))
                for s in rng.sample(range(1, 400), rng.randint(0, 6))
            ]
            # What each unit's names add, given for the units that have some (the others none).
            labelled = {
                n: ({s for s in u.symbols if s == "x_target"}, ["d"] if u.start % 3 == 0 else [])
                for n, u in enumerate(want.units)
                if "x_target" in u.symbols or u.start % 3 == 0
            }
            quoted = [(u.start, u.end, "a passage") for u in rng.sample(want.units, min(2, len(want.units)))]
            for places in (1, 2, 5, None):
                for quotes in (None, quoted):
                    args = ({"bm25": 1.2, "dense": 0.8}, 60.0, groups, labelled, quotes, 2, DEFAULT_PARAMS)
                    fresh = units_ranked(files, found)[path]
                    loop_ranked = rank_units(units_of(path, shape, loop[path]), *args, places=places)
                    array_ranked = rank_units(fresh, *args, places=places)
                    assert [(u.start, s, u.memo) for u, s in array_ranked] == [
                        (u.start, s, u.memo) for u, s in loop_ranked
                    ]
                    assert len(array_ranked) == min(places or len(want.units), len(want.units))


def test_what_a_files_units_names_hold_is_what_the_stage_finds_in_each():
    """Stage.labelled (worked out from a file's index of its units' names, kept per view)
    gives each unit what Stage.named and Stage.label_keywords give it, and no other unit
    anything: forms of a keyword, names in other cases, qualified names, lookups."""
    import random

    from ranklens.core.query.chunkstep import skeleton
    from ranklens.core.query.priors import adjuster
    from ranklens.core.query.ranking import Stage

    rng = random.Random(7)
    words = [
        "retry", "retries", "retrying", "Retry", "RetryPolicy", "retry_after", "ret", "re", "policy",
        "parse", "parser", "parsed", "parseArgs", "ParseError", "args", "arg", "csv", "csvs", "CSV",
        "reader", "read", "readLines", "lock", "Lock", "locked", "thread", "threads", "Thread.lock",
        "json", "JSONDecoder", "decode", "decoder", "decoding", "x", "Queue::push", "push",
    ]  # fmt: skip
    queries = [
        "how are retries delayed by the policy", "parseArgs", "ParseError", "Thread.lock", "read a csv",
        "where does JSONDecoder decode", "retry_after header parsing", "Queue::push", "lock", "csv",
    ]  # fmt: skip
    for _trial in range(30):
        listed, line = [], 1
        for _unit in range(rng.randint(1, 60)):
            end = line + rng.randint(1, 30)
            crumb = " > ".join(rng.sample(words, rng.randint(0, 3)))
            symbol = " ".join(rng.sample(words, rng.randint(0, 2)))
            listed.append((line, end, None, f"f.py > {crumb}" if crumb else "f.py", symbol))
            line = end + 1
        shape = skeleton(listed)
        for query in queries:
            stage = Stage(query, adjuster(query))
            got = stage.labelled(shape)
            for n, (_s, _e, context, symbols, *_rest) in enumerate(shape.units):
                want = (stage.named(symbols), stage.label_keywords(symbols, context))
                assert got.get(n, (set(), [])) == want, (query, symbols, context)
                assert n not in got or want != (set(), [])


def test_a_files_hits_never_show_the_same_lines_twice(tmp_path):
    """A long stretch outside any definition is chunked as overlapping windows; the units
    the step places for the file each show lines no other of its hits shows, the place of
    a window overlapping a better one going to the next window that does not."""
    (tmp_path / "settings.py").write_text(
        "".join(
            f"config_value_{i} = compute_setting({i})  # retry budget for worker pool step {i}\n" for i in range(160)
        )
    )
    (tmp_path / "other.py").write_text("def unrelated():\n    return 1\n")
    engine = Engine(tmp_path)
    engine.ensure_index(deep=False)
    try:
        rows = engine.view.chunks.rows_of_path("settings.py").tolist()
        windows = list(zip(engine.view.chunks.column("starts", rows), engine.view.chunks.column("ends", rows)))
        assert any(a[1] >= b[0] for a, b in itertools.pairwise(windows)), (
            "the fixture must chunk into overlapping windows"
        )
        hits = [h for h in engine.search("retry budget worker pool step 95", top_k=10).hits if h.path == "settings.py"]
        assert len(hits) >= 2
        spans = sorted((h.start_line, h.end_line) for h in hits)
        assert all(a[1] < b[0] for a, b in itertools.pairwise(spans)), spans
    finally:
        engine.close()


def test_distinct_units_are_the_greedy_pick_of_the_whole_ranking(queue_repo):
    """However few places are asked for, the distinct units are the first of the greedy pick
    over the file's whole ranking (a unit kept when it overlaps no better unit kept)."""
    from ranklens.core.query.chunkstep import Unit, distinct_units, rank_units

    # Twelve overlapping windows of 40 lines, 10 apart, each ranked by one arm in a shuffled order.
    units = [Unit(1 + 10 * i, 40 + 10 * i, "", ()) for i in range(12)]
    for rank, i in enumerate([5, 6, 0, 11, 2, 9, 1, 3, 7, 10, 4, 8], start=1):
        units[i].ranks["bm25"] = rank
    fu = FileUnits("a.py", units)
    args = ({"bm25": 1.0}, 60.0, [], {}, None, 0, DEFAULT_PARAMS)
    kept: list[tuple[int, int]] = []
    for unit, _score in rank_units(fu, *args):
        if all(unit.end < s or unit.start > e for s, e in kept):
            kept.append((unit.start, unit.end))
    for places in range(6):
        got = [(u.start, u.end) for u, _s in distinct_units(fu, *args, places=places)]
        assert got == kept[:places]


@pytest.mark.parametrize("arm_name", ["bm25", "dense"])
def test_a_files_chunks_rank_as_in_the_whole_index_after_an_update(tmp_path, arm_name):
    """The chunk step asks an arm for a few files' rows (``among``); after an update (a
    segment of its own, the old chunks tombstoned) that must rank them exactly as the arm
    ranks them over the whole index, filtered to those files."""
    import numpy as np

    (tmp_path / "jobqueue.py").write_text(QUEUE)
    for i in range(6):
        (tmp_path / f"mod{i}.py").write_text(QUEUE.replace("JobQueue", f"Queue{i}").replace("retry", f"retry{i}"))
    engine = Engine(tmp_path)
    try:
        engine.ensure_index(deep=False)
        (tmp_path / "jobqueue.py").write_text(QUEUE.replace("capped", "capped at five minutes"))
        (tmp_path / "mod2.py").write_text(QUEUE.replace("JobQueue", "Other"))
        engine.ensure_index(deep=False)
        query = "how long does a failed job wait before the next retry"
        arm, _ = engine._arm_on_view(arm_name)
        view = engine.view
        paths = ["jobqueue.py", "mod2.py", "mod4.py"]
        rows = np.sort(np.concatenate([view.chunks.rows_of_path(p) for p in paths]))
        allowed = np.zeros(len(view.chunks), dtype=bool)
        allowed[rows] = True
        got_rows, got_scores = arm.scores(query, len(rows), allowed, rows)
        every_rows, every_scores = arm.scores(query, len(view.chunks) + 100)
        keep = np.isin(every_rows, rows)
        assert got_rows.tolist() == every_rows[keep].tolist()
        assert np.allclose(got_scores, every_scores[keep], rtol=1e-6)
        masked_rows, _ = arm.scores(query, len(rows), allowed)
        assert got_rows.tolist() == masked_rows.tolist()
        assert len(got_rows) >= 3
    finally:
        engine.close()


def test_a_path_held_under_two_codes_finds_the_rows_of_both():
    from ranklens.core.storage.chunktable import _codes_of

    # A concatenated table does not merge its parts' values: one path may have two codes.
    assert _codes_of(["a.py", "b.py"]) == {"a.py": 0, "b.py": 1}
    assert _codes_of(["a.py", "b.py", "a.py"]) == {"a.py": [0, 2], "b.py": 1}


# ----------------------------------------------------------------------------- trivial units (#42)


def test_a_trivial_unit_is_never_a_hit_or_a_runner_up(tmp_path):
    """A lone ``}``, ``}`` with ``export default X;``, ``package main``: never shown (they were,
    as the unit after a long method, for a question matching nothing in particular)."""
    from test_chunking import STATS_GO, WIDGET_TS

    from ranklens.core.chunking.budget import trivial

    (tmp_path / "widget.ts").write_text(WIDGET_TS)
    (tmp_path / "stats.go").write_text(STATS_GO)
    (tmp_path / "main.go").write_text("package main\n\nfunc main() {\n\tprintln(NewStats())\n}\n")
    engine = Engine(tmp_path)
    engine.ensure_index(deep=False)
    try:
        for query in ("export default Widget", "package main", "widget render compute", "stats counters"):
            hits = engine.search(query, top_k=20).hits
            assert hits
            for h in hits:
                lines = (tmp_path / h.path).read_text().split("\n")
                spans = [(h.start_line, h.end_line)] + [(a.start_line, a.end_line) for a in h.alternatives]
                for start, end in spans:
                    assert not trivial("\n".join(lines[start - 1 : end])), (query, h.path, start, end)
    finally:
        engine.close()


# ----------------------------------------------------------------------------- a long unit's window (#42)


def test_a_long_units_piece_holds_the_lines_the_arms_matched():
    """A method of 200 lines: dense's best piece of it is its first (its docstring), bm25's the
    one holding the question's words (lines 121-160). It shows a window around bm25's, widened
    over dense's only while the window fits; before, the piece of the unit's best rank
    (dense's #1 over bm25's #2) showed lines 1-40."""
    pieces = [(1, 40), (31, 70), (61, 100), (91, 130), (121, 160), (151, 200)]
    chunks = [(s, e, (1, 200), "a.py > deliver", "deliver" if s == 1 else "") for s, e in pieces]
    chunks.append((202, 210, None, "a.py > log_failed", "log_failed"))
    bm25 = {(202, 210): 9.0, (121, 160): 5.0, (91, 130): 4.0, (1, 40): 1.0}
    dense = {(1, 40): 0.9, (202, 210): 0.5, (121, 160): 0.4}
    fu = units_of("a.py", chunks, {"bm25": bm25, "dense": dense})
    deliver = fu.units[0]
    assert deliver.ranks == {"bm25": 2, "dense": 1} and deliver.best_chunk == (1, 40)
    start, end = shown_span(deliver)
    assert start <= 121 and end >= 160 and end - start + 1 <= MAX_UNIT_LINES
    # Matched pieces close enough to share a window are shown together.
    near = units_of("a.py", chunks, {"bm25": bm25, "dense": {(91, 130): 0.9}})
    assert shown_span(near.units[0]) == (91, 160)


def test_a_long_method_shows_the_lines_that_answer(tmp_path):
    """Through the engine: the hit on a 120-line method holds the comparison and the call that
    answer the question, 115 lines into it."""
    filler_a = "\n".join(f"        payload_{i} = self.serializer.field(event, {i})" for i in range(60))
    filler_b = "\n".join(f"        header_{i} = self.headers.get('x-{i}')" for i in range(50))
    code = f'''class WebhookSubscription:
    """A subscription that posts events to a URL."""

    def deliver(self, event):
        """Send one event to the subscriber's webhook and record the delivery."""
        body = self.render(event)
{filler_a}
        response = self.http.post(self.url, body)
        delivery = self.deliveries.create(status=response.status)
{filler_b}
        failed = self.deliveries.recent(limit=25).count_failed()
        if failed >= MAX_FAILED_DELIVERIES:
            self.disable()
        return delivery

    def render(self, event):
        return self.serializer.dump(event)
'''
    (tmp_path / "webhooks.py").write_text(code)
    (tmp_path / "other.py").write_text("def unrelated():\n    return 1\n")
    answer = [n for n, line in enumerate(code.split("\n"), 1) if "MAX_FAILED" in line or "disable()" in line]
    engine = Engine(tmp_path)
    engine.ensure_index(deep=False)
    try:
        hits = engine.search("when does a webhook get switched off because too many deliveries failed").hits
        (method,) = [h for h in hits if h.context.endswith("deliver")]
        assert method.start_line <= answer[0] and answer[-1] <= method.end_line, (method.docid, answer)
        assert method.end_line - method.start_line + 1 <= MAX_UNIT_LINES
    finally:
        engine.close()


# ----------------------------------------------------------------------------- declarations (#42)

_SETTINGS_GO = "\n".join(f"\t// Tier{i} is the wait of tier {i}.\n\tTier{i} time.Duration" for i in range(14))
POLICY_GO = f"""package retry

import "time"

// Policy holds the settings of each tier.
type Policy struct {{
{_SETTINGS_GO}
}}

// Next computes the backoff delay before the next attempt: doubled each retry, capped.
func (p *Policy) Next(attempt int) time.Duration {{
\twait := p.Tier0
\tfor i := 0; i < attempt; i++ {{
\t\twait = wait * 2
\t\tif wait > p.Tier13 {{
\t\t\treturn p.Tier13
\t\t}}
\t}}
\tlog.Printf("next attempt %d in %s", attempt, wait)
\tschedule(attempt, wait)
\treturn wait
}}
"""


def _decls(engine: Engine, path: str) -> dict[str, bool]:
    """Each chunk of ``path`` by its first name: whether the index flags it a declaration."""
    chunks = engine.view.chunks
    rows = chunks.rows_of_path(path)
    symbols, decls = chunks.columns(("symbols", "decls"), rows)
    return {s.split()[0] if s else "": bool(d) for s, d in zip(symbols, decls)}


def test_the_declaration_flag_is_kept_with_the_unit_and_survives_an_update(tmp_path):
    (tmp_path / "policy.go").write_text(POLICY_GO)
    (tmp_path / "other.go").write_text("package retry\n\nfunc other() int {\n\treturn helper(1)\n}\n")
    engine = Engine(tmp_path)
    engine.ensure_index(deep=False)
    try:
        assert _decls(engine, "policy.go") == {"Policy": True, "Next": False}
        (tmp_path / "other.go").write_text("package retry\n\nfunc other() int {\n\treturn helper(2)\n}\n")
        assert engine.ensure_index(deep=False).changed == 1
        assert _decls(engine, "policy.go") == {"Policy": True, "Next": False}  # an old segment's
        (tmp_path / "policy.go").write_text(POLICY_GO + "\n// Reset clears nothing.\nfunc Reset() {}\n")
        engine.ensure_index(deep=False)
        assert _decls(engine, "policy.go") == {"Policy": True, "Next": False}  # chunked again (Reset packed with Next)
    finally:
        engine.close()
    # A fresh engine reads it back from the segments on disk.
    again = Engine(tmp_path)
    try:
        again.ensure_index(deep=False)
        assert _decls(again, "policy.go")["Policy"] is True
    finally:
        again.close()


def _policy_repo(root):
    """A retry policy in Go, Python and TypeScript: a declaration of its settings (a struct, a
    dataclass, an interface) and the function that computes the wait, in one file each."""
    names = [
        "base",
        "cap",
        "factor",
        "jitter",
        "attempts",
        "deadline",
        "budget",
        "window",
        "floor",
        "ceiling",
        "spread",
        "grace",
    ]
    go_fields = "\n".join(f"\t// {n.title()} is the policy's {n}.\n\t{n.title()} time.Duration" for n in names)
    (root / "policy.go").write_text(f"""package retry

    import "time"

    // RetryPolicy is the retry policy: the backoff settings.
    type RetryPolicy struct {{
    {go_fields}
    }}

    // NextWait computes the backoff delay before a retry.
    func (p *RetryPolicy) NextWait(attempt int) time.Duration {{
    \twait := p.Base
    \tfor i := 0; i < attempt; i++ {{
    \t\twait = wait * 2
    \t\tif wait > p.Cap {{
    \t\t\treturn p.Cap
    \t\t}}
    \t}}
    \tlog.Printf("retry %d in %s", attempt, wait)
    \tschedule(attempt, wait)
    \treturn wait
    }}
    """)
    py_fields = "\n".join(f"    #: The policy's {n}.\n    {n}: float = 1.0" for n in names)
    (root / "policy.py").write_text(f'''import random
    from dataclasses import dataclass


    @dataclass
    class RetryPolicy:
        """The retry policy: the backoff settings."""

    {py_fields}


    def next_wait(policy, attempt):
        """Compute the backoff delay before a retry."""
        wait = policy.base
        for _ in range(attempt):
            wait = wait * 2
            if wait > policy.cap:
                return policy.cap
        log.info("retry %d in %s", attempt, wait)
        schedule(attempt, wait)
        return wait
    ''')
    ts_fields = "\n".join(f"  /** The policy's {n}. */\n  {n}: number;" for n in names)
    (root / "policy.ts").write_text(f"""/** The retry policy: the backoff settings. */
    export interface RetryPolicy {{
    {ts_fields}
    }}

    /** Compute the backoff delay before a retry. */
    export function nextWait(policy: RetryPolicy, attempt: number): number {{
      let wait = policy.base;
      for (let i = 0; i < attempt; i++) {{
        wait = wait * 2;
        if (wait > policy.cap) {{
          return policy.cap;
        }}
      }}
      log.info(`retry ${{attempt}} in ${{wait}}`);
      schedule(attempt, wait);
      return wait;
    }}
    """)


def test_a_declaration_ranks_below_the_behaviour_for_a_how_does_question(tmp_path):
    _policy_repo(tmp_path)
    engine = Engine(tmp_path)
    engine.ensure_index(deep=False)
    query = "how does the retry policy compute the backoff delay"
    try:
        settings = engine.fusion()
        assert settings.stage.chunk_declaration > 0  # shipped on

        def places(settings) -> dict[str, list[str]]:
            hits = engine.search(query, settings, top_k=10).hits
            out: dict[str, list[str]] = {}
            for h in hits:
                out.setdefault(h.path, []).append(h.context.split(" > ")[-1])
            return out, hits

        shown, hits = places(settings)
        for path in ("policy.go", "policy.py", "policy.ts"):
            assert shown[path][0] != "RetryPolicy", (path, shown[path])
            assert "RetryPolicy" in shown[path]
        demoted = [h for h in hits if h.context.endswith("RetryPolicy")]
        assert all(
            "demoted as a declaration" in next(s.reason for s in h.signals if s.name == "chunk") for h in demoted
        )
        # Without the penalty a declaration came first in its file.
        off, _ = places(dataclasses.replace(settings, stage=dataclasses.replace(settings.stage, chunk_declaration=0.0)))
        assert any(off[path][0] == "RetryPolicy" for path in off)
    finally:
        engine.close()


# ----------------------------------------------------------------------------- a call's lift (issue #42)


def _callers_by_name(engine: Engine, path: str) -> dict[str, set[str]]:
    """Each single-name unit of ``path`` -> the first names of the units of the file calling it."""
    from ranklens.core.graph.within import unit_names

    fu = engine.file_units("anything", [path])[path]
    names = [unit_names(u[3]) for u in fu.shape.units]
    return {
        names[n][0]: {names[c][0] if names[c] else "" for c in of}
        for n, of in enumerate(fu.callers)
        if len(names[n]) == 1
    }


def _padded(body: list[str], pad: str, n: int = 24) -> list[str]:
    """``body`` after ``n`` lines of ``pad`` (each numbered): functions too long to pack together."""
    return [pad.format(i=i) for i in range(n)] + body


def _py(name: str, call: str) -> str:
    return "\n".join(
        [f"def {name}(request):", *_padded([f"    return {call}"], "    step_{i} = request.count({i})"), ""]
    )


def _go(name: str, call: str) -> str:
    body = _padded([f"\treturn {call}"], "\tstep{i} := len(r) + {i}\n\t_ = step{i}")
    return "\n".join([f"func {name}(r string) string {{", *body, "}", ""])


def _ts(name: str, call: str) -> str:
    body = _padded([f"  return {call};"], "  const step{i} = r.length + {i};")
    return "\n".join([f"export function {name}(r: string): string {{", *body, "}", ""])


#: A file in each of three languages: ``handle`` calls ``sanitize``; ``unrelated`` calls nothing.
CALLS = {
    "calls.py": "\n\n".join(
        [_py("handle", "sanitize(request)"), _py("sanitize", "request.strip()"), _py("unrelated", "request")]
    ),
    "calls.go": "package calls\n\n"
    + "\n".join([_go("Handle", "sanitize(r)"), _go("sanitize", "r"), _go("Unrelated", "r")]),
    "calls.ts": "\n".join([_ts("handle", "sanitize(r)"), _ts("sanitize", "r.trim()"), _ts("unrelated", "r")]),
}


def test_a_files_units_know_which_of_its_units_call_them_in_three_languages(tmp_path):
    for rel, text in CALLS.items():
        (tmp_path / rel).write_text(text)
    engine = Engine(tmp_path)
    engine.ensure_index(deep=False)
    try:
        for path, caller in (("calls.py", "handle"), ("calls.go", "Handle"), ("calls.ts", "handle")):
            fu = engine.file_units("anything", [path])[path]
            assert fu.callers is not None and len(fu.callers) == len(fu.units)
            names = [u.symbols for u in fu.units]
            callee = next(n for n, s in enumerate(names) if "sanitize" in " ".join(s).split())
            assert [" ".join(names[c]).split()[0] for c in fu.callers[callee]] == [caller], (path, names)
            unrelated = next(n for n, s in enumerate(names) if "unrelated" in " ".join(s).lower().split())
            assert fu.callers[unrelated] == ()
    finally:
        engine.close()


def test_a_unit_holding_another_is_not_its_caller_nor_held_by_it():
    """A class's unit (lines 1-40) spelling its method's name and the method's unit (10-20, inside
    it) spelling the class's: neither calls the other; a unit after both (50-60) calls the method."""
    import numpy as np

    from ranklens.core.graph.uses import Uses, name_hash
    from ranklens.core.graph.within import callers_within

    uses = Uses.of_pairs(
        np.array([name_hash("load"), name_hash("Cache"), name_hash("load")], dtype=np.uint64),
        np.array([0, 1, 2]),
    )

    class Chunks:
        def by_segment(self, rows):
            yield 0, np.arange(len(rows)), rows

    class View:
        chunks = Chunks()

    class Edges:
        def __init__(self):
            self.segments, self.view = [uses], View()

    rows = np.array([0, 1, 2], dtype=np.int64)
    found = callers_within(
        Edges(), rows, np.array([0, 1, 2]), [["Cache"], ["load"], ["main"]], [(1, 40), (10, 20), (50, 60)]
    )
    assert found == ((), (2,), ())


def _called_units(chunks, callers, in_words=True, lift=0.25):
    """The units of a made-up file (``chunks``) ranked with these callers, first names first."""
    from ranklens.core.query.chunkstep import rank_units

    fu = units_of("f.py", chunks, {"bm25": {(1, 10): 4.0, (11, 20): 3.0, (21, 30): 2.0, (31, 40): 1.0}}, callers)
    params = dataclasses.replace(DEFAULT_PARAMS, chunk_called=lift)
    ranked = rank_units(fu, {"bm25": 1.0}, 5.0, [], {}, None, 0, params, in_words=in_words)
    return [(u.symbols[0].split()[0], u.called_by) for u, _score in ranked]


def _four_units(last: str) -> list[tuple]:
    """A made-up file's four units, each ten lines: handle, close, open, then ``last`` (its
    names, space-separated)."""
    names = ["handle", "close", "open", last]
    return [(10 * i + 1, 10 * i + 10, None, f"f.py > {', '.join(n.split())}", n) for i, n in enumerate(names)]


def test_a_unit_the_files_best_unit_calls_is_lifted_for_a_question_in_words():
    chunks = _four_units("sanitize")
    callers = ((), (), (), (0,))  # handle calls sanitize
    assert _called_units(chunks, callers, lift=0.0) == [("handle", ""), ("close", ""), ("open", ""), ("sanitize", "")]
    lifted = _called_units(chunks, callers)
    assert lifted[0] == ("handle", "") and lifted[1] == ("sanitize", "handle")
    # Not for a bare identifier (the question names what it wants), and not with no callers known.
    assert [n for n, _ in _called_units(chunks, callers, in_words=False)] == ["handle", "close", "open", "sanitize"]
    assert [n for n, _ in _called_units(chunks, None)] == ["handle", "close", "open", "sanitize"]


def test_a_unit_packing_several_definitions_is_not_lifted_by_a_call():
    ranked = _called_units(_four_units("size empty"), ((), (), (), (0,)))
    assert [n for n, _ in ranked] == ["handle", "close", "open", "size"]


def test_the_chunk_signal_says_which_unit_called_it():
    from ranklens.core.query.chunkstep import Unit, explain

    unit = Unit(31, 40, "f.py > sanitize", ("sanitize",), {"bm25": 4}, called_by="handle")
    assert "used by handle in this file" in explain(unit, 4).reason


def test_a_files_callers_follow_an_update(tmp_path):
    (tmp_path / "calls.py").write_text(CALLS["calls.py"])
    engine = Engine(tmp_path)
    engine.ensure_index(deep=False)
    try:
        assert _callers_by_name(engine, "calls.py")["sanitize"] == {"handle"}
        edited = [_py("handle", "request"), _py("sanitize", "request.strip()"), _py("unrelated", "sanitize(request)")]
        (tmp_path / "calls.py").write_text("\n\n".join(edited))
        engine.ensure_index(deep=False)
        assert _callers_by_name(engine, "calls.py")["sanitize"] == {"unrelated"}
    finally:
        engine.close()
