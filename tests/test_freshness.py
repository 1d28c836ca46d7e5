"""The freshness check (core.index.freshness): each kind of change is seen, with the listing when it
can change and without it when it cannot; a change inside an ignored folder is not seen at all."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from ranklens.core.engine import Engine
from ranklens.core.index import freshness, indexer as indexer_mod
from ranklens.core.index.freshness import SNAPSHOT_FILE

HAS_GIT = shutil.which("git") is not None


@pytest.fixture(autouse=True)
def _no_racy_window(monkeypatch):
    # Files written a moment ago are "racy" (re-read whatever their stat says); most tests
    # change a tree right after indexing it, so they narrow the window to nothing.
    monkeypatch.setattr(freshness, "RACY_NS", 0)


@pytest.fixture(params=["walk", "git"])
def tree(request, tmp_path):
    root = tmp_path / "repo"
    (root / "src" / "deep").mkdir(parents=True)
    (root / "out").mkdir()
    (root / "src" / "alpha.py").write_text("def alpha_function():\n    return 1\n")
    (root / "src" / "deep" / "beta.py").write_text("def beta_function():\n    return 2\n")
    (root / "notes.md").write_text("# Notes\n\nsome words about gamma\n")
    (root / "out" / "generated.py").write_text("def generated_function():\n    pass\n")
    (root / ".gitignore").write_text("out/\n")
    if request.param == "git":
        if not HAS_GIT:
            pytest.skip("git is not installed")
        env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}
        subprocess.run(["git", "init", "-q"], cwd=root, check=True, env=env)
        subprocess.run(["git", "add", "src", "notes.md", ".gitignore"], cwd=root, check=True, env=env)
    return root


def build(root):
    engine = Engine(root)
    stats = engine.ensure_index()
    return engine, stats


class Listed(Exception):
    pass


@pytest.fixture
def no_listing(monkeypatch):
    """Fail the test if discovery lists the tree."""

    def refuse(*args, **kwargs):
        raise Listed("the tree was listed")

    monkeypatch.setattr(indexer_mod, "discover", refuse)


def paths(engine):
    return set(engine.view.chunks.paths)


def walk_mode(engine) -> bool:
    return engine.ensure_index().discovery["mode"] == "walk"


def assert_as_a_whole_listing(engine, root, stats):
    """What the pass reports, and the next pass's snapshot, agree with a whole listing."""
    from ranklens.core.discovery import discover

    whole = discover(root, watch=True)
    assert stats.kept == len(whole.files)
    assert [e.to_dict() for e in stats.excluded] == [e.to_dict() for e in whole.excluded]
    assert sorted(p for p, _ in stats.skipped) == sorted(p for p, _ in whole.skipped)
    snap = freshness.Snapshot.load(engine.directory)
    assert snap.files == [f.path for f in whole.files]
    assert snap.sizes == [f.size for f in whole.files]
    assert set(snap.folders) == set(whole.folders)
    assert set(snap.watched) == set(whole.watched)


def test_nothing_changed_lists_nothing_and_loads_no_model(tree, no_listing, monkeypatch):
    engine, first = build_unpatched(tree, monkeypatch)

    from ranklens.core.text import embedding

    def no_model(*args, **kwargs):
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(embedding, "load_model", no_model)
    stats = engine.ensure_index()
    assert stats.check["verdict"] == "unchanged"
    assert stats.up_to_date and stats.generation == first.generation
    assert (stats.files, stats.chunks, stats.kept) == (first.files, first.chunks, first.kept)
    assert stats.discovery == first.discovery
    assert [e.to_dict() for e in stats.excluded] == [e.to_dict() for e in first.excluded]


def build_unpatched(root, monkeypatch):
    from ranklens.core.discovery import discover

    with monkeypatch.context() as m:
        m.setattr(indexer_mod, "discover", discover)
        return build(root)


def test_edit_in_place_keeping_size_is_read_without_a_listing(tree, no_listing, monkeypatch):
    engine, _ = build_unpatched(tree, monkeypatch)
    path = tree / "src" / "alpha.py"
    before = path.stat()
    path.write_text("def omega_function():\n    return 1\n"[: before.st_size].ljust(before.st_size))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000))
    stats = engine.ensure_index()
    assert stats.check["verdict"] == "files"
    assert (stats.added, stats.changed, stats.removed) == (0, 1, 0)
    assert engine.search("omega_function").hits[0].path == "src/alpha.py"
    # And the pass after it finds nothing.
    assert engine.ensure_index().check["verdict"] == "unchanged"


