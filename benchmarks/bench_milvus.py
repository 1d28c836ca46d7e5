"""The shared Milvus store against the local one: latency, concurrency and ranking parity.

    python benchmarks/bench_milvus.py latency [--root DIR] [--repeat N]
    python benchmarks/bench_milvus.py concurrent [--root DIR] [--seconds S] [--clients N]
    python benchmarks/bench_milvus.py parity LOCAL.json MILVUS.json [MILVUS2.json ...]
    python benchmarks/bench_milvus.py arms --store X.db [--per-repo]

``latency``: the ~50k-chunk corpus of ``bench_engine.py`` (the stdlib with its tests, and
scipy) indexed into the local store and into a Milvus Lite store (``.db``, in this process;
``--store URI``: that store instead, e.g. ``milvus-lite server --data-dir WORK/store.db``);
then every query of ``bench_engine.QUERIES`` through both engines, interleaved, after a
warm-up pass: per-arm and all-arm p50/p95 side by side, the index times and sizes.

``concurrent``: a ``milvus-lite server`` process over that corpus's store, and ``--clients``
clients for ``--seconds``: half ``ranklens query --batch`` processes (a line in, an envelope
out, timed at the client), half MCP servers (``ranklens mcp --store``) driven through the
MCP SDK's stdio client (each ``search`` call timed). Errors, p50 and p95 over every call.

``parity``: two result files of the benchmark runner (``/work/shared/bench/run.py``, one per
store): nDCG@10 of each, and the share of questions with the same top 10 (paths and lines).

``arms``: the benchmark's 21 repositories (``/work/shared/bench``, unpacked by its ``run.py``
under ``$TMPDIR/ranklens-bench/repos``) and their 420 questions, each arm's top 10 (and the
fused top 10) of the local index against a Milvus store's, per question: the share that are
the same (paths and lines), per arm. ``--store``: the repositories in one collection (as
``run.py --index-cmd 'ranklens index {root} --store X.db'`` leaves them); with
``--per-repo``, one collection per repository, named ``r_<repo>`` (``.`` and ``-`` as
``_``). Every repository is indexed first (incrementally: a no-op when the runner did it).

Needs the milvus extra (``pip install 'ranklens[milvus]'``). Figures are medians unless
named p95; on a shared 2-core machine, compare runs taken in the same hour.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bench_engine import QUERIES, _copy_corpus, pct  # noqa: E402


def _row(name: str, local: list[float], milvus: list[float]) -> str:
    return (
        f"  {name:<10} local p50 {statistics.median(local):7.2f} p95 {pct(local, 0.95):7.2f} ms   "
        f"milvus-lite p50 {statistics.median(milvus):7.2f} p95 {pct(milvus, 0.95):7.2f} ms   "
        f"ratio p50 {statistics.median(milvus) / max(statistics.median(local), 1e-9):5.1f}x"
    )


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _corpus(args, work: Path) -> Path:
    if args.root:
        return Path(args.root).resolve()
    root = work / "corpus"
    if not root.exists():
        _copy_corpus(root)
    return root


def latency(args) -> None:
    os.environ.setdefault("RANKLENS_DEEP", "0")
    from ranklens.core.backends import parse_store
    from ranklens.core.engine import Engine
    from ranklens.core.milvus_engine import MilvusEngine, index_into_store

    work = Path(args.work or tempfile.mkdtemp(prefix="bench-milvus-"))
    root = _corpus(args, work)
    cache = work / "cache"
    local = Engine(root, cache_dir=cache)
    t0 = time.perf_counter()
    stats = local.ensure_index()
    local_s = time.perf_counter() - t0
    db = work / "store.db"
    shared = MilvusEngine(root, store=parse_store(args.store or str(db)))
    t0 = time.perf_counter()
    built = index_into_store(shared)
    milvus_s = time.perf_counter() - t0
    shared.ensure_index()
    print(f"corpus: {root}: {stats.chunks:,} chunks (local), {built.chunks:,} chunks (milvus-lite)")
    print(
        f"index: local {local_s:.1f} s, {_size(local.directory) / 1e6:.0f} MB; milvus-lite {milvus_s:.1f} s "
        f"({', '.join(f'{k} {v:.1f}' for k, v in built.seconds.items())}), {_size(db) / 1e6:.0f} MB in {work}"
    )
    arms = ["bm25", "fts5", "dense", "symbols"]
    for engine in (local, shared):
        engine.warm(arms)
        for q in QUERIES:  # warm-up, not measured
            engine.search(q, arms=arms)
    per: dict[str, dict[str, list[float]]] = {"local": {}, "milvus": {}}
    same = 0
    for _ in range(args.repeat):
        for q in QUERIES:
            answers = {}
            for label, engine in (("local", local), ("milvus", shared)):
                result = engine.search(q, arms=arms)
                per[label].setdefault("all arms", []).append(result.elapsed_ms)
                for name, r in result.results.items():
                    per[label].setdefault(name, []).append(r.elapsed_ms)
                answers[label] = [(h.path, h.start_line, h.end_line) for h in result.hits]
            same += answers["local"] == answers["milvus"]
    n = len(per["local"]["all arms"])
    print(f"warm query latency over {n} queries each (top-k 10, pool 30 per arm, arms on their own threads):")
    for name in [*arms, "all arms"]:
        print(_row(name, per["local"][name], per["milvus"][name]))
    print(f"same top 10 (paths and lines) on {same} of {n} queries ({same / n:.0%})")
    local.close()
    shared.close()
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _batch_client(cmd: list[str], env: dict, until: float, times: list[float], errors: list[str], k: int) -> None:
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, bufsize=1)
    i = k
    try:
        while time.monotonic() < until:
            q = QUERIES[i % len(QUERIES)]
            i += 1
            t0 = time.perf_counter()
            proc.stdin.write(json.dumps({"id": i, "query": q}) + "\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
            elapsed = (time.perf_counter() - t0) * 1000
            try:
                data = json.loads(line)
            except ValueError:
                errors.append(f"batch: not JSON: {line[:200]!r}")
                break
            if "error" in data or not data.get("results"):
                errors.append(f"batch: {data.get('error') or 'no results'}")
            else:
                times.append(elapsed)
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)


def _mcp_client(args_: list[str], env: dict, until: float, times: list[float], errors: list[str], k: int) -> None:
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    async def run() -> None:
        params = StdioServerParameters(command=sys.executable, args=args_, env=env)
        with open(os.devnull, "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write, read_timeout_seconds=None) as session:
                    await session.initialize()
                    i = k
                    while time.monotonic() < until:
                        q = QUERIES[i % len(QUERIES)]
                        i += 1
                        t0 = time.perf_counter()
                        result = await session.call_tool("search", {"query": q, "max_chars": 2000})
                        elapsed = (time.perf_counter() - t0) * 1000
                        if result.is_error:
                            errors.append(f"mcp: {result.content[0].text[:200]}")
                        else:
                            times.append(elapsed)

    anyio.run(run)


def concurrent(args) -> None:
    from ranklens.core.backends import parse_store
    from ranklens.core.milvus_engine import MilvusEngine, index_into_store

    work = Path(args.work or tempfile.mkdtemp(prefix="bench-milvus-"))
    root = _corpus(args, work)
    port = _free_port()
    data_dir = work / "server.db"
    server = subprocess.Popen(
        [sys.executable, "-m", "milvus_lite", "server", "--data-dir", str(data_dir), "--host", "127.0.0.1"]
        + ["--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    uri = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)
        engine = MilvusEngine(root, store=parse_store(uri))
        t0 = time.perf_counter()
        built = index_into_store(engine)
        print(
            f"indexed {built.chunks:,} chunks into {uri} (one milvus-lite server process) in {time.perf_counter() - t0:.1f} s"
        )
        env = {**os.environ, "RANKLENS_DEEP": "0"}
        until = time.monotonic() + args.seconds + 20  # the clients start within ~20 s
        times: dict[str, list[float]] = {"batch": [], "mcp": []}
        errors: list[str] = []
        threads = []
        for k in range(args.clients):
            if k % 2 == 0:
                cmd = [sys.executable, "-m", "ranklens", "query", "--batch", "--root", str(root), "--store", uri]
                t = threading.Thread(target=_batch_client, args=(cmd, env, until, times["batch"], errors, k))
            else:
                a = ["-m", "ranklens", "mcp", str(root), "--store", uri]
                t = threading.Thread(target=_mcp_client, args=(a, env, until, times["mcp"], errors, k))
            t.start()
            threads.append(t)
        for t in threads:
            t.join()
        every = times["batch"] + times["mcp"]
        print(
            f"{args.clients} clients ({len(times['batch'])} batch queries, {len(times['mcp'])} MCP searches) "
            f"for ~{args.seconds} s: {len(errors)} errors"
        )
        for name, values in (("batch", times["batch"]), ("mcp", times["mcp"]), ("all", every)):
            if values:
                print(f"  {name:<6} p50 {statistics.median(values):8.1f} ms   p95 {pct(values, 0.95):8.1f} ms")
        for e in errors[:5]:
            print(f"  error: {e}")
    finally:
        server.kill()
        server.wait()
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


def parity(args) -> None:
    def load(path: str) -> dict:
        data = json.loads(Path(path).read_text())
        return {(q["repo"], q["query"]): q for q in data["per_query"]}, data

    base, base_data = load(args.files[0])
    print(f"{args.files[0]}: nDCG@10 {base_data['chunk']['overall_repo_macro']:.3f} over {len(base)} questions")
    for other_path in args.files[1:]:
        other, data = load(other_path)
        common = [key for key in base if key in other]
        same = sum(base[key]["top"][:10] == other[key]["top"][:10] for key in common)
        print(
            f"{other_path}: nDCG@10 {data['chunk']['overall_repo_macro']:.3f}; same top 10 as the first on {same} of "
            f"{len(common)} questions ({same / max(len(common), 1):.1%})"
        )


def _bench_repos(names: list[str] | None) -> list[tuple[str, Path, list[str]]]:
    bench = Path(os.environ.get("RANKLENS_BENCH", HERE.parent.parent / "shared" / "bench"))
    if not bench.is_dir():
        bench = Path("/work/shared/bench")
    repos_dir = Path(os.environ.get("TMPDIR") or "/tmp") / "ranklens-bench" / "repos"
    out = []
    for spec in json.loads((bench / "repos.json").read_text()):
        if names and spec["name"] not in names:
            continue
        checkout = repos_dir / spec["name"]
        root = checkout / spec["benchmark_root"] if spec.get("benchmark_root") else checkout
        questions = [q["query"] for q in json.loads((bench / "annotations" / f"{spec['name']}.json").read_text())]
        out.append((spec["name"], root, questions))
    return out


def arms(args) -> None:
    os.environ.setdefault("RANKLENS_DEEP", "0")
    from ranklens.core.backends import StoreSpec, parse_store
    from ranklens.core.engine import Engine
    from ranklens.core.milvus_engine import MilvusEngine, index_into_store

    names = ["bm25", "fts5", "dense", "symbols"]
    base = parse_store(args.store)
    same = {n: 0 for n in [*names, "fused"]}
    total = 0
    for repo, root, questions in _bench_repos(args.repo):
        local = Engine(root)
        local.ensure_index()
        spec = (
            StoreSpec(base.kind, base.uri, "r_" + repo.replace(".", "_").replace("-", "_")) if args.per_repo else base
        )
        # One collection: each repository under its benchmark name (two are called ``src``),
        # as run.py's ``--repo {repo}``; one per repository: under its folder's name.
        engine = MilvusEngine(root, store=spec, name=None if args.per_repo else repo)
        index_into_store(engine)
        engine.ensure_index()
        row = {n: 0 for n in same}
        for q in questions:
            want = {n: _top(local.run_arm(n, q).hits) for n in names}
            want["fused"] = _top(local.search(q).hits)
            got = {n: _top(engine.run_arm(n, q).hits) for n in names}
            got["fused"] = _top(engine.search(q).hits)
            for n in want:
                row[n] += want[n] == got[n]
                same[n] += want[n] == got[n]
        total += len(questions)
        print(f"{repo:<20} {len(questions):3d} questions  " + " ".join(f"{n} {v}" for n, v in row.items()), flush=True)
        local.close()
        engine.close()
    print(
        f"same top 10 as the local index, {total} questions, {'one collection per repository' if args.per_repo else 'one collection'}:"
    )
    print("  " + "  ".join(f"{n} {v / max(total, 1):.1%}" for n, v in same.items()))


def _top(hits) -> list[tuple[str, int, int]]:
    return [(h.path, h.start_line, h.end_line) for h in hits[:10]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)
    lat = sub.add_parser("latency")
    lat.add_argument("--root")
    lat.add_argument("--work", help="keep the corpus and indexes here (default: a temp folder, removed)")
    lat.add_argument("--repeat", type=int, default=3)
    lat.add_argument("--store", help="a Milvus store URI instead of a Milvus Lite file in this process")
    con = sub.add_parser("concurrent")
    con.add_argument("--root")
    con.add_argument("--work")
    con.add_argument("--seconds", type=float, default=120.0)
    con.add_argument("--clients", type=int, default=8)
    par = sub.add_parser("parity")
    par.add_argument("files", nargs="+")
    arm = sub.add_parser("arms", help="per-arm same top 10, local against Milvus, on the benchmark's 21 repositories")
    arm.add_argument("--store", required=True, help="a Milvus store URI")
    arm.add_argument("--per-repo", action="store_true", help="one collection per repository (r_<repo>)")
    arm.add_argument("--repo", action="append", help="only this repository (repeatable)")
    args = ap.parse_args()
    {"latency": latency, "concurrent": concurrent, "parity": parity, "arms": arms}[args.command](args)


if __name__ == "__main__":
    main()
