"""spark's engine library beside a stack's own read path, through the same ABI from Python
ctypes as the engine calls it (docs/engine-libs.md):

  python3 bench/engine-libs.py --spark build/Release/libengram_rows.so \
      --baseline LIB [--dir DIR] [--rows N] [--threads 64] [--reps 40]
  python3 bench/engine-libs.py --stack mia --spark build/Release/librow_store.so \
      --baseline LIB [--budget BYTES] [--pack] [--dists uniform,zipf] [--zipf 1.0] ...

The baseline is any library with the stack's ABI: for the overlay,
bench/baselines/overlay-engram-rows/ builds one that reads as the overlay does; for the Mia
stack, a library of its ABI (its own read path). Mia stack: both stores get the same cache
budget (--budget, default 0: no cache) and DSV41_IO_THREADS=--threads; the owned range is the
whole table. Without --pack no pack is attached (the checkpoint path, scales pinned by default):
a table of N rows (256 weight + 8 scale bytes, random) is written to DIR, synced and evicted
from the page cache, and deleted at the end.
With --pack (Mia only) both stores attach one packed shard of layer 14 owning [0, N) after
row_store_range, DSV41_RESIDENT_SCALES=0 as the recipes set with packs: a 4096-byte header of
six little-endian uint64 (magic 0x31344E4531565344, layer, lo, hi, N, 264), zeros to 4096,
then each row's weight(256) and scale(8) back to back, 4096 + N*264 bytes. Both libraries
open a pack O_DIRECT only (attach returning 1 is checked, so the pack is read past the page
cache); the checkpoint is then a sparse file of the right size that no miss reads (the
stats' reads and a byte check of both sides against the pack at the end show it).
--dists: ids drawn uniformly, and/or from a Zipf-like stream (rank k with weight 1/k^--zipf,
repeats within and across batches, ranks scattered over the table by an odd multiplier mod N).
Per line, the stats' hit rate and reads per 1000 ids over that line's calls (spark counts a
repeat within a batch as a hit even with no cache, the baseline reads it again: reads per id
is the figure that compares the two).

cold: every call asks fresh ids of the owned range [0, N) (uniform unless --dists), and before each (untimed)
the baseline's engram_rows_release() drops its mapping and the file's page cache (as the
overlay's governor does 10-15 times in 5 minutes; the baseline then reads weight and scale
pages from the device). spark's library keeps its state: O_DIRECT reads (no page cache), its
scale rows pinned at open, its row cache holding earlier batches' rows (a few percent of the
table: the hit rate is printed). warm: the same batch again, after one untimed call. Both libraries run interleaved call by call, the order alternating.
Prints one line per (batch, cold|warm) with p50/p99 microseconds per call and rows/s at p50,
and the ratio baseline/spark.

--fio-match (the device as the yardstick): before and after each cold line, fio does as many
fresh random 4 KiB reads as spark's batches of that line ask (their distinct rows), at spark's
queue depth (engine_libs_disk.fio_batches: a batch of up to 256 submitted and awaited whole, a
longer one kept 256 deep), as many batches as the line has calls; each side's mean call is
printed against fio's mean batch. Cold stays cold: spark's libraries read O_DIRECT, the
baseline's pages are released before each call, the ids are fresh."""
import argparse
import os
import sys
import time

import numpy as np

import engine_libs_disk as disk
import engine_libs_table as table
from engine_libs_abi import PACK_HEADER, PACK_LAYER, PACK_MAGIC, S, W, MiaSide, Side, load, load_mia


