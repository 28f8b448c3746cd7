"""libengram_rows.so through ctypes, as the overlay stack loads and calls it (ABI version 3,
docs/engine-libs.md): rows byte-exact against numpy, zeros for unowned ids, stats, threads,
prefetch, resident and release, concurrent callers, and an open/close loop."""
import ctypes
import errno
import random
import threading
import time

import numpy as np

from engine_check import W, S, args, check, child, descriptors, poisoned, ptr, reference, run, threads

LIB, FIX, _ = args()
lib = ctypes.CDLL(LIB, use_errno=True)
u64, i64 = ctypes.c_uint64, ctypes.c_int64
lib.engram_rows_abi_version.restype = ctypes.c_int
lib.engram_rows_open.restype = ctypes.c_void_p
lib.engram_rows_open.argtypes = [ctypes.c_char_p, u64, u64, u64, u64, ctypes.c_int]
lib.engram_rows_gather.argtypes = [ctypes.c_void_p]
lib.engram_rows_prefetch.restype = u64
lib.engram_rows_prefetch.argtypes = [ctypes.c_void_p, ctypes.POINTER(i64), u64]
lib.engram_rows_stats.argtypes = [ctypes.c_void_p, ctypes.POINTER(u64)]
lib.engram_rows_resident.restype = u64
lib.engram_rows_resident.argtypes = [ctypes.c_void_p]
lib.engram_rows_release.argtypes = [ctypes.c_void_p]
lib.engram_rows_close.argtypes = [ctypes.c_void_p]


class Work(ctypes.Structure):
    _fields_ = [("count", u64), ("store", ctypes.c_void_p), ("w_out", ctypes.POINTER(ctypes.c_uint8)),
                ("s_out", ctypes.POINTER(ctypes.c_uint8)), ("ids", ctypes.POINTER(i64))]


def open_table(t, threads_=4, lo=None, hi=None):
    s = lib.engram_rows_open(t["path"].encode(), t["woff"], t["soff"], t["lo"] if lo is None else lo,
                             t["hi"] if hi is None else hi, threads_)
    check(s, f"open failed: errno {ctypes.get_errno()}")
    return s


def gather(store, ids):
    ids = np.asarray(ids, np.int64)
    w, s = poisoned(len(ids))
    lib.engram_rows_gather(ctypes.byref(Work(len(ids), store, ptr(w, ctypes.c_uint8), ptr(s, ctypes.c_uint8),
                                             ptr(ids, i64))))
    return w, s


def stats(store):
    out = (u64 * 4)()
    lib.engram_rows_stats(store, out)
    return list(out)


def expect_rows(table, store, ids, what):
    w, s = gather(store, ids)
    rw, rs = reference(table, ids)
    check(np.array_equal(w, rw) and np.array_equal(s, rs), f"{what}: rows differ from numpy")


def strange_ids(t):
    n = t["rows"]
    return [-1, -(2**63), n, n + 7, 2**63 - 1, t["lo"] - 1 if t["lo"] > 0 else -5, t["hi"]]


def abi():
    check(lib.engram_rows_abi_version() == 3, "abi version is not 3")


def snapshot_rows():
    t = FIX["snapshot"]
    store = open_table(t)
    rng = random.Random(1)
    ids = [rng.randrange(t["rows"]) for _ in range(300)] + [5, 5, 5] + strange_ids(t)
    rng.shuffle(ids)
    expect_rows(t, store, ids, "snapshot, cold")
    expect_rows(t, store, ids, "snapshot, warm")
    expect_rows(t, store, list(range(t["rows"])) * 2, "snapshot, every row twice")
    lib.engram_rows_close(store)


def sparse_rows():
    t = FIX["sparse"]
    store = open_table(t)
    ids = list(range(t["lo"] - 20, t["hi"] + 20)) + strange_ids(t)
    expect_rows(t, store, ids, "sparse copy")
    # The owned rows equal the snapshot's.
    w, s = gather(store, list(range(t["lo"], t["hi"])))
    rw, rs = reference(dict(FIX["snapshot"]), list(range(t["lo"], t["hi"])))
    check(np.array_equal(w, rw) and np.array_equal(s, rs), "sparse copy rows differ from the snapshot's")
    lib.engram_rows_close(store)


