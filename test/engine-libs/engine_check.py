"""What the engine library checks share: loading a library as the stacks do (ctypes.CDLL with
use_errno), the reference rows read with numpy straight from the fixture files, thread and
descriptor counts, and running one case in a child process (a fresh pool, an environment, an
expected abort)."""
import ctypes
import json
import os
import subprocess
import sys

import numpy as np

W, S = 256, 8


class CheckFailed(Exception):
    pass


def check(cond, what):
    if not cond:
        raise CheckFailed(what)


def args():
    """(library path, fixtures dict, remaining argv)."""
    return sys.argv[1], json.loads(sys.argv[2]), sys.argv[3:]


def reference(table, ids):
    """The rows the ids name, read with numpy from the file: zeros outside [lo, hi)."""
    path, n = table["path"], table["rows"]
    weights = np.memmap(path, dtype=np.uint8, mode="r", offset=table["woff"], shape=(n, W))
    scales = np.memmap(path, dtype=np.uint8, mode="r", offset=table["soff"], shape=(n, S))
    ids = np.asarray(ids, np.int64)
    owned = (ids >= table["lo"]) & (ids < table["hi"])
    w = np.zeros((len(ids), W), np.uint8)
    s = np.zeros((len(ids), S), np.uint8)
    w[owned], s[owned] = weights[ids[owned]], scales[ids[owned]]
    return w, s


def poisoned(count):
    return np.full((count, W), 0xAB, np.uint8), np.full((count, S), 0xCD, np.uint8)


def ptr(a, ctype):
    return a.ctypes.data_as(ctypes.POINTER(ctype))


def threads():
    return len(os.listdir("/proc/self/task"))


def descriptors():
    return len(os.listdir("/proc/self/fd"))


def child(case, env=None):
    """Runs this script again for one case in a fresh process; returns (returncode, stderr)."""
    e = dict(os.environ)
    e.update(env or {})
    r = subprocess.run([sys.executable, sys.argv[0], sys.argv[1], sys.argv[2], case], env=e,
                       capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout, r.stderr


def run(cases):
    """Runs the case named on the command line, or every case (prints "ok NAME" each)."""
    _, _, rest = args()
    names = rest or [n for n in cases if not n.startswith("child_")]
    for name in names:
        try:
            cases[name]()
        except CheckFailed as e:
            print(f"FAIL {name}: {e}")
            sys.exit(1)
        print(f"ok {name}")
        sys.stdout.flush()
