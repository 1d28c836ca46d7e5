"""The index behind the arms: the local store and a shared Milvus store, through the real CLI.

The store tests run on the local store and on Milvus Lite (a ``.db`` folder, the embedded
engine of the ``milvus`` extra; skipped when pymilvus is not installed), and also on a real
Milvus server when ``RANKLENS_TEST_MILVUS_URI`` names one (each test in a collection of its
own, dropped afterwards).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from tests.cli_helpers import assert_python_prints_ok, run
from tests.conftest import write_repo

try:
    import pymilvus  # noqa: F401

    HAVE_MILVUS = True
except ImportError:
    HAVE_MILVUS = False

SERVER = os.environ.get("RANKLENS_TEST_MILVUS_URI")
needs_milvus = pytest.mark.skipif(not HAVE_MILVUS, reason="pymilvus is not installed (pip install 'ranklens[milvus]')")

STORES = ["local", pytest.param("lite", marks=needs_milvus)]
SHARED = [pytest.param("lite", marks=needs_milvus)]
if SERVER:
    STORES.append(pytest.param("server", marks=needs_milvus))
    SHARED.append(pytest.param("server", marks=needs_milvus))

OTHER_FILES = {
    "README.md": "# billing\n\nInvoices and payment reminders for customers.\n",
    "docs/guide.md": "# Guide\n\nHow to install billing and configure its reminders.\n",
    "billing/invoice.py": '''
        """Invoices."""


        def render_invoice(customer, lines):
            """Render an invoice for a customer as text, one line per item."""
            total = sum(price for _name, price in lines)
            return f"{customer}: {total}"


        def send_payment_reminder(customer, days_late):
            """Email a payment reminder to a customer whose invoice is overdue."""
            return f"reminder to {customer} after {days_late} days"
    ''',
}


class Store:
    """A store URI for the CLI, and the environment that names its collection."""

    def __init__(self, kind: str, tmp_path: Path) -> None:
        self.kind = kind
        self.env: dict[str, str] = {}
        if kind == "local":
            self.uri = "local"
        elif kind == "lite":
            self.uri = str(tmp_path / "shared.db")
        else:
            self.uri = SERVER or ""
            self.env["RANKLENS_MILVUS_COLLECTION"] = f"rl_test_{uuid.uuid4().hex[:12]}"

    @property
    def shared(self) -> bool:
        return self.kind != "local"

    def cli(self, *args, cwd=None):
        return run(*args, "--store", self.uri, cwd=cwd, env=self.env)

    def drop(self) -> None:
        if self.kind != "server":
            return
        from pymilvus import MilvusClient

        client = MilvusClient(uri=self.uri, token=os.environ.get("RANKLENS_MILVUS_TOKEN", ""))
        name = self.env["RANKLENS_MILVUS_COLLECTION"]
        for c in (name, f"{name}_files"):
            if client.has_collection(c):
                client.drop_collection(c)


@pytest.fixture(params=STORES)
def store(request, tmp_path):
    s = Store(request.param, tmp_path)
    yield s
    s.drop()


@pytest.fixture(params=SHARED)
def shared(request, tmp_path):
    s = Store(request.param, tmp_path)
    yield s
    s.drop()


def query_json(store: Store, text: str, root: Path, *extra: str) -> dict:
    out = store.cli("query", text, "--root", str(root), "--json", *extra)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def index_json(store: Store, *roots: Path | str) -> list[dict]:
    out = store.cli("index", *map(str, roots), "--json")
    assert out.returncode == 0, out.stderr
    decoder, text, found = json.JSONDecoder(), out.stdout.strip(), []
    while text:
        obj, end = decoder.raw_decode(text)
        found.append(obj)
        text = text[end:].strip()
    return found


def one_line_error(out, code: int = 1) -> str:
    assert out.returncode == code, (out.returncode, out.stdout, out.stderr)
    assert "Traceback" not in out.stderr
    lines = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, out.stderr
    return lines[0]


# -- both stores ------------------------------------------------------------------------------


def test_index_then_query_finds_the_code(store, sample_repo):
    [summary] = index_json(store, sample_repo)
    assert summary["files"] >= 5 and summary["chunks"] > 5
    data = query_json(store, "hash a password with a salt", sample_repo)
    assert data["retrievers"] == ["bm25", "fts5", "dense", "symbols"] or set(data["retrievers"]) >= {
        "bm25",
        "fts5",
        "dense",
        "symbols",
    }
    top = data["results"][0]
    assert top["path"] == "app/auth.py"
    # A shared store's hits say which repository they are in; a local index's do not.
    assert top.get("repo") == ("repo" if store.shared else None)
    for hit in data["results"]:
        assert hit["sha256"] is not None  # the span is read from the repository's folder here


def test_each_arm_answers_on_its_own(store, sample_repo):
    index_json(store, sample_repo)  # once: an index per arm cost CI ~30 s on Milvus Lite
    for arm in ("bm25", "fts5", "dense", "symbols"):
        data = query_json(store, "PasswordHasher", sample_repo, "--retriever", arm)
        assert data["retrievers"] == [arm]
        assert any(h["path"] == "app/auth.py" for h in data["results"][:3]), (arm, data["results"])


def test_update_is_incremental_per_file(store, sample_repo):
    index_json(store, sample_repo)
    (sample_repo / "app" / "auth.py").write_text(
        (sample_repo / "app" / "auth.py").read_text() + "\n\ndef rotate_signing_keys(keyring):\n    return keyring\n"
    )
    (sample_repo / "app" / "extra_module.py").write_text("def quarantine_uploaded_file(path):\n    return path\n")
    [again] = index_json(store, sample_repo)
    assert (again["added"], again["changed"], again["removed"]) == (1, 1, 0)
    assert again["embedded"] < 30  # only the two files' chunks
    assert query_json(store, "rotate_signing_keys", sample_repo)["results"][0]["path"] == "app/auth.py"
    (sample_repo / "app" / "extra_module.py").unlink()
    [third] = index_json(store, sample_repo)
    assert (third["added"], third["changed"], third["removed"]) == (0, 0, 1)
    paths = {h["path"] for h in query_json(store, "quarantine_uploaded_file", sample_repo)["results"]}
    assert "app/extra_module.py" not in paths
    [fourth] = index_json(store, sample_repo)
    assert (fourth["added"], fourth["changed"], fourth["removed"]) == (0, 0, 0)


def test_filters_apply_in_the_store(store, sample_repo):
    index_json(store, sample_repo)
    data = query_json(store, "user", sample_repo, "--path", "app/*")
    assert data["results"] and all(h["path"].startswith("app/") for h in data["results"])
    data = query_json(store, "user", sample_repo, "--lang", "markdown")
    assert data["results"] and all(h["path"].endswith(".md") for h in data["results"])


# -- a shared store -----------------------------------------------------------------------------


def test_many_repositories_in_one_collection(shared, tmp_path, sample_repo):
    other = write_repo(tmp_path / "billing", OTHER_FILES)
    summaries = index_json(shared, sample_repo, other)
    assert [s["repo"] for s in summaries] == ["repo", "billing"]
    # The default: the root's repository only.
    mine = query_json(shared, "payment reminder for an overdue invoice", sample_repo)
    assert {h["repo"] for h in mine["results"]} == {"repo"}
    theirs = query_json(shared, "payment reminder for an overdue invoice", sample_repo, "--repo", "billing")
    assert {h["repo"] for h in theirs["results"]} == {"billing"}
    assert theirs["results"][0]["path"] == "billing/invoice.py"
    everywhere = query_json(shared, "guide install configure", sample_repo, "--repo", "all", "--top-k", "20")
    guides = {(h["repo"], h["path"]) for h in everywhere["results"] if h["path"] == "docs/guide.md"}
    assert guides == {("repo", "docs/guide.md"), ("billing", "docs/guide.md")}  # never merged into one hit
    both = query_json(shared, "hash a password", sample_repo, "--repo", "repo,billing")
    assert both["results"][0]["repo"] == "repo" and both["results"][0]["path"] == "app/auth.py"
    text = shared.cli("query", "payment reminder", "--root", str(sample_repo), "--repo", "all")
    assert text.returncode == 0 and text.stdout.splitlines()[0].startswith("billing:billing/invoice.py:")


def test_batch_answers_from_the_store(shared, sample_repo):
    index_json(shared, sample_repo)
    lines = '{"id": 1, "query": "hash a password"}\n{"id": 2, "query": "least recently used cache"}\n'
    out = subprocess.run(
        [sys.executable, "-m", "ranklens", "query", "--batch", "--root", str(sample_repo), "--store", shared.uri],
        input=lines,
        capture_output=True,
        text=True,
        env={**os.environ, **shared.env},
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    answers = [json.loads(line) for line in out.stdout.splitlines()]
    assert [a["id"] for a in answers] == [1, 2]
    assert answers[0]["results"][0]["path"] == "app/auth.py"
    assert answers[1]["results"][0]["path"] == "app/cache.py"


def test_a_missing_collection_is_one_line(shared, sample_repo):
    line = one_line_error(shared.cli("query", "password", "--root", str(sample_repo)))
    assert "no ranklens collection" in line and "ranklens index" in line


def test_a_repository_not_in_the_store_is_one_line(shared, tmp_path, sample_repo):
    index_json(shared, sample_repo)
    other = write_repo(tmp_path / "billing", OTHER_FILES)
    line = one_line_error(shared.cli("query", "invoice", "--root", str(other)))
    assert "'billing' is not in" in line and "repo" in line
    line = one_line_error(shared.cli("query", "invoice", "--root", str(sample_repo), "--repo", "nosuch"))
    assert "'nosuch' is not in" in line


SET_META = """
import json, sys
from pymilvus import MilvusClient
uri, name, token, changes = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
client = MilvusClient(uri) if uri.endswith(".db") else MilvusClient(uri=uri, token=token)
client.load_collection(name)
[row] = client.get(name, ids=["meta"], output_fields=["info"])
meta = {**json.loads(row["info"]), **changes}
row = {"key": "meta", "repo": "", "kind": "meta", "path": "", "sha": "", "size": 0, "mtime": 0,
       "info": json.dumps(meta), "v": [0.0, 0.0]}
