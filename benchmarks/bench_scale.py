"""Scale benchmark: every figure of issue #14's targets, on an unpacked Linux kernel tree.

    python benchmarks/bench_scale.py TREE --cache DIR [--edit REL] [--skip-resume] [--skip-engine]
                                     [--reuse-index --cold-seconds S] [--json FILE]

It fetches nothing: TREE is a kernel source tree already on disk (78k files for 6.1). Debian's
copy ends its top ``.gitignore`` with ``/*`` and ``!/debian/``; index it as upstream does from a
hardlinked copy without those two lines::

    cp -al /tmp/linux-source-6.1 /tmp/linux-up
    rm /tmp/linux-up/.gitignore && head -n -2 /tmp/linux-source-6.1/.gitignore > /tmp/linux-up/.gitignore

(the script refuses a tree whose top ``.gitignore`` still ends so). The file it edits (``--edit``,
default ``kernel/sched/core.c``) is first given an inode of its own (copied and renamed into
place, before the cold index), so editing it in place never writes through a hard link into the
original tree; the edits are undone in place at the end.

Every step runs as a subprocess (``python -m ranklens …`` or a short driver, in an empty
folder, so the ranklens measured is the one on ``PYTHONPATH`` or installed) with
``RANKLENS_CACHE_DIR=DIR`` and ``RANKLENS_DEEP=0``, so each figure is that process's own: wall
time from spawn to exit, peak RSS from ``wait4`` (the largest single process of its tree: the
indexer or one of its workers) and, sampled every 0.25 s from ``/proc``, the peak sum of the
RSS of the whole process tree. The root's index in DIR is deleted first (nothing else there is
touched), then:

1. cold index: ``ranklens index TREE --json`` (time, peak RSS, index size on disk);
2. nothing changed: ``ranklens index`` three times (median wall of the whole process);
3. ``ranklens query`` from a fresh process, three different queries (median wall);
4. in-process all-arm query latency: one process opens the index, warms the arms, runs 20 kernel
   questions once unmeasured and 5 times measured (``SearchResult.elapsed_ms`` p50 / p95);
5. the terminal UI: ``benchmarks/bench_tui.py``'s own measurements on this index (first paint
   in process, median of 3; the slider move's handler at 500 candidates, median of 15);
6. one-file update: a function appended to ``--edit`` in place, then ``ranklens index``; the
   edit undone and indexed again (the second figure is shown beside the first); then one new
   file added and removed (a folder's listing changes: no target, shown for what it costs);
7. the 50k-chunk figures of ``benchmarks/bench_engine.py`` (run as it is, deep off) against
   those recorded in docs/appendix/bench-engine-50k.md (:data:`ENGINE_REFERENCE`), allowing 20 % for a shared
   machine;
8. resume after a kill at 50 %: the index deleted, a build started that prints its progress,
   ``kill -9`` of its process group once its chunk stage is half done (or, if it reports no
   such stage, at half the cold time), then ``ranklens index`` times the rest, against the cold
   build (last: the longest step).

``--skip-engine`` and ``--skip-resume`` leave steps 7 and 8 out (their rows then say so);
``--reuse-index`` keeps the root's index in DIR instead of step 1 (its first pass then lists
the tree once, unmeasured), and ``--cold-seconds`` gives the cold build's time step 8 compares
with (measured before: say under what load). The table lists every figure with its target and whether it is met; a step that cannot run prints
"not yet" and why, never a made-up number. ``--json FILE`` also writes the rows.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
MB = 1024 * 1024
_workdir: list[str] = []


def workdir() -> str:
    """The empty folder every step runs in (made on first use, not on import): ``python
    -m``/``-c`` put the working folder first on sys.path, and a checkout there would shadow the
    ranklens on PYTHONPATH (or installed)."""
    if not _workdir:
        _workdir.append(tempfile.mkdtemp(prefix="bench-scale-"))
    return _workdir[0]


QUERIES = [
    "allocate pages for a slab cache",
    "spin lock with interrupts disabled",
    "tcp retransmission timer",
    "pick the next task on a cpu runqueue",
    "read a block through the buffer cache",
    "parse kernel command line parameters",
    "register a character device",
    "handle a page fault",
    "ext4 inode allocation",
    "usb device probe",
    "copy data from user space",
    "rcu read side critical section",
    "network packet receive softirq",
    "mount a filesystem",
    "dma mapping of a scatter gather list",
    "queue delayed work on a workqueue",
    "kmalloc",
    "mutex_lock",
    "struct task_struct",
    "open a file descriptor system call",
]

#: bench_engine.py's 50k-chunk figures as docs/appendix/bench-engine-50k.md records them (2026-11-30 22:50): the
#: "do not regress" reference. name -> (regex on its output, reference, unit).
ENGINE_REFERENCE = {
    "cold index": (r"cold index: ([\d.]+) s", 46.5, "s"),
    "warm start, fresh process": (r"warm start .*?: ([\d.]+) s", 0.29, "s"),
    "all-arm query p50": (r"all arms\s+p50\s+([\d.]+) ms", 8.8, "ms"),
    "all-arm query p95": (r"all arms\s+p50\s+[\d.]+ ms\s+p95\s+([\d.]+) ms", 15.3, "ms"),
    "re-fuse of ~500 candidates p50": (r"re-fuse of \d+ candidates: p50 ([\d.]+) ms", 3.9, "ms"),
    "1-file incremental update": (r"1-file incremental .*?median ([\d.]+) s", 0.49, "s"),
    "indexer peak RSS": (r"peak RSS: indexer ([\d.]+) MB", 504.0, "MB"),
}
ENGINE_TOLERANCE = 1.2

EDIT_TEXT = "\n/* ranklens bench_scale edit */\nstatic int ranklens_bench_scale_added(void)\n{\n\treturn 14;\n}\n"
ADDED_NAME = "ranklens_bench_scale_added.c"  # created beside --edit

# A build that reports its progress on stdout: "P stage done total" per step, then the stats.
DRIVER = r"""
import json, sys
from ranklens.core.engine import Engine
def progress(p):
    print("P", p.stage, p.done, p.total, flush=True)
