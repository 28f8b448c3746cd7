"""Formats, limits and the checked reading of files and manifest fields: every damaged input
is a FormatError naming the file and the field."""

import json
import mmap
import os
import stat

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
# The index of ~100k tensors is a few MB; a manifest at most MAX_MANIFEST_BYTES, the cap every
# reader of spark's manifests shares (src/engram/manifest-fields.ts), which `spark pack` never
# writes past.
MAX_JSON_BYTES = 256 << 20
MAX_MANIFEST_BYTES = 16 << 20
MAX_HEADER_BYTES = 100_000_000



class FormatError(ValueError):
    """The directory or a file in it is damaged or not what it claims to be (exit 2)."""


class HoleError(FormatError):
    """A row inside a sparse copy's range lies in a hole: the copy is damaged (--verify: exit 1)."""


def _regular_size(path):
    """Size of a regular file; anything else (missing, a directory, a FIFO) is a FormatError."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise FormatError(f"{path}: is missing") from None
    if not stat.S_ISREG(st.st_mode):
        raise FormatError(f"{path}: is not a regular file")
    return st.st_size


def _read_json(path, what, max_bytes=MAX_JSON_BYTES):
    size = _regular_size(path)
    if size > max_bytes:
        raise FormatError(f"{path}: {size} bytes is too large for {what} (at most {max_bytes})")
    with open(path, "rb") as f:
        data = f.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise FormatError(f"{path}: grew past {max_bytes} bytes while being read: too large for {what}")
    return _parse_json(data, path, what)


def _read_manifest(path):
    return _read_json(path, "the manifest", MAX_MANIFEST_BYTES)


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