client.upsert(name, [row])
client.flush(name)
"""


def _set_meta(store: Store, **changes) -> None:
    """Rewrite the collection's meta row as another ranklens would have (in another process:
    a Milvus Lite folder is held by the process that opened it)."""
    name = f"{store.env.get('RANKLENS_MILVUS_COLLECTION', 'ranklens')}_files"
    token = os.environ.get("RANKLENS_MILVUS_TOKEN", "")
    subprocess.run(
        [sys.executable, "-c", SET_META, store.uri, name, token, json.dumps(changes)], check=True, timeout=120
    )


@pytest.mark.parametrize("old", [1, 2, 3, 999])  # 1: Milvus's own BM25 functions; 2: no edges; 3: edges of calls only
def test_a_collection_of_another_format_is_refused(shared, sample_repo, old):
    index_json(shared, sample_repo)
    _set_meta(shared, format=old)
    line = one_line_error(shared.cli("query", "password", "--root", str(sample_repo)))
    assert "built by another ranklens" in line
    line = one_line_error(shared.cli("index", str(sample_repo)))
    assert "built by another ranklens" in line


def test_a_collection_of_another_model_is_refused(shared, sample_repo):
    index_json(shared, sample_repo)
    _set_meta(shared, model="someone/else-32M")
    line = one_line_error(shared.cli("query", "password", "--root", str(sample_repo)))
    assert "embedded with 'someone/else-32M'" in line


def test_a_server_that_is_down_is_one_line(sample_repo):
    if not HAVE_MILVUS:
        pytest.skip("pymilvus is not installed")
    line = one_line_error(run("query", "password", "--root", str(sample_repo), "--store", "http://127.0.0.1:9"))
    assert "cannot reach Milvus at http://127.0.0.1:9" in line
    line = one_line_error(run("index", str(sample_repo), "--store", "http://127.0.0.1:9"))
    assert "cannot reach Milvus" in line


@pytest.mark.skipif(not SERVER, reason="RANKLENS_TEST_MILVUS_URI names no server")
def test_a_wrong_token_is_one_line(shared, sample_repo):
    out = run(
        "query", "password", "--root", str(sample_repo), "--store", shared.uri, env={"RANKLENS_MILVUS_TOKEN": "no:body"}
    )
    assert "Milvus" in one_line_error(out)


@needs_milvus
def test_a_lite_store_held_by_another_process_is_refused(tmp_path, sample_repo):
    db = tmp_path / "held.db"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            f"from pymilvus import MilvusClient; import sys, time; MilvusClient({str(db)!r}); print('open', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "open"
        line = one_line_error(run("index", str(sample_repo), "--store", str(db)))
        assert "open in another process" in line and "milvus-lite server" in line
    finally:
        holder.kill()
        holder.wait()


@needs_milvus
def test_a_second_indexer_of_a_repository_waits_then_refuses(tmp_path):
    from ranklens.core.backends import StoreError, parse_store
    from ranklens.core.backends.milvus import MilvusStore, RepoLease

    store = MilvusStore(parse_store(str(tmp_path / "lease.db")))
    store.create("m", 2)
    with RepoLease(store, "repo"):
        with pytest.raises(StoreError, match=r"'repo' is being indexed into .* by .*:"):
            with RepoLease(store, "repo", wait=1.0):
                pass
        with RepoLease(store, "another"):  # other repositories are not held up
            pass
    with RepoLease(store, "repo"):  # released
        pass
    store.close()


# -- the default install ------------------------------------------------------------------------


def test_the_default_store_never_imports_pymilvus(sample_repo):
    assert_python_prints_ok(
        textwrap.dedent(
            f"""
            import sys
            import ranklens.cli
            from ranklens.core.service import answer_query, check_request, open_engine
            engine = open_engine({str(sample_repo)!r})
            engine.ensure_index()
            data, hits, _ = answer_query(engine, check_request("hash a password"))
            assert hits and "repo" not in data["results"][0]
            assert sys.modules.get("pymilvus") is None and sys.modules.get("milvus_lite") is None
            print("ok")
            """
        )
    )


def test_bad_store_options_are_one_line(sample_repo):
    line = one_line_error(run("query", "x", "--root", str(sample_repo), "--store", "postgres://db"), 2)
    assert "unknown store 'postgres://db'" in line
    line = one_line_error(run("query", "x", "--root", str(sample_repo), "--repo", "all"), 2)
    assert "--repo searches a shared store" in line


# -- the MCP server over a shared store -------------------------------------------------------


@contextlib.asynccontextmanager
async def mcp_session(root: Path, *args: str, env: dict | None = None):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "ranklens", "mcp", str(root), *args],
        env={**os.environ, **(env or {})},
        cwd=str(root),
    )
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=120) as session:
                await session.initialize()
                yield session


async def test_mcp_serves_a_shared_store(shared, tmp_path, sample_repo):
    other = write_repo(tmp_path / "billing", OTHER_FILES)
    index_json(shared, sample_repo, other)
    async with mcp_session(sample_repo, "--store", shared.uri, "--repo", "all", env=shared.env) as session:
        result = await session.call_tool("search", {"query": "hash a password, send a payment reminder", "top_k": 10})
        assert not result.is_error, result.content[0].text
        data = json.loads(result.content[0].text)
        by_repo = {}
        for hit in data["results"]:
            by_repo.setdefault(hit["repo"], hit)
        assert set(by_repo) == {"repo", "billing"}
        assert by_repo["repo"]["text"] and by_repo["repo"]["sha256"]  # the root's repository: its text
        assert by_repo["billing"]["text"] is None  # another repository's: located, not read
        assert any("billing:" in note for note in data["notes"])
        status = json.loads((await session.call_tool("index_status", {})).content[0].text)
        assert set(status["repos"]) == {"repo", "billing"} and status["arms"]["bm25"] == {"answers": True}
        span = json.loads(
            (await session.call_tool("read_span", {"path": "app/auth.py", "start_line": 1, "end_line": 3}))
            .content[0]
            .text
        )
        assert span["text"].startswith('"""User authentication helpers."""')
        # related walks the root's repository's edges in the store (one repository of the two).
        result = await session.call_tool("related", {"place": "app/auth.py:hash_password"})
        assert not result.is_error, result.content[0].text
        related = json.loads(result.content[0].text)
        assert [(c["path"], c["name"]) for c in related["callers"]] == [("app/auth.py", "verify_password")]


async def test_mcp_says_when_the_store_is_down_and_keeps_serving(sample_repo):
    if not HAVE_MILVUS:
        pytest.skip("pymilvus is not installed")
    async with mcp_session(sample_repo, "--store", "http://127.0.0.1:9") as session:
        for _ in range(2):
            result = await session.call_tool("search", {"query": "password"})
            assert result.is_error and "cannot reach Milvus at http://127.0.0.1:9" in result.content[0].text


def test_two_folders_of_one_name_do_not_replace_each_other(shared, tmp_path):
    first = write_repo(tmp_path / "a" / "src")
    second = write_repo(tmp_path / "b" / "src", OTHER_FILES)
    index_json(shared, first)
    line = one_line_error(shared.cli("index", str(second)))
    assert "'src'" in line and "was indexed from" in line and "--repo NAME" in line
    [named] = index_json(shared, second, "--repo", "billing-src")
    assert named["repo"] == "billing-src"
    data = query_json(shared, "payment reminder", first, "--repo", "billing-src")
    assert data["results"][0]["path"] == "billing/invoice.py"
    assert query_json(shared, "hash a password", first)["results"][0]["path"] == "app/auth.py"
    line = one_line_error(shared.cli("index", str(first), str(second), "--repo", "x"), 2)
    assert "--repo names one repository" in line


@needs_milvus
def test_the_store_can_be_named_once(tmp_path, sample_repo):
    from ranklens.core.query.config import config_path

    db = str(tmp_path / "once.db")
    out = run("index", str(sample_repo), "--json", env={"RANKLENS_STORE": db})
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["store"] == db
    out = run("query", "hash a password", "--root", str(sample_repo), "--json", env={"RANKLENS_STORE": db})
    assert out.returncode == 0 and json.loads(out.stdout)["results"][0]["repo"] == "repo"
    # In the root's config.json, beside its tuned weights.
    path = config_path(sample_repo)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"weights": {}, "k": 5, "store": db}))
    out = run("query", "hash a password", "--root", str(sample_repo), "--json")
    assert out.returncode == 0 and json.loads(out.stdout)["results"][0]["repo"] == "repo"
    # --store local wins over both.
    out = run("query", "hash a password", "--root", str(sample_repo), "--json", "--store", "local")
    assert out.returncode == 0 and "repo" not in json.loads(out.stdout)["results"][0]


def test_a_re_tune_keeps_the_store_named_in_the_config(sample_repo):
    from ranklens.core.query.config import config_path, save_config

    path = config_path(sample_repo)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"weights": {}, "k": 5, "store": "team.db"}))
    save_config(sample_repo, {"bm25": 1.0}, 7.0)
    assert json.loads(path.read_text())["store"] == "team.db"


def test_the_chunk_step_and_quoted_passages_on_both_stores(store, tmp_path):
    """Issue #18's steps are the engine's on either store: every chunk of a top file competes
    (a ``chunk`` signal) and a chunk holding a quoted passage gains ``quote``."""
    root = tmp_path / "jobs"
    body = "\n".join(f"        step_{i} = job.attempts + {i}" for i in range(16))
    methods = {
        "push": "Put a job on the queue.",
        "size": "How many jobs the queue holds.",
        "backoff_delay": "How long a failed job waits before its next retry.",
        "close": "Drop every job.",
    }
    text = "class JobQueue:\n" + "\n".join(
        f'    def {name}(self, job):\n        """{doc}"""\n{body}\n        return job\n'
        for name, doc in methods.items()
    )
    text = text.replace(
        "    def backoff_delay(self, job):\n",
        "    def backoff_delay(self, job):\n        log('retry budget exhausted for job')\n",
    )
    write_repo(root, {"jobqueue.py": text, "worker.py": "def work(queue):\n    return queue.size()\n"})
    index_json(store, root)
    data = query_json(store, 'where is "retry budget exhausted" logged before the next retry', root)
    first = data["results"][0]
    names = {s["name"] for s in first["signals"]}
    assert first["path"] == "jobqueue.py" and {"chunk", "quote"} <= names, first
    assert "backoff_delay" in first["context"]


def test_an_arm_a_shared_store_does_not_serve_is_said(shared, sample_repo):
    index_json(shared, sample_repo)
    out = shared.cli("query", "password", "--root", str(sample_repo), "--retriever", "hybrid")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    lines = out.stderr.strip().splitlines()
    assert lines == [
        "ranklens: hybrid skipped: hybrid is not served by a Milvus store (it serves bm25, fts5, dense, symbols)",
        "ranklens: error: no retriever could answer",
    ]


# -- the same scores as the local arms (core.backends.sparse) -------------------------------------

ROOT = Path(__file__).resolve().parents[1]
#: Real code for the parity tests: a few of ranklens's own modules and docs.
REAL_FILES = [
    "core/text/tokenize.py",
    "core/query/fusion.py",
    "core/arms/fts5.py",
    "core/arms/symbols.py",
    "core/arms/bm25.py",
    "core/backends/__init__.py",
    "docs/architecture.md",
]
PARITY_QUERIES = [
    "split an identifier into its sub words",
    "reciprocal rank fusion with weights",
    "common terms left out of the match expression",
    "quoted passage phrase query",
    "definition names signature docstring",
    "parse the store uri milvus lite server",
    'where is "rank fusion" computed from the weighted rankings',  # a quoted passage: fts5 puts it first
]
LEXICAL = ["bm25", "fts5", "symbols"]


def _copy_real(dest: Path, files=REAL_FILES) -> Path:
    for rel in files:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        (dest / rel).write_text((ROOT / rel).read_text(encoding="utf-8"), encoding="utf-8")
    return dest


def _engines(root: Path, db: Path, repo: str | None = None):
    from ranklens.core.backends import parse_store
    from ranklens.core.engine import Engine
    from ranklens.core.milvus_engine import MilvusEngine, index_into_store

    local = Engine(root, cache_dir=root.parent / "cache")
    local.ensure_index()
    shared = MilvusEngine(root, store=parse_store(str(db)), name=repo)
    summary = index_into_store(shared)
    shared.ensure_index()
    return local, shared, summary


def _scored(engine, arm: str, query: str) -> list[tuple[str, int, float]]:
    result = engine.run_arm(arm, query)
    assert result.error is None and result.skipped is None, (result.error, result.skipped)
    return [(h.path, h.start_line, h.score) for h in result.hits[:10]]


def _assert_same_scores(local, shared, arms=LEXICAL, rel: float = 1e-5) -> None:
    for arm in arms:
        for query in PARITY_QUERIES:
            want, got = _scored(local, arm, query), _scored(shared, arm, query)
            assert want, (arm, query)
            assert [w[:2] for w in want] == [g[:2] for g in got], (arm, query, want, got)
            for w, g in zip(want, got):
                assert g[2] == pytest.approx(w[2], rel=rel), (arm, query, w, g)


@needs_milvus
def test_arms_score_as_the_local_arms_on_real_code(tmp_path):
    local, shared, _summary = _engines(_copy_real(tmp_path / "real"), tmp_path / "s.db")
    _assert_same_scores(local, shared)
    # dense too: the vectors as the local arm keeps them (float16), compared by cosine; the two
    # engines sum the float16 products in another order (usearch's SIMD, Milvus Lite's numpy),
    # so the last of float32's digits differ: 1e-4, still far below any gap between two hits.
    _assert_same_scores(local, shared, ["dense"], rel=1e-4)
    local.close()
    shared.close()


@needs_milvus
def test_statistics_are_per_repository_in_one_collection(tmp_path):
    """A term in every chunk of repository A keeps its weight in repository B: B's scores in
    the shared collection are those of B's own local index."""
    noisy = {
        f"widgets/w{i}.py": f"def widget_{i}(reciprocal, rank, fusion):\n    return reciprocal\n" for i in range(40)
    }
    a = write_repo(tmp_path / "a", noisy)
    b = _copy_real(tmp_path / "b")
    db = tmp_path / "s.db"
    _local_a, shared_a, _ = _engines(a, db)
    local_b, shared_b, _ = _engines(b, db)
    _assert_same_scores(local_b, shared_b)
    # Over both repositories a query weighs its terms by their frequency in both: "reciprocal"
    # is common in A, so it counts for less than in B alone (nothing, when its idf over both
    # comes to 0: how many chunks B's files make moves that line).
    from ranklens.core.backends.sparse import query_vector, term_index

    both = shared_b.term_stats["bm25"].summed([s[0]["bm25"] for s in shared_b.store.stats(["a", "b"]).values()])
    i = term_index("reciprocal")
    alone = query_vector("bm25", "reciprocal", shared_b.term_stats["bm25"])[i]
    assert query_vector("bm25", "reciprocal", both).get(i, 0.0) < alone
    for e in (_local_a, shared_a, local_b, shared_b):
        e.close()


