"""librow_store.so through ctypes, as the Mia stack loads and calls it (docs/engine-libs.md):
rows byte-exact against numpy from a checkpoint shard and from a packed shard written here,
zeros outside the range, abort() on ids outside the table and on a pack that does not match,
stats, the process-wide pool, concurrent callers, and an open/close loop."""
import ctypes
import os
import random
import signal
import struct
import threading

import numpy as np

from engine_check import args, check, child, descriptors, poisoned, ptr, reference, run, threads

LIB, FIX, _ = args()
lib = ctypes.CDLL(LIB, use_errno=True)
u64, i64 = ctypes.c_uint64, ctypes.c_int64
lib.row_store_open.restype = ctypes.c_void_p
lib.row_store_open.argtypes = [ctypes.c_char_p, u64, u64, u64, u64]
lib.row_store_range.argtypes = [ctypes.c_void_p, u64, u64]
lib.row_store_attach_packed.restype = ctypes.c_int
lib.row_store_attach_packed.argtypes = [ctypes.c_void_p, ctypes.c_char_p, u64]
lib.row_store_lookup.argtypes = [ctypes.c_void_p]
lib.row_store_stats.argtypes = [ctypes.c_void_p, ctypes.POINTER(u64)]
lib.row_store_close.argtypes = [ctypes.c_void_p]
lib.row_store_next_cache_on_drm.restype = None
lib.row_store_next_cache_on_drm.argtypes = [ctypes.c_char_p, u64]
MAGIC = 0x31344E4531565344
BUDGET = 1 << 20


class Work(ctypes.Structure):
    _fields_ = [("store", ctypes.c_void_p), ("ids", ctypes.POINTER(i64)), ("weights", ctypes.POINTER(ctypes.c_uint8)),
                ("scales", ctypes.POINTER(ctypes.c_uint8)), ("count", u64)]


def table(lo, hi):
    t = dict(FIX["snapshot"])
    t["lo"], t["hi"] = lo, hi
    return t


def open_store(budget=BUDGET, lo=None, hi=None):
    t = FIX["snapshot"]
    s = lib.row_store_open(t["path"].encode(), t["rows"], t["woff"], t["soff"], budget)
    check(s, "open failed")
    if lo is not None:
        lib.row_store_range(s, lo, hi)
    return s


def lookup(store, ids):
    ids = np.asarray(ids, np.int64)
    w, s = poisoned(len(ids))
    lib.row_store_lookup(ctypes.byref(Work(store, ptr(ids, i64), ptr(w, ctypes.c_uint8), ptr(s, ctypes.c_uint8),
                                           len(ids))))
    return w, s


def stats(store):
    out = (u64 * 9)()
    lib.row_store_stats(store, out)
    return dict(zip(("hits", "misses", "reads", "cache_bytes", "cache_slots", "pinned", "ways", "threads", "packed"),
                    out))


def expect_rows(t, store, ids, what):
    w, s = lookup(store, ids)
    rw, rs = reference(t, ids)
    check(np.array_equal(w, rw) and np.array_equal(s, rs), f"{what}: rows differ from numpy")


def write_pack(path, lo, hi, layer=1, n=None, row_bytes=264, rows=None, magic=MAGIC):
    """The Mia stack's packed shard: six little-endian uint64, zeros to 4096, then the rows."""
    t = FIX["snapshot"]
    n = t["rows"] if n is None else n
    w, s = reference(table(0, t["rows"]), list(range(lo, hi)))
    body = np.concatenate([w, s], axis=1).tobytes()
    with open(path, "xb") as f:
        f.write(struct.pack("<6Q", magic, layer, lo, hi, n, row_bytes).ljust(4096, b"\0"))
        f.write(body if rows is None else body[:rows * 264])


def pack_path(name):
    return os.path.join(FIX["dir"], name)


def direct_works():
    probe = pack_path("direct-probe")
    with open(probe, "wb") as f:
        f.write(b"\0" * 4096)
    try:
        os.close(os.open(probe, os.O_RDONLY | os.O_DIRECT))
        return True
    except OSError:
        return False


