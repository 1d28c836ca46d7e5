"""The engine over a real index of a small multi-language repository."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import threading
from dataclasses import replace

import pytest
from index_checks import assert_fts_matches_chunks, fts_instances

from ranklens.core.arms.protocol import IndexSettings
from ranklens.core.base._sqlite import sqlite3
from ranklens.core.engine import CANDIDATE_DEPTH, Engine, QueryError, check_query
from ranklens.core.storage.store import index_dir


@pytest.fixture
def engine(sample_repo):
    eng = Engine(sample_repo)
    eng.ensure_index()
    yield eng
    eng.close()


def test_index_holds_every_discovered_file_and_skips_secrets(engine):
    paths = set(engine.view.chunks.paths)
    assert {
        "app/auth.py",
        "app/cache.py",
        "web/router.js",
        "server/main.go",
        "engine/src/lib.rs",
        "docs/guide.md",
    } <= paths
    assert not paths & {".env", "keys/server.pem", "ignored/skip.py", "debug.log", "logo.png"}


def test_every_default_arm_answers_and_fusion_agrees(engine):
    result = engine.search("verify the password of a user", top_k=5)
    assert result.answered == ["bm25", "fts5", "dense", "symbols"], result.skipped
    top = result.hits[0]
    assert top.path == "app/auth.py"
    assert top.agreement >= 3 and top.confidence == "high"
    assert [h.rank for h in result.hits] == list(range(1, len(result.hits) + 1))
    for arm in result.answered:
        assert len(result.results[arm].hits) <= CANDIDATE_DEPTH


def test_arms_report_as_soon_as_ready_from_their_own_threads(engine):
    seen = []
    engine.search("rate limiter allow client", on_arm=lambda r: seen.append((r.arm, threading.current_thread().name)))
    assert sorted(a for a, _ in seen) == ["bm25", "dense", "fts5", "symbols"]
    assert all(name.startswith("ranklens-arm") for _, name in seen)


def test_refuse_reorders_without_rerunning_arms(engine):
    result = engine.search("parse configuration file", top_k=10)
    calls = []
    original = engine.run_arm
    engine.run_arm = lambda *a, **kw: calls.append(a) or original(*a, **kw)
    only_md = engine.fuse(result.results.values(), weights={"bm25": 0, "fts5": 0, "dense": 0, "symbols": 1})
    assert calls == []
    assert all(h.provenance == ["symbols"] for h in only_md)


def test_engine_fuse_keeps_touching_chunks_apart_and_collapses_pieces(engine):
    from ranklens.core.base.types import Hit

    def h(arm, start, end, rank, of=None):
        return Hit(arm, f"a.py:{start}-{end}", "a.py", start, end, rank, 1.0, "a.py", None, of)

    rankings = {
        "bm25": [h("bm25", 1, 20, 1), h("bm25", 21, 40, 2), h("bm25", 50, 89, 3, (50, 129))],
        "dense": [h("dense", 90, 129, 1, (50, 129))],
    }
    spans = [(x.start_line, x.end_line) for x in engine.fuse(rankings, priors=False)]
    assert sorted(spans) == [(1, 20), (21, 40), (50, 129)]


def test_filters_restrict_every_arm(engine):
    result = engine.search("parse", path_glob="engine/*", top_k=5)
    for r in result.results.values():
        assert all(h.path.startswith("engine/") for h in r.hits)
    result = engine.search("route request", language="javascript", top_k=5)
    assert {h.path for h in result.hits} <= {"web/router.js"}


def test_fts5_never_parses_user_syntax(engine):
    for q in ['NOT "unterminated', "a* OR NEAR(b c)", "col:value ^start", "AND OR NOT"]:
        r = engine.run_arm("fts5", q)
        assert r.error is None, r.error


@pytest.mark.parametrize("bad", ["", "   ", "x" * 1001, "!!! ???"])
def test_bad_queries_are_refused(bad):
    with pytest.raises(QueryError):
        check_query(bad)


def test_unknown_arm_is_refused_and_a_broken_arm_is_skipped(engine, monkeypatch):
    with pytest.raises(QueryError):
        engine.search("x", arms=["nope"])
    from ranklens.core import arms

    def broken(view):
        raise ImportError("No module named 'usearch'")

    monkeypatch.setitem(arms.REGISTRY, "dense", replace(arms.REGISTRY["dense"], open=broken))
    engine._arms.clear()
    result = engine.search("login user session")
    assert dict(result.skipped)["dense"].startswith("missing dependency")
    assert result.hits


def test_model_that_cannot_load_skips_dense_with_reason(sample_repo):
    eng = Engine(sample_repo, IndexSettings(model=str(sample_repo / "no-such-model")))
    stats = eng.ensure_index()
    assert stats.dense
    result = eng.search("login user")
    assert "dense" in dict(result.skipped)
    assert set(result.answered) == {"bm25", "fts5", "symbols"}


def test_incremental_update_touches_only_changed_files(engine, sample_repo):
    before = engine.ensure_index()
    assert before.up_to_date and before.embedded == 0
    (sample_repo / "app/cache.py").write_text("def evict_everything():\n    return 'flush'\n")
    (sample_repo / "app/new.py").write_text("def brand_new_feature():\n    pass\n")
    os.remove(sample_repo / "web/router.js")
    stats = engine.ensure_index()
    assert (stats.added, stats.changed, stats.removed) == (1, 1, 1)
    assert stats.embedded == 2  # one chunk each for the two small files
    paths = set(engine.view.chunks.paths)
    assert "web/router.js" not in paths and "app/new.py" in paths
    hit = engine.search("brand_new_feature").hits[0]
    assert hit.path == "app/new.py"
    assert not engine.search("dispatch Router addRoute").hits or all(
        h.path != "web/router.js" for h in engine.search("dispatch Router addRoute").hits
    )


def test_touch_without_change_rehashes_but_does_not_reindex(engine, sample_repo):
    path = sample_repo / "app/auth.py"
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10_000_000_000))
    stats = engine.ensure_index()
    assert stats.up_to_date and stats.embedded == 0


def test_corrupt_database_is_rebuilt_with_a_message(sample_repo):
    notes = []
    eng = Engine(sample_repo, notify=notes.append)
    eng.ensure_index()
    db = eng.directory / "index.sqlite"
    for extra in ("-wal", "-shm"):
        (eng.directory / f"index.sqlite{extra}").unlink(missing_ok=True)
    db.write_bytes(b"this is not a database" * 100)
    stats = Engine(sample_repo, notify=notes.append).ensure_index()
    assert stats.rebuilt and "corrupt" in stats.rebuilt
    assert any("rebuilding" in n for n in notes)
    assert stats.chunks > 0


def test_foreign_format_version_is_rebuilt(sample_repo):
    eng = Engine(sample_repo)
    eng.ensure_index()
    conn = sqlite3.connect(eng.directory / "index.sqlite")
    conn.execute("UPDATE meta SET value = '999' WHERE key = 'format'")
    conn.commit()
    conn.close()
    stats = Engine(sample_repo).ensure_index()
    assert stats.rebuilt and "999" in stats.rebuilt


def test_tables_of_an_older_version_without_meta_are_rebuilt(sample_repo):
    # A first build of an older version cut short: its tables, no meta at all.
    directory = index_dir(sample_repo)
    directory.mkdir(parents=True)
    conn = sqlite3.connect(directory / "index.sqlite")
    conn.executescript(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "CREATE TABLE chunks (id INTEGER PRIMARY KEY, path TEXT NOT NULL, start_line INTEGER NOT NULL,"
        " end_line INTEGER NOT NULL, kind TEXT NOT NULL, language TEXT NOT NULL, context TEXT NOT NULL,"
        " symbol TEXT NOT NULL, signature TEXT NOT NULL, docstring TEXT NOT NULL, text TEXT NOT NULL);"
    )
    conn.close()
    notes = []
    stats = Engine(sample_repo, notify=notes.append).ensure_index()
    assert stats.rebuilt == "index tables are of another format" and stats.chunks > 0
    assert any("rebuilding" in n for n in notes)


def test_a_failed_update_keeps_the_previous_generation(engine, sample_repo, monkeypatch):
    gen = engine.view.generation
    (sample_repo / "app/extra.py").write_text("def extra_function():\n    pass\n")
    from ranklens.core.vectors import VectorIndex

    def boom(*a, **kw):
        raise OSError("disk full")

    monkeypatch.setattr(VectorIndex, "add", boom)  # on the embedder's thread
    with pytest.raises(OSError):
        engine.ensure_index()
    fresh = Engine(sample_repo)
    assert fresh.open() and fresh.view.generation == gen
    assert "app/extra.py" not in fresh.view.chunks.paths
    assert fresh.search("verify password").hits
    assert not list(engine.directory.glob("*.tmp-*"))


def test_second_indexer_waits_for_the_lock(sample_repo):
    from filelock import FileLock

    eng = Engine(sample_repo)
    eng.directory.mkdir(parents=True, exist_ok=True)
    notes = []
    waiting = threading.Event()

    def notify(note: str) -> None:
        notes.append(note)
        if "waiting" in note:
            waiting.set()

    lock = FileLock(str(eng.directory / "index.lock"))
    lock.acquire()
    done = []
    t = threading.Thread(target=lambda: done.append(Engine(sample_repo, notify=notify).ensure_index()))
    t.start()
    assert waiting.wait(60), notes  # it said so, and is still blocked on the lock:
    assert not done and t.is_alive()
    lock.release()
    t.join(60)
    assert done and done[0].chunks > 0


def test_index_lives_under_the_cache_dir_per_root(sample_repo, tmp_path):
    eng = Engine(sample_repo)
    assert eng.directory == index_dir(sample_repo.resolve())
    assert str(eng.directory).startswith(os.environ["RANKLENS_CACHE_DIR"])


def test_core_never_imports_textual_the_cli_or_the_ui():
    """The engine sits below every front end: importing each of its modules loads neither
    Textual, nor ranklens.tui, nor the command line, nor the MCP server."""
    code = (
        "import importlib, pkgutil, sys, ranklens.core as core\n"
        "for m in pkgutil.walk_packages(core.__path__, 'ranklens.core.'):\n"
        "    importlib.import_module(m.name)\n"
        "bad = {'textual', 'ranklens.tui', 'ranklens.cli', 'ranklens.mcp_server', 'click', 'mcp'} & set(sys.modules)\n"
        "assert not bad, f'ranklens.core imported {sorted(bad)}'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_querying_an_open_index_loads_neither_scipy_nor_the_indexer(engine):
    # A warm start only opens and queries: scipy (~0.3 s to import), the indexer with its
    # chunking and discovery and the counting of term frequencies, and usearch (for small
    # indexes) must stay unloaded.
    unloaded = (
        "scipy",
        "ranklens.core.index.indexer",
        "ranklens.core.index.batches",
        "ranklens.core.storage.terms",
        "ranklens.core.chunking",
        "usearch",
    )
    code = (
        "import sys\n"
        "from ranklens.core.engine import Engine\n"
        f"e = Engine({str(engine.root)!r}); assert e.open(); e.warm()\n"
        "assert e.search('login user session').hits\n"
        f"loaded = set({unloaded!r}) & set(sys.modules)\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ))


def test_fts5_leaves_out_terms_in_over_a_tenth_of_the_chunks_but_keeps_the_rarest():
    from ranklens.core.arms.fts5 import match_expression

    common = {"n": 100, "df": {"a": 80, "the": 90, "file": 40, "read": 11, "line": 10, "parse": 6}}
    assert match_expression("parse a file", common) == '"parse"'
    assert match_expression("read line parse", common) == '"line" OR "parse"'
    assert match_expression("the a", common) == '"a"'
    assert match_expression('say "NOT" a*', None) == '"say" OR "not" OR "a"'


def test_fts5_over_its_scoring_budget_makes_the_rarest_terms_that_fit_it_match():
    from ranklens.core.arms.fts5 import SCORE_BUDGET, match_plan

    big = SCORE_BUDGET // 2
    common = {"n": 10**7, "floor": 2000, "df": {"lock": big, "with": big + 1, "disabled": big - 5}}
    # Over it: "spin" (unlisted: at most the floor) and "disabled" fit, the rest must come along;
    # the chunks holding only the rest are left out (no rest query).
    plan = match_plan("spin lock with disabled", common)
    assert plan.exprs == [
        '("spin" OR "disabled") AND ("lock" OR "with")',
        '("spin" OR "disabled") NOT ("lock" OR "with")',
    ]
    assert plan.rest is None
    # One term alone over the budget: nothing to leave out.
    assert match_plan("lock", {**common, "df": {"lock": SCORE_BUDGET * 2}}).exprs == ['"lock"']
    # A list written without the floor (or none) plans the plain query, in the query's order.
    assert match_plan("spin lock with disabled", {"n": 10**7, "df": common["df"]}) == (
        ['"spin" OR "lock" OR "with" OR "disabled"'],
        None,
        math.inf,
    )


def test_fts5_scores_terms_unlisted_first_then_by_chunks_and_splits_off_the_listed_ones():
    from ranklens.core.arms import fts5

    common = {"n": 100_000, "floor": 2000, "df": {"with": 9_500, "lock": 9_000}}
    plan = fts5.match_plan("lock spin free", common)
    # The rare terms (unlisted) as the query has them, then the listed ones.
    assert plan.exprs == ['("spin" OR "free") AND ("lock")', '("spin" OR "free") NOT ("lock")']
    assert plan.rest == '("lock") NOT ("spin" OR "free")'
    assert plan.bound == pytest.approx(2.2 * math.log((1.01e5 + 10 - 0.99 * 9_000 + 0.5) / (0.99 * 9_000 + 0.5)))
    # No unlisted term: the rarest listed one is split off.
    assert fts5.match_plan("with lock", common).exprs == ['("lock") AND ("with")', '("lock") NOT ("with")']
    # Listed terms in too few chunks to be worth a split, or none: the one OR query.
    few = {**common, "df": {"lock": fts5.SPLIT_ROWS - 1}}
    assert fts5.match_plan("spin lock", few) == (['"spin" OR "lock"'], None, math.inf)
    assert fts5.match_plan("spin free", common).exprs == ['"spin" OR "free"']
    # Listed terms that may add more than one unlisted term can (the rest query would mostly
    # run too): the one OR query, fewest chunks first among the listed.
    assert fts5.match_plan("with spin lock", common).exprs == ['"spin" OR "lock" OR "with"']


def test_fts5_split_plan_ranks_as_the_whole_or_query_to_the_last_bit(tmp_path, monkeypatch):
    from ranklens.core.arms import fts5

    repo = tmp_path / "repo"
    repo.mkdir()
    for i in range(60):  # "rare" in a few files, "mid" in two thirds, "common" in all
        words = (
            ["common"] * (1 + i % 3)
            + (["rare"] * (1 + i % 2) if i % 10 == 0 else [])
            + (["mid"] * (1 + i % 4) if i % 3 else [])
        )
        (repo / f"f{i:02d}.txt").write_text(" ".join(words) + f" filler{i}\n")
    engine = Engine(repo, cache_dir=tmp_path / "cache")
    engine.ensure_index()
    arm = engine.arm("fts5")
    conn = arm.view.connection()
    # The true counts, every term listed (floor 1), nothing pruned.
    arm.common = {"n": 60, "floor": 1, "df": {"rare": 6, "mid": 40, "common": 60}}
    monkeypatch.setattr(fts5, "PRUNE_FRACTION", 1.0)
    monkeypatch.setattr(fts5, "SPLIT_ROWS", 1)
    plan = fts5.match_plan("common mid rare", arm.common)
    assert plan.rest is not None
    whole_sql = "SELECT rowid, bm25(fts) FROM fts WHERE fts MATCH ? ORDER BY bm25(fts), rowid LIMIT ?"
    statements = []
    conn.set_trace_callback(statements.append)
    for limit, runs in ((3, 2), (100, 3)):  # the bound spares the rest query; too few rows do not
        statements.clear()
        rows, scores = arm.scores("common mid rare", limit)
        assert sum("MATCH" in s for s in statements) == runs
        conn.set_trace_callback(None)
        whole = conn.execute(whole_sql, ('"rare" OR "mid" OR "common"', limit)).fetchall()
        conn.set_trace_callback(statements.append)
        assert rows.tolist() == arm.view.chunks.rows_for([r[0] for r in whole]).tolist()
        assert scores.tolist() == [-r[1] for r in whole]  # exactly: the same sums in the same order
    conn.set_trace_callback(None)


def test_fts5_over_budget_scores_every_chunk_holding_a_rare_term_as_the_whole_query_does(tmp_path, monkeypatch):
    from ranklens.core.arms import fts5

    repo = tmp_path / "repo"
    repo.mkdir()
    for i in range(60):  # "common" in every file, "rare" in a few, "mid" in a third
        words = ["common"] * (1 + i % 3) + (["rare"] * (1 + i % 2) if i % 10 == 0 else []) + (["mid"] if i % 3 else [])
        (repo / f"f{i:02d}.txt").write_text(" ".join(words) + f" filler{i}\n")
    engine = Engine(repo, cache_dir=tmp_path / "cache")
    engine.ensure_index()
    arm = engine.arm("fts5")
    # The true counts, under an N that prunes nothing.
    arm.common = {"n": 10_000, "floor": 1, "df": {"rare": 6, "mid": 40, "common": 60}}
    whole = arm.search("rare mid common", 100)
    monkeypatch.setattr(fts5, "SCORE_BUDGET", 10)
    plan = fts5.match_plan("rare mid common", arm.common)
    assert len(plan.exprs) == 2 and plan.rest is None
    budgeted = arm.search("rare mid common", 100)
    holding_rare = [(h.path, h.score) for h in whole if "rare" in (repo / h.path).read_text()]
    assert [(h.path, h.score) for h in budgeted] == pytest.approx(holding_rare) and len(budgeted) == 6


def test_saved_chunk_table_matches_the_database_after_updates(engine, sample_repo):
    from ranklens.core.storage.chunktable import ChunkTable
    from ranklens.core.storage.store import connect

    (sample_repo / "app/cache.py").write_text("def evict():\n    return 1\n")
    (sample_repo / "app/more.py").write_text("class More:\n    pass\n")
    engine.ensure_index()
    saved = engine.view.chunks
    fresh = ChunkTable.load(connect(engine.view.db_path, readonly=True))
    assert saved.ids().tolist() == fresh.ids.tolist()
    every = range(len(saved))
    for name in ("paths", "contexts", "languages", "kinds", "symbols", "starts", "ends"):
        assert saved.column(name, every) == list(getattr(fresh, name))


def test_bm25_documents_hold_path_and_symbol_tokens(engine):
    from ranklens.core.arms.bm25 import FIELDS
    from ranklens.core.index.indexer import arm_builds

    assert (
        FIELDS == {"text": 1, "path": 1, "symbol": 1} and arm_builds(IndexSettings())["bm25"].documents.fields is FIELDS
    )
    # "auth" is only in the path app/auth.py, never a token of its text.
    hits = engine.run_arm("bm25", "auth").hits
    assert hits and {h.path for h in hits} == {"app/auth.py"}
    # A chunk's document holds the names of its definitions besides its text (the whole
    # 26-line file is one chunk under the 40-line budget).
    top = engine.run_arm("bm25", "verify_password").hits[0]
    assert top.context == "app/auth.py > PasswordHasher, login_user"


def test_fts5_index_matches_its_content_after_updates(engine, sample_repo):
    # A contentless FTS5 'delete' must get exactly the inserted text, or the index silently
    # keeps stale terms; it is compared with an index built afresh from the chunks' text.
    before = sqlite3.connect(engine.directory / "index.sqlite")
    try:
        assert "login_user" in {term for term, *_ in fts_instances(before)}
    finally:
        before.close()
    (sample_repo / "app/auth.py").write_text("def renamed_login():\n    return 1\n")
    os.remove(sample_repo / "web/router.js")
    stats = engine.ensure_index()
    assert stats.changed == 1 and stats.removed == 1
    conn = sqlite3.connect(engine.directory / "index.sqlite")
    try:
        assert_fts_matches_chunks(conn)
        assert not conn.execute("SELECT rowid FROM fts WHERE fts MATCH '\"login_user\"'").fetchall()
        # Contentless: the table holds no text to read back.
        assert conn.execute("SELECT text FROM fts WHERE fts MATCH '\"renamed_login\"'").fetchall() == [(None,)]
    finally:
        conn.close()
    assert engine.run_arm("fts5", "renamed_login").hits[0].path == "app/auth.py"
    assert not engine.run_arm("fts5", "router").hits
    assert not engine.run_arm("fts5", "login_user").hits


def test_an_index_of_the_previous_format_is_rebuilt(sample_repo):
    from ranklens.core.storage.store import FORMAT_VERSION

    eng = Engine(sample_repo)
    eng.ensure_index()
    conn = sqlite3.connect(eng.directory / "index.sqlite")
    conn.execute("UPDATE meta SET value = ? WHERE key = 'format'", (str(FORMAT_VERSION - 1),))
    conn.commit()
    conn.close()
    notes = []
    stats = Engine(sample_repo, notify=notes.append).ensure_index()
    assert stats.rebuilt == f"index format {FORMAT_VERSION - 1} is not {FORMAT_VERSION}"
    assert any("rebuilding" in n for n in notes)


def test_an_arm_filters_with_the_rows_of_its_own_generation(engine, sample_repo):
    engine.arm("bm25")  # opened on this generation
    old_view = engine.view
    (sample_repo / "app/extra.py").write_text("def parse_extra():\n    return 1\n" * 30)
    engine.ensure_index()  # a refresh lands: new view, arms re-opened lazily
    assert engine.view is not old_view
    arm, view = engine._arm_on_view("bm25")
    assert view is engine.view and arm.view is view
    result = engine.run_arm("bm25", "parse", path_glob="app/*")
    assert result.ok and all(h.path.startswith("app/") for h in result.hits)


def test_dense_documents_lead_with_the_breadcrumb():
    from ranklens.core.arms.dense import document_text
    from ranklens.core.base.types import Chunk

    chunk = Chunk(
        "tui/widgets/slider.py", 3, 9, "def nudge(self):\n    pass", "python", "tui/widgets/slider.py > Slider > nudge"
    )
    assert document_text(chunk) == "tui/widgets/slider.py > Slider > nudge\ndef nudge(self):\n    pass"


def _dense_vectors(directory):
    """Every segment's dense vectors of an index folder, by chunk id."""
    import numpy as np

    from ranklens.core.arms.dense import VECTORS_FILE
    from ranklens.core.vectors import VectorIndex

    out = {}
    for seg in sorted(directory.glob("seg-*")):
        part = VectorIndex.load(seg / VECTORS_FILE, view=True)
        out.update(zip(part.keys().tolist(), np.asarray(part.vectors(), dtype=np.float32)))
    return out


