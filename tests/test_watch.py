"""Freshness as a user meets it: a file saved just before a query is answered from its new text,
a new file appears, a deleted file's hits vanish, through the real CLI; and the inotify watcher
of a long-lived process (core.index.watch) sees the same changes while stat'ing only what changed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from cli_helpers import run

from ranklens.core.engine import Engine
from ranklens.core.index import freshness

HAS_GIT = shutil.which("git") is not None
LINUX = sys.platform.startswith("linux")


def make_tree(root, mode: str):
    (root / "src" / "deep").mkdir(parents=True)
    (root / "out").mkdir()
    (root / "src" / "alpha.py").write_text("def alpha_function():\n    return 1\n")
    (root / "src" / "deep" / "beta.py").write_text("def beta_function():\n    return 2\n")
    (root / "notes.md").write_text("# Notes\n\nsome words about gamma\n")
    (root / "out" / "gen.py").write_text("def built_function():\n    pass\n")
    (root / ".gitignore").write_text("out/\n")
    if mode == "git":
        if not HAS_GIT:
            pytest.skip("git is not installed")
        env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}
        subprocess.run(["git", "init", "-q"], cwd=root, check=True, env=env)
        subprocess.run(["git", "add", "src", "notes.md", ".gitignore"], cwd=root, check=True, env=env)
    return root


@pytest.fixture(params=["walk", "git"])
def tree(request, tmp_path):
    return make_tree(tmp_path / "repo", request.param)


def hits(root, text: str, *extra: str) -> list[dict]:
    out = run("query", text, "--root", str(root), "--json", "--top-k", "5", *extra)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["results"]


def span_text(root, hit: dict) -> str:
    lines = (root / hit["path"]).read_text().splitlines()
    return "\n".join(lines[hit["start_line"] - 1 : hit["end_line"]])


# -- the command line ----------------------------------------------------------------------


def test_the_cli_answers_a_file_saved_just_before_the_query_from_its_new_text(tree):
    assert run("index", str(tree)).returncode == 0
    assert hits(tree, "alpha_function")[0]["path"] == "src/alpha.py"
    # Saved in place, same size class, right before the query (the editor's write).
    (tree / "src" / "alpha.py").write_text("def alpha_function():\n    return zanzibar_quota()\n")
    found = hits(tree, "zanzibar_quota")
    assert found and found[0]["path"] == "src/alpha.py"
    assert "zanzibar_quota" in span_text(tree, found[0])
    # The answer carries the hash of the text it was made from: the new one.
    from ranklens.core.handoff import text_sha256

    assert found[0]["sha256"] == text_sha256(span_text(tree, found[0]))


def test_the_cli_finds_a_new_file_and_forgets_a_deleted_one(tree):
    assert run("index", str(tree)).returncode == 0
    assert hits(tree, "beta_function")[0]["path"] == "src/deep/beta.py"
    (tree / "src" / "deep" / "beta.py").unlink()
    (tree / "src" / "deep" / "delta.py").write_text("def delta_pelican_function():\n    return 4\n")
    (tree / "src" / "fresh").mkdir()
    (tree / "src" / "fresh" / "epsilon.py").write_text("def epsilon_walrus():\n    return 5\n")
    assert hits(tree, "delta_pelican_function")[0]["path"] == "src/deep/delta.py"
    assert hits(tree, "epsilon_walrus")[0]["path"] == "src/fresh/epsilon.py"
    assert all(h["path"] != "src/deep/beta.py" for h in hits(tree, "beta_function"))


def test_fresh_lists_the_whole_tree_again(tree):
    assert run("index", str(tree)).returncode == 0
    out = run("index", str(tree), "--json", "--fresh")
    check = json.loads(out.stdout)["check"]
    assert check["verdict"] == "none" and check["listed"] == "whole tree" and "--fresh" in check["reason"]
    assert hits(tree, "alpha_function", "--fresh")[0]["path"] == "src/alpha.py"


def test_the_help_states_the_guarantee():
    for command in ("query", "index", "tui"):
        text = " ".join(run(command, "--help").stdout.split())
        assert "a file saved before a query is never answered from its old text" in text
        assert "--fresh" in text


# -- the watcher (a long-lived process) ----------------------------------------------------

needs_inotify = pytest.mark.skipif(not LINUX, reason="inotify is Linux's")


@pytest.fixture
def watched(tree, monkeypatch):
    """An engine over ``tree`` holding a watcher, past its whole checks: each later check is
    the watcher's."""
    monkeypatch.setattr(freshness, "RACY_NS", 0)  # changes come right after indexing here
    engine = Engine(tree)
    assert engine.watch()
    engine.ensure_index()
    for _ in range(3):  # the first checks after watches were added stat everything
        if engine.ensure_index().check["by"] == "watcher":
            break
    assert engine.ensure_index().check["by"] == "watcher"
    yield engine
    engine.close()


@needs_inotify
def test_with_nothing_changed_the_watcher_stats_nothing(watched):
    stats = watched.ensure_index()
    assert stats.check["verdict"] == "unchanged" and stats.check["by"] == "watcher"
    assert (stats.check["files"], stats.check["folders"], stats.check["watched"]) == (0, 0, 0)
    assert stats.files == stats.unchanged > 0  # the report is the last pass's