@pytest.mark.parametrize("change", ["add", "delete", "rename", "new folder"])
def test_entries_added_removed_or_renamed_are_listed_again(tree, change):
    engine, _ = build(tree)
    if change == "add":
        (tree / "src" / "gamma.py").write_text("def gamma_function():\n    pass\n")
        expected, present, gone = (1, 0, 0), "src/gamma.py", None
    elif change == "delete":
        (tree / "src" / "deep" / "beta.py").unlink()
        expected, present, gone = (0, 0, 1), None, "src/deep/beta.py"
    elif change == "rename":
        (tree / "src" / "alpha.py").rename(tree / "src" / "renamed.py")
        expected, present, gone = (1, 0, 1), "src/renamed.py", "src/alpha.py"
    else:
        (tree / "src" / "deep" / "deeper").mkdir()
        (tree / "src" / "deep" / "deeper" / "delta.py").write_text("def delta_function():\n    pass\n")
        expected, present, gone = (1, 0, 0), "src/deep/deeper/delta.py", None
    stats = engine.ensure_index()
    # Walk mode lists the changed folders again; git mode asks git for the whole listing.
    assert stats.check["verdict"] == ("folders" if walk_mode(engine) else "listing")
    assert stats.check["listed"] != "whole tree" or not walk_mode(engine)
    assert (stats.added, stats.changed, stats.removed) == expected
    assert_as_a_whole_listing(engine, tree, stats)
    if present:
        assert present in paths(engine)
    if gone:
        assert gone not in paths(engine)
    assert engine.ensure_index().check["verdict"] == "unchanged"


def test_an_ignore_file_edited_in_place_is_seen(tree):
    (tree / "scratch.py").write_text("def scratch_function():\n    pass\n")  # untracked in git mode
    engine, _ = build(tree)
    assert "scratch.py" in paths(engine)
    ignore = tree / ".gitignore"
    folder = tree.stat().st_ctime_ns
    with open(ignore, "a") as fh:  # in place: the folder does not change, the file does
        fh.write("scratch.py\n")
    assert tree.stat().st_ctime_ns == folder
    stats = engine.ensure_index()
    assert stats.check["verdict"] == "listing"
    assert stats.removed == 1 and "scratch.py" not in paths(engine)


def test_a_change_inside_an_ignored_folder_is_not_seen(tree, no_listing, monkeypatch):
    engine, _ = build_unpatched(tree, monkeypatch)
    (tree / "out" / "generated.py").write_text("def regenerated():\n    pass\n")
    (tree / "out" / "more.py").write_text("x = 1\n")
    (tree / "out" / "sub").mkdir()
    stats = engine.ensure_index()
    assert stats.check["verdict"] == "unchanged"
    assert "out/more.py" not in paths(engine)


@pytest.mark.skipif(not HAS_GIT, reason="git is not installed")
def test_git_add_of_an_ignored_file_is_seen(tmp_path):
    root = tmp_path / "repo"
    (root / "out").mkdir(parents=True)
    (root / "keep.py").write_text("def keep():\n    pass\n")
    (root / "out" / "forced.py").write_text("def forced_function():\n    pass\n")
    (root / ".gitignore").write_text("out/\n")
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}
    subprocess.run(["git", "init", "-q"], cwd=root, check=True, env=env)
    subprocess.run(["git", "add", "keep.py"], cwd=root, check=True, env=env)
    engine, _ = build(root)
    assert "out/forced.py" not in paths(engine)
    subprocess.run(["git", "add", "-f", "out/forced.py"], cwd=root, check=True, env=env)  # tracked now
    stats = engine.ensure_index()
    assert stats.check["verdict"] == "listing"
    assert "out/forced.py" in paths(engine)


def test_a_racy_file_is_read_whatever_its_stat_says(tree, monkeypatch):
    monkeypatch.setattr(freshness, "RACY_NS", 60_000_000_000)  # everything written this minute is racy
    engine, _ = build(tree)
    path = tree / "src" / "alpha.py"
    before = path.stat()
    path.write_text("def sigma_function():\n    return 1\n"[: before.st_size].ljust(before.st_size))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # same size, same mtime
    stats = engine.ensure_index()
    assert stats.changed == 1
    assert engine.search("sigma_function").hits[0].path == "src/alpha.py"


