"""spark's engine libraries beside the stacks' own read paths on a RAM-backed block device, each
side in a memory cgroup of its own, as on a node where page cache is GPU memory
(docs/engine-libs.md, "Benchmarking them"; results in bench/RESULTS.md):

  sudo python3 bench/ramdev.py [--rows 11000000] [--bound 640M] [--rounds 4] [--reps 30]
                               [--stacks overlay,mia] [--batches 24,144,49152] [--no-profile]

Needs root (a tmpfs, a loop device, an ext4 mount and memory cgroups): without it, one line
and exit 3. It builds the device (bench/ramdev_device.py: a tmpfs file, a loop device over it,
ext4 on that) and writes on it one table of --rows rows that both stacks read
(bench/engine_libs_table.py: the Mia stack's packed shard and, over the same bytes, the overlay's
two columns), several times larger than --bound. The device, the mount, the tmpfs file and the
cgroups are removed on every way out, Ctrl-C included.

Sides, per stack: spark's library and the stack's own read path (the baseline: for the overlay
bench/baselines/overlay-engram-rows, built by its build.sh when missing; for the Mia stack
build/Release/libmia_row_store_baseline.so), each a child process (bench/ramdev_child.py)
placed in a fresh memory cgroup (bench/ramdev_cgroup.py) before it opens anything, calling its
library through the ABI from ctypes (bench/engine_libs_abi.py). The same row-cache budget on
both sides (--cache GiB: the Mia stores' budget; spark's SPARK_ENGRAM_LIB_CACHE_GB; the overlay's
own path has the page cache the cgroup leaves it), the overlay's stores --threads threads, the
Mia pool DSV41_IO_THREADS=--mia-threads, DSV41_RESIDENT_SCALES=0 (a pack is attached).

Each round (--rounds; fresh processes and cgroups every round) runs, per stack, with --bound and
then without a bound, per batch size: cold, then warm, --reps calls per side (49,152 ids: a
tenth, at least 3), interleaved call by call, the order alternating; with --fill N, both sides
first gather the same N fresh ids untimed (row caches full, their pages touched: a store that
has served a while, where a fresh process pays a page fault for each page of its cache it
touches first). --cpu-weight W: each side also in a cpu cgroup with the CPU share of W tasks
(bench/ramdev_cgroup.py), so a side's thread count does not buy it more of a loaded machine. cold: ids never asked
before in this run (drawn from one permutation of the rows; the same ids for both sides), and
before each call, untimed, the side's cached pages of the table are dropped (the overlay
baseline's engram_rows_release(), then POSIX_FADV_DONTNEED over the table: its pages go from the
cgroup too): every row comes from the device but what a library's own row cache holds. warm: one
batch asked once untimed, then again at every call.

Per side and case: p50/p99 us per call, rows/s at p50, CPU us per row (user + system of every
thread of the process, getrusage around each call), the cgroup's peak memory over the case
(page cache included), and the loop device's read requests and KiB per row (its own counters:
nothing else reads that device). baseline/spark = the baseline's p50 over spark's, per round;
the summary gives its median over the rounds and the range. Then (--no-profile skips it), per
stack with the bound, cold 144 and 49,152 ids per side with the process's system calls traced
(bench/ramdev_profile.py): where a batch's time goes. Rows of 4096 ids are checked
byte-for-byte against the table on both sides at the end of every pair."""
import argparse
import contextlib
import hashlib
import os
import signal
import subprocess
import sys
import time

import numpy as np

import engine_libs_table as table
import ramdev_cgroup as cgroups
import ramdev_device as device
from engine_libs_abi import S, W
from ramdev_profile import profile
from ramdev_report import Tally, line, mib, pct, summary
from ramdev_sides import BENCH, BIG, Environment, Pair

ROOT = os.path.dirname(BENCH)
RELEASE = os.path.join(ROOT, "build", "Release")
NO_ROOT = ("bench/ramdev.py: needs root (it mounts a tmpfs, attaches a loop device, makes ext4 and memory "
           "cgroups); run it as root: sudo python3 bench/ramdev.py")