@needs_inotify
def test_the_watcher_sees_a_saved_file_and_stats_only_it(watched, tree):
    (tree / "src" / "alpha.py").write_text("def alpha_function():\n    return zanzibar_quota()\n")
    stats = watched.ensure_index()
    assert stats.changed == 1 and stats.check["by"] == "watcher"
    assert stats.check["files"] == 1 and stats.check["folders"] == 0
    assert watched.search("zanzibar_quota", top_k=3).hits[0].path == "src/alpha.py"
    assert watched.ensure_index().check["verdict"] == "unchanged"  # settled


@needs_inotify
def test_the_watcher_sees_files_and_folders_come_and_go(watched, tree):
    (tree / "src" / "deep" / "delta.py").write_text("def delta_pelican():\n    return 4\n")
    stats = watched.ensure_index()
    assert stats.added == 1 and stats.check["by"] == "watcher"
    (tree / "src" / "deep" / "beta.py").unlink()
    assert watched.ensure_index().removed == 1
    (tree / "src" / "deep" / "delta.py").rename(tree / "src" / "gamma.py")
    stats = watched.ensure_index()
    assert (stats.added, stats.removed) == (1, 1)
    # A new folder is listed by the pass, and watched from then on: the first check after its
    # watch was added stats everything (a change before the watch existed is not queued).
    (tree / "lib").mkdir()
    (tree / "lib" / "eta.py").write_text("def eta_heron():\n    return 7\n")
    assert watched.ensure_index().added == 1
    (tree / "lib" / "eta.py").write_text("def eta_heron():\n    return 'seven'\n")
    stats = watched.ensure_index()
    assert stats.changed == 1 and stats.check["by"] == "stat"
    (tree / "lib" / "eta.py").write_text("def eta_heron():\n    return 'eight'\n")
    stats = watched.ensure_index()
    assert stats.changed == 1 and stats.check["by"] == "watcher" and stats.check["files"] == 1
    assert {h.path for h in watched.search("eta_heron gamma pelican", top_k=5).hits} >= {"lib/eta.py", "src/gamma.py"}


@needs_inotify
def test_the_watcher_passes_over_ignored_folders_and_sees_ignore_files(watched, tree):
    (tree / "out" / "gen.py").write_text("def built_again():\n    pass\n")
    (tree / "out" / "more.py").write_text("def more_built():\n    pass\n")
    stats = watched.ensure_index()
    assert stats.check["verdict"] == "unchanged" and stats.check["files"] == 0
    (tree / ".gitignore").write_text("")
    stats = watched.ensure_index()
    assert stats.added == 2  # out/ is indexed now


@needs_inotify
def test_git_add_is_seen_by_the_watcher(watched, tree):
    if watched.ensure_index().discovery["mode"] != "git":
        pytest.skip("a git work tree only")
    (tree / "src" / "untracked.py").write_text("def untracked_ibis():\n    pass\n")
    assert watched.ensure_index().added == 1  # git lists untracked files that are not ignored
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}
    subprocess.run(["git", "add", "-f", "out/gen.py"], cwd=tree, check=True, env=env)
    stats = watched.ensure_index()
    assert stats.check["verdict"] == "listing" and stats.added == 1  # a tracked file in out/


@needs_inotify
def test_what_the_watcher_cannot_vouch_for_is_checked_whole(watched, tree):
    watched.watcher.invalidate()  # as after a queue overflow
    (tree / "notes.md").write_text("# Notes\n\nother words\n")
    stats = watched.ensure_index()
    assert stats.changed == 1 and stats.check["by"] == "stat" and stats.check["files"] == 3
    assert watched.ensure_index().check["by"] == "watcher"


@needs_inotify
def test_another_process_s_pass_is_followed(watched, tree):
    other = Engine(tree)  # no watcher: as `ranklens index` in a shell
    (tree / "src" / "alpha.py").write_text("def alpha_function():\n    return 'other'\n")
    assert other.ensure_index().changed == 1
    stats = watched.ensure_index()
    assert stats.check["verdict"] == "unchanged" and stats.generation == other.view.generation
    (tree / "src" / "alpha.py").write_text("def alpha_function():\n    return 'mine'\n")
    assert watched.ensure_index().changed == 1
    other.close()


@needs_inotify
def test_the_mcp_server_sees_a_saved_file_on_the_next_call(sample_repo, monkeypatch):
    from ranklens.core.agent import AgentService

    monkeypatch.setattr(freshness, "RACY_NS", 0)
    service = AgentService(sample_repo)
    try:
        assert service.watching
        first = service.prepare()
        assert first is not None and first.done.wait(120) and first.error is None
        for _ in range(3):  # the whole checks after the watches were added
            if service.engine.check().by == "watcher":
                break
        assert service.prepare() is None  # nothing changed: nothing to update
        (sample_repo / "app" / "quota.py").write_text("def enforce_storage_quota(user):\n    return True\n")
        job = service.prepare()  # at once: no probe interval with a watcher
        assert job is not None and job.done.wait(120) and job.error is None
        found = service.search("enforce_storage_quota")["results"][0]
        assert found["path"] == "app/quota.py" and "enforce_storage_quota" in found["text"]
    finally:
        service.engine.close()


@needs_inotify
def test_the_session_says_when_the_tree_changed(tree, monkeypatch):
    from ranklens.core.session import Session

    monkeypatch.setattr(freshness, "RACY_NS", 0)
    session = Session(Engine(tree))
    assert session.watch()
    session.update_index()
    session.update_index()
    assert not session.changed()
    (tree / "out" / "gen.py").write_text("ignored\n")
    assert not session.changed()
    (tree / "notes.md").write_text("# Notes\n\nnew words\n")
    assert session.changed()
    session.update_index()
    assert not session.changed()
    session.engine.close()
