"""One packed shard attached through librow_store.so as the Mia stack does it at boot: a store
over the checkpoint's table, its range set to the rank's rows, then row_store_attach_packed.
Prints what the call returned (1 attached, 0 absent); a shard the library refuses ends this
process with abort(), its one line on stderr.

    python3 mia_attach.py LIB '{"table": {"path", "rows", "woff", "soff", "lo", "hi"}, "pack", "layer"}'
"""
import ctypes
import json
import sys

lib = ctypes.CDLL(sys.argv[1], use_errno=True)
spec = json.loads(sys.argv[2])
u64 = ctypes.c_uint64
lib.row_store_open.restype = ctypes.c_void_p
lib.row_store_open.argtypes = [ctypes.c_char_p, u64, u64, u64, u64]
lib.row_store_range.argtypes = [ctypes.c_void_p, u64, u64]
lib.row_store_attach_packed.restype = ctypes.c_int
lib.row_store_attach_packed.argtypes = [ctypes.c_void_p, ctypes.c_char_p, u64]

t = spec["table"]
store = lib.row_store_open(t["path"].encode(), t["rows"], t["woff"], t["soff"], 1 << 20)
if not store:
    sys.exit(f"row_store_open failed for {t['path']}")
lib.row_store_range(store, t["lo"], t["hi"])
print(lib.row_store_attach_packed(store, spec["pack"].encode(), spec["layer"]))
