"""The real ``ranklens`` CLI, run as a subprocess over a fixture repository."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from cli_helpers import run

from ranklens.core.query.config import default_config

LINE = re.compile(
    r"^(?P<loc>\S+:\d+-\d+)  \[score=(?P<score>\d\.\d{4}) agree=(?P<n>\d)/(?P<m>\d) "
    r"conf=(?P<conf>high|medium|low)  via (?P<via>[a-z0-9+,]+)\]"
)


def test_index_json_summary_then_incremental(sample_repo):
    first = run("index", str(sample_repo), "--json")
    assert first.returncode == 0, first.stderr
    summary = json.loads(first.stdout)
    assert summary["files"] == 6 and summary["chunks"] >= 6 and summary["added"] == 6  # .gitignore is hidden
    assert {s["path"] for s in summary["skipped"]} >= {".env", "keys/server.pem"}
    assert summary["discovery"] == {"mode": "walk", "hidden": False, "no_ignore": False}
    rules = {e["rule"]: (e["files"], e["dirs"]) for e in summary["excluded"]}
    assert rules[".gitignore:1: ignored/"] == (0, 1) and rules[".gitignore:2: *.log"] == (1, 0)
    assert summary["warning"] is None
    again = json.loads(run("index", str(sample_repo), "--json").stdout)
    assert again["up_to_date"] and again["embedded"] == 0


def test_index_reports_its_wall_time_and_the_stage_times_apart(sample_repo):
    """The summary's time is the command's wall (the stages overlap: their sum was printed as
    `in 71.54s` for a 36.6 s run); each stage's own time is on a line of its own."""
    import time

    from ranklens.core.index import indexer

    t0 = time.perf_counter()
    out = run("index", str(sample_repo))
    elapsed = time.perf_counter() - t0
    assert out.returncode == 0, out.stderr
    summary, stages = out.stdout.strip().splitlines()
    wall = float(re.search(r" in (\d+\.\d+)s -> ", summary).group(1))
    assert 0 < wall <= elapsed
    assert stages.startswith("  stages (they overlap): ") and "chunk " in stages
    listed = dict(re.findall(r"(\w[\w ]*?) (\d+\.\d+)s", stages.split(": ", 1)[1]))
    assert set(listed) <= {"check", *indexer.STAGES, "embed wait"}, listed
    # JSON: the stages apart, the wall beside them; stages that overlap may sum past it.
    (sample_repo / "app" / "extra.py").write_text("def extra():\n    return 1\n")
    data = json.loads(run("index", str(sample_repo), "--json").stdout)
    assert data["wall"] > 0 and "chunk" in data["seconds"] and "total" not in data["seconds"]


def test_query_text_lines_open_in_an_editor(sample_repo):
    out = run("query", "how are passwords hashed", "--root", str(sample_repo), "--top-k", "3")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert 1 <= len(lines) <= 3
    first = LINE.match(lines[0])
    assert first, lines[0]
    assert first["loc"].startswith("app/auth.py:")
    assert first["m"] == "4"


def test_query_json_envelope_has_every_field(sample_repo, tmp_path):
    target = tmp_path / "out" / "hits.json"
    target.parent.mkdir()
    out = run(
        "query",
        "rate limiter",
        "--root",
        str(sample_repo),
        "--json",
        "--output",
        str(target),
        "--weights",
        "dense:1.5,bm25:0.5",
        "--rrf-k",
        "30",
    )
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert json.loads(target.read_text()) == data
    assert set(data) == {
        "schema_version",
        "query",
        "mode",
        "retrievers",
        "skipped",
        "weights",
        "k",
        "priors",
        "results",
        "root",
        "query_ms",
    }
    assert data["schema_version"] == 1 and data["query_ms"] > 0 and data["root"] == str(sample_repo.resolve())
    assert data["mode"] == "all" and data["k"] == 30 and data["priors"] is True
    assert data["weights"] == {**default_config()["weights"], "bm25": 0.5, "dense": 1.5}
    hit = data["results"][0]
    assert hit["path"] == "server/main.go"
    assert set(hit) >= {
        "path",
        "start_line",
        "end_line",
        "docid",
        "context",
        "score",
        "fused_score",
        "rank",
        "provenance",
        "agreement",
        "confidence",
        "contributors",
        "priors",
        "sha256",
    }
    assert set(hit["contributors"][0]) == {"arm", "rank", "docid", "score", "contribution"}


