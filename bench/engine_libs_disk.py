"""What the device did, for bench/engine-libs.py: /proc/diskstats counters of the disk under a file
(read requests completed, requests the block layer merged, sectors), fio's IOPS at a queue depth
on the same file, and how much of a file is in the page cache (fincore) beside /proc/meminfo's
Cached. Every figure is of the whole disk, so other processes' I/O in the same seconds shows too:
the bench reads them around each call and reports them per side."""
import json
import os
import shutil
import subprocess


def _disk_of(path):
    """The /proc/diskstats name of the block device holding path (the whole disk, not a partition)."""
    dev = os.stat(path).st_dev
    sysdev = f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}"
    real = os.path.realpath(sysdev)
    if os.path.exists(os.path.join(real, "partition")):
        real = os.path.dirname(real)
    return os.path.basename(real)


class DiskStats:
    """Read requests of one disk: reads() -> (completed, merged, sectors) since boot."""

    def __init__(self, path):
        self.name = _disk_of(path)

    def reads(self):
        with open("/proc/diskstats") as f:
            for line in f:
                p = line.split()
                if p[2] == self.name:
                    return int(p[3]), int(p[4]), int(p[5])
        return 0, 0, 0


class Tally:
    """Per side: requests, merges and sectors of the calls counted."""

    def __init__(self):
        self.calls = self.reqs = self.merged = self.sectors = 0

    def add(self, before, after):
        self.calls += 1
        self.reqs += after[0] - before[0]
        self.merged += after[1] - before[1]
        self.sectors += after[2] - before[2]

    def line(self):
        c = max(1, self.calls)
        kib = self.sectors / 2 / max(1, self.reqs)
        return f"dev reqs/call {self.reqs / c:.0f} merged/call {self.merged / c:.0f} KiB/req {kib:.1f}"


def fio_iops(path, depth, bs="4k", seconds=1, fresh=True):
    """Random O_DIRECT reads of path through libaio at iodepth `depth`: IOPS, or None without fio.
    fresh: offsets from a new seed every run (--randrepeat=0); fio's default repeats the same
    offsets each run, which a disk whose host caches it serves several times faster than
    blocks never read before (on the bench VM: ~42k against ~14k IOPS at depth 256)."""
    if shutil.which("fio") is None:
        return None
    out = subprocess.run(["fio", "--name=qd", f"--filename={path}", "--readonly", "--direct=1", "--ioengine=libaio",
                          "--rw=randread", f"--bs={bs}", f"--iodepth={depth}", f"--runtime={seconds}", "--time_based",
                          "--norandommap", f"--randrepeat={0 if fresh else 1}", "--output-format=terse",
                          "--terse-version=3"],
                         capture_output=True, text=True, check=False)
    fields = out.stdout.strip().split(";")
    return float(fields[7]) if out.returncode == 0 and len(fields) > 8 else None


AIO_DEPTH = 256  # the engine libraries' AIO reads in flight per store (native/engine-libs/common/gatherer.cc)


def fio_batches(path, reads, batches):
    """fio doing what a library's cold batch asks of the device, `batches` times over: `reads`
    fresh random 4 KiB reads of path (O_DIRECT, libaio as the libraries' AIO), at the queue depth
    the library keeps (every read of the batch, up to AIO_DEPTH). A batch no deeper than that is
    submitted whole and awaited whole before the next; a longer one keeps the depth full. Seconds
    per batch (fio's own runtime over the batches), or None without fio."""
    if shutil.which("fio") is None:
        return None
    depth = min(reads, AIO_DEPTH)
    argv = ["fio", "--name=batches", f"--filename={path}", "--readonly", "--direct=1", "--ioengine=libaio",
            "--rw=randread", "--bs=4k", f"--iodepth={depth}", f"--iodepth_batch_submit={depth}",
            f"--iodepth_batch_complete_min={depth if reads <= AIO_DEPTH else 1}", f"--number_ios={reads * batches}",
            "--norandommap", "--randrepeat=0", "--output-format=json"]
    out = subprocess.run(argv, capture_output=True, text=True, check=False)
    try:
        job = json.loads(out.stdout)["jobs"][0]["read"]
    except (ValueError, KeyError, IndexError):
        return None
    if out.returncode != 0 or job["total_ios"] < reads * batches or job["runtime"] <= 0:
        return None
    return job["runtime"] / 1e3 / batches


def resident_bytes(path):
    """Bytes of path in the page cache (fincore), or None."""
    if shutil.which("fincore") is None:
        return None
    out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", path], capture_output=True,
                         text=True, check=False)
    return int(out.stdout.split()[0]) if out.returncode == 0 and out.stdout.strip() else None


def meminfo_cached():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("Cached:"):
                return int(line.split()[1]) * 1024
    return 0


def drop_cached(path):
    """Drops path's clean pages from the page cache (as the overlay's governor does)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