def test_a_worker_process_builds_the_same_index_as_in_process(sample_repo, tmp_path, monkeypatch):
    """Large updates chunk, count tokens and embed in a child process: same chunks, ids,
    matrices and vectors."""
    import numpy as np

    from ranklens.core.index import batches

    def build(cache):
        eng = Engine(sample_repo, cache_dir=tmp_path / cache)
        eng.ensure_index()
        (sample_repo / "app/auth.py").write_text(
            (sample_repo / "app/auth.py").read_text() + "\ndef added_later():\n    pass\n"
        )
        eng.ensure_index()
        conn = sqlite3.connect(eng.directory / "index.sqlite")
        rows = conn.execute("SELECT * FROM chunks ORDER BY id").fetchall()
        gen = sorted(eng.directory.glob("gen-*"))[-1]
        arrays = {p.name: np.load(p) for p in sorted(gen.glob("*.npy"))}
        for seg in sorted(eng.directory.glob("seg-*")):
            arrays.update({f"{seg.name}/{p.name}": np.load(p) for p in sorted(seg.glob("*.npy"))})
        arrays.update({f"dense/{cid}": vec for cid, vec in _dense_vectors(eng.directory).items()})
        vocab = conn.execute("SELECT col, token FROM vocab ORDER BY col").fetchall()
        conn.close()
        eng.close()
        return rows, arrays, vocab

    original = (sample_repo / "app/auth.py").read_text()
    in_process = build("a")
    (sample_repo / "app/auth.py").write_text(original)
    monkeypatch.setattr(batches, "POOL_MIN_BYTES", 0)
    monkeypatch.setattr(batches, "CHUNK_BATCH_BYTES", 600)  # several batches
    pooled = build("b")
    assert pooled[0] == in_process[0] and pooled[2] == in_process[2]
    assert pooled[1].keys() == in_process[1].keys()
    for name, array in in_process[1].items():
        assert pooled[1][name].dtype == array.dtype and np.array_equal(pooled[1][name], array), name