stats = Engine(sys.argv[1]).ensure_index(progress)
print("S", json.dumps({"files": stats.files, "chunks": stats.chunks, "added": stats.added}), flush=True)
"""

# In-process all-arm latency, as bench_engine.py measures it.
LATENCY = r"""
import json, statistics, sys, time
from ranklens.core.engine import Engine
root, queries, repeat = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
engine = Engine(root)
engine.ensure_index()
engine.warm()
for q in queries:
    engine.search(q)
results = [engine.search(q) for _ in range(repeat) for q in queries]
arms = {a: statistics.median(r.results[a].elapsed_ms for r in results) for a in results[0].arms}
print(json.dumps({"times": [r.elapsed_ms for r in results], "arms": arms}))
"""

# The terminal UI, measured by bench_tui.py's own functions.
TUI = r"""
import asyncio, json, statistics, sys
sys.path.insert(0, sys.argv[2])
import bench_tui
from pathlib import Path
root = Path(sys.argv[1])
paints = [asyncio.run(bench_tui.first_paint_once(root))[0] for _ in range(3)]
refuse = asyncio.run(bench_tui.refuse_times(root, 15))
print(json.dumps({"paint": paints, "handler": refuse["handler"], "frame": refuse["frame"],
                  "candidates": refuse["candidates"]}))
"""


@dataclass
class Run:
    """One subprocess: wall time, exit code, output, peak RSS (wait4) and sampled tree RSS."""

    wall: float
    code: int
    stdout: str
    stderr: str
    maxrss: float  # MB, largest single process of the tree (wait4's ru_maxrss)
    tree_peak: float  # MB, peak of the sampled sum over the process tree
    killed: str = ""  # why it was killed, if it was


@dataclass
class Row:
    figure: str
    measured: str
    target: str = ""
    met: str = ""  # "yes", "no", "not yet" or "" (no target)
    note: str = ""


@dataclass
class Bench:
    tree: Path
    env: dict[str, str]
    rows: list[Row] = field(default_factory=list)

    def add(self, *args, **kwargs) -> None:
        row = Row(*args, **kwargs)
        self.rows.append(row)
        shown = f"{row.figure}: {row.measured}" + (f" (target {row.target}: {row.met})" if row.target else "")
        print(shown + (f" -- {row.note}" if row.note else ""), flush=True)


# -- processes ---------------------------------------------------------------------------


def _tree_rss(pid: int) -> int:
    """Bytes resident in ``pid`` and every descendant (a sample; shared pages count per process)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    total, todo, page = 0, [pid], os.sysconf("SC_PAGE_SIZE")
    while todo:
        p = todo.pop()
        todo.extend(children.get(p, ()))
        try:
            with open(f"/proc/{p}/statm", "rb") as fh:
                total += int(fh.read().split()[1]) * page
        except OSError:
            pass
    return total


