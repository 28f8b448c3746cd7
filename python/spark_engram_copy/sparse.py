"""Sparse copies: the overlay's engram-local.json, the index and shards with the rank's rows at
their original offsets and holes elsewhere."""

import errno
import os
import re
import struct
import zlib

import numpy as np

from . import checked
from .checked import INDEX, LOCAL_MANIFEST, MAX_HEADER_BYTES, SPARSE_FORMAT, SPARSE_VERSION, FormatError, HoleError
from .layer import Copy, _Layer


def _safetensors_header(path):
    """(8 + N, the header JSON object) of a shard, checked as the reference reader checks it."""
    size = checked._regular_size(path)
    if size < 8:
        raise FormatError(f"{path}: {size} bytes is too short for a safetensors header")
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        if n > MAX_HEADER_BYTES or 8 + n > size:
            raise FormatError(f"{path}: header length {n} is past the file's {size} bytes or the 100 MB limit")
        data = f.read(n)
    if len(data) != n:
        raise FormatError(f"{path}: the header was cut short")
    header = checked._obj(checked._parse_json(data.rstrip(b" "), path, "the safetensors header"), f"{path}: the safetensors header")
    return 8 + n, header


def _tensor(header, name, path, dtype, width):
    """(data offset, rows, columns) of a 2-D one-byte tensor, checked."""
    t = checked._obj(header.get(name), f"{path}: tensor {name!r}")
    if t.get("dtype") != dtype:
        raise FormatError(f"{path}: tensor {name!r} has dtype {t.get('dtype')!r}, want {dtype}")
    shape, offsets = t.get("shape"), t.get("data_offsets")
    if not (isinstance(shape, list) and len(shape) == 2 and isinstance(offsets, list) and len(offsets) == 2):
        raise FormatError(f"{path}: tensor {name!r} needs a 2-D shape and two data_offsets")
    rows, cols = (checked._int(v, f"{path}: tensor {name!r} shape") for v in shape)
    a, b = (checked._int(v, f"{path}: tensor {name!r} data_offsets") for v in offsets)
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
        self.start, self.end = (checked._int(v, where) for v in span)
        if self.start > self.end:
            raise FormatError(f"{where}: [{self.start}, {self.end}) has lo > hi")
        names = {}
        for part in ("weight", "scale"):
            for name in (f"layers.{layer}.engram.embed.{part}", f"model.layers.{layer}.engram.embed.{part}"):
                if name in weight_map:
                    names[part] = (name, checked._plain_name(weight_map[name], f"{INDEX}: weight_map[{name!r}]"))
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
                maps[path] = checked._Mapped(path, need)
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
        ids = checked._check_ids(ids, self.start, self.end, f"{self.path}: layer {self.layer}")
        out = np.empty((ids.size, self.row_bytes), dtype=np.uint8)
        if ids.size:
            out[:, : self.dim] = self._weight[ids]
            out[:, self.dim :] = self._scale[ids]
        return out

    def bad_chunks(self, table):
        """Chunks whose CRC-32 (weight rows, then scale rows) differs from spark's manifest."""
        where = f"{LOCAL_MANIFEST}: spark.tables (layer {self.layer})"
        checksum = checked._obj(table.get("checksum"), f"{where}.checksum")
        chunk_rows = checked._int(checksum.get("chunkRows"), f"{where}.checksum.chunkRows", 1)
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


class SparseCopy(Copy):
    """A sparse copy (spark's, or the overlay's engram_local.py's): one SparseLayer per manifest layer."""

    kind = "sparse"

    def __init__(self, directory, manifest):
        self.directory = directory
        self.manifest = manifest
        spark = manifest.get("spark")
        self.spark = checked._obj(spark, f"{LOCAL_MANIFEST}: spark") if spark is not None else None
        if self.spark is not None and (self.spark.get("format") != SPARSE_FORMAT or self.spark.get("version") != SPARSE_VERSION):
            raise FormatError(f"{LOCAL_MANIFEST}: spark.format/version are not {SPARSE_FORMAT} {SPARSE_VERSION}")
        index = checked._obj(checked._read_json(os.path.join(directory, INDEX), "the index"), INDEX)
        weight_map = checked._obj(index.get("weight_map"), f"{INDEX}: weight_map")
        spans = manifest["layers"]
        if not spans:
            raise FormatError(f"{LOCAL_MANIFEST}: layers is empty")
        maps = {}
        self.layers = {}
        # ASCII digits only: int() (and \d) also take Unicode digits, spaces, "+" and "_".
        for key in sorted(spans, key=lambda k: int(k) if re.fullmatch(r"[0-9]{1,9}", k) else -1):
            if not re.fullmatch(r"0|[1-9][0-9]{0,8}", key):
                raise FormatError(f"{LOCAL_MANIFEST}: layers must be keyed by layer numbers, got {key!r}")
            self.layers[int(key)] = SparseLayer(directory, weight_map, int(key), spans[key], maps)

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
            layer = self.layers.get(checked._obj(table, f"{LOCAL_MANIFEST}: spark.tables[]").get("layer"))
            if layer is None:
                raise FormatError(f"{LOCAL_MANIFEST}: spark.tables names layer {table.get('layer')!r}, which layers does not")
            bad = layer.bad_chunks(table)
            if bad:
                problems.append(f"{os.path.basename(layer.path)}: layer {layer.layer}: chunk {bad[0]} fails its checksum")
        return {"ok": not problems, "checksums": True, "problems": problems}
