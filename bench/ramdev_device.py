"""A RAM-backed block device for bench/ramdev.py: a tmpfs holding one image file, a loop device
over that file, ext4 on the loop device, mounted. A cold read then costs the kernel's block path
(the filesystem, the loop driver, a copy out of the tmpfs page) and the CPU, not a throttled
disk. The device is private to the run, so its counters (/sys/block/loopN/stat) are exactly
the reads of whichever side was being called.

Setup records an undo step as it completes each stage (mount the tmpfs, attach the loop
device, mount ext4), and close() runs them in reverse whatever stage setup reached, each step
tried even when an earlier one failed: an interrupted run leaves no mount, loop device or
tmpfs file behind."""
import os
import shutil
import subprocess
import sys
import tempfile

# Room for ext4's own metadata on the image (no journal, few inodes: well under 1% of it).
FS_SLACK = 64 << 20
TOOLS = ("mount", "umount", "losetup", "mkfs.ext4")


def missing_tools():
    return [t for t in TOOLS if shutil.which(t) is None]


def _run(argv):
    out = subprocess.run(argv, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise OSError(f"{' '.join(argv)}: {out.stderr.strip() or 'exit ' + str(out.returncode)}")
    return out.stdout


def _umount(path):
    """Unmounts path; when something still holds it, detaches it lazily (the kernel frees it once
    the last holder lets go: at the latest when this process exits) and says so."""
    try:
        _run(["umount", path])
    except OSError as e:
        _run(["umount", "--lazy", path])
        print(f"ramdev: {path} was busy ({e}); detached lazily", file=sys.stderr)


class RamDevice:
    def __init__(self, data_bytes):
        self.image_bytes = (data_bytes + data_bytes // 50 + FS_SLACK + (1 << 20) - 1) // (1 << 20) * (1 << 20)
        self.top = None
        self.loop = None  # /dev/loopN
        self.mnt = None  # the ext4 mount: where the bench writes its table
        self._undo = []

    def open(self):
        self.top = tempfile.mkdtemp(prefix="spark-ramdev-")
        self._undo.append(("remove " + self.top, lambda: os.rmdir(self.top)))
        _run(["mount", "-t", "tmpfs", "-o", f"size={self.image_bytes + (16 << 20)},mode=0700", "spark-ramdev",
              self.top])
        self._undo.append(("unmount the tmpfs " + self.top, lambda: _umount(self.top)))
        image = os.path.join(self.top, "device.img")
        with open(image, "xb") as f:
            f.truncate(self.image_bytes)
        self.loop = _run(["losetup", "--find", "--show", image]).strip()
        self._undo.append(("detach " + self.loop, lambda: _run(["losetup", "--detach", self.loop])))
        _run(["mkfs.ext4", "-q", "-F", "-O", "^has_journal", "-T", "largefile4", "-E",
              "nodiscard,lazy_itable_init=0,lazy_journal_init=0", self.loop])
        self.mnt = os.path.join(self.top, "fs")
        os.mkdir(self.mnt)
        _run(["mount", "-o", "noatime", self.loop, self.mnt])
        self._undo.append(("unmount " + self.mnt, lambda: _umount(self.mnt)))
        return self

    def close(self):
        """Undoes every stage reached, last first; says what it could not undo. True when all went."""
        ok = True
        while self._undo:
            what, undo = self._undo.pop()
            try:
                undo()
            except OSError as e:
                ok = False
                print(f"ramdev: could not {what}: {e}", file=sys.stderr)
        return ok

    def name(self):
        return os.path.basename(self.loop)

    def reads(self):
        """(read requests completed, merged, sectors, milliseconds the reads took, milliseconds the
        device had any request in flight) since attach."""
        with open(f"/sys/block/{self.name()}/stat") as f:
            p = f.read().split()
        return int(p[0]), int(p[1]), int(p[2]), int(p[3]), int(p[9])

    def queue(self, attr):
        with open(f"/sys/block/{self.name()}/queue/{attr}") as f:
            return f.read().strip()