def large_batch():
    t = FIX["snapshot"]
    store = open_table(t, threads_=2)
    rng = random.Random(2)
    ids = [rng.randrange(-3, t["rows"] + 3) for _ in range(70_000)]  # more than one 65,536-id chunk
    expect_rows(t, store, ids, "70,000 ids")
    lib.engram_rows_close(store)


def count_zero():
    t = FIX["snapshot"]
    store = open_table(t)
    lib.engram_rows_gather(ctypes.byref(Work(0, store, None, None, None)))
    check(stats(store)[:3] == [1, 0, 0], f"count 0: stats {stats(store)}")
    lib.engram_rows_close(store)


def known_stats():
    t = FIX["sparse"]
    store = open_table(t)
    gather(store, [t["lo"], t["lo"] + 1, t["lo"], -1, t["hi"], t["rows"] + 1])
    gather(store, [])
    lib.engram_rows_prefetch(store, ptr(np.array([t["lo"]], np.int64), i64), 1)
    calls, owned, zeroed, ns = stats(store)
    check((calls, owned, zeroed) == (2, 3, 3), f"stats after a known sequence: {stats(store)}")
    check(ns > 0, "no nanoseconds counted")
    lib.engram_rows_close(store)


def open_errors():
    t = FIX["snapshot"]
    cases = [(b"/nonexistent/engram.safetensors", 0, 0, 0, 1, 1, errno.ENOENT),
             (t["path"].encode(), t["woff"], t["soff"], 0, t["rows"] + 10**9, 1, errno.EINVAL),
             (t["path"].encode(), t["woff"], t["soff"], 10, 5, 1, errno.EINVAL),
             (t["path"].encode(), 2**64 - 1, t["soff"], 0, 2, 1, errno.EINVAL),
             (t["path"].encode(), t["woff"], t["soff"], 0, 1, -1, errno.EINVAL),
             (FIX["dir"].encode(), 0, 0, 0, 1, 1, errno.EISDIR)]
    for path, w, s, lo, hi, th, want in cases:
        ctypes.set_errno(0)
        store = lib.engram_rows_open(path, w, s, lo, hi, th)
        check(not store, f"open {path} [{lo}, {hi}) should fail")
        check(ctypes.get_errno() == want, f"open {path}: errno {ctypes.get_errno()}, expected {want}")


def thread_counts():
    t = FIX["snapshot"]
    for n in (0, 1, 3, 16):
        base = threads()
        store = open_table(t, threads_=n)
        check(threads() == base + n, f"threads={n}: {threads() - base} more threads while open")
        gather(store, list(range(0, t["rows"], 3)))
        lib.engram_rows_prefetch(store, ptr(np.arange(t["rows"], dtype=np.int64), i64), t["rows"])
        time.sleep(0.05)
        check(threads() == base + n, f"threads={n}: {threads() - base} more threads after gathers")
        if n == 0:
            expect_rows(t, store, list(range(t["rows"])), "inline store")
        lib.engram_rows_close(store)
        check(threads() == base, f"threads={n}: {threads() - base} threads left after close")


def two_callers():
    t = FIX["snapshot"]
    store = open_table(t, threads_=4)
    errors = []

    def caller(seed):
        rng = random.Random(seed)
        for _ in range(60):
            ids = [rng.randrange(-2, t["rows"] + 2) for _ in range(rng.choice([1, 24, 144, 700]))]
            w, s = gather(store, ids)
            rw, rs = reference(t, ids)
            if not (np.array_equal(w, rw) and np.array_equal(s, rs)):
                errors.append(seed)

    def governor():
        for _ in range(30):
            lib.engram_rows_resident(store)
            ids = np.arange(0, t["rows"], 7, dtype=np.int64)
            lib.engram_rows_prefetch(store, ptr(ids, i64), len(ids))
            lib.engram_rows_release(store)
            time.sleep(0.002)

    runners = [threading.Thread(target=caller, args=(k,)) for k in range(2)] + [threading.Thread(target=governor)]
    for r in runners:
        r.start()
    for r in runners:
        r.join()
    check(not errors, f"callers {errors} got wrong rows with prefetch and release running")
    check(stats(store)[0] == 120, f"calls {stats(store)[0]}, expected 120")
    lib.engram_rows_close(store)


