"""Packs (dense / page): a manifest and one data file per layer (docs/packed-format.md); and
the Mia stack's own shards without a manifest, read through a manifest made from their headers."""

import os
import re
import struct
import zlib

import numpy as np

from . import checked
from .checked import (
    HEADER_BYTES,
    LOCAL_MANIFEST,
    MIA_MAGIC,
    MIA_SHARD_NAME,
    PACK_FORMAT,
    PACK_MANIFEST,
    PACK_VERSIONS,
    PAGE_BYTES,
    FormatError,
)

NO_CHECKSUMS = "none"  # an entry made from a Mia shard: its packer writes no checksums
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
        self.has_checksums = not (manifest.get("_mia") and checksum.get("algorithm") == NO_CHECKSUMS)
        if self.has_checksums and checksum.get("algorithm") != "crc32":
            raise FormatError(f"{where}: checksum algorithm {checksum.get('algorithm')!r} is not crc32")
        self.chunk_rows = checked._int(checksum.get("chunkRows"), f"{where}.checksum.chunkRows", 1)
        self.checksums = checksum.get("values")
        if not isinstance(self.checksums, list) or not all(isinstance(v, str) for v in self.checksums):
            raise FormatError(f"{where}.checksum.values must be a list of hex strings")
        if not self.start <= self.end <= self.table_rows:
            raise FormatError(f"{where}: range [{self.start}, {self.end}) is outside {self.table_rows} rows")
        if self.row_bytes % 33 != 0 or self.stride != self.row_bytes or self.data_offset != HEADER_BYTES:
            raise FormatError(f"{where}: rowBytes/stride/dataOffset are not those of the format")
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
        if manifest.get("version") == 2 and self.layout == "dense":
            self._check_mia_header(block)
        else:
            self._check_json_header(block, entry, manifest)
        if self.count == 0:
            self._rows = None
        elif self.layout == "page":
            self._rows = self._file.view(HEADER_BYTES, (self.pages, self.rows_per_page, self.row_bytes), (PAGE_BYTES, self.stride, 1))
        else:
            self._rows = self._file.view(HEADER_BYTES, (self.count, self.row_bytes), (self.stride, 1))

    def _check_mia_header(self, block):
        fields = struct.unpack_from("<6Q", block, 0)
        want = (MIA_MAGIC, self.layer, self.start, self.end, self.table_rows, self.row_bytes)
        names = ("magic", "layer", "lo", "hi", "N", "row bytes")
        for name, got, expect in zip(names, fields, want):
            if got != expect:
                raise FormatError(f"{self.path}: Mia shard header says {name}={got:#x}, expected {expect:#x}" if name == "magic" else f"{self.path}: Mia shard header says {name}={got}, expected {expect}")
        if any(block[48:HEADER_BYTES]):
            raise FormatError(f"{self.path}: Mia shard header bytes 48-4095 are not zero")

    def _check_json_header(self, block, entry, manifest):
        header = checked._obj(checked._parse_json(block.rstrip(b" "), self.path, "the header block"), f"{self.path}: the header block")
        for key in ("layer", "rows", "start", "end", "rowBytes", "stride", "dataOffset", "layout"):
            if header.get(key) != entry.get(key):
                raise FormatError(f"{self.path}: header block says {key}={header.get(key)!r}, the manifest {entry.get(key)!r}")
        if (header.get("rank"), header.get("world")) != (manifest.get("rank"), manifest.get("world")):
            raise FormatError(f"{self.path}: header block belongs to another rank")

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
        """Indices of chunks whose CRC-32 differs from the manifest (empty: all good, or none to check)."""
        if not self.has_checksums:
            return []
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
        if m.get("format") != PACK_FORMAT or m.get("version") not in PACK_VERSIONS:
            raise FormatError(f"{path}: format {m.get('format')!r} version {m.get('version')!r}, want {PACK_FORMAT} version 1 or 2")
        self.manifest = m
        self.directory = directory
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
        problems = list(bad.values())
        if self.manifest.get("version") == 1:
            problems.append(f"{self.directory}: a spark pack of format version 1: the Mia stack's reader aborts on its files; re-pack it with spark pack ... --layout dense --force")
        return {"ok": not problems, "checksums": not self.manifest.get("_mia"), "problems": problems}


def not_rank_range(lo, hi, rows, rank, world):
    """Why rows [lo, hi) of a table of `rows` cannot be rank `rank` of `world`'s under any split
    the Mia stack uses (None: they can be). The floor split's share is; the vLLM lane's heads
    share cannot be told without config.json, but under every split rank 0's rows start at 0 and
    the last rank's end at N, and another rank's floor share is a shard under the wrong name
    (the same rule as spark's TypeScript readers, src/stacks/mia/mia-dir.ts)."""
    if rank >= world:
        return f"its name says rank {rank} of {world}, which is no rank"
    if (lo, hi) == (rows * rank // world, rows * (rank + 1) // world):
        return None
    share = next(((r, w) for w in range(1, 17) for r in range(w) if (lo, hi) == (rows * r // w, rows * (r + 1) // w)), None)
    whose = f"rank {share[0]} of {share[1]}'s floor share" if share else ""
    if rank == 0 and lo != 0:
        return f"header rows [{lo}, {hi}) start at {lo}, but rank 0's rows start at 0 under every split"
    if rank == world - 1 and hi != rows:
        return f"header rows [{lo}, {hi}) end at {hi}, but the last rank's rows end at the table's {rows} under every split"
    if whose:
        return f"header rows [{lo}, {hi}) are {whose}, not rank {rank} of {world}'s: another rank's shard under this name"
    return None


def mia_manifest(directory):
    """The Mia stack's shards in `directory` (no manifest) as a version 2 dense manifest without
    checksums, from their names and headers; None when there are none."""
    names = sorted(n for n in os.listdir(directory) if re.fullmatch(MIA_SHARD_NAME, n))
    if not names:
        return None
    layers, ranks = [], set()
    for name in names:
        layer, rank, world = (int(g) for g in re.fullmatch(MIA_SHARD_NAME, name).groups())
        ranks.add((rank, world))
        path = os.path.join(directory, name)
        if checked._regular_size(path) < 48:
            raise FormatError(f"{path}: shorter than a Mia shard header")
        with open(path, "rb") as f:
            magic, h_layer, lo, hi, rows, row_bytes = struct.unpack("<6Q", f.read(48))
        if magic != MIA_MAGIC:
            raise FormatError(f"{path}: magic {magic:#x} is not the Mia shard's (a pack of spark format version 1? re-pack it)")
        if h_layer != layer:
            raise FormatError(f"{path}: header says layer {h_layer}, its name {layer}")
        why = not_rank_range(lo, hi, rows, rank, world)
        if why:
            raise FormatError(f"{path}: {why}: the Mia stack's reader aborts on it; re-pack it")
        layers.append({
            "layer": layer, "rows": rows, "start": lo, "end": hi, "file": name, "rowBytes": row_bytes, "stride": row_bytes,
            "dataOffset": HEADER_BYTES, "weightDtype": "F8_E4M3", "scaleDtype": "F8_E8M0", "layout": "dense",
            "checksum": {"algorithm": NO_CHECKSUMS, "chunkRows": max(1, hi - lo), "values": []},
        })
    if len(ranks) != 1:
        raise FormatError(f"{directory}: holds Mia shards of several ranks: point at one rank's directory")
    rank, world = ranks.pop()
    layers.sort(key=lambda e: e["layer"])
    return {"format": PACK_FORMAT, "version": 2, "rank": rank, "world": world, "split": None, "layers": layers, "_mia": True}