def checkpoint_rows():
    t = FIX["snapshot"]
    lo, hi = t["rows"] // 3, 2 * t["rows"] // 3
    store = open_store(lo=lo, hi=hi)
    rng = random.Random(3)
    ids = [rng.randrange(t["rows"]) for _ in range(400)] + [lo, lo, hi - 1, hi, lo - 1, 0, t["rows"] - 1]
    expect_rows(table(lo, hi), store, ids, "checkpoint, cold")
    expect_rows(table(lo, hi), store, ids, "checkpoint, warm")
    expect_rows(table(lo, hi), store, list(range(t["rows"])), "every id")
    lib.row_store_close(store)
    whole = open_store()  # no range call: the store owns [0, N)
    expect_rows(table(0, t["rows"]), whole, ids, "without a range call")
    lib.row_store_close(whole)


def packed_rows():
    t = FIX["snapshot"]
    lo, hi = t["rows"] // 3, 2 * t["rows"] // 3
    path = pack_path("engram-l1-r1of3.bin")
    write_pack(path, lo, hi)
    store = open_store(lo=lo, hi=hi)
    check(lib.row_store_attach_packed(store, pack_path("engram-l1-r9of9.bin").encode(), 1) == 0, "absent pack attached")
    attached = lib.row_store_attach_packed(store, path.encode(), 1)
    check(attached == (1 if direct_works() else 0), f"attach returned {attached}")
    rng = random.Random(4)
    ids = [rng.randrange(t["rows"]) for _ in range(500)] + [lo, hi - 1, hi, lo - 1]
    expect_rows(table(lo, hi), store, ids, "packed")
    st = stats(store)
    check(st["packed"] == attached, f"stats packed {st['packed']}")
    if attached:
        # One read per miss at most: rows in the same or the next block share one.
        check(0 < st["reads"] <= st["misses"], f"packed: {st['reads']} reads for {st['misses']} misses")
    lib.row_store_close(store)


def child_abort(kind):
    t = FIX["snapshot"]
    lo, hi = 100, 200
    store = open_store(lo=lo, hi=hi)
    if kind == "negative":
        lookup(store, [5, -1])
    elif kind == "past":
        lookup(store, [t["rows"]])
    elif kind == "range":
        lib.row_store_range(store, 300, 200)
    elif kind == "moved":
        lib.row_store_range(store, 100, 250)
    elif kind.startswith("pack-"):
        field = kind[5:]
        path = pack_path(f"bad-{field}.bin")
        fields = {"magic": dict(magic=MAGIC + 1), "layer": dict(layer=14), "lo": dict(lo=101), "n": dict(n=t["rows"] + 1),
                  "rowbytes": dict(row_bytes=272), "short": dict(rows=99)}[field]
        write_pack(path, fields.pop("lo", lo), hi, **fields)
        lib.row_store_attach_packed(store, path.encode(), 1)
        if not direct_works():
            os.abort()  # the filesystem refuses O_DIRECT: the pack is absent; nothing to check
    print("returned")


def child_open_past():
    t = FIX["snapshot"]
    lib.row_store_open(t["path"].encode(), t["rows"] + 10**6, t["woff"], t["soff"], BUDGET)
    print("returned")


def aborts():
    for kind in ("negative", "past", "range", "moved", "pack-magic", "pack-layer", "pack-lo", "pack-n", "pack-rowbytes",
                 "pack-short"):
        code, out, err = child(f"child_abort_{kind}")
        check(code == -signal.SIGABRT, f"{kind}: exited {code}, expected abort: {err}")
        check("returned" not in out, f"{kind}: returned before aborting")
        if not kind.startswith("pack-") or direct_works():
            lines = [line for line in err.splitlines() if line.startswith("librow_store:")]
            check(len(lines) == 1, f"{kind}: expected one line saying why: {err!r}")
    code, _, err = child("child_open_past")
    check(code == -signal.SIGABRT and "do not fit" in err, f"open past the file: {code} {err!r}")
    check(not lib.row_store_open(b"/nonexistent/shard.safetensors", 10, 0, 0, BUDGET), "open of a missing file")


def count_zero():
    store = open_store(lo=0, hi=10)
    lib.row_store_lookup(ctypes.byref(Work(store, None, None, None, 0)))
    st = stats(store)
    check(st["hits"] + st["misses"] + st["reads"] == 0, f"count 0: {st}")
    lib.row_store_close(store)


