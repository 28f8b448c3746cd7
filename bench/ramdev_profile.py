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
import subprocess
import tempfile
import time

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