def run(cmd: list[str], env: dict[str, str], *, on_line=None, kill_after: float | None = None) -> Run:
    """Run ``cmd`` in a session of its own; ``on_line(line, elapsed)`` sees each stdout line and
    returns a reason to kill the process group (SIGKILL), or None; ``kill_after`` seconds too."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=err, env=env, start_new_session=True, text=True, cwd=workdir()
        )
        peak = [0]
        done = threading.Event()
        killed = [""]

        def kill(reason: str) -> None:
            if not killed[0]:
                killed[0] = reason
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)

        def sample() -> None:
            while not done.wait(0.25):
                peak[0] = max(peak[0], _tree_rss(proc.pid))
                if kill_after is not None and time.perf_counter() - t0 >= kill_after:
                    kill(f"at {kill_after:.0f} s, half the cold build's time")

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        lines = []
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if on_line is not None:
                reason = on_line(line, time.perf_counter() - t0)
                if reason:
                    kill(reason)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        done.set()
        sampler.join()
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
    return Run(wall, proc.returncode, "".join(lines), stderr, usage.ru_maxrss / 1024, peak[0] / MB, killed[0])


def ranklens(*args: str) -> list[str]:
    return [sys.executable, "-m", "ranklens", *args]


def checked(result: Run, what: str) -> Run:
    if result.code != 0 and not result.killed:
        tail = (result.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise SystemExit(f"bench_scale: {what} failed with exit {result.code}: {tail}")
    return result


# -- helpers -----------------------------------------------------------------------------


def du(path: Path) -> int:
    """Bytes allocated on disk under ``path``, each file once however many names it has, as
    ``du`` counts (a segment stores its identical files once, hard-linked)."""
    total = 0
    seen: set[tuple[int, int]] = set()
    for folder, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(OSError):
                st = os.lstat(os.path.join(folder, name))
                if st.st_nlink > 1:
                    if (st.st_dev, st.st_ino) in seen:
                        continue
                    seen.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
    return total


def minutes(seconds: float) -> str:
    """``537`` -> ``"8 min 57 s"`` (``f"{s / 60:.0f}"`` rounded it to 9)."""
    whole, rest = divmod(round(seconds), 60)
    return f"{whole} min {rest} s"


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def verdict(value: float, limit: float) -> str:
    return "yes" if value <= limit else "no"


def own_inode(path: Path) -> None:
    """Give ``path`` an inode of its own (a copy renamed into place) when it is hard-linked, so
    an in-place edit cannot reach the tree it was linked from."""
    if os.stat(path).st_nlink > 1:
        tmp = path.with_name(path.name + ".ranklens-bench-tmp")
        tmp.write_bytes(path.read_bytes())
        os.chmod(tmp, os.stat(path).st_mode & 0o7777)
        os.replace(tmp, path)


def index_json(result: Run) -> dict:
    try:
        return json.loads(result.stdout)
    except ValueError:
        return {}


# -- steps -------------------------------------------------------------------------------


def cold_index(b: Bench) -> Run:
    r = checked(run(ranklens("index", str(b.tree), "--json"), b.env), "the cold index")
    stats = index_json(r)
    stages = ", ".join(f"{k} {v:.0f}" for k, v in stats.get("seconds", {}).items())
    b.add(
        "cold index",
        minutes(r.wall),
        "<= 6 min",
        verdict(r.wall, 360),
        f"{stats.get('files', 0):,} files, {stats.get('chunks', 0):,} chunks; stages (s): {stages}",
    )
    b.add(
        "cold index peak RSS",
        f"{r.maxrss / 1024:.2f} GB",
        "<= 2.5 GB",
        verdict(r.maxrss, 2.5 * 1024),
        f"largest process (wait4); the whole tree's sum peaked at {r.tree_peak / 1024:.2f} GB (sampled)",
    )
    size = du(Path(stats.get("index_dir", "")))
    b.add(
        "index on disk", f"{size / 1024**3:.2f} GB", "<= 3 GB", verdict(size, 3 * 1024**3), stats.get("index_dir", "")
    )
    return r


def nothing_changed(b: Bench) -> None:
    runs = [checked(run(ranklens("index", str(b.tree)), b.env), "ranklens index") for _ in range(3)]
    walls = [r.wall for r in runs]
    b.add(
        "`ranklens index`, nothing changed (whole process)",
        f"{statistics.median(walls):.2f} s",
        "<= 0.5 s",
        verdict(statistics.median(walls), 0.5),
        "median of 3: " + ", ".join(f"{w:.2f}" for w in walls) + f" s; RSS {runs[-1].maxrss:.0f} MB",
    )


def fresh_query(b: Bench) -> None:
    runs = [checked(run(ranklens("query", q, "--root", str(b.tree)), b.env), "ranklens query") for q in QUERIES[:3]]
    walls = [r.wall for r in runs]
    b.add(
        "`ranklens query`, fresh process",
        f"{statistics.median(walls):.2f} s",
        "<= 1 s",
        verdict(statistics.median(walls), 1.0),
        "median of 3 queries: " + ", ".join(f"{w:.2f}" for w in walls) + f" s; RSS {runs[-1].maxrss:.0f} MB",
    )


def in_process(b: Bench) -> None:
    r = checked(
        run([sys.executable, "-c", LATENCY, str(b.tree), json.dumps(QUERIES), "5"], b.env), "the in-process latency run"
    )
    out = json.loads(r.stdout.strip().splitlines()[-1])
    times = out["times"]
    p50, p95 = statistics.median(times), pct(times, 0.95)
    arms = ", ".join(f"{arm} {ms:.1f}" for arm, ms in out["arms"].items())
    b.add(
        "in-process all-arm query p50",
        f"{p50:.1f} ms",
        "<= 30 ms",
        verdict(p50, 30),
        f"{len(times)} queries; per arm, wall p50 ms (the arms run at once): {arms}; the process's RSS {r.maxrss:.0f} MB",
    )
    b.add("in-process all-arm query p95", f"{p95:.1f} ms", "<= 60 ms", verdict(p95, 60))


def tui(b: Bench) -> None:
    r = run([sys.executable, "-c", TUI, str(b.tree), str(HERE)], b.env)
    if r.code != 0:
        tail = (r.stderr.strip().splitlines() or ["(no output)"])[-1]
        b.add("TUI first paint", "not yet", "<= 1 s", "not yet", f"bench_tui failed on this index: {tail}")
        b.add("TUI slider move", "not yet", "<= 16 ms", "not yet", "as above")
        return
    data = json.loads(r.stdout.strip().splitlines()[-1])
    paint = statistics.median(data["paint"])
    handler = statistics.median(data["handler"])
    b.add(
        "TUI first paint (engine + app to first frame)",
        f"{paint:.0f} ms",
        "<= 1 s",
        verdict(paint, 1000),
        "median of 3: " + ", ".join(f"{p:.0f}" for p in data["paint"]) + " ms",
    )
    b.add(
        "TUI slider move (re-fuse + table + trace)",
        f"{handler:.1f} ms",
        "<= 16 ms",
        verdict(handler, 16),
        f"{data['candidates']} candidates, median of {len(data['handler'])}; "
        f"the frame Textual renders after it {statistics.median(data['frame']):.0f} ms",
    )


def one_file(b: Bench, edit: Path) -> None:
    size = edit.stat().st_size
    with open(edit, "a", encoding="utf-8") as fh:
        fh.write(EDIT_TEXT)
    try:
        first = checked(run(ranklens("index", str(b.tree), "--json"), b.env), "the one-file update")
    finally:
        os.truncate(edit, size)
    back = checked(run(ranklens("index", str(b.tree), "--json"), b.env), "the one-file revert")
    stats = index_json(first)
    stages = ", ".join(f"{k} {v:.2f}" for k, v in stats.get("seconds", {}).items())
    note = (
        f"{edit.relative_to(b.tree)} edited in place (+{stats.get('added', 0)} ~{stats.get('changed', 0)} "
        f"-{stats.get('removed', 0)}); stages (s): {stages}; the edit undone: {back.wall:.2f} s, "
        f"{back.maxrss / 1024:.2f} GB"
    )
    b.add("one-file update", f"{first.wall:.2f} s", "<= 2 s", verdict(first.wall, 2.0), note)
    b.add(
        "one-file update RSS",
        f"{first.maxrss / 1024:.2f} GB",
        "<= 1.5 GB",
        verdict(first.maxrss, 1.5 * 1024),
        f"tree sum {first.tree_peak / 1024:.2f} GB (sampled)",
    )
    added = edit.parent / ADDED_NAME
    added.write_text("/* ranklens bench_scale */\nint ranklens_bench_scale_new_file(void)\n{\n\treturn 8;\n}\n")
    try:
        add = checked(run(ranklens("index", str(b.tree), "--json"), b.env), "the added-file update")
    finally:
        added.unlink()
    gone = checked(run(ranklens("index", str(b.tree), "--json"), b.env), "the removed-file update")
    b.add(
        "one file added, then removed (a folder's listing changed)",
        f"{add.wall:.2f} s / {gone.wall:.2f} s",
        note=f"RSS {add.maxrss / 1024:.2f} / {gone.maxrss / 1024:.2f} GB; stages of the add (s): "
        + ", ".join(f"{k} {v:.2f}" for k, v in index_json(add).get("seconds", {}).items()),
    )


def resume(b: Bench, cold: Run, index_dir: Path) -> None:

    shutil.rmtree(index_dir, ignore_errors=True)
    seen: set[str] = set()

    def at_half(line: str, _elapsed: float) -> str | None:
        parts = line.split()
        if len(parts) == 4 and parts[0] == "P":
            seen.add(parts[1])
            done, total = int(parts[2]), int(parts[3])
            if parts[1] == "chunk" and total and 2 * done >= total:
                return f"chunk stage at {done:,}/{total:,} files"
        return None

    first = run([sys.executable, "-c", DRIVER, str(b.tree)], b.env, on_line=at_half, kill_after=cold.wall / 2)
    if not first.killed:
        b.add(
            "resume after a kill at 50 %",
            "not yet",
            "<= 60 % of a full build",
            "not yet",
            f"the build finished ({first.wall:.0f} s) before it could be killed half way",
        )
        return
    rest = checked(run(ranklens("index", str(b.tree), "--json"), b.env), "the resumed index")
    stats = index_json(rest)
    share = rest.wall / cold.wall
    started_over = stats.get("added", 0) >= stats.get("files", 1) and stats.get("files", 0) > 0
    b.add(
        "resume after a kill at 50 %: the rest",
        f"{minutes(rest.wall)} ({share:.0%} of the cold build)",
        "<= 60 %",
        verdict(share, 0.6),
        f"killed {first.wall:.0f} s in ({first.killed}); "
        + (
            f"the rest indexed all {stats.get('added', 0):,} files again: the build started over"
            if started_over
            else f"the rest added {stats.get('added', 0):,} of {stats.get('files', 0):,} files"
        )
        + f"; its peak RSS {rest.maxrss / 1024:.2f} GB",
    )


def engine_figures(b: Bench) -> None:
    env = {k: v for k, v in b.env.items() if k != "RANKLENS_CACHE_DIR"}  # it makes its own temp cache
    r = run([sys.executable, str(HERE / "bench_engine.py")], env)
    if r.code != 0:
        tail = (r.stderr.strip().splitlines() or ["(no output)"])[-1]
        b.add("bench_engine.py 50k-chunk figures", "not yet", "no regression", "not yet", f"it failed: {tail}")
        return
    for name, (pattern, ref, unit) in ENGINE_REFERENCE.items():
        m = re.search(pattern, r.stdout)
        if m is None:
            b.add(
                f"50k chunks: {name}",
                "not yet",
                f"<= {ref:g} {unit} x{ENGINE_TOLERANCE:g}",
                "not yet",
                "bench_engine.py no longer prints it",
            )
            continue
        value = float(m.group(1))
        b.add(
            f"50k chunks: {name}",
            f"{value:g} {unit}",
            f"<= {ref:g} {unit} x{ENGINE_TOLERANCE:g}",
            verdict(value, ref * ENGINE_TOLERANCE),
        )


def table(rows: list[Row]) -> str:
    head = ("figure", "measured", "target", "met?")
    cells = [head] + [(r.figure, r.measured, r.target or "-", r.met or "-") for r in rows]
    widths = [max(len(c[i]) for c in cells) for i in range(4)]
    lines = ["| " + " | ".join(c[i].ljust(widths[i]) for i in range(4)) + " |" for c in cells]
    lines.insert(1, "|" + "|".join("-" * (w + 2) for w in widths) + "|")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(argv)
    finally:
        if _workdir:
            shutil.rmtree(_workdir.pop(), ignore_errors=True)


def _main(argv: list[str] | None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tree", type=Path, help="an unpacked kernel source tree (nothing is fetched)")
    ap.add_argument("--cache", type=Path, required=True, help="the cache folder for its index")
    ap.add_argument("--edit", default="kernel/sched/core.c", help="file the one-file update edits (relative)")
    ap.add_argument("--skip-resume", action="store_true", help="leave out the kill-at-50 %% resume step")
    ap.add_argument("--skip-engine", action="store_true", help="leave out bench_engine.py's 50k-chunk figures")
    ap.add_argument("--reuse-index", action="store_true", help="keep the root's index in DIR: no cold build")
    ap.add_argument("--cold-seconds", type=float, help="with --reuse-index: the cold build's time, for step 7")
    ap.add_argument("--json", type=Path, metavar="FILE", help="also write the rows as JSON")
    args = ap.parse_args(argv)

    tree = args.tree.resolve()
    if not tree.is_dir():
        print(f"bench_scale: {args.tree} is not a folder", file=sys.stderr)
        return 2
    ignore = tree / ".gitignore"
    if ignore.exists() and ignore.read_text(errors="replace").rstrip().endswith("!/debian/"):
        print(
            f"bench_scale: {ignore} ends with Debian's '/*' and '!/debian/': index a hardlinked copy "
            "without those two lines (see --help)",
            file=sys.stderr,
        )
        return 2
    edit = tree / args.edit
    if not edit.is_file():
        print(f"bench_scale: --edit {args.edit} is not a file under {tree}", file=sys.stderr)
        return 2
    own_inode(edit)
    args.cache.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, RANKLENS_CACHE_DIR=str(args.cache.resolve()), RANKLENS_DEEP="0")
    env.pop("RANKLENS_NO_COLOR", None)
    # As installed: pip compiles a package's bytecode, so no step should pay for compiling
    # ranklens's modules (~0.07 s a process) because this shell says not to write it.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    import ranklens as package  # not "ranklens": main() calls the ranklens() helper below

    subprocess.run([sys.executable, "-m", "compileall", "-q", *package.__path__], env=env, check=False)
    from ranklens.core.storage.store import index_dir

    where = index_dir(tree, args.cache.resolve())

    if args.reuse_index and not args.cold_seconds and not args.skip_resume:
        print("bench_scale: --reuse-index needs --cold-seconds for the resume step (or --skip-resume)", file=sys.stderr)
        return 2
    if not args.reuse_index:
        shutil.rmtree(where, ignore_errors=True)
    b = Bench(tree, env)
    load = os.getloadavg()[0]
    print(f"{tree}, cache {where}; load average {load:.1f} at the start; python {sys.version.split()[0]}", flush=True)
    t0 = time.perf_counter()
    if args.reuse_index:
        first = checked(run(ranklens("index", str(b.tree), "--json"), b.env), "the first pass over the kept index")
        b.add("cold index", "not run", "<= 6 min", "", f"--reuse-index; the first pass over it {first.wall:.1f} s")
        size = du(where)
        b.add("index on disk", f"{size / 1024**3:.2f} GB", "<= 3 GB", verdict(size, 3 * 1024**3), str(where))
        cold = Run(args.cold_seconds or 0.0, 0, "", "", 0.0, 0.0)
    else:
        cold = cold_index(b)
    nothing_changed(b)
    fresh_query(b)
    in_process(b)
    tui(b)
    one_file(b, edit)
    if args.skip_engine:
        b.add("bench_engine.py 50k-chunk figures", "not run", "no regression", "", "--skip-engine")
    else:
        engine_figures(b)
    if args.skip_resume:
        b.add("resume after a kill at 50 %", "not run", "<= 60 % of a full build", "", "--skip-resume")
    else:
        resume(b, cold, where)
    print(
        f"\n{tree} in {(time.perf_counter() - t0) / 60:.0f} min; load average {load:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end\n"
    )
    print(table(b.rows))
    notes = [r for r in b.rows if r.note]
    if notes:
        print()
        for r in notes:
            print(f"- {r.figure}: {r.note}")
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in b.rows], indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
