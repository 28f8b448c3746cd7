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
import json
import os
import signal
import statistics
import subprocess
import sys
import time

import numpy as np

import engine_libs_table as table
import ramdev_cgroup as cgroups
import ramdev_device as device
from engine_libs_abi import S, W
from ramdev_profile import Tracer, tool

BENCH = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(BENCH)
RELEASE = os.path.join(ROOT, "build", "Release")
NO_ROOT = ("bench/ramdev.py: needs root (it mounts a tmpfs, attaches a loop device, makes ext4 and memory "
           "cgroups); run it as root: sudo python3 bench/ramdev.py")
BIG = 49152
# What the child itself calls on its main thread around a gather (its pipe, getrusage): left out of the profile.
CHILD_CALLS = ("read", "write", "getrusage")
CHECK_IDS = 4096


class Environment(Exception):
    """Something of the machine the bench needs is missing or refused: exit 3."""


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


def mib(n):
    return f"{n / 2**20:.0f}"


class SideProc:
    """One side's child process in its own cgroup, driven over its stdin and stdout."""

    def __init__(self, config, env, group, cpu=None):
        self.name, self.group = config["name"], group

        def placed():
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # stays ignored across exec: Ctrl-C is the parent's
            group.join(os.getpid())
            if cpu is not None:
                cpu.join(os.getpid())

        self.proc = subprocess.Popen([sys.executable, os.path.join(BENCH, "ramdev_child.py"), json.dumps(config)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, preexec_fn=placed)

    def hello(self):
        """Waits for the store to be open; checks the process is in its cgroup."""
        hello = self._reply()
        self.pid, self.evict_tid = hello["pid"], hello["evict_tid"]
        if not any(line.endswith("/" + os.path.basename(self.group.path)) for line in hello["cgroup"].splitlines()):
            raise Environment(f"{self.name}: not in its cgroup {self.group.path}: {hello['cgroup']!r}")

    def _reply(self):
        line = self.proc.stdout.readline()
        if not line:
            code = self.proc.wait()
            if self.group.oom_kills():
                raise Environment(f"{self.name}: killed by the OOM killer of its cgroup: its bound is smaller than "
                                  "what the side needs (interpreter, buffers, --cache); raise --bound or lower --cache")
            raise Environment(f"{self.name}: its process ended (exit {code}); its stderr is above")
        return json.loads(line)

    def ask(self, op, ids=None):
        msg = {"op": op} if ids is None else {"op": op, "n": len(ids)}
        self.proc.stdin.write(json.dumps(msg).encode() + b"\n")
        if ids is not None:
            self.proc.stdin.write(np.ascontiguousarray(ids, np.int64).tobytes())
        self.proc.stdin.flush()
        return self._reply()

    def stop(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(b'{"op": "quit"}\n')
                self.proc.stdin.flush()
                self.proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


class Pair:
    """Both sides of one stack under one bound, each in a fresh cgroup; closed by the ExitStack."""

    def __init__(self, a, stack, bound, src, stack_cleanup, tag):
        self.stack, self.sides = stack, []
        base = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_ENGRAM_", "DSV41_"))}
        for name in ("spark", "baseline"):
            group = cgroups.MemoryCgroup(f"spark-ramdev-{os.getpid()}-{tag}-{stack}-{name}", bound)
            stack_cleanup.callback(group.remove)
            cpu = None
            if a.cpu_weight:
                cpu = cgroups.CpuCgroup(f"spark-ramdev-{os.getpid()}-{tag}-{stack}-{name}", a.cpu_weight)
                stack_cleanup.callback(cpu.remove)
            env = dict(base)
            config = {"stack": stack, "name": name, "table": src["table"], "rows": a.rows, "batch_max": BIG}
            if stack == "overlay":
                config.update(lib=a.libs[stack][name], threads=a.threads, woff=src["woff"], soff=src["soff"])
                if name == "spark":
                    env["SPARK_ENGRAM_LIB_CACHE_GB"] = str(a.cache)
            else:
                config.update(lib=a.libs[stack][name], budget=int(a.cache * 2**30), checkpoint=src["checkpoint"])
                env.update(DSV41_IO_THREADS=str(a.mia_threads), DSV41_RESIDENT_SCALES="0")
            side = SideProc(config, env, group, cpu)
            stack_cleanup.callback(side.stop)
            side.hello()
            self.sides.append(side)


class Tally:
    """One side's calls in one case of one round."""

    def __init__(self):
        self.ns, self.cpu_us, self.user_us, self.sys_us = [], 0.0, 0.0, 0.0
        self.majflt = self.minflt = self.nvcsw = self.rows = 0
        self.dev = [0, 0, 0, 0, 0]  # requests, merged, sectors, ms of the reads, ms the device was busy
        self.peak = 0

    def add(self, reply, rows, d0, d1):
        self.ns.append(reply["ns"])
        self.user_us += reply["user_us"]
        self.sys_us += reply["sys_us"]
        self.cpu_us += reply["user_us"] + reply["sys_us"]
        self.majflt += reply["majflt"]
        self.minflt += reply["minflt"]
        self.nvcsw += reply["nvcsw"]
        self.rows += rows
        self.dev = [x + b - a for x, a, b in zip(self.dev, d0, d1)]


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


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


def line(t, batch):
    p50 = pct(t.ns, 0.5)
    return (f"p50 {p50 / 1e3:9.1f} p99 {pct(t.ns, 0.99) / 1e3:9.1f} us  {batch / (p50 / 1e9):10.0f} rows/s  "
            f"cpu {t.cpu_us / t.rows:6.2f} us/row  peak {mib(t.peak):>4s} MiB  dev {t.dev[0] / t.rows:5.2f} reads "
            f"{t.dev[2] * 512 / 1024 / t.rows:5.1f} KiB /row")


def summary(a, results, bounds):
    """Markdown tables: per stack, case and bound, both sides over every round."""
    for stack in a.stacks:
        print(f"\n### {stack}: spark's library against the stack's read path, {a.rounds} rounds\n")
        print("| ids | case | bound | baseline p50 / p99 (us) | spark p50 / p99 (us) | rows/s at p50, baseline -> spark "
              "| baseline/spark p50, median (range) | CPU us/row, baseline / spark | peak MiB, baseline / spark "
              "| device reads/row, baseline / spark | KiB/row, baseline / spark |")
        print("|---|---|---|---|---|---|---|---|---|---|---|")
        for batch in a.batches:
            for mode in ("cold", "warm"):
                for label, _ in bounds:
                    rounds = results.get((stack, label, batch, mode))
                    if not rounds:
                        continue
                    pooled = {n: [x for r in rounds for x in r[n].ns] for n in ("baseline", "spark")}
                    ratios = [pct(r["baseline"].ns, 0.5) / pct(r["spark"].ns, 0.5) for r in rounds]

                    def tot(n, f):
                        return sum(f(r[n]) for r in rounds)

                    rows = {n: tot(n, lambda t: t.rows) for n in pooled}
                    cells = [f"{batch:,}", mode, label,
                             f"{pct(pooled['baseline'], 0.5) / 1e3:,.1f} / {pct(pooled['baseline'], 0.99) / 1e3:,.1f}",
                             f"{pct(pooled['spark'], 0.5) / 1e3:,.1f} / {pct(pooled['spark'], 0.99) / 1e3:,.1f}",
                             " -> ".join(f"{batch / (pct(pooled[n], 0.5) / 1e9) / 1e3:,.0f}k" for n in pooled),
                             f"**{statistics.median(ratios):.2f}x** ({min(ratios):.2f}-{max(ratios):.2f})",
                             " / ".join(f"{tot(n, lambda t: t.cpu_us) / rows[n]:.2f}" for n in pooled),
                             " / ".join(mib(max(r[n].peak for r in rounds)) for n in pooled),
                             " / ".join(f"{tot(n, lambda t: t.dev[0]) / rows[n]:.2f}" for n in pooled),
                             " / ".join(f"{tot(n, lambda t: t.dev[2]) * 512 / 1024 / rows[n]:.1f}" for n in pooled)]
                    print("| " + " | ".join(cells) + " |")
    sys.stdout.flush()


def profile(a, src, bound, dev, stack_cleanup, ids):
    """Per stack and side, cold 144 and 49,152 ids with the process's system calls traced."""
    how = tool()
    print(f"\n### where a cold batch's time goes ({how or 'no perf or strace: getrusage and the device only'}, "
          f"bound {mib(bound) + ' MiB' if bound else 'none'})\n")
    print("| stack | ids | side | wall us/call | user / sys CPU us/call | page faults/call, major / minor | waits/call | "
          "device reads/call, KiB/read, us/read in the device, % of the call it was busy | "
          "system calls per call: count (ms traced) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for stack in a.stacks:
        pair = Pair(a, stack, bound, src, stack_cleanup, "profile")
        for batch in (144, BIG):
            if batch not in a.batches:
                continue
            reps = max(2, a.reps // 2) if batch < BIG else 2
            for s in pair.sides:
                s.ask("evict")
                s.ask("call", ids.fresh(batch))  # a first call starts what starts lazily (the Mia pools)
                tracer = Tracer(s.pid).start()
                t = Tally()
                try:
                    for _ in range(reps):
                        asked = ids.fresh(batch)
                        s.ask("evict")
                        d0 = dev.reads()
                        reply = s.ask("call", asked)
                        t.add(reply, batch, d0, dev.reads())
                finally:
                    calls = tracer.stop(leave_out=s.evict_tid)
                n = len(t.ns)
                shown = sorted(((k, v) for k, v in calls.items() if k not in CHILD_CALLS), key=lambda kv: -kv[1][0])[:6]
                sc = ", ".join(f"{k} {c / n:,.1f} ({ms / n:,.2f})" for k, (c, ms) in shown) or "n/a"
                reqs = max(1, t.dev[0])
                print(f"| {stack} | {batch:,} | {s.name} | {statistics.mean(t.ns) / 1e3:,.0f} | "
                      f"{t.user_us / n:,.0f} / {t.sys_us / n:,.0f} | {t.majflt / n:,.0f} / {t.minflt / n:,.0f} | {t.nvcsw / n:,.0f} | "
                      f"{t.dev[0] / n:,.0f}, {t.dev[2] * 512 / 1024 / reqs:.1f}, {t.dev[3] * 1e3 / reqs:.1f}, "
                      f"{100 * t.dev[4] * 1e6 / sum(t.ns):.0f}% | {sc} |")
                sys.stdout.flush()
        for s in pair.sides:
            s.stop()


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