def test_other_settings_or_a_missing_snapshot_list_the_tree(tree):
    engine, _ = build(tree)
    (engine.directory / SNAPSHOT_FILE).unlink()
    assert engine.ensure_index().check["verdict"] == "none"
    assert engine.ensure_index().check["verdict"] == "unchanged"
    (engine.directory / SNAPSHOT_FILE).write_bytes(b"not a snapshot")
    assert engine.ensure_index().check["verdict"] == "none"
    from ranklens.core.arms.protocol import IndexSettings
    from ranklens.core.discovery import DiscoveryOptions

    hidden = Engine(tree, IndexSettings(options=DiscoveryOptions(hidden=True)))
    stats = hidden.ensure_index()
    assert stats.check["verdict"] == "none" and stats.discovery["hidden"]
    # Unset, hidden is as the index was last built: the snapshot answers.
    assert engine.ensure_index().check["verdict"] == "unchanged"


def test_a_snapshot_of_another_generation_is_not_trusted(tree):
    engine, _ = build(tree)
    saved = (engine.directory / SNAPSHOT_FILE).read_bytes()
    (tree / "src" / "gamma.py").write_text("def gamma_function():\n    pass\n")
    assert engine.ensure_index().added == 1
    (engine.directory / SNAPSHOT_FILE).write_bytes(saved)  # as if the new one was never written
    (tree / "src" / "gamma.py").unlink()
    stats = engine.ensure_index()
    assert stats.check["verdict"] == "none" and stats.removed == 1