@needs_milvus
def test_statistics_follow_updates_and_weights_are_redone_past_the_drift(tmp_path):
    from ranklens.core.backends.sparse import REWEIGHT_DRIFT
    from ranklens.core.milvus_engine import index_into_store

    root = _copy_real(tmp_path / "real")
    local, shared, _ = _engines(root, tmp_path / "s.db")
    # A small change: the statistics move with it (exactly), the stored weights keep their
    # average length while it stays within the drift: scores within that bound.
    fusion = root / "core/query/fusion.py"
    fusion.write_text(fusion.read_text(encoding="utf-8").replace('"""', '"""Weighted. ', 1), encoding="utf-8")
    local.ensure_index()
    summary = index_into_store(shared)
    shared.ensure_index()
    assert summary.reweighed == 0
    for arm in LEXICAL:
        mine = shared.term_stats[arm]
        theirs = local.view.matrix(arm).stats if arm != "fts5" else None
        if theirs is not None:
            assert (mine.n, mine.total) == (theirs.n, theirs.total)
            assert abs(mine.avgdl / mine.base - 1) <= REWEIGHT_DRIFT
    for arm in LEXICAL:
        for query in PARITY_QUERIES:
            want = {(p, s): sc for p, s, sc in _scored(local, arm, query)}
            for p, s, sc in _scored(shared, arm, query):
                if (p, s) in want:
                    assert sc == pytest.approx(want[(p, s)], rel=2 * REWEIGHT_DRIFT)
    # A large change moves the average length past the drift: every chunk is weighed again,
    # and the scores are the local ones again.
    (root / "core/big.py").write_text(
        "\n".join(f"def long_name_{i}(a, b, c, d, e, f, g, h):  # {'word ' * 30}\n    return a" for i in range(300)),
        encoding="utf-8",
    )
    local.ensure_index()
    summary = index_into_store(shared)
    shared.ensure_index()
    assert summary.reweighed > 0
    _assert_same_scores(local, shared)
    local.close()
    shared.close()