def child_known_stats():
    t = FIX["snapshot"]
    lo, hi = 1000, 9000
    a, b, c = lo, lo + 3000, lo + 6000  # far apart: no two share a read
    # 100 sets of 8 ways: 272 bytes a slot, 2 of frequency sketch a slot, 1 a set, 64 of sketch slack.
    store = open_store(budget=100 * (274 * 8 + 1) + 64, lo=lo, hi=hi)
    lookup(store, [a, b, a, hi, 5])   # two distinct misses, one repeat, two outside
    lookup(store, [b, c])             # one hit, one miss
    lookup(store, [])
    st = stats(store)
    pinned = os.environ["DSV41_RESIDENT_SCALES"] != "0"
    want = dict(hits=2, misses=3, reads=3 if pinned else 6, cache_slots=800, cache_bytes=800 * 272 + 100 + 25 * 64,
                pinned=(hi - lo) * 8 if pinned else 0, ways=8, threads=int(os.environ["DSV41_IO_THREADS"]), packed=0)
    check(st == want, f"stats {st}, expected {want}")
    expect_rows(table(lo, hi), store, [a, b, c, t["rows"] - 1], "after the sequence")
    lib.row_store_close(store)


def known_stats():
    for scales in ("1", "0"):
        for io in ("1", "6"):
            code, _, err = child("child_known_stats",
                                 {"DSV41_RESIDENT_SCALES": scales, "DSV41_IO_THREADS": io, "DSV41_CACHE_WAYS": "8"})
            check(code == 0, f"scales={scales} threads={io}: {err}")


def child_threads():
    want = max(int(os.environ["DSV41_IO_THREADS"]) - 1, 0)
    base = threads()
    a, b = open_store(lo=0, hi=100), open_store(lo=0, hi=100)
    check(threads() == base, "threads started before the first lookup")
    lookup(a, [1, 2, 3])
    check(threads() == base + want, f"{threads() - base} threads after the first lookup, expected {want}")
    lookup(b, list(range(50)))
    check(threads() == base + want, "a second store started threads of its own")
    check(stats(a)["threads"] == max(want + 1, 1), f"stats threads {stats(a)['threads']}")
    lib.row_store_close(a)
    lib.row_store_close(b)
    check(threads() == base + want, "the process-wide pool went with a store")


def pool_threads():
    for io in ("1", "0", "5", "33"):
        code, _, err = child("child_threads", {"DSV41_IO_THREADS": io})
        check(code == 0, f"DSV41_IO_THREADS={io}: {err}")


def two_callers():
    t = FIX["snapshot"]
    lo, hi = 0, t["rows"] // 2
    stores = [open_store(budget=64 << 10, lo=lo, hi=hi), open_store(budget=0, lo=lo, hi=hi)]
    errors = []

    def caller(seed, store):
        rng = random.Random(seed)
        for _ in range(50):
            ids = [rng.randrange(t["rows"]) for _ in range(rng.choice([1, 8, 144, 900]))]
            w, s = lookup(store, ids)
            rw, rs = reference(table(lo, hi), ids)
            if not (np.array_equal(w, rw) and np.array_equal(s, rs)):
                errors.append(seed)

    runners = [threading.Thread(target=caller, args=(k, stores[k % 2 if k < 2 else 0])) for k in range(3)]
    for r in runners:
        r.start()
    for r in runners:
        r.join()
    check(not errors, f"callers {errors} got wrong rows")
    for s in stores:
        lib.row_store_close(s)


def child_ram():
    store = open_store(lo=10, hi=900)
    expect_rows(table(10, 900), store, list(range(0, 1000, 3)), "OFFLOAD_MODE=ram")
    st = stats(store)
    check(st["cache_slots"] == 0, "OFFLOAD_MODE=ram keeps a cache")
    check(st["ways"] == 4 and st["pinned"] == 890 * 8, f"OFFLOAD_MODE=ram: ways and scales as configured: {st}")
    lib.row_store_close(store)


def ram_mode():
    code, _, err = child("child_ram", {"OFFLOAD_MODE": "ram"})
    # An mlock the memlock limit refuses aborts, as in the stack.
    check(code == 0 or (code == -signal.SIGABRT and "mlock" in err), f"OFFLOAD_MODE=ram: {code} {err}")


