#!/usr/bin/env python3
"""Reference reader of the node-local Engram copies spark writes and reads.

Two kinds of directory (docs/packed-format.md):

  sparse copy   engram-local.json whose "layers" is {"L": [lo, hi]} (the serving overlay's
                format: spark pack --layout sparse, or the overlay's tools/engram_local.py),
                the index model.safetensors.index.json and the shards holding the Engram
                tables, with the rank's rows at their original offsets and holes elsewhere.
                Rows are global ids in two columns: weight at 8 + N + data_offsets[0] + id*D,
                scale at ... + id*D/32 of the shard's safetensors header.
  pack          spark-pack.json (or, as first shipped, engram-local.json with a "layers"
                array): per layer engram-l{L}-r{r}of{W}.bin, a 4096-byte header block, then
                rows weight[D] || scale[D/32] (dense, or in 4096-byte pages).

Only numpy and the standard library are needed. Checksums are CRC-32 as zlib computes it.
Files are mapped with MADV_RANDOM after their sizes are checked (a truncated file is an error
here, never a SIGBUS later); rows are gathered with row-level indexing.

    >>> copy = open_dir("/engram")
    >>> layer = copy.layer(14)
    >>> rows = layer.rows([layer.start, layer.start + 7])   # uint8 [2, D + D/32]
    >>> values = layer.dequantize(ids)                      # float32 [n, D]

As a command:  python3 spark_engram_reader.py DIR --layer 14 --ids 5,6 [--dequant]
               python3 spark_engram_reader.py DIR --verify
Every damaged input is one line on stderr and exit 2; an I/O failure is exit 3.

The reading lives in the package spark_engram_copy beside this file (checked fields, packs,
sparse copies); this module is its public face and the command.
"""

import argparse
import json
import os
import re
import sys

import numpy as np

from spark_engram_copy.checked import (
    HEADER_BYTES,
    INDEX,
    LOCAL_MANIFEST,
    PACK_FORMAT,
    PACK_MANIFEST,
    PACK_VERSION,
    PAGE_BYTES,
    SPARSE_FORMAT,
    SPARSE_VERSION,
    FormatError,
    HoleError,
    _obj,
    _read_manifest,
)
from spark_engram_copy.layer import E8M0, FP8_E4M3
from spark_engram_copy.packed import PackedDir, PackedLayer
from spark_engram_copy.sparse import SparseCopy, SparseLayer

__all__ = [
    "E8M0",
    "FP8_E4M3",
    "HEADER_BYTES",
    "INDEX",
    "LOCAL_MANIFEST",
    "PACK_FORMAT",
    "PACK_MANIFEST",
    "PACK_VERSION",
    "PAGE_BYTES",
    "SPARSE_FORMAT",
    "SPARSE_VERSION",
    "FormatError",
    "HoleError",
    "PackedDir",
    "PackedLayer",
    "SparseCopy",
    "SparseLayer",
    "main",
    "open_dir",
]


def open_dir(directory):
    """The copy at `directory`: a SparseCopy or a PackedDir, told apart by their manifests."""
    if not os.path.isdir(directory):
        raise FormatError(f"{directory}: is not a directory")
    pack = os.path.join(directory, PACK_MANIFEST)
    if os.path.lexists(pack):
        return PackedDir(directory, pack, _read_manifest(pack))
    local = os.path.join(directory, LOCAL_MANIFEST)
    if not os.path.lexists(local):
        raise FormatError(f"{directory}: has neither {PACK_MANIFEST} nor {LOCAL_MANIFEST}: not a copy (an interrupted pack has none)")
    m = _obj(_read_manifest(local), local)
    if isinstance(m.get("layers"), dict):
        return SparseCopy(directory, m)
    if isinstance(m.get("layers"), list):
        return PackedDir(directory, local, m)
    raise FormatError(f"{local}: layers must be an object of \"L\": [lo, hi] (a sparse copy) or, in a version 1 pack, a list")


def _parse_ids(text):
    ids = []
    for part in text.split(","):
        part = part.strip()
        if not re.fullmatch(r"\d{1,18}", part):
            raise FormatError(f"--ids must be comma-separated whole numbers >= 0, got {part!r}")
        ids.append(int(part))
    if len(ids) > (1 << 24):
        raise FormatError("--ids: at most 16777216 ids")
    return np.array(ids, dtype=np.int64)


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise FormatError(f"{message} (see --help)")


def _run(argv):
    p = _Parser(prog="spark_engram_reader.py", description="Read rows from a node-local Engram copy (sparse copy or pack).")
    p.add_argument("dir")
    p.add_argument("--layer", type=int)
    p.add_argument("--ids", help="comma-separated global row ids")
    p.add_argument("--dequant", action="store_true", help="add the dequantized values")
    p.add_argument("--verify", action="store_true", help="check every chunk checksum")
    a = p.parse_args(argv)
    if not a.verify and (a.layer is None or a.ids is None):
        raise FormatError("--layer and --ids are required unless --verify")
    ids = None if a.verify else _parse_ids(a.ids)
    try:
        copy = open_dir(a.dir)
    except HoleError as e:
        if not a.verify:
            raise
        print(f"spark_engram_reader: {e}", file=sys.stderr)
        print(json.dumps({"ok": False, "checksums": None, "problems": [str(e)]}))
        return 1
    if a.verify:
        result = copy.verify()
        for line in result["problems"][:1]:
            print(f"spark_engram_reader: {line}", file=sys.stderr)
        print(json.dumps(result))
        return 0 if result["ok"] else 1
    layer = copy.layer(a.layer)
    rows = layer.rows(ids)
    values = layer.dequantize(ids) if a.dequant else None
    out = []
    for i, row_id in enumerate(ids.tolist()):
        row = {"id": row_id, "weight": rows[i, : layer.dim].tobytes().hex(), "scale": rows[i, layer.dim :].tobytes().hex()}
        if values is not None:
            row["values"] = [float(v) for v in values[i]]
        out.append(row)
    print(json.dumps({"layer": a.layer, "source": copy.kind, "rows": out}))
    return 0


def main(argv=None):
    """Exit 0 ok, 1 a checksum failed, 2 damaged input or bad usage, 3 I/O failure; errors are one line."""
    try:
        return _run(argv)
    except FormatError as e:
        message, code = str(e), 2
    except OSError as e:
        message, code = f"{getattr(e, 'filename', None) or ''}: {e.strerror or e}".lstrip(": "), 3
    except (ValueError, TypeError, KeyError, IndexError, OverflowError, MemoryError) as e:
        message, code = f"internal error ({type(e).__name__}: {e}); please report it", 3
    print(f"spark_engram_reader: {' '.join(message.split())}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
