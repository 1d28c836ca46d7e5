"""Dense arm benchmark: its scan's latency, first-query cost and recall@30 on an index built before.

    python benchmarks/bench_dense.py ROOT [--set kernel|engine] [--repeat N] [--fresh N] [--compare] [--min-rows N]

ROOT must already be indexed (``RANKLENS_CACHE_DIR`` as for ``ranklens``; nothing is written).
The questions: ``--set kernel`` (default) is ``bench_scale.py``'s 20 and the 100 of
:data:`KERNEL_QUESTIONS`; ``--set engine`` is ``bench_engine.py``'s 20 and 80 made from
definition names in the index (every n-th chunk's symbol, split into words).

Printed, for the dense arm's vector search (``SegmentedVectors.search``, top 30, unfiltered):

* recall@30 against the exact float32 scan of every live vector (ties to the earlier row);
* p50/p95 of one search in this process (``--repeat`` passes over the questions after one
  unmeasured pass) and of the whole arm's query (model encode included);
* the first search in a fresh process (``--fresh`` processes, median), after opening the
  index and loading the arm, beside the second search in that process.

``--min-rows N`` sets :attr:`SignBits.MIN_ROWS` (the sign bits pick candidates only among
that many rows or more) for the default scan, in the fresh processes too. ``--compare``
also measures the int8-only candidate scan (the sign bits off, as for an index written
before they existed), interleaved with the default one, query by query. Run with an older
ranklens on ``PYTHONPATH`` (no sign bits) it measures that one's scan.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
K = 30

KERNEL_QUESTIONS = [
    "free pages back to the buddy allocator",
    "wake up a process waiting on a wait queue",
    "schedule a timer to fire after a delay",
    "allocate an skb for a network packet",
    "send an ipv4 packet to the output path",
    "lookup a dentry in the dcache",
    "write back dirty pages of an inode",
    "map a physical address into kernel virtual memory",
    "register an interrupt handler for an irq",
    "disable preemption on the current cpu",
    "atomic increment of a reference count",
    "release a reference and free the object when it drops to zero",
    "create a kernel thread",
    "send a signal to a process",
    "fork a new process and copy the mm",
    "load an elf binary",
    "read the time stamp counter",
    "calibrate the delay loop",
    "handle a system call entry on x86",
    "switch the page table on context switch",
    "flush the tlb for a range of addresses",
    "reserve memory with memblock at boot",
    "parse the device tree",
    "probe a pci device and enable it",
    "request a firmware file",
    "i2c transfer of messages",
    "spi bus register a controller",
    "gpio set the value of a line",
    "power management suspend callback",
    "cpu hotplug bring a cpu online",
    "set cpu frequency with cpufreq governor",
    "netlink message parsing of attributes",
    "socket bind to an address",
    "accept a new tcp connection",
    "udp receive a datagram",
    "compute a checksum over a buffer",
    "crc32 implementation",
    "sha256 hash update",
    "aes encryption of a block",
    "random number generator entropy pool",
    "seqlock read retry loop",
    "read write semaphore down read",
    "completion wait for completion timeout",
    "percpu counter add",
    "hash table lookup with rcu",
    "red black tree insert and rebalance",
    "linked list add to tail",
    "radix tree or xarray store an entry",
    "bitmap find next zero bit",
    "string copy with bounds checking",
    "format a string with printk",
    "dump the stack trace on oops",
    "kernel panic and reboot",
    "watchdog detects a soft lockup",
    "oom killer select a victim process",
    "swap out a page to the swap device",
    "memory cgroup charge a page",
    "huge page allocation from the pool",
    "mmap a file into a process address space",
    "munmap unmap a region of virtual memory",
    "madvise dontneed",
    "page cache readahead",
    "submit a bio to the block layer",
    "io scheduler dispatch a request",
    "nvme submit a command to the queue",
    "scsi error handling and reset",
    "ext4 journal commit transaction",
    "btrfs copy on write extent",
    "xfs allocate an extent",
    "nfs client read rpc",
    "fuse send request to user space daemon",
    "procfs show a seq file",
    "sysfs attribute show and store",
    "debugfs create a file",
    "ioctl handler for a character device",
    "poll wait for events on a file",
    "epoll add a file descriptor",
    "pipe write wake readers",
    "futex wait and wake",
    "namespace clone a new pid namespace",
    "seccomp filter a system call",
    "capability check for an admin operation",
    "selinux check permission on an inode",
    "audit log a system call",
    "bpf verifier check a program",
    "ftrace register a function tracer",
    "perf event overflow interrupt",
    "kprobe register a probe on an address",
    "module load and resolve symbols",
    "wireless 802.11 scan for networks",
    "bluetooth hci send a command",
    "usb urb submit and completion",
    "input device report a key event",
    "drm mode set crtc",
    "framebuffer console draw a character",
    "sound alsa pcm open a stream",
    "virtio ring add a buffer",
    "kvm handle a vm exit",
    "arm64 exception vector handler",
    "riscv trap handling",
]

FRESH = r"""
import json, sys, time
t0 = time.perf_counter()
from ranklens.core.engine import Engine
engine = Engine(sys.argv[1])
assert engine.open()
arm = engine.arm("dense")
if sys.argv[4] != "-":
    from ranklens.core.vectors import scan
    scan.SignBits.MIN_ROWS = int(sys.argv[4])