@needs_milvus
def test_statistics_left_dirty_by_a_killed_pass_are_counted_again(tmp_path):
    from ranklens.core.backends.sparse import TermStats
    from ranklens.core.milvus_engine import index_into_store

    root = _copy_real(tmp_path / "real")
    local, shared, _ = _engines(root, tmp_path / "s.db")
    # What a pass killed after marking them leaves: statistics that say nothing true.
    held = shared.store.stats([shared.repo])[shared.repo][0]
    shared.store.save_stats(shared.repo, {arm: TermStats(base=st.base) for arm, st in held.items()}, dirty=True)
    index_into_store(shared)  # no file changed
    shared.ensure_index()
    _assert_same_scores(local, shared)
    local.close()
    shared.close()


# -- navigation from the store (MilvusEngine.graph: the chunks' edges in the collection) --------


def _places(found) -> dict:
    return {kind: [(p.path, p.name, p.resolution) for p in getattr(found, kind)] for kind in ("callers", "tests")}


def _same_neighbourhoods(local, shared, places) -> None:
    from ranklens.core.navigate import neighbourhood

    for path, where in places:
        want, got = neighbourhood(local, path, where), neighbourhood(shared, path, where)
        assert got.to_dict() == want.to_dict(), (path, where)


@needs_milvus
def test_related_from_the_store_is_the_local_index_s_and_follows_an_update(tmp_path):
    from ranklens.core.milvus_engine import StoreGraph, index_into_store
    from ranklens.core.navigate import graph_of, neighbourhood
    from tests.test_graph import PYTHON, write

    root = write(tmp_path / "py", PYTHON)
    local, shared, _summary = _engines(root, tmp_path / "s.db")
    assert isinstance(graph_of(shared), StoreGraph)
    places = [
        ("shop/retry.py", "get_backoff_time"),
        ("shop/retry.py", 6),  # __init__: called through its class
        ("shop/retry.py", "sleep_for"),
        ("shop/other.py", "poll"),
        ("shop/client.py", "fetch"),
    ]
    _same_neighbourhoods(local, shared, places)
    found = neighbourhood(shared, "shop/retry.py", "get_backoff_time")
    assert _places(found) == {
        "callers": [("shop/retry.py", "sleep_for", "same file"), ("shop/client.py", "fetch", "imported")],
        "tests": [("tests/test_retry.py", "test_backoff_doubles", "imported")],
    }
    # A one-file update moves the edge in the store too.
    (root / "shop" / "client.py").write_text(
        "from .retry import Retry\n\n\ndef fetch(url):\n    return url\n\n\n"
        "def fetch_slowly(url):\n    return Retry(3).get_backoff_time(), url\n"
    )
    local.ensure_index()
    summary = index_into_store(shared)
    assert summary.changed == 1
    shared.ensure_index()
    callers = neighbourhood(shared, "shop/retry.py", "get_backoff_time").callers
    assert ("shop/client.py", "fetch_slowly") in [(p.path, p.name) for p in callers]
    assert ("shop/client.py", "fetch") not in [(p.path, p.name) for p in callers]
    _same_neighbourhoods(local, shared, places)
    # A name matches whole: fetch is used nowhere now, fetch_slowly is no use of it.
    graph = graph_of(shared)
    assert graph.users("fetch") == [] and graph.definers("fetch")[0].path == "shop/client.py"
    assert graph.paths_using("Retry") == {"shop/client.py", "tests/test_retry.py"}
    assert graph.indexed("shop/client.py") and not graph.indexed("shop/nope.py")
    local.close()
    shared.close()