def test_single_retriever_prints_its_own_ranking(sample_repo):
    out = run("query", "LRUCache", "--root", str(sample_repo), "--retriever", "fts5", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["mode"] == "fts5" and data["retrievers"] == ["fts5"]
    assert data["results"][0]["path"] == "app/cache.py"
    assert all(r["provenance"] == ["fts5"] for r in data["results"])


@pytest.mark.parametrize("mode", ["bm25", "dense", "symbols", "hybrid", "lexical+ctx"])
def test_every_retriever_mode_runs(sample_repo, mode):
    out = run("query", "parse config", "--root", str(sample_repo), "--retriever", mode, "--top-k", "2")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip()


def test_filters_by_path_and_language(sample_repo):
    out = run("query", "parse", "--root", str(sample_repo), "--path", "engine/*", "--json")
    assert {r["path"] for r in json.loads(out.stdout)["results"]} == {"engine/src/lib.rs"}
    out = run("query", "parse", "--root", str(sample_repo), "--lang", "javascript", "--json")
    assert {r["path"] for r in json.loads(out.stdout)["results"]} == {"web/router.js"}


def test_skip_notes_go_to_stderr_only(sample_repo):
    out = run("query", "login", "--root", str(sample_repo), "--model", str(sample_repo / "nope"), "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert [s["name"] for s in data["skipped"]] == ["dense"]
    assert "dense skipped" in out.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (["query", ""], "empty"),
        (["query", "x" * 1001], "limit is 1000"),
        (["query", "?!?!"], "no searchable words"),
        (["query", "x", "--retriever", "magic"], "unknown retriever"),
        (["query", "x", "--weights", "dense=2"], "malformed weight"),
        (["query", "x", "--weights", "dense:-1"], "bad weight"),
        (["query", "x", "--weights", "dense:abc"], "bad weight"),
        (["query", "x", "--weights", "vibes:1"], "unknown retriever"),
        (["query", "x", "--top-k", "0"], "--top-k"),
        (["query", "x", "--top-k", "1001"], "--top-k"),
        (["query", "x", "--rrf-k", "0"], "RRF k"),
        (["query", "x", "--root", "/no/such/dir"], "not a directory"),
        (["index", "/no/such/dir"], "not a directory"),
        (["query", "x", "--top-k", "ten"], "ten"),
        (["query"], "TEXT"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, message, sample_repo):
    out = run(*args, cwd=sample_repo)
    assert out.returncode == 2, (out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], out.stderr
    assert "Traceback" not in out.stderr


def test_an_unknown_language_is_one_line_listing_the_known_ones(sample_repo):
    out = run("query", "parse", "--root", str(sample_repo), "--lang", "klingon")
    assert out.returncode == 2, (out.stdout, out.stderr)
    (line,) = out.stderr.strip().splitlines()
    assert line.startswith("ranklens: error: unknown language 'klingon' (known: ")
    assert all(name in line for name in ("python", "go", "markdown", "rust", "text"))
    # Names are matched as the index stores them, whatever their case.
    upper = run("query", "parse", "--root", str(sample_repo), "--lang", "JavaScript", "--json")
    assert {r["path"] for r in json.loads(upper.stdout)["results"]} == {"web/router.js"}


@pytest.mark.parametrize(
    "word, message",
    [
        ("qurey", "'qurey' is no command (nor a folder); did you mean 'query'?"),
        ("indx", "did you mean 'index'?"),
        ("search", "did you mean 'query'?"),
        ("serch", "did you mean 'query'?"),
        ("Index", "did you mean 'index'?"),
        ("frobnicate", "'frobnicate' is no command and no folder (commands: tui, index, mcp, query"),
    ],
)
def test_a_mistyped_command_says_so_and_suggests_the_closest(word, message, tmp_path):
    out = run(word, "--json", cwd=tmp_path)
    assert out.returncode == 2, (out.stdout, out.stderr)
    (line,) = out.stderr.strip().splitlines()
    assert message in line and "not a directory" not in line


def test_a_folder_named_like_a_command_still_opens_the_ui(tmp_path):
    (tmp_path / "qurey").mkdir()
    # `ranklens qurey` is `ranklens tui qurey` when the folder exists (--help: no UI started).
    out = run("qurey", "--help", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "Open the terminal UI on ROOT" in out.stdout
    assert run("qurey", "--help", cwd=tmp_path / "qurey").returncode == 2  # not there: a typo


def test_unwritable_output_is_a_clean_error(sample_repo, tmp_path):
    out = run("query", "login", "--root", str(sample_repo), "--output", str(tmp_path / "missing" / "x.json"))
    assert out.returncode == 2 and "cannot write" in out.stderr and "Traceback" not in out.stderr


def test_help_documents_confidence_and_commands():
    out = run("query", "--help")
    assert out.returncode == 0
    assert "conf=high" in out.stdout and "w_arm / (k + rank_arm)" in out.stdout
    top = run("--help")
    assert "index" in top.stdout and "query" in top.stdout


def _debian_like(root):
    """Debian's copy of the Linux sources ends its top .gitignore with ``/*``."""
    files = {
        ".gitignore": "# Debian packaging: ignore everything at the top level\n#\n/*\n!/debian/\n",
        "kernel/fork.c": "int copy_process(void) { return 0; }\n",
        "mm/slab.c": "void kmem_cache_zqalloc(void) {}\n",
        "Makefile": "all:\n\techo zqmake\n",
        ".clang-format": "BasedOnStyle: LLVM\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_an_empty_tree_says_which_rule_emptied_it(tmp_path):
    root = _debian_like(tmp_path / "linux")
    out = run("index", str(root))
    assert out.returncode == 0, out.stderr
    warning = [line for line in out.stderr.splitlines() if "warning" in line]
    assert len(warning) == 1 and ".gitignore:3: /*" in warning[0] and "--no-ignore" in warning[0], out.stderr
    data = json.loads(run("index", str(root), "--json").stdout)
    assert data["files"] == 0 and data["kept"] == 0 and data["warning"].startswith("kept no files")
    assert data["excluded"] == [
        {
            "kind": "ignore",
            "name": ".gitignore",
            "line": 3,
            "pattern": "/*",
            "rule": ".gitignore:3: /*",
            "files": 3,
            "dirs": 2,
            "example": ".clang-format",
        }
    ]


def test_no_ignore_and_hidden_are_remembered_until_changed(tmp_path):
    root = _debian_like(tmp_path / "linux")
    data = json.loads(run("index", str(root), "--json", "--no-ignore").stdout)
    assert data["files"] == 3 and data["discovery"] == {"mode": "walk", "hidden": False, "no_ignore": True}
    assert data["warning"] is None
    # A plain query searches what was indexed: the flags stick to the root's index.
    hits = json.loads(run("query", "zqalloc", "--root", str(root), "--json").stdout)["results"]
    assert [h["path"] for h in hits][:1] == ["mm/slab.c"]
    data = json.loads(run("index", str(root), "--json", "--hidden").stdout)
    assert data["discovery"] == {"mode": "walk", "hidden": True, "no_ignore": True}
    assert data["files"] == 5 and data["added"] == 2 and not data["rebuilt"]  # .gitignore, .clang-format
    data = json.loads(run("index", str(root), "--json", "--no-hidden", "--ignore").stdout)
    assert data["files"] == 0 and data["removed"] == 5 and not data["rebuilt"]


def test_a_docs_page_named_after_credentials_is_indexed_its_content_rules_kept(tmp_path):
    root = tmp_path / "repo"
    page = root / "docs" / "integrations" / "prefect_aws-credentials.mdx"
    page.parent.mkdir(parents=True)
    key = "AKIA" + "Q" * 16
    page.write_text(
        f"# AWS credentials block\n\nStore the access key of the deploy role.\n\nexport AWS_ACCESS_KEY_ID={key}\n"
    )
    (root / "secrets.yaml").write_text("token: abc\n")  # a data file: still skipped by name
    data = json.loads(run("index", str(root), "--json").stdout)
    assert data["files"] == 1 and data["skipped"] == [{"path": "secrets.yaml", "reason": "secret"}]
    assert data["redacted"] == [{"path": "docs/integrations/prefect_aws-credentials.mdx", "lines": [5]}]
    out = run("query", "aws credentials block access key", "--root", str(root), "--json")
    hits = json.loads(out.stdout)["results"]
    assert hits and hits[0]["path"] == "docs/integrations/prefect_aws-credentials.mdx"
    assert run("why", "docs/integrations/prefect_aws-credentials.mdx", "--root", str(root)).stdout.startswith(
        "docs/integrations/prefect_aws-credentials.mdx: kept"
    )
    assert key not in out.stdout


def test_why_names_the_deciding_rule(tmp_path):
    root = _debian_like(tmp_path / "linux")
    (root / "notes.txt").write_text("deploy with\nexport AWS_ACCESS_KEY_ID=" + "AKIA" + "Z" * 16 + "\n")
    (root / "key.txt").write_text("-----" + "BEGIN RSA PRIVATE KEY-----\nMIIB\n-----" + "END RSA PRIVATE KEY-----\n")
    out = run("why", "kernel/fork.c", "--root", str(root))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == (
        "kernel/fork.c: skipped by .gitignore:3: /* (it matches kernel/); --no-ignore reads no ignore file"
    )
    assert run("why", "kernel/fork.c", "--root", str(root), "--no-ignore").stdout.strip() == "kernel/fork.c: kept"
    hidden = run("why", ".clang-format", "--root", str(root), "--no-ignore").stdout.strip()
    assert (
        hidden
        == ".clang-format: skipped by hidden (name starts with a dot); --hidden includes hidden files and folders"
    )
    redacted = run("why", "notes.txt", "--root", str(root), "--no-ignore").stdout.strip()
    assert redacted == "notes.txt: kept; credential lines indexed redacted: 2 (AWS Access Key)"
    refused = run("why", "key.txt", "--root", str(root), "--no-ignore").stdout.strip()
    assert refused == "key.txt: listed, but not indexed: private key"
    data = json.loads(run("why", str(root / "mm" / "slab.c"), "--root", str(root), "--json").stdout)
    assert data["kept"] is False and data["via"] == "mm" and data["rule"]["line"] == 3
    # From inside the root, PATH is relative to the working folder.
    assert (
        run("why", "fork.c", "--root", "..", "--no-ignore", cwd=root / "kernel").stdout.strip() == "kernel/fork.c: kept"
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (["why", "nope.c"], "no such file or folder"),
        (["why", "/"], "is not under the root"),
        (["why", "x", "--root", "/no/such/dir"], "not a directory"),
    ],
)
def test_why_bad_input_is_one_line(args, message, sample_repo):
    out = run(*args, cwd=sample_repo)
    assert out.returncode == 2, (out.stdout, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in out.stderr


def test_help_lists_why_and_the_discovery_flags():
    assert "ranklens why PATH" in run("--help").stdout
    for command in ("index", "query", "tui", "eval", "tune", "why"):
        text = run(command, "--help").stdout
        assert "--hidden / --no-hidden" in text and "--no-ignore / --ignore" in text, command


def test_via_of_a_chunk_ranked_only_within_its_file_says_so():
    from ranklens.cli.query import _via
    from ranklens.core.base.types import ConsolidatedHit

    hit = ConsolidatedHit("a.py", 1, 9, "a.py:1-9", "a.py", 1.0, 1, [], 0, "low")
    assert _via(hit) == ""
    hit.within = {"dense": 2, "bm25": 1}
    assert _via(hit) == "bm25,dense (in its file)"
    hit.provenance = ["fts5"]
    assert _via(hit) == "fts5"


HEAVY = ("numpy", "scipy", "textual", "usearch", "model2vec", "tree_sitter", "tree_sitter_language_pack")


@pytest.mark.parametrize(
    "args",
    [["--version"], ["--help"], ["why", "app/auth.py", "--root", "{root}"], ["why", "--help"], ["index", "--help"]],
)
def test_version_help_and_why_load_no_heavy_library(args, sample_repo):
    args = [a.replace("{root}", str(sample_repo)) for a in args]
    code = (
        "import sys, io, contextlib\n"
        "from ranklens.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        f"    code = main({args!r})\n"
        f"heavy = {HEAVY!r}\n"
        "print(code, sorted({m.split('.')[0] for m in sys.modules} & set(heavy)))\n"
        "print(out.getvalue())\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    status, _, shown = proc.stdout.partition("\n")
    assert status == "0 []", proc.stdout + proc.stderr
    assert shown.strip()  # it still printed its answer


def test_help_fills_in_the_registry_and_the_defaults():
    # The arm list, the priors, the limits and the defaults are read when the help is shown.
    from ranklens.core.arms import REGISTRY
    from ranklens.core.engine import CANDIDATE_DEPTH, DEFAULT_TOP_K, MAX_TOP_K
    from ranklens.core.evaluation import SEED

    query = " ".join(run("query", "--help").stdout.split())
    assert "@" not in query.replace("@1", "").replace("@5", "")
    assert f"one of: {', '.join(REGISTRY)} (its own ranking)" in query
    assert f"(1..{MAX_TOP_K})" in query and f"each arm ranks {CANDIDATE_DEPTH}" in query
    assert f"[default: {DEFAULT_TOP_K}]" in query and "tests x0.5" in query
    tune = " ".join(run("tune", "--help").stdout.split())
    assert f"[default: {SEED}]" in tune and "all (bm25, fts5, dense, symbols" in tune


def test_index_progress_is_one_bar_of_files_with_the_stage_in_words(stepped_repo, small_steps, capsys, monkeypatch):
    """Issue 43: a bar per stage went back as a build committed step after step (each step
    runs its stages again); now one bar counts files indexed of files to index, named by the
    stage in words, and ends on what the pass did."""
    from rich.progress import Progress

    from ranklens.cli.index import _run_index_stages
    from ranklens.core.engine import Engine
    from ranklens.core.index.indexer import STAGE_WORDS

    shown_as: list[tuple] = []  # (task, description, completed) after each update of the bars
    update = Progress.update

    def recorded(self, task, **kwargs):
        update(self, task, **kwargs)
        shown_as.append((task, self._tasks[task].description, self._tasks[task].completed))

    monkeypatch.setattr(Progress, "update", recorded)
    engine = Engine(stepped_repo)
    try:
        stats = _run_index_stages(engine, True, False, None)
        assert stats.generation > 1  # several steps
        assert {task for task, _, _ in shown_as} == {0}  # one bar
        counts = [completed for _, _, completed in shown_as]
        assert counts == sorted(counts) and counts[-1] == stats.files
        assert {words for _, words, _ in shown_as[:-1]} <= set(STAGE_WORDS.values())
        assert {"chunking", "committing a step"} <= {words for _, words, _ in shown_as}
        shown = capsys.readouterr().err.strip().splitlines()
        assert len(shown) == 1, shown
        assert re.fullmatch(rf"indexed +━+ {stats.files}/{stats.files} [\d:]+", shown[0]), shown
        stats = _run_index_stages(engine, True, False, None)
        (line,) = capsys.readouterr().err.strip().splitlines()
        assert re.fullmatch(rf"up to date +━+ {stats.files}/{stats.files} [\d:]+", line), line
    finally:
        engine.close()
