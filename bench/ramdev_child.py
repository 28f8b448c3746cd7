"""One side of bench/ramdev.py, in a process of its own (started inside its memory cgroup): a
store of one library opened through engine_libs_abi, then commands from the parent, one JSON
line each on stdin, answered with one JSON line on stdout:

  {"op": "evict"}              the cold state: the stack's own release (the overlay baseline's
                               engram_rows_release) and the table's page cache dropped, on a
                               thread of its own (the hello line gives its id), so a trace of
                               the process can leave its system calls out of the gathers'

  {"op": "call", "n": N}       then N little-endian int64 ids: one gather, answered with its
                               nanoseconds and this process's getrusage deltas over it (user and
                               system CPU of all its threads, faults, context switches)
  {"op": "check", "n": N}      then N ids: one gather, answered with the blake2b of its
                               weights then scales
  {"op": "quit"}

argv[1] is the side as JSON: stack (overlay|mia), name (spark|baseline), lib, table, rows,
threads (overlay), budget (Mia, bytes), batch_max, woff and soff (overlay), checkpoint (Mia).
The environment the library reads (SPARK_ENGRAM_LIB_CACHE_GB, DSV41_IO_THREADS,
DSV41_RESIDENT_SCALES) comes from the parent."""
import gc
import hashlib
import json
import os
import resource
import signal
import sys
import threading

import numpy as np

from engine_libs_abi import MiaSide, Side, load, load_mia


def read_exact(stream, view):
    got = 0
    while got < len(view):
        n = stream.readinto(view[got:])
        if not n:
            sys.exit(0)  # the parent is gone
        got += n


def usage():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime, r.ru_stime, r.ru_majflt, r.ru_minflt, r.ru_nvcsw, r.ru_nivcsw


def open_side(c):
    if c["stack"] == "overlay":
        return Side(c["name"], load(c["lib"]), c["table"], c["rows"], c["threads"], c["batch_max"], c["woff"],
                    c["soff"])
    return MiaSide(c["name"], load_mia(c["lib"]), c["checkpoint"], c["rows"], c["budget"], c["batch_max"], c["table"])


class Evictor:
    """A thread that runs evictions, one at a time, while the main thread waits for it on a pipe
    (read and write: calls a trace leaves out anyway, where a lock's futex would count)."""

    def __init__(self, side, path):
        self.side, self.path = side, path
        self.go_r, self.go_w = os.pipe()
        self.done_r, self.done_w = os.pipe()
        self.tid = None
        threading.Thread(target=self._loop, daemon=True).start()
        os.read(self.done_r, 1)

    def _loop(self):
        self.tid = threading.get_native_id()
        os.write(self.done_w, b"r")
        while os.read(self.go_r, 1):
            self.side.evict()
            fd = os.open(self.path, os.O_RDONLY)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            os.close(fd)
            os.write(self.done_w, b"d")

    def run(self):
        os.write(self.go_w, b"g")
        os.read(self.done_r, 1)


def main():
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is the parent's to handle: it ends this process
    gc.disable()  # no collection inside a timed call (nothing here makes reference cycles)
    c = json.loads(sys.argv[1])
    side = open_side(c)
    evictor = Evictor(side, c["table"])
    ids = np.empty(c["batch_max"], np.int64)
    stdin, out = sys.stdin.buffer, sys.stdout
    with open("/proc/self/cgroup") as f:
        groups = f.read()
    out.write(json.dumps({"ready": True, "pid": os.getpid(), "evict_tid": evictor.tid, "cgroup": groups}) + "\n")
    out.flush()
    while True:
        line = stdin.readline()
        if not line:
            return
        cmd = json.loads(line)
        reply = {}
        if cmd["op"] == "evict":
            evictor.run()
        elif cmd["op"] in ("call", "check"):
            n = cmd["n"]
            batch = ids[:n]
            read_exact(stdin, memoryview(batch).cast("B"))
            u0 = usage()
            ns = side.call(batch)
            # spark's libraries may put a call's rows in their cache on a worker after the call
            # returns: the CPU they spend on that counts, so wait for it before reading usage.
            side.settle()
            u1 = usage()
            if cmd["op"] == "check":
                reply["hash"] = hashlib.blake2b(side.w[:n].tobytes() + side.s[:n].tobytes()).hexdigest()
            else:
                d = [b - a for a, b in zip(u0, u1)]
                reply.update(ns=ns, user_us=d[0] * 1e6, sys_us=d[1] * 1e6, majflt=d[2], minflt=d[3], nvcsw=d[4],
                             nivcsw=d[5])
        elif cmd["op"] == "quit":
            side.close()
            return
        out.write(json.dumps(reply) + "\n")
        out.flush()


if __name__ == "__main__":
    main()
