#!/usr/bin/env python3
"""Reference reader of spark's packed Engram directories (format version 1).

A packed directory holds one rank's rows of each Engram layer (docs/packed-format.md):

    spark-pack.json                the manifest (written last: no manifest, no pack);
                                   packs first shipped named it engram-local.json
    engram-l{L}-r{r}of{W}.bin      per layer: a 4096-byte header block (JSON padded with
                                   spaces), then rows weight[D] || scale[D/32]

Only numpy and the standard library are needed. Checksums are CRC-32 as zlib computes it,
so zlib.crc32 verifies them.

    >>> pack = PackedDir("/engram")
    >>> layer = pack.layer(14)
    >>> rows = layer.rows(np.array([layer.start, layer.start + 7]))   # uint8 [2, D + D/32]
    >>> values = layer.dequantize(ids)                                # float32 [n, D]

As a command:  python3 spark_engram_reader.py DIR --layer 14 --ids 5,6 [--dequant]
               python3 spark_engram_reader.py DIR --verify
"""

import argparse
import json
import os
import sys
import zlib

import numpy as np

FORMAT = "spark-engram-packed"
VERSION = 1
HEADER_BYTES = 4096
PAGE_BYTES = 4096
MANIFEST = "spark-pack.json"
LEGACY_MANIFEST = "engram-local.json"  # version 1 packs as first shipped


class FormatError(ValueError):
    """The directory or a file in it is not a valid pack of format version 1."""


def _fp8_e4m3_table():
    """float32 value of every F8_E4M3 (e4m3fn) byte: bias 7, no infinities, 0x7F/0xFF NaN."""
    b = np.arange(256, dtype=np.uint32)
    sign = np.where(b & 0x80, -1.0, 1.0)
    exp = ((b >> 3) & 0xF).astype(np.int32)
    man = (b & 0x7).astype(np.float64)
    normal = (1.0 + man / 8.0) * np.exp2(exp - 7)
    subnormal = (man / 8.0) * np.exp2(-6.0)
    v = sign * np.where(exp == 0, subnormal, normal)
    v[(b & 0x7F) == 0x7F] = np.nan
    return v.astype(np.float32)


def _e8m0_table():
    """float32 value of every F8_E8M0 byte: 2^(e - 127); 0xFF is NaN."""
    e = np.arange(256, dtype=np.float64)
    v = np.exp2(e - 127.0)
    v[255] = np.nan
    return v.astype(np.float32)


FP8_E4M3 = _fp8_e4m3_table()
E8M0 = _e8m0_table()


def _int(entry, key, where):
    v = entry.get(key)
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise FormatError(f"{where}: '{key}' must be a non-negative integer, got {v!r}")
    return v