vec = arm.model.encode([sys.argv[2]])[0]
t1 = time.perf_counter()
arm.vectors.search(vec, 30)
t2 = time.perf_counter()
arm.vectors.search(arm.model.encode([sys.argv[3]])[0], 30)
t3 = time.perf_counter()
print(json.dumps({"open": t1 - t0, "first": t2 - t1, "second": t3 - t2}))
"""


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(q * (len(values) - 1)))]


def questions(which: str, engine) -> list[str]:
    sys.path.insert(0, str(HERE))
    if which == "kernel":
        from bench_scale import QUERIES

        return QUERIES + KERNEL_QUESTIONS
    from bench_engine import QUERIES

    symbols = [
        r[0]
        for r in engine.view.connection().execute(
            "SELECT symbol FROM chunks WHERE symbol IS NOT NULL AND symbol != '' ORDER BY id"
        )
    ]
    made, seen = [], set(QUERIES)
    for symbol in symbols[:: max(1, len(symbols) // 400)]:
        words = [w.lower() for w in re.findall(r"[A-Za-z][a-z]+|[A-Z]+(?![a-z])", symbol.split(".")[-1])]
        text = " ".join(words)
        if len(words) >= 2 and text not in seen:
            seen.add(text)
            made.append(text)
        if len(made) == 80:
            break
    return QUERIES + made


def exact_top(vectors, queries: np.ndarray) -> list[np.ndarray]:
    """The exact top K (the caller's rows) of each query over every live vector, in float32."""
    best = [(np.empty(0, np.int64), np.empty(0, np.float32))] * len(queries)
    q = queries.astype(np.float32)
    for part, rows in zip(vectors.parts, vectors.rows):
        vecs = np.asarray(part.vectors(), dtype=np.float32)
        norms = np.linalg.norm(vecs, axis=1)
        sims = (vecs @ q.T) * np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)[:, None]
        live = rows >= 0
        for j in range(len(q)):
            s = sims[live, j]
            r = rows[live]
            top = np.argpartition(-s, min(K, len(s) - 1))[:K] if len(s) > K else np.arange(len(s))
            all_rows = np.concatenate([best[j][0], r[top]])
            all_sims = np.concatenate([best[j][1], s[top]])
            order = np.lexsort((all_rows, -all_sims))[:K]
            best[j] = (all_rows[order], all_sims[order])
    return [b[0] for b in best]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root")
    ap.add_argument("--set", choices=("kernel", "engine"), default="kernel")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--fresh", type=int, default=3)
    ap.add_argument("--compare", action="store_true")
    ap.add_argument(
        "--min-rows", type=int, help="SignBits.MIN_ROWS for the default scan (to try the bits on a small index)"
    )
    args = ap.parse_args()

    from ranklens.core.engine import Engine
    from ranklens.core.vectors import scan

    engine = Engine(args.root)
    if not engine.open():
        raise SystemExit(f"bench_dense: {args.root} has no index (run `ranklens index` first)")
    arm = engine.arm("dense")
    vectors = arm.vectors
    qs = questions(args.set, engine)
    vecs = np.asarray(arm.model.encode(qs), dtype=np.float32)
    n = sum(len(p) for p in vectors.parts)
    print(f"{len(qs)} questions; {n:,} vectors in {len(vectors.parts)} segments")

    truth = exact_top(vectors, vecs)
    bits = getattr(scan, "SignBits", None)  # None: a ranklens from before the sign bits
    if bits is not None and args.min_rows is not None:
        bits.MIN_ROWS = args.min_rows
    real = bits.MIN_ROWS if bits is not None else 0
    default = "int8 (this ranklens)" if bits is None else f"default (bits from {real:,} rows)"
    modes = {default: real}
    if args.compare and bits is not None:
        modes["int8 only (no sign bits)"] = 1 << 62
    times: dict[str, list[float]] = {m: [] for m in modes}
    recall: dict[str, list[float]] = {m: [] for m in modes}
    arm_times: list[float] = []
    for rep in range(args.repeat + 1):
        for j, v in enumerate(vecs):
            for mode, min_rows in modes.items():
                if bits is not None:
                    bits.MIN_ROWS = min_rows
                t0 = time.perf_counter()
                rows, _ = vectors.search(v, K)
                dt = (time.perf_counter() - t0) * 1000
                if rep:
                    times[mode].append(dt)
                else:
                    recall[mode].append(len(set(rows.tolist()) & set(truth[j].tolist())) / len(truth[j]))
            if bits is not None:
                bits.MIN_ROWS = real
            if rep:
                t0 = time.perf_counter()
                arm.search(qs[j], K)
                arm_times.append((time.perf_counter() - t0) * 1000)
    for mode in modes:
        print(
            f"{mode:<34} recall@{K} {statistics.mean(recall[mode]):.4f} (min {min(recall[mode]):.3f})   "
            f"search p50 {statistics.median(times[mode]):6.2f} ms  p95 {pct(times[mode], 0.95):6.2f} ms"
        )
    print(
        f"{'whole arm (encode + search)':<28} p50 {statistics.median(arm_times):6.2f} ms  p95 {pct(arm_times, 0.95):6.2f} ms"
    )

    runs = []
    for i in range(args.fresh):
        out = subprocess.run(
            [sys.executable, "-c", FRESH, args.root, qs[i % len(qs)], qs[(i + 1) % len(qs)], str(args.min_rows or "-")],
            capture_output=True,
            text=True,
            check=True,
            cwd="/",
        ).stdout
        runs.append(json.loads(out.strip().splitlines()[-1]))
    if runs:
        first = statistics.median(r["first"] for r in runs) * 1000
        second = statistics.median(r["second"] for r in runs) * 1000
        opened = statistics.median(r["open"] for r in runs)
        print(
            f"fresh process (median of {len(runs)}): first search {first:.1f} ms, second {second:.1f} ms "
            f"(import + open + arm load + encode before them {opened:.2f} s)"
        )


if __name__ == "__main__":
    main()