CHECK_IDS = 4096


def parse_size(text):
    """'640M', '2G', '671088640' -> bytes; 'none' -> None."""
    t = text.strip().lower()
    if t == "none":
        return None
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    n = int(float(t[:-1]) * units[t[-1]]) if t[-1:] in units else int(t)
    if n <= 0:
        raise argparse.ArgumentTypeError(f"{text}: a size > 0, or none")
    return n


class Ids:
    """Row ids never asked before in the run: consecutive slices of one permutation of the rows."""

    def __init__(self, rows, seed):
        self.rng = np.random.default_rng(seed)
        self.rows = rows
        self.perm = self.rng.permutation(rows).astype(np.int64)
        self.at = self.wraps = 0

    def fresh(self, n):
        if self.at + n > self.rows:
            self.perm = self.rng.permutation(self.rows).astype(np.int64)
            self.at, self.wraps = 0, self.wraps + 1
        self.at += n
        return self.perm[self.at - n:self.at]


def run_case(pair, dev, batch, mode, reps, ids):
    tally = {s.name: Tally() for s in pair.sides}
    for s in pair.sides:
        s.group.reset_peak()
    fixed = ids.fresh(batch) if mode == "warm" else None
    if fixed is not None:
        for s in pair.sides:
            s.ask("call", fixed)
    for r in range(reps):
        asked = fixed if fixed is not None else ids.fresh(batch)
        for s in pair.sides if r % 2 == 0 else pair.sides[::-1]:
            if mode == "cold":
                s.ask("evict")
            d0 = dev.reads()
            reply = s.ask("call", asked)
            d1 = dev.reads()
            s.group.sample()
            tally[s.name].add(reply, batch, d0, d1)
    for s in pair.sides:
        tally[s.name].peak = s.group.peak()
    return tally


def expected_rows(stack, src, rows, ids):
    """The bytes a gather of ids must return (weights then scales), read from the table by pread:
    the Mia stack reads it as its pack (row id at 4096 + id * 264), the overlay as two columns."""
    fd = os.open(src["table"], os.O_RDONLY)
    try:
        if stack == "mia":
            body = [os.pread(fd, W + S, table.PACK_HEADER + int(i) * (W + S)) for i in ids]
            return b"".join(r[:W] for r in body) + b"".join(r[W:] for r in body)
        return (b"".join(os.pread(fd, W, src["woff"] + int(i) * W) for i in ids) +
                b"".join(os.pread(fd, S, src["soff"] + int(i) * S) for i in ids))
    finally:
        os.close(fd)


def fill(pair, rows, ids):
    """--fill: both sides gather the same `rows` fresh ids, untimed, before the cases: their row
    caches full and every page of them touched, as in a store that has served a while."""
    for at in range(0, rows, BIG):
        asked = ids.fresh(min(BIG, rows - at))
        for s in pair.sides:
            s.ask("call", asked)


def check_rows(pair, src, rows, ids):
    """CHECK_IDS ids (repeats and all) on both sides against the table's bytes."""
    asked = ids.rng.integers(0, rows, CHECK_IDS).astype(np.int64)
    want = hashlib.blake2b(expected_rows(pair.stack, src, rows, asked)).hexdigest()
    for s in pair.sides:
        if s.ask("check", asked)["hash"] != want:
            raise SystemExit(f"bench/ramdev.py: {pair.stack} {s.name}: rows differ from the table")


