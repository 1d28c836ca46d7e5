"""scripts/mine_pairs.py on a small real repository: the pairs it mines and what it refuses."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "mine_pairs.py"

FILES = {
    "src/pool.py": '''
        class Pool:
            def acquire(self, timeout):
                """Wait until a connection is free, then hand it to the caller.

                Raises TimeoutError when none frees up in time.
                """
                conn = self._free.get(timeout=timeout)
                self._busy.add(conn)
                return conn

            def release(self, conn):
                """Give a borrowed connection back so another caller may use it."""
                self._busy.discard(conn)
                self._free.put(conn)

            def size(self):
                return len(self._busy) + self._free.qsize()
        ''',
    "server/limit.go": """
        package server

        // allowRequest reports whether a client may send one more request in this window.
        func allowRequest(counts map[string]int, client string, max int) bool {
            counts[client]++
            return counts[client] <= max
        }
        """,
    "vendor/lib/copy.py": '''
        def borrowed(x):
            """This function is vendored from another project entirely."""
            return x
        ''',
    "src/same.py": '''
        def shared_helper(x):
            """A helper whose file is byte-identical to one of the benchmark's."""
            return x * 2
        ''',
}


def _git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def snapshot(tmp: Path, name: str, files: dict[str, str]) -> Path:
    """A git repository of ``files`` (dedented) under ``tmp/src``, and its bare clone where a
    fetched snapshot lies (``tmp/mirror/<owner>+<name>/repo``); the work tree's path."""
    work = tmp / "src" / name.replace("/", "+")
    for rel, text in files.items():
        p = work / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text).lstrip())
    _git("init", "-q", cwd=work)
    _git("add", ".", cwd=work)
    _git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "x", cwd=work)
    bare = tmp / "mirror" / name.replace("/", "+") / "repo"
    bare.parent.mkdir(parents=True)
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(bare)], check=True)
    return work


def _repo(tmp: Path, name: str) -> Path:
    return snapshot(tmp, name, FILES)


def _bench_tar(tmp: Path) -> Path:
    """A stand-in for the benchmark's repos.tar.xz holding one file of the repository."""
    data = (textwrap.dedent(FILES["src/same.py"]).lstrip()).encode()
    path = tmp / "repos.tar.xz"
    with tarfile.open(path, "w:xz") as tar:
        info = tarfile.TarInfo("benchrepo/helpers.py")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return path


def _mine(tmp: Path, *repos: str):
    exclusions = tmp / "exclusions.txt"
    exclusions.write_text("# measured on\nmeasured/thing\nKotlin/kotlinx\n")
    out = tmp / "out"
    args = [
        sys.executable,
        str(SCRIPT),
        "--mirror",
        str(tmp / "mirror"),
        "--out",
        str(out),
        "--exclusions",
        str(exclusions),
        "--bench",
        str(_bench_tar(tmp)),
    ]
    for r in repos:
        args += ["--repo", r]
    done = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    pairs = [json.loads(line) for line in (out / "pairs.jsonl").read_text().splitlines()]
    return pairs, json.loads((out / "manifest.json").read_text())


def test_pairs_are_descriptions_and_code_without_their_documentation(tmp_path):
    work = _repo(tmp_path, "someone/pool")
    pairs, manifest = _mine(tmp_path, "someone/pool")
    plain = {p["desc"]: p for p in pairs if not p["masked"]}
    acquire = plain["Wait until a connection is free, then hand it to the caller."]
    assert acquire["lang"] == "python" and acquire["file"] == "someone/pool:src/pool.py"
    assert "self._free.get(timeout=timeout)" in acquire["code"]
    assert "Wait until" not in acquire["code"] and "TimeoutError" not in acquire["code"]  # the docstring is gone
    assert acquire["code"].startswith("src/pool.py > Pool > acquire\n")  # the breadcrumb, as the dense arm embeds it
    go = plain["reports whether a client may send one more request in this window."]
    assert "counts[client]++" in go["code"] and "reports whether" not in go["code"]
    # A definition without documentation gives no pair; nor do vendored or benchmark-identical files.
    assert not any("size" in p["code"].splitlines()[0] for p in pairs)
    assert not any("vendor/" in p["file"] or "same.py" in p["file"] for p in pairs)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=work, capture_output=True, text=True).stdout.strip()
    [entry] = manifest["repositories"]
    assert entry["repo"] == "someone/pool" and entry["commit"] == commit
    assert entry["pairs"] == {
        "go": sum(p["lang"] == "go" for p in pairs),
        "python": sum(p["lang"] == "python" for p in pairs),
    }
    assert manifest["pairs"] == len(pairs) and len(manifest["pairs_sha256"]) == 64


def test_masked_copies_drop_the_identifiers_the_description_repeats(tmp_path):
    _repo(tmp_path, "someone/pool")
    pairs, _ = _mine(tmp_path, "someone/pool")
    masked = [p for p in pairs if p["masked"]]
    assert masked, "some pairs get a masked copy"
    for p in masked:
        said = {w.lower() for w in p["desc"].replace(",", " ").replace(".", " ").split() if len(w) > 3}
        idents = {w.lower() for w in __import__("re").findall(r"[A-Za-z]+", p["code"].split("\n", 1)[1])}
        assert "_" in p["code"]
        assert not (said & idents - {"then", "when", "that", "this", "with"}), (p["desc"], p["code"])


def test_an_excluded_repository_is_never_read(tmp_path):
    _repo(tmp_path, "measured/thing")
    _repo(tmp_path, "Kotlin/kotlinx.coroutines")  # a prefix entry covers every kotlinx.* repository
    pairs, manifest = _mine(tmp_path, "measured/thing", "Kotlin/kotlinx.coroutines")
    assert pairs == []
    assert sorted(manifest["excluded"]) == ["Kotlin/kotlinx.coroutines", "measured/thing"]
    assert manifest["repositories"] == []


def test_a_missing_snapshot_is_listed_not_fatal(tmp_path):
    (tmp_path / "mirror").mkdir()
    pairs, manifest = _mine(tmp_path, "nobody/absent")
    assert pairs == [] and manifest["missing"] == ["nobody/absent"]