def test_stored_edges_keep_the_definitions_first_and_cut_at_a_name():
    from ranklens.core.backends.milvus import refs_names, refs_vector
    from ranklens.core.backends.sparse import EMPTY, term_index

    assert refs_names("get Retry get =fetch =Retry.sleep") == ["=fetch", "=Retry.sleep", "get", "Retry"]
    assert refs_names("alpha beta =gamma", limit=12) == ["=gamma", "alpha"]  # "=gamma alpha" is 12 bytes
    assert refs_names("") == [] and refs_vector([]) == {EMPTY: 1.0}
    assert refs_vector(["a", "=a"]) == {term_index("a"): 1.0, term_index("=a"): 1.0}


@needs_milvus
def test_two_names_sharing_an_index_in_the_store_are_told_apart(tmp_path):
    from ranklens.core.backends.sparse import term_index
    from ranklens.core.navigate import graph_of

    # Two names whose CRC-32 (refs_sparse's index) is the same.
    assert term_index("name_485463") == term_index("name_13020000")
    root = write_repo(
        tmp_path / "clash",
        {
            "a.py": "def name_485463():\n    return 1\n\n\ndef caller():\n    return name_13020000()\n",
            "b.py": "def name_13020000():\n    return 2\n",
        },
    )
    _local, shared, _summary = _engines(root, tmp_path / "s.db")
    graph = graph_of(shared)
    assert graph.users("name_485463") == []
    assert [p.path for p in graph.users("name_13020000")] == ["a.py"]
    assert [p.path for p in graph.definers("name_13020000")] == ["b.py"]
    _local.close()
    shared.close()