def run(a, cleanup):
    bounds = [(f"{mib(a.bound)} MiB", a.bound)] + ([("none", None)] if a.unbounded else [])
    dev = device.RamDevice(table.size(a.rows))
    cleanup.callback(dev.close)
    print(f"# ramdev: {time.strftime('%Y-%m-%d %H:%M:%S %Z')}, load average {os.getloadavg()}, "
          f"{os.cpu_count()} CPUs, MemTotal {mem_total() / 2**30:.1f} GiB, memory cgroup {cgroups.flavour()}")
    t0 = time.monotonic()
    dev.open()
    src = {"table": os.path.join(dev.mnt, "table.bin"), "checkpoint": os.path.join(dev.mnt, "checkpoint.bin")}
    src["woff"], src["soff"] = table.offsets(a.rows)
    table.write(src["table"], a.rows)
    with open(src["checkpoint"], "xb") as f:
        f.truncate(a.rows * (W + S))  # the Mia store's checkpoint: a hole no read touches (the pack serves)
    fd = os.open(src["table"], os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
    print(f"# device {dev.loop} (ext4 over a {dev.image_bytes / 2**30:.2f} GiB tmpfs file; scheduler "
          f"{dev.queue('scheduler')}, read_ahead_kb {dev.queue('read_ahead_kb')}, nr_requests "
          f"{dev.queue('nr_requests')}), table {a.rows:,} rows = {table.size(a.rows) / 2**30:.2f} GiB written in "
          f"{time.monotonic() - t0:.0f} s; bounds {', '.join(b for b, _ in bounds)}; cache {a.cache} GiB a side; "
          f"threads overlay {a.threads}, Mia {a.mia_threads}; fill {a.fill:,} rows a side; "
          f"{'cpu cgroup of ' + str(a.cpu_weight) + ' tasks a side' if a.cpu_weight else 'no cpu cgroup'}")
    for stack in a.stacks:
        print(f"# {stack}: spark {a.libs[stack]['spark']}, baseline {a.libs[stack]['baseline']}")
    ids = Ids(a.rows, a.seed)
    results = {}
    for rnd in range(a.rounds):
        for stack in a.stacks:
            for label, bound in bounds:
                with contextlib.ExitStack() as pair_cleanup:
                    pair = Pair(a, stack, bound, src, pair_cleanup, f"r{rnd}")
                    fill(pair, a.fill, ids)
                    for batch in a.batches:
                        reps = a.reps if batch < BIG else max(3, a.reps // 10)
                        for mode in ("cold", "warm"):
                            tally = run_case(pair, dev, batch, mode, reps, ids)
                            results.setdefault((stack, label, batch, mode), []).append(tally)
                            ratio = pct(tally["baseline"].ns, 0.5) / pct(tally["spark"].ns, 0.5)
                            for name in ("baseline", "spark"):
                                print(f"round {rnd + 1} {stack:7s} {label:8s} {batch:6d} {mode} {name:8s} "
                                      f"{line(tally[name], batch)}" + (f"  {ratio:.2f}x" if name == "spark" else ""))
                            sys.stdout.flush()
                    check_rows(pair, src, a.rows, ids)
                    a.peak_how = pair.sides[0].group.peak_how
    print(f"# a cgroup's peak memory: {a.peak_how}")
    summary(a, results, bounds)
    if a.profile:
        with contextlib.ExitStack() as pair_cleanup:
            profile(a, src, a.bound, dev, pair_cleanup, ids)
    if ids.wraps:
        print(f"# the run asked more ids than the table has rows: cold ids repeated after {ids.wraps} pass(es)")
    print(f"# rows of {CHECK_IDS} ids byte-exact against the table on both sides of every pair; "
          f"{time.monotonic() - t0:.0f} s in all; load average at the end {os.getloadavg()}")


def mem_total():
    with open("/proc/meminfo") as f:
        return int(f.readline().split()[1]) * 1024


def libraries(a):
    """Each stack's two library files; the overlay baseline is built by its build.sh when missing."""
    libs = {"overlay": {"spark": a.overlay_lib, "baseline": a.overlay_baseline},
            "mia": {"spark": a.mia_lib, "baseline": a.mia_baseline}}
    for stack in a.stacks:
        for name, path in libs[stack].items():
            if os.path.exists(path):
                continue
            if stack == "overlay" and name == "baseline":
                build = os.path.join(BENCH, "baselines", "overlay-engram-rows", "build.sh")
                print(f"# building the overlay baseline: bash {build} {path}")
                if subprocess.run(["bash", build, path], check=False).returncode == 0:
                    continue
            raise Environment(f"{path}: no such library; build the engine libraries and the Mia baseline with "
                              "npm run build:native")
    return libs


def parse(argv):
    ap = argparse.ArgumentParser(prog="bench/ramdev.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=11_000_000, help="rows of the table (264 B each; default 2.9 GB)")
    ap.add_argument("--bound", type=parse_size, default=640 << 20, help="memory.max of each side (default 640M)")
    ap.add_argument("--no-unbounded", dest="unbounded", action="store_false", help="skip the runs without a bound")
    ap.add_argument("--cache", type=float, default=0.25, help="row-cache GiB of each side (default 0.25)")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--reps", type=int, default=30, help="calls per side and case (49,152 ids: a tenth, >= 3)")
    ap.add_argument("--stacks", default="overlay,mia")
    ap.add_argument("--batches", default=f"24,144,{BIG}")
    ap.add_argument("--threads", type=int, default=64, help="the overlay stores' threads (the recipes' 64)")
    ap.add_argument("--mia-threads", type=int, default=32, help="DSV41_IO_THREADS (the stack's default 32)")
    ap.add_argument("--fill", type=int, default=0,
                    help="rows each side gathers untimed before the cases (fills the row caches: a store that has "
                         "served a while; 0.25 GiB holds ~1M rows)")
    ap.add_argument("--cpu-weight", type=float, default=0,
                    help="each side in a cpu cgroup with the CPU share of this many tasks, however many threads it "
                         "runs (0: none, the scheduler's share per thread)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--no-profile", dest="profile", action="store_false", help="skip the traced calls")
    ap.add_argument("--overlay-lib", default=os.path.join(RELEASE, "libengram_rows.so"))
    ap.add_argument("--overlay-baseline", default=os.path.join(RELEASE, "libengram_rows_baseline.so"))
    ap.add_argument("--mia-lib", default=os.path.join(RELEASE, "librow_store.so"))
    ap.add_argument("--mia-baseline", default=os.path.join(RELEASE, "libmia_row_store_baseline.so"))
    a = ap.parse_args(argv)
    a.stacks = [s for s in a.stacks.split(",") if s]
    a.batches = sorted(int(b) for b in a.batches.split(","))
    if not a.stacks or any(s not in ("overlay", "mia") for s in a.stacks):
        ap.error("--stacks: overlay, mia or both")
    if a.bound is None or any(b < 1 or b > BIG for b in a.batches) or a.rows < max(a.batches) or a.rounds < 1:
        ap.error(f"--bound a size; --batches between 1 and {BIG}; --rows at least the largest batch; --rounds >= 1")
    return a


def main(argv=None):
    a = parse(sys.argv[1:] if argv is None else argv)
    if os.geteuid() != 0:
        print(NO_ROOT, file=sys.stderr)
        return 3

    def interrupted(sig, frame):
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_IGN)  # a second signal must not cut the cleanup short
        raise KeyboardInterrupt

    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, interrupted)
    with contextlib.ExitStack() as cleanup:
        try:
            missing = device.missing_tools()
            if missing:
                raise Environment(f"needs {', '.join(missing)} (util-linux, e2fsprogs)")
            if cgroups.flavour() is None:
                raise Environment("no memory cgroup controller on this machine (cgroup v2 or v1)")
            if a.cpu_weight and cgroups.flavour("cpu") is None:
                raise Environment("--cpu-weight: no cpu cgroup controller on this machine (cgroup v2 or v1)")
            a.libs = libraries(a)
            run(a, cleanup)
        except Environment as e:
            print(f"bench/ramdev.py: {e}", file=sys.stderr)
            return 3
        except OSError as e:
            print(f"bench/ramdev.py: {e}", file=sys.stderr)
            return 3
        except KeyboardInterrupt:
            print("bench/ramdev.py: interrupted; removing the device, mounts and cgroups", file=sys.stderr)
            return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
