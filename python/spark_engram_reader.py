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
"""

import argparse
import json
import mmap
import os
import re
import stat
import struct
import sys
import zlib

import numpy as np

PACK_FORMAT = "spark-engram-packed"
PACK_VERSION = 1
SPARSE_FORMAT = "spark-engram-sparse"
SPARSE_VERSION = 1
HEADER_BYTES = 4096
PAGE_BYTES = 4096
PACK_MANIFEST = "spark-pack.json"
LOCAL_MANIFEST = "engram-local.json"
INDEX = "model.safetensors.index.json"
MAX_JSON_BYTES = 256 << 20
MAX_HEADER_BYTES = 100_000_000


class FormatError(ValueError):
    """The directory or a file in it is damaged or not what it claims to be (exit 2)."""


class HoleError(FormatError):
    """A row inside a sparse copy's range lies in a hole: the copy is damaged (--verify: exit 1)."""


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
    v = np.exp2(np.arange(256, dtype=np.float64) - 127.0)
    v[255] = np.nan
    return v.astype(np.float32)


FP8_E4M3 = _fp8_e4m3_table()
E8M0 = _e8m0_table()


# ---- checked reading of files and fields ---------------------------------------------------

def _regular_size(path):
    """Size of a regular file; anything else (missing, a directory, a FIFO) is a FormatError."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise FormatError(f"{path}: is missing") from None
    if not stat.S_ISREG(st.st_mode):
        raise FormatError(f"{path}: is not a regular file")
    return st.st_size


def _read_json(path, what):
    size = _regular_size(path)
    if size > MAX_JSON_BYTES:
        raise FormatError(f"{path}: {size} bytes is too large for {what}")
    with open(path, "rb") as f:
        data = f.read(MAX_JSON_BYTES + 1)
    return _parse_json(data, path, what)


def _parse_json(data, path, what):
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FormatError(f"{path}: {what} is not valid UTF-8 (byte {e.start})") from None
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError) as e:
        raise FormatError(f"{path}: {what} is not valid JSON ({e})") from None


def _obj(v, where):
    if not isinstance(v, dict):
        raise FormatError(f"{where} must be a JSON object")
    return v


def _int(v, where, minimum=0):
    if not isinstance(v, int) or isinstance(v, bool) or v < minimum:
        raise FormatError(f"{where} must be a whole number >= {minimum}, got {v!r}")
    return v


def _plain_name(v, where):
    if not isinstance(v, str) or v == "" or "/" in v or "\\" in v or v.startswith(".") or "\0" in v:
        raise FormatError(f"{where} must be a plain file name inside the directory, got {v!r}")
    return v


class _Mapped:
    """A whole file mapped read-only with MADV_RANDOM, after its size is checked against `need`."""

    def __init__(self, path, need):
        self.path = path
        self.size = _regular_size(path)
        if self.size < need or self.size == 0:
            raise FormatError(f"{path}: {self.size} bytes, the tables it holds need {need} (truncated)")
        with open(path, "rb") as f:
            self.map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        if hasattr(self.map, "madvise"):
            # Random ids: read-around would fault in pages nobody asked for.
            self.map.madvise(mmap.MADV_RANDOM)

    def view(self, offset, shape, strides=None):
        return np.ndarray(shape, dtype=np.uint8, buffer=self.map, offset=offset, strides=strides)


def _check_ids(ids, lo, hi, where):
    """ids as an int64 array; an id outside [lo, hi) is a FormatError naming the range."""
    arr = np.asarray(ids)
    if arr.ndim != 1 or (arr.size and not np.issubdtype(arr.dtype, np.integer)):
        raise FormatError("ids must be a list of whole numbers")
    arr = arr.astype(np.int64, copy=False)
    bad = (arr < lo) | (arr >= hi)
    if bad.any():
        raise FormatError(f"{where}: id {int(arr[bad][0])} is outside this copy's range [{lo}, {hi})")
    return arr


class _Layer:
    """What both kinds of layer share: dequantization from rows()."""

    def weights(self, ids):
        return self.rows(ids)[:, : self.dim]

    def scales(self, ids):
        return self.rows(ids)[:, self.dim :]

    def dequantize(self, ids):
        """float32 [n, D]: fp8 weight x 2^(e - 127), one scale byte per 32 columns."""
        r = self.rows(ids)
        return FP8_E4M3[r[:, : self.dim]] * np.repeat(E8M0[r[:, self.dim :]], 32, axis=1)


# ---- packs (dense / page) -----------------------------------------------------------------

class PackedLayer(_Layer):
    """One layer's data file: rows [start, end) of a table of `table_rows` rows."""

    def __init__(self, directory, entry, manifest, where):
        entry = _obj(entry, where)
        self.layer = _int(entry.get("layer"), f"{where}.layer")
        where = f"{where} (layer {self.layer})"
        self.table_rows = _int(entry.get("rows"), f"{where}.rows", 1)
        self.start = _int(entry.get("start"), f"{where}.start")
        self.end = _int(entry.get("end"), f"{where}.end")
        self.row_bytes = _int(entry.get("rowBytes"), f"{where}.rowBytes", 33)
        self.stride = _int(entry.get("stride"), f"{where}.stride", 1)
        self.data_offset = _int(entry.get("dataOffset"), f"{where}.dataOffset")
        self.layout = entry.get("layout")
        self.file = _plain_name(entry.get("file"), f"{where}.file")
        checksum = _obj(entry.get("checksum"), f"{where}.checksum")
        if checksum.get("algorithm") != "crc32":
            raise FormatError(f"{where}: checksum algorithm {checksum.get('algorithm')!r} is not crc32")
        self.chunk_rows = _int(checksum.get("chunkRows"), f"{where}.checksum.chunkRows", 1)
        self.checksums = checksum.get("values")
        if not isinstance(self.checksums, list) or not all(isinstance(v, str) for v in self.checksums):
            raise FormatError(f"{where}.checksum.values must be a list of hex strings")
        if not self.start <= self.end <= self.table_rows:
            raise FormatError(f"{where}: range [{self.start}, {self.end}) is outside {self.table_rows} rows")
        if self.row_bytes % 33 != 0 or self.stride != self.row_bytes or self.data_offset != HEADER_BYTES:
            raise FormatError(f"{where}: rowBytes/stride/dataOffset are not those of format version 1")
        if self.layout not in ("dense", "page") or (self.layout == "page" and self.row_bytes > PAGE_BYTES):
            raise FormatError(f"{where}: layout {self.layout!r} is not dense or page (for rows of {self.row_bytes} bytes)")
        self.dim = self.row_bytes * 32 // 33
        self.count = self.end - self.start
        self.rows_per_page = PAGE_BYTES // self.row_bytes
        if self.layout == "page":
            self.pages = -(-self.count // self.rows_per_page)
            self.data_bytes = self.pages * PAGE_BYTES
        else:
            self.data_bytes = self.count * self.row_bytes
        self.path = os.path.join(directory, self.file)
        size = _regular_size(self.path)
        if size != HEADER_BYTES + self.data_bytes:
            raise FormatError(f"{self.path}: {size} bytes, the layout implies {HEADER_BYTES + self.data_bytes}")
        self._file = _Mapped(self.path, HEADER_BYTES + self.data_bytes)
        block = bytes(self._file.map[:HEADER_BYTES])
        header = _obj(_parse_json(block.rstrip(b" "), self.path, "the header block"), f"{self.path}: the header block")
        for key in ("layer", "rows", "start", "end", "rowBytes", "stride", "dataOffset", "layout"):
            if header.get(key) != entry.get(key):
                raise FormatError(f"{self.path}: header block says {key}={header.get(key)!r}, the manifest {entry.get(key)!r}")
        if (header.get("rank"), header.get("world")) != (manifest.get("rank"), manifest.get("world")):
            raise FormatError(f"{self.path}: header block belongs to another rank")
        if self.count == 0:
            self._rows = None
        elif self.layout == "page":
            self._rows = self._file.view(HEADER_BYTES, (self.pages, self.rows_per_page, self.row_bytes), (PAGE_BYTES, self.stride, 1))
        else:
            self._rows = self._file.view(HEADER_BYTES, (self.count, self.row_bytes), (self.stride, 1))

    def rows(self, ids):
        """uint8 [n, D + D/32]: weight bytes then scale bytes of each global id (a copy)."""
        local = _check_ids(ids, self.start, self.end, f"{self.path}: layer {self.layer}") - self.start
        if local.size == 0:
            return np.empty((0, self.row_bytes), dtype=np.uint8)
        if self.layout == "page":
            return self._rows[local // self.rows_per_page, local % self.rows_per_page]
        return self._rows[local]

    def chunk_span(self, k):
        """(file offset, byte length) of checksum chunk k."""
        first = k * self.chunk_rows
        n = min(self.chunk_rows, self.count - first)
        if self.layout == "page":
            return (self.data_offset + first // self.rows_per_page * PAGE_BYTES, -(-n // self.rows_per_page) * PAGE_BYTES)
        return self.data_offset + first * self.row_bytes, n * self.row_bytes

    def verify(self):
        """Indices of chunks whose CRC-32 differs from the manifest (empty: all good)."""
        chunks = -(-self.count // self.chunk_rows)
        if len(self.checksums) != chunks:
            raise FormatError(f"{self.path}: {len(self.checksums)} checksums for {chunks} chunks")
        bad = []
        for k in range(chunks):
            off, n = self.chunk_span(k)
            if format(zlib.crc32(self._file.map[off : off + n]), "08x") != self.checksums[k]:
                bad.append(k)
        return bad


class PackedDir:
    """A dense/page pack: the manifest and one PackedLayer per layer."""

    kind = "packed"

    def __init__(self, directory, path=None, manifest=None):
        if path is None:
            path = os.path.join(directory, PACK_MANIFEST)
            if not os.path.lexists(path):
                path = os.path.join(directory, LOCAL_MANIFEST)
            manifest = _read_json(path, "the manifest")
        m = _obj(manifest, path)
        if m.get("format") != PACK_FORMAT or m.get("version") != PACK_VERSION:
            raise FormatError(f"{path}: format {m.get('format')!r} version {m.get('version')!r}, want {PACK_FORMAT} {PACK_VERSION}")
        self.manifest = m
        self.rank = _int(m.get("rank"), f"{path}: rank")
        self.world = _int(m.get("world"), f"{path}: world", 1)
        self.split = m.get("split")
        entries = m.get("layers")
        if not isinstance(entries, list) or not entries:
            raise FormatError(f"{path}: layers must be a non-empty list")
        self.layers = {}
        for i, entry in enumerate(entries):
            layer = PackedLayer(directory, entry, m, f"{path}: layers[{i}]")
            self.layers[layer.layer] = layer

    def layer(self, layer_id):
        if layer_id not in self.layers:
            raise FormatError(f"layer {layer_id} is not in this copy (layers {sorted(self.layers)})")
        return self.layers[layer_id]

    def engram_rows(self):
        """The SPARK_ENGRAM_ROWS value this copy serves, e.g. '1:0:96001542,14:0:96004170'."""
        return ",".join(f"{l.layer}:{l.start}:{l.end}" for l in sorted(self.layers.values(), key=lambda l: l.layer))

    def verify(self):
        bad = {}
        for l in self.layers.values():
            chunks = l.verify()
            if chunks:
                bad[l.layer] = f"{l.file}: layer {l.layer}: chunk {chunks[0]} fails its checksum"
        return {"ok": not bad, "checksums": True, "problems": list(bad.values())}


# ---- sparse copies ------------------------------------------------------------------------

def _safetensors_header(path):
    """(8 + N, the header JSON object) of a shard, checked as the reference reader checks it."""
    size = _regular_size(path)
    if size < 8:
        raise FormatError(f"{path}: {size} bytes is too short for a safetensors header")
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        if n > MAX_HEADER_BYTES or 8 + n > size:
            raise FormatError(f"{path}: header length {n} is past the file's {size} bytes or the 100 MB limit")
        data = f.read(n)
    if len(data) != n:
        raise FormatError(f"{path}: the header was cut short")
    header = _obj(_parse_json(data.rstrip(b" "), path, "the safetensors header"), f"{path}: the safetensors header")
    return 8 + n, header


def _tensor(header, name, path, dtype, width):
    """(data offset, rows, columns) of a 2-D one-byte tensor, checked."""
    t = _obj(header.get(name), f"{path}: tensor {name!r}")
    if t.get("dtype") != dtype:
        raise FormatError(f"{path}: tensor {name!r} has dtype {t.get('dtype')!r}, want {dtype}")
    shape, offsets = t.get("shape"), t.get("data_offsets")
    if not (isinstance(shape, list) and len(shape) == 2 and isinstance(offsets, list) and len(offsets) == 2):
        raise FormatError(f"{path}: tensor {name!r} needs a 2-D shape and two data_offsets")
    rows, cols = (_int(v, f"{path}: tensor {name!r} shape") for v in shape)
    a, b = (_int(v, f"{path}: tensor {name!r} data_offsets") for v in offsets)
    if width is not None and cols != width:
        raise FormatError(f"{path}: tensor {name!r} has {cols} columns, want {width}")
    if b - a != rows * cols:
        raise FormatError(f"{path}: tensor {name!r} spans {b - a} bytes, its shape needs {rows * cols}")
    return a, rows, cols


def _first_hole(path, start, end):
    """First byte of [start, end) in a hole, or None (also when the filesystem cannot tell)."""
    if start >= end:
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        at = os.lseek(fd, start, os.SEEK_HOLE)
    except OSError as e:
        import errno
        if e.errno == errno.ENXIO:
            return start
        if e.errno == errno.EINVAL:
            return None
        raise
    finally:
        os.close(fd)
    return at if at < end else None


class SparseLayer(_Layer):
    """One layer of a sparse copy: global ids [start, end) of a table, read from two columns."""

    def __init__(self, directory, weight_map, layer, span, maps):
        self.layer = layer
        where = f"{LOCAL_MANIFEST}: layers.{layer}"
        if not (isinstance(span, list) and len(span) == 2):
            raise FormatError(f"{where} must be [lo, hi]")
        self.start, self.end = (_int(v, where) for v in span)
        if self.start > self.end:
            raise FormatError(f"{where}: [{self.start}, {self.end}) has lo > hi")
        names = {}
        for part in ("weight", "scale"):
            for name in (f"layers.{layer}.engram.embed.{part}", f"model.layers.{layer}.engram.embed.{part}"):
                if name in weight_map:
                    names[part] = (name, _plain_name(weight_map[name], f"{INDEX}: weight_map[{name!r}]"))
                    break
            else:
                raise FormatError(f"{INDEX}: no layers.{layer}.engram.embed.{part} in weight_map")
        columns = {}
        for part, dtype in (("weight", "F8_E4M3"), ("scale", "F8_E8M0")):
            name, shard = names[part]
            path = os.path.join(directory, shard)
            base, header = _safetensors_header(path)
            width = None if part == "weight" else self.dim // 32
            a, rows, cols = _tensor(header, name, path, dtype, width)
            if part == "weight":
                if cols == 0 or cols % 32:
                    raise FormatError(f"{path}: tensor {name!r} has {cols} columns, not a positive multiple of 32")
                self.dim, self.table_rows = cols, rows
            elif rows != self.table_rows:
                raise FormatError(f"{path}: tensor {name!r} has {rows} rows, the weight {self.table_rows}")
            columns[part] = (path, base + a, cols)
        if self.end > self.table_rows:
            raise FormatError(f"{where}: [{self.start}, {self.end}) is not inside the table [0, {self.table_rows})")
        self.row_bytes = self.dim + self.dim // 32
        self.path = columns["weight"][0]
        views = {}
        for part, (path, offset, cols) in columns.items():
            need = offset + self.table_rows * cols
            if path not in maps:
                maps[path] = _Mapped(path, need)
            elif maps[path].size < need:
                raise FormatError(f"{path}: {maps[path].size} bytes, the tables it holds need {need} (truncated)")
            hole = _first_hole(path, offset + self.start * cols, offset + self.end * cols)
            if hole is not None:
                raise HoleError(
                    f"{path}: layer {layer}: {part} of row {(hole - offset) // cols} is a hole inside the copy's "
                    f"range [{self.start}, {self.end}): the copy is damaged or incomplete"
                )
            views[part] = maps[path].view(offset, (self.table_rows, cols)) if self.table_rows else None
        self._weight, self._scale = views["weight"], views["scale"]

    def rows(self, ids):
        """uint8 [n, D + D/32]: weight bytes then scale bytes of each global id (a copy)."""
        ids = _check_ids(ids, self.start, self.end, f"{self.path}: layer {self.layer}")
        out = np.empty((ids.size, self.row_bytes), dtype=np.uint8)
        if ids.size:
            out[:, : self.dim] = self._weight[ids]
            out[:, self.dim :] = self._scale[ids]
        return out

    def bad_chunks(self, table):
        """Chunks whose CRC-32 (weight rows, then scale rows) differs from spark's manifest."""
        where = f"{LOCAL_MANIFEST}: spark.tables (layer {self.layer})"
        checksum = _obj(table.get("checksum"), f"{where}.checksum")
        chunk_rows = _int(checksum.get("chunkRows"), f"{where}.checksum.chunkRows", 1)
        values = checksum.get("values")
        chunks = -(-(self.end - self.start) // chunk_rows)
        if not isinstance(values, list) or len(values) != chunks:
            raise FormatError(f"{where}.checksum.values must list {chunks} CRC-32s")
        bad = []
        for k in range(chunks):
            a = self.start + k * chunk_rows
            b = min(a + chunk_rows, self.end)
            crc = zlib.crc32(self._scale[a:b].tobytes(), zlib.crc32(self._weight[a:b].tobytes()))
            if format(crc, "08x") != values[k]:
                bad.append(k)
        return bad


class SparseCopy:
    """A sparse copy (spark's, or the overlay's engram_local.py's): one SparseLayer per manifest layer."""

    kind = "sparse"

    def __init__(self, directory, manifest):
        self.directory = directory
        self.manifest = manifest
        spark = manifest.get("spark")
        self.spark = _obj(spark, f"{LOCAL_MANIFEST}: spark") if spark is not None else None
        if self.spark is not None and (self.spark.get("format") != SPARSE_FORMAT or self.spark.get("version") != SPARSE_VERSION):
            raise FormatError(f"{LOCAL_MANIFEST}: spark.format/version are not {SPARSE_FORMAT} {SPARSE_VERSION}")
        index = _obj(_read_json(os.path.join(directory, INDEX), "the index"), INDEX)
        weight_map = _obj(index.get("weight_map"), f"{INDEX}: weight_map")
        spans = manifest["layers"]
        if not spans:
            raise FormatError(f"{LOCAL_MANIFEST}: layers is empty")
        maps = {}
        self.layers = {}
        for key in sorted(spans, key=lambda k: int(k) if re.fullmatch(r"\d{1,9}", k) else -1):
            if not re.fullmatch(r"0|[1-9]\d{0,8}", key):
                raise FormatError(f"{LOCAL_MANIFEST}: layers must be keyed by layer numbers, got {key!r}")
            self.layers[int(key)] = SparseLayer(directory, weight_map, int(key), spans[key], maps)

    layer = PackedDir.layer
    engram_rows = PackedDir.engram_rows

    def verify(self):
        """Checksums when spark made the copy (holes inside the ranges were refused at open)."""
        if self.spark is None:
            return {"ok": True, "checksums": False, "problems": [],
                    "note": "made by another tool (no spark key): no checksums; checked that no row of the ranges is a hole"}
        problems = []
        tables = self.spark.get("tables")
        if not isinstance(tables, list):
            raise FormatError(f"{LOCAL_MANIFEST}: spark.tables must be a list")
        for table in tables:
            layer = self.layers.get(_obj(table, f"{LOCAL_MANIFEST}: spark.tables[]").get("layer"))
            if layer is None:
                raise FormatError(f"{LOCAL_MANIFEST}: spark.tables names layer {table.get('layer')!r}, which layers does not")
            bad = layer.bad_chunks(table)
            if bad:
                problems.append(f"{os.path.basename(layer.path)}: layer {layer.layer}: chunk {bad[0]} fails its checksum")
        return {"ok": not problems, "checksums": True, "problems": problems}


def open_dir(directory):
    """The copy at `directory`: a SparseCopy or a PackedDir, told apart by their manifests."""
    if not os.path.isdir(directory):
        raise FormatError(f"{directory}: is not a directory")
    pack = os.path.join(directory, PACK_MANIFEST)
    if os.path.lexists(pack):
        return PackedDir(directory, pack, _read_json(pack, "the manifest"))
    local = os.path.join(directory, LOCAL_MANIFEST)
    if not os.path.lexists(local):
        raise FormatError(f"{directory}: has neither {PACK_MANIFEST} nor {LOCAL_MANIFEST}: not a copy (an interrupted pack has none)")
    m = _obj(_read_json(local, "the manifest"), local)
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