def prefetch_return():
    t = FIX["sparse"]
    store = open_table(t, threads_=2)
    ids = np.array([t["lo"], t["lo"], t["hi"] - 1, t["hi"], -1, t["rows"] + 3, t["lo"] - 1], np.int64)
    check(lib.engram_rows_prefetch(store, ptr(ids, i64), len(ids)) == 3, "prefetch does not count the owned ids")
    check(lib.engram_rows_prefetch(store, None, 0) == 0, "prefetch of nothing")
    check(stats(store)[0] == 0, "prefetch counted as a gather call")
    # Prefetch reads: the rows arrive in the store's memory without a gather.
    deadline = time.time() + 5
    while lib.engram_rows_resident(store) < 2 * (W + S) and time.time() < deadline:
        time.sleep(0.01)
    check(lib.engram_rows_resident(store) >= 2 * (W + S), "prefetch read nothing")
    expect_rows(t, store, list(ids), "after prefetch")
    lib.engram_rows_close(store)


def resident_release():
    t = FIX["sparse"]
    span = (t["hi"] - t["lo"]) * W
    owned = list(range(t["lo"], t["hi"]))
    store = open_table(t)
    gather(store, owned)
    held = lib.engram_rows_resident(store)
    check(held >= 0.9 * span, f"resident {held} after every owned row once, span weights {span}")
    lib.engram_rows_release(store)
    check(lib.engram_rows_resident(store) <= 4 * 4096, f"resident {lib.engram_rows_resident(store)} after release")
    expect_rows(t, store, list(range(t["lo"] - 2, t["hi"] + 2)), "after release")
    check(lib.engram_rows_resident(store) >= 0.9 * span, "resident after a release and every row again")
    lib.engram_rows_close(store)
    # The overlay's own ABI test: 8 threads, release() first, then every owned row once.
    store = open_table(t, threads_=8)
    lib.engram_rows_release(store)
    gather(store, owned)
    held = lib.engram_rows_resident(store)
    check(held >= 0.9 * span, f"resident {held} after release() then every owned row, span weights {span}")
    lib.engram_rows_close(store)


def open_close_loop():
    t = FIX["snapshot"]
    fds, base = descriptors(), threads()
    for k in range(60):
        store = open_table(t, threads_=k % 5)
        gather(store, [1, 2, 3, -1])
        lib.engram_rows_close(store)
    check(descriptors() == fds, f"{descriptors() - fds} descriptors leaked")
    check(threads() == base, f"{threads() - base} threads leaked")


def child_stats_line():
    t = FIX["snapshot"]
    store = open_table(t, threads_=2)
    gather(store, [1, 2, 3])
    time.sleep(1.1)
    gather(store, [1, 2, 3])
    time.sleep(0.2)
    lib.engram_rows_close(store)


def stats_line():
    code, _, err = child("child_stats_line", {"SPARK_ENGRAM_STATS_SECONDS": "1"})
    check(code == 0, f"child exited {code}: {err}")
    check("libengram_rows: calls=2 rows=6 hit_rate=50.0%" in err, f"no stats line: {err!r}")
    for key in ("reads=", "reads_per_s=", "p50_us=", "p99_us=", "cache_bytes="):
        check(key in err, f"stats line without {key}: {err!r}")


run({name: fn for name, fn in globals().items() if callable(fn) and fn.__module__ == "__main__" and name not in
     ("open_table", "gather", "stats", "expect_rows", "strange_ids", "Work")})