def test_vectors_a_worker_could_not_make_are_embedded_by_the_indexer_alike(sample_repo, tmp_path, monkeypatch):
    """The chunking workers embed each batch for the dense arm; where one cannot load the model
    the indexer embeds those chunks itself, to the same vectors."""
    import numpy as np

    from ranklens.core.arms import dense
    from ranklens.core.index import batches

    monkeypatch.setattr(batches, "POOL_MIN_BYTES", 0)
    monkeypatch.setattr(batches, "LEAD_BYTES", 0)  # every batch from a worker
    monkeypatch.setattr(batches, "CHUNK_BATCH_BYTES", 600)
    made = Engine(sample_repo, cache_dir=tmp_path / "made")
    made.ensure_index()
    monkeypatch.setattr(dense, "EmbedChunks", lambda spec: _Nothing())
    here = os.path.dirname(__file__)  # the workers unpickle _Nothing from this module
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")])))
    alone = Engine(sample_repo, cache_dir=tmp_path / "alone")
    alone.ensure_index()
    ours, theirs = _dense_vectors(made.directory), _dense_vectors(alone.directory)
    made.close()
    alone.close()
    assert ours.keys() == theirs.keys() and len(ours) >= 5
    assert all(np.array_equal(ours[k], theirs[k]) for k in ours)


