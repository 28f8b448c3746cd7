"""The shared table of bench/engine-libs.py --table: one file that is at once the Mia stack's packed
shard of layer 14 owning [0, N) and the overlay's two-column table.

  python3 bench/engine_libs_table.py PATH ROWS     # writes PATH (must not exist), O_DIRECT

Layout: the Mia pack header (4096 bytes: six little-endian uint64 magic 0x31344E4531565344,
layer 14, lo 0, hi N, N, 264; zeros to 4096), then N * 264 random bytes. Read as a pack, row
id is at 4096 + id * 264 (weight then scale); read as the overlay's table, the same bytes are
the weight column at 4096 (256 B/row) and the scale column at 4096 + N * 256 (8 B/row): both
are random, so the two readings are equally valid, and one file at a rank's real row count
(96,001,542 rows: 25.3 GB) gives both stacks a source larger than the page cache at the real
density of ids over rows without paying the disk twice. Written with O_DIRECT so writing it
does not fill the page cache, then fsynced."""
import mmap
import os
import sys

import numpy as np

W, S = 256, 8
PACK_MAGIC, PACK_LAYER, PACK_HEADER = 0x31344E4531565344, 14, 4096
CHUNK = 64 << 20


def offsets(rows):
    """(weight offset, scale offset) of row 0 for the overlay's reading of the table."""
    return PACK_HEADER, PACK_HEADER + rows * W


def size(rows):
    return PACK_HEADER + rows * (W + S)


def write(path, rows):
    total = size(rows)
    rng = np.random.default_rng(0)
    buf = mmap.mmap(-1, CHUNK)  # page-aligned, as O_DIRECT wants
    words = np.frombuffer(buf, np.uint64)  # the generator's raw output lands in it: no copies
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_DIRECT, 0o644)
    try:
        done = 0
        while done < total:
            n = min(CHUNK, total - done)
            words[:] = rng.bit_generator.random_raw(len(words))
            if done == 0:
                head = np.array([PACK_MAGIC, PACK_LAYER, 0, rows, rows, W + S], "<u8").tobytes()
                buf[:PACK_HEADER] = head + bytes(PACK_HEADER - len(head))
            aligned = (n + 4095) // 4096 * 4096
            buf[n:aligned] = bytes(aligned - n)
            if os.pwrite(fd, memoryview(buf)[:aligned], done) != aligned:
                sys.exit(f"{path}: short write at {done}")
            done += n
            if done % (CHUNK * 32) == 0:
                print(f"{path}: {done / 2**30:.1f} / {total / 2**30:.1f} GiB", flush=True)
        os.ftruncate(fd, total)  # the last block was padded to 4096
        os.fsync(fd)
    finally:
        os.close(fd)
    if os.path.getsize(path) != total:
        sys.exit(f"{path}: wrong size")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    write(sys.argv[1], int(sys.argv[2]))