class PackedLayer:
    """One layer's data file: rows [start, end) of a table of `table_rows` rows."""

    def __init__(self, directory, entry, manifest):
        where = f"{MANIFEST} layer {entry.get('layer')!r}"
        self.layer = _int(entry, "layer", where)
        self.table_rows = _int(entry, "rows", where)
        self.start = _int(entry, "start", where)
        self.end = _int(entry, "end", where)
        self.row_bytes = _int(entry, "rowBytes", where)
        self.stride = _int(entry, "stride", where)
        self.data_offset = _int(entry, "dataOffset", where)
        self.layout = entry.get("layout")
        self.file = entry.get("file")
        checksum = entry.get("checksum") or {}
        self.chunk_rows = _int(checksum, "chunkRows", where + " checksum")
        self.checksums = list(checksum.get("values") or [])
        if checksum.get("algorithm") != "crc32":
            raise FormatError(f"{where}: checksum algorithm {checksum.get('algorithm')!r} is not crc32")
        if not (self.start <= self.end <= self.table_rows):
            raise FormatError(f"{where}: range [{self.start}, {self.end}) is outside {self.table_rows} rows")
        if self.row_bytes % 33 != 0 or self.stride != self.row_bytes or self.data_offset != HEADER_BYTES:
            raise FormatError(f"{where}: rowBytes/stride/dataOffset are not those of format version 1")
        if self.layout not in ("dense", "page"):
            raise FormatError(f"{where}: unknown layout {self.layout!r}")
        if not isinstance(self.file, str) or "/" in self.file:
            raise FormatError(f"{where}: bad file name {self.file!r}")
        self.dim = self.row_bytes * 32 // 33
        self.scale_bytes = self.dim // 32
        self.count = self.end - self.start
        self.rows_per_page = PAGE_BYTES // self.row_bytes
        if self.layout == "page":
            self.data_bytes = -(-self.count // self.rows_per_page) * PAGE_BYTES
        else:
            self.data_bytes = self.count * self.row_bytes
        self.path = os.path.join(directory, self.file)
        size = os.path.getsize(self.path)
        if size != HEADER_BYTES + self.data_bytes:
            raise FormatError(f"{self.path}: {size} bytes, the layout implies {HEADER_BYTES + self.data_bytes}")
        self._data = np.memmap(self.path, dtype=np.uint8, mode="r")
        header = json.loads(bytes(self._data[:HEADER_BYTES]).decode("utf-8").rstrip(" "))
        for key in ("layer", "rows", "start", "end", "rowBytes", "stride", "dataOffset", "layout"):
            if header.get(key) != entry.get(key):
                raise FormatError(f"{self.path}: header block says {key}={header.get(key)!r}, the manifest {entry.get(key)!r}")
        if (header.get("rank"), header.get("world")) != (manifest.get("rank"), manifest.get("world")):
            raise FormatError(f"{self.path}: header block belongs to another rank")

    def offsets(self, ids):
        """Absolute file offsets of global row ids (KeyError for an id outside [start, end))."""
        ids = np.asarray(ids, dtype=np.int64)
        bad = (ids < self.start) | (ids >= self.end)
        if bad.any():
            raise KeyError(f"layer {self.layer}: id {int(ids[bad][0])} is outside [{self.start}, {self.end})")
        local = ids - self.start
        if self.layout == "page":
            rel = (local // self.rows_per_page) * PAGE_BYTES + (local % self.rows_per_page) * self.stride
        else:
            rel = local * self.stride
        return self.data_offset + rel

    def rows(self, ids):
        """uint8 [n, D + D/32]: weight bytes then scale bytes of each id (a copy)."""
        off = self.offsets(ids)
        return self._data[off[:, None] + np.arange(self.row_bytes, dtype=np.int64)]

    def weights(self, ids):
        return self.rows(ids)[:, : self.dim]

    def scales(self, ids):
        return self.rows(ids)[:, self.dim :]

    def dequantize(self, ids):
        """float32 [n, D]: fp8 weight x 2^(e - 127), one scale byte per 32 columns."""
        r = self.rows(ids)
        w = FP8_E4M3[r[:, : self.dim]]
        s = E8M0[r[:, self.dim :]]
        return w * np.repeat(s, 32, axis=1)

    def chunk_span(self, k):
        """(file offset, byte length) of checksum chunk k."""
        first = k * self.chunk_rows
        n = min(self.chunk_rows, self.count - first)
        if self.layout == "page":
            return (self.data_offset + first // self.rows_per_page * PAGE_BYTES,
                    -(-n // self.rows_per_page) * PAGE_BYTES)
        return self.data_offset + first * self.row_bytes, n * self.row_bytes

    def verify(self):
        """Indices of chunks whose CRC-32 differs from the manifest (empty: all good)."""
        chunks = -(-self.count // self.chunk_rows)
        if len(self.checksums) != chunks:
            raise FormatError(f"{self.path}: {len(self.checksums)} checksums for {chunks} chunks")
        bad = []
        for k in range(chunks):
            off, n = self.chunk_span(k)
            if format(zlib.crc32(memoryview(self._data[off : off + n])), "08x") != self.checksums[k]:
                bad.append(k)
        return bad


class PackedDir:
    """A packed directory: the manifest and one PackedLayer per layer."""

    def __init__(self, directory):
        path = os.path.join(directory, MANIFEST)
        if not os.path.exists(path):
            path = os.path.join(directory, LEGACY_MANIFEST)
        if not os.path.exists(path):
            raise FormatError(f"{directory}: no {MANIFEST}: not a pack (an interrupted pack has none)")
        with open(path, "r", encoding="utf-8") as f:
            self.manifest = json.load(f)
        m = self.manifest
        if m.get("format") != FORMAT or m.get("version") != VERSION:
            raise FormatError(f"{path}: format {m.get('format')!r} version {m.get('version')!r}, want {FORMAT} {VERSION}")
        self.rank = m.get("rank")
        self.world = m.get("world")
        self.split = m.get("split")
        self.layers = {}
        for entry in m.get("layers") or []:
            layer = PackedLayer(directory, entry, m)
            self.layers[layer.layer] = layer

    def layer(self, layer_id):
        if layer_id not in self.layers:
            raise KeyError(f"layer {layer_id} is not in this pack (layers {sorted(self.layers)})")
        return self.layers[layer_id]

    def engram_rows(self):
        """The SPARK_ENGRAM_ROWS value this pack serves, e.g. '1:0-96001542,14:0-96004170'."""
        return ",".join(f"{l.layer}:{l.start}-{l.end}" for l in sorted(self.layers.values(), key=lambda l: l.layer))


def main(argv=None):
    p = argparse.ArgumentParser(description="Read rows from a spark packed Engram directory.")
    p.add_argument("dir")
    p.add_argument("--layer", type=int)
    p.add_argument("--ids", help="comma-separated global row ids")
    p.add_argument("--dequant", action="store_true", help="add the dequantized values")
    p.add_argument("--verify", action="store_true", help="check every chunk checksum")
    a = p.parse_args(argv)
    try:
        pack = PackedDir(a.dir)
        if a.verify:
            bad = {l.layer: l.verify() for l in pack.layers.values()}
            for layer_id, chunks in bad.items():
                if chunks:
                    print(f"{pack.layers[layer_id].file}: layer {layer_id}: chunk {chunks[0]} fails its checksum", file=sys.stderr)
            print(json.dumps({"ok": not any(bad.values()), "badChunks": {str(k): v for k, v in bad.items()}}))
            return 0 if not any(bad.values()) else 1
        if a.layer is None or a.ids is None:
            p.error("--layer and --ids are required unless --verify")
        layer = pack.layer(a.layer)
        ids = np.array([int(x) for x in a.ids.split(",") if x.strip() != ""], dtype=np.int64)
        rows = layer.rows(ids)
        out = []
        values = layer.dequantize(ids) if a.dequant else None
        for i, row_id in enumerate(ids.tolist()):
            row = {"id": row_id, "weight": rows[i, : layer.dim].tobytes().hex(), "scale": rows[i, layer.dim :].tobytes().hex()}
            if values is not None:
                row["values"] = [float(v) for v in values[i]]
            out.append(row)
        print(json.dumps({"layer": a.layer, "rows": out}))
        return 0
    except (FormatError, KeyError) as e:
        print(f"spark_engram_reader: {e.args[0] if e.args else e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
