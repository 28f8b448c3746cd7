"""Packs (dense / page): a manifest and one data file per layer (docs/packed-format.md)."""

import os
import zlib

import numpy as np

from . import checked
from .checked import HEADER_BYTES, LOCAL_MANIFEST, PACK_FORMAT, PACK_MANIFEST, PACK_VERSION, PAGE_BYTES, FormatError
from .layer import Copy, _Layer


class PackedLayer(_Layer):
    """One layer's data file: rows [start, end) of a table of `table_rows` rows."""

    def __init__(self, directory, entry, manifest, where):
        entry = checked._obj(entry, where)
        self.layer = checked._int(entry.get("layer"), f"{where}.layer")
        where = f"{where} (layer {self.layer})"
        self.table_rows = checked._int(entry.get("rows"), f"{where}.rows", 1)
        self.start = checked._int(entry.get("start"), f"{where}.start")
        self.end = checked._int(entry.get("end"), f"{where}.end")
        self.row_bytes = checked._int(entry.get("rowBytes"), f"{where}.rowBytes", 33)
        self.stride = checked._int(entry.get("stride"), f"{where}.stride", 1)
        self.data_offset = checked._int(entry.get("dataOffset"), f"{where}.dataOffset")
        self.layout = entry.get("layout")
        self.file = checked._plain_name(entry.get("file"), f"{where}.file")
        checksum = checked._obj(entry.get("checksum"), f"{where}.checksum")
        if checksum.get("algorithm") != "crc32":
            raise FormatError(f"{where}: checksum algorithm {checksum.get('algorithm')!r} is not crc32")
        self.chunk_rows = checked._int(checksum.get("chunkRows"), f"{where}.checksum.chunkRows", 1)
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
        size = checked._regular_size(self.path)
        if size != HEADER_BYTES + self.data_bytes:
            raise FormatError(f"{self.path}: {size} bytes, the layout implies {HEADER_BYTES + self.data_bytes}")
        self._file = checked._Mapped(self.path, HEADER_BYTES + self.data_bytes)
        block = bytes(self._file.map[:HEADER_BYTES])
        header = checked._obj(checked._parse_json(block.rstrip(b" "), self.path, "the header block"), f"{self.path}: the header block")
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
        local = checked._check_ids(ids, self.start, self.end, f"{self.path}: layer {self.layer}") - self.start
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


class PackedDir(Copy):
    """A dense/page pack: the manifest and one PackedLayer per layer."""

    kind = "packed"

    def __init__(self, directory, path=None, manifest=None):
        if path is None:
            path = os.path.join(directory, PACK_MANIFEST)
            if not os.path.lexists(path):
                path = os.path.join(directory, LOCAL_MANIFEST)
            manifest = checked._read_manifest(path)
        m = checked._obj(manifest, path)
        if m.get("format") != PACK_FORMAT or m.get("version") != PACK_VERSION:
            raise FormatError(f"{path}: format {m.get('format')!r} version {m.get('version')!r}, want {PACK_FORMAT} {PACK_VERSION}")
        self.manifest = m
        self.rank = checked._int(m.get("rank"), f"{path}: rank")
        self.world = checked._int(m.get("world"), f"{path}: world", 1)
        self.split = m.get("split")
        entries = m.get("layers")
        if not isinstance(entries, list) or not entries:
            raise FormatError(f"{path}: layers must be a non-empty list")
        self.layers = {}
        for i, entry in enumerate(entries):
            layer = PackedLayer(directory, entry, m, f"{path}: layers[{i}]")
            self.layers[layer.layer] = layer

    def verify(self):
        bad = {}
        for l in self.layers.values():
            chunks = l.verify()
            if chunks:
                bad[l.layer] = f"{l.file}: layer {l.layer}: chunk {chunks[0]} fails its checksum"
        return {"ok": not bad, "checksums": True, "problems": list(bad.values())}