@needs_milvus
def test_cli_related_and_like_from_a_store(tmp_path):
    from tests.test_graph import PYTHON, write

    root = write(tmp_path / "py", PYTHON)
    shared = Store("lite", tmp_path)
    index_json(shared, root)
    out = shared.cli("related", "shop/retry.py:9", "--root", str(root), "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    want = run("related", "shop/retry.py:9", "--root", str(root), "--json")
    assert want.returncode == 0, want.stderr
    expected = json.loads(want.stdout)
    for kind in ("unit", "callers", "callees", "tests", "counts"):
        assert data[kind] == expected[kind], kind
    assert [c["name"] for c in data["callers"]] == ["sleep_for", "fetch"]
    like = shared.cli("query", "--like", "shop/other.py:get_backoff_time", "--root", str(root), "--json")
    assert like.returncode == 0, like.stderr
    assert json.loads(like.stdout)["like"]["name"] == "get_backoff_time"
    line = one_line_error(shared.cli("related", "shop/retry.py:9", "--root", str(root), "--repo", "a,b"), 2)
    assert "one repository" in line
    line = one_line_error(shared.cli("related", "shop/retry.py:9", "--root", str(root), "--repo", "elsewhere"))
    assert "'elsewhere' is not in" in line


def test_a_files_call_edges_are_the_local_index_s_in_the_store(tmp_path):
    """The chunk step's lift (``Params.chunk_called``) reads which units of a file call which:
    from the index's uses locally, from each row's ``refs`` in a store; the same edges."""
    from tests.test_chunkstep import CALLS

    root = tmp_path / "calls"
    write_repo(root, CALLS)
    local, shared, _summary = _engines(root, tmp_path / "s.db")
    try:
        for path in CALLS:
            mine = local.file_units("anything", [path])[path]
            theirs = shared.file_units("anything", [path])[path]
            assert [(u.start, u.end) for u in mine.units] == [(u.start, u.end) for u in theirs.units]
            assert mine.callers == theirs.callers and any(mine.callers), path
    finally:
        local.close()
        shared.close()