class _Nothing:
    """A batch task that makes nothing (as a worker that cannot load the model)."""

    def __call__(self, chunks):
        return None


def test_an_arm_whose_ranking_breaks_the_rules_is_an_error_and_the_query_goes_on(tmp_path):
    """The engine checks each arm's ranking on the arm's thread (a chunk twice here): that arm
    fails with the reason, the others still answer and are fused."""
    from ranklens.core import arms as arms_mod
    from ranklens.core.base.types import Hit

    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("def parse_args():\n    return 1\n")
    (root / "b.py").write_text("def other():\n    return parse_args()\n")

    class Twice:
        name = "bad"

        def search(self, query, limit, allowed=None):
            hit = Hit("bad", "a.py:1-2", "a.py", 1, 2, 1, 1.0)
            return [hit, Hit("bad", "a.py:1-2", "a.py", 1, 2, 2, 0.5)]

    eng = Engine(root, cache_dir=tmp_path / "cache")
    eng.ensure_index()
    real = eng._arm_on_view

    def arm_on_view(name):
        if name == "bad":
            return Twice(), eng.view
        return real(name)

    eng._arm_on_view = arm_on_view
    arms_mod.REGISTRY["bad"] = arms_mod.ArmSpec("bad", "lexical", lambda view: Twice())
    try:
        result = eng.search("parse args", arms=["bad", "bm25"])
    finally:
        del arms_mod.REGISTRY["bad"]
    assert "appears twice" in result.results["bad"].error
    assert result.results["bm25"].ok and result.hits
    assert all(h.provenance == ["bm25"] for h in result.hits)


def test_a_running_engine_ranks_with_the_config_saved_between_its_queries(engine, sample_repo):
    from ranklens.core.query.config import config_path, save_config

    assert engine.search("token").settings.k == engine.fusion().k
    save_config(sample_repo, {"dense": 2.5}, 17)
    first = engine.search("token").settings
    assert (first.k, first.weights["dense"]) == (17.0, 2.5)
    save_config(sample_repo, {"dense": 0.5}, 17)  # same size, written again
    assert engine.search("token").settings.weights["dense"] == 0.5
    config_path(sample_repo).write_text("{not json")
    with pytest.raises(QueryError, match="not valid JSON"):
        engine.search("token")
    config_path(sample_repo).unlink()
    assert engine.search("token").settings.weights == engine.fusion(weights={}).weights