def write_pack(path, rows):
    """The Mia shard of layer PACK_LAYER owning [0, rows), random rows; the checkpoint beside it is sparse."""
    rng = np.random.default_rng(0)
    with open(path, "xb") as f:
        head = np.array([PACK_MAGIC, PACK_LAYER, 0, rows, rows, W + S], "<u8").tobytes()
        f.write(head + bytes(PACK_HEADER - len(head)))
        for at in range(0, rows, 1 << 20):
            f.write(rng.integers(0, 256, size=min(1 << 20, rows - at) * (W + S), dtype=np.uint8).tobytes())
        f.flush()
        os.fsync(f.fileno())
        os.posix_fadvise(f.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    if os.path.getsize(path) != PACK_HEADER + rows * (W + S):
        sys.exit(f"{path}: wrong pack size")


def zipf_stream(rows, s, rng):
    cdf = np.cumsum(1.0 / np.arange(1, rows + 1, dtype=np.float64) ** s)
    cdf /= cdf[-1]
    mult = int(rows * 0.6180339887) | 1  # < rows < 2^31, so rank * mult fits an int64
    while np.gcd(mult, rows) != 1:
        mult += 2

    def draw(n):
        ranks = np.minimum(np.searchsorted(cdf, rng.random(n)), rows - 1).astype(np.int64)
        return (ranks * mult) % rows
    return draw


def check_rows(sides, path, rows, rng, woff, soff, pack):
    """Both sides' rows for the same ids against the file's bytes, read by numpy."""
    if pack:
        body = np.memmap(path, np.uint8, "r", PACK_HEADER, (rows, W + S))
        weights, scales = body[:, :W], body[:, W:]
    else:
        weights = np.memmap(path, np.uint8, "r", woff, (rows, W))
        scales = np.memmap(path, np.uint8, "r", rows * W if soff is None else soff, (rows, S))
    ids = rng.integers(0, rows, 4096).astype(np.int64)
    for s in sides:
        s.call(ids)
        if not (np.array_equal(s.w[:len(ids)], weights[ids]) and np.array_equal(s.s[:len(ids)], scales[ids])):
            sys.exit(f"{s.name}: rows differ from the file")
    return f"{len(ids)} ids byte-exact against {'the pack' if pack else 'the table'} on both sides"


def write_table(path, rows):
    rng = np.random.default_rng(0)
    with open(path, "xb") as f:
        for at in range(0, rows, 1 << 20):
            f.write(rng.integers(0, 256, size=(min(1 << 20, rows - at)) * W, dtype=np.uint8).tobytes())
        f.write(rng.integers(0, 256, size=rows * S, dtype=np.uint8).tobytes())
        f.flush()
        os.fsync(f.fileno())
    fd = os.open(path, os.O_RDONLY)
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def make_sides(a, path, pack, woff, soff):
    if a.stack == "overlay":
        return [Side("baseline", load(a.baseline), path, a.rows, a.threads, 49152, woff, soff),
                Side("spark", load(a.spark), path, a.rows, a.threads, 49152, woff, soff)]
    os.environ["DSV41_IO_THREADS"] = str(a.threads)
    if pack:
        os.environ["DSV41_RESIDENT_SCALES"] = "0"
    return [MiaSide("baseline", load_mia(a.baseline), path, a.rows, a.budget, 49152, pack),
            MiaSide("spark", load_mia(a.spark), path, a.rows, a.budget, 49152, pack)]


def hit_line(s, before, ids_n):
    """Mia: the stats' hit rate and device reads per 1000 ids since `before`."""
    if not before:
        return ""
    d = [x - y for x, y in zip(s.stats(), before)]
    return f"  [{100 * d[0] / max(1, d[0] + d[1]):.1f}% {1000 * d[2] / max(1, ids_n):.0f}]"


def fio_line(a, source, depths):
    """fio's 4 KiB random-read IOPS on the source at each queue depth, now (same run): offsets
    never read before (the device), and at the deepest, offsets fio read in its earlier runs
    (what a re-read of blocks the host still caches costs)."""
    got = [(d, disk.fio_iops(source, d, seconds=a.fio_seconds)) for d in depths]
    again = disk.fio_iops(source, depths[-1], seconds=a.fio_seconds, fresh=False)
    return ("# fio 4k randread O_DIRECT, fresh offsets: " +
            ", ".join(f"qd{d} {v:.0f} IOPS" if v else f"qd{d} n/a" for d, v in got) +
            (f"; offsets read before, qd{depths[-1]}: {again:.0f} IOPS" if again else ""))


def fio_match(a, source, asked, reps):
    """--fio-match, a cold line: (reads, seconds per batch) of fio doing as many fresh random reads
    as spark's batches ask (their distinct rows: what a reader that reads each once must read) at
    spark's queue depth, reps batches; None otherwise."""
    if not a.fio_match or asked is None:
        return None
    reads = round(sum(len(np.unique(ids)) for ids in asked["spark"]) / reps)
    got = disk.fio_batches(source, reads, reps)
    return (reads, got) if got else None


def fio_ratio_line(before, after, times, sides):
    """Each side's mean call against fio's mean batch (fio run just before and just after the line)."""
    reads, t0 = before
    t1 = after[1] if after else t0
    fio_s = (t0 + t1) / 2
    sides_text = "; ".join(f"{s.name} {sum(times[s.name]) / len(times[s.name]) / 1e6:,.1f} ms = "
                           f"{sum(times[s.name]) / len(times[s.name]) / 1e9 / fio_s:.2f}x fio's" for s in sides)
    return (f"# fio, the same reads: {reads} fresh 4 KiB reads a batch at qd {min(reads, disk.AIO_DEPTH)} (libaio, "
            f"O_DIRECT): {fio_s * 1e3:,.1f} ms a batch ({t0 * 1e3:,.1f} before, {t1 * 1e3:,.1f} after); "
            f"mean call: {sides_text}")


def run_cases(a, sides, draws, dists, source):
    dev = disk.DiskStats(source)
    if a.fio_match:
        # Untimed: the first reads of the file after a pause take far longer here (65 against 3 ms a
        # 24-read batch, fio runs seconds apart), which would land on the first line's fio alone.
        disk.fio_batches(source, 256, 4)
    print("batch  dist    mode  side      p50_us    p99_us   rows/s(p50)  baseline/spark(p50)  [hit% reads/1000ids]  "
          "device (all processes)")
    for batch, dist, mode in [(b, d, m) for b in a.batches for d in dists for m in ("cold", "warm")]:
        reps = a.reps if batch < 49152 else max(4, a.reps // 8)
        if a.fio_seconds and mode == "cold":
            # The depths in question: spark's queue holds every read of the batch (up to 256),
            # the baseline's as deep as its threads.
            print(fio_line(a, source, sorted({min(batch, 256), a.threads})))
        times = {s.name: [] for s in sides}
        tally = {s.name: disk.Tally() for s in sides}
        fixed = {s.name: draws[dist](batch) for s in sides}
        before = {s.name: s.stats() for s in sides}
        # What the cold calls asked: the lines' ids, drawn ahead so fio can do as many reads before them.
        asked = {s.name: [draws[dist](batch) for _ in range(reps)] for s in sides} if mode == "cold" else None
        fio_before = fio_match(a, source, asked, reps)
        if mode == "warm":
            for s in sides:
                s.call(fixed[s.name])
        for r in range(reps):
            order = sides if r % 2 == 0 else sides[::-1]
            for s in order:
                ids = fixed[s.name] if asked is None else asked[s.name][r]
                if mode == "cold":
                    s.evict()
                d0 = dev.reads()
                times[s.name].append(s.call(ids))
                tally[s.name].add(d0, dev.reads())
        if fio_before:
            print(fio_ratio_line(fio_before, fio_match(a, source, asked, reps), times, sides))
        p50 = {s.name: pct(times[s.name], 0.5) for s in sides}
        for s in sides:
            t = times[s.name]
            ids_n = len(t) * batch + (batch if mode == "warm" else 0)
            print(f"{batch:6d} {dist:7s} {mode}  {s.name:8s} {pct(t, 0.5) / 1e3:9.1f} {pct(t, 0.99) / 1e3:9.1f} "
                  f"{batch / (pct(t, 0.5) / 1e9):12.0f}" +
                  (f"  {p50['baseline'] / p50['spark']:.2f}x" if s.name == "spark" else "       ") +
                  hit_line(s, before[s.name], ids_n) + "  " + tally[s.name].line())
        sys.stdout.flush()


def soak(a, sides, make_draw, source):
    """The first side alone for --soak seconds, then the second alone for as many calls, on the same
    id stream (so hit rates compare on the same ids): the file's page cache (fincore) and Cached
    before and after, the most resident() said (overlay), calls, p50/p99 and, for Mia, the hit
    rate. The overlay's baseline gets what its governor does: resident() looked at, and
    everything released past --governor bytes, once every --governor-seconds (the baseline's
    resident() is a mincore over the whole owned span: ~0.5 s on a 23.6 GiB table)."""
    calls = None
    for s in sides:
        draw = make_draw()  # the same stream for each side
        disk.drop_cached(source)  # what an earlier side or run left there is not this side's growth
        res0, cached0 = disk.resident_bytes(source), disk.meminfo_cached()
        before, times, peak, releases = s.stats(), [], 0, 0
        start = last = time.monotonic()
        while (time.monotonic() - start < a.soak) if calls is None else len(times) < calls:
            times.append(s.call(draw(a.soak_batch)))
            if a.stack == "overlay" and time.monotonic() - last >= a.governor_seconds:
                last = time.monotonic()
                held = s.resident()
                peak = max(peak, held)
                if s.name == "baseline" and held > a.governor:
                    s.lib.engram_rows_release(s.store)
                    releases += 1
        calls = len(times)
        if a.stack == "overlay":
            peak = max(peak, s.resident())
        res1, cached1 = disk.resident_bytes(source), disk.meminfo_cached()
        grown = "n/a" if res0 is None or res1 is None else f"{(res1 - res0) / 2**20:+.1f} MiB"
        extra = hit_line(s, before, len(times) * a.soak_batch)
        if a.stack == "overlay":
            extra += f"  resident() peak {peak / 2**20:.1f} MiB, releases {releases}"
        print(f"# soak {s.name:8s} {time.monotonic() - start:.0f} s, {len(times)} calls of {a.soak_batch} ({a.dists.split(',')[0]}): "
              f"p50 {pct(times, 0.5) / 1e3:.1f} us p99 {pct(times, 0.99) / 1e3:.1f} us; file page cache {grown}, "
              f"Cached {(cached1 - cached0) / 2**20:+.1f} MiB{extra}")
        sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--stack", choices=("overlay", "mia"), default="overlay")
    ap.add_argument("--budget", type=int, default=0)
    ap.add_argument("--spark", required=True)
    ap.add_argument("--baseline", required=True)
    ap.add_argument("--dir", default=".")
    ap.add_argument("--rows", type=int, default=8 << 20)
    ap.add_argument("--threads", type=int, default=64)
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--pack", action="store_true")
    ap.add_argument("--dists", default="uniform")
    ap.add_argument("--zipf", type=float, default=1.0)
    ap.add_argument("--table", help="a file written by bench/engine_libs_table.py: both stacks read it (--rows from it)")
    ap.add_argument("--batches", default="24,144,49152")
    ap.add_argument("--fio-seconds", type=float, default=0, help="fio at the cases' queue depths before each cold line")
    ap.add_argument("--fio-match", action="store_true",
                    help="fio doing the same number of fresh reads as spark's cold batches at its queue depth, "
                         "before and after each cold line: each side's time against fio's")
    ap.add_argument("--soak", type=float, default=0, help="seconds per side of the page-cache run (no batch table)")
    ap.add_argument("--soak-batch", type=int, default=144)
    ap.add_argument("--governor", type=int, default=4 << 30, help="overlay baseline: release past this resident()")
    ap.add_argument("--governor-seconds", type=float, default=5)
    a = ap.parse_args()
    a.batches = [int(b) for b in a.batches.split(",")]
    if a.pack and a.stack != "mia":
        sys.exit("--pack is for --stack mia")
    dists = a.dists.split(",")
    path = os.path.join(a.dir, f"engine-libs-bench-{os.getpid()}.bin")
    pack = os.path.join(a.dir, f"engine-libs-bench-{os.getpid()}.pack") if a.pack else None
    woff, soff, temp = 0, None, [path]
    if a.table:
        a.rows = (os.path.getsize(a.table) - table.PACK_HEADER) // (W + S)
        if a.stack == "overlay":
            path, temp = a.table, []
            woff, soff = table.offsets(a.rows)
        else:
            pack = a.table
    elif pack:
        temp.append(pack)
    np_rng = np.random.default_rng(2)

    def make_draws(rng):
        d = {"uniform": lambda n: rng.integers(0, a.rows, n).astype(np.int64)}
        if "zipf" in dists:
            d["zipf"] = zipf_stream(a.rows, a.zipf, rng)
        return d
    try:
        if a.stack == "mia" and pack:
            with open(path, "xb") as f:
                f.truncate(a.rows * (W + S))  # the sparse checkpoint no miss reads
            if not a.table:
                write_pack(pack, a.rows)
        elif not a.table:
            write_table(path, a.rows)
        source = pack or path
        sides = make_sides(a, path, pack, woff, soff)
        print(f"# {a.stack} ABI, table {a.rows} rows ({a.rows * (W + S) / 2**30:.2f} GiB), {a.threads} threads, "
              f"budget {a.budget}, {'pack ' + pack if pack else 'file ' + path}, load {os.getloadavg()}")
        if a.soak:
            seed = int(np_rng.integers(1 << 30))
            soak(a, sides, lambda: make_draws(np.random.default_rng(seed))[dists[0]], source)
        else:
            run_cases(a, sides, make_draws(np_rng), dists, source)
            print(f"# {check_rows(sides, source, a.rows, np_rng, woff, soff, pack)}")
        for s in sides:
            print(f"# {s.name} at the end: {s.report()}")
            s.close()
        print(f"# load at the end {os.getloadavg()}")
    finally:
        for f in temp:
            if os.path.exists(f):
                os.unlink(f)


if __name__ == "__main__":
    main()
