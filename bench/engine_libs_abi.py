"""The two stacks' row-library ABIs from Python ctypes, as their engines call them
(docs/engine-libs.md): one side of a benchmark is a store of one library, called with numpy
output buffers. bench/engine-libs.py and bench/ramdev.py both drive libraries through these.

  Side(name, load(path), table, rows, threads, batch_max[, woff, soff])       # the overlay's ABI 3
  MiaSide(name, load_mia(path), table, rows, budget, batch_max[, pack])       # the Mia stack's

call(ids) runs one gather and returns its nanoseconds; evict() is what the stack does to a
store's page cache between cold calls (the overlay baseline's release(); nothing for the
others, which read O_DIRECT)."""
import ctypes
import os
import sys
import time

import numpy as np

W, S = 256, 8
u64, i64 = ctypes.c_uint64, ctypes.c_int64
PACK_MAGIC, PACK_LAYER, PACK_HEADER = 0x31344E4531565344, 14, 4096


class Work(ctypes.Structure):
    _fields_ = [("count", u64), ("store", ctypes.c_void_p), ("w", ctypes.c_void_p), ("s", ctypes.c_void_p),
                ("ids", ctypes.c_void_p)]


class MiaWork(ctypes.Structure):
    _fields_ = [("store", ctypes.c_void_p), ("ids", ctypes.c_void_p), ("w", ctypes.c_void_p), ("s", ctypes.c_void_p),
                ("count", u64)]


def load_mia(path):
    lib = ctypes.CDLL(os.path.abspath(path), use_errno=True)
    lib.row_store_open.restype = ctypes.c_void_p
    lib.row_store_open.argtypes = [ctypes.c_char_p, u64, u64, u64, u64]
    lib.row_store_range.argtypes = [ctypes.c_void_p, u64, u64]
    lib.row_store_lookup.argtypes = [ctypes.c_void_p]
    lib.row_store_close.argtypes = [ctypes.c_void_p]
    lib.row_store_stats.argtypes = [ctypes.c_void_p, ctypes.POINTER(u64)]
    lib.row_store_attach_packed.argtypes = [ctypes.c_void_p, ctypes.c_char_p, u64]
    return lib


class MiaSide:
    def __init__(self, name, lib, path, rows, budget, batch_max, pack=None):
        self.name, self.lib = name, lib
        self.store = lib.row_store_open(path.encode(), rows, 0, rows * W, budget)
        if not self.store:
            sys.exit(f"{name}: open failed")
        lib.row_store_range(self.store, 0, rows)
        if pack and lib.row_store_attach_packed(self.store, pack.encode(), PACK_LAYER) != 1:
            sys.exit(f"{name}: {pack} not attached (its filesystem refuses O_DIRECT?); use --dir elsewhere")
        self.w = np.empty((batch_max, W), np.uint8)
        self.s = np.empty((batch_max, S), np.uint8)

    def call(self, ids):
        work = MiaWork(self.store, ids.ctypes.data, self.w.ctypes.data, self.s.ctypes.data, len(ids))
        t = time.perf_counter_ns()
        self.lib.row_store_lookup(ctypes.byref(work))
        return time.perf_counter_ns() - t

    def evict(self):
        pass  # O_DIRECT (or the store's own cache): nothing of the page cache to drop

    def settle(self):
        # spark's library may still be putting the last call's rows in its cache on a worker:
        # stats wait for that. The stack's own library does nothing after a call returns.
        if self.name == "spark":
            self.stats()

    def stats(self):
        out = (u64 * 9)()
        self.lib.row_store_stats(self.store, out)
        return list(out)

    def report(self):
        out = self.stats()
        return f"hits {out[0]} misses {out[1]} reads {out[2]} cache slots {out[4]} threads {out[7]} packed {out[8]}"

    def close(self):
        self.lib.row_store_close(self.store)


def load(path):
    lib = ctypes.CDLL(os.path.abspath(path), use_errno=True)
    check = lib.engram_rows_abi_version()
    if check != 3:
        sys.exit(f"{path}: ABI version {check}, expected 3")
    lib.engram_rows_open.restype = ctypes.c_void_p
    lib.engram_rows_open.argtypes = [ctypes.c_char_p, u64, u64, u64, u64, ctypes.c_int]
    lib.engram_rows_gather.argtypes = [ctypes.c_void_p]
    lib.engram_rows_close.argtypes = [ctypes.c_void_p]
    lib.engram_rows_resident.restype = u64
    lib.engram_rows_resident.argtypes = [ctypes.c_void_p]
    lib.engram_rows_release.argtypes = [ctypes.c_void_p]
    return lib


class Side:
    def __init__(self, name, lib, path, rows, threads, batch_max, woff=0, soff=None):
        self.name, self.lib = name, lib
        soff = rows * W if soff is None else soff
        self.store = lib.engram_rows_open(path.encode(), woff, soff, 0, rows, threads)
        if not self.store:
            sys.exit(f"{name}: open failed, errno {ctypes.get_errno()}")
        self.w = np.empty((batch_max, W), np.uint8)
        self.s = np.empty((batch_max, S), np.uint8)

    def call(self, ids):
        work = Work(len(ids), self.store, self.w.ctypes.data, self.s.ctypes.data, ids.ctypes.data)
        t = time.perf_counter_ns()
        self.lib.engram_rows_gather(ctypes.byref(work))
        return time.perf_counter_ns() - t

    def evict(self):
        # The baseline's page cache of the file goes, as when the overlay's governor releases.
        if self.name == "baseline":
            self.lib.engram_rows_release(self.store)

    def settle(self):
        # spark's library may still be putting the last call's rows in its cache on a worker:
        # resident() waits for that. The overlay's own library does nothing after a call returns.
        if self.name == "spark":
            self.resident()

    def stats(self):
        return []

    def resident(self):
        return self.lib.engram_rows_resident(self.store)

    def report(self):
        return f"resident() {self.resident() / 2**20:.1f} MiB"

    def close(self):
        self.lib.engram_rows_close(self.store)
