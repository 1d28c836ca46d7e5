"""What the MCP server keeps between calls (core.agent.AgentService): a file's text and its
served spans (hash and redacted text), by the file's stat. Nothing kept is served once the
file changes, and the path rules run at every call: a path that now leads outside the root
(a link swapped in for the file or for its folder, the same inode) is refused."""

from __future__ import annotations

import os

import pytest

from ranklens.core.agent import AgentService
from ranklens.core.discovery import read_text
from ranklens.core.handoff import span_lines, text_sha256


@pytest.fixture
def service(sample_repo):
    svc = AgentService(sample_repo)
    job = svc.prepare(force_probe=True)
    assert job is not None and job.done.wait(120) and job.error is None
    yield svc
    svc.engine.close()


def _hit(svc, query: str, path: str) -> dict:
    return next(r for r in svc.search(query, top_k=20)["results"] if r["path"] == path)


def test_an_edited_files_span_is_never_served_stale(service, sample_repo):
    before = _hit(service, "hash_password salt", "app/auth.py")
    assert "sha256" in before and "hashlib.sha256" in before["text"]
    assert _hit(service, "hash_password salt", "app/auth.py") == before  # kept, the same answer
    path = sample_repo / "app/auth.py"
    path.write_text(path.read_text().replace("hashlib.sha256", "hashlib.blake2b"))
    # The same index snapshot (no update between the calls): the span's lines are the same
    # numbers, their text and hash the file's as it is now.
    after = _hit(service, "hash_password salt", "app/auth.py")
    assert (after["start_line"], after["end_line"]) == (before["start_line"], before["end_line"])
    fresh = read_text(sample_repo, "app/auth.py", service.engine.settings.options.max_bytes)[0]
    lines = span_lines(fresh, after["start_line"], after["end_line"])
    assert after["text"] == lines and after["sha256"] == text_sha256(lines) != before["sha256"]
    assert "hashlib.blake2b" in after["text"] and "hashlib.sha256" not in after["text"]


def test_a_served_file_swapped_for_a_link_outside_the_root_is_refused(service, sample_repo, tmp_path):
    assert _hit(service, "LRUCache get put", "app/cache.py")["text"]
    outside = tmp_path / "outside.py"
    outside.write_text("class LRUCache:\n    secret_outside = 1\n")
    cache = sample_repo / "app/cache.py"
    cache.unlink()
    cache.symlink_to(outside)
    hit = _hit(service, "LRUCache get put", "app/cache.py")
    assert hit["text"] is None and hit["sha256"] is None
    data = service.search("LRUCache get put", top_k=20)
    assert any("app/cache.py" in note and "outside the repository" in note for note in data["notes"])


def test_a_folder_swapped_for_a_link_outside_the_root_is_refused(service, sample_repo, tmp_path):
    assert _hit(service, "LRUCache get put", "app/cache.py")["text"]
    elsewhere = tmp_path / "elsewhere"
    (sample_repo / "app").rename(elsewhere)
    os.symlink(elsewhere, sample_repo / "app")  # the same files, reached through a link
    hit = _hit(service, "LRUCache get put", "app/cache.py")
    assert hit["text"] is None


def test_the_kernels_real_path_is_realpaths(tmp_path):
    """The path rules' real path (core.agent._realpath) answers as os.path.realpath does."""
    from ranklens.core.agent import _realpath

    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "file.py").write_text("x = 1\n")
    os.symlink(tmp_path / "dir", tmp_path / "dirlink")
    os.symlink("dir/file.py", tmp_path / "filelink.py")
    os.symlink(tmp_path / "missing.py", tmp_path / "dangling.py")
    os.symlink("loop_b", tmp_path / "loop_a")
    os.symlink("loop_a", tmp_path / "loop_b")
    for rel in ("dir/file.py", "dirlink/file.py", "filelink.py", "dangling.py", "missing.py", "dir", "loop_a"):
        path = os.path.join(tmp_path, rel)
        assert _realpath(path) == os.path.realpath(path), rel