def open_close_loop():
    fds = descriptors()
    for k in range(60):
        store = open_store(budget=(k % 3) << 16, lo=0, hi=500)
        lookup(store, [1, 2, 3, 600])
        lib.row_store_close(store)
    check(descriptors() == fds, f"{descriptors() - fds} descriptors leaked")


def child_stats_line():
    store = open_store(lo=0, hi=9000)
    lookup(store, [1, 3000, 6000, 9500])  # three misses far apart (three reads), one outside
    import time
    time.sleep(1.1)
    lookup(store, [1, 3000])
    time.sleep(0.2)


def stats_line():
    code, _, err = child("child_stats_line", {"DSV41_STATS_SECONDS": "1", "DSV41_IO_THREADS": "4"})
    check(code == 0, f"child exited {code}: {err}")
    check("librow_store: lookups=5 hit_rate=40.0% reads=3 packed=0" in err, f"no stats line: {err!r}")


MIB16 = 16 << 20


def child_drm():
    """Every refusal of row_store_next_cache_on_drm: the store still opens, its cache (in ordinary
    memory) serves exact rows, and each request is taken by the next store with a cache only."""
    d = FIX["dir"]
    fifo = os.path.join(d, "drm-fifo")
    if not os.path.exists(fifo):
        os.mkfifo(fifo)
    plain = os.path.join(d, "drm-plain")
    with open(plain, "wb") as f:
        f.write(b"not a device")
    requests = [(b"/nonexistent/dri/card0", MIB16), (b"/dev/null", MIB16), (plain.encode(), MIB16), (fifo.encode(), MIB16),
                (d.encode(), MIB16), (b"/dev/null", 0), (b"/dev/null", 1 << 63), (b"/dev/null", (1 << 64) - MIB16),
                (b"/dev/null", MIB16 + 4096), (b"", MIB16), (None, MIB16), (b"/nonexistent/dri/card0", MIB16)]
    for k, (node, size) in enumerate(requests):
        lib.row_store_next_cache_on_drm(node, size)
        budget = 1 << 30 if k == len(requests) - 1 else BUDGET  # the last: 1 GiB of rows cannot fit in 16 MiB
        if k == 0:
            s0 = open_store(budget=0, lo=0, hi=500)  # no cache: leaves the request pending
            lib.row_store_close(s0)
            print("---", flush=True)
        store = open_store(budget=budget, lo=0, hi=900)
        expect_rows(table(0, 900), store, list(range(0, 1000, 7)) * 2, f"DRM request {k}")
        check(stats(store)["cache_slots"] > 0 and stats(store)["hits"] > 0, f"request {k}: the cache does not work")
        lib.row_store_close(store)
        again = open_store(budget=BUDGET, lo=0, hi=900)  # the request was taken: nothing to say
        lib.row_store_close(again)
        print(f"--- {k}", flush=True)


def drm_fallback():
    code, _out, err = child("child_drm", {})
    check(code == 0, f"child exited {code}: {err}")
    # stderr is unbuffered and stdout flushed at each marker, but the two streams are separate:
    # the lines are checked in order on stderr alone.
    lines = [x for x in err.splitlines() if x.startswith("librow_store: row cache")]
    want = ["stat: No such file or directory", "character device 1:3 is not a DRM device (major 226)", "not a character device",
            "not a character device", "not a character device", None, "is more than a dumb buffer can hold",
            "is more than a dumb buffer can hold", "is not a whole number of 16 MiB", "no device node given", "no device node given",
            "row bytes do not fit in 16777216"]
    expected = [w for w in want if w is not None]
    check(len(lines) == len(expected), f"{len(lines)} fallback lines for {len(expected)} refusals: {lines}")
    for line, w in zip(lines, expected):
        check(line.startswith("librow_store: row cache in ordinary memory, not a DRM dumb buffer on ") and w in line,
              f"{line!r} does not say {w!r}")


cases = {name: fn for name, fn in globals().items() if callable(fn) and fn.__module__ == "__main__" and name not in
         ("table", "open_store", "lookup", "stats", "expect_rows", "write_pack", "pack_path", "direct_works",
          "child_abort", "Work")}
for kind in ("negative", "past", "range", "moved", "pack-magic", "pack-layer", "pack-lo", "pack-n", "pack-rowbytes",
             "pack-short"):
    cases[f"child_abort_{kind}"] = (lambda k: lambda: child_abort(k))(kind)
run(cases)
