"""scripts/mine_task_pairs.py on a small real repository: the three sources of descriptions,
the code side as the arms see it (comments kept, the description's own text removed), and
what it refuses (excluded and held-out repositories)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from test_mine_pairs import snapshot

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "mine_task_pairs.py"

FILES = {
    "src/redirects.py": '''
        def rebuild_auth(prepared, response):
            """Drop the credentials when a redirect leaves the original host for another one."""
            # keep the header only while the host is the same
            if prepared.host != response.host:
                prepared.headers.pop("Authorization", None)
            return prepared


        def resolve_location(response):
            # a relative location header is joined onto the address that was asked for
            location = response.headers["Location"]
            return response.url.join(location)
        ''',
    "tests/test_redirects.py": """
        from src.redirects import rebuild_auth


        def test_redirect_to_another_host_drops_auth_header():
            prepared = make_request()
            rebuild_auth(prepared, make_response())
            assert "Authorization" not in prepared.headers
        """,
    "test/client.test.js": """
        const { sendRequest } = require('../lib/client')

        describe('client', () => {
          it('retries a request that timed out before giving up', async () => {
            await sendRequest({ retries: 2 })
          })
        })
        """,
    "lib/client.js": """
        function sendRequest(options) {
          // try again if allowed
          for (let i = 0; i <= options.retries; i++) {
            if (attempt(options)) return true
          }
          return false
        }
        module.exports = { sendRequest }
        """,
}


def _repo(tmp: Path, name: str) -> None:
    snapshot(tmp, name, FILES)


def _mine(tmp: Path, *repos: str):
    exclusions = tmp / "exclusions.txt"
    exclusions.write_text("# measured on\nmeasured/thing\n")
    out = tmp / "out"
    args = [sys.executable, str(SCRIPT), "--mirror", str(tmp / "mirror"), "--out", str(out)]
    args += ["--exclusions", str(exclusions), "--bench", str(tmp / "no-bench.tar.xz")]
    for r in repos:
        args += ["--repo", r]
    done = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    pairs = [json.loads(line) for line in (out / "pairs.jsonl").read_text().splitlines()]
    return pairs, json.loads((out / "manifest.json").read_text())


def test_a_docstring_pair_keeps_the_other_comments(tmp_path):
    _repo(tmp_path, "someone/web")
    pairs, _ = _mine(tmp_path, "someone/web")
    [doc] = [p for p in pairs if p["src"] == "doc"]
    assert doc["desc"] == "Drop the credentials when a redirect leaves the original host for another one."
    assert doc["code"].startswith("src/redirects.py > rebuild_auth\n")  # the breadcrumb, as the arms see it
    assert "Drop the credentials" not in doc["code"]  # the description's own text is gone
    assert "# keep the header only while the host is the same" in doc["code"]  # the other comments stay


def test_a_test_is_paired_with_the_function_its_words_point_at(tmp_path):
    _repo(tmp_path, "someone/web")
    pairs, _ = _mine(tmp_path, "someone/web")
    tests = {p["desc"]: p for p in pairs if p["src"] == "test"}
    py = tests["redirect to another host drops auth header"]
    assert py["symbol"] == "rebuild_auth" and py["file"] == "someone/web:src/redirects.py"
    js = tests["retries a request that timed out before giving up"]
    assert js["symbol"] == "sendRequest" and js["lang"] == "javascript"


def test_a_comment_inside_a_body_describes_its_function_and_leaves_it(tmp_path):
    _repo(tmp_path, "someone/web")
    pairs, _ = _mine(tmp_path, "someone/web")
    comments = {p["symbol"]: p for p in pairs if p["src"] == "comment"}
    resolve = comments["resolve_location"]
    assert resolve["desc"] == "a relative location header is joined onto the address that was asked for"
    assert "joined onto" not in resolve["code"] and "response.url.join(location)" in resolve["code"]
    assert "sendRequest" not in comments  # "try again if allowed": under five words


def test_the_manifest_counts_pairs_per_language_and_source(tmp_path):
    _repo(tmp_path, "someone/web")
    pairs, manifest = _mine(tmp_path, "someone/web")
    [entry] = manifest["repositories"]
    assert sum(entry["pairs"].values()) == len(pairs) == manifest["pairs"]
    assert manifest["pairs_per_source"] == {
        src: sum(p["src"] == src for p in pairs)
        for src in ("comment", "doc", "test")
        if any(p["src"] == src for p in pairs)
    }
    assert len(manifest["pairs_sha256"]) == 64


def test_excluded_and_held_out_repositories_are_never_read(tmp_path):
    _repo(tmp_path, "measured/thing")
    _repo(tmp_path, "urllib3/urllib3")  # the held-out check's: evals/heldout
    pairs, manifest = _mine(tmp_path, "measured/thing", "urllib3/urllib3")
    assert pairs == [] and manifest["repositories"] == []
    assert sorted(manifest["excluded"]) == ["measured/thing", "urllib3/urllib3"]
