"""``ranklens mcp``'s stdio: over pipes the event loop reads and writes them itself; any other
stdin or stdout (a file) goes through the SDK's own transport. The bytes are the same."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from test_mcp import call, server

REQUESTS = (
    '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    '"capabilities":{},"clientInfo":{"name":"t","version":"1"}}}\n'
    '{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
    '{"jsonrpc":"2.0","id":2,"method":"tools/list"}\n'
)


def _serve(root, tmp_path, *, pipes: bool) -> str:
    """The server's two answers to REQUESTS, its stdout a pipe or a file (stdin stays open until
    both are written: at its end the server stops)."""
    cmd = [sys.executable, "-m", "ranklens", "mcp", str(root)]
    env = {**os.environ, "RANKLENS_DEEP": "0"}
    out_path = tmp_path / "responses.jsonl"
    with open(out_path, "w") as out_file:
        proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE if pipes else out_file, text=True, env=env
        )
        try:
            proc.stdin.write(REQUESTS)
            proc.stdin.flush()
            if pipes:
                text = proc.stdout.readline() + proc.stdout.readline()
            else:
                deadline = time.monotonic() + 120
                while out_path.read_text().count("\n") < 2 and time.monotonic() < deadline:
                    time.sleep(0.05)
                text = out_path.read_text()
            proc.stdin.close()
            assert proc.wait(120) == 0
        finally:
            proc.kill()
    return text


def test_pipes_and_files_carry_the_same_bytes(sample_repo, tmp_path):
    over_pipes = _serve(sample_repo, tmp_path, pipes=True)
    over_files = _serve(sample_repo, tmp_path, pipes=False)
    assert over_pipes == over_files
    lines = over_pipes.splitlines()
    assert len(lines) == 2 and '"id":1' in lines[0] and '"name":"ranklens"' in lines[0]
    assert '"id":2' in lines[1] and all(f'"name":"{t}"' in lines[1] for t in ("search", "read_span"))


async def test_a_request_longer_than_a_pipe_buffer_is_read_whole(sample_repo):
    """A message is one line of any length: a handoff of 2,000 spans is ~400 KB."""
    async with server(sample_repo) as session:
        doc = await call(session, "search", {"query": "LRUCache", "top_k": 1, "max_chars": 0})
        doc["results"] = doc["results"] * 2000
        checked = await call(session, "check_handoff", {"handoff": doc})
        assert checked["summary"] == {"unchanged": 2000}


def test_a_stray_print_while_serving_goes_to_stderr_not_the_wire(sample_repo, tmp_path):
    """While serving over pipes, fd 1 is stderr (as the SDK's transport leaves it): a print or a
    child process's output cannot corrupt the JSON-RPC stream."""
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(
        "import subprocess, ranklens.core.agent as agent\n"
        "_status = agent.AgentService.index_status\n"
        "def index_status(self):\n"
        "    print('STRAY-PRINT', flush=True)\n"
        "    subprocess.run(['echo', 'STRAY-CHILD'])\n"
        "    return _status(self)\n"
        "agent.AgentService.index_status = index_status\n"
    )
    env = {
        **os.environ,
        "RANKLENS_DEEP": "0",
        "PYTHONPATH": os.pathsep.join([str(shim), os.environ.get("PYTHONPATH", "")]),
    }
    call = '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"index_status","arguments":{}}}\n'
    proc = subprocess.Popen(
        [sys.executable, "-m", "ranklens", "mcp", str(sample_repo)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        proc.stdin.write(REQUESTS + call)
        proc.stdin.flush()
        lines = [proc.stdout.readline() for _ in range(3)]
        proc.stdin.close()
        assert proc.wait(120) == 0
        stderr = proc.stderr.read()
    finally:
        proc.kill()
    assert sorted(json.loads(line)["id"] for line in lines) == [1, 2, 3]
    assert "STRAY" not in "".join(lines) and proc.stdout.read() == ""
    assert "STRAY-PRINT" in stderr and "STRAY-CHILD" in stderr