def test_ranklens_index_with_nothing_changed_imports_no_heavy_library(tree):
    build(tree)
    code = (
        "import sys, io, contextlib\n"
        "from ranklens.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        f"    assert main(['index', {str(tree)!r}]) == 0\n"
        "heavy = ('scipy', 'tree_sitter', 'tree_sitter_language_pack', 'model2vec', 'tokenizers', 'usearch',"
        " 'numkong', 'onnxruntime')\n"
        "heavy += ('pathspec', 'importlib.metadata')  # ~30 ms each: an ignore file or an install hint read\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy or m in heavy))\n"
        "print(out.getvalue())\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ, check=True)
    loaded, line = proc.stdout.splitlines()[:2]
    assert loaded == "[]"
    assert "nothing changed" in line


def test_index_json_reports_the_check(tree, capsys):
    from ranklens.cli import main

    build(tree)
    assert main(["index", str(tree), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["check"]["verdict"] == "unchanged"
    assert data["check"]["files"] == data["files"]
    assert data["up_to_date"]


@pytest.mark.parametrize(
    "change",
    [
        "binary file",
        "hidden folder",
        "folder removed",
        "folder renamed",
        "file to folder",
        "root file",
    ],
)
def test_a_folder_listed_again_counts_as_a_whole_listing(tmp_path, change):
    root = tmp_path / "repo"
    (root / "a" / "b" / "c").mkdir(parents=True)
    (root / "a" / "one.py").write_text("def one():\n    pass\n")
    (root / "a" / "b" / "two.py").write_text("def two():\n    pass\n")
    (root / "a" / "b" / "c" / "three.py").write_text("def three():\n    pass\n")
    (root / "a" / "b" / "logo.png").write_bytes(b"\x89PNG")
    (root / "a" / ".gitignore").write_text("*.log\n")
    engine, _ = build(root)
    if change == "binary file":
        (root / "a" / "b" / "more.png").write_bytes(b"\x89PNG")
        (root / "a" / "b" / "debug.log").write_text("ignored by a/.gitignore\n")
    elif change == "hidden folder":
        (root / "a" / ".hidden").mkdir()
        (root / "a" / ".hidden" / "four.py").write_text("def four():\n    pass\n")
    elif change == "folder removed":
        shutil.rmtree(root / "a" / "b")
    elif change == "folder renamed":
        (root / "a" / "b").rename(root / "a" / "renamed")
    elif change == "file to folder":
        (root / "a" / "one.py").unlink()
        (root / "a" / "one.py").mkdir()
        (root / "a" / "one.py" / "five.py").write_text("def five():\n    pass\n")
    else:
        (root / "top.py").write_text("def top():\n    pass\n")
    stats = engine.ensure_index()
    assert stats.check["verdict"] == "folders"
    assert stats.check["listed"] != "whole tree"
    assert_as_a_whole_listing(engine, root, stats)
    assert engine.ensure_index().check["verdict"] == "unchanged"


@pytest.mark.parametrize("change", ["new ignore file", "symbolic link"])
def test_what_a_folder_alone_cannot_decide_lists_the_whole_tree(tmp_path, change):
    root = tmp_path / "repo"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "one.py").write_text("def one():\n    pass\n")
    (root / "a" / "b" / "two.py").write_text("def two():\n    pass\n")
    engine, _ = build(root)
    if change == "new ignore file":
        (root / "a" / ".gitignore").write_text("b/\n")  # decides what lies below a/
    else:
        (root / "a" / "link.py").symlink_to(root / "a" / "one.py")
    stats = engine.ensure_index()
    assert stats.check["verdict"] == "folders" and stats.check["listed"] == "whole tree"
    assert_as_a_whole_listing(engine, root, stats)
    if change == "new ignore file":
        assert "a/b/two.py" not in paths(engine)


def test_a_new_hard_link_changes_no_content_and_lists_nothing(tree, no_listing, monkeypatch, tmp_path):
    # `cp -al` of the tree elsewhere moves every file's ctime (its link count), ignore files too.
    engine, _ = build_unpatched(tree, monkeypatch)
    os.link(tree / ".gitignore", tmp_path / "gitignore-link")
    os.link(tree / "src" / "alpha.py", tmp_path / "alpha-link")
    stats = engine.ensure_index()
    assert stats.check["verdict"] == "unchanged" and stats.up_to_date
    snap = freshness.Snapshot.load(engine.directory)  # the new ctimes are noted
    assert snap.watched[".gitignore"][2] == os.stat(tree / ".gitignore").st_ctime_ns
    assert engine.ensure_index().check["verdict"] == "unchanged"


def test_an_ignore_file_saved_with_the_same_text_lists_nothing_in_walk_mode(tree, monkeypatch):
    engine, _ = build(tree)
    ignore = tree / ".gitignore"
    before = ignore.stat()
    ignore.write_text(ignore.read_text())  # saved again: its mtime moves, its text does not
    os.utime(ignore, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000))
    stats = engine.ensure_index()
    # Walk mode compares the text its own listing read; git reads .gitignore itself.
    assert stats.check["verdict"] == ("unchanged" if walk_mode(engine) else "listing")
    assert engine.ensure_index().check["verdict"] == "unchanged"


def test_a_racy_ignore_file_is_compared_by_its_text(tmp_path, monkeypatch):
    monkeypatch.setattr(freshness, "RACY_NS", 60_000_000_000)  # every entry is racy
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    (root / "src" / "a.py").write_text("def a():\n    pass\n")
    (root / "src" / "b.py").write_text("def b():\n    pass\n")
    (root / ".gitignore").write_text("*.log\n")
    engine, _ = build(root)
    with open(root / ".gitignore", "a") as fh:  # in place, within the same second
        fh.write("b.py\n")
    stats = engine.ensure_index()
    assert stats.check["verdict"] == "listing" and stats.removed == 1
    assert "src/b.py" not in paths(engine)


def test_a_model_replaced_in_place_embeds_the_index_again(tree, monkeypatch):
    """A bundled or local model whose files change under the same spec (an upgrade, a rebuilt
    model) is seen by the check: the chunks are embedded again and the dense arm answers."""
    from ranklens.core.text import embedding

    model = tree.parent / "model"
    shutil.copytree(embedding.DEFAULT_MODEL_DIR, model)
    monkeypatch.setattr(embedding, "DEFAULT_MODEL_DIR", model)
    monkeypatch.setattr(embedding, "_cache", {})  # this test's models never reach another test
    engine, _ = build(tree)
    assert engine.ensure_index().check["verdict"] == "unchanged"
    spec = json.loads((model / "tokenizer.json").read_text())
    spec["normalizer"] = {"type": "Lowercase"}
    (model / "tokenizer.json").write_text(json.dumps(spec))
    embedding._cache.clear()  # as a new process would, load the new files
    stats = engine.ensure_index()
    assert stats.check["verdict"] != "unchanged"
    fresh = Engine(tree)
    assert fresh.ensure_index().check["verdict"] == "unchanged"
    result = fresh.run_arm("dense", "alpha function")
    assert result.ok, result.skipped or result.error  # skipped: "index was embedded with ..."
    assert result.hits
