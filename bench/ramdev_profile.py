"""Where a batch's time goes, from outside a side's process (bench/ramdev.py --profile): its
system calls over a window of calls, every thread of it, by `perf trace -s -p PID` where perf
works, else `strace -c -w -f -p PID` (wall time in each call), else none. Counts are exact;
times are inflated by the tracing itself, and a thread that waits between calls (a pool worker
in futex, the main thread reading the next command) counts its idle time too: read the time of
the calls a batch makes (io_submit, io_getevents, pread64, fadvise64), not of futex or read."""
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

from ramdev_report import Tally, mib
from ramdev_sides import BIG, Pair

# What the child itself calls on its main thread around a gather (its pipe, getrusage): left out.
CHILD_CALLS = ("read", "write", "getrusage")
ATTACH_SECONDS = 1.5  # neither tool says when it has attached to every thread
PERF_THREAD = re.compile(r"^\s+\S.* \((\d+)\), \d+ events")
PERF_LINE = re.compile(r"^\s+([a-z_0-9]+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s")
STRACE_LINE = re.compile(r"^\s*[\d.]+\s+([\d.]+)\s+\d+\s+(\d+)\s+(?:\d+\s+)?([a-z_0-9]+)\s*$")


def tool():
    if shutil.which("perf"):
        return "perf trace -s"
    if shutil.which("strace"):
        return "strace -c -w -f"
    return None


class Tracer:
    """Attached to pid from start() to stop(); stop() returns {syscall: (calls, milliseconds)}, all
    threads but one to leave out (perf gives each thread's calls apart; strace -c cannot)."""

    def __init__(self, pid):
        self.pid, self.how = pid, tool()
        self.proc = None
        self.out = tempfile.NamedTemporaryFile(prefix="spark-ramdev-trace-", suffix=".txt", delete=False)
        self.out.close()

    def start(self):
        if self.how is None:
            return self
        if self.how.startswith("perf"):
            argv = ["perf", "trace", "-s", "-p", str(self.pid), "-o", self.out.name]
        else:
            argv = ["strace", "-c", "-w", "-f", "-p", str(self.pid), "-o", self.out.name]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(ATTACH_SECONDS)
        return self

    def stop(self, leave_out=None):
        totals = {}
        try:
            if self.proc is None:
                return totals
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            with open(self.out.name) as f:
                text = f.read()
        finally:
            os.unlink(self.out.name)
        skip = False
        for line in text.splitlines():
            if self.how.startswith("perf"):
                thread = PERF_THREAD.match(line)
                if thread:
                    skip = int(thread.group(1)) == leave_out
                    continue
                m = None if skip else PERF_LINE.match(line)
                if m:
                    name, calls, ms = m.group(1), int(m.group(2)), float(m.group(4))
                else:
                    continue
            else:
                m = STRACE_LINE.match(line)
                if not m or m.group(3) == "total":
                    continue
                name, calls, ms = m.group(3), int(m.group(2)), float(m.group(1)) * 1e3
            c, t = totals.get(name, (0, 0.0))
            totals[name] = (c + calls, t + ms)
        return totals


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
