"""Formats, limits and the checked reading of files and manifest fields: every damaged input
is a FormatError naming the file and the field."""

import json
import mmap
import os
import re
import stat

import numpy as np

PACK_FORMAT = "spark-engram-packed"
PACK_VERSION = 2  # written; versions 1 and 2 are read
PACK_VERSIONS = (1, 2)
SPARSE_FORMAT = "spark-engram-sparse"
SPARSE_VERSION = 1
HEADER_BYTES = 4096
# The Mia stack's packed shard (dense layout of version 2, and the stack's own packs): six
# little-endian uint64 (magic "DSV41EN1", layer, lo, hi, N, row bytes), zeros to 4096.
MIA_MAGIC = 0x31344E4531565344
MIA_SHARD_NAME = r"engram-l([1-9]\d*|0)-r([1-9]\d*|0)of([1-9]\d*)\.bin"
PAGE_BYTES = 4096
PACK_MANIFEST = "spark-pack.json"
LOCAL_MANIFEST = "engram-local.json"
INDEX = "model.safetensors.index.json"
# The index of ~100k tensors is a few MB.
MAX_JSON_BYTES = 256 << 20
MAX_HEADER_BYTES = 100_000_000
# The manifest grammar every reader of a copy shares (docs/packed-format.md, "The manifest
# grammar"; src/engram/manifest-lexicon.ts): the same size cap, depth and key limits as spark's
# own readers, and `spark pack` never writes a manifest past the cap.
MAX_MANIFEST_BYTES = 16 << 20
MAX_MANIFEST_DEPTH = 64
MAX_OBJECT_KEYS = 1024



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


def _parse_json(data, path, what):
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FormatError(f"{path}: {what} is not valid UTF-8 (byte {e.start})") from None
    try:
        return json.loads(text)
    except (json.JSONDecodeError, RecursionError) as e:
        raise FormatError(f"{path}: {what} is not valid JSON ({e})") from None


def _manifest_pairs(path):
    """object_pairs_hook: a key twice in one object (json keeps the last; readers would disagree) or too many keys."""

    def hook(pairs):
        if len(pairs) > MAX_OBJECT_KEYS:
            raise FormatError(f"{path}: an object has more than {MAX_OBJECT_KEYS} keys")
        out = {}
        for k, v in pairs:
            if k in out:
                raise FormatError(f"{path}: the key {json.dumps(k)} appears twice in one object (readers disagree on which one counts)")
            out[k] = v
        return out

    return hook


def _integer_literal(text):
    """parse_int: -0 is no whole number written as digits (made a float, which every _int refuses)."""
    return -0.0 if text == "-0" else int(text)


def _depth(v, limit):
    """Whether v nests objects and arrays deeper than `limit`."""
    if limit < 0:
        return True
    if isinstance(v, dict):
        return any(_depth(x, limit - 1) for x in v.values() if isinstance(x, (dict, list)))
    if isinstance(v, list):
        return any(_depth(x, limit - 1) for x in v if isinstance(x, (dict, list)))
    return False


# A key (a string followed by ':') holding \u0030-\u0039: "\u0031" is layer 1 to json, not to spark.
_ESCAPED_DIGIT_KEY = re.compile(r'"(?:[^"\\]|\\[^u]|\\u(?!003[0-9]))*\\u003[0-9](?:[^"\\]|\\.)*"\s*:')


def _read_manifest(path):
    """A copy's manifest under the shared grammar: size, UTF-8 without BOM, JSON, unique keys, depth."""
    size = _regular_size(path)
    if size > MAX_MANIFEST_BYTES:
        raise FormatError(f"{path}: {size} bytes is more than the {MAX_MANIFEST_BYTES} a manifest may have")
    with open(path, "rb") as f:
        data = f.read(MAX_MANIFEST_BYTES + 1)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise FormatError(f"{path}: the manifest is not valid UTF-8 (byte {e.start})") from None
    try:
        doc = json.loads(text, object_pairs_hook=_manifest_pairs(path), parse_int=_integer_literal,
                         parse_constant=lambda c: _refuse_constant(path, c))
    except (json.JSONDecodeError, RecursionError) as e:
        raise FormatError(f"{path}: the manifest is not valid JSON ({e})") from None
    if _ESCAPED_DIGIT_KEY.search(text):
        raise FormatError(f"{path}: a key spells a digit with an escape (\\u0030-\\u0039); layers are named by their digits as written")
    if _depth(doc, MAX_MANIFEST_DEPTH - 1):
        raise FormatError(f"{path}: the manifest nests objects and arrays deeper than {MAX_MANIFEST_DEPTH}")
    return doc


def _refuse_constant(path, name):
    """NaN and Infinity are Python's extensions to JSON, not JSON."""
    raise FormatError(f"{path}: the manifest is not valid JSON ({name} is not a JSON value)")


def _obj(v, where):
    if not isinstance(v, dict):
        raise FormatError(f"{where} must be a JSON object")
    return v


# The largest count a manifest holds exactly in every reader (a JSON number is a double in Node).
MAX_EXACT = 2**53 - 1


def _int(v, where, minimum=0):
    if not isinstance(v, int) or isinstance(v, bool) or v < minimum:
        raise FormatError(f"{where} must be a whole number >= {minimum}, got {v!r}")
    if v > MAX_EXACT:
        raise FormatError(f"{where} is larger than 2^53 - 1, the largest row or byte count a manifest can hold exactly")
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
